"""The repair loop as a caller reads it: the budget's own errors in full
(code, message, path, hint, cause), a truncation error re-raised with its
fields and the advice, the prompt's lines (where, the call, the excerpt and
its caret, the issues and their cap, the closing instruction) and its length
bound, and the fixes named only when they changed something."""

from __future__ import annotations

from typing import Any

import pytest

from decisions.errors import DomainError, OutputError, ParseError, PolicyError, SchemaError, StreamError
from decisions.recover.repair import (
    RepairBudget,
    apply_fixes,
    fingerprint,
    fix_invalid_escapes,
    is_repairable,
    repair_prompt,
)


def schema_error(*paths: str, path: str | None = None) -> SchemaError:
    issues = tuple({"path": p, "code": "type", "expected": "a string"} for p in paths)
    return SchemaError("SCHEMA_MISMATCH", path=path, issues=issues)


# ---------------------------------------------------------------- fingerprints and the budget


def test_the_fingerprint_of_several_issues_is_their_sorted_distinct_paths() -> None:
    error = schema_error("$.b", "$.a", "$.b")
    assert fingerprint(error).to_dict() == {"layer": "schema", "code": "SCHEMA_MISMATCH", "path": "$.a,$.b"}
    assert fingerprint(schema_error("$.b", path="$.x")).path == "$.x"
    assert fingerprint(SchemaError("EMPTY_DECISION")).path is None


@pytest.mark.parametrize(
    ("error", "repairable"),
    [
        (ParseError("UNEXPECTED_END"), True),
        (schema_error("$.a"), True),
        (DomainError("UNKNOWN_TOOL"), True),
        (PolicyError("SCOPE_DENIED"), True),
        (ParseError("UNEXPECTED_END", retryable=False), False),
        (StreamError("MALFORMED_EVENT", retryable=True), False),
        (PolicyError("REPEATED_ERROR", retryable=True), False),
        (PolicyError("REPAIR_BUDGET_EXHAUSTED", retryable=True), False),
    ],
)
def test_what_is_repairable(error: OutputError, repairable: bool) -> None:
    assert is_repairable(error) is repairable


def test_a_repeated_error_in_full() -> None:
    budget = RepairBudget(max_attempts=5)
    first = schema_error("$.a")
    budget.next_prompt(first)
    again = schema_error("$.a")
    with pytest.raises(PolicyError) as info:
        budget.next_prompt(again)
    error = info.value
    assert (error.code, error.message, error.path, error.hint) == (
        "REPEATED_ERROR",
        "the model repeated SCHEMA_MISMATCH at $.a after a repair prompt",
        "$.a",
        "the same error came back; change the prompt or the schema instead of asking again",
    )
    assert error.__cause__ is again
    assert (budget.attempts, budget.remaining) == (1, 4)
    with pytest.raises(PolicyError) as info:
        budget.next_prompt(SchemaError("EMPTY_DECISION"))
        budget.next_prompt(SchemaError("EMPTY_DECISION"))
    assert info.value.message == "the model repeated EMPTY_DECISION at the same place after a repair prompt"
    assert info.value.path is None


def test_an_exhausted_budget_in_full() -> None:
    budget = RepairBudget(max_attempts=2)
    budget.next_prompt(schema_error("$.a"))
    budget.next_prompt(schema_error("$.b"))
    last = schema_error("$.c")
    with pytest.raises(PolicyError) as info:
        budget.next_prompt(last)
    error = info.value
    assert (error.code, error.message, error.path) == (
        "REPAIR_BUDGET_EXHAUSTED",
        "2 repair attempt(s) were spent; the last error was SCHEMA_MISMATCH",
        "$.c",
    )
    assert error.__cause__ is last
    assert budget.to_dict() == {
        "max_attempts": 2,
        "attempts": 2,
        "history": [
            {"layer": "schema", "code": "SCHEMA_MISMATCH", "path": "$.a"},
            {"layer": "schema", "code": "SCHEMA_MISMATCH", "path": "$.b"},
        ],
    }
    # no attempt at all
    with pytest.raises(PolicyError) as info:
        RepairBudget(max_attempts=0).next_prompt(last)
    assert info.value.code == "REPAIR_BUDGET_EXHAUSTED"


@pytest.mark.parametrize("bad", [-1, 1.0, True, "2", None])
def test_max_attempts_must_be_a_non_negative_int(bad: Any) -> None:
    with pytest.raises(ValueError, match=r"^max_attempts must be a non-negative int$"):
        RepairBudget(max_attempts=bad)


