"""decisions.loads on both backends: values, every error code with its
position, the limits each way, deep nesting, input types and the error object."""

from __future__ import annotations

import dataclasses
import gc
import json
import math
import pickle
import sys
import weakref
from types import ModuleType
from typing import Any

import pytest

import decisions
from decisions import DEFAULT_LIMITS, ERROR_CODES, Limits, ParseError
from json_values import same_value


def fail(impl: ModuleType, data: Any, limits: Limits | None = None) -> ParseError:
    with pytest.raises(ParseError) as info:
        impl.loads(data, limits=limits)
    return info.value


@pytest.mark.parametrize(
    "text",
    [
        "0",
        "-1",
        "1.5",
        "-2.5e-3",
        "1E+2",
        "true",
        "false",
        "null",
        '""',
        '"plain"',
        r'"esc \" \\ \/ \b \f \n \r \t"',
        r'"\u00e9\u20ac\ud83d\ude00\u0000"',
        '"h\u00e9llo \u4e16\u754c \U0001f600"',
        "[]",
        "{}",
        ' \t\n\r[1, "two", 3.0, null, true, false, {"k": []}] \n',
        '{"a": {"b": {"c": [1, [2, [3]]]}}, "d": "e", "": 0}',
        "1e-400",
        "[9223372036854775807, -9223372036854775808, 18446744073709551615]",
        '"' + "x" * 1000 + r"\n" + "y" * 1000 + '"',
    ],
)
def test_valid_documents_match_json(impl: ModuleType, text: str) -> None:
    assert impl.loads(text) == json.loads(text)


@pytest.mark.parametrize(
    "text",
    [
        "é",
        "Zürich",
        "\u00ff\u0100",
        "x" * 9 + "渡辺" + "y" * 17,
        "\u0800",
        "\uffff",
        "a\U0001f600b" * 5,
        "\U0010ffff",
        "mixed ü 渡 😀 " * 20,
        "Grüße, " * 40,
    ],
)
def test_non_ascii_strings_take_their_narrowest_form(impl: ModuleType, text: str) -> None:
    """Raw and escaped, as value and key: the same str as json.loads, in the
    narrowest form that holds its characters (the same size in memory)."""
    for doc in (json.dumps([text, {text: 1}], ensure_ascii=False), json.dumps([text, {text: 1}])):
        got = impl.loads(doc)
        assert got == [text, {text: 1}]
        assert [sys.getsizeof(got[0]), sys.getsizeof(next(iter(got[1])))] == [sys.getsizeof(text)] * 2


def test_number_kinds(impl: ModuleType) -> None:
    assert impl.loads("-0") == 0 and type(impl.loads("-0")) is int
    neg_zero = impl.loads("-0.0")
    assert type(neg_zero) is float and neg_zero == 0.0 and math.copysign(1, neg_zero) == -1
    assert impl.loads("18446744073709551615") == 2**64 - 1
    assert impl.loads("-9223372036854775808") == -(2**63)
    assert type(impl.loads("1.0")) is float and type(impl.loads("1e2")) is float
    assert impl.loads("0.1") == 0.1 and impl.loads("2.2250738585072014e-308") == 2.2250738585072014e-308
    assert impl.loads("1e-400") == 0.0


