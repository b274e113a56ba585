"""Best-effort, incremental parse of a JSON text that is still arriving.

Used by ``StreamAssembler.snapshot()`` (both backends) to show a tool call's
arguments while they stream. Each call to :meth:`PartialJSON.feed` consumes
only the new text, in runs (a string's or a number's characters are taken a
run at a time, never re-read); :meth:`PartialJSON.value` builds the view from
the parser's state (shallow copies of the containers still open, the string
or number so far) without looking at earlier text again, and returns the
same object while nothing new was fed. So a snapshot costs the new text plus
one C-level copy of the open containers' entries and the open string, which
the limits bound.

The :class:`~decisions.limits.Limits` apply as they do to the complete text
(``decisions.loads``): once the text so far already breaks one,
:attr:`PartialJSON.failure` holds the code and character offset the complete
text gives if it goes on as valid JSON (``DOCUMENT_TOO_LARGE``,
``TOO_MANY_ITEMS``, ``TOO_MANY_VALUES``, ``DEPTH_EXCEEDED``,
``TOO_MANY_MEMBERS``, ``STRING_TOO_LONG``, ``NUMBER_TOO_LONG``) and nothing
more is read. Syntax errors are not reported here: the view stops at the last
good value (the strict parser and the completeness gate decide). What ``loads``
refuses beyond syntax stops it too (a lone surrogate, a control character in a
string, a number out of range; a repeated key freezes it, and limits are
still checked up to the close of its object, where ``loads`` refuses it), so
the view never holds a value ``loads`` would not give. The result is for display only and is never a
decision.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Final

from .._json_errors import parse_error
from ..errors import ParseError
from ..limits import DEFAULT_LIMITS, Limits

__all__ = ["PartialJSON"]

_VALUE, _AFTER, _KEY, _COLON, _STRING, _NUMBER, _WORD, _DONE, _BROKEN, _FAILED = range(10)
_MISSING: Final = object()
_WS: Final = re.compile(r"[ \t\r\n]+")
#: a run of string characters: no quote, backslash or control character
_RUN: Final = re.compile(r'[^"\\\x00-\x1f]+')
_HEX4: Final = re.compile(r"[0-9a-fA-F]{4}")
#: the integers ``loads`` reads (beyond them: ``NUMBER_OUT_OF_RANGE``)
_INT_MIN: Final = -(2**63)
_INT_MAX: Final = 2**64 - 1
_NUMBER_RUN: Final = re.compile(r"[0-9+\-.eE]+")
#: a complete number, and anything that can still become one
_NUMBER_TEXT: Final = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_NUMBER_PREFIX: Final = re.compile(r"-?(?:(?:0|[1-9][0-9]*)(?:\.[0-9]*|(?:\.[0-9]+)?[eE][+-]?[0-9]*)?)?")
_ESCAPES: Final = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_WORDS: Final = {"t": ("true", True), "f": ("false", False), "n": ("null", None)}


def _utf8_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


class PartialJSON:
    """Feed text pieces in order; ask for the best-effort value at any time."""

    __slots__ = (
        "_limits",
        "_mode",
        "_stack",
        "_keys",
        "_counts",
        "_pieces",
        "_is_key",
        "_escape",
        "_high",
        "_literal",
        "_literal_len",
        "_start",
        "_string_bytes",
        "_values",
        "_offset",
        "_bytes",
        "_root",
        "_view",
        "_error",
        "_repeat",
        "_frozen",
        "failure",
    )

    def __init__(self, limits: Limits = DEFAULT_LIMITS) -> None:
        self._limits = limits
        self._mode = _VALUE
        self._stack: list[list[Any] | dict[str, Any]] = []
        self._keys: list[str | None] = []  # per open object: the key awaiting its value
        self._counts: list[int] = []  # per open container: items, or members (keys read)
        self._pieces: list[str] = []  # the string being read, decoded
        self._is_key = False
        self._escape: str | None = None  # an escape being read: "\\", "\\u", "\\u12", ...
        self._high: str | None = None  # a high surrogate awaiting its pair
        self._literal: list[str] = []  # the number or word being read, in runs
        self._literal_len = 0
        self._start = 0  # offset of the open string's quote or the open literal's first character
        self._string_bytes = 0  # UTF-8 bytes of the open string, decoded
        self._values = 0
        self._offset = 0  # characters fed before the current piece
        self._bytes = 0  # UTF-8 bytes fed
        self._root: Any = _MISSING
        self._view: Any = _MISSING  # the last view, while nothing new was fed
        self._error: ParseError | None = None
        # the depth of the object that repeated a key (``loads`` refuses it when
        # that object closes, limits broken before that come first), and the
        # view as it was before the repeat, shown from then on
        self._repeat: int | None = None
        self._frozen: Any = None
        #: ``(code, offset)`` of the first limit the text breaks, else None
        self.failure: tuple[str, int] | None = None

    def _fail(self, code: str, pos: int) -> None:
        self.failure = (code, pos)
        self._mode = _FAILED

    def settled(self, size: int) -> bool:
        """Whether :attr:`failure` is final for a text of ``size`` UTF-8 bytes
        (only ``DOCUMENT_TOO_LARGE`` can replace it, once the text is past
        ``max_document_bytes``): then the text need not be fed any more."""
        failure = self.failure
        return failure is not None and (failure[0] == "DOCUMENT_TOO_LARGE" or size <= self._limits.max_document_bytes)

    def error(self, doc: str, path: str | None = None) -> ParseError | None:
        """The :class:`~decisions.errors.ParseError` of :attr:`failure` (None
        without one); ``doc`` is the text fed so far, ``path`` names it. The
        first call builds it; later calls give the same error (its traceback cleared)."""
        if self.failure is None:
            return None
        if self._error is None:  # built once: later calls cost nothing, whatever was fed since
            code, pos = self.failure
            found = parse_error(code, doc, pos, self._limits)
            self._error = ParseError(
                code,
                found.message,
                doc=found.doc,
                pos=pos,
                lineno=found.lineno,
                colno=found.colno,
                hint=found.hint,
                path=path,
            )
        # raised again by every later snapshot: a traceback kept from the last
        # raise would grow by one entry each time
        return self._error.with_traceback(None)

    def feed(self, text: str) -> None:
        """Consume the next piece of the JSON text."""
        failure = self.failure
        if not text or (failure is not None and failure[0] == "DOCUMENT_TOO_LARGE"):
            return
        self._view = _MISSING
        self._bytes += _utf8_len(text)
        if self._bytes > self._limits.max_document_bytes:
            # checked before anything else by ``loads``: it replaces an earlier failure
            self._error = None
            self._fail("DOCUMENT_TOO_LARGE", 0)
            return
        if failure is not None:  # only the size is still counted
            self._offset += len(text)
            return
        try:
            self._feed(text)
        finally:
            self._offset += len(text)

    def _feed(self, text: str) -> None:
        i, n = 0, len(text)
        while i < n and self._mode < _DONE:
            mode = self._mode
            if mode == _STRING:
                i = self._string(text, i)
                continue
            if mode == _NUMBER:
                run = _NUMBER_RUN.match(text, i)
                if run is not None:
                    self._add_number(run.group())
                    i = run.end()
                    continue
                self._end_literal(_number(self._literal_text()))
                continue
            if mode == _WORD:
                self._add_word(text[i])
                i += 1
                continue
            ws = _WS.match(text, i)
            if ws is not None:
                i = ws.end()
                continue
            ch = text[i]
            pos = self._offset + i
            i += 1
            if mode == _VALUE:
                if ch == "]" and self._stack and type(self._stack[-1]) is list and not self._stack[-1]:
                    self._close()
                elif ch in '{["-0123456789tfn':
                    self._value_start(ch, pos)
                else:
                    self._mode = _BROKEN
            elif mode == _KEY:
                if ch == '"':
                    if self._counts[-1] >= self._limits.max_object_members:
                        self._fail("TOO_MANY_MEMBERS", pos)
                        return
                    self._counts[-1] += 1
                    self._open_string(True, pos)
                elif ch == "}" and not self._stack[-1]:
                    self._close()
                else:
                    self._mode = _BROKEN
            elif mode == _COLON:
                self._mode = _VALUE if ch == ":" else _BROKEN
            else:  # _AFTER: a comma or the end of the open container
                top = self._stack[-1]
                if ch == ",":
                    self._mode = _KEY if type(top) is dict else _VALUE
                elif ch == ("}" if type(top) is dict else "]"):
                    self._close()
                else:
                    self._mode = _BROKEN

    def _value_start(self, ch: str, pos: int) -> None:
        """A value starts at ``pos``: the limits ``loads`` checks there, in its order."""
        limits = self._limits
        if self._counts and type(self._stack[-1]) is list:
            if self._counts[-1] >= limits.max_array_items:
                return self._fail("TOO_MANY_ITEMS", pos)
            self._counts[-1] += 1
        if self._values >= limits.max_values:
            return self._fail("TOO_MANY_VALUES", pos)
        self._values += 1
        if ch == "{" or ch == "[":
            if len(self._stack) >= limits.max_depth:
                return self._fail("DEPTH_EXCEEDED", pos)
            self._stack.append({} if ch == "{" else [])
            self._keys.append(None)
            self._counts.append(0)
            self._mode = _KEY if ch == "{" else _VALUE
        elif ch == '"':
            self._open_string(False, pos)
        else:
            self._start = pos
            self._literal = [ch]
            self._literal_len = 1
            if ch in _WORDS:
                self._mode = _WORD
                self._add_word("")
            else:
                self._mode = _NUMBER
                self._add_number("")

    def _add_word(self, ch: str) -> None:
        literal = self._literal[0] + ch
        word, value = _WORDS[literal[0]]
        if not word.startswith(literal):
            self._mode = _BROKEN
            return
        self._literal[0] = literal
        if literal == word:
            self._end_literal(value)

    def _add_number(self, run: str) -> None:
        if run:
            self._literal.append(run)
            self._literal_len += len(run)
        if self._literal_len > self._limits.max_number_length:
            # crossed once: the literal is bounded by the limit plus one run
            if _NUMBER_PREFIX.fullmatch(self._literal_text()) is not None:
                self._fail("NUMBER_TOO_LONG", self._start)
            else:
                self._mode = _BROKEN

    def _literal_text(self) -> str:
        literal = self._literal
        if len(literal) > 1:
            literal[:] = ["".join(literal)]
        return literal[0]

    def _end_literal(self, value: Any) -> None:
        self._literal = []
        self._literal_len = 0
        if value is _MISSING:
            self._mode = _BROKEN
        else:
            self._complete(value)

    def _open_string(self, is_key: bool, pos: int) -> None:
        self._is_key = is_key
        self._start = pos
        self._string_bytes = 0
        self._mode = _STRING

    def _string(self, text: str, i: int) -> int:
        n = len(text)
        while i < n and self._mode == _STRING:
            escape = self._escape
            if escape is not None:
                ch = text[i]
                i += 1
                if escape == "\\":
                    if ch == "u":
                        self._escape = "\\u"
                        continue
                    decoded = _ESCAPES.get(ch)
                    if decoded is None:
                        self._mode = _BROKEN
                        return n
                    self._escape = None
                    self._add(decoded)
                    continue
                escape += ch
                if len(escape) < 6:
                    self._escape = escape
                    continue
                self._escape = None
                if _HEX4.fullmatch(escape, 2) is None:  # ``int(..., 16)`` would take " 1_2", "+12", "-12"
                    self._mode = _BROKEN
                    return n
                self._add(chr(int(escape[2:], 16)))
                continue
            run = _RUN.match(text, i)
            if run is not None:
                self._add(run.group())
                i = run.end()
                continue
            ch = text[i]
            i += 1
            if ch == "\\":
                self._escape = "\\"
                continue
            if ch != '"' or self._high is not None:  # a control character, or a lone surrogate
                self._mode = _BROKEN
                return n
            value = self._string_value()
            self._pieces = []
            if self._is_key:
                if self._repeat is None and value in self._stack[-1]:
                    self._frozen = self.value()
                    self._repeat = len(self._stack)
                self._keys[-1] = value
                self._mode = _COLON
            else:
                self._complete(value)
            return i
        return i

    def _add(self, piece: str) -> None:
        """Append decoded string text; a surrogate escape that is not one half
        of a pair (``loads``: ``LONE_SURROGATE``) breaks the view there."""
        high = self._high
        if high is not None:
            self._high = None
            if not "\udc00" <= piece[0] <= "\udfff":
                self._mode = _BROKEN
                return
            pair = (ord(high) - 0xD800) * 0x400 + (ord(piece[0]) - 0xDC00) + 0x10000
            piece = chr(pair) + piece[1:]
        elif len(piece) == 1 and "\udc00" <= piece <= "\udfff":
            self._mode = _BROKEN
            return
        if len(piece) == 1 and "\ud800" <= piece <= "\udbff":
            self._high = piece
            return
        self._pieces.append(piece)
        self._string_bytes += _utf8_len(piece)
        if self._string_bytes > self._limits.max_string_bytes:
            self._fail("STRING_TOO_LONG", self._start)

    def _string_value(self) -> str:
        pieces = self._pieces
        text = pieces[0] if len(pieces) == 1 else "".join(pieces)
        if len(pieces) > 1:
            pieces[:] = [text]
        return text + self._high if self._high is not None else text

    def _complete(self, value: Any) -> None:
        """A value ended: attach it to the open container (or finish)."""
        if not self._stack:
            self._root = value
            self._mode = _DONE
            return
        top = self._stack[-1]
        if type(top) is dict:
            top[self._keys[-1]] = value  # type: ignore[index]
            self._keys[-1] = None
        else:
            top.append(value)  # type: ignore[union-attr]
        self._mode = _AFTER

    def _close(self) -> None:
        if self._repeat == len(self._stack):  # the object with a repeated key closes: ``DUPLICATE_KEY``
            self._mode = _BROKEN
            return
        value = self._stack.pop()
        self._keys.pop()
        self._counts.pop()
        self._complete(value)

    def value(self) -> Any:
        """The value so far: open containers hold what is complete, the
        string or number being written is included as far as it goes; None if
        nothing has started. The same object until more text is fed."""
        if self._root is not _MISSING:
            return self._root
        if self._repeat is not None:
            return self._frozen
        if self._view is not _MISSING:
            return self._view
        current: Any = _MISSING
        if self._mode == _STRING and not self._is_key:
            current = self._string_value()
        elif self._mode == _NUMBER:
            current = _number(self._literal_text())
        for depth in range(len(self._stack) - 1, -1, -1):
            container = self._stack[depth]
            if type(container) is dict:
                copy: Any = dict(container)
                key = self._keys[depth]
                if key is not None and current is not _MISSING:
                    copy[key] = current
            else:
                copy = list(container)
                if current is not _MISSING:
                    copy.append(current)
            current = copy
        self._view = None if current is _MISSING else current
        return self._view


def _number(literal: str) -> Any:
    """The value of a complete number literal, else ``_MISSING`` (also for
    one ``loads`` refuses as ``NUMBER_OUT_OF_RANGE``: an integer beyond 64
    bits, a float that overflows)."""
    if _NUMBER_TEXT.fullmatch(literal) is None:
        return _MISSING
    try:
        value = json.loads(literal)
    except ValueError:
        return _MISSING
    if type(value) is int:
        return value if _INT_MIN <= value <= _INT_MAX else _MISSING
    return value if math.isfinite(value) else _MISSING
