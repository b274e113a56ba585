"""JSON Schema's ``pattern`` as ECMA-262 means it, searched in linear time.

A JSON-Schema tool's ``pattern``, ``patternProperties`` (and the names
``additionalProperties`` and ``unevaluatedProperties`` leave to them) and
``propertyNames`` are ECMA-262 regular expressions with Unicode semantics.
Read by Python's ``re`` they said yes where the schema says no, and a
model's value could hang the process:

1. ``$`` matched before a final newline: ``"main\\n"`` passed
   ``^[a-z]+$`` (a value cut into a command line, a header, a file name);
2. ``\\d`` took every script's digits (``"٣"`` passed ``^\\d+$``), ``\\w``
   every script's letters, ``.`` took ``\\r`` and U+2028;
3. backtracking: ``^(a+)+b`` against forty ``a`` and a ``!`` ran for
   days holding the GIL (the classic e-mail patterns do the same);
4. Python-only syntax (``(?i)``, ``\\Z``) was taken, ECMA-262 syntax
   (``\\p{Letter}``) refused.

Now each is searched by :mod:`decisions.validate._ecma` (a DFA built lazily
from a Thompson automaton); a pattern it cannot search (a lookaround, a
backreference) is refused when the tool is built, with the reason.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import jsonschema
import pytest
from hypothesis import given, settings

import decisions
from decide_helpers import both_paths, call, plain_id, response
from decisions import Tool, ToolRegistry
from decisions.request.definitions import ToolDefinition
from decisions.validate import _ecma, _engines
from decisions.validate._ecma import PatternError, PatternUnsupported, SearchTooCostly, compile_pattern


@pytest.fixture(autouse=True)
def cold_caches(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test parses and builds afresh: a pattern, a schema or a DFA kept
    by an earlier test (or by the process a mutation run forks from) would
    hide what parsing and searching do."""
    compile_pattern.cache_clear()
    monkeypatch.setattr(_engines, "_CACHE", {})
    monkeypatch.setattr(_engines, "_STRICT_CLASSES", {})


SUITE = Path(__file__).parent / "fixtures" / "json-schema-test-suite" / "draft2020-12" / "optional"


def tools(schema: dict[str, Any]) -> ToolRegistry:
    return ToolRegistry([Tool(name="t", parameters=schema, side_effects=False)])


def verdict(schema: dict[str, Any], value: Any) -> str:
    """``accept`` or the error code of a decision on ``{"v": value}`` for ``{"v": schema}``."""
    wrapped = {"type": "object", "properties": {"v": schema}, "required": ["v"]}
    try:
        decision = decisions.decide(response(call("t", json.dumps({"v": value}))), tools=tools(wrapped))
    except decisions.OutputError as error:
        return error.code
    assert [c.arguments for c in decision.executable_calls] == [{"v": value}]
    return "accept"


def _suite_cases() -> list[Any]:
    cases = []
    for group in json.loads((SUITE / "ecmascript-regex.json").read_text(encoding="utf-8")):
        schema = {k: v for k, v in group["schema"].items() if k != "$schema"}
        for test in group["tests"]:
            cases.append(
                pytest.param(
                    schema, test["data"], test["valid"], id=plain_id(f"{group['description']}: {test['description']}")
                )
            )
    return cases


@both_paths
@pytest.mark.parametrize(("schema", "value", "valid"), _suite_cases())
def test_the_suites_ecmascript_regex_cases(schema: dict[str, Any], value: Any, valid: bool) -> None:
    """Every case of the JSON-Schema-Test-Suite's optional/ecmascript-regex.json."""
    assert verdict(schema, value) == ("accept" if valid else "SCHEMA_MISMATCH")


