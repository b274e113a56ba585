"""The pure parser's other entry points, at their edges: ``parse_text`` (a
caller that wants only the code and offset of an error) says what ``loads``
says, and ``plain`` reads a str or bytes-like value by its characters or
bytes, never by a subclass's own methods."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from decisions import DEFAULT_LIMITS, Limits, ParseError
from decisions._pure.json import loads, parse_text, plain
from decisions._pure.jsonexact import Fail

SMALL = dataclasses.replace(DEFAULT_LIMITS, max_document_bytes=16, max_depth=2, max_string_bytes=8)


def by_loads(text: str, lim: Limits) -> Any:
    try:
        return "value", loads(text, limits=lim)
    except ParseError as error:
        return "error", error.code, error.pos


def by_parse_text(text: str, lim: Limits) -> Any:
    try:
        return "value", parse_text(text, lim)
    except Fail as fail:
        return "error", fail.code, fail.pos


TEXTS = [
    '{"a": [1, 2.5, "x"]}',
    " [true, false, null] ",
    '{"a": 1, "a": 2}',
    "[[[1]]]",
    '"' + "x" * 9 + '"',
    "1" * 17,
    "[1,]",
    "",
    "\x00[]",
    " \x00",
    "\ufeff[]",
    '"\ud800"',
    '["\\ud800"]',
    '"Zürich"',
    '"' + "ü" * 5 + '"',
    "[" + "1," * 10 + "1]",
    "NaN",
    "\u00e9",
]


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("lim", [DEFAULT_LIMITS, SMALL], ids=["default", "small"])
def test_parse_text_says_what_loads_says(text: str, lim: Limits) -> None:
    assert by_parse_text(text, lim) == by_loads(text, lim)


class _Str(str):
    def __str__(self) -> str:
        return "[1]"

    def find(self, *args: Any) -> int:
        return -1

    def __eq__(self, other: object) -> bool:
        return True

    def __hash__(self) -> int:
        return 0


class _Bytes(bytes):
    def __bytes__(self) -> bytes:
        return b"[1]"


def test_plain_reads_the_value_itself() -> None:
    assert type(plain(_Str("[2]"))) is str and plain(_Str("[2]")) == "[2]"
    assert type(plain(_Bytes(b"[2]"))) is bytes and plain(_Bytes(b"[2]")) == b"[2]"
    assert type(plain(bytearray(b"[3]"))) is bytes and plain(bytearray(b"[3]")) == b"[3]"
    assert type(plain(memoryview(b"x[4]")[1:])) is bytes and plain(memoryview(b"x[4]")[1:]) == b"[4]"
    same = "[5]"
    assert plain(same) is same and plain(b"[5]") == b"[5]"
    for other in (None, 5, [1], {"a": 1}):
        assert plain(other) is other
    assert loads(_Str("[2]")) == [2] and loads(_Bytes(b"[2]")) == [2]
    at_limit = dataclasses.replace(DEFAULT_LIMITS, max_document_bytes=7)
    assert loads(_Str("[1,2,3]"), limits=at_limit) == [1, 2, 3]  # exactly the limit
    assert loads(_Str('["éa"]'), limits=at_limit) == ["éa"]  # 6 characters, 7 bytes


class _Bytes2(bytearray):
    pass


TINY = dataclasses.replace(DEFAULT_LIMITS, max_document_bytes=7)

# (input, code, character offset): every pre-check of ``loads`` for each
# kind of input, under a document limit of 7 bytes.
PRE_CHECKS: list[tuple[Any, str, int]] = [
    ("[1,2,3,4]", "DOCUMENT_TOO_LARGE", 0),
    ("\x00[", "UTF16_INPUT", 0),
    ("[\x00", "UTF16_INPUT", 0),
    ("é" * 8, "DOCUMENT_TOO_LARGE", 0),  # too many characters
    ('"éééé"', "DOCUMENT_TOO_LARGE", 0),  # 6 characters, 10 bytes
    ("\x00é", "UTF16_INPUT", 0),
    ("é\x00", "UNEXPECTED_CHARACTER", 0),  # no UTF-16 input: é is two bytes, the NUL not among the first two
    ("\ufeff[1]", "BOM", 0),
    ('["\ud800"]', "INVALID_UTF8", 2),
    ('["\ud800\ud800"]', "DOCUMENT_TOO_LARGE", 0),  # each surrogate counted as 3 bytes
    (_Str("[1,2,3,4]"), "DOCUMENT_TOO_LARGE", 0),
    (_Str("\x00["), "UTF16_INPUT", 0),
    (_Str("\ufeff1"), "BOM", 0),
    (b"[1,2,3,4]", "DOCUMENT_TOO_LARGE", 0),
    (b"\xfe\xff[]", "UTF16_INPUT", 0),
    (b"\xff\xfe[]", "UTF16_INPUT", 0),
    (b"[\x00", "UTF16_INPUT", 0),
    (b"\xef\xbb\xbf[]", "BOM", 0),
    (b'["\xc3\xa9\xff"]', "INVALID_UTF8", 3),
    (_Bytes(b"\xef\xbb\xbf1"), "BOM", 0),
    (bytearray(b"[1,2,3,4]"), "DOCUMENT_TOO_LARGE", 0),
    (_Bytes2(b"\x00["), "UTF16_INPUT", 0),
    (memoryview(b"x\xef\xbb\xbf1")[1:], "BOM", 0),
    (memoryview(b'["\xff"]'), "INVALID_UTF8", 2),
]


@pytest.mark.parametrize(("data", "code", "pos"), PRE_CHECKS)
def test_pre_checks_for_each_kind_of_input(data: Any, code: str, pos: int) -> None:
    """The code, the offset, and the error itself (its text and hint, which
    name the limits given) for each kind of input, as ``parse_error`` writes
    it of the input's characters."""
    from decisions._json_errors import parse_error

    with pytest.raises(ParseError) as caught:
        loads(data, limits=TINY)
    error = caught.value
    assert (error.code, error.pos) == (code, pos)
    expected = parse_error(code, plain(data) if isinstance(data, str) else bytes(memoryview(data)), pos, TINY)
    assert (str(error), error.hint, error.doc, error.lineno, error.colno) == (
        str(expected),
        expected.hint,
        expected.doc,
        expected.lineno,
        expected.colno,
    )


