"""The exact strict-JSON parser of the pure twin: one left-to-right pass
over the text that finds the first rule broken (its code and character
offset) or builds the value, with the algorithm of ``rust/src/core/json.rs``.
The rules are written down in :mod:`decisions._pure.json`, whose ``loads``
runs this parser whenever its fast path fails or flags anything.
"""

from __future__ import annotations

import re
from typing import Any, Final

from ..limits import Limits

__all__ = ["Exact", "Fail", "INF", "INT_MAX", "INT_MIN", "WS", "WS_CHARS", "utf8_len"]


class Fail(Exception):
    """A parse error found by the exact parser: code and character offset."""

    def __init__(self, code: str, pos: int) -> None:
        self.code = code
        self.pos = pos


WS: Final = re.compile(r"[ \t\n\r]*")
WS_CHARS: Final = " \t\n\r"
_SPECIAL: Final = re.compile(r'["\\\x00-\x1f]')
_DIGITS: Final = re.compile(r"[0-9]*")
_HEX4: Final = re.compile(r"[0-9a-fA-F]{4}")
_SIMPLE_ESCAPES: Final = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_VALUE_START: Final = frozenset('{["-0123456789tfn')
_LITERALS: Final = {"t": ("true", True), "f": ("false", False), "n": ("null", None)}
INT_MIN: Final = -(2**63)
INT_MAX: Final = 2**64 - 1
INF: Final = float("inf")


def utf8_len(text: str) -> int:
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


#: ``Exact.value`` opened a container; ``Exact.attach``: the document goes on.
_OPENED: Final = object()
_MORE: Final = object()


