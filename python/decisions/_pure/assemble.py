"""Stream assembly (pure twin of ``rust/src/core/assemble.rs``).

:class:`Assembler` consumes canonical events and enforces the state machine
``init -> started -> streaming -> completed | failed``: only a legal terminal
event and complete items give a :class:`~decisions.types.NormalizedResponse`.
Each delta is appended to its own item's buffer (a list of pieces joined once,
at the end), after the limits are checked: no re-join, re-scan or re-parse.

:class:`CanonicalMapper` is the provider ``"canonical"``: canonical events
themselves (objects, or their ``to_dict()`` wire format). The pipeline that
feeds an assembler (decoder, envelope rule, mapper) is ``pipeline.py``.

Event data reaches a mapper only after the envelope rule (``envelope.py``,
twin of ``rust/src/core/envelope.rs``) has passed it; a payload handed over
as a dict is first written as JSON text (``decisions._payload``), on both
backends, so a dict and the same text give the same outcome.
"""

from __future__ import annotations

from typing import Any, Callable, Final, Mapping, cast

from ..errors import OutputError, StreamError, TransportError
from ..limits import DEFAULT_LIMITS, Limits
from ..stream.partial import PartialJSON
from ..types import (
    CALL_KINDS,
    EVENT_TYPES,
    FINISH_REASONS,
    CallSnapshot,
    CanonicalEvent,
    Item,
    ItemEnded,
    ItemStarted,
    NormalizedResponse,
    ReasoningDelta,
    ReasoningItem,
    RefusalDelta,
    RefusalItem,
    ResponseFailed,
    ResponseFinished,
    ResponseSnapshot,
    ResponseStarted,
    TextDelta,
    ToolArgumentsDelta,
    ToolCallStarted,
    Usage,
    UsageReported,
)
from .objects import new_response, new_text_item, new_tool_call_item
from .providers.canonical import ITEM_KINDS as _KINDS

__all__ = ["Assembler"]


_INIT, _STARTED, _STREAMING, _COMPLETED, _FAILED = range(5)
_STATE_NAMES: Final = ("init", "started", "streaming", "completed", "failed")

#: finish reasons that cut the response short: open items are allowed at the finish.
_TRUNCATING: Final = frozenset({"length", "content_filter", "refusal", "cancelled", "error"})
#: finish reasons that cut the output itself: every tool call of the response
#: is ``complete=False``, ended or not, and can never become executable.
_CUTS_CALLS: Final = frozenset({"length", "content_filter", "refusal"})


def _utf8_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


class _Item:
    __slots__ = (
        "kind",
        "item_id",
        "pieces",
        "nbytes",
        "ended",
        "call_id",
        "name",
        "call_id_generated",
        "call_kind",
        "signature",
        "parser",
        "fed",
    )

    def __init__(self, kind: str, item_id: str) -> None:
        self.kind = kind
        self.item_id = item_id
        self.pieces: list[str] = []
        self.nbytes = 0
        self.ended = False
        self.call_id = ""
        self.name = ""
        self.call_id_generated = False
        self.call_kind = "function"
        self.signature: list[str] | None = None
        self.parser: PartialJSON | None = None
        self.fed = 0  # characters already given to ``parser``

    def text(self) -> str:
        # Joins the pieces so far into one. Only the first ``count`` pieces are
        # replaced, each step a single list operation, so a delta appended by
        # another thread meanwhile is kept, never lost.
        pieces = self.pieces
        count = len(pieces)
        if count == 1:
            return pieces[0]
        joined = "".join(pieces[:count])
        pieces[:count] = [joined] if joined else []
        return joined


