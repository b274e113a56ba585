"""The shapes the OpenAI Responses mapper reads (part of
``openai_responses.py``, split along its seam): an output item, the final
``response`` object, a ``*.delta`` / ``*.done`` event's item reference, usage,
and the running length and hash of what an item streamed.
"""

from __future__ import annotations

import hashlib
from typing import Any

from ...types import UsageReported
from ._openai import failure, malformed, obj, opt_list, opt_obj, opt_str, opt_u64, req_str
from ._shape import shape
from .jsontext import dumps

__all__ = [
    "CALL_KINDS",
    "CLIENT_FIELDS",
    "PART_KINDS",
    "Acc",
    "Final",
    "Out",
    "final_arguments",
    "out_item",
    "part_id",
    "ref_event",
    "response_event",
    "responses_usage",
]

_S = shape("openai-responses")


class Acc:
    """A running length and hash of what one item streamed."""

    __slots__ = ("canon", "kind", "length", "hash", "ended")

    def __init__(self, canon: str, kind: str) -> None:
        self.canon = canon
        self.kind = kind  # "text" | "refusal" | "arguments" | "reasoning"
        self.length = 0
        self.hash = hashlib.blake2b(digest_size=16)
        self.ended = False

    def add(self, delta: str) -> None:
        """Count ``delta`` in."""
        data = delta.encode("utf-8", "surrogatepass")
        self.length += len(data)
        self.hash.update(data)

    def same(self, text: str) -> bool:
        """Whether ``text`` is what streamed."""
        data = text.encode("utf-8", "surrogatepass")
        return len(data) == self.length and hashlib.blake2b(data, digest_size=16).digest() == self.hash.digest()


class Out:
    """A message, call or reasoning output item, shape-checked."""

    __slots__ = ("type", "id", "status", "call_id", "name", "arguments", "parts", "reasoning", "signature", "diff")

    def __init__(self, item: dict[str, Any], kind: str, what: str) -> None:
        self.type = kind
        self.id = req_str(item, "id", what)
        self.status = opt_str(item, "status", what)
        self.call_id = opt_str(item, "call_id", what)
        self.name = opt_str(item, "name", what)
        self.arguments = opt_str(item, "arguments", what)
        custom_input = opt_str(item, "input", what)
        #: an apply_patch operation's diff (None: none, or another kind)
        self.diff: str | None = None
        if kind == "custom_tool_call":
            self.arguments = custom_input
        field = CLIENT_FIELDS.get(kind)
        if field is not None:
            payload = opt_obj(item, field, what)
            self.name = CALL_KINDS[kind]
            self.arguments = None if payload is None else dumps(payload)
            if payload is not None and kind == "apply_patch_call":
                self.diff = opt_str(payload, "diff", what)
        self.signature = opt_str(item, "encrypted_content", what)
        #: content parts: (type, text or refusal); None for a part of another type
        self.parts: list[tuple[str, str | None]] = []
        for index, raw in enumerate(opt_list(item, "content", what) or ()):
            part = obj(raw, what, f"content[{index}]")
            kind_ = req_str(part, "type", what)
            text = opt_str(part, "text", what)
            refusal = opt_str(part, "refusal", what)
            self.parts.append((kind_, text if kind_ != "refusal" else refusal))
        summary = [
            req_str(obj(raw, what, f"summary[{index}]"), "text", what)
            for index, raw in enumerate(opt_list(item, "summary", what) or ())
        ]
        if kind in CALL_KINDS and (self.call_id is None or self.name is None):
            raise malformed(what, f"a {kind} item needs call_id and name")
        if kind == "message":
            for part_kind, text in self.parts:
                if part_kind in PART_KINDS and text is None:
                    raise malformed(what, f"a {part_kind} part needs its text")
        #: a reasoning item's text: summary parts joined by a blank line, then its content
        self.reasoning = "\n\n".join(summary) + "".join(text or "" for _, text in self.parts)

    @property
    def complete(self) -> bool:
        """Only ``completed`` (or no status at all) counts as finished."""
        return self.status is None or self.status == "completed"