class Exact:
    """The exact parser: one pass, explicit stack, same checks as the Rust core."""

    __slots__ = ("text", "n", "pos", "values", "lim")

    def __init__(self, text: str, lim: Limits) -> None:
        self.text = text
        self.n = len(text)
        self.pos = 0
        self.values = 0
        self.lim = lim

    def ws(self) -> None:
        self.pos = WS.match(self.text, self.pos).end()  # type: ignore[union-attr]

    def end(self) -> Fail:
        return Fail("UNEXPECTED_END", self.n)

    def run(self) -> Any:
        # frames: [container, is_object, pending key, key position, count,
        #          position of the first repeated key or -1]
        stack: list[list[Any]] = []
        self.ws()
        if self.pos >= self.n:
            raise Fail("EMPTY_INPUT", self.pos)
        value, attach = self.value, self.attach
        while True:
            done = value(stack)
            if done is not _OPENED:
                done = attach(done, stack)
                if done is not _MORE:
                    return done

    def value(self, stack: list[list[Any]]) -> Any:
        """The value that starts at ``self.pos``, or ``_OPENED`` when it is an
        array or object that has members to come (pushed on ``stack``)."""
        text, lim = self.text, self.lim
        start = self.pos
        if start >= self.n:
            raise self.end()
        c = text[start]
        if c not in _VALUE_START:
            if c == "N" and text.startswith("NaN", start) or c == "I" and text.startswith("Infinity", start):
                raise Fail("NAN_OR_INFINITY", start)
            if c in "+.":
                raise Fail("INVALID_NUMBER", start)
            raise Fail(_classify(text, start, "UNEXPECTED_CHARACTER"), start)
        if stack and not stack[-1][1]:
            top = stack[-1]
            if top[4] >= lim.max_array_items:
                raise Fail("TOO_MANY_ITEMS", start)
            top[4] += 1
        if self.values >= lim.max_values:
            raise Fail("TOO_MANY_VALUES", start)
        self.values += 1
        if c in "{[" and len(stack) >= lim.max_depth:
            raise Fail("DEPTH_EXCEEDED", start)
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
                return _OPENED
            elif not nxt:
                raise self.end()
            else:
                raise Fail(_classify(text, self.pos, "KEY_NOT_STRING"), self.pos)
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
                return _OPENED
        elif c == '"':
            value = self.string(start)
        elif c in _LITERALS:
            word, value = _LITERALS[c]
            for k, expected in enumerate(word):
                got = text[start + k : start + k + 1]
                if not got:
                    raise self.end()
                if got != expected:
                    raise Fail("UNEXPECTED_CHARACTER", start + k)
            self.pos = start + len(word)
        else:
            value = self.number(start)
        return value

    def attach(self, value: Any, stack: list[list[Any]]) -> Any:
        """Attach a complete ``value`` to its container, closing containers as
        they end: the document's value once the last one closed, else ``_MORE``."""
        text = self.text
        while True:
            if not stack:
                self.ws()
                if self.pos < self.n:
                    raise Fail(_classify(text, self.pos, "TRAILING_CONTENT"), self.pos)
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
                        return _MORE
                    if nxt == "}":
                        raise Fail("TRAILING_COMMA", comma)
                    if not nxt:
                        raise self.end()
                    raise Fail(_classify(text, self.pos, "KEY_NOT_STRING"), self.pos)
                if nxt == "}":
                    self.pos += 1
                    if top[5] >= 0:
                        raise Fail("DUPLICATE_KEY", top[5])
                    value = stack.pop()[0]
                    continue
                if not nxt:
                    raise self.end()
                raise Fail(_classify(text, self.pos, "UNEXPECTED_CHARACTER"), self.pos)
            top[0].append(value)
            self.ws()
            nxt = text[self.pos : self.pos + 1]
            if nxt == ",":
                comma = self.pos
                self.pos += 1
                self.ws()
                nxt = text[self.pos : self.pos + 1]
                if nxt == "]":
                    raise Fail("TRAILING_COMMA", comma)
                if not nxt:
                    raise self.end()
                return _MORE
            if nxt == "]":
                self.pos += 1
                value = stack.pop()[0]
                continue
            if not nxt:
                raise self.end()
            raise Fail(_classify(text, self.pos, "UNEXPECTED_CHARACTER"), self.pos)

    def member(self, top: list[Any]) -> None:
        """A key from its opening quote through the colon and whitespace after it."""
        key_pos = self.pos
        if top[4] >= self.lim.max_object_members:
            raise Fail("TOO_MANY_MEMBERS", key_pos)
        top[4] += 1
        top[2] = self.string(key_pos)
        top[3] = key_pos
        self.ws()
        nxt = self.text[self.pos : self.pos + 1]
        if nxt != ":":
            if not nxt:
                raise self.end()
            raise Fail(_classify(self.text, self.pos, "UNEXPECTED_CHARACTER"), self.pos)
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
            decoded += utf8_len(run)
            if decoded > limit:
                raise Fail("STRING_TOO_LONG", quote)
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
                raise Fail("CONTROL_CHARACTER", j)
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
                raise Fail("INVALID_ESCAPE", j)
            first = self.hex4(j)
            nxt = j + 6
            if 0xD800 <= first <= 0xDBFF:
                pair = text[nxt : nxt + 2]
                if not pair or pair == "\\":
                    raise self.end()
                if pair != "\\u":
                    raise Fail("LONE_SURROGATE", j)
                second = self.hex4(nxt)
                if not 0xDC00 <= second <= 0xDFFF:
                    raise Fail("LONE_SURROGATE", j)
                code = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
                nxt += 6
            elif 0xDC00 <= first <= 0xDFFF:
                raise Fail("LONE_SURROGATE", j)
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
                    raise Fail("INVALID_UNICODE_ESCAPE", j)
            raise self.end()
        return int(digits, 16)

    def required_digits(self, start: int) -> None:
        c = self.text[self.pos : self.pos + 1]
        if not c:
            raise self.end()
        if not "0" <= c <= "9":
            raise Fail("INVALID_NUMBER", start)
        self.pos = _DIGITS.match(self.text, self.pos).end()  # type: ignore[union-attr]

    def number(self, start: int) -> int | float:
        text = self.text
        self.pos = start
        if text[start] == "-":
            self.pos += 1
            if text.startswith("Infinity", self.pos) or text.startswith("NaN", self.pos):
                raise Fail("NAN_OR_INFINITY", start)
        c = text[self.pos : self.pos + 1]
        if not c:
            raise self.end()
        if c == "0":
            self.pos += 1
            if "0" <= text[self.pos : self.pos + 1] <= "9":
                raise Fail("LEADING_ZERO", start)
        elif "1" <= c <= "9":
            self.pos = _DIGITS.match(text, self.pos).end()  # type: ignore[union-attr]
        else:
            raise Fail("INVALID_NUMBER", start)
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
            raise Fail("NUMBER_TOO_LONG", start)
        literal = text[start : self.pos]
        if is_float:
            f = float(literal)
            if f in (INF, -INF):
                raise Fail("NUMBER_OUT_OF_RANGE", start)
            return f
        if len(literal) > 21:
            raise Fail("NUMBER_OUT_OF_RANGE", start)
        i = int(literal)
        if not INT_MIN <= i <= INT_MAX:
            raise Fail("NUMBER_OUT_OF_RANGE", start)
        return i
