"""OpenAI Responses API (pure twin of ``rust/src/core/providers/openai_responses.rs``).

Streams are typed ``response.*`` events with a ``sequence_number`` (strictly
increasing where given, else ``SEQUENCE_NOT_MONOTONIC``); bodies are
``response`` objects.

Identity: the output item's ``id`` is the canonical ``item_id`` and a function
call's ``call_id`` its ``call_id``; both are kept (``output_index`` only
locates an item in the output). A message's content part ``k`` becomes the
item ``{id}`` for ``k == 0`` and ``{id}:{k}`` otherwise. A reasoning item's
summary parts form one reasoning item whose text joins the parts with a blank
line (``"\\n\\n"``); its ``encrypted_content`` is kept as the signature.

Terminal authority: ``response.completed`` (stop, tool_calls when the output
holds function calls, refusal when it holds a refusal and no call),
``response.incomplete`` (``max_output_tokens`` -> length, ``content_filter``
-> content_filter, other reasons -> unknown; raw = the reason),
``response.failed`` and ``error`` (both -> response failed; the
``response.failed`` that follows an ``error`` confirms it and adds nothing).

Output check: every delta updates a running length and hash for its item
(constant work per delta byte, nothing re-scanned). The ``.done`` events, the
finished output items and the output of the terminal ``response`` are compared
against them: texts and function-call arguments per item, plus each call's
name and ``call_id``; an item in the final output the stream never carried,
or a streamed message or call missing from it, is ``OUTPUT_MISMATCH``. A done
event for an item that streamed no delta at all supplies the whole value
(servers that send arguments only there).

Builtin tools (``web_search_call``, ``file_search_call``,
``code_interpreter_call``, ``image_generation_call``, ``mcp_*``,
``shell_call``, ``custom_tool_call``, ...) are not function calls: their items
are counted in ``unknown_events`` as ``output_item:<type>`` and their own
events by type, never turned into calls. Annotations are counted likewise.
"""

from __future__ import annotations

import hashlib
from typing import Any

from ...errors import new_error
from ...types import (
    CanonicalEvent,
    ItemEnded,
    ItemStarted,
    ReasoningDelta,
    RefusalDelta,
    ResponseFailed,
    ResponseFinished,
    ResponseStarted,
    TextDelta,
    ToolArgumentsDelta,
    ToolCallStarted,
    UsageReported,
)
from .openai_chat import malformed, obj, opt_list, opt_obj, opt_str, opt_u64, provider_error, req_str

__all__ = ["OpenAIResponsesMapper"]

_INCOMPLETE = {"max_output_tokens": "length", "content_filter": "content_filter"}

_FAILED = ("failed", "error")


class _Acc:
    """A running length and hash of what one item streamed."""

    __slots__ = ("canon", "kind", "length", "hash", "ended")

    def __init__(self, canon: str, kind: str) -> None:
        self.canon = canon
        self.kind = kind  # "text" | "refusal" | "arguments" | "reasoning"
        self.length = 0
        self.hash = hashlib.blake2b(digest_size=16)
        self.ended = False

    def add(self, delta: str) -> None:
        data = delta.encode("utf-8", "surrogatepass")
        self.length += len(data)
        self.hash.update(data)

    def same(self, text: str) -> bool:
        data = text.encode("utf-8", "surrogatepass")
        return len(data) == self.length and hashlib.blake2b(data, digest_size=16).digest() == self.hash.digest()


class _Item:
    __slots__ = ("type", "parts", "call", "call_id", "name", "summaries")

    def __init__(self, type_: str) -> None:
        self.type = type_
        self.parts: dict[int, _Acc] = {}  # message: content_index -> part
        self.call: _Acc | None = None  # function_call arguments / reasoning text
        self.call_id = ""
        self.name = ""
        self.summaries = 0  # reasoning summary parts seen


def _part_id(item_id: str, index: int) -> str:
    return item_id if index == 0 else f"{item_id}:{index}"


