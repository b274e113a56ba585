"""Anthropic Messages (pure twin of ``rust/src/core/providers/anthropic.rs``).

Stream: ``message_start`` → (``content_block_start`` → ``content_block_delta``*
→ ``content_block_stop``)* → ``message_delta`` → ``message_stop``, with
``ping`` anywhere and ``error`` possible at any point after HTTP 200.

Terminal authority: ``message_stop`` (finishes with the stop reason the
``message_delta`` events gave) or ``error`` (fails). Nothing may follow
either.

Vetoes (a field that says "not finished, failed, refused or ambiguous" wins
over one that says "done"):
- an ``error`` event anywhere before ``message_stop`` -> response failed
  (``PROVIDER_ERROR``); after it -> ``EVENT_AFTER_TERMINAL``; an error body
  likewise fails.
- ``stop_reason`` (stream: ``message_start`` then each ``message_delta``;
  body: the message): ``max_tokens`` / ``model_context_window_exceeded`` ->
  length (``INCOMPLETE_RESPONSE``), ``refusal`` -> refusal (``REFUSAL``),
  ``pause_turn``, null, ``""`` or any unknown value -> unknown
  (``UNKNOWN_FINISH_REASON``). Only ``end_turn`` / ``stop_sequence`` /
  ``tool_use`` are done.
- ``stop_details`` of type ``refusal`` (message, ``message_delta``'s delta,
  body) -> refusal (``REFUSAL``), raw ``refusal``, whatever ``stop_reason``
  beside it says; ``stop_details`` that is neither null nor an object, or
  whose ``type`` is not a string -> ``MALFORMED_EVENT`` at its path.
- a stop reason that differs from an earlier one: the not-done one wins
  whichever came first (the earlier of two not-done ones); two different
  done ones are ambiguous -> unknown, raw ``"<first>/<second>"``.
- a ``content_block_start`` / ``content_block_delta`` after a
  ``message_delta`` that gave the stop reason -> ``EVENT_AFTER_TERMINAL``.

Mapping:
- content block ``index`` *n* becomes item ``block_<n>``; a ``tool_use`` block
  keeps its ``id`` as the call id. Blocks are the message's content in order:
  a block started before the one before it (``index`` 2 after block 0) is
  ``MALFORMED_EVENT`` at ``$.index`` (an event was lost, maybe a call).
- ``text`` → text item; ``thinking`` → reasoning item (``signature_delta`` is
  its signature); ``redacted_thinking`` → reasoning item with empty text whose
  signature is the opaque ``data``.
- ``tool_use`` → tool call. Its arguments are the joined ``partial_json``
  deltas; when there are none (a tool without arguments, or a whole body) they
  are the block's ``input`` object as deterministic JSON text (``{}`` for an
  empty input). A block with neither has no arguments at all (empty text,
  which ``decide`` refuses as ``EMPTY_INPUT``): ``{}`` is never assumed.
- the blocks of tools Anthropic runs itself and its own markers
  (``server_tool_use``, the ``*_tool_result`` blocks, ``mcp_tool_use``,
  ``mcp_tool_result``, ``mcp_tool_listing``, ``container_upload``,
  ``compaction``, ``fallback``) leave the host nothing to do: they are
  counted in ``unknown_events`` as ``content_block:<type>`` and their deltas
  are not mapped; one still open at ``message_stop`` (its
  ``content_block_stop`` lost) is ``ITEM_NOT_ENDED``, as an open text or
  tool_use block is. Any other block type may be a call the host must handle or
  part of the answer: ``UNSUPPORTED_ITEM`` at the block's path
  (``$.content[1]``, ``$.content_block``), never counted while the rest is
  decided.
- ``citations_delta`` is counted as ``content_block_delta:<type>``, and so
  is an unknown delta type of a thinking block; one of a text or tool_use
  block is ``MALFORMED_EVENT`` (it may carry the answer or the arguments, so
  the block would be incomplete). A delta of a known type in a block that
  does not take it is ``MALFORMED_EVENT`` at ``$.delta.type``: a
  ``thinking_delta`` or ``signature_delta`` in a ``redacted_thinking`` block
  (which takes no delta), a ``text_delta``, ``citations_delta``,
  ``thinking_delta`` or ``signature_delta`` in a block the provider runs
  (whose ``input_json_delta`` and own deltas are not mapped). Unknown event
  types are counted by their type.
- ``message_start.message.type``, when present, is ``"message"`` (any other
  value is ``MALFORMED_EVENT`` at ``$.message.type``, as a body's ``$.type``
  is); absent, the event's own type names the object.
- a ``message_start`` whose message already holds content blocks (and a stop
  reason) maps them as a whole body would. Its stop reason speaks of that
  content only: once a ``content_block_start`` streams more, the message
  needs a ``message_delta``'s stop reason, and a ``message_stop`` without
  one leaves the stop reason unknown (raw null, ``UNKNOWN_FINISH_REASON``)
  unless it was a not-done one, which still wins.
- stop reasons: ``end_turn``/``stop_sequence`` → stop, ``tool_use`` →
  tool_calls, ``max_tokens``/``model_context_window_exceeded`` → length,
  ``refusal`` → refusal; anything else (``pause_turn``: the server paused a
  long turn that must be continued) → unknown. The raw value is kept.
- usage: input = ``input_tokens`` + cache reads + cache writes, cached = cache
  reads, output = ``output_tokens``; later values override earlier ones and
  one usage event is emitted at the terminal.
- an ``error`` before ``message_start`` (or an error body) is preceded by a
  response start without id or model, so it reaches the caller as the
  provider's failure.
- ``error`` types ``overloaded_error``, ``api_error``, ``rate_limit_error`` and
  ``timeout_error`` are retryable.
"""

