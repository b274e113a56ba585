"""The shapes the OpenAI Responses mapper reads (part of
``openai_responses.py``, split along its seam): an output item, the final
``response`` object, a ``*.delta`` / ``*.done`` event's item reference, usage,
and the running length and hash of what an item streamed.
"""

from __future__ import annotations

import hashlib
from typing import Any

from ...types import UsageReported
from ._openai import Annotation, failure, filtered, first
from ._shape import located, model_role, shape
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
    "read_part",
    "ref_event",
    "responses_usage",
    "value_field",
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
    """A message, call or reasoning output item, shape-checked: its members in
    the order ``id``, ``status``, ``call_id``, ``name``, ``arguments``,
    ``input``, the client tool's object (and an apply_patch ``diff``),
    ``encrypted_content``, ``content``, ``summary``, then a call's
    ``pending_safety_checks`` (the Rust twin's order)."""

    __slots__ = ("type", "id", "status", "call_id", "name", "arguments", "parts", "reasoning", "signature", "diff")

    def __init__(self, item: dict[str, Any], kind: str, what: str, at: str) -> None:
        self.type = kind
        self.id = _S.req_str(item, "id", what, at)
        self.status = _S.opt_str(item, "status", what, at)
        self.call_id = _S.opt_str(item, "call_id", what, at)
        self.name = _S.opt_str(item, "name", what, at)
        self.arguments = _S.opt_str(item, "arguments", what, at)
        custom_input = _S.opt_str(item, "input", what, at)
        #: an apply_patch operation's diff (None: none, or another kind)
        self.diff: str | None = None
        if kind == "custom_tool_call":
            self.arguments = custom_input
        field = CLIENT_FIELDS.get(kind)
        if field is not None:
            payload = _S.opt_obj(item, field, what, at)
            self.name = CALL_KINDS[kind]
            self.arguments = None if payload is None else dumps(payload)
            if payload is not None and kind == "apply_patch_call":
                self.diff = _S.opt_str(payload, "diff", what, f"{at}.{field}")
        self.signature = _S.opt_str(item, "encrypted_content", what, at)
        #: content parts: (type, text or refusal)
        self.parts = [
            read_part(raw, what, f"{at}.content[{index}]")
            for index, raw in enumerate(_S.opt_list(item, "content", what, at) or ())
        ]
        summary = [
            _S.req_str(_S.obj(raw, what, f"{at}.summary[{index}]"), "text", what, f"{at}.summary[{index}]")
            for index, raw in enumerate(_S.opt_list(item, "summary", what, at) or ())
        ]
        if kind in CALL_KINDS:
            needs = f"{what}: a {kind} item needs call_id and name"
            if not self.call_id:  # an empty call_id pairs with no result
                raise located("MALFORMED_EVENT", needs, f"{at}.call_id")
            if self.name is None:
                raise located("MALFORMED_EVENT", needs, f"{at}.name")
            if _S.opt_list(item, "pending_safety_checks", what, at):
                # a computer_call the provider's safety checks flagged: a person must confirm it
                # and the next request acknowledge each check, which no decision carries
                raise located(
                    "UNSUPPORTED_ITEM",
                    f"{what}: {kind} {self.id} has pending safety checks, which the host must show a person "
                    "and acknowledge before the call runs; the package cannot carry them, so nothing in "
                    "the response is decided",
                    f"{at}.pending_safety_checks",
                )
        if kind == "message":
            for index, (part_kind, text) in enumerate(self.parts):
                if part_kind in PART_KINDS and text is None:
                    raise located(
                        "MALFORMED_EVENT",
                        f"{what}: a {part_kind} part needs its text",
                        f"{at}.content[{index}].{value_field(part_kind)}",
                    )
            model_role(item, "assistant", what, at)
        #: a reasoning item's text: summary parts joined by a blank line, then its content
        self.reasoning = "\n\n".join(summary) + "".join(text or "" for _, text in self.parts)

    @property
    def complete(self) -> bool:
        """Only ``completed`` (or no status at all) counts as finished."""
        return self.status is None or self.status == "completed"


def read_part(raw: Any, what: str, at: str) -> tuple[str, str | None]:
    """A content part at ``at``: its type, then ``text``, then ``refusal``; the
    value is the refusal of a refusal part, else the text."""
    part = _S.obj(raw, what, at)
    kind = _S.req_str(part, "type", what, at)
    text = _S.opt_str(part, "text", what, at)
    refusal = _S.opt_str(part, "refusal", what, at)
    return kind, refusal if kind == "refusal" else text


def value_field(kind: str) -> str:
    """The field holding a part's value (``refusal`` for a refusal part)."""
    return "refusal" if kind == "refusal" else "text"


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


#: items the provider runs or records itself, with nothing for the host to do
INFORMATIONAL_ITEMS = frozenset(
    {
        "web_search_call",
        "file_search_call",
        "code_interpreter_call",
        "mcp_call",
        "mcp_list_tools",
        "shell_call_output",
        "tool_search_output",
        "compaction",
    }
)


def out_item(raw: Any, what: str, at: str) -> Out | str:
    """The output item at ``at`` (its type first), or the type of an
    informational one (a builtin tool's); any other item (an unknown type,
    ``mcp_approval_request``, a client-run ``tool_search_call``) is a call or
    answer the host would never see: ``UNSUPPORTED_ITEM`` at ``at``."""
    item = _S.obj(raw, what, at)
    kind = _S.req_str(item, "type", what, at)
    if kind == "shell_call" and _hosted(item):
        return kind
    if kind == "tool_search_call" and item.get("execution") != "client":
        return kind
    if kind in INFORMATIONAL_ITEMS:
        return kind
    if kind not in _KNOWN_ITEMS:
        raise located(
            "UNSUPPORTED_ITEM",
            f'output item of type "{kind}" is not one the package can represent; '
            "it may be a call the host must handle, so nothing in the response is decided",
            at,
        )
    return Out(item, kind, what, at)