# (document, outcome): escapes of surrogates after runs of backslashes. An
# even run before ``u`` is escaped backslashes and the letters ``ud800``; an
# odd run ends in the escape itself. Each kind of escape is read on its own,
# before and after the others.
SURROGATES: list[tuple[str, Any]] = [
    ('["\\\\ud800"]', ["\\ud800"]),
    ('["\\\\\\\\ud800"]', ["\\\\ud800"]),
    ('["\\\\\\ud800"]', ("LONE_SURROGATE", 4)),
    ('["\\ud800"]', ("LONE_SURROGATE", 2)),
    ('["\\\\ud800", "\\ud800"]', ("LONE_SURROGATE", 13)),
    ('["\\\\ud800", "\\ud83d\\ude00"]', ["\\ud800", "\U0001f600"]),
    ('["\\ud83d\\ude00", "\\\\udc00", "\\udc00"]', ("LONE_SURROGATE", 29)),
    ('["\\ud83d\\ude00", "\\udc00"]', ("LONE_SURROGATE", 18)),
    ('["\\ud83d\\\\ude00"]', ("LONE_SURROGATE", 2)),
    ('["a\\\\\\\\\\\\ud800b"]', ["a\\\\\\ud800b"]),
    ('["\\\\\\\\\\\\\\udfff"]', ("LONE_SURROGATE", 8)),
    ('["\\ud800\\ud800\\udc00"]', ("LONE_SURROGATE", 2)),
]


@pytest.mark.parametrize(("text", "expected"), SURROGATES)
def test_surrogate_escapes_after_backslashes(impl: Any, text: str, expected: Any) -> None:
    try:
        found: Any = impl.loads(text)
    except ParseError as error:
        found = (error.code, error.pos)
    assert found == expected


def test_a_lone_surrogate_under_limits_above_the_defaults(impl: Any) -> None:
    """A str with a lone surrogate, longer than the default document limit
    but within the one given, is judged under the limits given: invalid
    UTF-8 at the surrogate, not too large."""
    size = DEFAULT_LIMITS.max_document_bytes + 1
    text = '"' + "a" * size + '\ud800"'
    with pytest.raises(ParseError) as caught:
        impl.loads(text, limits=Limits(max_document_bytes=size + 16))
    assert (caught.value.code, caught.value.pos) == ("INVALID_UTF8", size + 1)