@both_paths
@pytest.mark.parametrize(
    ("pattern", "value"),
    [
        ("^[a-z]+$", "main\n"),
        ("^[a-z]+$", "main\r\n"),
        ("^\\d+$", "\u0663\u0664"),  # ARABIC-INDIC DIGIT THREE, FOUR
        ("^[0-9a-f]{2}$", "a\n"),
        ("^\\w+$", "caf\u00e9"),
        ("^[\\w.-]+$", "r\u00e9sum\u00e9.txt"),
        ("^.{1,3}$", "a\rb"),
        ("^a.b$", "a\u2028b"),
        ("^\\S+$", "a\u00a0b"),  # NO-BREAK SPACE is white space in ECMA-262
        ("\\B\u00e9", "a\u00e9"),  # \u00e9 is no ASCII word character: a boundary is there
        ("^(?:GET|HEAD)$", "GET\n"),
    ],
    ids=plain_id,
)
def test_values_re_took_are_refused(pattern: str, value: str) -> None:
    assert verdict({"type": "string", "pattern": pattern}, value) == "SCHEMA_MISMATCH"


@both_paths
@pytest.mark.parametrize(
    ("pattern", "value"),
    [
        ("^[a-z]+$", "main"),
        ("^\\d+$", "0123456789"),
        ("^\\p{Letter}+$", "caf\u00e9"),
        ("^\\p{Lu}\\p{Ll}*$", "\u00c9cole"),
        ("^\\P{L}+$", "123"),
        ("^\\s$", "\u3000"),  # IDEOGRAPHIC SPACE: a Space_Separator
        ("^\\u{1F600}$", "\U0001f600"),
        ("^\\uD83D\\uDE00$", "\U0001f600"),  # a surrogate pair is one code point
        ("^.$", "\U0001f600"),
        ("^(?<year>\\d{4})-\\d{2}$", "2026-12"),
        ("^\\cJ$", "\n"),
        ("^[\\b]$", "\b"),
        ("a{,2}", "a{,2}"),  # not a quantifier: read as itself
        ("^\\_\\-\\@$", "_-@"),  # identity escapes of punctuation
        ("^\\bid\\b", "id"),
        ("\\bid\\b", "\u00e9id"),
        ("^[^]$", "\n"),
    ],
    ids=plain_id,
)
def test_values_the_pattern_describes_are_taken(pattern: str, value: str) -> None:
    assert verdict({"type": "string", "pattern": pattern}, value) == "accept"


@both_paths
@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "patternProperties": {"^[a-z]+$": {}}, "additionalProperties": False},
        {"type": "object", "patternProperties": {"^[a-z]+$": {}}, "unevaluatedProperties": False},
        {"type": "object", "propertyNames": {"pattern": "^[a-z]+$"}},
        {
            "type": "object",
            "patternProperties": {"^[a-z]+$": {"type": "integer"}},
            "additionalProperties": {"type": "string"},
        },
    ],
    ids=["additionalProperties", "unevaluatedProperties", "propertyNames", "additional schema"],
)
def test_member_names_are_matched_as_ecma_262(schema: dict[str, Any]) -> None:
    """A name with a final newline is not covered by ``^[a-z]+$``."""
    assert verdict(schema, {"mode\n": 1}) == "SCHEMA_MISMATCH"
    assert verdict(schema, {"mode": 1}) == "accept"


@contextmanager
def deadline(seconds: int) -> Iterator[None]:
    """TimeoutError when the block runs longer (a backtracking search is
    interrupted: ``re`` checks for signals while it matches)."""

    def expire(signum: int, frame: Any) -> None:
        raise TimeoutError(f"still searching after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@both_paths
@pytest.mark.parametrize(
    ("pattern", "value"),
    [
        ("^(a+)+b", "a" * 5000 + "!"),
        ("^(a|a)*b$", "a" * 5000 + "!"),
        ("(x+x+)+y", "x" * 5000),
        ("^(\\w+\\s?)*$", "word " * 1000 + "!"),
        ("^([a-zA-Z0-9_\\.\\-])+\\@(([a-zA-Z0-9\\-])+\\.)+([a-zA-Z0-9]{2,4})+$", "a" * 5000 + "@"),
        ("^(.*a){12}$", "a" * 5000 + "!"),
    ],
    ids=["nested plus", "alternation", "unanchored", "words", "e-mail", "counted"],
)
def test_a_value_built_to_backtrack_is_refused_at_once(pattern: str, value: str) -> None:
    """Exponential in ``re`` from about 30 characters; here a pass over the value."""
    schema = {"type": "object", "properties": {"v": {"type": "string", "pattern": pattern}}, "required": ["v"]}
    registry = tools(schema)
    with deadline(20):
        for _ in range(3):
            with pytest.raises(decisions.OutputError) as caught:
                decisions.decide(response(call("t", json.dumps({"v": value}))), tools=registry)
            assert caught.value.code == "SCHEMA_MISMATCH"


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        ("^(?=.*[A-Z]).{8,}$", "a lookaround"),
        ("(?<!x)y", "a lookaround"),
        ("^(a)\\1$", "a backreference"),
        ("^(?<q>a)\\k<q>$", "a backreference"),
        ("^\\p{Script=Greek}+$", "the Unicode property 'Script'"),
        ("^a{1,30000}$", "a count above"),
        ("(" * 33 + ")" * 33, "nested more than"),
    ],
    ids=["lookahead", "lookbehind", "backreference", "named backreference", "script", "count", "nesting"],
)
def test_a_pattern_no_automaton_holds_is_refused_when_the_tool_is_built(pattern: str, reason: str) -> None:
    schema = {"type": "object", "properties": {"v": {"type": "string", "pattern": pattern}}}
    with pytest.raises(PatternUnsupported, match=reason) as caught:
        tools(schema)
    assert isinstance(caught.value, ValueError)
    assert "['properties']['v']['pattern']" in str(caught.value)