class OpenAIResponsesMapper:
    """Responses ``response.*`` events / ``response`` bodies -> canonical events."""

    def __init__(self, choice: int | None = None) -> None:
        del choice  # the Responses API has no choices
        self.unknown_events: dict[str, int] = {}
        self._seq: int | None = None
        self._items: dict[str, _Item] = {}
        self._order: list[str] = []  # message / function_call ids, in stream order
        self._calls = 0
        self._refusals = 0
        self._terminal: str | None = None  # "finished" | "failed" | "error"

    def _count(self, key: str) -> None:
        self.unknown_events[key] = self.unknown_events.get(key, 0) + 1

    # ------------------------------------------------------------ stream

    def map_event(self, event: str | None, payload: Any) -> list[CanonicalEvent]:
        """One ``response.*`` (or ``error``) event, decoded."""
        data = obj(payload, "response event", "the event")
        kind = data.get("type")
        if not isinstance(kind, str):
            kind = event if event not in (None, "message") else None
        if kind is None:
            raise malformed("response event", "type must be a string")
        seq = opt_u64(data, "sequence_number", kind)
        if seq is not None:
            if self._seq is not None and seq <= self._seq:
                raise new_error(
                    "SEQUENCE_NOT_MONOTONIC", f"sequence_number {seq} after {self._seq} ({kind})"
                )
            self._seq = seq
        if self._terminal is not None:
            if kind == "response.failed" and self._terminal == "error":
                self._terminal = "failed"
                return []
            raise new_error("EVENT_AFTER_TERMINAL", f"{kind} after the response ended")
        handler = _HANDLERS.get(kind)
        if handler is None:
            self._count(kind)
            return []
        out: list[CanonicalEvent] = []
        handler(self, data, kind, out)
        return out

    def end(self) -> list[CanonicalEvent]:
        """EOF adds nothing: a Responses stream must carry its own terminal."""
        return []

    def _created(self, d: dict[str, Any], what: str, out: list[CanonicalEvent]) -> None:
        resp = obj(d.get("response"), what, "response")
        out.append(ResponseStarted(response_id=opt_str(resp, "id", what), model=opt_str(resp, "model", what)))

    def _in_progress(self, d: dict[str, Any], what: str, out: list[CanonicalEvent]) -> None:
        obj(d.get("response"), what, "response")

    def _item_added(self, d: dict[str, Any], what: str, out: list[CanonicalEvent]) -> None:
        opt_u64(d, "output_index", what)
        item = obj(d.get("item"), what, "item")
        kind = req_str(item, "type", what)
        if kind not in ("message", "function_call", "reasoning"):
            self._count(f"output_item:{kind}")
            return
        item_id = req_str(item, "id", what)
        if item_id in self._items:
            raise new_error("DUPLICATE_ITEM_ID", f"output item {item_id} was added twice")
        entry = self._items[item_id] = _Item(kind)
        if kind == "message":
            self._order.append(item_id)
        elif kind == "function_call":
            self._order.append(item_id)
            entry.call_id = req_str(item, "call_id", what)
            entry.name = req_str(item, "name", what)
            entry.call = _Acc(item_id, "arguments")
            self._calls += 1
            out.append(ToolCallStarted(item_id=item_id, call_id=entry.call_id, name=entry.name))
            arguments = opt_str(item, "arguments", what)
            if arguments:
                entry.call.add(arguments)
                out.append(ToolArgumentsDelta(item_id=item_id, delta=arguments))
        else:
            entry.call = _Acc(item_id, "reasoning")
            out.append(ItemStarted(item_id=item_id, kind="reasoning"))

    def _item(self, d: dict[str, Any], what: str, kind: str) -> tuple[str, _Item]:
        item_id = req_str(d, "item_id", what)
        entry = self._items.get(item_id)
        if entry is None:
            raise new_error("DELTA_BEFORE_START", f"{what} for item {item_id}, which was never added")
        if entry.type != kind:
            raise malformed(what, f"item {item_id} is a {entry.type}, not a {kind}")
        return item_id, entry

    def _part(self, d: dict[str, Any], what: str) -> _Acc:
        item_id, entry = self._item(d, what, "message")
        index = opt_u64(d, "content_index", what) or 0
        part = entry.parts.get(index)
        if part is None:
            raise new_error("DELTA_BEFORE_START", f"{what} for content part {index} of {item_id}, never added")
        return part

    def _part_added(self, d: dict[str, Any], what: str, out: list[CanonicalEvent]) -> None:
        if self._reasoning_part(d, what):
            return
        item_id, entry = self._item(d, what, "message")
        index = opt_u64(d, "content_index", what) or 0
        part = obj(d.get("part"), what, "part")
        kind = req_str(part, "type", what)
        if kind not in ("output_text", "refusal"):
            self._count(f"content_part:{kind}")
            return
        if index in entry.parts:
            raise new_error("DUPLICATE_ITEM_ID", f"content part {index} of {item_id} was added twice")
        canon = _part_id(item_id, index)
        acc = entry.parts[index] = _Acc(canon, "text" if kind == "output_text" else "refusal")
        out.append(ItemStarted(item_id=canon, kind=acc.kind))  # type: ignore[arg-type]
        if kind == "refusal":
            self._refusals += 1
        text = opt_str(part, "text" if kind == "output_text" else "refusal", what)
        if text:
            self._delta(acc, text, out)

    def _delta(self, acc: _Acc, delta: str, out: list[CanonicalEvent]) -> None:
        if acc.ended:
            raise new_error("DELTA_AFTER_END", f"a delta for {acc.canon} after it ended")
        acc.add(delta)
        if acc.kind == "text":
            out.append(TextDelta(item_id=acc.canon, delta=delta))
        elif acc.kind == "refusal":
            out.append(RefusalDelta(item_id=acc.canon, delta=delta))
        elif acc.kind == "arguments":
            out.append(ToolArgumentsDelta(item_id=acc.canon, delta=delta))
        else:
            out.append(ReasoningDelta(item_id=acc.canon, delta=delta))

    def _check(self, acc: _Acc, text: str, what: str, out: list[CanonicalEvent]) -> None:
        """Compare a final value with what streamed (or take it if nothing did)."""
        if acc.length == 0 and text and not acc.ended:
            self._delta(acc, text, out)
        elif not acc.same(text):
            raise new_error(
                "OUTPUT_MISMATCH", f"{what}: the streamed {acc.kind} of {acc.canon} differs from the final value"
            )

    def _text_delta(self, d: dict[str, Any], what: str, out: list[CanonicalEvent]) -> None:
        part = self._part(d, what)
        if part.kind != "text":
            raise malformed(what, f"{part.canon} is not a text part")
        self._delta(part, req_str(d, "delta", what), out)

    def _text_done(self, d: dict[str, Any], what: str, out: list[CanonicalEvent]) -> None:
        part = self._part(d, what)
        self._check(part, req_str(d, "text", what), what, out)

    def _refusal_delta(self, d: dict[str, Any], what: str, out: list[CanonicalEvent]) -> None:
        part = self._part(d, what)
        if part.kind != "refusal":
            raise malformed(what, f"{part.canon} is not a refusal part")
        self._delta(part, req_str(d, "delta", what), out)

    def _refusal_done(self, d: dict[str, Any], what: str, out: list[CanonicalEvent]) -> None:
        part = self._part(d, what)
        self._check(part, req_str(d, "refusal", what), what, out)

    def _reasoning_part(self, d: dict[str, Any], what: str) -> bool:
        """A ``reasoning_text`` content part of a reasoning item: its deltas
        arrive as ``response.reasoning_text.delta``, so the part adds nothing."""
        entry = self._items.get(req_str(d, "item_id", what))
        if entry is None or entry.type != "reasoning":
            return False
        part = obj(d.get("part"), what, "part")
        if req_str(part, "type", what) != "reasoning_text":
            raise malformed(what, "a reasoning item's content part must be reasoning_text")
        return True

    def _part_done(self, d: dict[str, Any], what: str, out: list[CanonicalEvent]) -> None:
        if self._reasoning_part(d, what):
            return
        item_id, entry = self._item(d, what, "message")
        index = opt_u64(d, "content_index", what) or 0
        part = obj(d.get("part"), what, "part")
        kind = req_str(part, "type", what)
        acc = entry.parts.get(index)
        if acc is None:
            if kind in ("output_text", "refusal"):
                raise new_error("DELTA_BEFORE_START", f"{what} for content part {index} of {item_id}, never added")
            self._count(f"content_part:{kind}")
            return
        self._check(acc, req_str(part, "text" if acc.kind == "text" else "refusal", what), what, out)
        if not acc.ended:
            acc.ended = True
            out.append(ItemEnded(item_id=acc.canon))

    def _args_delta(self, d: dict[str, Any], what: str, out: list[CanonicalEvent]) -> None:
        _, entry = self._item(d, what, "function_call")
        assert entry.call is not None
        self._delta(entry.call, req_str(d, "delta", what), out)

    def _args_done(self, d: dict[str, Any], what: str, out: list[CanonicalEvent]) -> None:
        _, entry = self._item(d, what, "function_call")
        assert entry.call is not None
        self._check(entry.call, req_str(d, "arguments", what), what, out)

    def _summary_part(self, d: dict[str, Any], what: str, out: list[CanonicalEvent]) -> None:
        _, entry = self._item(d, what, "reasoning")
        assert entry.call is not None
        opt_u64(d, "summary_index", what)
        if entry.summaries:
            self._delta(entry.call, "\n\n", out)
        entry.summaries += 1

    def _reasoning_delta(self, d: dict[str, Any], what: str, out: list[CanonicalEvent]) -> None:
        _, entry = self._item(d, what, "reasoning")
        assert entry.call is not None
        self._delta(entry.call, req_str(d, "delta", what), out)

    def _reasoning_done(self, d: dict[str, Any], what: str, out: list[CanonicalEvent]) -> None:
        self._item(d, what, "reasoning")

    def _item_done(self, d: dict[str, Any], what: str, out: list[CanonicalEvent]) -> None:
        opt_u64(d, "output_index", what)
        item = obj(d.get("item"), what, "item")
        kind = req_str(item, "type", what)
        if kind not in ("message", "function_call", "reasoning"):
            return
        item_id = req_str(item, "id", what)
        entry = self._items.get(item_id)
        if entry is None or entry.type != kind:
            raise new_error("OUTPUT_MISMATCH", f"{what}: {kind} {item_id} was never added to the stream")
        self._compare_item(item, item_id, entry, what, out, end=True)

    def _compare_item(
        self, item: dict[str, Any], item_id: str, entry: _Item, what: str, out: list[CanonicalEvent],
        *, end: bool,
    ) -> None:
        complete = opt_str(item, "status", what) != "incomplete"
        if entry.type == "function_call":
            assert entry.call is not None
            if req_str(item, "call_id", what) != entry.call_id or req_str(item, "name", what) != entry.name:
                raise new_error("OUTPUT_MISMATCH", f"{what}: the call_id or name of {item_id} changed")
            self._check(entry.call, opt_str(item, "arguments", what) or "", what, out)
            if end and complete and not entry.call.ended:
                entry.call.ended = True
                out.append(ItemEnded(item_id=item_id))
        elif entry.type == "message":
            seen: set[int] = set()
            for index, raw in enumerate(opt_list(item, "content", what) or ()):
                part = obj(raw, what, f"content[{index}]")
                kind = req_str(part, "type", what)
                if kind not in ("output_text", "refusal"):
                    continue
                acc = entry.parts.get(index)
                if acc is None:
                    raise new_error("OUTPUT_MISMATCH", f"{what}: content part {index} of {item_id} never streamed")
                seen.add(index)
                self._check(acc, req_str(part, "text" if acc.kind == "text" else "refusal", what), what, out)
                if end and complete and not acc.ended:
                    acc.ended = True
                    out.append(ItemEnded(item_id=acc.canon))
            if set(entry.parts) - seen:
                raise new_error("OUTPUT_MISMATCH", f"{what}: a streamed content part of {item_id} is missing")
        else:
            assert entry.call is not None
            if entry.call.length == 0 and not entry.call.ended:
                text = _reasoning_text(item, what)
                if text:
                    self._delta(entry.call, text, out)
            signature = opt_str(item, "encrypted_content", what)
            if end and not entry.call.ended:
                if signature:
                    out.append(ReasoningDelta(item_id=item_id, delta="", signature=signature))
                entry.call.ended = True
                out.append(ItemEnded(item_id=item_id))

    def _completed(self, d: dict[str, Any], what: str, out: list[CanonicalEvent]) -> None:
        resp = obj(d.get("response"), what, "response")
        self._final_output(resp, what, out)
        self._finish(resp, what, out)

    def _final_output(self, resp: dict[str, Any], what: str, out: list[CanonicalEvent]) -> None:
        seen: set[str] = set()
        for index, raw in enumerate(opt_list(resp, "output", what) or ()):
            item = obj(raw, what, f"output[{index}]")
            kind = req_str(item, "type", what)
            if kind not in ("message", "function_call", "reasoning"):
                continue
            item_id = req_str(item, "id", what)
            entry = self._items.get(item_id)
            if entry is None or entry.type != kind:
                raise new_error("OUTPUT_MISMATCH", f"{what}: the output has {kind} {item_id}, never streamed")
            seen.add(item_id)
            self._compare_item(item, item_id, entry, what, out, end=False)
        for item_id in self._order:
            if item_id not in seen:
                raise new_error("OUTPUT_MISMATCH", f"{what}: streamed item {item_id} is not in the output")

    def _finish(self, resp: dict[str, Any], what: str, out: list[CanonicalEvent]) -> None:
        status = opt_str(resp, "status", what)
        usage = opt_obj(resp, "usage", what)
        if status in _FAILED:
            self._terminal = "failed"
            err = opt_obj(resp, "error", what)
            out.append(provider_error(err or {"code": "failed"}, what))
            return
        if usage is not None:
            out.append(responses_usage(usage, what))
        self._terminal = "finished"
        if what == "response.incomplete" or status == "incomplete":
            details = opt_obj(resp, "incomplete_details", what)
            reason = None if details is None else opt_str(details, "reason", what)
            raw = reason or "incomplete"
            out.append(ResponseFinished(finish_reason=_INCOMPLETE.get(raw, "unknown"), raw_finish_reason=raw))  # type: ignore[arg-type]
        elif status == "cancelled":
            out.append(ResponseFinished(finish_reason="cancelled", raw_finish_reason="cancelled"))
        else:
            if self._calls:
                reason = "tool_calls"
            elif self._refusals:
                reason = "refusal"
            else:
                reason = "stop"
            out.append(ResponseFinished(finish_reason=reason, raw_finish_reason=status or "completed"))  # type: ignore[arg-type]

    def _incomplete(self, d: dict[str, Any], what: str, out: list[CanonicalEvent]) -> None:
        resp = obj(d.get("response"), what, "response")
        self._final_output(resp, what, out)
        self._finish(resp, what, out)

    def _failed(self, d: dict[str, Any], what: str, out: list[CanonicalEvent]) -> None:
        resp = obj(d.get("response"), what, "response")
        err = opt_obj(resp, "error", what)
        self._terminal = "failed"
        out.append(provider_error(err or {"code": "failed"}, what))

    def _error(self, d: dict[str, Any], what: str, out: list[CanonicalEvent]) -> None:
        err = opt_obj(d, "error", what)
        self._terminal = "error"
        out.append(provider_error(err if err is not None else d, what))

    # ------------------------------------------------------------ whole body

    def map_body(self, body: Any) -> list[CanonicalEvent]:
        """A ``response`` object (or an ``{"error": ...}`` body)."""
        what = "response"
        out: list[CanonicalEvent] = []
        resp = obj(body, what, "the body")
        out.append(ResponseStarted(response_id=opt_str(resp, "id", what), model=opt_str(resp, "model", what)))
        status = opt_str(resp, "status", what)
        err = opt_obj(resp, "error", what)
        if err is not None and (status is None or status in _FAILED):
            out.append(provider_error(err, what))
            return out
        for index, raw in enumerate(opt_list(resp, "output", what) or ()):
            item = obj(raw, what, f"output[{index}]")
            self._body_item(item, what, out)
        if status in (None, "queued", "in_progress"):
            return out
        self._finish(resp, what, out)
        return out

    def _body_item(self, item: dict[str, Any], what: str, out: list[CanonicalEvent]) -> None:
        kind = req_str(item, "type", what)
        if kind not in ("message", "function_call", "reasoning"):
            self._count(f"output_item:{kind}")
            return
        item_id = req_str(item, "id", what)
        complete = opt_str(item, "status", what) != "incomplete"
        if kind == "function_call":
            call_id = req_str(item, "call_id", what)
            name = req_str(item, "name", what)
            arguments = opt_str(item, "arguments", what) or ""
            self._calls += 1
            out.append(ToolCallStarted(item_id=item_id, call_id=call_id, name=name))
            if arguments:
                out.append(ToolArgumentsDelta(item_id=item_id, delta=arguments))
            if complete:
                out.append(ItemEnded(item_id=item_id))
        elif kind == "message":
            for index, raw in enumerate(opt_list(item, "content", what) or ()):
                part = obj(raw, what, f"content[{index}]")
                part_kind = req_str(part, "type", what)
                if part_kind not in ("output_text", "refusal"):
                    self._count(f"content_part:{part_kind}")
                    continue
                canon = _part_id(item_id, index)
                if part_kind == "output_text":
                    text = req_str(part, "text", what)
                    out.append(ItemStarted(item_id=canon, kind="text"))
                    if text:
                        out.append(TextDelta(item_id=canon, delta=text))
                else:
                    self._refusals += 1
                    text = req_str(part, "refusal", what)
                    out.append(ItemStarted(item_id=canon, kind="refusal"))
                    if text:
                        out.append(RefusalDelta(item_id=canon, delta=text))
                if complete:
                    out.append(ItemEnded(item_id=canon))
        else:
            text = _reasoning_text(item, what)
            out.append(ItemStarted(item_id=item_id, kind="reasoning"))
            if text:
                out.append(ReasoningDelta(item_id=item_id, delta=text))
            signature = opt_str(item, "encrypted_content", what)
            if signature:
                out.append(ReasoningDelta(item_id=item_id, delta="", signature=signature))
            out.append(ItemEnded(item_id=item_id))


