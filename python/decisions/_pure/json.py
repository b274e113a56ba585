"""Strict JSON parsing, the pure-Python twin of ``rust/src/core/json.rs``.

The profile is RFC 8259 plus the I-JSON rules (RFC 7493). Both backends
follow the rules below to the letter, so they return equal values or raise
the same code at the same position. ``pos`` is a character offset into the
text (for bytes, into the decoded text).

Input, checked in this order before parsing (all at pos 0 unless stated):

1. ``DOCUMENT_TOO_LARGE``: more than ``max_document_bytes`` bytes of UTF-8
   (a ``str`` is measured by its UTF-8 form, a lone surrogate as 3 bytes).
2. ``UTF16_INPUT``: the UTF-8 form starts with ``FE FF`` or ``FF FE``, or has
   a NUL among its first two bytes (UTF-16/32 with or without a BOM).
3. ``BOM``: it starts with the UTF-8 byte order mark.
4. ``INVALID_UTF8``: bytes that are not UTF-8 (overlong forms, surrogates,
   truncated sequences...), at the number of characters of the valid prefix;
   a ``str`` holding a lone surrogate, at that character.

Then one left-to-right pass; the first rule broken wins:

- Whitespace is space, tab, LF and CR only. Only whitespace is
  ``EMPTY_INPUT`` at the end of it.
- A value starts at ``{ [ " - 0-9 t f n``. Otherwise, at that character:
  ``NaN``/``Infinity`` give ``NAN_OR_INFINITY``; ``+`` and ``.`` give
  ``INVALID_NUMBER``; ``//`` and ``/*`` give ``COMMENT``; three backticks
  ``MARKDOWN_FENCE``; ``'`` ``SINGLE_QUOTES``; anything else
  ``UNEXPECTED_CHARACTER``. This classification of comments, fences and
  single quotes also applies wherever a separator, a key or the end is
  expected (with the defaults below).
- When a value starts: in an array, more than ``max_array_items`` items is
  ``TOO_MANY_ITEMS``; then more than ``max_values`` values in the document
  (every scalar, array and object counts one; keys do not) is
  ``TOO_MANY_VALUES``; then an array or object nested deeper than
  ``max_depth`` is ``DEPTH_EXCEEDED``. All at the value's first character.
- Literals must read ``true``, ``false``, ``null``: the first differing
  character is ``UNEXPECTED_CHARACTER``.
- After ``{`` or ``,`` in an object a key must start with ``"``:
  otherwise ``TRAILING_COMMA`` (``}`` after a comma, at the comma) or
  ``KEY_NOT_STRING`` at that character. A key beyond ``max_object_members``
  is ``TOO_MANY_MEMBERS`` at its opening quote. After the key a ``:`` must
  follow (else ``UNEXPECTED_CHARACTER``).
- After an array item: ``,`` or ``]``; ``]`` right after a comma is
  ``TRAILING_COMMA`` at the comma. After a member value: ``,`` or ``}``.
  Anything else is ``UNEXPECTED_CHARACTER``.
- Keys are compared when their object closes (its members are then known,
  so it is built once, at its final size): a key that repeats an earlier key
  of the object is ``DUPLICATE_KEY`` at the opening quote of the first such
  repeat. An error met before the closing brace comes first.
- After the top-level value only whitespace may follow: else
  ``TRAILING_CONTENT`` (or ``COMMENT`` / ``MARKDOWN_FENCE``).
- The input ending where more is required is ``UNEXPECTED_END`` at the end
  of the text (also inside strings, numbers, escapes and literals).

Strings, scanned from the opening quote: before each quote, backslash,
control character or the end of input, if the decoded string so far is
longer than ``max_string_bytes`` UTF-8 bytes: ``STRING_TOO_LONG`` at the
opening quote (nothing is copied before this check). A raw character below
U+0020 is ``CONTROL_CHARACTER`` at it. Escapes are ``\\" \\\\ \\/ \\b \\f \\n
\\r \\t \\uXXXX``; any other is ``INVALID_ESCAPE`` at the backslash; a ``\\u``
without four hex digits is ``INVALID_UNICODE_ESCAPE`` at its backslash. A
high surrogate escape must be followed at once by a ``\\u`` low surrogate
escape, a low one must not come alone: otherwise ``LONE_SURROGATE`` at the
first backslash.

Numbers follow the RFC grammar. At the number's first character: ``-`` then
``Infinity``/``NaN`` is ``NAN_OR_INFINITY``; a ``0`` followed by a digit is
``LEADING_ZERO``; a missing digit (after ``-``, ``.``, ``e``) is
``INVALID_NUMBER`` (or ``UNEXPECTED_END`` at the end of input). Then, before
any conversion, text longer than ``max_number_length`` is
``NUMBER_TOO_LONG``. Without fraction or exponent it is an exact ``int``,
which must lie in [-2**63, 2**64-1] (``-0`` is ``0``); otherwise a correctly
rounded ``float`` (``-0.0`` stays negative, underflow gives 0.0) that must be
finite. Breaking either is ``NUMBER_OUT_OF_RANGE``.

The implementation: the stdlib ``json`` C scanner with hooks does the
common case (duplicate keys and member counts in ``object_pairs_hook``,
number length and range in ``parse_int``/``parse_float``, NaN in
``parse_constant``; a regex for surrogate escapes; counting brackets and
commas bounds depth, items and values, and an iterative walk runs only when
those bounds are not enough). For a caller that proves the keys itself
(:func:`fast_unkeyed`), pydantic-core's ``from_json`` (a dependency through
pydantic) parses a text whose numbers are all short: it takes the same
grammar, and no number that short can break a number rule. Whenever either
fails or flags anything, the exact parser (:mod:`~decisions._pure.jsonexact`,
the twin of the Rust core, same algorithm) runs on the text to find the code
and position, or the value when the stdlib cannot build it (nesting beyond
the interpreter's recursion limit).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, Final

from pydantic_core import from_json

from .._json_errors import parse_error, str_input_error, utf16_str
from ..errors import ParseError
from ..limits import DEFAULT_LIMITS, Limits, checked
from .jsonexact import INF, INT_MAX, INT_MIN, WS, WS_CHARS, Exact, Fail, utf8_len

__all__ = ["FAST_MISSES", "fast_path", "fast_unkeyed", "loads", "parse_text", "plain"]


class _Flag(Exception):
    """The fast path saw something it cannot judge; the exact parser decides."""


def _exact(text: str, lim: Limits) -> Any:
    return Exact(text, lim).run()


# --- the fast path -------------------------------------------------------

_SURROGATE_ESCAPE: Final = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _surrogates_paired(text: str) -> bool:
    """Whether every surrogate escape is a high one followed at once by a low
    one. In text the scanner accepted, a backslash is inside a string and
    starts an escape: a match after an odd run of backslashes (``\\\\ud800``)
    is an escaped backslash and letters, not an escape."""
    expect_low_at = -1
    for m in _SURROGATE_ESCAPE.finditer(text):
        start = k = m.start()
        while k and text[k - 1] == "\\":
            k -= 1
        if (start - k) % 2:
            continue
        high = m.group()[3] in "89abAB"
        if expect_low_at >= 0:
            if high or start != expect_low_at:
                return False
            expect_low_at = -1
        elif high:
            expect_low_at = m.end()
        else:
            return False
    return expect_low_at < 0


def _flag(*_: Any) -> Any:
    raise _Flag


#: The stdlib's C scanner: (text, index) -> (value, end); StopIteration where
#: no value starts, json.JSONDecodeError on bad syntax.
_Scanner = Callable[[str, int], tuple[Any, int]]


def _scanner(lim: Limits, keyed: bool = True) -> _Scanner | None:
    """The fast path's scanner under ``lim``; with ``keyed`` False, one that
    builds each object as it reads it, a repeated key keeping its last
    value (None when the member limit could bind: its check needs the
    members counted)."""
    max_members = lim.max_object_members
    max_number = lim.max_number_length
    # Shorter integer literals are within both the length limit and 64 bits.
    short = min(19, max_number + 1)

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(items)
        if len(obj) != len(items) or len(items) > max_members:
            raise _Flag
        return obj

    def unique(items: list[tuple[str, Any]]) -> dict[str, Any]:
        """``pairs`` where the member limit cannot be reached (each member
        takes at least 4 bytes of the document)."""
        obj = dict(items)
        if len(obj) != len(items):
            raise _Flag
        return obj

    def parse_int(literal: str) -> int:
        if len(literal) < short:
            return int(literal)
        if len(literal) > 21 or len(literal) > max_number:
            raise _Flag
        value = int(literal)
        if not INT_MIN <= value <= INT_MAX:
            raise _Flag
        return value

    def parse_float(literal: str) -> float:
        if len(literal) > max_number:
            raise _Flag
        value = float(literal)
        if value in (INF, -INF):
            raise _Flag
        return value

    bounded = max_members * 4 >= lim.max_document_bytes
    if not keyed and not bounded:
        return None
    decoder = json.JSONDecoder(
        object_pairs_hook=(unique if bounded else pairs) if keyed else None,
        parse_int=parse_int,
        parse_float=parse_float,
        parse_constant=_flag,
        strict=True,
    )
    # Called directly, without JSONDecoder.decode's Python frames.
    scan: _Scanner = decoder.scan_once  # type: ignore[attr-defined]
    return scan


#: What the fast path needs of one ``Limits``, read once: the scanner, then
#: ``max_string_bytes``, ``max_depth``, the text length from which nesting
#: can exceed it (``2 * max_depth + 2``: each level of a valid text opens and
#: closes) and the smaller of ``max_array_items`` and ``max_values`` (the
#: text length from which commas are counted), then the scanner without the
#: repeated-key check (or None) and the digit run of :func:`_long_run`.
_Plan = tuple[_Scanner, int, int, int, int, "_Scanner | None", bytes]


def _plan(lim: Limits) -> _Plan:
    scan = _scanner(lim)
    assert scan is not None
    depth = lim.max_depth
    counted = min(lim.max_array_items, lim.max_values)
    return (scan, lim.max_string_bytes, depth, 2 * depth + 2, counted, _scanner(lim, False), _long_run(lim))


def _long_run(lim: Limits) -> bytes:
    """The run of digits (``1`` in :data:`_MARKS`) from which a text's
    numbers may break ``lim``'s number rules. A literal is an optional sign,
    then integer, fraction and exponent digits with at most four other
    characters (sign, point, ``e``, exponent sign): with every digit run
    shorter than ``(max_number_length - 1) // 3`` it is within the length
    limit, and an integer of at most 18 digits lies within 64 bits."""
    return b"1" * max(1, min(19, (lim.max_number_length - 1) // 3))


_DEFAULT_PLAN: Final = _plan(DEFAULT_LIMITS)
_plans: dict[Limits, _Plan] = {}
#: The last ``(limits, plan)`` pair for limits other than the defaults, read
#: and replaced as one tuple: a stream parses each event under the same
#: object, and hashing a ``Limits`` costs more than the parse's other checks.
_last: tuple[Limits | None, _Plan] = (None, _DEFAULT_PLAN)


def _plan_of(lim: Limits) -> _Plan:
    """The plan of ``lim`` (other than the defaults), kept as the last one used."""
    global _last
    last_lim, plan = _last
    if last_lim is lim:
        return plan
    found = _plans.get(lim)
    if found is None:
        if len(_plans) > 16:
            _plans.clear()
        found = _plans[lim] = _plan(lim)
    _last = (lim, found)
    return found


def _walk(value: Any, lim: Limits, check_strings: bool) -> None:
    """Raise _Flag if depth, items, values or string bytes may exceed the limits."""
    max_depth, max_items, max_str = lim.max_depth, lim.max_array_items, lim.max_string_bytes
    values = 1
    if type(value) is not dict and type(value) is not list:
        if check_strings and type(value) is str and len(value) * 4 > max_str and utf8_len(value) > max_str:
            raise _Flag
        return
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        container, depth = stack.pop()
        depth += 1
        if depth > max_depth:
            raise _Flag
        if type(container) is dict:
            items = container.values()
            if check_strings:
                for key in container:
                    if len(key) * 4 > max_str and utf8_len(key) > max_str:
                        raise _Flag
        else:
            items = container
            if len(container) > max_items:
                raise _Flag
        values += len(container)
        for item in items:
            t = type(item)
            if t is dict or t is list:
                if item:
                    stack.append((item, depth))
                elif depth >= max_depth:
                    raise _Flag
            elif check_strings and t is str and len(item) * 4 > max_str and utf8_len(item) > max_str:
                raise _Flag
    if values > lim.max_values:
        raise _Flag


#: What :func:`fast_path` raises when it does not answer (the exact parser
#: then decides): ``json.JSONDecodeError`` is a ValueError, so is ``int()``'s
#: digit limit.
FAST_MISSES: Final = (ValueError, _Flag, RecursionError, StopIteration)


def fast_path(text: str, size: int, lim: Limits) -> Any:
    """The value of ``text`` (``size`` bytes of UTF-8, past the input checks
    of :func:`loads`) by the stdlib scanner, or one of :data:`FAST_MISSES`."""
    if lim is DEFAULT_LIMITS:
        plan = _DEFAULT_PLAN
    else:
        last_lim, plan = _last  # ``_plan_of``'s first step, inlined: a stream parses under one ``Limits``
        if last_lim is not lim:
            plan = _plan_of(lim)
    scan, max_string, max_depth, deep_from, count_from, _, _ = plan
    start = WS.match(text).end() if text[:1] in WS_CHARS else 0  # type: ignore[union-attr]
    value, end = scan(text, start)
    n = len(text)
    if end != n and WS.match(text, end).end() != n:  # type: ignore[union-attr]
        raise _Flag
    if "\\u" in text and not _surrogates_paired(text):
        raise _Flag
    if size > max_string:
        _walk(value, lim, True)
    elif type(value) is dict or type(value) is list:
        # Each bound below counts characters of the text, so a text shorter
        # than the bound cannot break it: count only what could.
        if n >= deep_from and text.count("[") + text.count("{") > max_depth:
            _walk(value, lim, False)
        elif n >= count_from:
            opens = text.count("[")
            commas = text.count(",")
            if commas + 1 > lim.max_array_items or 1 + opens + commas + text.count(":") > lim.max_values:
                _walk(value, lim, False)
    return value


#: ``\\u`` (a regex finds it faster than ``bytes.find``, whose scan is not
#: driven by the rare backslash)
_U_ESCAPE: Final = re.compile(rb"\\u")

#: ``bytes.translate`` table of :func:`fast_unkeyed`: a digit becomes ``1``,
#: ``e``, ``E`` and ``+`` become ``e``, ``{`` becomes ``[`` (both open a
#: level); ``\\``, ``u``, ``:``, ``[`` and ``,`` stay; any other byte becomes
#: a space
_MARKS: Final = bytes(
    0x31 if 0x30 <= b <= 0x39 else 0x65 if b in b"eE+" else 0x5B if b == 0x7B else b if b in b"\\u:[," else 0x20
    for b in range(256)
)


def fast_unkeyed(text: str, size: int, lim: Limits) -> tuple[Any, int]:
    """The value of ``text`` as :func:`fast_path` gives it but for the
    check of repeated keys, and the number of ``:`` in ``text``, for
    :func:`~decisions._pure.envelope.unkeyed`; a miss (one of
    :data:`FAST_MISSES`) for a text with a ``\\u`` escape (which that check
    alone would judge) or under limits that need the members counted.

    The text is first marked by :data:`_MARKS`. Where no digit run is as
    long as :func:`_long_run`'s and no ``e`` (or ``+``) is followed by three
    digits, every number literal is within the length limit, every integer
    within 64 bits, and no float can overflow (with digit runs that short,
    only an exponent of three digits reaches 10**308): pydantic-core's
    ``from_json``, which takes the same grammar without NaN or Infinity,
    parses it. Digits in strings count too: such a text, and any other, goes
    to the stdlib scanner, which reads each number itself."""
    if lim is DEFAULT_LIMITS:
        plan = _DEFAULT_PLAN
    else:
        last_lim, plan = _last  # ``_plan_of``'s first step, inlined: a stream parses under one ``Limits``
        if last_lim is not lim:
            plan = _plan_of(lim)
    _, max_string, max_depth, deep_from, count_from, scan, run = plan
    marks = text.encode().translate(_MARKS)
    if scan is None or _U_ESCAPE.search(marks) is not None:
        raise _Flag
    n = len(text)
    if marks.find(run) < 0 and marks.find(b"e111") < 0:
        # A ValueError where the text is not JSON. The key cache keeps a
        # UTF-8 copy beside each non-ASCII string it holds: keys are cached
        # only in an ASCII text, so every string is in its narrowest form.
        value = from_json(text, allow_inf_nan=False, cache_strings="keys" if n == size else False)
    else:
        start = WS.match(text).end() if text[:1] in WS_CHARS else 0  # type: ignore[union-attr]
        value, end = scan(text, start)
        if end != n and WS.match(text, end).end() != n:  # type: ignore[union-attr]
            raise _Flag
    colons = marks.count(b":")
    if size > max_string:
        _walk(value, lim, True)
    elif type(value) is dict or type(value) is list:
        # as in ``fast_path``, with arrays and objects counted together: each
        # holds no more values than its commas and colons, plus one
        if n >= deep_from or n >= count_from:
            opens = marks.count(b"[")
            if n >= deep_from and opens > max_depth:
                _walk(value, lim, False)
            elif n >= count_from:
                commas = marks.count(b",")
                if commas + 1 > lim.max_array_items or 1 + opens + commas + colons > lim.max_values:
                    _walk(value, lim, False)
    return value, colons


def plain(data: Any) -> Any:
    """A str or bytes-like ``data`` as an exact ``str`` or ``bytes``, which is
    what the native backend reads: the characters or bytes themselves, not
    what a subclass's own methods (``find``, ``__eq__``, ``__bytes__``...)
    say; anything else as it is."""
    kind = type(data)
    if kind is str or kind is bytes:
        return data
    if isinstance(data, str):
        return str.__str__(data)
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(memoryview(data))
    return data


#: characters of a str encoded per step by :func:`_utf8_size`
_SIZE_PIECE: Final = 1 << 16


def _utf8_size(text: str) -> int:
    """The bytes of ``text``'s UTF-8 form (a surrogate counted as its 3
    bytes), encoded a piece at a time, never whole."""
    return sum(
        len(text[start : start + _SIZE_PIECE].encode("utf-8", "surrogatepass"))
        for start in range(0, len(text), _SIZE_PIECE)
    )


#: An ASCII text shorter than this breaks none of the default limits but those
#: the default scanner checks as it reads (numbers, repeated keys): its
#: nesting, items, values, strings and size all stay within them (see ``_plan``).
_SHORT: Final = min(_DEFAULT_PLAN[1], _DEFAULT_PLAN[3], _DEFAULT_PLAN[4], DEFAULT_LIMITS.max_document_bytes + 1)
_short_scan: Final = _DEFAULT_PLAN[0]


def loads(data: str | bytes | bytearray | memoryview, /, *, limits: Limits | None = None) -> Any:
    """Parse one strict JSON document (RFC 8259 + I-JSON) into plain Python values.

    Raises :class:`decisions.ParseError` with the code and character offset of
    the first rule broken (see the module docstring for the rules).
    """
    if limits is None and type(data) is str and len(data) < _SHORT and data.isascii() and "\\u" not in data:
        # The commonest call, a model's short arguments: a text the default
        # scanner reads whole from its first character is its value (a NUL,
        # a BOM or whitespace around it stops the scanner), and any other
        # goes through every check below.
        try:
            value, end = _short_scan(data, 0)
            if end == len(data):
                return value
        except FAST_MISSES:
            pass
    if limits is None:
        lim = DEFAULT_LIMITS
    elif isinstance(limits, Limits):
        lim = checked(limits)
    else:
        raise TypeError(f"limits must be a decisions.Limits, not {type(limits).__name__}")
    if type(data) is str and data.isascii():  # the common case: the checks below, in their order
        text = data
        size = len(text)
        if size > lim.max_document_bytes:
            raise parse_error("DOCUMENT_TOO_LARGE", data, 0, limits)
        if "\x00" in text[:2] and utf16_str(text):
            raise parse_error("UTF16_INPUT", data, 0, limits)
    elif isinstance(data, str):
        text = data = plain(data)
        if len(text) > lim.max_document_bytes:
            raise parse_error("DOCUMENT_TOO_LARGE", data, 0, limits)
        if text.isascii():
            size = len(text)
        else:
            if len(text) * 4 > lim.max_document_bytes and _utf8_size(text) > lim.max_document_bytes:
                # refused before its UTF-8 form is built, as the core does
                raise parse_error("DOCUMENT_TOO_LARGE", data, 0, limits)
            try:
                size = len(text.encode("utf-8"))  # within the limit, as the check above found
            except UnicodeEncodeError:
                raise str_input_error(text, limits) from None
        if "\x00" in text[:2] and utf16_str(text):
            raise parse_error("UTF16_INPUT", data, 0, limits)
        if text[:1] == "\ufeff":
            raise parse_error("BOM", data, 0, limits)
    elif isinstance(data, (bytes, bytearray, memoryview)):
        # measured before a bytearray or memoryview is copied, and read as the
        # bytes it holds (not a subclass's __bytes__), as the core reads it
        if type(data) is bytes:
            size, raw = len(data), data
        else:
            # one view, measured and copied: held, it keeps another thread
            # from resizing a bytearray in between (as the core's view does)
            with memoryview(data) as view:
                size = view.nbytes
                if size > lim.max_document_bytes:
                    raise parse_error("DOCUMENT_TOO_LARGE", data, 0, limits)
                raw = bytes(view)
        if size > lim.max_document_bytes:
            raise parse_error("DOCUMENT_TOO_LARGE", data, 0, limits)
        if raw[:2] in (b"\xfe\xff", b"\xff\xfe") or (size >= 2 and (raw[0] == 0 or raw[1] == 0)):
            raise parse_error("UTF16_INPUT", data, 0, limits)
        if raw.startswith(b"\xef\xbb\xbf"):
            raise parse_error("BOM", data, 0, limits)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise parse_error("INVALID_UTF8", data, len(raw[: exc.start].decode("utf-8")), limits) from None
    else:
        raise TypeError(f"loads() argument must be str, bytes, bytearray or memoryview, not {type(data).__name__}")
    try:  # ``_parse``, inlined
        return fast_path(text, size, lim)
    except FAST_MISSES:
        pass
    try:
        return _exact(text, lim)
    except Fail as fail:
        raise parse_error(fail.code, data, fail.pos, limits) from None


def _parse(text: str, size: int, lim: Limits) -> Any:
    """The value of ``text`` (``size`` bytes of UTF-8, past the input
    checks): the fast path, else the exact parser, which raises
    :class:`~decisions._pure.jsonexact.Fail`."""
    try:
        return fast_path(text, size, lim)
    except FAST_MISSES:
        pass
    return _exact(text, lim)


def parse_text(text: str, lim: Limits) -> Any:
    """``loads(text, limits=lim)`` of an exact ``str``, for callers that want
    only the code and offset of an error: raises
    :class:`~decisions._pure.jsonexact.Fail` instead of a ``ParseError``
    (whose message and hint are not built)."""
    if text.isascii() and len(text) <= lim.max_document_bytes and "\x00" not in text[:2]:
        return _parse(text, len(text), lim)  # every input check passes
    try:
        return loads(text, limits=lim)
    except ParseError as error:
        raise Fail(error.code, error.pos) from None