# (document, code, pos): one row per code at least, with the exact offset.
ERROR_CASES: list[tuple[str | bytes, str, int]] = [
    ("", "EMPTY_INPUT", 0),
    (" \n\t", "EMPTY_INPUT", 3),
    (b"\xff", "INVALID_UTF8", 0),
    (b'["\xc3\xa9\xc3\x28"]', "INVALID_UTF8", 3),
    (b'"\xc0\xaf"', "INVALID_UTF8", 1),
    (b'"\xed\xa0\x80"', "INVALID_UTF8", 1),
    ("[1, \ud800]", "INVALID_UTF8", 4),
    (b"\xff\xfe[\x00]\x00", "UTF16_INPUT", 0),
    (b"\x00[\x00]", "UTF16_INPUT", 0),
    (b"[\x00]\x00", "UTF16_INPUT", 0),
    ("[\x00]", "UTF16_INPUT", 0),
    (b"\xef\xbb\xbf{}", "BOM", 0),
    ("\ufeff{}", "BOM", 0),
    ("[1,", "UNEXPECTED_END", 3),
    ('{"a":', "UNEXPECTED_END", 5),
    ('{"a"', "UNEXPECTED_END", 4),
    ('"abc', "UNEXPECTED_END", 4),
    ("tru", "UNEXPECTED_END", 3),
    ("-", "UNEXPECTED_END", 1),
    ("1.", "UNEXPECTED_END", 2),
    ('"\\u12', "UNEXPECTED_END", 5),
    ('"\\ud800', "UNEXPECTED_END", 7),
    ('"\\ud800\\', "UNEXPECTED_END", 8),
    ("trUe", "UNEXPECTED_CHARACTER", 2),
    ("[1 2]", "UNEXPECTED_CHARACTER", 3),
    ('{"a" 1}', "UNEXPECTED_CHARACTER", 5),
    ('{"a": 1 "b": 2}', "UNEXPECTED_CHARACTER", 8),
    ("[\u00e9]", "UNEXPECTED_CHARACTER", 1),
    ('["\u00e9", x]', "UNEXPECTED_CHARACTER", 6),
    ("{} {}", "TRAILING_CONTENT", 3),
    ('"a" "b"', "TRAILING_CONTENT", 4),
    ("1 2", "TRAILING_CONTENT", 2),
    ("```json\n{}\n```", "MARKDOWN_FENCE", 0),
    ("{}\n```", "MARKDOWN_FENCE", 3),
    ("[1, // note\n 2]", "COMMENT", 4),
    ("/* c */ 1", "COMMENT", 0),
    ("{} // done", "COMMENT", 3),
    ("{'a': 1}", "SINGLE_QUOTES", 1),
    ("['a']", "SINGLE_QUOTES", 1),
    ("[1, 2,]", "TRAILING_COMMA", 5),
    ('{"a": 1 ,  }', "TRAILING_COMMA", 8),
    ("{a: 1}", "KEY_NOT_STRING", 1),
    ('{"a": 1, 2: 3}', "KEY_NOT_STRING", 9),
    ('{"a": 1, "a": 2}', "DUPLICATE_KEY", 9),
    ('{"\u00e9": 1, "\u00e9": 2}', "DUPLICATE_KEY", 9),
    ('{"a": 1, "\\u0061": 2}', "DUPLICATE_KEY", 9),
    # Keys are compared when their object closes: the first repeat is reported,
    # and an error met before the closing brace comes first.
    ('{"a": 1, "b": 2, "a": 3, "b": 4}', "DUPLICATE_KEY", 17),
    ('{"a": {"b": 1, "b": 2}, "a": 3}', "DUPLICATE_KEY", 15),
    ('{"a": 1, "a": 2, "b": tru}', "UNEXPECTED_CHARACTER", 25),
    ('{"a": 1, "a": 2', "UNEXPECTED_END", 15),
    ('{"a": 1, "a": 2}}', "DUPLICATE_KEY", 9),
    ('[{"k": {"x": 1}, "k": [}]', "UNEXPECTED_CHARACTER", 23),
    ("[-x]", "INVALID_NUMBER", 1),
    ("[1.x]", "INVALID_NUMBER", 1),
    ("[1.5e]", "INVALID_NUMBER", 1),
    (".5", "INVALID_NUMBER", 0),
    ("+1", "INVALID_NUMBER", 0),
    ("[01]", "LEADING_ZERO", 1),
    ("-012", "LEADING_ZERO", 0),
    ("NaN", "NAN_OR_INFINITY", 0),
    ("[Infinity]", "NAN_OR_INFINITY", 1),
    ("[1, -Infinity]", "NAN_OR_INFINITY", 4),
    ("18446744073709551616", "NUMBER_OUT_OF_RANGE", 0),
    ("-9223372036854775809", "NUMBER_OUT_OF_RANGE", 0),
    ("[" + "9" * 100 + "]", "NUMBER_OUT_OF_RANGE", 1),
    ("[1e400]", "NUMBER_OUT_OF_RANGE", 1),
    ("-1.5E309", "NUMBER_OUT_OF_RANGE", 0),
    ("[" + "1" * 101 + "]", "NUMBER_TOO_LONG", 1),
    ("0." + "0" * 99, "NUMBER_TOO_LONG", 0),
    ('"a\\d"', "INVALID_ESCAPE", 2),
    ('"\\x41"', "INVALID_ESCAPE", 1),
    ('"\\u12G4"', "INVALID_UNICODE_ESCAPE", 1),
    ('"\\ud800\\u12', "UNEXPECTED_END", 11),
    ('"\\ud800\\uZZZZ"', "INVALID_UNICODE_ESCAPE", 7),
    ('"\\ud800"', "LONE_SURROGATE", 1),
    ('["ok", "\\udc00\\ud800"]', "LONE_SURROGATE", 8),
    ('"\\ud800\\u0041"', "LONE_SURROGATE", 1),
    ('"\\ud800\\n"', "LONE_SURROGATE", 1),
    ('{"\\udfff": 1}', "LONE_SURROGATE", 2),
    ('"a\tb"', "CONTROL_CHARACTER", 2),
    ('"line\nbreak"', "CONTROL_CHARACTER", 5),
    ('"a\x00"', "CONTROL_CHARACTER", 2),
]


