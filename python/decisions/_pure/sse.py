"""Incremental Server-Sent-Events framing (pure twin of ``rust/src/core/sse.rs``).

WHATWG ``text/event-stream`` parsing over bytes fed in arbitrary chunks:
CR, LF and CRLF line ends (a CR ending one chunk and its LF starting the next
count once), one leading BOM stripped, ``:`` comments, ``data`` lines joined
with ``\\n``, one space after the colon removed, unknown fields ignored, an
event without data never dispatched. Each line is decoded as strict UTF-8 once
it is complete (line ends are ASCII, so a multi-byte character split across
chunks decodes exactly); invalid UTF-8 is an error, never U+FFFD.

Offsets in errors are byte offsets into the stream (BOM included):
the bad byte for ``SSE_INVALID_UTF8``, the first byte past the limit for
``SSE_STREAM_TOO_LARGE``, otherwise the first byte of the line that crossed.
"""

from __future__ import annotations

import functools
import threading
from typing import Callable, Concatenate, NoReturn, ParamSpec, Protocol, TypeVar

from ..errors import OutputError, StreamError
from ..limits import DEFAULT_LIMITS, Limits, checked
from ..types import SSEEvent
from .jsonarray import WHITESPACE, ArraySplitter

__all__ = ["SSEDecoder", "RawEvent", "exclusive", "interrupted", "no_copy"]

_BOM = b"\xef\xbb\xbf"
_U64_MAX = (1 << 64) - 1

#: What a stream that is one JSON document is (``NOT_A_RESPONSE_BODY``).
NOT_AN_EVENT_STREAM = (
    "the stream is a JSON document, not an event stream (a whole response body is read with normalize)"
)

#: ``(event or None, data, id, retry)``: an event before it becomes an ``SSEEvent``.
RawEvent = tuple["str | None", str, "str | None", "int | None"]


class _Guarded(Protocol):
    _busy: threading.Lock


_G = TypeVar("_G", bound=_Guarded)
_P = ParamSpec("_P")
_R = TypeVar("_R")


def no_copy(self: object, protocol: object = None) -> NoReturn:
    """``__reduce_ex__`` of an object whose state is its own: it cannot be
    pickled or copied (``copy.copy`` would share its state with the copy),
    the ``TypeError`` the native objects give."""
    raise TypeError(f"cannot pickle '{type(self).__module__}.{type(self).__qualname__}' object")


def interrupted(exc: BaseException) -> StreamError:
    """The error a stream is failed with when a call on it stopped part way
    (a ``KeyboardInterrupt`` or another exception a signal handler raises, a
    ``MemoryError``): some of what it read was taken and the rest is lost, so
    the stream cannot go on (natively such a call runs to its end first)."""
    return StreamError(
        "STREAM_FAILED", f"a call was stopped part way ({type(exc).__name__}): the stream lost what it read"
    )