def _reasoning_text(item: dict[str, Any], what: str) -> str:
    """A reasoning item's text: its summary parts joined by a blank line, then
    its reasoning-text content."""
    summary = []
    for index, raw in enumerate(opt_list(item, "summary", what) or ()):
        summary.append(req_str(obj(raw, what, f"summary[{index}]"), "text", what))
    content = []
    for index, raw in enumerate(opt_list(item, "content", what) or ()):
        part = obj(raw, what, f"content[{index}]")
        text = opt_str(part, "text", what)
        if text:
            content.append(text)
    return "\n\n".join(summary) + "".join(content)


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


_HANDLERS = {
    "response.created": OpenAIResponsesMapper._created,
    "response.in_progress": OpenAIResponsesMapper._in_progress,
    "response.queued": OpenAIResponsesMapper._in_progress,
    "response.output_item.added": OpenAIResponsesMapper._item_added,
    "response.output_item.done": OpenAIResponsesMapper._item_done,
    "response.content_part.added": OpenAIResponsesMapper._part_added,
    "response.content_part.done": OpenAIResponsesMapper._part_done,
    "response.output_text.delta": OpenAIResponsesMapper._text_delta,
    "response.output_text.done": OpenAIResponsesMapper._text_done,
    "response.refusal.delta": OpenAIResponsesMapper._refusal_delta,
    "response.refusal.done": OpenAIResponsesMapper._refusal_done,
    "response.function_call_arguments.delta": OpenAIResponsesMapper._args_delta,
    "response.function_call_arguments.done": OpenAIResponsesMapper._args_done,
    "response.reasoning_summary_part.added": OpenAIResponsesMapper._summary_part,
    "response.reasoning_summary_part.done": OpenAIResponsesMapper._reasoning_done,
    "response.reasoning_summary_text.delta": OpenAIResponsesMapper._reasoning_delta,
    "response.reasoning_summary_text.done": OpenAIResponsesMapper._reasoning_done,
    "response.reasoning_text.delta": OpenAIResponsesMapper._reasoning_delta,
    "response.reasoning_text.done": OpenAIResponsesMapper._reasoning_done,
    "response.completed": OpenAIResponsesMapper._completed,
    "response.incomplete": OpenAIResponsesMapper._incomplete,
    "response.failed": OpenAIResponsesMapper._failed,
    "error": OpenAIResponsesMapper._error,
}