@pytest.mark.parametrize(("data", "code", "pos"), ERROR_CASES)
def test_error_code_and_position(impl: ModuleType, data: str | bytes, code: str, pos: int) -> None:
    err = fail(impl, data)
    assert (err.code, err.pos) == (code, pos)
    assert err.offset == pos and err.layer == "parse" and err.hint


def test_every_parse_code_is_tested() -> None:
    limit_codes = {"DOCUMENT_TOO_LARGE", "DEPTH_EXCEEDED", "STRING_TOO_LONG", "TOO_MANY_ITEMS"}
    limit_codes |= {"TOO_MANY_MEMBERS", "TOO_MANY_VALUES"}
    tested = {code for _, code, _ in ERROR_CASES} | limit_codes
    loads_codes = {c for c, e in ERROR_CODES.items() if e.layer == "parse"}
    # Raised by the decision layer, not by loads.
    loads_codes -= {"ARGUMENTS_NOT_OBJECT", "DOUBLE_ENCODED_JSON"}
    assert loads_codes == tested


LIMIT_CASES: list[tuple[dict[str, int], str, str, str, int]] = [
    ({"max_document_bytes": 4}, "[12]", "[123]", "DOCUMENT_TOO_LARGE", 0),
    ({"max_document_bytes": 4}, '"\u00e9"', '"\u00e9 "', "DOCUMENT_TOO_LARGE", 0),
    ({"max_depth": 2}, "[[1]]", "[[[1]]]", "DEPTH_EXCEEDED", 2),
    ({"max_depth": 2}, '{"a": {}}', '{"a": {"b": {}}}', "DEPTH_EXCEEDED", 12),
    ({"max_string_bytes": 3}, '["ab\\n"]', '["a\u00e9x"]', "STRING_TOO_LONG", 1),
    ({"max_string_bytes": 3}, '{"abc": 1}', '{"abcd": 1}', "STRING_TOO_LONG", 1),
    ({"max_string_bytes": 4}, '"\\ud83d\\ude00"', '"a\\ud83d\\ude00"', "STRING_TOO_LONG", 0),
    ({"max_array_items": 2}, "[1,2]", "[1,2,3]", "TOO_MANY_ITEMS", 5),
    ({"max_array_items": 2}, "[[1,2],[3]]", "[[1,2],[3,4,5]]", "TOO_MANY_ITEMS", 12),
    ({"max_object_members": 1}, '{"a":1}', '{"a":1,"b":2}', "TOO_MANY_MEMBERS", 7),
    ({"max_values": 3}, "[1,2]", "[1,[2]]", "TOO_MANY_VALUES", 4),
    ({"max_values": 3}, '{"a": 1, "b": 2}', '{"a": 1, "b": 2, "c": 3}', "TOO_MANY_VALUES", 22),
    ({"max_number_length": 3}, "1.5", "-1.5", "NUMBER_TOO_LONG", 0),
    ({"max_number_length": 3}, "[100]", "[1000]", "NUMBER_TOO_LONG", 1),
]