def exclusive(method: Callable[Concatenate[_G, _P], _R]) -> Callable[Concatenate[_G, _P], _R]:
    """One thread at a time in the object: a call made while another thread
    is inside one of its ``exclusive`` methods is refused with the
    ``RuntimeError`` the native object's borrow check raises, before it
    touches anything (as in ``rust/src/py``, which releases the GIL)."""

    @functools.wraps(method)
    def call(self: _G, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        if not self._busy.acquire(False):  # positional: the keyword form costs a microsecond more
            raise RuntimeError(f"Already borrowed: this {type(self).__name__} is in use by another thread")
        try:
            return method(self, *args, **kwargs)
        finally:
            self._busy.release()

    return call


class _Framer:
    """The decoder's state machine; ``feed_into`` appends raw event tuples."""

    __slots__ = (
        "_limits",
        "_line",
        "_line_start",
        "_pos",
        "_skip_lf",
        "_bom_done",
        "_bom_held",
        "_data",
        "_data_bytes",
        "_has_data",
        "_event",
        "_last_id",
        "_retry",
        "_events",
        "_without_data",
        "_counted_at",
        "_error",
        "_finished",
        "_detect",
        "_array",
        "_arrays",
        "_document",
        "_document_at",
    )

    def __init__(self, limits: Limits, array: bool = False, documents: bool = False) -> None:
        self._limits = limits
        # with ``array``, a stream whose first byte other than whitespace is
        # ``[`` is one JSON array (Gemini without ``alt=sse``), split by
        # ``ArraySplitter`` into events' data; with ``documents``, one whose
        # first such byte is ``{`` (or ``[`` without ``array``) is a JSON
        # document, no event stream: held whole (see ``document``); any other
        # stream is SSE
        self._detect = array or documents
        self._arrays = array
        self._array: ArraySplitter | None = None
        self._document: bytearray | None = None
        self._document_at = 0
        self._line = bytearray()  # the current unterminated line
        self._line_start = 0  # stream offset of its first byte
        self._pos = 0  # stream bytes consumed
        self._skip_lf = False  # the previous byte was a CR ending a line
        self._bom_done = False
        self._bom_held = b""
        self._data: list[str] = []
        self._data_bytes = 0
        self._has_data = False
        self._event: str | None = None
        self._last_id: str | None = None
        self._retry: int | None = None
        self._events = 0
        self._without_data = 0
        # start of the last line if it counted toward _without_data: the LF
        # of its CRLF, arriving in the next chunk, is counted with it
        self._counted_at: int | None = None
        self._error: OutputError | None = None
        self._finished = False  # finish_raw returned: the stream has ended, no more bytes may come

    # ------------------------------------------------------------ errors

    def _fail(self, code: str, message: str, offset: int | None) -> StreamError:
        err = StreamError(code, message, offset=offset)
        self._error = err
        return err

    def _check(self) -> None:
        if self._error is not None:
            raise StreamError("STREAM_FAILED", f"the event stream already failed ({self._error.code})")

    # ------------------------------------------------------------ input

    def feed_into(self, chunk: bytes | bytearray | memoryview, out: list[RawEvent]) -> StreamError | None:
        """Append the events ``chunk`` completes to ``out``; the framing error
        at the first byte at fault, if any, is returned (the decoder is then
        failed), with ``out`` holding the events completed before that byte,
        in order, as fed byte by byte: a caller maps them before it reports
        the error, so the first error does not depend on the chunking."""
        self._check()
        if not isinstance(chunk, (bytes, bytearray, memoryview)):
            raise TypeError(f"feed() takes bytes, not {type(chunk).__name__}")
        if type(chunk) is bytes:
            return self._checked(chunk, len(chunk), out)
        # the bytes it holds, as the core measures them (not what a subclass's
        # __len__ says), from one view: held, it keeps another thread from
        # resizing a bytearray between its measure and its copy
        with memoryview(chunk) as view:
            return self._checked(view, view.nbytes, out)

    def _checked(self, chunk: bytes | memoryview, size: int, out: list[RawEvent]) -> StreamError | None:
        """:meth:`feed_into` of a chunk of ``size`` bytes: the bytes within
        ``max_stream_bytes`` are copied and framed, the rest never copied."""
        try:
            limit = self._limits.max_stream_bytes
            room = max(0, limit - self._pos - len(self._bom_held))
            if size > room:
                self._feed(_head(chunk, room), out)
                raise self._fail(
                    "SSE_STREAM_TOO_LARGE",
                    f"the stream is longer than max_stream_bytes ({limit})",
                    limit,
                )
            self._feed(chunk if type(chunk) is bytes else bytes(chunk), out)
        except StreamError as err:
            self._error = err
            return err
        except BaseException as exc:  # stopped part way: what it read is lost
            self._error = interrupted(exc)
            raise
        return None

    def _feed(self, data: bytes, out: list[RawEvent]) -> None:
        """``feed_into`` of ``data``, within ``max_stream_bytes``; raises."""
        if self._finished and data:
            raise self._fail("EVENT_AFTER_TERMINAL", "bytes fed after finish(): the stream had ended", self._pos)
        if not self._bom_done:
            data = self._bom_held + data
            if len(data) < 3 and _BOM.startswith(data):
                self._bom_held = data
                return
            self._bom_held = b""
            self._bom_done = True
            if data.startswith(_BOM):
                data = data[3:]
                self._pos = 3
                self._line_start = 3
        if self._array is not None or self._detect or self._document is not None:
            self._split(data, out)
        else:
            self._lines(data, out)

    def _split(self, data: bytes, out: list[RawEvent]) -> list[RawEvent]:
        """The framing is chosen by the first byte other than whitespace."""
        if self._document is not None:
            self._hold(self._document, data)
            return out
        if self._array is None:
            start = len(data) - len(data.lstrip(WHITESPACE))
            if start == len(data):
                return self._lines(data, out)
            self._detect = False
            first = data[start]
            if first != 0x5B and first != 0x7B:  # neither [ nor {
                return self._lines(data, out)
            self._lines(data[:start], out)  # whitespace: counted, never an event
            self._line.clear()
            self._skip_lf = False
            if first == 0x7B or not self._arrays:
                self._document = bytearray()
                self._document_at = self._pos
                self._hold(self._document, data[start:])
                return out
            self._array = ArraySplitter(self._limits, self._pos)
            data = data[start:]
        elements: list[str] = []
        try:
            self._array.feed(data, elements)
        finally:  # the elements before an error are the stream's too
            out.extend((None, text, None, None) for text in elements)
        self._pos += len(data)
        return out

    def _hold(self, document: bytearray, data: bytes) -> None:
        """More of the JSON ``document``, held whole up to
        ``max_sse_event_bytes`` (a whole body's bound): past it
        ``NOT_A_RESPONSE_BODY`` at once."""
        limit = self._limits.max_sse_event_bytes
        if len(document) + len(data) > limit:
            raise self._fail(
                "NOT_A_RESPONSE_BODY",
                f"{NOT_AN_EVENT_STREAM}, longer than max_sse_event_bytes ({limit})",
                self._document_at,
            )
        document += data
        self._pos += len(data)

    @property
    def document(self) -> tuple[bytes, int] | None:
        """A stream that is one JSON document (see ``documents``): its bytes
        and the offset of its first one; None for an event stream."""
        return None if self._document is None else (bytes(self._document), self._document_at)

    def _lines(self, data: bytes, out: list[RawEvent]) -> list[RawEvent]:
        if not data:
            return out
        if self._skip_lf:
            self._skip_lf = False
            if data[:1] == b"\n":
                data = data[1:]
                self._pos += 1
                self._line_start = self._pos
                if self._counted_at is not None:
                    self._no_data(1, self._counted_at)
        if b"\r" not in data:
            self._lf_lines(data, out)
            return out
        for piece in data.splitlines(keepends=True):
            self._skip_lf = False
            last = piece[-1:]
            if last == b"\n":
                body = piece[:-2] if piece[-2:] == b"\r\n" else piece[:-1]
            elif last == b"\r":
                body = piece[:-1]
            else:  # unterminated tail: keep it, bounded by the line limit
                if len(self._line) + len(piece) > self._limits.max_sse_line_bytes:
                    raise self._line_too_long()
                self._line += piece
                self._pos += len(piece)
                return out
            if self._line:
                if len(self._line) + len(body) > self._limits.max_sse_line_bytes:
                    raise self._line_too_long()
                self._line += body
                line = bytes(self._line)
                self._line.clear()
            else:
                if len(body) > self._limits.max_sse_line_bytes:
                    raise self._line_too_long()
                line = body
            end = self._pos + len(piece)
            self._line_end(line, end - self._line_start, out)
            self._pos = end
            self._line_start = end
            # a CR ending the chunk: an LF starting the next one belongs to it
            self._skip_lf = last == b"\r"
        return out

    def _lf_lines(self, data: bytes, out: list[RawEvent]) -> None:
        """The common case, a chunk without CR: the same rules as ``_line_end``
        with the ``data`` line inlined (its events up to the last blank line
        taken by ``_data_events`` when they are that simple)."""
        cut = data.rfind(b"\n\n") + 2
        if cut > 1 and self._data_events(data if cut == len(data) else data[:cut], out):
            data = data[cut:]
            if not data:
                return
        lines = data.split(b"\n")
        tail = lines.pop()
        max_line = self._limits.max_sse_line_bytes
        if lines:
            if self._line:
                if len(self._line) + len(lines[0]) > max_line:
                    raise self._line_too_long()
                self._line += lines[0]
                lines[0] = bytes(self._line)
                self._line.clear()
            max_event = self._limits.max_sse_event_bytes
            max_events = self._limits.max_stream_events
            for raw in lines:
                size = len(raw)
                if size > max_line:
                    raise self._line_too_long()
                if raw[:5] == b"data:":
                    try:
                        value = raw[5:].decode("utf-8")
                    except UnicodeDecodeError:
                        self._line_end(raw, size + 1, out)  # raises with the exact offset
                        raise
                    if value[:1] == " ":
                        value = value[1:]
                    total = self._data_bytes + (len(value) if value.isascii() else len(value.encode()))
                    if self._has_data:
                        total += 1
                    if total > max_event:
                        raise self._fail(
                            "SSE_EVENT_TOO_LARGE",
                            f"an event's data exceeds max_sse_event_bytes ({max_event})",
                            self._line_start,
                        )
                    self._data.append(value)
                    self._data_bytes = total
                    self._has_data = True
                    self._without_data = 0
                    self._counted_at = None
                elif raw:
                    self._line_end(raw, size + 1, out)
                elif self._has_data and self._events < max_events:
                    # ``_dispatch`` inlined for an event with data within the limit
                    self._events += 1
                    self._counted_at = None
                    pieces = self._data
                    out.append(
                        (
                            self._event or None,
                            pieces[0] if len(pieces) == 1 else "\n".join(pieces),
                            self._last_id,
                            self._retry,
                        )
                    )
                    self._data = []
                    self._data_bytes = 0
                    self._has_data = False
                    self._event = None
                else:
                    self._dispatch(out, self._line_start, 1)
                self._line_start += size + 1
            self._pos = self._line_start
        if tail:
            if len(self._line) + len(tail) > max_line:
                raise self._line_too_long()
            self._line += tail
            self._pos += len(tail)

    def _data_events(self, data: bytes, out: list[RawEvent]) -> bool:
        """``_lf_lines`` of ``data`` (ending with a blank line) in the common
        case: nothing pending (no partial line, data or event name), valid
        UTF-8, and each event one ``data:`` line within the line, event and
        event-count limits (a character counted as 4 bytes unless all are
        ASCII), then a blank line. False, with nothing changed, for anything
        else, which ``_lf_lines`` reads line by line."""
        if self._line or self._has_data or self._event is not None:
            return False
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return False
        blocks = text.split("\n\n")
        del blocks[-1]  # empty: ``data`` ends with the blank line
        limits = self._limits
        if self._events + len(blocks) > limits.max_stream_events:
            return False
        width = 1 if text.isascii() else 4  # the most UTF-8 bytes a character takes
        max_line, max_event = limits.max_sse_line_bytes // width, limits.max_sse_event_bytes // width
        last_id, retry = self._last_id, self._retry
        events: list[RawEvent] = []
        for block in blocks:
            if block[:6] == "data: ":
                value = block[6:]
            elif block[:5] == "data:":
                value = block[5:]
            else:
                return False
            if len(block) > max_line or len(value) > max_event or "\n" in block:
                return False
            events.append((None, value, last_id, retry))
        out.extend(events)
        self._events += len(events)
        self._line_start += len(data)
        self._pos = self._line_start
        self._without_data = 0
        self._counted_at = None
        return True

    def _line_too_long(self) -> StreamError:
        return self._fail(
            "SSE_LINE_TOO_LONG",
            f"an event-stream line exceeds max_sse_line_bytes ({self._limits.max_sse_line_bytes})",
            self._line_start,
        )

    def _line_end(self, raw: bytes, length: int, out: list[RawEvent]) -> None:
        """One complete line (without its line end); ``length`` counts the line end."""
        start = self._line_start
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self._fail("SSE_INVALID_UTF8", "the event stream is not valid UTF-8", start + exc.start) from None
        if not line:
            self._dispatch(out, start, length)
            return
        if line[0] == ":":
            self._no_data(length, start)
            return
        name, colon, value = line.partition(":")
        if colon and value[:1] == " ":
            value = value[1:]
        if name == "data":
            size = len(value) if value.isascii() else len(value.encode())
            total = self._data_bytes + size + (1 if self._has_data else 0)
            if total > self._limits.max_sse_event_bytes:
                raise self._fail(
                    "SSE_EVENT_TOO_LARGE",
                    f"an event's data exceeds max_sse_event_bytes ({self._limits.max_sse_event_bytes})",
                    start,
                )
            self._data.append(value)
            self._data_bytes = total
            self._has_data = True
            self._without_data = 0
            self._counted_at = None
            return
        if name == "event":
            self._event = value
        elif name == "id":
            if "\x00" not in value:
                self._last_id = value
        elif name == "retry":
            # leading zeros stripped and the length bounded before int(),
            # which refuses more than 4,300 digits
            digits = value.lstrip("0")
            if value and value.isascii() and value.isdigit() and len(digits) <= 20:
                retry = int(digits or "0")
                if retry <= _U64_MAX:
                    self._retry = retry
        self._no_data(length, start)

    def _no_data(self, length: int, start: int) -> None:
        self._counted_at = start
        self._without_data += length
        if self._without_data > self._limits.max_bytes_without_data:
            raise self._fail(
                "SSE_NO_DATA",
                f"more than max_bytes_without_data ({self._limits.max_bytes_without_data}) "
                "arrived without a data event",
                start,
            )

    def _dispatch(self, out: list[RawEvent], start: int, length: int) -> None:
        if not self._has_data:
            self._event = None
            self._no_data(length, start)
            return
        if self._events >= self._limits.max_stream_events:
            raise self._fail(
                "SSE_TOO_MANY_EVENTS",
                f"the stream has more events than max_stream_events ({self._limits.max_stream_events})",
                start,
            )
        self._events += 1
        self._counted_at = None
        data = self._data[0] if len(self._data) == 1 else "\n".join(self._data)
        out.append((self._event or None, data, self._last_id, self._retry))
        self._data = []
        self._data_bytes = 0
        self._has_data = False
        self._event = None

    def finish_raw(self) -> list[RawEvent]:
        self._check()
        self._finished = True
        if self._array is not None:
            try:
                self._array.finish()
            except StreamError as err:
                self._error = err
                raise
            return []
        if self._line or self._bom_held or self._has_data:
            raise self._fail(
                "SSE_UNTERMINATED_EVENT",
                "the stream ended in the middle of an event",
                self._line_start,
            )
        return []


class SSEDecoder:
    """Incremental ``text/event-stream`` decoder: ``feed`` bytes in any
    chunking, get the same :class:`~decisions.types.SSEEvent` list. ``id`` and
    ``retry`` are the last valid values seen (they persist across events).
    A chunk that completes events and then holds a framing error returns
    those events; the error is raised by the next call, as when the chunk
    comes a byte at a time."""

    __slots__ = ("_framer", "_busy", "_pending")
    __reduce_ex__ = no_copy
    _framer: _Framer
    _busy: threading.Lock
    _pending: StreamError | None

    def __new__(cls, *, limits: Limits | None = None) -> SSEDecoder:
        # made in __new__, as natively: calling __init__ again on a live
        # decoder (from another thread, say) changes nothing
        if limits is not None and not isinstance(limits, Limits):
            raise TypeError(f"limits must be a decisions.Limits, not {type(limits).__name__}")
        self = object.__new__(cls)
        self._framer = _Framer(checked(limits) if limits is not None else DEFAULT_LIMITS)
        self._busy = threading.Lock()
        self._pending = None
        return self

    def _raise_pending(self) -> None:
        error = self._pending
        if error is not None:
            self._pending = None
            raise error

    @exclusive
    def feed(self, chunk: bytes | bytearray | memoryview) -> list[SSEEvent]:
        """Consume a chunk; return the events it completed."""
        self._raise_pending()
        out: list[RawEvent] = []
        error = self._framer.feed_into(chunk, out)
        if error is not None:
            if not out:
                raise error
            self._pending = error  # raised by the next call, after the events before it
        try:
            return [_event(raw) for raw in out]
        except BaseException as exc:  # the chunk was taken: its events are lost
            self._framer._error = interrupted(exc)
            self._pending = None
            raise

    @exclusive
    def finish(self) -> list[SSEEvent]:
        """End of stream: raises ``SSE_UNTERMINATED_EVENT`` if an event or line
        is unfinished; bytes fed after it are ``EVENT_AFTER_TERMINAL``."""
        self._raise_pending()
        return [_event(raw) for raw in self._framer.finish_raw()]


def _head(chunk: bytes | bytearray | memoryview, size: int) -> bytes:
    """The first ``size`` bytes of ``chunk``, the rest not copied."""
    view = memoryview(chunk)
    try:
        return bytes(view.cast("B")[:size])
    except TypeError:  # not contiguous: read a copy, as natively
        return bytes(view)[:size]


def _event(raw: RawEvent) -> SSEEvent:
    event, data, id_, retry = raw
    return SSEEvent(data=data, event="message" if event is None else event, id=id_, retry=retry)