@pytest.mark.parametrize(
    "pattern",
    ["(?i)^a$", "^a\\Z", "(?P<n>a)", "\\a", "a**", "[z-a]", "(", "x{3,1}", "\\u{110000}", "[\\d-z]"],
    ids=plain_id,
)
def test_a_pattern_that_is_not_ecma_262_is_a_schema_error(pattern: str) -> None:
    """Python's syntax (``(?i)``, ``\\Z``, ``(?P<``) included: the model is told ECMA-262."""
    with pytest.raises(jsonschema.SchemaError, match="ECMA-262"):
        tools({"type": "object", "properties": {"v": {"type": "string", "pattern": pattern}}})
    with pytest.raises(jsonschema.SchemaError, match="ECMA-262"):
        tools({"type": "object", "patternProperties": {pattern: {}}})


@both_paths
def test_a_pattern_inside_a_value_is_not_read_as_one() -> None:
    """Only where a pattern keyword applies: a ``const`` holding ``pattern`` is data."""
    schema = {"type": "object", "properties": {"v": {"const": {"pattern": "(?=x)"}}}}
    decision = decisions.decide(response(call("t", '{"v": {"pattern": "(?=x)"}}')), tools=tools(schema))
    assert decision.executable_calls[0].arguments == {"v": {"pattern": "(?=x)"}}


# ---------------------------------------------------------------- the engine against an ECMA-262 one

_ATOMS = st.sampled_from(
    [
        "a", "b", "\u00e9", "\u0663", "-", ".", "\\d", "\\D", "\\w", "\\W", "\\s", "\\S", "[ab]", "[^a]",
        "[a-c\\d]", "[^\\s]", "[\\w-]", "\\.", "\\n", "\\u00e9", "\\p{L}", "\\P{Nd}", "(?:ab|b)", "(a|\\d)",
    ]
)  # fmt: skip
_QUANTIFIERS = st.sampled_from(["", "", "", "*", "+", "?", "{2}", "{1,3}", "{0,}", "*?", "+?"])
_TEXT = st.text(alphabet=list("ab\u00e9\u0663 -.\n\r\u2028\u00a0_1"), max_size=8)


@st.composite
def _patterns(draw: st.DrawFn) -> str:
    terms = draw(st.lists(st.tuples(_ATOMS, _QUANTIFIERS).map("".join), min_size=1, max_size=4))
    body = "".join(terms)
    if draw(st.booleans()):
        body = body + "|" + draw(_ATOMS)
    anchors = draw(st.sampled_from([("", ""), ("^", ""), ("", "$"), ("^", "$")]))
    return anchors[0] + body + anchors[1]


jsonschema_rs = pytest.importorskip("jsonschema_rs")