@pytest.mark.parametrize(("fields", "ok", "bad", "code", "pos"), LIMIT_CASES)
def test_limits_just_under_and_just_over(
    impl: ModuleType, fields: dict[str, int], ok: str, bad: str, code: str, pos: int
) -> None:
    limits = Limits(**fields)
    assert impl.loads(ok, limits=limits) == json.loads(ok)
    assert impl.loads(ok.encode(), limits=limits) == json.loads(ok)
    err = fail(impl, bad, limits)
    assert (err.code, err.pos) == (code, pos)
    assert str(next(iter(fields.values()))) in (err.hint or "")


def test_string_limit_is_checked_before_the_string_ends(impl: ModuleType) -> None:
    # The limit fires as soon as the decoded string is too long, so a later
    # problem in the same string is not reached.
    limits = Limits(max_string_bytes=4)
    assert (fail(impl, '"abcdef\\d"', limits).code, fail(impl, '"abcdef', limits).pos) == ("STRING_TOO_LONG", 0)
    assert fail(impl, '"abc\\d"', limits).code == "INVALID_ESCAPE"


def test_large_document_within_limits(impl: ModuleType) -> None:
    records = [{"id": i, "name": f"user {i}", "score": i / 7, "tags": ["a", "b"]} for i in range(3000)]
    text = json.dumps({"path": "data.json", "records": records})
    assert impl.loads(text) == json.loads(text)
    content = json.dumps(records, indent=2)
    assert impl.loads(json.dumps({"content": content})) == {"content": content}


@pytest.mark.parametrize("depth", [100_000, 1_000_000])
@pytest.mark.parametrize("opener", ["[", '{"a":'])
def test_deep_nesting_is_depth_exceeded(impl: ModuleType, depth: int, opener: str) -> None:
    err = fail(impl, opener * depth)
    assert (err.code, err.pos) == ("DEPTH_EXCEEDED", 64 * len(opener))
    closed = "[" * depth + "]" * depth
    assert fail(impl, closed.encode()).code == "DEPTH_EXCEEDED"


def test_nesting_up_to_the_ceiling(impl: ModuleType) -> None:
    limits = Limits(max_depth=5000)
    text = "[" * 5000 + "1" + "]" * 5000
    value = impl.loads(text, limits=limits)
    for _ in range(4999):
        value = value[0]
    assert value == [1]
    assert fail(impl, "[" + text + "]", limits).code == "DEPTH_EXCEEDED"


@pytest.mark.parametrize("kind", [str, bytes, bytearray, memoryview])
def test_input_types(impl: ModuleType, kind: type) -> None:
    text = '{"k": ["\u00e9", 1]}'
    data = text if kind is str else kind(text.encode())
    assert impl.loads(data) == {"k": ["\u00e9", 1]}
    bad = '{"k": ["\u00e9", 1,]}'
    err = fail(impl, bad if kind is str else kind(bad.encode()))
    assert (err.code, err.pos, err.doc) == ("TRAILING_COMMA", 13, bad)


def test_non_contiguous_memoryview(impl: ModuleType) -> None:
    view = memoryview(b"[ 1 , 2 ] ")[::2]
    assert impl.loads(view) == [1, 2]


def test_bad_argument_types(impl: ModuleType) -> None:
    with pytest.raises(TypeError, match="str, bytes, bytearray or memoryview, not int"):
        impl.loads(1)
    with pytest.raises(TypeError, match="limits must be a decisions.Limits, not dict"):
        impl.loads("1", limits={"max_depth": 3})
    with pytest.raises(TypeError):
        impl.loads("1", DEFAULT_LIMITS)


def test_parse_error_object(impl: ModuleType) -> None:
    text = '{\n  "path": "C:\\dir"\n}'
    err = fail(impl, text)
    assert isinstance(err, json.JSONDecodeError) and isinstance(err, ValueError)
    assert (err.code, err.pos, err.lineno, err.colno) == ("INVALID_ESCAPE", 15, 2, 14)
    assert err.hint == (
        "invalid escape '\\d' at line 2 column 14: a backslash inside a JSON string must be written as '\\\\'"
    )
    assert err.doc == text and err.msg == ERROR_CODES["INVALID_ESCAPE"].meaning
    assert err.retryable is True
    assert err.to_dict()["lineno"] == 2
    again = pickle.loads(pickle.dumps(err))
    assert (again.code, again.pos, again.hint) == (err.code, err.pos, err.hint)
    try:
        impl.loads("[1,]")
    except json.JSONDecodeError as caught:  # existing handlers keep working
        assert caught.pos == 2