from __future__ import annotations

from typing import Any, Final

from ...errors import new_error
from ...types import (
    CanonicalEvent,
    FinishReason,
    ItemEnded,
    ItemStarted,
    ReasoningDelta,
    ResponseFailed,
    ResponseFinished,
    ResponseStarted,
    TextDelta,
    ToolArgumentsDelta,
    ToolCallStarted,
    UsageReported,
)
from ..assemble import Assembler
from ._shape import U64_MAX, located, model_role, shape
from ._unknown import MAX_RECORDED_ITEMS, count_unknown
from .jsontext import dumps

__all__ = ["AnthropicMapper", "finish_reason", "RETRYABLE_ERRORS"]

#: provider error types worth retrying
RETRYABLE_ERRORS = frozenset({"overloaded_error", "api_error", "rate_limit_error", "timeout_error"})

_STOP_REASONS: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "refusal",
}

#: blocks of tools Anthropic runs itself and its own markers, with nothing for the host to do
_INFORMATIONAL_BLOCKS = frozenset(
    {
        "server_tool_use",
        "web_search_tool_result",
        "web_fetch_tool_result",
        "advisor_tool_result",
        "code_execution_tool_result",
        "bash_code_execution_tool_result",
        "text_editor_code_execution_tool_result",
        "tool_search_tool_result",
        "mcp_tool_use",
        "mcp_tool_result",
        "mcp_tool_listing",
        "container_upload",
        "compaction",
        "fallback",
    }
)

# block kinds
_TEXT, _TOOL, _THINKING, _REDACTED, _RECORDED = "text", "tool_use", "thinking", "redacted_thinking", "recorded"

#: delta type -> (its text field, the block kind it belongs to)
_DELTAS: dict[str, tuple[str | None, str]] = {
    "text_delta": ("text", _TEXT),
    "input_json_delta": ("partial_json", _TOOL),
    "thinking_delta": ("thinking", _THINKING),
    "signature_delta": ("signature", _THINKING),
    "citations_delta": (None, _TEXT),
}


#: the normalized reasons that say the message is done
_DONE = ("stop", "tool_calls")


def finish_reason(raw: str | None) -> FinishReason:
    """The normalized finish reason of an Anthropic ``stop_reason``."""
    return "unknown" if raw is None else _STOP_REASONS.get(raw, "unknown")


def _refused(owner: dict[str, Any], what: str, at: str) -> bool:
    """Whether ``owner``'s ``stop_details`` (null, or an object with a
    ``type``) is a refusal's: ``{"type": "refusal", "category", "explanation"}``."""
    details = _opt_obj(owner, "stop_details", what, at)
    return details is not None and _opt_str(details, "type", what, f"{at}.stop_details") == "refusal"


