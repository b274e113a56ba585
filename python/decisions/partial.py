"""Best-effort, incremental parse of a JSON text that is still arriving.

Used by ``StreamAssembler.snapshot()`` (both backends) to show a tool call's
arguments while they stream. Each call to :meth:`PartialJSON.feed` consumes
only the new text; :meth:`PartialJSON.value` builds the view from the parser's
state (shallow copies of the containers still open, the string so far) without
looking at earlier text again. It is for display only: it never raises, keeps
the last good view when the text stops being JSON, and its result is never a
decision (the strict parser and the completeness gate decide that).
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

__all__ = ["PartialJSON"]

_VALUE, _AFTER, _KEY, _COLON, _STRING, _LITERAL, _DONE, _BROKEN = range(8)
_MISSING: Final = object()
_WS: Final = " \t\r\n"
_RUN: Final = re.compile(r'[^"\\]+')
_ESCAPES: Final = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_LITERAL_CHARS: Final = frozenset("0123456789+-.eEtrufalsn")


class PartialJSON:
    """Feed text pieces in order; ask for the best-effort value at any time."""

    __slots__ = ("_mode", "_stack", "_keys", "_pieces", "_is_key", "_escape", "_high", "_literal", "_root")

    def __init__(self) -> None:
        self._mode = _VALUE
        self._stack: list[list[Any] | dict[str, Any]] = []
        self._keys: list[str | None] = []  # per open object: the key awaiting its value
        self._pieces: list[str] = []  # the string being read, decoded
        self._is_key = False
        self._escape: str | None = None  # an escape being read: "\\", "\\u", "\\u12", ...
        self._high: str | None = None  # a high surrogate awaiting its pair
        self._literal = ""
        self._root: Any = _MISSING

    def feed(self, text: str) -> None:
        """Consume the next piece of the JSON text."""
        i, n = 0, len(text)
        while i < n and self._mode < _DONE:
            mode = self._mode
            if mode == _STRING:
                i = self._string(text, i)
                continue
            ch = text[i]
            if mode == _LITERAL:
                if ch in _LITERAL_CHARS:
                    self._literal += ch
                    i += 1
                    continue
                literal = _convert(self._literal)
                self._literal = ""
                if literal is _MISSING:
                    self._mode = _BROKEN
                    return
                self._complete(literal)
                continue
            i += 1
            if ch in _WS:
                continue
            if mode == _VALUE:
                if ch == "{":
                    self._stack.append({})
                    self._keys.append(None)
                    self._mode = _KEY
                elif ch == "[":
                    self._stack.append([])
                    self._keys.append(None)
                    self._mode = _VALUE
                elif ch == '"':
                    self._is_key = False
                    self._mode = _STRING
                elif ch == "]" and self._stack and type(self._stack[-1]) is list and not self._stack[-1]:
                    self._close()
                elif ch in _LITERAL_CHARS:
                    self._literal = ch
                    self._mode = _LITERAL
                else:
                    self._mode = _BROKEN
            elif mode == _KEY:
                if ch == '"':
                    self._is_key = True
                    self._mode = _STRING
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

    def _string(self, text: str, i: int) -> int:
        n = len(text)
        while i < n:
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
                try:
                    code = int(escape[2:], 16)
                except ValueError:
                    self._mode = _BROKEN
                    return n
                self._add(chr(code))
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
            # the closing quote
            value = self._string_value()
            self._pieces = []
            if self._is_key:
                self._keys[-1] = value
                self._mode = _COLON
            else:
                self._complete(value)
            return i
        return i

    def _add(self, piece: str) -> None:
        high = self._high
        if high is not None:
            self._high = None
            if "\udc00" <= piece[0] <= "\udfff":
                pair = (ord(high) - 0xD800) * 0x400 + (ord(piece[0]) - 0xDC00) + 0x10000
                piece = chr(pair) + piece[1:]
            else:
                self._pieces.append(high)
        if len(piece) == 1 and "\ud800" <= piece <= "\udbff":
            self._high = piece
            return
        self._pieces.append(piece)

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
        value = self._stack.pop()
        self._keys.pop()
        self._complete(value)

    def value(self) -> Any:
        """The value so far: open containers hold what is complete, the
        string being written is included as far as it goes; None if nothing
        has started."""
        if self._root is not _MISSING:
            return self._root
        current: Any = _MISSING
        if self._mode == _STRING and not self._is_key:
            current = self._string_value()
        elif self._mode == _LITERAL:
            current = _convert(self._literal)
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
        return None if current is _MISSING else current


def _convert(literal: str) -> Any:
    if literal == "true":
        return True
    if literal == "false":
        return False
    if literal == "null":
        return None
    if literal[:1] in "tfn":
        return _MISSING
    try:
        return json.loads(literal)
    except ValueError:
        return _MISSING