def test_public_loads_is_the_selected_backend() -> None:
    assert decisions.loads is decisions._backend.impl.loads
    assert decisions.loads('{"a": 1}') == {"a": 1}


def test_custom_limits_are_not_confused_with_defaults(impl: ModuleType) -> None:
    small = dataclasses.replace(DEFAULT_LIMITS, max_depth=1)
    assert fail(impl, "[[]]", small).code == "DEPTH_EXCEEDED"
    assert impl.loads("[[]]") == [[]]


def test_each_limits_object_is_honoured_in_turn(impl: ModuleType) -> None:
    shallow, deep = Limits(max_depth=1), Limits(max_depth=3)
    for _ in range(2):
        assert fail(impl, "[[]]", shallow).code == "DEPTH_EXCEEDED"
        assert impl.loads("[[]]", limits=deep) == [[]]
        assert fail(impl, "[[]]", Limits(max_depth=1)).code == "DEPTH_EXCEEDED"
        assert impl.loads("[[]]", limits=None) == [[]]


def test_limits_of_parses_in_between_do_not_leak(impl: ModuleType) -> None:
    """Parses under other limits in between (event data under the envelope's,
    arguments under the caller's) leave each call with its own limits."""
    shallow = Limits(max_depth=1, max_number_length=3)
    nested = '{"a": [{"b": [1234]}]}'
    for _ in range(2):
        assert fail(impl, nested, shallow).code == "DEPTH_EXCEEDED"
        assembler = impl.StreamAssembler("openai-chat", limits=shallow)  # event data: depth 100, numbers 100
        assembler.feed(b'data: {"choices": [{"index": 0, "delta": {"role": "assistant"}}], "x": [[[12345]]]}\n\n')
        assert fail(impl, "[1234]", shallow).code == "NUMBER_TOO_LONG"
        assert impl.loads(nested) == {"a": [{"b": [1234]}]}
        assert fail(impl, "[[]]", Limits(max_depth=1, max_number_length=3)).code == "DEPTH_EXCEEDED"


@pytest.mark.parametrize(("data", "code", "pos"), ERROR_CASES)
def test_line_and_column_match_json_decode_error(impl: ModuleType, data: str | bytes, code: str, pos: int) -> None:
    err = fail(impl, data)
    reference = json.JSONDecodeError("x", err.doc, pos)
    assert (err.lineno, err.colno) == (reference.lineno, reference.colno)
    assert f"at line {err.lineno} column {err.colno}" in (err.hint or "") or code in (
        "EMPTY_INPUT",
        "UTF16_INPUT",
        "BOM",
        "DOCUMENT_TOO_LARGE",
    )


MULTILINE_CASES: list[tuple[str, str, int, int, int]] = [
    ('{\n  "a": 1,\n  "a": 2\n}', "DUPLICATE_KEY", 14, 3, 3),
    ('{\n  "a": [1,\n    2,\n  ]\n}', "TRAILING_COMMA", 18, 3, 6),
    ('[\r\n"x\ty"]', "CONTROL_CHARACTER", 5, 2, 3),
    ("[\n\n\n", "UNEXPECTED_END", 4, 4, 1),
    ('{\n"path": "\u00e9\u00e9",\n"n": 012}', "LEADING_ZERO", 21, 3, 6),
]


@pytest.mark.parametrize(("text", "code", "pos", "lineno", "colno"), MULTILINE_CASES)
def test_multiline_positions(impl: ModuleType, text: str, code: str, pos: int, lineno: int, colno: int) -> None:
    for data in (text, text.encode()):
        err = fail(impl, data)
        assert (err.code, err.pos, err.lineno, err.colno) == (code, pos, lineno, colno)


@pytest.mark.parametrize(("fields", "ok", "bad", "code", "pos"), LIMIT_CASES)
def test_limits_on_every_input_type(
    impl: ModuleType, fields: dict[str, int], ok: str, bad: str, code: str, pos: int
) -> None:
    limits = Limits(**fields)
    for kind in (bytes, bytearray, memoryview):
        assert impl.loads(kind(ok.encode()), limits=limits) == json.loads(ok)
        err = fail(impl, kind(bad.encode()), limits)
        assert (err.code, err.pos) == (code, pos)