class Assembler:
    """Canonical events in, one checked :class:`NormalizedResponse` out."""

    __slots__ = (
        "provider",
        "_limits",
        "_state",
        "_error",
        "_cancelled",
        "_settled",
        "_provider_failure",
        "_items",
        "_placed",
        "_by_id",
        "_call_ids",
        "_calls",
        "_bytes",
        "_events",
        "_response_id",
        "_model",
        "_usage",
        "_finish_reason",
        "_raw_finish_reason",
        "_response",
    )

    def __init__(self, provider: str, limits: Limits = DEFAULT_LIMITS) -> None:
        self.provider = provider
        self._limits = limits
        self._state = _INIT
        self._error: OutputError | None = None
        self._cancelled = False
        self._settled = False  # the outcome was given (``finish()`` or an error): ``abort()`` changes nothing
        self._provider_failure: ResponseFailed | None = None
        self._items: list[_Item] = []
        self._placed: list[tuple[str, int]] = []
        self._by_id: dict[str, _Item] = {}
        self._call_ids: set[str] = set()
        self._calls = 0
        self._bytes = 0
        self._events = 0
        self._response_id: str | None = None
        self._model: str | None = None
        self._usage: dict[str, int | None] | None = None
        self._finish_reason = "unknown"
        self._raw_finish_reason: str | None = None
        self._response: NormalizedResponse | None = None

    # ------------------------------------------------------------ state

    @property
    def state(self) -> str:
        """``init``, ``started``, ``streaming``, ``completed`` or ``failed``."""
        # Derived from the failure flags as well, so an ``abort()`` from another
        # thread reads as failed even if a feed in flight moved ``_state`` on.
        if self._cancelled or self._error is not None:
            return "failed"
        return _STATE_NAMES[self._state]

    def fail(self, err: OutputError) -> OutputError:
        """Record a failure (from here or an earlier stage); later use raises ``STREAM_FAILED``."""
        if self._error is None:
            self._error = err
        self._settled = True
        self._state = _FAILED
        return err

    def _fail(self, code: str, message: str) -> OutputError:
        return self.fail(StreamError(code, message))

    def cancel(self) -> None:
        """``abort()``: every later call raises ``STREAM_CANCELLED``, unless the
        stream's outcome was already given (a ``finish()`` or an error), which
        it does not change."""
        if self._settled:
            return
        self._cancelled = True
        self._state = _FAILED

    def check_usable(self) -> None:
        """Raise if the stream was cancelled or already failed."""
        if self._cancelled:
            raise StreamError("STREAM_CANCELLED", "the stream was cancelled by the caller")
        if self._error is not None:
            raise StreamError("STREAM_FAILED", f"the stream already failed ({self._error.code})")

    # ------------------------------------------------------------ events

    def apply(self, event: CanonicalEvent) -> None:
        """Consume one canonical event; raises ``StreamError`` on a protocol violation."""
        if self._cancelled or self._error is not None:
            self.check_usable()
        self._events += 1
        if self._events > self._limits.max_stream_events:
            raise self._fail(
                "TOO_MANY_EVENTS",
                f"the response has more events than max_stream_events ({self._limits.max_stream_events})",
            )
        cls = type(event)
        state = self._state
        if state >= _COMPLETED:  # a terminal event was seen (finished, or the provider failed)
            if cls is UsageReported:
                self._merge_usage(cast(UsageReported, event))
                return
            raise self._fail("EVENT_AFTER_TERMINAL", f"{event.type} after the terminal event")
        if cls is ResponseStarted:
            if state != _INIT:
                raise self._fail("DUPLICATE_START", "the response was started twice")
            started = cast(ResponseStarted, event)
            self._state = _STARTED
            self._response_id = started.response_id
            self._model = started.model
            return
        if state == _INIT:
            if cls not in EVENT_TYPES.values() and cls is not UsageReported:
                raise TypeError(f"not a canonical event: {cls.__name__}")
            raise self._fail("EVENT_BEFORE_START", f"{event.type} before response_started")
        if cls is UsageReported:
            self._merge_usage(cast(UsageReported, event))
            return
        handler = _HANDLERS.get(cls)
        if handler is None:
            raise TypeError(f"not a canonical event: {cls.__name__}")
        self._state = _STREAMING
        handler(self, event)

    def _new_item(self, kind: str, item_id: str) -> _Item:
        if item_id in self._by_id:
            raise self._fail("DUPLICATE_ITEM_ID", f'two items share the item id "{item_id}"')
        if len(self._items) >= self._limits.max_items_per_response:
            raise self._fail(
                "TOO_MANY_ITEMS_IN_RESPONSE",
                f"the response has more items than max_items_per_response ({self._limits.max_items_per_response})",
            )
        item = _Item(kind, item_id)
        self._by_id[item_id] = item
        self._items.append(item)
        return item

    def _item_started(self, event: ItemStarted) -> None:
        if event.kind not in _KINDS:
            raise self._fail("MALFORMED_EVENT", 'item_started event field "kind" must be an item kind')
        self._new_item(event.kind, event.item_id)
        if event.position is not None:
            self.place(event.item_id, event.position)

    def _open_item(self, event_type: str, item_id: str, kind: str) -> _Item:
        item = self._by_id.get(item_id)
        if item is None:
            raise self._fail("DELTA_BEFORE_START", f'{event_type} for item "{item_id}", which was never started')
        if item.kind != kind:
            raise self._fail("UNKNOWN_ITEM", f'{event_type} for item "{item_id}", which is a {item.kind} item')
        if item.ended:
            raise self._fail("DELTA_AFTER_END", f'{event_type} for item "{item_id}", which has ended')
        return item

    def _add_bytes(self, size: int) -> None:
        total = self._bytes + size
        if total > self._limits.max_response_bytes:
            raise self._fail(
                "RESPONSE_TOO_LARGE",
                f"the response content exceeds max_response_bytes ({self._limits.max_response_bytes})",
            )
        self._bytes = total

    def _text_delta(self, event: TextDelta | RefusalDelta) -> None:
        self._append_text(event.type, "text" if type(event) is TextDelta else "refusal", event.item_id, event.delta)

    def _append_text(self, event_type: str, kind: str, item_id: str, delta: str) -> None:
        item = self._open_item(event_type, item_id, kind)
        self._add_bytes(_utf8_len(delta))
        item.pieces.append(delta)

    def _reasoning_delta(self, event: ReasoningDelta) -> None:
        item = self._open_item(event.type, event.item_id, "reasoning")
        delta, signature = event.delta, event.signature
        self._add_bytes(_utf8_len(delta) + (0 if signature is None else _utf8_len(signature)))
        if delta:
            item.pieces.append(delta)
        if signature is not None:
            if item.signature is None:
                item.signature = []
            item.signature.append(signature)

    def _call_started(self, event: ToolCallStarted) -> None:
        self._start_call(event.item_id, event.call_id, event.name, event.call_id_generated, event.call_kind)

    def _start_call(self, item_id: str, call_id: str, name: str, generated: bool, call_kind: str) -> None:
        if call_kind not in CALL_KINDS:
            raise self._fail("MALFORMED_EVENT", 'tool_call_started event field "call_kind" must be a call kind')
        existing = self._by_id.get(item_id)
        if existing is not None:
            if existing.kind == "tool_call" and existing.call_id == call_id and existing.name != name:
                raise self._fail(
                    "CALL_NAME_CHANGED",
                    f'tool call "{call_id}" changed its name from "{existing.name}" to "{name}"',
                )
            raise self._fail("DUPLICATE_ITEM_ID", f'two items share the item id "{item_id}"')
        if call_id in self._call_ids:
            raise self._fail("DUPLICATE_CALL_ID", f'two tool calls share the call id "{call_id}"')
        if self._calls >= self._limits.max_calls_per_response:
            raise self._fail(
                "TOO_MANY_CALLS",
                f"the response has more tool calls than max_calls_per_response ({self._limits.max_calls_per_response})",
            )
        item = self._new_item("tool_call", item_id)
        item.call_id = call_id
        item.name = name
        item.call_id_generated = generated
        item.call_kind = call_kind
        self._call_ids.add(call_id)
        self._calls += 1

    def _arguments_delta(self, event: ToolArgumentsDelta) -> None:
        self._append_arguments(event.item_id, event.delta)

    def _append_arguments(self, item_id: str, delta: str) -> None:
        # ``_open_item`` and ``_add_bytes`` inlined: this runs per delta
        item = self._by_id.get(item_id)
        if item is None or item.kind != "tool_call" or item.ended:
            item = self._open_item("tool_arguments_delta", item_id, "tool_call")  # raises
        size = len(delta) if delta.isascii() else len(delta.encode("utf-8", "surrogatepass"))
        total = item.nbytes + size
        limits = self._limits
        if total > limits.max_call_argument_bytes:
            raise self._fail(
                "ARGUMENTS_TOO_LARGE",
                f'the arguments of tool call "{item.call_id}" exceed max_call_argument_bytes '
                f"({limits.max_call_argument_bytes})",
            )
        response_bytes = self._bytes + size
        if response_bytes > limits.max_response_bytes:
            raise self._fail(
                "RESPONSE_TOO_LARGE",
                f"the response content exceeds max_response_bytes ({limits.max_response_bytes})",
            )
        self._bytes = response_bytes
        item.nbytes = total
        item.pieces.append(delta)

    # the same as ``apply`` of the event object, without building it (the
    # canonical wire format's hot path)

    def _enter(self, event_type: str) -> None:
        if self._error is not None or self._cancelled:
            self.check_usable()
        self._events += 1
        if self._events > self._limits.max_stream_events:
            raise self._fail(
                "TOO_MANY_EVENTS",
                f"the response has more events than max_stream_events ({self._limits.max_stream_events})",
            )
        state = self._state
        if state >= _COMPLETED:
            raise self._fail("EVENT_AFTER_TERMINAL", f"{event_type} after the terminal event")
        if state == _INIT:
            raise self._fail("EVENT_BEFORE_START", f"{event_type} before response_started")
        self._state = _STREAMING

    def arguments_delta(self, item_id: str, delta: str) -> None:
        """``apply(ToolArgumentsDelta(item_id=item_id, delta=delta))``."""
        # ``_enter`` inlined for the common case: streaming, usable, within the event limit
        if self._state == _STREAMING and self._error is None and not self._cancelled:
            events = self._events + 1
            if events <= self._limits.max_stream_events:
                self._events = events
                self._append_arguments(item_id, delta)
                return
        self._enter("tool_arguments_delta")
        self._append_arguments(item_id, delta)

    def text_delta(self, item_id: str, delta: str) -> None:
        """``apply(TextDelta(item_id=item_id, delta=delta))``."""
        self._enter("text_delta")
        self._append_text("text_delta", "text", item_id, delta)

    def call_started(self, item_id: str, call_id: str, name: str, generated: bool) -> None:
        """``apply(ToolCallStarted(item_id=item_id, call_id=call_id, name=name,
        call_id_generated=generated))``."""
        self._enter("tool_call_started")
        self._start_call(item_id, call_id, name, generated, "function")

    def item_ended(self, item_id: str) -> None:
        """``apply(ItemEnded(item_id=item_id))``."""
        self._enter("item_ended")
        self._end_item(item_id)

    def finished(self, finish_reason: str, raw_finish_reason: str | None) -> None:
        """``apply(ResponseFinished(finish_reason=finish_reason, raw_finish_reason=raw_finish_reason))``."""
        self._enter("response_finished")
        self._finish_as(finish_reason, raw_finish_reason)

    def _item_ended(self, event: ItemEnded) -> None:
        self._end_item(event.item_id)

    def _end_item(self, item_id: str) -> None:
        item = self._by_id.get(item_id)
        if item is None:
            raise self._fail("UNKNOWN_ITEM", f'item_ended for item "{item_id}", which was never started')
        if item.ended:
            raise self._fail("DELTA_AFTER_END", f'item_ended for item "{item_id}", which has ended')
        item.ended = True

    def _merge_usage(self, event: UsageReported) -> None:
        usage = self._usage if self._usage is not None else {}
        for name in ("input_tokens", "output_tokens", "cached_tokens", "reasoning_tokens"):
            value = getattr(event, name)
            if value is not None:
                usage[name] = value
        self._usage = usage

    def _finished(self, event: ResponseFinished) -> None:
        self._finish_as(event.finish_reason, event.raw_finish_reason)

    def _finish_as(self, finish_reason: str, raw_finish_reason: str | None) -> None:
        if finish_reason not in FINISH_REASONS:
            raise self._fail("MALFORMED_EVENT", 'response_finished event field "finish_reason" must be a finish reason')
        self._finish_reason = finish_reason
        self._raw_finish_reason = raw_finish_reason
        self._state = _COMPLETED

    def _failed(self, event: ResponseFailed) -> None:
        self._provider_failure = event
        self._state = _FAILED

    # ------------------------------------------------------------ results

    def is_settled(self) -> bool:
        """Whether the response is complete or the provider reported a failure."""
        return self._response is not None or self._provider_failure is not None

    def place(self, item_id: str, position: int) -> None:
        """Put item ``item_id`` at ``position`` among the response's items
        (after the ones placed before it) when the response is built."""
        self._placed.append((item_id, position))

    def finish(self, unknown_events: Mapping[str, int] | None = None) -> NormalizedResponse:
        """The response, if a legal terminal event and complete items were seen."""
        self.check_usable()
        self._settled = True
        failure = self._provider_failure
        if failure is not None:
            message = f"{failure.code}: {failure.message}" if failure.message else failure.code
            raise TransportError("PROVIDER_ERROR", message, retryable=failure.retryable)
        if self._response is not None:
            return self._response
        if self._state != _COMPLETED:
            raise self._fail("NO_TERMINAL_EVENT", "the stream ended without a terminal event")
        truncated = self._finish_reason in _TRUNCATING
        cut = self._finish_reason in _CUTS_CALLS
        items: list[Item] = []
        for item in self._items:
            if not item.ended and not truncated:
                raise self._fail("ITEM_NOT_ENDED", f'item "{item.item_id}" was never ended')
            items.append(_build_item(item, cut))
        for item_id, position in self._placed:
            at = next((i for i, built in enumerate(items) if built.item_id == item_id), None)
            if at is not None:
                moved = items.pop(at)
                items.insert(min(position, len(items)), moved)  # a position past the end (2**64 - 1): last
        usage = None if self._usage is None else Usage(**self._usage)
        self._response = new_response(
            self.provider,
            self._response_id,
            self._model,
            tuple(items),
            self._finish_reason,
            self._raw_finish_reason,
            usage,
            dict(unknown_events or {}),
        )
        return self._response

    def snapshot(self) -> ResponseSnapshot:
        """A provisional view: text so far, each call's arguments and their partial parse.

        Incremental: a call's parser reads only the text new since the last
        snapshot. Arguments that already break a limit raise the
        ``ParseError`` the complete arguments give (the stream itself goes on)."""
        if self._cancelled:
            raise StreamError("STREAM_CANCELLED", "the stream was cancelled by the caller")
        calls: list[CallSnapshot] = []
        text: list[str] = []
        for item in self._items:
            if item.kind == "text":
                text.append(item.text())
            elif item.kind == "tool_call" and item.call_kind == "custom":  # text: nothing to parse
                calls.append(
                    CallSnapshot(
                        item_id=item.item_id,
                        call_id=item.call_id,
                        name=item.name,
                        arguments=item.text(),
                        partial=None,
                        ended=item.ended,
                        call_kind="custom",
                    )
                )
            elif item.kind == "tool_call":
                parser = item.parser
                if parser is not None and parser.settled(item.nbytes):  # the error is built: no join
                    raise cast(OutputError, parser.error(""))
                arguments = item.text()
                if parser is None:
                    parser = item.parser = PartialJSON(self._limits)
                if item.fed < len(arguments):
                    try:
                        parser.feed(arguments[item.fed :])
                    except BaseException:
                        # stopped part way (a KeyboardInterrupt, a MemoryError): how
                        # much it read is unknown, so the next snapshot starts afresh
                        item.parser, item.fed = None, 0
                        raise
                    item.fed = len(arguments)
                if parser.failure is not None:  # a limit the complete arguments break too
                    error = parser.error(arguments, f"$.calls[{len(calls)}].arguments")
                    if error is not None:
                        raise error
                calls.append(
                    CallSnapshot(
                        item_id=item.item_id,
                        call_id=item.call_id,
                        name=item.name,
                        arguments=arguments,
                        partial=parser.value(),
                        ended=item.ended,
                        call_kind=item.call_kind,  # type: ignore[arg-type]
                    )
                )
        return ResponseSnapshot(
            provider=self.provider,
            response_id=self._response_id,
            model=self._model,
            text="".join(text),
            calls=tuple(calls),
            state=self.state,
        )


