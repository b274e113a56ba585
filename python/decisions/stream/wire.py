"""The canonical event wire format: how a backend forwards normalized events
to its own front end, and how the front end reads them back.

Two framings of the same JSON object per event (``{"type": ..., **fields}``,
what ``event.to_dict()`` gives):

* JSON lines: one compact JSON object per line (``encode_json`` / ``decode_json``,
  ``read_json_lines``);
* SSE: ``event: <type>`` and ``data: <json>`` per event (``encode_sse`` /
  ``read_sse``), ready to write to a ``text/event-stream`` response.

Reading is strict: text is parsed by :func:`decisions.loads`, an unknown
``type``, a missing or unknown field, or a value of the wrong type (a count
that is not an integer from 0 to 2**64 - 1, as the ``"canonical"`` provider
reads it; a string with a lone surrogate) raises
:class:`~decisions.StreamError` ``MALFORMED_EVENT``; writing refuses the same. Feeding the events read
back to ``StreamAssembler("canonical")`` rebuilds the same response.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator, Mapping
from typing import Any, Final, get_args

from .. import _backend
from ..errors import ParseError, StreamError
from ..limits import Limits
from ..types import CALL_KINDS, EVENT_TYPES, FINISH_REASONS, CanonicalEvent, ItemKind

__all__ = [
    "CONTENT_TYPE_JSON_LINES",
    "CONTENT_TYPE_SSE",
    "event_from_dict",
    "encode_json",
    "decode_json",
    "encode_sse",
    "read_json_lines",
    "read_sse",
    "aread_sse",
]

CONTENT_TYPE_JSON_LINES: Final = "application/jsonl"
CONTENT_TYPE_SSE: Final = "text/event-stream"

_ITEM_KINDS: Final = frozenset(get_args(ItemKind))
#: a count's range, as the ``"canonical"`` provider reads it
_COUNT_MAX: Final = 2**64 - 1


def _malformed(message: str, *, offset: int | None = None) -> StreamError:
    return StreamError("MALFORMED_EVENT", f"canonical event: {message}", offset=offset)


def _text(value: Any) -> bool:
    """A str that UTF-8 can write (no lone surrogate)."""
    if not isinstance(value, str):
        return False
    if value.isascii():
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _check_value(type_name: str, name: str, value: Any, annotation: str) -> None:
    if annotation == "str":
        ok = _text(value)
    elif annotation == "str | None":
        ok = value is None or _text(value)
    elif annotation == "int | None":
        # a count: what the "canonical" provider takes (not a bool, a float or a negative)
        ok = value is None or (isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= _COUNT_MAX)
    elif annotation == "bool":
        ok = isinstance(value, bool)
    elif annotation == "ItemKind":
        ok = isinstance(value, str) and value in _ITEM_KINDS
    elif annotation == "FinishReason":
        ok = isinstance(value, str) and value in FINISH_REASONS
    elif annotation == "CallKind":
        ok = isinstance(value, str) and value in CALL_KINDS
    else:  # a field type this reader does not know: refuse rather than guess
        raise _malformed(f"{type_name}.{name} has an unsupported type {annotation}")
    if not ok:
        raise _malformed(f"{type_name}.{name} must be {annotation}, not {_shown(value)}")


def _shown(value: Any) -> str:
    """A short description of a refused value (its repr only when short:
    a huge int has none, a container's may recurse)."""
    if value is None or isinstance(value, (bool, float)) or (isinstance(value, str) and len(value) <= 64):
        return repr(value)
    if isinstance(value, int):
        return repr(value) if -(2**64) <= value <= 2**65 else "an integer beyond 64 bits"
    return f"a {type(value).__name__}"


def event_from_dict(data: Mapping[str, Any]) -> CanonicalEvent:
    """The canonical event for one wire object (``{"type": ..., **fields}``)."""
    if not isinstance(data, Mapping):
        raise _malformed(f"an event is a JSON object, not {type(data).__name__}")
    type_name = data.get("type")
    cls = EVENT_TYPES.get(type_name) if isinstance(type_name, str) else None
    if cls is None or not isinstance(type_name, str):
        raise _malformed(f"unknown event type {_shown(type_name)}")
    if not all(isinstance(key, str) for key in data):
        raise _malformed(f"{type_name} has a key that is not a string")
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(data) - set(fields) - {"type"})
    if unknown:
        raise _malformed(f"{type_name} has unknown fields {unknown}")
    kwargs: dict[str, Any] = {}
    for name, spec in fields.items():
        if name in data:
            _check_value(type_name, name, data[name], str(spec.type))
            kwargs[name] = data[name]
        elif spec.default is dataclasses.MISSING:
            raise _malformed(f"{type_name} is missing the field {name!r}")
    if type_name == "tool_call_started" and kwargs["call_id"] == "":
        raise _malformed("tool_call_started.call_id must not be empty")
    event: CanonicalEvent = cls(**kwargs)  # type: ignore[assignment]
    return event


