"""The envelope rule (pure twin of ``rust/src/core/envelope.rs``): what every
provider event's data and every whole body must be before a mapper reads it.

Event data is parsed with the strict parser (:func:`decisions._pure.json.loads`)
under :func:`envelope_limits`: RFC 8259, no repeated key in any object (read by
a mapper or not), no number beyond 64 bits or longer than
``max_number_length``, at most :data:`ENVELOPE_MAX_DEPTH` levels. A mapper
therefore never builds, walks, copies or serialises a tree deeper than that.

A broken rule is reported by where it is. Inside a field that carries a tool
call's arguments as a JSON object (each mapper lists its own in
``ARGUMENT_FIELDS``: a tuple of keys, ``None`` for any array index), the model
wrote it: a :class:`~decisions.errors.ParseError` with the strict parser's own
code (``DUPLICATE_KEY``, ``DEPTH_EXCEEDED``, ...), the JSON path of the place in
the event and its character offset, exactly as the same rule broken in
arguments sent as text. Anywhere else the provider sent it: ``MALFORMED_EVENT``
naming the rule and the path. Bad syntax is ``MALFORMED_EVENT`` "event data is
not valid JSON" wherever it is, and a lone surrogate escape "event data has a
lone surrogate escape", checked over the whole text first.
"""

from __future__ import annotations

import codecs
import dataclasses
import json
import re
from typing import Any, Callable, Final

from ..errors import OutputError, json_path, new_error
from ..limits import Limits
from ..providers import DONE
from .json import FAST_MISSES, fast_path, fast_unkeyed, parse_text, plain
from .jsonexact import Fail

__all__ = ["ENVELOPE_MAX_DEPTH", "ArgumentField", "decode", "decoder", "envelope_limits", "unkeyed", "utf8_text"]

#: The deepest nesting accepted in event data or a body (the native mappers'
#: ``serde_json`` stops at 128, CPython's recursion limit at 1,000).
ENVELOPE_MAX_DEPTH: Final = 100

#: A path to a field holding a tool call's arguments as an object: keys, and
#: ``None`` for any array index.
ArgumentField = tuple["str | None", ...]

_limits: dict[Limits, Limits] = {}
#: The last ``(limits, derived)`` pair, read and replaced as one tuple: a
#: stream asks with the same object per event, and hashing a ``Limits`` costs
#: more than the dict lookup saves.
_last: tuple[Limits | None, Limits | None] = (None, None)


#: Numbers in event data may be this long whatever ``max_number_length``
#: says (a provider's counts and ids must pass a small limit meant for arguments).
ENVELOPE_MIN_NUMBER_LENGTH: Final = 100


def envelope_limits(limits: Limits) -> Limits:
    """The limits event data is parsed under: its size, strings, items,
    members and values are bounded by one SSE event (the arguments' own bounds
    are applied when ``decide`` parses them), nesting by
    :data:`ENVELOPE_MAX_DEPTH`, numbers by the larger of ``max_number_length``
    and :data:`ENVELOPE_MIN_NUMBER_LENGTH` characters."""
    global _last
    last_limits, last_derived = _last
    if last_limits is limits and last_derived is not None:
        return last_derived
    derived = _limits.get(limits)
    if derived is None:
        if len(_limits) > 16:
            _limits.clear()
        size = limits.max_sse_event_bytes
        derived = _limits[limits] = dataclasses.replace(
            limits,
            max_document_bytes=size,
            max_string_bytes=size,
            max_array_items=size,
            max_object_members=size,
            max_values=size,
            max_depth=ENVELOPE_MAX_DEPTH,
            max_number_length=max(limits.max_number_length, ENVELOPE_MIN_NUMBER_LENGTH),
        )
    _last = (limits, derived)
    return derived


#: one escape (``\\`` + any char), or a surrogate pair / a lone surrogate escape.
_ESCAPE: Final = re.compile(
    r"\\(?:u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|(u[dD][89a-fA-F][0-9a-fA-F]{2})|.)", re.S
)


def _lone_surrogate(text: str) -> bool:
    """Whether ``text`` holds a ``\\uD800``-``\\uDFFF`` escape not part of a
    high + low pair (escapes are scanned from the left, so ``\\\\ud800``
    is an escaped backslash and letters). The caller first checks that
    ``text`` holds ``\\ud`` or ``\\uD`` at all."""
    return any(m.group(1) for m in _ESCAPE.finditer(text))


#: a UTF-16 surrogate code point, which no UTF-8 text holds
_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def utf8_text(text: str) -> bool:
    """Whether ``text`` can be written as UTF-8 (holds no lone surrogate code
    point, which the native backend cannot read as text)."""
    return text.isascii() or _SURROGATE.search(text) is None