#: ``Assembler.apply``'s handler of each event class after the state checks.
_HANDLERS: Final[dict[type, Callable[[Assembler, Any], None]]] = {
    ItemStarted: Assembler._item_started,
    TextDelta: Assembler._text_delta,
    RefusalDelta: Assembler._text_delta,
    ReasoningDelta: Assembler._reasoning_delta,
    ToolCallStarted: Assembler._call_started,
    ToolArgumentsDelta: Assembler._arguments_delta,
    ItemEnded: Assembler._item_ended,
    ResponseFinished: Assembler._finished,
    ResponseFailed: Assembler._failed,
}


def _build_item(item: _Item, cut: bool) -> Item:
    """The public item; with ``cut`` (the finish reason cut the output) a tool
    call is incomplete even when it ended."""
    kind = item.kind
    if kind == "tool_call":
        return new_tool_call_item(
            item.item_id,
            item.call_id,
            item.name,
            item.text(),
            item.ended and not cut,
            item.call_id_generated,
            item.call_kind,
        )
    if kind == "text":
        return new_text_item(item.item_id, item.text())
    if kind == "refusal":
        return RefusalItem(item_id=item.item_id, text=item.text())
    signature = None if item.signature is None else "".join(item.signature)
    return ReasoningItem(item_id=item.item_id, text=item.text(), signature=signature)