def test_default_limits_at_their_edges(impl: ModuleType) -> None:
    depth = DEFAULT_LIMITS.max_depth
    assert impl.loads("[" * depth + "]" * depth) is not None
    err = fail(impl, "[" * (depth + 1) + "]" * (depth + 1))
    assert (err.code, err.pos) == ("DEPTH_EXCEEDED", depth)
    longest = "1" * DEFAULT_LIMITS.max_number_length
    err = fail(impl, "[" + longest + "]")
    assert (err.code, err.pos) == ("NUMBER_OUT_OF_RANGE", 1)  # in length, beyond 64 bits
    assert impl.loads("0." + "5" * (DEFAULT_LIMITS.max_number_length - 2)) == 0.5555555555555556
    assert (fail(impl, "[" + longest + "1]").code, fail(impl, "[" + longest + "1]").pos) == ("NUMBER_TOO_LONG", 1)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("-9223372036854775808", -(2**63)),
        ("9223372036854775807", 2**63 - 1),
        ("9223372036854775808", 2**63),
        ("18446744073709551615", 2**64 - 1),
        ("-0", 0),
        ("0", 0),
        ("1e308", 1e308),
        ("-1.7976931348623157e308", -1.7976931348623157e308),
        ("5e-324", 5e-324),
        ("1e-400", 0.0),
        ("-1e-400", -0.0),
        ("-0.0", -0.0),
        ("-0e0", -0.0),
        ("0.0", 0.0),
    ],
)
def test_number_edges_accepted(impl: ModuleType, text: str, value: int | float) -> None:
    got = impl.loads(text)
    assert same_value(got, value)
    assert same_value(impl.loads(f"[{text}]".encode()), [value])


@pytest.mark.parametrize(
    "text",
    ["-9223372036854775809", "18446744073709551616", "-18446744073709551615", "1e400", "-1e400", "1.8e308", "1" * 25],
)
def test_number_edges_rejected(impl: ModuleType, text: str) -> None:
    err = fail(impl, "[" + text + "]")
    assert (err.code, err.pos) == ("NUMBER_OUT_OF_RANGE", 1)
    assert "send it as a string" in (err.hint or "")


HINTS: list[tuple[str, str]] = [
    (
        '{"p": "a\\d"}',
        "invalid escape '\\d' at line 1 column 9: a backslash inside a JSON string must be written as '\\\\'",
    ),
    ('{"a": 1, "a": 2}', 'duplicate key "a" at line 1 column 10: each key may appear only once in an object'),
    ("[1, 2,]", "trailing comma at line 1 column 6: remove the comma before the closing bracket or brace"),
    ("```json\n{}\n```", "Markdown code fence at line 1 column 1: send the bare JSON value, without ``` fences"),
    ("{'a': 1}", "single quote at line 1 column 2: JSON strings and keys must use double quotes"),
    ("[NaN]", "NaN at line 1 column 2 is not JSON: use null or a string instead"),
    ("[-Infinity]", "-Infinity at line 1 column 2 is not JSON: use null or a string instead"),
    ("[07]", "number '07' at line 1 column 2 has a leading zero: write 7, not 07, or send a string"),
    ('"a\nb"', "raw control character '\\n' in a string at line 1 column 3: escape it (\\n, \\t or \\u000a)"),
    ("{a: 1}", "object key 'a' at line 1 column 2 is not a string: write keys in double quotes, like \"key\": value"),
    ("{} x", "extra content at line 1 column 4 after the JSON value: send exactly one JSON value and nothing after it"),
]


