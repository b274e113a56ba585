"""The messages and hints of strict-JSON parse errors, for both backends.

A parser (Rust or pure Python) reports only a code and a character offset;
:func:`parse_error` turns them into a :class:`~decisions.errors.ParseError`
with its line, column and a one-line hint a model can act on. Keeping the
rendering here means both backends produce the same text (the Rust core
writes no hint text). :data:`HINTS` is the one table of the parse layer's
hints: the repair prompt's fix line and the hints of the argument checks
(decide, text calls) are read from it too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final, Mapping

from .errors import ERROR_CODES, ParseError
from .limits import DEFAULT_LIMITS, Limits

__all__ = ["HINTS", "Hint", "fix_text", "parse_error", "str_input_error", "utf16_str"]

_NO_DOC: Final = frozenset({"DOCUMENT_TOO_LARGE", "UTF16_INPUT"})


def _doc(data: Any, code: str) -> str:
    """The text the error refers to (bytes decoded, invalid UTF-8 replaced)."""
    if code in _NO_DOC:
        return ""
    if isinstance(data, str):
        text = str.__str__(data)  # the characters, not what a subclass's own methods say
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace") if code == "INVALID_UTF8" else text
    return bytes(memoryview(data)).decode("utf-8", "replace")  # the bytes held, not a subclass's __bytes__


def _snippet(doc: str, pos: int, length: int) -> str:
    text = doc[pos : pos + length]
    return text if len(text) <= 40 else text[:37] + "..."


def _number_text(doc: str, pos: int) -> str:
    end = pos
    while end < len(doc) and doc[end] in "+-.0123456789eE":
        end += 1
    return _snippet(doc, pos, max(end - pos, 1))


def _key_text(doc: str, pos: int) -> str:
    try:
        key, _ = json.decoder.scanstring(doc, pos + 1)  # type: ignore[attr-defined]
    except (ValueError, IndexError):
        return _snippet(doc, pos, 20)
    return json.dumps(key if len(key) <= 40 else key[:37] + "...", ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class Hint:
    """How to tell a model about one parse-layer code: ``problem`` names what
    is wrong and where (``None`` for codes raised outside the JSON parser,
    whose hint is the fix alone), ``fix`` says what to write instead. Both are
    :meth:`str.format` templates over the fields of :class:`_Fields`; ``fix``
    uses only fields of the text itself (no position, no limit), so the repair
    prompt can render it from the error alone."""

    problem: str | None
    fix: str


#: The one place a parse-layer code's hint is written: the error's ``hint``
#: is ``"{problem}: {fix}"`` and the repair prompt's ``Fix:`` line is ``fix``.
HINTS: Final[Mapping[str, Hint]] = {
    "EMPTY_INPUT": Hint("the input holds no JSON value", "send exactly one JSON value"),
    "INVALID_UTF8": Hint("invalid UTF-8 {where}", "encode the JSON text as UTF-8"),
    "UTF16_INPUT": Hint("the input is UTF-16 or UTF-32", "encode the JSON text as UTF-8"),
    "BOM": Hint("the input starts with a byte order mark", "remove it and start with the JSON value"),
    "UNEXPECTED_END": Hint("the JSON ends too early {where}", "close every string, array and object"),
    "UNEXPECTED_CHARACTER": Hint("unexpected character {shown} {where}", "check the JSON syntax there"),
    "TRAILING_CONTENT": Hint(
        "extra content {where} after the JSON value", "send exactly one JSON value and nothing after it"
    ),
    "MARKDOWN_FENCE": Hint("Markdown code fence {where}", "send the bare JSON value, without ``` fences"),
    "COMMENT": Hint("comment {where}", "JSON does not allow comments; remove it"),
    "SINGLE_QUOTES": Hint("single quote {where}", "JSON strings and keys must use double quotes"),
    "TRAILING_COMMA": Hint("trailing comma {where}", "remove the comma before the closing bracket or brace"),
    "KEY_NOT_STRING": Hint(
        "object key {shown} {where} is not a string", 'write keys in double quotes, like "key": value'
    ),
    "DUPLICATE_KEY": Hint("duplicate key {key} {where}", "each key may appear only once in an object"),
    "INVALID_NUMBER": Hint("invalid number '{number}' {where}", "write numbers like 12, -3.5 or 1e6"),
    "LEADING_ZERO": Hint("number '{number}' {where} has a leading zero", "write 7, not 07, or send a string"),
    "NAN_OR_INFINITY": Hint("{word} {where} is not JSON", "use null or a string instead"),
    "NUMBER_OUT_OF_RANGE": Hint(
        "number '{number}' {where} is out of range",
        "integers must fit in 64 bits and floats in a double; send it as a string",
    ),
    "NUMBER_TOO_LONG": Hint(
        "number {where} is longer than {limits.max_number_length} characters", "send it as a string"
    ),
    "INVALID_ESCAPE": Hint(
        "invalid escape '{escape2}' {where}", "a backslash inside a JSON string must be written as '\\\\'"
    ),
    "INVALID_UNICODE_ESCAPE": Hint("invalid escape '{escape6}' {where}", "\\u must be followed by four hex digits"),
    "LONE_SURROGATE": Hint(
        "lone surrogate escape '{escape6}' {where}",
        "\\ud800-\\udfff escapes must come as a high-low pair; write the character itself",
    ),
    "CONTROL_CHARACTER": Hint("raw control character {shown} in a string {where}", "escape it (\\n, \\t or {control})"),
    "DOCUMENT_TOO_LARGE": Hint("the document is larger than {limits.max_document_bytes} bytes", "send a smaller one"),
    "DEPTH_EXCEEDED": Hint("nesting deeper than {limits.max_depth} levels {where}", "flatten the structure"),
    "STRING_TOO_LONG": Hint("the string {where} is longer than {limits.max_string_bytes} bytes", "shorten it"),
    "TOO_MANY_ITEMS": Hint("more than {limits.max_array_items} items in one array {where}", "send fewer items"),
    "TOO_MANY_MEMBERS": Hint(
        "more than {limits.max_object_members} members in one object {where}", "send fewer members"
    ),
    "TOO_MANY_VALUES": Hint("more than {limits.max_values} values in the document {where}", "send a smaller document"),
    # raised on tool-call arguments (decide, text calls), not by the parser
    "ARGUMENTS_NOT_OBJECT": Hint(None, 'arguments must be a JSON object such as {{"path": "a.txt"}}'),
    "DOUBLE_ENCODED_JSON": Hint(None, "send the arguments object itself, not a string containing it"),
}


class _Fields(dict[str, Any]):
    """The template fields at ``pos`` of ``doc``, each computed when a
    template first names it."""

    def __init__(self, doc: str, pos: int, where: str, limits: Limits) -> None:
        super().__init__(where=where, limits=limits)
        self.doc = doc
        self.pos = pos

    def __missing__(self, name: str) -> Any:
        doc, pos = self.doc, self.pos
        char = doc[pos : pos + 1]
        if name == "shown":
            value: Any = repr(char) if char else "end of input"
        elif name == "key":
            value = _key_text(doc, pos)
        elif name == "number":
            value = _number_text(doc, pos)
        elif name == "escape2":
            value = _snippet(doc, pos, 2)
        elif name == "escape6":
            value = _snippet(doc, pos, 6)
        elif name == "control":
            value = f"\\u{ord(char):04x}" if char else "\\n"
        elif name == "word":
            value = "-Infinity" if doc.startswith("-I", pos) else "Infinity" if char == "I" else "NaN"
        else:
            raise KeyError(name)
        self[name] = value
        return value


def fix_text(code: str, doc: str = "", pos: int = 0) -> str | None:
    """The fix the table gives for ``code`` (its hint's part after the
    colon), for ``pos`` of ``doc``; ``None`` for a code it has no row for."""
    row = HINTS.get(code)
    if row is None:
        return None
    return row.fix.format_map(_Fields(doc, pos, "", DEFAULT_LIMITS))


def _hint(code: str, doc: str, pos: int, where: str, limits: Limits) -> str:
    row = HINTS.get(code)
    if row is None:
        return ERROR_CODES[code].meaning
    fields = _Fields(doc, pos, where, limits)
    fix = row.fix.format_map(fields)
    return fix if row.problem is None else f"{row.problem.format_map(fields)}: {fix}"


def parse_error(code: str, data: Any, pos: int, limits: Limits | None) -> ParseError:
    """The :class:`ParseError` for ``code`` at character offset ``pos`` of ``data``."""
    doc = _doc(data, code)
    lineno = doc.count("\n", 0, pos) + 1
    colno = pos - doc.rfind("\n", 0, pos)
    where = f"at line {lineno} column {colno}"
    hint = _hint(code, doc, pos, where, limits if limits is not None else DEFAULT_LIMITS)
    return ParseError(code, doc=doc, pos=pos, lineno=lineno, colno=colno, hint=hint)


def utf16_str(text: str) -> bool:
    """Whether the UTF-8 form of ``text`` has a NUL among its first two bytes
    (the UTF-16/32 test, which for bytes is ``0 in data[:2]`` with two bytes)."""
    return len(text) >= 2 and (text[0] == "\x00" or (text[1] == "\x00" and text[0] < "\x80"))


def str_input_error(text: str, limits: Limits | None) -> ParseError:
    """The error for a ``str`` holding lone surrogates (it has no UTF-8 form).

    The checks run in the usual order: size (a surrogate counts three bytes),
    UTF-16/32, BOM, then ``INVALID_UTF8`` at the first surrogate.
    """
    lim = limits if limits is not None else DEFAULT_LIMITS
    if len(text.encode("utf-8", "surrogatepass")) > lim.max_document_bytes:
        return parse_error("DOCUMENT_TOO_LARGE", text, 0, limits)
    if utf16_str(text):
        return parse_error("UTF16_INPUT", text, 0, limits)
    if text.startswith("\ufeff"):
        return parse_error("BOM", text, 0, limits)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return parse_error("INVALID_UTF8", text, exc.start, limits)
    raise ValueError("the text is valid UTF-8")  # pragma: no cover - callers ensure it is not