def test_a_truncation_error_is_raised_again_with_its_fields_and_the_advice() -> None:
    error = StreamError("INCOMPLETE_RESPONSE", "cut", retryable=True, offset=7, path="$.x", hint="old")
    with pytest.raises(StreamError) as info:
        RepairBudget().next_prompt(error)
    again = info.value
    assert (again.code, again.message, again.retryable, again.offset, again.path) == (
        "INCOMPLETE_RESPONSE",
        "cut",
        True,
        7,
        "$.x",
    )
    assert again.hint is not None and again.hint.startswith("the output was cut off before it was complete")
    # an error the model cannot fix is raised as it is
    other = StreamError("MALFORMED_EVENT")
    with pytest.raises(StreamError) as info:
        RepairBudget().next_prompt(other)
    assert info.value is other


def test_the_budget_passes_its_length_bound_and_redactor_to_the_prompt() -> None:
    error = schema_error(*[f"$.field_{i}_{'x' * 40}" for i in range(12)])
    prompt = RepairBudget(max_chars=300).next_prompt(error)
    assert len(prompt) <= 300
    assert len(RepairBudget(max_chars=300).next_prompt(error, max_chars=1000)) > 300


# ---------------------------------------------------------------- the prompt


def test_a_schema_prompt_line_by_line() -> None:
    error = SchemaError(
        "SCHEMA_MISMATCH",
        path="$.calls[0].arguments",
        issues=(
            {"path": "$.calls[0].arguments.path", "code": "required", "expected": "a string"},
            {"path": "$.calls[0].arguments.limit", "code": "minimum"},
        ),
        hint="give the arguments the tool declares",
    )
    lines = repair_prompt(error, high_impact=("path",), schema_name="read_args").split("\n")
    assert lines[0].startswith("Your previous response could not be used: schema error SCHEMA_MISMATCH (")
    assert lines[1:] == [
        "Where: $.calls[0].arguments",
        "- $.calls[0].arguments.path: required (expected a string); do not invent this value: "
        "if you do not know it, do not make the call",
        "- $.calls[0].arguments.limit: minimum",
        "Fix: give the arguments the tool declares",
        "Send the tool call again with corrected arguments matching the schema read_args; change only what is wrong.",
    ]


def test_issues_past_the_cap_are_counted() -> None:
    error = schema_error(*[f"$.a{i}" for i in range(15)])
    lines = repair_prompt(error, target="value").split("\n")
    assert [line for line in lines if line.startswith("- ")] == [
        *(f"- $.a{i}: type (expected a string)" for i in range(12)),
        "- and 3 more issue(s)",
    ]
    assert (
        lines[-1] == "Return exactly one corrected JSON value matching the supplied schema; change only what is wrong."
    )
    exactly = schema_error(*[f"$.a{i}" for i in range(12)])
    assert "more issue" not in repair_prompt(exactly)


def test_a_call_prompt_names_the_call_and_the_other_calls() -> None:
    error = PolicyError("SCOPE_DENIED", path="$.calls[1].arguments.path", call_index=1, call_id="b", tool="write")
    error.batch = (
        {"index": 0, "call_id": "a", "tool": "read", "status": "not_run", "code": "BATCH_REJECTED"},
        {"index": 1, "call_id": "b", "tool": "write", "status": "denied", "code": "SCOPE_DENIED"},
        {"index": 2, "call_id": "c", "tool": "rm", "status": "denied", "code": "TOOL_DENIED"},
    )
    lines = repair_prompt(error).split("\n")
    assert lines[1] == "The call: 'b' to the tool 'write'."
    assert lines[-4:] == [
        "None of the calls in this response ran. The others:",
        "- call 'a' to 'read': not run because of this error; send it again unchanged with the corrected call",
        "- call 'c' to 'rm': refused too (TOOL_DENIED); correct it as well or leave it out",
        "Send the call 'b' to 'write' again with corrected arguments matching the supplied schema; "
        "change only what is wrong.",
    ]
    # the batch of the failed call alone lists nothing
    error.batch = (error.batch[1],)
    assert "The others" not in repair_prompt(error)


def test_other_calls_past_the_cap_are_counted() -> None:
    error = PolicyError("SCOPE_DENIED", call_index=0, call_id="c0", tool="t")
    error.batch = tuple(
        {"index": i, "call_id": f"c{i}", "tool": "t", "status": "not_run", "code": "BATCH_REJECTED"} for i in range(14)
    )
    lines = repair_prompt(error, max_chars=5000).split("\n")
    assert sum(line.startswith("- call ") for line in lines) == 12
    assert "- and 1 more call(s)" in lines


