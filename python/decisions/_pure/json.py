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
those bounds are not enough). Whenever it fails or flags anything, the
exact parser below (the twin of the Rust core, same algorithm) runs on the
text to find the code and position, or the value when the stdlib cannot
build it (nesting beyond the interpreter's recursion limit).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, Final

from .._json_errors import parse_error, str_input_error, utf16_str
from ..limits import DEFAULT_LIMITS, Limits

__all__ = ["loads"]


class _Fail(Exception):
    """A parse error found by the exact parser: code and character offset."""

    def __init__(self, code: str, pos: int) -> None:
        self.code = code
        self.pos = pos


class _Flag(Exception):
    """The fast path saw something it cannot judge; the exact parser decides."""


_WS: Final = re.compile(r"[ \t\n\r]*")
_WS_CHARS: Final = " \t\n\r"
_SPECIAL: Final = re.compile(r'["\\\x00-\x1f]')
_DIGITS: Final = re.compile(r"[0-9]*")
_HEX4: Final = re.compile(r"[0-9a-fA-F]{4}")
_SIMPLE_ESCAPES: Final = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_VALUE_START: Final = frozenset('{["-0123456789tfn')
_LITERALS: Final = {"t": ("true", True), "f": ("false", False), "n": ("null", None)}
_INT_MIN: Final = -(2**63)
_INT_MAX: Final = 2**64 - 1


def _utf8_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def _classify(text: str, i: int, default: str) -> str:
    c = text[i : i + 1]
    if c == "/" and text[i + 1 : i + 2] in ("/", "*"):
        return "COMMENT"
    if c == "`" and text.startswith("```", i):
        return "MARKDOWN_FENCE"
    if c == "'":
        return "SINGLE_QUOTES"
    return default


class _Exact:
    """The exact parser: one pass, explicit stack, same checks as the Rust core."""

    __slots__ = ("text", "n", "pos", "values", "lim")

    def __init__(self, text: str, lim: Limits) -> None:
        self.text = text
        self.n = len(text)
        self.pos = 0
        self.values = 0
        self.lim = lim

    def ws(self) -> None:
        self.pos = _WS.match(self.text, self.pos).end()  # type: ignore[union-attr]

    def end(self) -> _Fail:
        return _Fail("UNEXPECTED_END", self.n)

    def run(self) -> Any:
        text, lim = self.text, self.lim
        # frames: [container, is_object, pending key, key position, count,
        #          position of the first repeated key or -1]
        stack: list[list[Any]] = []
        self.ws()
        if self.pos >= self.n:
            raise _Fail("EMPTY_INPUT", self.pos)
        while True:
            # A value starts at self.pos.
            start = self.pos
            if start >= self.n:
                raise self.end()
            c = text[start]
            if c not in _VALUE_START:
                if c == "N" and text.startswith("NaN", start) or c == "I" and text.startswith("Infinity", start):
                    raise _Fail("NAN_OR_INFINITY", start)
                if c in "+.":
                    raise _Fail("INVALID_NUMBER", start)
                raise _Fail(_classify(text, start, "UNEXPECTED_CHARACTER"), start)
            if stack and not stack[-1][1]:
                top = stack[-1]
                if top[4] >= lim.max_array_items:
                    raise _Fail("TOO_MANY_ITEMS", start)
                top[4] += 1
            if self.values >= lim.max_values:
                raise _Fail("TOO_MANY_VALUES", start)
            self.values += 1
            if c in "{[" and len(stack) >= lim.max_depth:
                raise _Fail("DEPTH_EXCEEDED", start)
            value: Any
            if c == "{":
                self.pos += 1
                self.ws()
                nxt = text[self.pos : self.pos + 1]
                if nxt == "}":
                    self.pos += 1
                    value = {}
                elif nxt == '"':
                    stack.append([{}, True, None, 0, 0, -1])
                    self.member(stack[-1])
                    continue
                elif not nxt:
                    raise self.end()
                else:
                    raise _Fail(_classify(text, self.pos, "KEY_NOT_STRING"), self.pos)
            elif c == "[":
                self.pos += 1
                self.ws()
                nxt = text[self.pos : self.pos + 1]
                if nxt == "]":
                    self.pos += 1
                    value = []
                elif not nxt:
                    raise self.end()
                else:
                    stack.append([[], False, None, 0, 0, -1])
                    continue
            elif c == '"':
                value = self.string(start)
            elif c in _LITERALS:
                word, value = _LITERALS[c]
                for k, expected in enumerate(word):
                    got = text[start + k : start + k + 1]
                    if not got:
                        raise self.end()
                    if got != expected:
                        raise _Fail("UNEXPECTED_CHARACTER", start + k)
                self.pos = start + len(word)
            else:
                value = self.number(start)
            # A value is complete: attach it, closing containers as they end.
            while True:
                if not stack:
                    self.ws()
                    if self.pos < self.n:
                        raise _Fail(_classify(text, self.pos, "TRAILING_CONTENT"), self.pos)
                    return value
                top = stack[-1]
                if top[1]:
                    obj = top[0]
                    if top[2] in obj and top[5] < 0:
                        top[5] = top[3]
                    obj[top[2]] = value
                    self.ws()
                    nxt = text[self.pos : self.pos + 1]
                    if nxt == ",":
                        comma = self.pos
                        self.pos += 1
                        self.ws()
                        nxt = text[self.pos : self.pos + 1]
                        if nxt == '"':
                            self.member(top)
                            break
                        if nxt == "}":
                            raise _Fail("TRAILING_COMMA", comma)
                        if not nxt:
                            raise self.end()
                        raise _Fail(_classify(text, self.pos, "KEY_NOT_STRING"), self.pos)
                    if nxt == "}":
                        self.pos += 1
                        if top[5] >= 0:
                            raise _Fail("DUPLICATE_KEY", top[5])
                        value = stack.pop()[0]
                        continue
                    if not nxt:
                        raise self.end()
                    raise _Fail(_classify(text, self.pos, "UNEXPECTED_CHARACTER"), self.pos)
                top[0].append(value)
                self.ws()
                nxt = text[self.pos : self.pos + 1]
                if nxt == ",":
                    comma = self.pos
                    self.pos += 1
                    self.ws()
                    nxt = text[self.pos : self.pos + 1]
                    if nxt == "]":
                        raise _Fail("TRAILING_COMMA", comma)
                    if not nxt:
                        raise self.end()
                    break
                if nxt == "]":
                    self.pos += 1
                    value = stack.pop()[0]
                    continue
                if not nxt:
                    raise self.end()
                raise _Fail(_classify(text, self.pos, "UNEXPECTED_CHARACTER"), self.pos)

    def member(self, top: list[Any]) -> None:
        """A key from its opening quote through the colon and whitespace after it."""
        key_pos = self.pos
        if top[4] >= self.lim.max_object_members:
            raise _Fail("TOO_MANY_MEMBERS", key_pos)
        top[4] += 1
        top[2] = self.string(key_pos)
        top[3] = key_pos
        self.ws()
        nxt = self.text[self.pos : self.pos + 1]
        if nxt != ":":
            if not nxt:
                raise self.end()
            raise _Fail(_classify(self.text, self.pos, "UNEXPECTED_CHARACTER"), self.pos)
        self.pos += 1
        self.ws()
        if self.pos >= self.n:
            raise self.end()

    def string(self, quote: int) -> str:
        text, limit = self.text, self.lim.max_string_bytes
        parts: list[str] = []
        decoded = 0
        cur = quote + 1
        while True:
            m = _SPECIAL.search(text, cur)
            j = m.start() if m else self.n
            run = text[cur:j]
            decoded += _utf8_len(run)
            if decoded > limit:
                raise _Fail("STRING_TOO_LONG", quote)
            if j >= self.n:
                raise self.end()
            c = text[j]
            if c == '"':
                self.pos = j + 1
                if not parts:
                    return run
                parts.append(run)
                return "".join(parts)
            if c != "\\":
                raise _Fail("CONTROL_CHARACTER", j)
            parts.append(run)
            e = text[j + 1 : j + 2]
            if not e:
                raise self.end()
            simple = _SIMPLE_ESCAPES.get(e)
            if simple is not None:
                parts.append(simple)
                decoded += 1
                cur = j + 2
                continue
            if e != "u":
                raise _Fail("INVALID_ESCAPE", j)
            first = self.hex4(j)
            nxt = j + 6
            if 0xD800 <= first <= 0xDBFF:
                pair = text[nxt : nxt + 2]
                if not pair or pair == "\\":
                    raise self.end()
                if pair != "\\u":
                    raise _Fail("LONE_SURROGATE", j)
                second = self.hex4(nxt)
                if not 0xDC00 <= second <= 0xDFFF:
                    raise _Fail("LONE_SURROGATE", j)
                code = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
                nxt += 6
            elif 0xDC00 <= first <= 0xDFFF:
                raise _Fail("LONE_SURROGATE", j)
            else:
                code = first
            char = chr(code)
            parts.append(char)
            decoded += 1 if code < 0x80 else 2 if code < 0x800 else 3 if code < 0x10000 else 4
            cur = nxt

    def hex4(self, j: int) -> int:
        """The value of the four hex digits of the ``\\u`` escape at ``j``."""
        digits = self.text[j + 2 : j + 6]
        if _HEX4.match(digits) is None:
            for ch in digits:
                if ch not in "0123456789abcdefABCDEF":
                    raise _Fail("INVALID_UNICODE_ESCAPE", j)
            raise self.end()
        return int(digits, 16)

    def required_digits(self, start: int) -> None:
        c = self.text[self.pos : self.pos + 1]
        if not c:
            raise self.end()
        if not "0" <= c <= "9":
            raise _Fail("INVALID_NUMBER", start)
        self.pos = _DIGITS.match(self.text, self.pos).end()  # type: ignore[union-attr]

    def number(self, start: int) -> int | float:
        text = self.text
        self.pos = start
        if text[start] == "-":
            self.pos += 1
            if text.startswith("Infinity", self.pos) or text.startswith("NaN", self.pos):
                raise _Fail("NAN_OR_INFINITY", start)
        c = text[self.pos : self.pos + 1]
        if not c:
            raise self.end()
        if c == "0":
            self.pos += 1
            if "0" <= text[self.pos : self.pos + 1] <= "9":
                raise _Fail("LEADING_ZERO", start)
        elif "1" <= c <= "9":
            self.pos = _DIGITS.match(text, self.pos).end()  # type: ignore[union-attr]
        else:
            raise _Fail("INVALID_NUMBER", start)
        is_float = False
        if text[self.pos : self.pos + 1] == ".":
            is_float = True
            self.pos += 1
            self.required_digits(start)
        if text[self.pos : self.pos + 1] in ("e", "E"):
            is_float = True
            self.pos += 1
            if text[self.pos : self.pos + 1] in ("+", "-"):
                self.pos += 1
            self.required_digits(start)
        if self.pos - start > self.lim.max_number_length:
            raise _Fail("NUMBER_TOO_LONG", start)
        literal = text[start : self.pos]
        if is_float:
            f = float(literal)
            if f in (_INF, -_INF):
                raise _Fail("NUMBER_OUT_OF_RANGE", start)
            return f
        if len(literal) > 21:
            raise _Fail("NUMBER_OUT_OF_RANGE", start)
        i = int(literal)
        if not _INT_MIN <= i <= _INT_MAX:
            raise _Fail("NUMBER_OUT_OF_RANGE", start)
        return i


_INF: Final = float("inf")


def _exact(text: str, lim: Limits) -> Any:
    return _Exact(text, lim).run()


# --- the fast path -------------------------------------------------------

_SURROGATE_ESCAPE: Final = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _surrogates_paired(text: str) -> bool:
    """Whether every surrogate escape (as the regex sees them) is a proper pair."""
    expect_low_at = -1
    for m in _SURROGATE_ESCAPE.finditer(text):
        high = m.group()[3] in "89abAB"
        if expect_low_at >= 0:
            if high or m.start() != expect_low_at:
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


def _scanner(lim: Limits) -> _Scanner:
    max_members = lim.max_object_members
    max_number = lim.max_number_length
    # Shorter integer literals are within both the length limit and 64 bits.
    short = min(19, max_number + 1)

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(items)
        if len(obj) != len(items) or len(items) > max_members:
            raise _Flag
        return obj

    def parse_int(literal: str) -> int:
        if len(literal) < short:
            return int(literal)
        if len(literal) > 21 or len(literal) > max_number:
            raise _Flag
        value = int(literal)
        if not _INT_MIN <= value <= _INT_MAX:
            raise _Flag
        return value

    def parse_float(literal: str) -> float:
        if len(literal) > max_number:
            raise _Flag
        value = float(literal)
        if value in (_INF, -_INF):
            raise _Flag
        return value

    decoder = json.JSONDecoder(
        object_pairs_hook=pairs, parse_int=parse_int, parse_float=parse_float, parse_constant=_flag, strict=True
    )
    # Called directly, without JSONDecoder.decode's Python frames.
    scan: _Scanner = decoder.scan_once  # type: ignore[attr-defined]
    return scan


_DEFAULT_SCANNER: Final = _scanner(DEFAULT_LIMITS)
_scanners: dict[Limits, _Scanner] = {}


def _walk(value: Any, lim: Limits, check_strings: bool) -> None:
    """Raise _Flag if depth, items, values or string bytes may exceed the limits."""
    max_depth, max_items, max_str = lim.max_depth, lim.max_array_items, lim.max_string_bytes
    values = 1
    if type(value) is not dict and type(value) is not list:
        if check_strings and type(value) is str and len(value) * 4 > max_str and _utf8_len(value) > max_str:
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
                    if len(key) * 4 > max_str and _utf8_len(key) > max_str:
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
            elif check_strings and t is str and len(item) * 4 > max_str and _utf8_len(item) > max_str:
                raise _Flag
    if values > lim.max_values:
        raise _Flag


def _fast(text: str, size: int, lim: Limits) -> Any:
    scan = _DEFAULT_SCANNER if lim is DEFAULT_LIMITS else _scanners.get(lim)
    if scan is None:
        if len(_scanners) > 16:
            _scanners.clear()
        scan = _scanners[lim] = _scanner(lim)
    start = _WS.match(text).end() if text[:1] in _WS_CHARS else 0  # type: ignore[union-attr]
    value, end = scan(text, start)
    if end != len(text) and _WS.match(text, end).end() != len(text):  # type: ignore[union-attr]
        raise _Flag
    if "\\u" in text and not _surrogates_paired(text):
        raise _Flag
    check_strings = size > lim.max_string_bytes
    if check_strings:
        _walk(value, lim, True)
    elif type(value) is dict or type(value) is list:
        # Each bound below counts characters of the text, so a text shorter
        # than the bound cannot break it: count only what could.
        n = len(text)
        if n > lim.max_depth and text.count("[") + text.count("{") > lim.max_depth:
            _walk(value, lim, False)
        elif n >= min(lim.max_array_items, lim.max_values):
            opens = text.count("[")
            commas = text.count(",")
            if commas + 1 > lim.max_array_items or 1 + opens + commas + text.count(":") > lim.max_values:
                _walk(value, lim, False)
    return value


def loads(data: str | bytes | bytearray | memoryview, /, *, limits: Limits | None = None) -> Any:
    """Parse one strict JSON document (RFC 8259 + I-JSON) into plain Python values.

    Raises :class:`decisions.ParseError` with the code and character offset of
    the first rule broken (see the module docstring for the rules).
    """
    if limits is None:
        lim = DEFAULT_LIMITS
    elif isinstance(limits, Limits):
        lim = limits
    else:
        raise TypeError(f"limits must be a decisions.Limits, not {type(limits).__name__}")
    if isinstance(data, str):
        text = data
        if len(text) > lim.max_document_bytes:
            raise parse_error("DOCUMENT_TOO_LARGE", data, 0, limits)
        if text.isascii():
            size = len(text)
        else:
            try:
                size = len(text.encode("utf-8"))
            except UnicodeEncodeError:
                raise str_input_error(text, limits) from None
        if size > lim.max_document_bytes:
            raise parse_error("DOCUMENT_TOO_LARGE", data, 0, limits)
        if utf16_str(text):
            raise parse_error("UTF16_INPUT", data, 0, limits)
        if text.startswith("\ufeff"):
            raise parse_error("BOM", data, 0, limits)
    elif isinstance(data, (bytes, bytearray, memoryview)):
        raw = data if type(data) is bytes else bytes(data)
        size = len(raw)
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
    try:
        return _fast(text, size, lim)
    except (ValueError, _Flag, RecursionError, StopIteration):
        # json.JSONDecodeError is a ValueError; so is int()'s digit limit.
        pass
    try:
        return _exact(text, lim)
    except _Fail as fail:
        raise parse_error(fail.code, data, fail.pos, limits) from None