def _malformed(message: str, path: str | None = None) -> OutputError:
    return new_error("MALFORMED_EVENT", message, path=path)


_DONE_BYTES: Final = DONE.encode()
#: bytes of a too-large text validated per step by :func:`_check_utf8_pieces`
_PIECE: Final = 1 << 16


def _check_utf8_pieces(raw: bytes | memoryview) -> None:
    """``MALFORMED_EVENT`` unless ``raw`` is UTF-8, decoded a piece at a time."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    view = memoryview(raw)
    try:
        for start in range(0, len(raw), _PIECE):
            decoder.decode(view[start : start + _PIECE])
        decoder.decode(b"", True)
    except UnicodeDecodeError:
        raise _malformed("event data is not valid UTF-8") from None


def _bytes_view(data: bytes | bytearray | memoryview) -> memoryview:
    """``data``'s bytes as a flat view, read in place when it is contiguous."""
    view = memoryview(data)
    return view.cast("B") if view.c_contiguous else memoryview(bytes(view))


def decode(data: str | bytes | bytearray | memoryview, limits: Limits, fields: tuple[ArgumentField, ...]) -> Any:
    """Event data or a body checked by the envelope rule and decoded
    (``[DONE]`` passes through as the str)."""
    if type(data) is str:  # what the SSE framer gives
        text: str = data
        if not text.isascii() and _SURROGATE.search(text) is not None:  # ``utf8_text``, inlined
            raise _malformed("event data is not valid UTF-8")
    elif isinstance(data, str):
        text = plain(data)
        if not utf8_text(text):
            raise _malformed("event data is not valid UTF-8")
    else:
        # measured (and, too large, validated) where it lies: a bytearray or
        # memoryview is copied only once it is within the limit
        raw: bytes | memoryview = data if type(data) is bytes else _bytes_view(data)
        if len(raw) > limits.max_sse_event_bytes and raw != _DONE_BYTES:
            # too large whatever it holds: validated a piece at a time (the
            # UTF-8 check still comes first), never decoded whole
            _check_utf8_pieces(raw)
            raise classify("", "DOCUMENT_TOO_LARGE", 0, limits, fields)
        try:
            text = str(raw, "utf-8")
        except UnicodeDecodeError:
            raise _malformed("event data is not valid UTF-8") from None
    if text == DONE:
        return DONE
    if "\\u" in text and ("\\ud" in text or "\\uD" in text) and _lone_surrogate(text):
        raise _malformed("event data has a lone surrogate escape")
    last_limits, derived = _last
    try:
        return parse_text(text, derived if last_limits is limits and derived is not None else envelope_limits(limits))
    except Fail as fail:
        raise classify(text, fail.code, fail.pos, limits, fields) from None


def decoder(limits: Limits, fields: tuple[ArgumentField, ...]) -> Callable[[str | bytes], Any]:
    """:func:`decode` under ``limits`` and ``fields``, for the events of one
    stream: the common data (an exact ASCII ``str`` within the size limit,
    without ``\\u`` escapes, a NUL among its first two characters or being
    ``[DONE]``), for which ``decode`` does nothing but the strict parser's
    fast path, goes to that path directly; anything else, and anything the
    fast path does not answer, through ``decode``. The last one made is
    given again for the same ``limits`` and ``fields`` (it holds no state)."""
    global _last_decoder
    last = _last_decoder
    if last is not None and last[0] is limits and last[1] is fields:
        return last[2]
    lim = envelope_limits(limits)
    max_size = lim.max_document_bytes

    def decode_event(data: str | bytes) -> Any:
        if (
            type(data) is str
            and data.isascii()
            and len(data) <= max_size
            and "\\u" not in data
            and "\x00" not in data[:2]
            and data != DONE
        ):
            try:
                return fast_path(data, len(data), lim)
            except FAST_MISSES:
                pass
        return decode(data, limits, fields)

    _last_decoder = (limits, fields, decode_event)
    return decode_event


#: The last ``(limits, fields, decoder)`` made, read and replaced as one tuple.
_last_decoder: tuple[Limits, tuple[ArgumentField, ...], Callable[[str | bytes], Any]] | None = None


