"""Incremental splitter of a streamed JSON array (pure twin of
``rust/src/core/jsonarray.rs``).

Gemini's ``streamGenerateContent`` without ``alt=sse`` sends one JSON array,
``[{...},\\r\\n{...}\\r\\n]``, a chunk at a time. :class:`ArraySplitter` is fed
its bytes (from the ``[`` on) in any chunking, and gives each element's text as
soon as the element closes, as an event's ``data`` (the envelope rule and the
mapper then read it exactly as an SSE event's). It only finds where elements
begin and end: brackets are counted outside strings, a string's escapes are
skipped; whether an element is valid JSON is the envelope rule's job.

Cost is linear in the bytes fed (no re-scan across chunks), memory is one
element, bounded as an SSE event is: ``max_sse_event_bytes`` per element
(``SSE_EVENT_TOO_LARGE``), ``max_stream_events`` elements
(``SSE_TOO_MANY_EVENTS``), ``max_bytes_without_data`` of whitespace between
elements (``SSE_NO_DATA``), strict UTF-8 per element (``SSE_INVALID_UTF8``).
Anything but whitespace, ``,`` and one object or array per element is
``MALFORMED_EVENT``; an array that ends before its ``]`` is
``NO_TERMINAL_EVENT``. Offsets are byte offsets into the stream.
"""

from __future__ import annotations

import re
from typing import Final

from ..errors import StreamError
from ..limits import Limits

__all__ = ["ArraySplitter", "WHITESPACE"]

#: JSON whitespace (RFC 8259), the bytes allowed between elements
WHITESPACE: Final = b" \t\r\n"

_OPEN, _FIRST, _VALUE, _AFTER, _NEXT, _DONE = range(6)
_STRUCTURAL: Final = re.compile(rb'[\[\]{}"]')
_IN_STRING: Final = re.compile(rb'["\\]')


class ArraySplitter:
    """Splits a streamed JSON array into its elements' texts."""

    __slots__ = (
        "_limits",
        "_pos",
        "_state",
        "_depth",
        "_in_string",
        "_escape",
        "_element",
        "_start",
        "_events",
        "_blank",
        "_blank_start",
    )

    def __init__(self, limits: Limits, offset: int) -> None:
        self._limits = limits
        self._pos = offset  # stream offset of the next byte
        self._state = _OPEN
        self._depth = 0
        self._in_string = False
        self._escape = False
        self._element = bytearray()
        self._start = 0
        self._events = 0
        self._blank = 0
        self._blank_start = offset

    def _unexpected(self, pos: int) -> StreamError:
        return StreamError("MALFORMED_EVENT", "the JSON-array stream has an unexpected character", offset=pos)

    def feed(self, data: bytes, out: list[str]) -> None:
        """Append the elements that ``data`` completes to ``out`` (on an
        error, those completed before the byte at fault)."""
        i, n = 0, len(data)
        while i < n:
            if self._state == _VALUE:
                i = self._value(data, i, out)
                continue
            byte = data[i]
            pos = self._pos + i
            if byte in WHITESPACE:
                if self._blank == 0:
                    self._blank_start = pos
                self._blank += 1
                if self._blank > self._limits.max_bytes_without_data:
                    raise StreamError(
                        "SSE_NO_DATA",
                        f"more than max_bytes_without_data ({self._limits.max_bytes_without_data}) "
                        "arrived without a data event",
                        offset=self._blank_start,
                    )
                i += 1
                continue
            self._blank = 0
            state = self._state
            if state == _OPEN and byte == 0x5B:  # [
                self._state = _FIRST
            elif state in (_FIRST, _NEXT) and byte in b"{[":
                self._state = _VALUE
                self._start = pos
                self._depth = 0
                continue  # the value scan reads the opening bracket
            elif state in (_FIRST, _AFTER) and byte == 0x5D:  # ]
                self._state = _DONE
            elif state == _AFTER and byte == 0x2C:  # ,
                self._state = _NEXT
            else:
                raise self._unexpected(pos)
            i += 1
        self._pos += n

    def _value(self, data: bytes, i: int, out: list[str]) -> int:
        """Scan the element from ``data[i]``; the index after what was read."""
        n = len(data)
        begin = i
        while i < n:
            if self._in_string:
                if self._escape:
                    self._escape = False
                    i += 1
                    continue
                found = _IN_STRING.search(data, i)
                if found is None:
                    i = n
                    break
                i = found.start()
                if data[i] == 0x5C:  # backslash
                    self._escape = True
                else:
                    self._in_string = False
                i += 1
                continue
            found = _STRUCTURAL.search(data, i)
            if found is None:
                i = n
                break
            i = found.start()
            byte = data[i]
            i += 1
            if byte == 0x22:  # "
                self._in_string = True
            elif byte in b"{[":
                self._depth += 1
            else:
                self._depth -= 1
                if self._depth == 0:
                    self._take(data, begin, i)
                    out.append(self._emit())
                    return i
        self._take(data, begin, i)
        return i

    def _take(self, data: bytes, begin: int, end: int) -> None:
        size = len(self._element) + end - begin
        if size > self._limits.max_sse_event_bytes:
            raise StreamError(
                "SSE_EVENT_TOO_LARGE",
                f"an element of the JSON-array stream exceeds max_sse_event_bytes ({self._limits.max_sse_event_bytes})",
                offset=self._start,
            )
        self._element += data[begin:end]

    def _emit(self) -> str:
        if self._events >= self._limits.max_stream_events:
            raise StreamError(
                "SSE_TOO_MANY_EVENTS",
                f"the stream has more events than max_stream_events ({self._limits.max_stream_events})",
                offset=self._start,
            )
        self._events += 1
        try:
            text = self._element.decode("utf-8")
        except UnicodeDecodeError as err:
            raise StreamError(
                "SSE_INVALID_UTF8", "the event stream is not valid UTF-8", offset=self._start + err.start
            ) from None
        self._element = bytearray()
        self._state = _AFTER
        return text

    def finish(self) -> None:
        """The end of the stream: an array not closed by ``]`` was cut."""
        if self._state != _DONE:
            raise StreamError("NO_TERMINAL_EVENT", "the JSON-array stream ended before its closing ]", offset=self._pos)