def test_a_parse_prompt_excerpt_and_caret() -> None:
    text = '{"k": ' + "1, " * 20 + "}"
    error = ParseError("UNEXPECTED_CHARACTER", doc=text, pos=len(text) - 1)
    lines = repair_prompt(error).split("\n")
    assert lines[1] == f"Position: line 1, column {len(text)} (character {len(text) - 1})."
    near, excerpt, caret = lines[2:5]
    assert near == "Near:"
    assert excerpt == "  ..." + text[len(text) - 1 - 32 :]
    assert caret == "  " + " " * (3 + 32) + "^"
    # an offset near the start: no leading "...", a trailing one
    early = ParseError("UNEXPECTED_CHARACTER", doc=text, pos=2)
    excerpt, caret = repair_prompt(early).split("\n")[3:5]
    assert excerpt == "  " + text[:34] + "..."
    assert caret == "  " + "  ^"
    # line breaks and tabs are shown as spaces, one for one
    broken = ParseError("UNEXPECTED_CHARACTER", doc='{\n\t"a":\r\n x}', pos=10)
    excerpt, caret = repair_prompt(broken).split("\n")[3:5]
    assert excerpt == '  {  "a":   x}' and caret == "  " + " " * 10 + "^"


def test_a_parse_prompt_without_text_or_out_of_range_has_no_excerpt() -> None:
    error = ParseError("UNEXPECTED_END", doc="", pos=0)
    assert "Near:" not in repair_prompt(error)
    assert "Near:" in repair_prompt(error, text="{")
    assert "Near:" not in repair_prompt(ParseError("UNEXPECTED_END", doc="", pos=0), text="")


@pytest.mark.parametrize(
    ("doc", "pos", "shown"),
    [('"a\\d"', 2, "d"), ('"a\\d"', 3, "d"), ('"\\q"', 1, "q"), ('"ab\\x"', 4, "x"), ('"\\\t"', 1, " ")],
)
def test_the_escape_fix_names_the_escape(doc: str, pos: int, shown: str) -> None:
    prompt = repair_prompt(ParseError("INVALID_ESCAPE", doc=doc, pos=pos))
    assert f"write \\\\{shown} instead of \\{shown}" in prompt


def test_the_escape_fix_without_the_escape_in_reach_is_the_general_one() -> None:
    for doc, pos in [('"abcd\\', 5), ('"abcdef"', 6), ('"\\n"', 1)]:
        prompt = repair_prompt(ParseError("INVALID_ESCAPE", doc=doc, pos=pos))
        assert "\nFix: a backslash inside a JSON string must be written as '\\\\'.\n" in prompt
        assert "instead of" not in prompt


def test_the_length_bound_cuts_the_body_and_keeps_the_closing() -> None:
    error = schema_error(*[f"$.{'x' * 80}{i}" for i in range(12)])
    closing = "Return exactly one corrected JSON value matching the supplied schema; change only what is wrong."
    prompt = repair_prompt(error, max_chars=400, target="value")
    assert len(prompt) <= 400 and prompt.endswith(" ...\n" + closing)
    whole = repair_prompt(error, max_chars=100_000, target="value")
    assert not whole.endswith(" ...\n" + closing) and whole.endswith("\n" + closing)
    assert len(repair_prompt(error, max_chars=200, target="value")) <= 200
    with pytest.raises(ValueError, match=r"^max_chars must be at least 200$"):
        repair_prompt(error, max_chars=199)


def test_what_may_not_be_sent_for_repair() -> None:
    with pytest.raises(ValueError, match=r"^INCOMPLETE_TOOL_CALL: the output was cut off"):
        repair_prompt(StreamError("INCOMPLETE_TOOL_CALL"))
    with pytest.raises(ValueError, match=r"^MALFORMED_EVENT is not repairable by the model; handle it in the caller$"):
        repair_prompt(StreamError("MALFORMED_EVENT"))


# ---------------------------------------------------------------- fixes


def test_the_escape_fixer_counts_and_keeps_text_outside_strings() -> None:
    assert fix_invalid_escapes('\\d "\\d\\n\\\\" \\q "x\\"y\\w"') == ('\\d "\\\\d\\n\\\\" \\q "x\\"y\\\\w"', 2)
    assert fix_invalid_escapes('"unterminated \\d') == ('"unterminated \\\\d', 1)
    assert fix_invalid_escapes('"ends with \\') == ('"ends with \\\\', 1)
    assert fix_invalid_escapes("") == ("", 0)


def test_fixes_are_named_only_when_they_changed_something() -> None:
    assert apply_fixes('{"a": "\\d"}', ["invalid_escapes", "invalid_escapes"]).repaired == ("invalid_escapes",)
    fenced = apply_fixes('```json\n{"a": "\\d"}\n```', ["markdown_fence", "invalid_escapes"])
    assert (fenced.value, fenced.repaired) == ({"a": "\\d"}, ("invalid_escapes", "markdown_fence"))
    plain = apply_fixes('{"a": 1}', ["invalid_escapes", "markdown_fence"])
    assert (plain.value, plain.text, plain.repaired) == ({"a": 1}, '{"a": 1}', ())
    with pytest.raises(
        ValueError, match=r"^unknown fix 'quotes'; the whitelist is \('invalid_escapes', 'markdown_fence'\)$"
    ):
        apply_fixes("{}", ["quotes"])  # type: ignore[list-item]