def unkeyed(data: str | bytes, lim: Limits) -> tuple[Any, int] | None:
    """Event data or a body that :func:`decode` reads on the strict parser's
    fast path (an exact ``str`` of ASCII or ``bytes`` of UTF-8, within the
    size limit, without ``\\u`` escapes or a NUL among its first two
    characters, not ``[DONE]``), parsed without the repeated-key check, and
    the number of ``:`` characters in it; None for any other data, or where
    the fast path does not answer (``decode`` then decides).

    A reader takes the value only once it proves that no key repeats: in a
    JSON text without ``\\u`` escapes, each ``:`` is either the separator
    after a key (one per key) or a character of a string (a key or a value),
    where it is written as itself. So with ``C`` colons and ``K`` keys in the
    text, ``C = K + `` the colons of all its strings. A reader that visits
    objects of the value holding ``E`` members in all (each object once) and
    strings holding ``S`` colons (each string once) has ``E <= K <= C - S``,
    and ``E == C - S`` holds only when every key is a member of a visited
    object and no object repeats a key (a repeated key leaves fewer members
    than keys). Then the value is what ``decode`` gives; otherwise the data
    goes through ``decode``. ``lim`` is :func:`envelope_limits` of the
    limits ``decode`` is given."""
    if type(data) is str:
        if len(data) > lim.max_document_bytes or not data.isascii():
            return None
        text = data
    elif type(data) is bytes:
        if len(data) > lim.max_document_bytes:
            return None
        try:
            text = str(data, "utf-8")
        except UnicodeDecodeError:
            return None
    else:
        return None
    if "\x00" in text[:2] or text[:1] == "\ufeff" or text == DONE:
        return None
    try:
        return fast_unkeyed(text, len(data), lim)  # a miss for a text with a ``\\u`` escape
    except FAST_MISSES:
        return None


def _rule(code: str, limits: Limits) -> str | None:
    """What a broken limit or I-JSON rule is, or None for a syntax error."""
    if code == "DUPLICATE_KEY":
        return "a repeated key"
    if code == "DEPTH_EXCEEDED":
        return f"nesting deeper than {ENVELOPE_MAX_DEPTH} levels"
    if code == "NUMBER_TOO_LONG":
        return f"a number longer than {limits.max_number_length} characters"
    if code == "NUMBER_OUT_OF_RANGE":
        return "a number beyond 64 bits or a float that overflows"
    if code in ("STRING_TOO_LONG", "DOCUMENT_TOO_LARGE"):
        return f"more than {limits.max_document_bytes} bytes"
    if code == "TOO_MANY_ITEMS":
        return f"an array of more than {limits.max_array_items} items"
    if code == "TOO_MANY_MEMBERS":
        return f"an object of more than {limits.max_object_members} members"
    if code == "TOO_MANY_VALUES":
        return f"more than {limits.max_values} values"
    return None


def classify(data: str, code: str, pos: int, limits: Limits, fields: tuple[ArgumentField, ...]) -> OutputError:
    """The error for rule ``code`` broken at character ``pos`` of ``data``."""
    what = _rule(code, envelope_limits(limits))
    if what is None:
        return _malformed("event data is not valid JSON")
    steps = _path_at(data, pos, code == "DUPLICATE_KEY")
    path = json_path(steps)
    inside = any(
        len(field) <= len(steps)
        and all(
            (type(step) is int) if want is None else (type(step) is str and step == want)
            for want, step in zip(field, steps)
        )
        for field in fields
    )
    if inside:
        return new_error(code, f"tool arguments sent as a JSON object have {what}", pos=pos, path=path)
    return _malformed(f"event data has {what}", path)


_STRING: Final = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_STRUCTURE: Final = re.compile(r'[{}\[\],"]')


def _path_at(data: str, pos: int, key_at_pos: bool) -> list[str | int]:
    """The steps to the place at character ``pos`` of ``data`` (valid JSON up
    to ``pos``). With ``key_at_pos``, ``pos`` is the opening quote of an object
    key, which is the last step."""
    # ``None`` marks an object whose next key is not read yet.
    steps: list[str | int | None] = []
    i = 0
    while (m := _STRUCTURE.search(data, i, pos)) is not None:
        c = m.group()
        i = m.end()
        if c == "{":
            steps.append(None)
        elif c == "[":
            steps.append(0)
        elif c == "}" or c == "]":
            steps.pop()
        elif c == ",":
            last = steps[-1]
            steps[-1] = last + 1 if type(last) is int else None
        else:
            token = _STRING.match(data, m.start())
            end = token.end() if token else len(data)
            if steps and steps[-1] is None and token:
                steps[-1] = json.loads(token.group())
            i = end
    if key_at_pos:
        token = _STRING.match(data, pos)
        key = json.loads(token.group()) if token else ""
        if steps and steps[-1] is None:
            steps[-1] = key
        else:
            steps.append(key)
    return [step for step in steps if step is not None]
