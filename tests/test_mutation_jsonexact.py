"""The exact parser's values and errors written out, on both backends and on the
pure twin's exact parser itself (``loads`` runs it only when its fast path
fails or flags something, so a valid document would otherwise never reach it):
containers empty and nested, escapes and surrogate pairs at their bounds, the
bytes each escape adds to a string's length, member counts, and the characters
told apart where a value, a comment or a fence may start."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from decisions import DEFAULT_LIMITS, Limits, ParseError
from decisions._pure.jsonexact import Exact, Fail
from json_values import same_value


def exact(text: str, limits: Limits | None) -> Any:
    """The pure twin's exact parser alone: the value, or (code, pos)."""
    try:
        return Exact(text, limits or DEFAULT_LIMITS).run()
    except Fail as fail:
        return (fail.code, fail.pos)


def outcome(impl: ModuleType, text: str, limits: Limits | None) -> Any:
    try:
        return impl.loads(text, limits=limits)
    except ParseError as err:
        return (err.code, err.pos)


# (document, limits, value or (code, pos))
CASES: list[tuple[str, dict[str, int], Any]] = [
    # containers
    ('{"": 1}', {}, {"": 1}),
    ('{"a": {"b": 1}, "c": [true, false, null]}', {}, {"a": {"b": 1}, "c": [True, False, None]}),
    ("[[], {}, 1]", {}, [[], {}, 1]),
    ('{"a": [], "b": {}, "c": [[]]}', {}, {"a": [], "b": {}, "c": [[]]}),
    ("[[] , [ ]]", {}, [[], []]),
    # escapes
    ('"a\\nb\\t\\"\\\\\\/\\b\\f\\r"', {}, 'a\nb\t"\\/\b\f\r'),
    ('["\\n", "x\\\\"]', {}, ["\n", "x\\"]),
    ('"\\ud83d\\ude00x"', {}, "\U0001f600x"),
    ('["\\ud800\\udc00", "\\udbff\\udfff"]', {}, ["\U00010000", "\U0010ffff"]),
    ('["\\ud7ff", "\\ue000", "\\uffff"]', {}, ["\ud7ff", "\ue000", "\uffff"]),
    ('"\\ud800\\ue000"', {}, ("LONE_SURROGATE", 1)),
    ('"\\udc00\\udc00"', {}, ("LONE_SURROGATE", 1)),
    ('"\\udbff\\udbff"', {}, ("LONE_SURROGATE", 1)),
    # numbers
    ("[-9223372036854775808, 18446744073709551615]", {}, [-(2**63), 2**64 - 1]),
    ("-NaN", {}, ("NAN_OR_INFINITY", 0)),
    ("[-NaN]", {}, ("NAN_OR_INFINITY", 1)),
    ("[00]", {}, ("LEADING_ZERO", 1)),
    ("[09]", {}, ("LEADING_ZERO", 1)),
    ("[0, 0]", {}, [0, 0]),
    # what starts a value, a comment or a fence
    ("[Ix]", {}, ("UNEXPECTED_CHARACTER", 1)),
    ("[Nope]", {}, ("UNEXPECTED_CHARACTER", 1)),
    ("`x`", {}, ("UNEXPECTED_CHARACTER", 0)),
    ("[1, `]", {}, ("UNEXPECTED_CHARACTER", 4)),
    ("/x", {}, ("UNEXPECTED_CHARACTER", 0)),
    ("[x*]", {}, ("UNEXPECTED_CHARACTER", 1)),
    ("[1 x/]", {}, ("UNEXPECTED_CHARACTER", 3)),
    # members counted once each, an empty key too
    ('{"a": 1, "b": 2}', {"max_object_members": 2}, {"a": 1, "b": 2}),
    ('{"": 1, "b": 2}', {"max_object_members": 2}, {"": 1, "b": 2}),
    ('{"a": 1, "b": 2, "c": 3}', {"max_object_members": 2}, ("TOO_MANY_MEMBERS", 17)),
    # the bytes a string's escapes add: 1 for a simple one, 1 to 4 for \u
    ('"ab\\n"', {"max_string_bytes": 3}, "ab\n"),
    ('"abc\\nd"', {"max_string_bytes": 3}, ("STRING_TOO_LONG", 0)),
    ('"\\u0041"', {"max_string_bytes": 1}, "A"),
    ('"\\u007f"', {"max_string_bytes": 1}, "\x7f"),
    ('"\\u0080"', {"max_string_bytes": 1}, ("STRING_TOO_LONG", 0)),
    ('"\\u07ff"', {"max_string_bytes": 2}, "\u07ff"),
    ('"\\u0800"', {"max_string_bytes": 2}, ("STRING_TOO_LONG", 0)),
    ('"\\uffff"', {"max_string_bytes": 3}, "\uffff"),
    ('"\\ud800\\udc00"', {"max_string_bytes": 3}, ("STRING_TOO_LONG", 0)),
    ('"\\ud83d\\ude00"', {"max_string_bytes": 4}, "\U0001f600"),
]


@pytest.mark.parametrize(("text", "fields", "expected"), CASES)
def test_values_and_errors(impl: ModuleType, text: str, fields: dict[str, int], expected: Any) -> None:
    limits = Limits(**fields) if fields else None
    for got in (outcome(impl, text, limits), exact(text, limits)):
        assert got == expected if isinstance(expected, tuple) else same_value(got, expected), got
