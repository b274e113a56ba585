"""``loads`` at the edges of the pure twin's fast path, with the results written
out on both backends (the mutation run sees the pure backend alone): what the
stdlib scanner's hooks must reject, the pre-checks' codes and hints for each
input type, and, on the pure backend, which documents the fast path answers
without the exact parser (a document within the limits never needs it)."""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import pytest

from decisions import DEFAULT_LIMITS, Limits, ParseError
from decisions._pure import json as pure_json
from json_values import same_value


@pytest.fixture(autouse=True)
def cold_scanners(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test builds its scanner plans afresh: a plan built at import or
    cached by an earlier test (or by the process a mutation run forks from)
    would hide what building one does."""
    default = pure_json._plan(DEFAULT_LIMITS)
    monkeypatch.setattr(pure_json, "_plans", {})
    monkeypatch.setattr(pure_json, "_DEFAULT_PLAN", default)
    monkeypatch.setattr(pure_json, "_last", (None, default))


@pytest.fixture
def exact_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts the pure twin hands to its exact parser."""
    calls: list[str] = []
    original = pure_json._exact

    def spy(text: str, lim: Limits) -> Any:
        calls.append(text)
        return original(text, lim)

    monkeypatch.setattr(pure_json, "_exact", spy)
    return calls


def outcome(impl: ModuleType, data: str | bytes | bytearray | memoryview, limits: Limits | None = None) -> Any:
    """The value, or (code, pos) of the ParseError."""
    try:
        return impl.loads(data, limits=limits)
    except ParseError as err:
        return (err.code, err.pos)


# (document, limits, outcome): what the scanner's hooks and the checks after it
# must turn away, and the values at their edges.
EDGES: list[tuple[str, dict[str, int], Any]] = [
    ('{"a": 1, "a": 2}', {}, ("DUPLICATE_KEY", 9)),
    ("{}", {}, {}),
    ('{"a": {"b": []}}', {}, {"a": {"b": []}}),
    ('{"a": 1, "b": 2}', {"max_object_members": 1}, ("TOO_MANY_MEMBERS", 9)),
    ('"a\tb"', {}, ("CONTROL_CHARACTER", 2)),
    ("[NaN]", {}, ("NAN_OR_INFINITY", 1)),
    ("[-Infinity]", {}, ("NAN_OR_INFINITY", 1)),
    ("[1.5, -2e3]", {}, [1.5, -2000.0]),
    ("[1e400]", {}, ("NUMBER_OUT_OF_RANGE", 1)),
    ("[-1e400]", {}, ("NUMBER_OUT_OF_RANGE", 1)),
    ("[9223372036854775807, -9223372036854775808]", {}, [2**63 - 1, -(2**63)]),
    ("[18446744073709551615]", {}, [2**64 - 1]),
    ("[18446744073709551616]", {}, ("NUMBER_OUT_OF_RANGE", 1)),  # 20 characters
    ("[-9223372036854775809]", {}, ("NUMBER_OUT_OF_RANGE", 1)),
    ("[12345678901234567890123]", {}, ("NUMBER_OUT_OF_RANGE", 1)),
    ("[999]", {"max_number_length": 3}, [999]),
    ("[1000]", {"max_number_length": 3}, ("NUMBER_TOO_LONG", 1)),
    ("[123456]", {"max_number_length": 5}, ("NUMBER_TOO_LONG", 1)),
    ("123456789012345678", {"max_number_length": 18}, 123456789012345678),
    ("1234567890123456789", {"max_number_length": 18}, ("NUMBER_TOO_LONG", 0)),
    ("[1.25]", {"max_number_length": 3}, ("NUMBER_TOO_LONG", 1)),
    # a surrogate escape pair must be adjacent: anything between leaves both alone
    ('"\\ud800x\\udc00"', {}, ("LONE_SURROGATE", 1)),
    ('["\\ud83d\\ude00", "\\udc00"]', {}, ("LONE_SURROGATE", 18)),
    ('"\\ud83d\\ude00\\ud83d\\ude01"', {}, "\U0001f600\U0001f601"),
    # a scalar when the string check is on (the document is longer than a string may be)
    ("12345", {"max_string_bytes": 1}, 12345),
    ("[true, null]", {"max_string_bytes": 1}, [True, None]),
]


@pytest.mark.parametrize(("text", "fields", "expected"), EDGES)
def test_values_and_errors_at_the_scanners_edges(
    impl: ModuleType, text: str, fields: dict[str, int], expected: Any
) -> None:
    limits = Limits(**fields) if fields else None
    for data in (text, text.encode()):
        got = outcome(impl, data, limits)
        assert got == expected if isinstance(expected, tuple) else same_value(got, expected), (data, got)


# (document, limits): each within its limits, at an edge of a count, a length
# or a check the fast path makes, or with whitespace, escapes or commas where
# its shortcuts must not misread them.
WITHIN: list[tuple[str, dict[str, int]]] = [
    (" [1]", {}),
    ("\t\n1", {}),
    ("[1] \r\n", {}),
    ('"\\u00e9\\u20ac"', {}),
    ('"\\ud83d\\ude00"', {}),
    ('["\\ud83d\\ude00", "\\ud83d\\ude01", "\\u0041"]', {}),
    ('{"a": 1}', {}),
    ('{"a": 1}', {"max_object_members": 1}),
    ("[-9223372036854775808, 18446744073709551615]", {}),
    ("[12345678901234567890]", {"max_number_length": 20}),
    ("[1.5]", {"max_number_length": 3}),
    ("[12]", {"max_number_length": 3}),
    # more brackets and commas in the text than in the value: the walk counts the value
    ('["a,b", 1]', {"max_values": 3}),
    ('["a,b", 1]', {"max_array_items": 2}),
    ('[["["]]', {"max_depth": 2}),
    ('{"a": ["{", 1]}', {"max_depth": 2}),
    # longer than a string may be, each string within it
    ('"abcd"', {"max_string_bytes": 4}),
    ('"\u00e9\u00e9"', {"max_string_bytes": 4}),
    ("12345", {"max_string_bytes": 4}),
    ('{"ab": 1}', {"max_string_bytes": 4}),
    ('{"abcd": "\u00e9"}', {"max_string_bytes": 4}),
    ('[1, 2, "abcd", ["x"]]', {"max_string_bytes": 4}),
]


@pytest.mark.parametrize(("text", "fields"), WITHIN)
def test_documents_within_the_limits_are_read(impl: ModuleType, text: str, fields: dict[str, int]) -> None:
    limits = Limits(**fields) if fields else None
    assert same_value(impl.loads(text, limits=limits), json.loads(text))
    assert same_value(impl.loads(text.encode(), limits=limits), json.loads(text))


@pytest.mark.parametrize(("text", "fields"), WITHIN)
def test_the_fast_path_reads_them_alone(exact_calls: list[str], text: str, fields: dict[str, int]) -> None:
    """The pure twin's fast path answers a document within the limits itself:
    the exact parser (many times slower) runs only for what breaks a rule."""
    limits = Limits(**fields) if fields else None
    pure_json.loads(text, limits=limits)
    assert exact_calls == []
    with pytest.raises(ParseError):
        pure_json.loads(text + ",", limits=limits)
    assert exact_calls == [text + ","]


@pytest.mark.parametrize(
    ("data", "code", "pos"),
    [
        (b"\xfe\xff\x00[\x00]", "UTF16_INPUT", 0),
        (b"\xfe\xff", "UTF16_INPUT", 0),
        (b"\xff\xfe", "UTF16_INPUT", 0),
        (b"1\x00", "UTF16_INPUT", 0),
        (b"\x001", "UTF16_INPUT", 0),
        (b"1", 1, None),
        (b"\xef\xbb\xbf", "BOM", 0),
    ],
)
def test_the_encoding_checks_on_short_input(impl: ModuleType, data: bytes, code: Any, pos: int | None) -> None:
    for kind in (bytes, bytearray, memoryview):
        assert outcome(impl, kind(data)) == (code if pos is None else (code, pos))


def test_a_document_too_large_names_the_limit_for_each_input_type(impl: ModuleType) -> None:
    limits = Limits(max_document_bytes=4)
    for data in ("[123]", b"[123]", bytearray(b"[123]"), memoryview(b"[123]"), '"\ud800"', '"\u00e9\u00e9"'):
        with pytest.raises(ParseError) as info:
            impl.loads(data, limits=limits)
        err = info.value
        assert (err.code, err.pos, err.doc) == ("DOCUMENT_TOO_LARGE", 0, "")
        assert err.hint == "the document is larger than 4 bytes: send a smaller one"