@settings(max_examples=300, deadline=None)
@given(pattern=_patterns(), text=_TEXT)
def test_the_engine_agrees_with_an_ecma_262_engine(pattern: str, text: str) -> None:
    """Same verdict as ``jsonschema-rs`` (whose patterns follow ECMA-262) on
    patterns made of the escapes, classes and anchors where ``re`` differs.
    Not ``\\b``: ``jsonschema-rs`` takes every script's letters as word
    characters there, ECMA-262 only ``[A-Za-z0-9_]`` (the cases above)."""
    expected = jsonschema_rs.Draft202012Validator({"pattern": pattern}).is_valid(text)
    assert compile_pattern(pattern).search(text) is expected


def test_a_pattern_that_is_not_a_string_is_an_error() -> None:
    with pytest.raises(PatternError):
        compile_pattern(5)  # type: ignore[arg-type]


# ---------------------------------------------------------------- the engine itself

_U = PatternUnsupported


@pytest.mark.parametrize(
    ("pattern", "kind", "what", "offset"),
    [
        ("[", PatternError, "an unterminated character class", 0),
        ("a[b-", PatternError, "an unterminated character class", 1),
        ("[xb-a]", PatternError, "a range out of order", 2),
        ("x[a-\\d]", PatternError, "a class escape as the end of a range", 2),
        ("[\\w-z]", PatternError, "a class escape as the end of a range", 1),
        ("a(", PatternError, "an unterminated group", 1),
        ("(?<a>b", PatternError, "an unterminated group", 0),
        ("x(?", PatternError, "an unknown group '(?'", 1),
        ("(?i)a", PatternError, "an unknown group '(?'", 0),
        ("x(?<a", PatternError, "a group name that is not an identifier", 1),
        ("(?<>a)", PatternError, "a group name that is not an identifier", 0),
        ("(?<abc", PatternError, "a group name that is not an identifier", 0),
        ("(?<1>a)", PatternError, "a group name that is not an identifier", 0),
        ("x(?=a)", _U, "a lookaround (not held by an automaton)", 1),
        ("(?!a)", _U, "a lookaround (not held by an automaton)", 0),
        ("(?<=a)", _U, "a lookaround (not held by an automaton)", 0),
        ("(?<!a)", _U, "a lookaround (not held by an automaton)", 0),
        ("a)", PatternError, "an unmatched ')'", 1),
        ("a|*", PatternError, "nothing to repeat", 2),
        ("{1}", PatternError, "nothing to repeat", 0),
        ("a**", PatternError, "a quantifier after a quantifier", 2),
        ("a{2}?{3}", PatternError, "a quantifier after a quantifier", 5),
        ("ax{3,2}", PatternError, "a quantifier whose maximum is below its minimum", 2),
        ("^*", PatternError, "a quantifier after an assertion", 1),
        ("a$+", PatternError, "a quantifier after an assertion", 2),
        ("\\b{2}", PatternError, "a quantifier after an assertion", 2),
        ("a{20001}", _U, "a count above 20000", 1),
        ("a{1,20001}", _U, "a count above 20000", 1),
        ("a{1," + "9" * 10 + "}", _U, "a count above 20000", 1),
        ("a\\", PatternError, "a '\\' at the end", 1),
        ("a\\pL", PatternError, "'\\p' without '{'", 1),
        ("x\\p{L", PatternError, "an unterminated '\\p{'", 1),
        ("\\p{Foo}", _U, "the Unicode property 'Foo'", 0),
        ("a\\p{Script=Latin}", _U, "the Unicode property 'Script' (only General_Category is known)", 1),
        ("\\p{gc=Any}", _U, "the Unicode property 'Any'", 0),
        ("\\p{gc=Foo}", _U, "the Unicode property 'Foo'", 0),
        ("a\\c1", PatternError, "'\\c' without a letter", 1),
        ("\\c", PatternError, "'\\c' without a letter", 0),
        ("a\\x4", PatternError, "an escape without 2 hexadecimal digits", 1),
        ("\\xg1", PatternError, "an escape without 2 hexadecimal digits", 0),
        ("\\u12", PatternError, "an escape without 4 hexadecimal digits", 0),
        ("a\\u{", PatternError, "a '\\u{...}' escape that is not a code point", 1),
        ("\\u{41", PatternError, "a '\\u{...}' escape that is not a code point", 0),
        ("\\u{}", PatternError, "a '\\u{...}' escape that is not a code point", 0),
        ("\\u{110000}", PatternError, "a '\\u{...}' escape that is not a code point", 0),
        ("\\u{G}", PatternError, "a '\\u{...}' escape that is not a code point", 0),
        ("\\uD800\\uZZZZ", PatternError, "an escape without 4 hexadecimal digits", 6),
        ("(a)\\1", _U, "a backreference (not held by an automaton)", 3),
        ("\\k<a>", _U, "a backreference (not held by an automaton)", 0),
        ("a\\00", PatternError, "an octal escape", 1),
        ("\\a", PatternError, "an unknown escape '\\a'", 0),
        ("[\\B]", PatternError, "an unknown escape '\\B'", 1),
        ("a" + "(" * 33 + ")" * 33, _U, "groups nested more than 32 deep", 33),
        ("((()" + "(" * 31 + ")" * 31 + "))", _U, "groups nested more than 32 deep", 34),  # depth after a closed group
    ],
    ids=plain_id,
)
def test_a_pattern_error_says_what_and_where(pattern: str, kind: type[PatternError], what: str, offset: int) -> None:
    with pytest.raises(PatternError) as caught:
        compile_pattern(pattern)
    assert type(caught.value) is kind
    assert str(caught.value) == f"{what} at offset {offset} of the pattern {pattern!r}"


