"""The pure twin parses event data and bodies whose keys its readers prove
(``envelope.unkeyed``) with pydantic-core's ``from_json`` when no number in
the text can break a number rule (``json.fast_unkeyed``), and with the
stdlib scanner otherwise. Either way the value must be the strict parser's,
and a text the strict parser refuses must never be answered: numbers at
every edge of the length limit and of 64 bits, long fractions and
exponents, exponents that overflow or underflow, under length limits from
1 character up."""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from decisions import DEFAULT_LIMITS, Limits, ParseError
from decisions._pure import json as pure_json
from decisions._pure.envelope import envelope_limits
from decisions._pure.json import FAST_MISSES, fast_unkeyed, loads
from decisions._pure.jsonexact import Exact, Fail

ENVELOPE = envelope_limits(DEFAULT_LIMITS)


@pytest.fixture(autouse=True)
def cold_plans(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test builds the parser's plans afresh: a plan cached at import,
    by an earlier test or by the process a mutation run forks from would hide
    what building one does (the digit run of the screen among them)."""
    default = pure_json._plan(DEFAULT_LIMITS)
    monkeypatch.setattr(pure_json, "_plans", {})
    monkeypatch.setattr(pure_json, "_DEFAULT_PLAN", default)
    monkeypatch.setattr(pure_json, "_last", (None, default))


def under(max_number_length: int) -> Limits:
    """The envelope limits (members bounded by the size, so ``fast_unkeyed``
    answers) with this number length."""
    return dataclasses.replace(ENVELOPE, max_number_length=max_number_length)


def judged(text: str, lim: Limits) -> tuple[str, Any]:
    """What the exact parser (the Rust core's algorithm, no fast path) says
    of ``text``: its value, or its code."""
    try:
        return "value", Exact(text, lim).run()
    except Fail as fail:
        return "error", fail.code


def loaded(text: str, lim: Limits) -> tuple[str, Any]:
    """What ``loads`` (its fast paths first) says of ``text``."""
    try:
        return "value", loads(text, limits=lim)
    except ParseError as error:
        return "error", error.code


def screened(text: str, lim: Limits) -> tuple[str, Any] | None:
    """What ``fast_unkeyed`` says of ``text``: its value, or None for a miss."""
    try:
        value, colons = fast_unkeyed(text, len(text.encode()), lim)
    except FAST_MISSES:
        return None
    assert colons == text.count(":")
    return "value", value


def same(a: Any, b: Any) -> bool:
    """Equal values of the same types all the way down (``-0.0`` is not ``0.0``)."""
    if type(a) is not type(b):
        return False
    if type(a) is float:
        return math.copysign(1.0, a) == math.copysign(1.0, b) and a == b
    if type(a) is dict:
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if type(a) is list:
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return bool(a == b)


def check(text: str, lim: Limits) -> bool:
    """``loads`` says what the exact parser says, and the screen answers
    only with its value; True when the screen answered."""
    verdict = judged(text, lim)
    strict = loaded(text, lim)
    assert strict[0] == verdict[0] and (same(strict[1], verdict[1]) if strict[0] == "value" else strict == verdict)
    found = screened(text, lim)
    if found is None:
        return False
    assert verdict[0] == "value", (text, verdict)
    assert same(found[1], verdict[1]), (text, found, verdict)
    return True


digits = st.text("0123456789", min_size=1, max_size=25)


@st.composite
def literals(draw: st.DrawFn) -> str:
    """A number literal, valid or not: sign, integer digits (a leading zero
    kept), fraction, exponent with either letter and sign."""
    out = draw(st.sampled_from(["", "-"])) + draw(digits)
    if draw(st.booleans()):
        out += "." + draw(digits)
    if draw(st.booleans()):
        out += draw(st.sampled_from("eE")) + draw(st.sampled_from(["", "+", "-"])) + draw(digits)
    return out


@st.composite
def texts(draw: st.DrawFn) -> str:
    """A chunk-like object with number literals in value places, and digits in strings."""
    numbers = draw(st.lists(literals(), min_size=1, max_size=4))
    members = [f'"n{i}": {n}' for i, n in enumerate(numbers)]
    if draw(st.booleans()):
        members.append(f'"s": "{draw(literals())}"')
    if draw(st.booleans()):
        members.append(f'"a": [{", ".join(numbers)}]')
    return "{" + ", ".join(members) + "}"


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])  # the plans are cold once a test
@given(texts(), st.one_of(st.integers(1, 40), st.just(100), st.just(1000)))
def test_screened_numbers_are_the_strict_ones(text: str, max_number_length: int) -> None:
    check(text, under(max_number_length))


EDGES = [
    "18446744073709551615",  # 2**64 - 1: the largest count
    "18446744073709551616",  # 2**64
    "-9223372036854775808",  # -2**63
    "-9223372036854775809",
    "999999999999999999",  # 18 digits: the longest run taken
    "-999999999999999999",
    "9999999999999999999",  # 19 digits
    "-9999999999999999999",
    "-99999999999999999",  # 17 digits, negative
    "123456789012345678901234567890",
    "1e308",
    "1e309",
    "1E+309",
    "-1e+0309",
    "1.7976931348623157e308",
    "1.7976931348623159e308",  # rounds past the largest double
    "17976931348623157e292",
    "1e-400",
    "4.9e-324",
    "-0",
    "-0.0",
    "0." + "0" * 16 + "1",
    "1." + "0" * 120,
    "1" * 17 + "." + "9" * 17 + "e+99",
    "123.456e-789",
]


@pytest.mark.parametrize("literal", EDGES)
@pytest.mark.parametrize("max_number_length", [1, 3, 10, 13, 19, 20, 21, 100])
def test_number_edges(literal: str, max_number_length: int) -> None:
    for text in (literal, f'{{"v": {literal}}}', f'{{"v": [1, {literal}]}}', f" {literal} "):
        check(text, under(max_number_length))


def test_a_literal_one_character_too_long_is_handed_on() -> None:
    """Under a length limit of 10, the longest literal whose digit runs are
    all shorter than the screen's run (3: at most 2 digits a run) is 10
    characters; a literal of 13 (runs of 3) is too long and must reach the
    strict parser."""
    lim = under(10)
    assert pure_json._long_run(lim) == b"111"
    assert check('{"v": -12.34e-56}', lim)
    assert judged('{"v": -123.456e-789}', lim) == ("error", "NUMBER_TOO_LONG")
    assert not check('{"v": -123.456e-789}', lim)


def test_common_texts_take_from_json(monkeypatch: pytest.MonkeyPatch) -> None:
    """The screen is not dead code: a chunk with short numbers goes to
    ``from_json``; one with a long number, an overflowing exponent or an
    escape does not."""
    calls: list[str] = []

    def counted(text: str, **options: Any) -> Any:
        calls.append(text)
        return json.loads(text)

    monkeypatch.setattr(pure_json, "from_json", counted)
    chunk = '{"id": "c-1", "created": 1718236123, "choices": [{"index": 0, "delta": {"content": "a: 1e5"}}]}'
    assert check(chunk, ENVELOPE) and calls == [chunk]
    for other in (
        chunk.replace("1718236123", "17182361231718236123"),
        chunk.replace("1e5", "1e500"),
        chunk.replace("1e5", "1E+500"),
        chunk.replace('"c-1"', '"c\\u002d1"'),
    ):
        calls.clear()
        assert (screened(other, ENVELOPE) is None) if "\\u" in other else check(other, ENVELOPE)
        assert calls == []


@pytest.mark.parametrize("text", ["Zürich", "\u00ff\u0100", "渡辺", "a\U0001f600b", "mixed ü 渡 😀 " * 8])
def test_non_ascii_strings_keep_their_narrowest_form(text: str) -> None:
    """Strings ``from_json`` builds are those the stdlib scanner builds, in
    the narrowest form that holds their characters, as value and as key (its
    key cache would keep a UTF-8 copy beside a non-ASCII one)."""
    doc = json.dumps([text, {text: 1}, {"k": text}], ensure_ascii=False)
    for _ in range(2):  # the second time, a cached key would come with the UTF-8 copy its first lookup made
        found = screened(doc, ENVELOPE)
        assert found is not None and found[1] == [text, {text: 1}, {"k": text}]
        value = found[1]
        sizes = [sys.getsizeof(value[0]), sys.getsizeof(next(iter(value[1]))), sys.getsizeof(value[2]["k"])]
        assert sizes == [sys.getsizeof(text)] * 3


@pytest.mark.parametrize("kind", ["[", "{"])
@pytest.mark.parametrize("short_numbers", [True, False])
def test_nesting_is_bounded_at_its_edge(kind: str, short_numbers: bool) -> None:
    """A text nesting exactly ``max_depth`` levels (its only brackets) is
    answered, one level more is handed on, on either parser: ``{`` and ``[``
    both count a level. ``from_json`` alone nests 200 levels or more."""
    number = "1" if short_numbers else "0." + "5" * 30  # a run of 30 digits: the stdlib scanner's

    def nested(depth: int) -> str:
        if kind == "[":
            return "[" * depth + number + "]" * depth
        return '{"a":' * depth + number + "}" * depth

    depth = ENVELOPE.max_depth
    assert check(nested(depth), ENVELOPE)
    assert screened(nested(depth + 1), ENVELOPE) is None
    assert judged(nested(depth + 1), ENVELOPE) == ("error", "DEPTH_EXCEEDED")


def test_nesting_in_the_shortest_text() -> None:
    """The shortest text one level too deep (``2 * max_depth + 2``
    characters, the length from which brackets are counted) is handed on;
    one at the limit is answered."""
    depth = ENVELOPE.max_depth
    assert check("[" * depth + "]" * depth, ENVELOPE)
    deeper = "[" * (depth + 1) + "]" * (depth + 1)
    assert screened(deeper, ENVELOPE) is None
    assert judged(deeper, ENVELOPE) == ("error", "DEPTH_EXCEEDED")


def test_values_are_bounded_at_their_edge() -> None:
    """Under a value bound the text could break (``max_values`` below the
    text's length), arrays and objects alike count toward it: exactly
    ``max_values`` values are answered, one more is handed on."""
    lim = dataclasses.replace(ENVELOPE, max_values=7, max_array_items=7)
    within = '[{"a": 1}, {"b": [2]}, 3]'  # 7 values: 2 arrays, 2 objects, 3 numbers
    assert judged(within, lim)[0] == "value"
    assert check(within, lim)
    beyond = '[{"a": 1}, {"b": [2, 4]}, 3]'
    assert judged(beyond, lim) == ("error", "TOO_MANY_VALUES")
    assert screened(beyond, lim) is None
    one = dataclasses.replace(ENVELOPE, max_values=1, max_array_items=1)
    assert check("[]", one) and check("{}", one)
    for two in ("[1]", "[[]]", '{"a": 1}', '{"a": {}}'):  # as many values as the bound counts
        assert judged(two, one) == ("error", "TOO_MANY_VALUES")
        assert screened(two, one) is None
    single = dataclasses.replace(ENVELOPE, max_array_items=1)
    assert check("[1]", single) and check('{"a": 1, "b": 2}', single)
    assert judged("[1, 2]", single) == ("error", "TOO_MANY_ITEMS")
    assert screened("[1, 2]", single) is None


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
@pytest.mark.parametrize("long_numbers", [False, True])
def test_nan_and_infinity_are_handed_on(literal: str, long_numbers: bool) -> None:
    """``from_json`` is asked for the strict grammar: NaN and Infinity are
    refused, on either parser."""
    other = "0." + "5" * 30 if long_numbers else "1"
    for text in (literal, f'{{"a": {literal}, "b": {other}}}', f"[{other}, {literal}]"):
        assert screened(text, ENVELOPE) is None
        assert judged(text, ENVELOPE) == ("error", "NAN_OR_INFINITY")


@pytest.mark.parametrize("long_numbers", [False, True])
def test_whitespace_and_trailing_content(long_numbers: bool) -> None:
    """Whitespace around the value is no content; anything else after it is,
    on either parser."""
    number = "0." + "5" * 30 if long_numbers else "1"
    for value in (f'{{"a": {number}}}', f"[{number}]", number):
        for pad in ("", " ", "\t\r\n "):
            assert check(pad + value + pad, ENVELOPE)
        for tail in (" x", "}", " 1", ","):
            assert screened(value + tail, ENVELOPE) is None
            assert judged(value + tail, ENVELOPE)[0] == "error"


def test_limits_that_need_members_counted_are_a_miss() -> None:
    """Under limits whose member bound a text could break (the defaults:
    members are not bounded by the size), the unkeyed parse does not answer."""
    for lim in (DEFAULT_LIMITS, dataclasses.replace(ENVELOPE, max_object_members=2)):
        assert screened('{"a": 1}', lim) is None
    assert screened('{"a": 1}', ENVELOPE) == ("value", {"a": 1})


def test_each_limits_its_own_plan() -> None:
    """Limits asked for one after the other, without ``loads`` between, each
    screen by their own number length."""
    long, short = under(100), under(10)
    text = '{"v": 12345678901}'
    assert screened(text, long) == ("value", {"v": 12345678901})
    assert screened(text, short) is None
    assert judged(text, short) == ("error", "NUMBER_TOO_LONG")
    assert screened(text, long) == ("value", {"v": 12345678901})


@pytest.mark.parametrize("long_numbers", [False, True])
def test_string_bytes_are_bounded(long_numbers: bool) -> None:
    """Under a string bound below the text's size, a longer string (value or
    key, counted in UTF-8 bytes) is handed on; one at the bound is answered."""
    lim = dataclasses.replace(ENVELOPE, max_string_bytes=6)
    number = "0." + "5" * 30 if long_numbers else "1"
    assert check(f'{{"abcdef": "ü€a", "n": {number}}}', lim)  # 6 bytes each
    for text in (f'{{"abcdefg": {number}}}', f'{{"a": "üüüü", "n": {number}}}'):
        assert screened(text, lim) is None
        assert judged(text, lim) == ("error", "STRING_TOO_LONG")


@pytest.mark.parametrize("max_number_length", range(1, 64))
def test_every_run_length_under_every_length_limit(max_number_length: int) -> None:
    """For each length limit, literals whose digit runs are all ``k`` long
    (integers, and floats with a fraction and a one- or two-digit exponent,
    the longest forms the screen can hand to ``from_json``), for every ``k``
    up to 20: whatever either parser answers is the strict parser's value,
    and from two characters of limit on, some literal is answered."""
    lim = under(max_number_length)
    answered = 0
    for k in range(1, 21):
        run = "9" * k
        for literal in (f"-{run}", f"-{run}.{run}e-{run[:2]}", f"{run}.{run}E+{run[:1]}"):
            answered += check(f'{{"v": {literal}}}', lim)
    assert answered > 0 or max_number_length < 2