_S = shape("anthropic")
_malformed, _obj, _opt_str, _req_str, _opt_list = _S.malformed, _S.obj, _S.opt_str, _S.req_str, _S.opt_list
_opt_obj = _S.opt_obj
_req_index, _opt_count = _S.req_index, _S.opt_count


class _Block:
    __slots__ = ("kind", "item_id", "ended", "input", "input_nonempty", "saw_json")

    def __init__(self, kind: str, item_id: str, input: str | None = None, input_nonempty: bool = False) -> None:
        self.kind = kind
        self.item_id = item_id
        self.ended = False
        self.input = input  # a whole ``input`` object as canonical text
        self.input_nonempty = input_nonempty
        self.saw_json = False


class AnthropicMapper:
    """Maps Anthropic Messages events and bodies to canonical events."""

    #: where a ``tool_use`` block's ``input`` object sits: in
    #: ``content_block_start``, in ``message_start``'s message, in a body
    ARGUMENT_FIELDS: Final = (
        ("content_block", "input"),
        ("message", "content", None, "input"),
        ("content", None, "input"),
    )

    def __init__(self, choice: int | None = None) -> None:
        del choice  # Messages responses have exactly one candidate
        self.unknown_events: dict[str, int] = {}
        self._started = False
        self._terminal = False
        self._blocks: dict[int, _Block] = {}
        self._recorded = 0  # blocks of an unknown type kept in ``_blocks``
        self._stop_reason: str | None = None
        self._stopped = False  # a message_delta gave the stop reason: no content may follow
        self._streamed = False  # a content_block_start came: only a message_delta's stop reason covers it
        self._usage: dict[str, int | None] = {}

    # ------------------------------------------------------------ helpers

    def _count(self, key: str) -> None:
        count_unknown(self.unknown_events, key)

    def _merge_usage(self, usage: Any, what: str, at: str) -> None:
        if usage is None:
            return
        usage = _obj(usage, what, at)
        for key in ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
            value = _opt_count(usage, key, what, at)
            if value is not None:
                self._usage[key] = value

    def _usage_event(self) -> list[CanonicalEvent]:
        if not self._usage:
            return []
        u = self._usage
        parts = [u.get("input_tokens"), u.get("cache_read_input_tokens"), u.get("cache_creation_input_tokens")]
        present = [p for p in parts if p is not None]
        return [
            UsageReported(
                input_tokens=min(sum(present), U64_MAX) if present else None,  # saturating, as in Rust
                output_tokens=u.get("output_tokens"),
                cached_tokens=u.get("cache_read_input_tokens"),
            )
        ]

    def _set_stop_reason(self, raw: str) -> None:
        """A stop reason that disagrees with an earlier one never makes the
        message more finished: a not-done one (or the earlier of two) wins;
        two different done ones are ambiguous and give ``"<first>/<second>"``,
        which normalizes to unknown."""
        old = self._stop_reason
        if old is None or old == raw:
            self._stop_reason = raw
        elif finish_reason(old) in _DONE:
            self._stop_reason = f"{old}/{raw}" if finish_reason(raw) in _DONE else raw

    def _finish(self) -> list[CanonicalEvent]:
        self._terminal = True
        out = self._usage_event()
        out.append(
            ResponseFinished(finish_reason=finish_reason(self._stop_reason), raw_finish_reason=self._stop_reason)
        )
        return out

    @staticmethod
    def _failed(payload: dict[str, Any], what: str) -> ResponseFailed:
        error = _obj(payload.get("error"), what, "$.error")
        error_type = _req_str(error, "type", what, "$.error")
        message = _opt_str(error, "message", what, "$.error") or ""
        return ResponseFailed(
            code=error_type, message=message, retryable=error_type in RETRYABLE_ERRORS, error_type=error_type
        )

    def _start_failed(self, failed: ResponseFailed) -> list[CanonicalEvent]:
        """The failure, preceded by an (id-less) start when the provider failed
        before starting the message."""
        if self._started:
            return [failed]
        self._started = True
        return [ResponseStarted(), failed]

    def _open_block(self, index: int, block: Any, what: str, at: str, out: list[CanonicalEvent]) -> _Block:
        """Start content block ``index`` (at ``at``); a whole body's block also carries its content."""
        block = _obj(block, what, at)
        if index in self._blocks:
            raise new_error("DUPLICATE_ITEM_ID", f"anthropic content block {index} was started twice")
        block_type = _req_str(block, "type", what, at)
        item_id = f"block_{index}"
        if block_type == "text":
            text = _opt_str(block, "text", what, at)
            state = _Block(_TEXT, item_id)
            out.append(ItemStarted(item_id=item_id, kind="text"))
            if text:
                out.append(TextDelta(item_id=item_id, delta=text))
        elif block_type == "tool_use":
            call_id = _req_str(block, "id", what, at)
            if not call_id:  # an empty id pairs with no tool_result
                raise _malformed(what, f"{at}.id")
            name = _req_str(block, "name", what, at)
            tool_input = block.get("input")
            text = None
            if tool_input is not None:
                try:
                    text = dumps(_obj(tool_input, what, f"{at}.input"))
                except ValueError:  # NaN or an infinite float
                    raise _malformed(what, f"{at}.input") from None
            state = _Block(_TOOL, item_id, text, bool(tool_input))
            out.append(ToolCallStarted(item_id=item_id, call_id=call_id, name=name))
        elif block_type == "thinking":
            thinking = _opt_str(block, "thinking", what, at)
            signature = _opt_str(block, "signature", what, at)
            state = _Block(_THINKING, item_id)
            out.append(ItemStarted(item_id=item_id, kind="reasoning"))
            if thinking or signature:
                out.append(ReasoningDelta(item_id=item_id, delta=thinking or "", signature=signature or None))
        elif block_type == "redacted_thinking":
            data = _req_str(block, "data", what, at)
            state = _Block(_REDACTED, item_id)
            out.append(ItemStarted(item_id=item_id, kind="reasoning"))
            out.append(ReasoningDelta(item_id=item_id, delta="", signature=data))
        elif block_type not in _INFORMATIONAL_BLOCKS:
            raise located(
                "UNSUPPORTED_ITEM",
                f'content block of type "{block_type}" is not one the package can represent; '
                "it may be a call the host must handle, so nothing in the response is decided",
                at,
            )
        else:
            if self._recorded >= MAX_RECORDED_ITEMS:
                raise new_error(
                    "TOO_MANY_ITEMS_IN_RESPONSE",
                    f"the response has more unknown content blocks than {MAX_RECORDED_ITEMS}",
                )
            self._recorded += 1
            state = _Block(_RECORDED, item_id)
            self._count(f"content_block:{block_type}")
        self._blocks[index] = state
        return state

    def _close_block(self, index: int, out: list[CanonicalEvent]) -> None:
        state = self._blocks.get(index)
        if state is None:
            raise new_error("UNKNOWN_ITEM", f"anthropic content_block_stop names block {index}, which never started")
        if state.ended:
            raise new_error("DELTA_AFTER_END", f"anthropic content block {index} was stopped twice")
        state.ended = True
        if state.kind == _RECORDED:
            return
        if state.kind == _TOOL and not state.saw_json and state.input is not None:
            out.append(ToolArgumentsDelta(item_id=state.item_id, delta=state.input))
        out.append(ItemEnded(item_id=state.item_id))

    # ------------------------------------------------------------ stream

    def map_event(self, event: str | None, payload: Any) -> list[CanonicalEvent]:
        """One Anthropic stream event (its ``data`` decoded)."""
        payload = _obj(payload, "event", "$")
        event_type = _req_str(payload, "type", "event", "$")
        if event is not None and event != "message" and event != event_type:
            raise located("MALFORMED_EVENT", f"anthropic SSE event {event} carries data of type {event_type}", "$.type")
        if self._terminal:
            raise new_error("EVENT_AFTER_TERMINAL", f"anthropic {event_type} event after the end of the message")
        what = f"{event_type} event"
        out: list[CanonicalEvent] = []
        if event_type == "ping":
            return out
        if event_type == "error":
            failed = self._failed(payload, what)
            self._terminal = True
            return self._start_failed(failed)
        if event_type == "message_start":
            message = _obj(payload.get("message"), what, "$.message")
            # the event's own type names the object, so the message's may be absent; present, it must agree
            if _opt_str(message, "type", what, "$.message") not in (None, "message"):
                raise _malformed(what, "$.message.type")
            response_id = _opt_str(message, "id", what, "$.message")
            model = _opt_str(message, "model", what, "$.message")
            model_role(message, "assistant", what, "$.message")
            if self._started:
                raise new_error("DUPLICATE_START", "anthropic message_start after the message had started")
            content = _opt_list(message, "content", what, "$.message")
            stop_reason = _opt_str(message, "stop_reason", what, "$.message")
            refused = _refused(message, what, "$.message")
            self._merge_usage(message.get("usage"), what, "$.message.usage")
            self._started = True
            out.append(ResponseStarted(response_id=response_id, model=model))
            # a message_start may already carry whole blocks (a programmatic tool call's turn)
            for index, block in enumerate(content or ()):
                self._open_block(index, block, what, f"$.message.content[{index}]", out)
                self._close_block(index, out)
            if stop_reason is not None:
                self._set_stop_reason(stop_reason)
            if refused:
                self._set_stop_reason("refusal")
            return out
        if event_type not in (
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ):
            self._count(event_type)
            return out
        if not self._started:
            raise new_error("EVENT_BEFORE_START", f"anthropic {event_type} event before message_start")
        if self._stopped and event_type in ("content_block_start", "content_block_delta"):
            raise new_error(
                "EVENT_AFTER_TERMINAL", f"anthropic {event_type} event after the message_delta that stopped the message"
            )
        if event_type == "content_block_delta":
            self._delta(payload, what, out)
        elif event_type == "content_block_start":
            index = _req_index(payload, what, "$")
            if index > len(self._blocks):  # blocks are the message's content, in order: one went missing
                raise located(
                    "MALFORMED_EVENT",
                    f"anthropic content block {index} started before block {len(self._blocks)}: an event was lost",
                    "$.index",
                )
            self._streamed = True
            self._open_block(index, payload.get("content_block"), what, "$.content_block", out)
        elif event_type == "content_block_stop":
            self._close_block(_req_index(payload, what, "$"), out)
        elif event_type == "message_delta":
            delta = _obj(payload.get("delta"), what, "$.delta")
            stop_reason = _opt_str(delta, "stop_reason", what, "$.delta")
            refused = _refused(delta, what, "$.delta")
            self._merge_usage(payload.get("usage"), what, "$.usage")
            if stop_reason is not None:
                self._set_stop_reason(stop_reason)
                self._stopped = True
            if refused:
                self._set_stop_reason("refusal")
                self._stopped = True
        else:  # message_stop
            # a block the provider runs has no item to be left open: its stop is checked here
            for index in sorted(self._blocks):
                if self._blocks[index].kind == _RECORDED and not self._blocks[index].ended:
                    raise new_error(
                        "ITEM_NOT_ENDED", f"anthropic content block {index} was never stopped before message_stop"
                    )
            if self._streamed and not self._stopped and finish_reason(self._stop_reason) in _DONE:
                # message_start's done stop reason spoke of its own content only, not of blocks
                # streamed after it, whose stop reason (in the message_delta) never came
                self._stop_reason = None
            out.extend(self._finish())
        return out

    def _delta(self, payload: dict[str, Any], what: str, out: list[CanonicalEvent]) -> None:
        index = _req_index(payload, what, "$")
        delta = _obj(payload.get("delta"), what, "$.delta")
        delta_type = _req_str(delta, "type", what, "$.delta")
        field, wanted = _DELTAS.get(delta_type, (None, None))
        text = None
        if field is not None:
            text = _req_str(delta, field, what, "$.delta")
        elif delta_type == "citations_delta":
            _obj(delta.get("citation"), what, "$.delta.citation")
        state = self._blocks.get(index)
        if state is None:
            raise new_error("DELTA_BEFORE_START", f"anthropic {delta_type} for content block {index} before its start")
        if state.ended:
            raise new_error("DELTA_AFTER_END", f"anthropic {delta_type} for content block {index} after its stop")
        if state.kind == _RECORDED and wanted not in (_TEXT, _THINKING):
            # part of a block that runs on the provider's side (counted at its start); a text or
            # thinking delta in it is not, and is refused below
            return
        if wanted is not None and state.kind != wanted:
            raise located(
                "MALFORMED_EVENT",
                f"anthropic {delta_type} for content block {index}, which is not a {wanted} block",
                "$.delta.type",
            )
        item_id = state.item_id
        if wanted is None and state.kind in (_TEXT, _TOOL):  # it may hold what the block says: never dropped
            raise located(
                "MALFORMED_EVENT",
                f"anthropic {delta_type} for content block {index}, a {state.kind} block, is not a delta type it takes",
                "$.delta.type",
            )
        if text is None:  # citations_delta, or an unknown delta type of a thinking block: recorded, not mapped
            self._count(f"content_block_delta:{delta_type}")
        elif delta_type == "text_delta":
            out.append(TextDelta(item_id=item_id, delta=text))
        elif delta_type == "input_json_delta":
            if text:
                if state.input_nonempty:
                    raise located(
                        "MALFORMED_EVENT",
                        f"anthropic tool_use block {index} has both an input object and input_json_delta text",
                        "$.delta.partial_json",
                    )
                state.saw_json = True
                out.append(ToolArgumentsDelta(item_id=item_id, delta=text))
        elif delta_type == "thinking_delta":
            out.append(ReasoningDelta(item_id=item_id, delta=text))
        else:  # signature_delta
            out.append(ReasoningDelta(item_id=item_id, delta="", signature=text))

    def fast_event(self, event: str | None, payload: Any, assembler: Assembler) -> bool | tuple[tuple[int, bool], str]:
        """A ``text_delta`` / non-empty ``input_json_delta`` for an open text /
        tool_use block (every checked field of the right type), applied
        straight to ``assembler``: what ``map_event`` maps it to, with the
        same effect on the block's state. Returns ``(key, delta)`` (see
        ``more_delta``); False, with nothing changed, for any other event,
        which then goes through ``map_event``."""
        if type(payload) is not dict or payload.get("type") != "content_block_delta":
            return False
        if event is not None and event != "message" and event != "content_block_delta":
            return False
        index, delta = payload.get("index"), payload.get("delta")
        if type(index) is not int or type(delta) is not dict:
            return False
        delta_type = delta.get("type")
        if delta_type == "text_delta":
            key, text = (index, True), delta.get("text")
        elif delta_type == "input_json_delta":
            key, text = (index, False), delta.get("partial_json")
        else:
            return False
        if type(text) is not str:
            return False
        return (key, text) if self.more_delta(key, text, assembler) else False

    def more_delta(self, key: tuple[int, bool], delta: str, assembler: Assembler) -> bool:
        """``fast_event`` of a ``text_delta`` (``key``: its block index and
        True) or ``input_json_delta`` (the index and False) with ``delta``;
        False, with nothing changed, where the message's or the block's state
        does not allow it (an empty ``input_json_delta`` maps to nothing)."""
        if self._terminal or self._stopped or not self._started:
            return False
        index, is_text = key
        state = self._blocks.get(index)
        if state is None or state.ended:
            return False
        if is_text:
            if state.kind != _TEXT:
                return False
            assembler.text_delta(state.item_id, delta)
            return True
        if state.kind != _TOOL or state.input_nonempty or not delta:
            return False
        state.saw_json = True
        assembler.arguments_delta(state.item_id, delta)
        return True

    def end(self) -> list[CanonicalEvent]:
        """EOF: an Anthropic stream implies nothing at its end."""
        return []

    # ------------------------------------------------------------ whole body

    def map_body(self, body: Any) -> list[CanonicalEvent]:
        """A whole ``message`` body, or an ``error`` body."""
        body = _obj(body, "body", "$")
        body_type = body.get("type")
        if body_type == "error":
            failed = self._failed(body, "error body")
            self._terminal = True
            return self._start_failed(failed)
        if body_type != "message":
            raise _malformed("body", "$.type")
        what = "message body"
        response_id = _opt_str(body, "id", what, "$")
        model = _opt_str(body, "model", what, "$")
        model_role(body, "assistant", what, "$")
        content = body.get("content")
        if type(content) is not list:
            raise _malformed(what, "$.content")
        stop_reason = _opt_str(body, "stop_reason", what, "$")
        refused = _refused(body, what, "$")
        self._merge_usage(body.get("usage"), what, "$.usage")
        self._started = True
        out: list[CanonicalEvent] = [ResponseStarted(response_id=response_id, model=model)]
        for index, block in enumerate(content):
            self._open_block(index, block, what, f"$.content[{index}]", out)
            self._close_block(index, out)
        self._stop_reason = stop_reason
        if refused:
            self._set_stop_reason("refusal")
        out.extend(self._finish())
        return out