def test_a_count_of_thousands_of_digits_is_refused_unread() -> None:
    """Not converted to an int (past 4,300 digits Python refuses to)."""
    pattern = "a{" + "9" * 5000 + "}"
    with pytest.raises(PatternUnsupported) as caught:
        compile_pattern(pattern)
    assert str(caught.value) == f"a count above 20000 at offset 1 of the pattern {pattern[:200]!r}"


def test_the_automaton_bound() -> None:
    """20,000 states: ``a{19999}`` is 19,999 reading states and the match."""
    assert not compile_pattern("a{19999}").search("a" * 20)
    for pattern in ("^a{19999}", "a{19999}b", "a{20000}", "a{0,20000}"):
        with pytest.raises(PatternUnsupported) as caught:
            compile_pattern(pattern)
        assert str(caught.value) == "a pattern whose automaton passes 20000 states"


def test_a_search_that_would_build_too_much_is_stopped() -> None:
    """Each new step costs the states it visits; past the bound the search
    stops (an unanchored ``a{19999}`` against 20,000 ``a`` would visit 200
    million) and says so, where the steps it built cost nothing again."""
    compiled = compile_pattern("a{1500}")
    with pytest.raises(SearchTooCostly, match="passed 1000000 states"):
        compiled.search("a" * 1500)
    assert compile_pattern("^a{1500}$").search("a" * 1500)  # anchored: one state a step
    assert not compile_pattern("[a-z]{1,64}x").search("ab" * 100_000)  # every step built once