#: call items -> their call kind
CALL_KINDS: dict[str, str] = {
    "function_call": "function",
    "custom_tool_call": "custom",
    "local_shell_call": "local_shell",
    "computer_call": "computer",
    "apply_patch_call": "apply_patch",
    "shell_call": "shell",
}
#: client-executed tools -> the field holding their arguments object
CLIENT_FIELDS: dict[str, str] = {
    "local_shell_call": "action",
    "computer_call": "action",
    "shell_call": "action",
    "apply_patch_call": "operation",
}
_KNOWN_ITEMS = ("message", "reasoning", *CALL_KINDS)
PART_KINDS = {"output_text": "text", "refusal": "refusal"}


def out_item(raw: Any, what: str, path: str) -> Out | str:
    """A known output item, or the type of another one (a builtin tool's)."""
    item = obj(raw, what, path)
    kind = req_str(item, "type", what)
    if kind not in _KNOWN_ITEMS or (kind == "shell_call" and _hosted(item)):
        return kind
    return Out(item, kind, what)


def _hosted(item: dict[str, Any]) -> bool:
    """A ``shell_call`` the provider runs itself: its ``environment`` is there
    and is not ``{"type": "local"}`` (a container); it is not the application's call."""
    env = item.get("environment")
    return env is not None and not (isinstance(env, dict) and env.get("type") == "local")


def part_id(item_id: str, index: int) -> str:
    """The canonical item id of content part ``index`` of an output item."""
    return item_id if index == 0 else f"{item_id}:{index}"


def response_event(d: dict[str, Any], what: str) -> dict[str, Any]:
    """The ``response`` head of a ``response.created`` / ``in_progress`` event."""
    resp = obj(d.get("response"), what, "response")
    opt_str(resp, "id", what)
    opt_str(resp, "model", what)
    return resp


class Final:
    """The ``response`` object of a terminal event (or a whole body), shape-checked."""

    __slots__ = ("id", "model", "status", "output", "usage", "error", "incomplete", "reason")

    def __init__(self, resp: dict[str, Any], what: str, at: str) -> None:
        self.id = opt_str(resp, "id", what)
        self.model = opt_str(resp, "model", what)
        self.status = opt_str(resp, "status", what)
        self.output = [
            out_item(raw, what, f"output[{index}]") for index, raw in enumerate(opt_list(resp, "output", what) or ())
        ]
        usage = opt_obj(resp, "usage", what)
        self.usage = None if usage is None else responses_usage(usage, what)
        err = resp.get("error")
        self.error = None if err is None else failure(_S, err, what, f"{at}.error")
        details = opt_obj(resp, "incomplete_details", what)
        self.incomplete = details is not None
        self.reason = None if details is None else opt_str(details, "reason", what)


def ref_event(d: dict[str, Any], what: str, field: str | None = None) -> tuple[str, int, str]:
    """A ``*.delta`` / ``*.done`` event: its item id, content index and (when
    ``field`` is given) that required string field. Every field such events
    may carry is shape-checked, whichever one the type uses."""
    item_id = req_str(d, "item_id", what)
    index = opt_u64(d, "content_index", what) or 0
    values = {key: opt_str(d, key, what) for key in ("delta", "text", "refusal", "arguments", "input", "diff")}
    if field is None:
        return item_id, index, ""
    value = values[field]
    if value is None:
        raise malformed(what, f"{field} must be a string")
    return item_id, index, value


def final_arguments(item: Out, what: str) -> str:
    """A final call item's arguments text; a client tool's needs its object."""
    if item.arguments is None and item.type in CLIENT_FIELDS:
        raise malformed(what, f"a {item.type} item needs its {CLIENT_FIELDS[item.type]} object")
    return item.arguments or ""


def responses_usage(usage: dict[str, Any], what: str) -> UsageReported:
    """Responses ``usage`` -> canonical usage."""
    inp = opt_obj(usage, "input_tokens_details", what)
    outp = opt_obj(usage, "output_tokens_details", what)
    return UsageReported(
        input_tokens=opt_u64(usage, "input_tokens", what),
        output_tokens=opt_u64(usage, "output_tokens", what),
        cached_tokens=None if inp is None else opt_u64(inp, "cached_tokens", what),
        reasoning_tokens=None if outp is None else opt_u64(outp, "reasoning_tokens", what),
    )