def _hosted(item: dict[str, Any]) -> bool:
    """A ``shell_call`` the provider runs itself: its ``environment`` is there
    and is not ``{"type": "local"}`` (a container); it is not the application's call."""
    env = item.get("environment")
    return env is not None and not (isinstance(env, dict) and env.get("type") == "local")


def part_id(item_id: str, index: int) -> str:
    """The canonical item id of content part ``index`` of an output item."""
    return item_id if index == 0 else f"{item_id}:{index}"


def blocked(resp: dict[str, Any], what: str, at: str) -> Annotation | None:
    """What the ``content_filters`` of the response object at ``at`` say
    (Azure OpenAI's verdicts on the prompt and the completion; see
    :data:`Annotation`): a verdict that withheld it, a ``blocked: true`` or a
    ``filtered: true`` in an entry's ``content_filter_results`` (read as
    Chat's are; an entry's ``blocked`` first), else an ``error`` in those
    results (the filter did not run), else None. The list, when not null,
    holds objects whose ``blocked`` is a boolean when present and whose
    ``content_filter_results`` is null or Chat's shape."""
    note = None
    for index, entry in enumerate(_S.opt_list(resp, "content_filters", what, at) or ()):
        place = f"{at}.content_filters[{index}]"
        entry = _S.obj(entry, what, place)
        if _S.opt_bool(entry, "blocked", what, place):
            note = first(note, (f"{place}.blocked", True))
        results = _S.opt_obj(entry, "content_filter_results", what, place)
        if results is not None:
            note = first(note, filtered(_S, results, what, f"{place}.content_filter_results"))
    return note


class Final:
    """The ``response`` object of a head or terminal event (or a whole body) at ``at``,
    shape-checked: ``id``, ``model``, ``status``, ``output``, ``usage``,
    ``error``, ``incomplete_details``, ``content_filters`` (``blocked``: what
    they say, see :func:`blocked`)."""

    __slots__ = ("id", "model", "status", "output", "usage", "error", "incomplete", "reason", "blocked")

    def __init__(self, resp: dict[str, Any], what: str, at: str) -> None:
        self.id = _S.opt_str(resp, "id", what, at)
        self.model = _S.opt_str(resp, "model", what, at)
        self.status = _S.opt_str(resp, "status", what, at)
        self.output = [
            out_item(raw, what, f"{at}.output[{index}]")
            for index, raw in enumerate(_S.opt_list(resp, "output", what, at) or ())
        ]
        usage = resp.get("usage")
        self.usage = None if usage is None else responses_usage(usage, what, f"{at}.usage")
        err = resp.get("error")
        self.error = None if err is None else failure(_S, err, what, f"{at}.error")
        details = _S.opt_obj(resp, "incomplete_details", what, at)
        self.incomplete = details is not None
        self.reason = None if details is None else _S.opt_str(details, "reason", what, f"{at}.incomplete_details")
        self.blocked = blocked(resp, what, at)


#: the string fields a ``*.delta`` / ``*.done`` event may carry
_REF_FIELDS = ("delta", "text", "refusal", "arguments", "input", "diff")


def ref_event(d: dict[str, Any], what: str, field: str | None = None) -> tuple[str, int, str]:
    """A ``*.delta`` / ``*.done`` event: its item id, content index and (when
    ``field`` is given) that required string field. Every field such events
    may carry (``output_index`` too) is shape-checked, whichever one the type
    uses."""
    item_id = _S.req_str(d, "item_id", what, "$")
    index = _S.opt_count(d, "content_index", what, "$") or 0
    _S.opt_count(d, "output_index", what, "$")
    values = {key: _S.opt_str(d, key, what, "$") for key in _REF_FIELDS}
    if field is None:
        return item_id, index, ""
    value = values[field]
    if value is None:
        raise _S.malformed(what, f"$.{field}")
    return item_id, index, value


def final_arguments(item: Out, what: str, at: str) -> str:
    """A final call item's (at ``at``) arguments text; a client tool's needs its object."""
    if item.arguments is None and item.type in CLIENT_FIELDS:
        field = CLIENT_FIELDS[item.type]
        raise located("MALFORMED_EVENT", f"{what}: a {item.type} item needs its {field} object", f"{at}.{field}")
    return item.arguments or ""


def responses_usage(raw: Any, what: str, at: str) -> UsageReported:
    """Responses ``usage`` at ``at`` -> canonical usage: the details objects, then the counts."""
    usage = _S.obj(raw, what, at)
    inp = _S.opt_obj(usage, "input_tokens_details", what, at)
    outp = _S.opt_obj(usage, "output_tokens_details", what, at)
    input_tokens = _S.opt_count(usage, "input_tokens", what, at)
    output_tokens = _S.opt_count(usage, "output_tokens", what, at)
    return UsageReported(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cached_tokens=None if inp is None else _S.opt_count(inp, "cached_tokens", what, f"{at}.input_tokens_details"),
        reasoning_tokens=None
        if outp is None
        else _S.opt_count(outp, "reasoning_tokens", what, f"{at}.output_tokens_details"),
    )