@both_paths
@pytest.mark.parametrize(
    "schema",
    [
        {"type": "string", "pattern": "a{300}"},
        {"type": "object", "patternProperties": {"a{300}": {"type": "integer"}}},
        {"type": "object", "patternProperties": {"a{300}": {}}, "additionalProperties": False},
    ],
    ids=["pattern", "patternProperties", "additionalProperties"],
)
def test_a_value_too_costly_to_search_is_refused(schema: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """Never taken as matching nor as not matching: refused at its root.
    (280 ``a`` and a ``b`` do not match: the fast validator sends them on.)"""
    monkeypatch.setattr(_ecma, "MAX_SEARCH_WORK", 20_000)
    text = "a" * 280 + "b"
    value: Any = text if schema["type"] == "string" else {text: "x"}
    wrapped = {"type": "object", "properties": {"v": schema}, "required": ["v"]}
    with pytest.raises(decisions.OutputError) as caught:
        decisions.decide(response(call("t", json.dumps({"v": value}))), tools=tools(wrapped))
    assert caught.value.code == "SCHEMA_MISMATCH"
    assert caught.value.issues == (
        {
            "path": "$.calls[0].arguments",
            "code": "invalid",
            "expected": "a value whose strings the schema's patterns can be matched against within their search bound",
        },
    )


def test_a_long_pattern_is_shown_cut_in_its_error() -> None:
    pattern = "x" * 250 + "("
    with pytest.raises(PatternError) as caught:
        compile_pattern(pattern)
    assert str(caught.value) == f"an unterminated group at offset 250 of the pattern {pattern[:200]!r}"


@pytest.mark.parametrize(
    ("pattern", "text", "found"),
    [
        # escapes and surrogate pairs
        ("^\\u{10FFFF}$", "\U0010ffff", True),
        ("^\\u{41}\\u{42}$", "AB", True),
        ("^\\uD800\\uDC00$", "\U00010000", True),
        ("^\\uDBFF\\uDFFF$", "\U0010ffff", True),
        ("^\\uD7FF\\uDC00$", "\ud7ff\udc00", True),  # D7FF leads nothing: two code points
        ("^\\uD800\\uE000$", "\ud800\ue000", True),  # E000 trails nothing
        ("^\\uD800\\uDBFF$", "\ud800\udbff", True),
        ("^\\uD800A$", "\ud800A", True),
        ("^\\uD800\\u0041$", "\ud800A", True),
        ("^\\uDC00$", "\udc00", True),
        ("^\\x41\\x7e$", "A~", True),
        ("^\\uDC00\\uDC00$", "\udc00\udc00", True),  # two trails are no pair
        ("^\\uD800\\uDC00x$", "\U00010000x", True),
        ("^\\ca\\cz\\cA\\cZ$", "\x01\x1a\x01\x1a", True),
        ("^\\cj\\cJ\\t\\v\\f\\r\\n$", "\n\n\t\x0b\x0c\r\n", True),
        ("^\\0$", "\x00", True),
        ("^[\\b\\-]$", "-", True),
        ("^[\\b]$", "\x08", True),
        # classes
        ("^[a-a]$", "a", True),
        ("^[\\d]$", "5", True),
        ("^[\\dx]$", "x", True),
        ("^[^\\d]$", "5", False),
        ("^[^\\dx]$", "y", True),
        ("^[^a]$", "^", True),
        ("^[^a]$", "[", True),
        ("^[a-]$", "-", True),
        ("^[-a]$", "-", True),
        ("^[^]$", "\u2028", True),
        ("^[]$", "", False),
        ("a[]", "a", False),
        ("^[\\P{L}]$", "1", True),
        ("^[\\P{L}]$", "a", False),
        ("^\\P{L}$", "\u00e9", False),
        # properties
        ("^\\p{Letter}$", "\u00e9", True),
        ("^\\p{L}$", "1", False),
        ("^\\p{gc=Lu}$", "A", True),
        ("^\\p{General_Category=Lu}$", "a", False),
        ("^\\p{Any}$", "\U0010ffff", True),
        ("^\\p{ASCII}$", "\x7f", True),
        ("^\\p{ASCII}$", "\x80", False),
        ("^\\p{Assigned}$", "a", True),
        ("^\\p{Assigned}$", "\U000e0080", False),
        ("^\\p{LC}$", "\u01c5", True),  # LATIN CAPITAL LETTER D WITH SMALL LETTER Z WITH CARON: Lt
        ("^\\p{Cased_Letter}$", "\u02b0", False),  # a modifier letter (Lm)
        ("^\\p{Combining_Mark}$", "\u0301", True),
        ("^\\p{punct}$", "!", True),
        ("^\\p{cntrl}$", "\x00", True),
        ("^\\p{digit}$", "\u0663", True),
        # groups, nesting, alternation, counts
        ("^(?<name>a)(?:b)$", "ab", True),
        ("^" + "(a)" * 40 + "$", "a" * 40, True),
        ("^" + "(" * 32 + "a" + ")" * 32 + "$", "a", True),
        ("^(a|b|c)$", "c", True),
        ("^(a|b|c)$", "b", True),
        ("^a{2,3}$", "aaa", True),
        ("^a{2}$", "aaa", False),
        ("^(a*)*b$", "aaab", True),
        ("^(a*)*b$", "aaa", False),
        ("(a?)+$", "", True),
        ("^(|a)*$", "aa", True),
        ("^>(?<n>a)$", ">a", True),
        ("^a{2,}$", "a", False),
        ("^a{2,}$", "aaaa", True),
        ("^a{2,3}$", "aaaa", False),
        ("^a{0}$", "", True),
        ("^(?:ab){2}$", "abab", True),
        ("^a??b$", "b", True),
        # anchors and boundaries
        ("a^", "a", False),
        ("$a", "a", False),
        ("^$", "\n", False),
        ("\\B", "", True),
        ("\\b", "", False),
        ("a\\b", "a", True),
        ("a\\B", "a", False),
        ("\\bb", "ab", False),
        ("^\\Ba", "a", False),
        ("x$|^y", "yx", True),
    ],
    ids=plain_id,
)
def test_the_engine_searches_as_ecma_262(pattern: str, text: str, found: bool) -> None:
    compiled = compile_pattern(pattern)
    assert compiled.search(text) is found
    assert compiled.search(text) is found  # again, from the built states
    assert repr(compiled) == f"Pattern({pattern!r})"


def test_the_general_categories_by_every_name() -> None:
    names = _ecma._category_names()
    letters = frozenset({"Lu", "Ll", "Lt", "Lm", "Lo"})
    assert names["L"] == names["Letter"] == letters
    assert names["LC"] == names["Cased_Letter"] == frozenset({"Lu", "Ll", "Lt"})
    assert names["M"] == names["Mark"] == names["Combining_Mark"] == frozenset({"Mc", "Me", "Mn"})
    assert names["Nd"] == names["Decimal_Number"] == names["digit"] == frozenset({"Nd"})
    assert names["P"] == names["punct"] == frozenset({"Pc", "Pd", "Pe", "Pf", "Pi", "Po", "Ps"})
    assert names["Cc"] == names["cntrl"] == names["Control"] == frozenset({"Cc"})
    assert names["C"] == names["Other"] == frozenset({"Cc", "Cf", "Cn", "Co", "Cs"})
    assert names["Z"] == frozenset({"Zl", "Zp", "Zs"})
    assert names["S"] == frozenset({"Sc", "Sk", "Sm", "So"})
    assert names["N"] == frozenset({"Nd", "Nl", "No"})
    # 30 categories by short and long name, cntrl and digit; 7 groups by letter and name, Combining_Mark
    # and punct; LC and Cased_Letter
    assert len(names) == 30 + 30 + 2 + 7 + 7 + 2 + 2
    assert names == _ecma._CATEGORY_NAMES


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the engine's building calls, in order, from now on."""
    calls: list[str] = []
    for name in ("_step", "_class_of", "_closure"):
        original = getattr(_ecma.Pattern, name)
        monkeypatch.setattr(
            _ecma.Pattern, name, lambda self, *a, _o=original, _n=name: calls.append(_n) or _o(self, *a)
        )
    return calls


def test_a_search_builds_each_step_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Within one search a step met again is read from what was built; a
    character's class is kept from one search to the next."""
    compiled = compile_pattern("^(?:ab|ba)*\\b$")
    calls = _counting(monkeypatch)
    assert compiled.search("ab" * 1000)
    assert calls.count("_class_of") == 2
    built = calls.count("_step")
    assert built == 3  # a after the start, b after a, a after b
    del calls[:]
    assert not compiled.search("ab" * 1000 + "a")
    assert calls.count("_class_of") == 0  # kept from the search before
    assert calls.count("_step") == built  # the same steps, built for this search again


def test_what_a_search_costs_does_not_depend_on_the_searches_before(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bound is met by the same text every time: no search leaves steps
    that would let a later one pass it, or decide otherwise."""
    monkeypatch.setattr(_ecma, "MAX_SEARCH_WORK", 20_000)
    compiled = compile_pattern("a{300}")
    for _ in range(3):
        with pytest.raises(SearchTooCostly, match="passed 20000 states"):
            compiled.search("a" * 300)
    assert not compiled.search("a" * 150)  # under the bound: searched to its end


def test_the_cache_bounds_are_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    """At the bound, a table is emptied before it takes one more entry."""
    monkeypatch.setattr(_ecma, "_CACHE_LIMIT", 4)
    compiled = compile_pattern("[a-z]")
    assert not compiled.search("0123456")  # 7 characters: 4 kept, emptied at the 5th, then 5, 6, 7
    assert len(compiled._class_ids) == 3
    calls = _counting(monkeypatch)
    assert not compile_pattern("^(?:ab|ba)*$").search("abab" + "c")
    # steps (start, a), (after a, b), (after b, a), (after a, b) is known again... bound 4: all kept
    assert calls.count("_step") == 4
    del calls[:]
    assert not compile_pattern("^(?:ab|cd|ef)*$").search("abcdefab" + "x")
    assert calls.count("_step") == 9  # past four kept steps the table is emptied: a, b after it are built again


def test_a_text_of_many_characters_drops_and_rebuilds_its_states(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the cache bound the built states are dropped, and the search goes on right."""
    monkeypatch.setattr(_ecma, "_CACHE_LIMIT", 4)
    compiled = compile_pattern("^[a-z]*\\d$")
    assert compiled.search("abcdefghijklmnopqrstuvwxyz5")
    assert not compiled.search("abcdefghijklmnopqrstuvwxyz55")
    assert compiled.search("zyxwvutsrqponmlkjihgfedcba0")
    assert len(compiled._class_ids) <= 4


def test_a_strict_mode_answer_too_costly_to_search_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """Restoring an answer of the provider's strict mode asks which branch
    each value fits: a value too costly to search fits none (left as
    written), and the decision refuses it, never an untyped error."""
    monkeypatch.setattr(_ecma, "MAX_SEARCH_WORK", 20_000)
    branches = [
        {"type": "object", "properties": {"s": {"type": "string", "pattern": "a{300}"}, "t": {"type": "string"}}, "required": ["s"]},
        {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
    ]  # fmt: skip
    schema = {"type": "object", "properties": {"x": {"anyOf": branches}}, "required": ["x"]}
    plan = decisions.build_request(decisions.capabilities("openai-chat"), tools=[ToolDefinition("t", schema)])
    assert "#/properties/x/anyOf/0/properties/t" in plan.records[0].nullable_added
    answer = response(call("t", json.dumps({"x": {"s": "a" * 280 + "b", "t": None}})))
    with pytest.raises(decisions.OutputError) as caught:
        decisions.decide(plan.prepare(answer), tools=tools(schema))
    assert caught.value.code == "SCHEMA_MISMATCH"
    assert caught.value.issues[0]["code"] == "invalid"


def test_the_search_bound_is_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    """``ab`` against ``xx``: one state visited for each of the two steps and
    the end, three in all: a bound of three is enough, two is not."""
    compiled = compile_pattern("ab")
    monkeypatch.setattr(_ecma, "MAX_SEARCH_WORK", 3)
    assert not compiled.search("xx")
    monkeypatch.setattr(_ecma, "MAX_SEARCH_WORK", 2)
    pattern = "ab" + "|x{2}" * 60  # longer than the 200 characters an error shows
    with pytest.raises(SearchTooCostly) as caught:
        compile_pattern(pattern).search("yy")
    assert str(caught.value) == f"a search of the pattern {pattern[:200]!r} passed 2 states"
    with pytest.raises(SearchTooCostly):
        compiled.search("xx")


def test_the_step_table_is_emptied_at_its_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """``aaaax`` three times: six different steps (a after 0..3 a, x after 4 a,
    and the first a again after an x rather than at the start). With room
    for four, the table is emptied as it takes a fifth step, so each round
    builds its five again: fifteen."""
    calls = _counting(monkeypatch)
    assert not compile_pattern("a{9}").search("aaaax" * 3)
    assert calls.count("_step") == 6
    monkeypatch.setattr(_ecma, "_CACHE_LIMIT", 4)
    del calls[:]
    assert not compile_pattern("a{9}").search("aaaax" * 3)
    assert calls.count("_step") == 15


@pytest.mark.parametrize(("source", "kind"), [(b"^a$", "bytes"), (5, "int"), (None, "NoneType")])
def test_a_pattern_that_is_no_string_is_refused_by_name(source: Any, kind: str) -> None:
    with pytest.raises(_ecma.PatternError) as info:
        _ecma.parse(source)
    assert str(info.value) == f"a pattern must be a string, not {kind}"