def encode_json(event: CanonicalEvent) -> str:
    """One event as compact JSON text (no newline). Only what reading
    accepts is written: an event whose fields :func:`event_from_dict`
    refuses (a count of another type, a lone surrogate, ...) raises the
    same ``MALFORMED_EVENT``, so what is written reads back equal."""
    data = event.to_dict()
    event_from_dict(data)
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def decode_json(text: str | bytes, *, limits: Limits | None = None) -> CanonicalEvent:
    """One event from its JSON text (strict parse, then the shape check)."""
    return event_from_dict(_backend.impl.loads(text, limits=limits))


def encode_sse(event: CanonicalEvent) -> bytes:
    """One event as an SSE frame: ``event: <type>``, ``data: <json>``, blank line."""
    return f"event: {event.type}\ndata: {encode_json(event)}\n\n".encode()


def read_json_lines(
    lines: str | bytes | Iterable[str | bytes], *, limits: Limits | None = None
) -> Iterator[CanonicalEvent]:
    """Events from JSON lines: an iterable of lines (a text file), or the
    whole text, split at each ``\\n`` (never at U+2028, which a JSON string
    may hold). Blank lines (JSON whitespace only: a line of
    another space, such as ``\\x0b`` or U+2028, is not JSON) are skipped. A malformed event's
    ``StreamError`` carries the line number (from 1) as offset; a line that
    is not strict JSON is the parser's ``ParseError`` at that line (its
    ``lineno``), the column and character offset within the line."""
    if isinstance(lines, str):
        lines = lines.split("\n")
    elif isinstance(lines, bytes):
        lines = lines.split(b"\n")
    for number, line in enumerate(lines, start=1):
        if not isinstance(line, (str, bytes)):
            raise TypeError(f"a JSON line is a str or bytes, not {type(line).__name__} (line {number})")
        blank = not line.strip(b" \t\r\n") if isinstance(line, bytes) else not line.strip(" \t\r\n")
        if blank:
            continue
        try:
            yield decode_json(line, limits=limits)
        except StreamError as error:
            raise _malformed(f"line {number}: {error.message}", offset=number) from error
        except ParseError as error:  # the parser counted lines in this one line alone
            raise ParseError(
                error.code,
                error.message,
                doc=error.doc,
                pos=error.pos,
                lineno=number,
                colno=error.colno,
                hint=error.hint,
                path=error.path,
            ) from error


def _from_sse(frame: Any, limits: Limits | None) -> CanonicalEvent:
    event = decode_json(frame.data, limits=limits)
    if frame.event not in ("message", event.type):
        raise _malformed(f"SSE event name {frame.event!r} does not match its type {event.type!r}")
    return event


def read_sse(chunks: bytes | Iterable[bytes], *, limits: Limits | None = None) -> Iterator[CanonicalEvent]:
    """Events from SSE bytes in any chunking, or all of them in one ``bytes``
    (decoded by :class:`decisions.SSEDecoder`)."""
    decoder = _backend.impl.SSEDecoder(limits=limits)
    for chunk in [chunks] if isinstance(chunks, bytes) else chunks:
        for frame in decoder.feed(chunk):
            yield _from_sse(frame, limits)
    for frame in decoder.finish():
        yield _from_sse(frame, limits)


async def aread_sse(chunks: AsyncIterable[bytes], *, limits: Limits | None = None) -> AsyncIterator[CanonicalEvent]:
    """:func:`read_sse` over an async byte stream."""
    decoder = _backend.impl.SSEDecoder(limits=limits)
    async for chunk in chunks:
        for frame in decoder.feed(chunk):
            yield _from_sse(frame, limits)
    for frame in decoder.finish():
        yield _from_sse(frame, limits)
