"""The messages and hints of strict-JSON parse errors, for both backends.

A parser (Rust or pure Python) reports only a code and a character offset;
:func:`parse_error` turns them into a :class:`~decisions.errors.ParseError`
with its line, column and a one-line hint a model can act on. Keeping the
rendering here means both backends produce the same text.
"""

from __future__ import annotations

import json
from typing import Any, Final

from .errors import ERROR_CODES, ParseError
from .limits import DEFAULT_LIMITS, Limits

__all__ = ["parse_error", "str_input_error", "utf16_str"]

_NO_DOC: Final = frozenset({"DOCUMENT_TOO_LARGE", "UTF16_INPUT"})


def _doc(data: Any, code: str) -> str:
    """The text the error refers to (bytes decoded, invalid UTF-8 replaced)."""
    if code in _NO_DOC:
        return ""
    if isinstance(data, str):
        return data.encode("utf-8", "surrogatepass").decode("utf-8", "replace") if code == "INVALID_UTF8" else data
    return bytes(data).decode("utf-8", "replace")


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


def _hint(code: str, doc: str, pos: int, where: str, limits: Limits) -> str:
    char = doc[pos : pos + 1]
    shown = repr(char) if char else "end of input"
    if code == "EMPTY_INPUT":
        return "the input holds no JSON value: send exactly one JSON value"
    if code == "INVALID_UTF8":
        return f"invalid UTF-8 {where}: encode the JSON text as UTF-8"
    if code == "UTF16_INPUT":
        return "the input is UTF-16 or UTF-32: encode the JSON text as UTF-8"
    if code == "BOM":
        return "the input starts with a byte order mark: remove it and start with the JSON value"
    if code == "UNEXPECTED_END":
        return f"the JSON ends too early {where}: close every string, array and object"
    if code == "UNEXPECTED_CHARACTER":
        return f"unexpected character {shown} {where}: check the JSON syntax there"
    if code == "TRAILING_CONTENT":
        return f"extra content {where} after the JSON value: send exactly one JSON value and nothing after it"
    if code == "MARKDOWN_FENCE":
        return f"Markdown code fence {where}: send the bare JSON value, without ``` fences"
    if code == "COMMENT":
        return f"comment {where}: JSON does not allow comments; remove it"
    if code == "SINGLE_QUOTES":
        return f"single quote {where}: JSON strings and keys must use double quotes"
    if code == "TRAILING_COMMA":
        return f"trailing comma {where}: remove the comma before the closing bracket or brace"
    if code == "KEY_NOT_STRING":
        return f'object key {shown} {where} is not a string: write keys in double quotes, like "key": value'
    if code == "DUPLICATE_KEY":
        return f"duplicate key {_key_text(doc, pos)} {where}: each key may appear only once in an object"
    if code == "INVALID_NUMBER":
        return f"invalid number '{_number_text(doc, pos)}' {where}: write numbers like 12, -3.5 or 1e6"
    if code == "LEADING_ZERO":
        return f"number '{_number_text(doc, pos)}' {where} has a leading zero: write 7, not 07, or send a string"
    if code == "NAN_OR_INFINITY":
        word = "-Infinity" if doc.startswith("-I", pos) else "Infinity" if char == "I" else "NaN"
        return f"{word} {where} is not JSON: use null or a string instead"
    if code == "NUMBER_OUT_OF_RANGE":
        return (
            f"number '{_number_text(doc, pos)}' {where} is out of range: integers must fit in 64 bits "
            "and floats in a double; send it as a string"
        )
    if code == "NUMBER_TOO_LONG":
        return f"number {where} is longer than {limits.max_number_length} characters: send it as a string"
    if code == "INVALID_ESCAPE":
        return (
            f"invalid escape '{_snippet(doc, pos, 2)}' {where}: "
            "a backslash inside a JSON string must be written as '\\\\'"
        )
    if code == "INVALID_UNICODE_ESCAPE":
        return f"invalid escape '{_snippet(doc, pos, 6)}' {where}: \\u must be followed by four hex digits"
    if code == "LONE_SURROGATE":
        return (
            f"lone surrogate escape '{_snippet(doc, pos, 6)}' {where}: "
            "\\ud800-\\udfff escapes must come as a high-low pair; write the character itself"
        )
    if code == "CONTROL_CHARACTER":
        escape = f"\\u{ord(char):04x}" if char else "\\n"
        return f"raw control character {shown} in a string {where}: escape it (\\n, \\t or {escape})"
    if code == "DOCUMENT_TOO_LARGE":
        return f"the document is larger than {limits.max_document_bytes} bytes: send a smaller one"
    if code == "DEPTH_EXCEEDED":
        return f"nesting deeper than {limits.max_depth} levels {where}: flatten the structure"
    if code == "STRING_TOO_LONG":
        return f"the string {where} is longer than {limits.max_string_bytes} bytes: shorten it"
    if code == "TOO_MANY_ITEMS":
        return f"more than {limits.max_array_items} items in one array {where}: send fewer items"
    if code == "TOO_MANY_MEMBERS":
        return f"more than {limits.max_object_members} members in one object {where}: send fewer members"
    if code == "TOO_MANY_VALUES":
        return f"more than {limits.max_values} values in the document {where}: send a smaller document"
    return ERROR_CODES[code].meaning


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