@pytest.mark.parametrize(("text", "hint"), HINTS)
def test_hints(impl: ModuleType, text: str, hint: str) -> None:
    assert fail(impl, text).hint == hint
    assert fail(impl, text.encode()).hint == hint


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        (("1",), {"limits": {"max_depth": 3}}),
        (("1",), {"limits": 64}),
        (("1",), {"limits": "DEFAULT"}),
        (("1", DEFAULT_LIMITS), {}),
        (("1", DEFAULT_LIMITS), {"limits": None}),
        (("1", DEFAULT_LIMITS, 3), {}),
        ((), {}),
        ((), {"limits": None}),
        ((), {"data": "1"}),
        (("1",), {"data": "1"}),
        ((), {"limit": None, "data": "1"}),
        (("1",), {"limits": None, "limit": None}),
        (("1",), {"limit": None}),
        ((None,), {}),
        ((1.5,), {}),
        (([1],), {}),
    ],
)
def test_type_errors_are_the_same_on_both(
    both: tuple[ModuleType, ModuleType], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    messages = []
    for impl in both:
        with pytest.raises(TypeError) as info:
            impl.loads(*args, **kwargs)
        messages.append(str(info.value))
    assert messages[0] == messages[1]


def test_limits_none_is_the_default(impl: ModuleType) -> None:
    text = "[" * 65 + "]" * 65
    assert fail(impl, text, None).code == fail(impl, text, DEFAULT_LIMITS).code == "DEPTH_EXCEEDED"
    assert impl.loads("[1]", limits=None) == impl.loads("[1]", limits=DEFAULT_LIMITS) == [1]


def _same_tracking(got: Any, expected: Any) -> None:
    assert gc.is_tracked(got) == gc.is_tracked(expected), got
    if isinstance(got, dict):
        for key in got:
            _same_tracking(got[key], expected[key])
    elif isinstance(got, list):
        for mine, theirs in zip(got, expected):
            _same_tracking(mine, theirs)


RECORDS: list[dict[str, Any]] = [
    {"id": i, "tags": ["a"] * (i % 3), "address": {"city": "x"}, "empty": {}, "nested": [[i]]} for i in range(1500)
]


@pytest.mark.parametrize(
    "value",
    [[], {}, [[]], {"a": {}}, {"a": {"b": 1}}, [{"a": 1}], RECORDS, {"records": RECORDS}],
    ids=[
        "list",
        "dict",
        "nested-list",
        "dict-of-dict",
        "dict-of-scalars",
        "list-of-dict",
        "records",
        "wrapped-records",
    ],
)
def test_the_collector_tracks_the_tree_as_json_loads_does(impl: ModuleType, value: Any) -> None:
    """Every list, and each dict holding a list or dict, small document or large."""
    text = json.dumps(value)
    _same_tracking(impl.loads(text), json.loads(text))


class _Marker:
    pass


def test_a_cycle_made_later_in_a_large_document_is_collected(impl: ModuleType) -> None:
    tree = impl.loads(json.dumps({"records": RECORDS}))
    marker = _Marker()
    alive = weakref.ref(marker)
    tree["records"][-1]["tags"] += [tree, marker]
    del tree, marker
    gc.collect()
    assert alive() is None


def test_a_large_document_that_fails_at_its_end_leaves_the_collector_sound(impl: ModuleType) -> None:
    text = json.dumps({"records": RECORDS})
    for broken in (text[:-1], text[:-1] + ', "records": 1}', text[:-2] + "x}"):
        with pytest.raises(ParseError):
            impl.loads(broken)
        gc.collect()
    assert impl.loads(text) == {"records": RECORDS}


def test_a_call_made_during_a_parse_gets_its_own_state(impl: ModuleType) -> None:
    """A collection that a parse sets off may run code that calls loads (here a
    collector callback): both documents come out whole, and later calls work."""
    inner = '{"inner": [1, 2, {"k": "v"}], "more": ["x", "y"]}'
    outer = json.dumps({"records": RECORDS})
    seen: list[Any] = []

    def callback(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and len(seen) < 50:
            seen.append(impl.loads(inner))

    threshold = gc.get_threshold()
    gc.callbacks.append(callback)
    gc.set_threshold(10)
    try:
        got = impl.loads(outer)
    finally:
        gc.callbacks.remove(callback)
        gc.set_threshold(*threshold)
    assert seen
    assert all(value == json.loads(inner) for value in seen)
    assert got == {"records": RECORDS}
    assert impl.loads(outer) == got


@pytest.mark.parametrize(
    ("text", "pos"),
    [('["\ud800"]', 2), ('{"a": "x\udfff"}', 8), ('"\udc00"', 1), ("[1, " * 20 + '"\ud83d"' + "]" * 20, 81)],
)
def test_short_str_with_a_lone_surrogate_is_refused(impl: ModuleType, text: str, pos: int) -> None:
    """A str holding a surrogate code point is not UTF-8, however short,
    and however readily a JSON scanner would take it."""
    err = fail(impl, text)
    assert (err.code, err.pos) == ("INVALID_UTF8", pos)
