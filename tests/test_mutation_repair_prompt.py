"""The repair prompt and the fixes at their edges, as a caller reads them: the
escape rewrite only for the backslash at (or just before) the error's offset,
the excerpt's marks, the issue lines' defaults and the "do not invent" rule by
the argument's name, the exact length bound, a truncation error re-raised with
every field, and the caller's limits applied to every parse a fix makes."""

from __future__ import annotations

import re

import pytest

from decisions.errors import ERROR_CODES, ParseError, PolicyError, SchemaError, StreamError
from decisions.limits import Limits
from decisions.recover.repair import RepairBudget, apply_fixes, fingerprint, fix_response, repair_prompt
from decisions.recover.trace import Redactor
from decisions.types import NormalizedResponse, TextItem, ToolCallItem

REWRITE = re.compile(r"write \\\\(.) instead of \\(.)")


def rewrite(doc: str, pos: int) -> str | None:
    """The escape the prompt's fix line tells the model to double, if any."""
    found = REWRITE.search(repair_prompt(ParseError("INVALID_ESCAPE", doc=doc, pos=pos)))
    return found.group(1) if found else None


# ---------------------------------------------------------------- the escape rewrite


@pytest.mark.parametrize(
    ("doc", "pos", "shown"),
    [
        ("\\d", 0, "d"),  # the backslash is the document's first character
        ("\\d", 1, "d"),
        ("\\dxy", 2, "d"),  # two characters after the backslash: still in reach
        ("\\dxyz", 3, None),  # three: out of reach
        ("a\\d", 0, None),  # a backslash after the offset is not the error's
        ("ab\\d", 1, None),
        ('"\\\\\\d"', 4, "d"),  # `\\` then `\d`: the last backslash before the offset
        ('"\\\\\\d"', 3, "d"),
        ('"\\d abc"', 6, None),  # an earlier escape far before the offset
        ('"\\d\\n"', 4, None),  # the nearest backslash starts a valid escape
        ('"\\', 1, None),  # a backslash that ends the text
    ],
)
def test_the_rewrite_names_the_backslash_at_or_just_before_the_offset(doc: str, pos: int, shown: str | None) -> None:
    assert rewrite(doc, pos) == shown


def test_a_real_invalid_escape_gets_the_table_fix_and_the_rewrite() -> None:
    with pytest.raises(ParseError) as info:
        apply_fixes('{"a": "x\\q"}')
    fix = [line for line in repair_prompt(info.value).split("\n") if line.startswith("Fix: ")]
    assert fix == [
        "Fix: a backslash inside a JSON string must be written as '\\\\'; write \\\\q instead of \\q "
        '(valid escapes are \\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX).'
    ]


def test_the_table_fix_is_written_for_the_errors_place() -> None:
    with pytest.raises(ParseError) as info:
        apply_fixes('["ok", "a\tb"]')
    assert info.value.code == "CONTROL_CHARACTER"
    fix = [line for line in repair_prompt(info.value).split("\n") if line.startswith("Fix: ")]
    assert fix == ["Fix: escape it (\\n, \\t or \\u0009)."]


def test_only_an_invalid_escape_gets_the_rewrite() -> None:
    prompt = repair_prompt(ParseError("UNEXPECTED_CHARACTER", doc='"\\q"', pos=1))
    assert "instead of" not in prompt


def test_a_grammar_hint_is_the_fix_when_it_is_not_the_tables() -> None:
    error = ParseError("UNEXPECTED_END", doc="{", pos=1, hint="close the object")
    assert "\nFix: close the object.\n" in repair_prompt(error)
    # no hint at all: the table's fix
    plain = repair_prompt(ParseError("UNEXPECTED_END", doc="{", pos=1))
    assert re.search(r"\nFix: [^\n]+\.\n", plain)


# ---------------------------------------------------------------- the parse section


def test_the_position_line_and_the_excerpt_at_the_edges() -> None:
    # no offset: character 0
    lines = repair_prompt(ParseError("UNEXPECTED_END", doc="[1,", lineno=1, colno=1)).split("\n")
    assert lines[1] == "Position: line 1, column 1 (character 0)."
    # an offset at the very end of the text still shows the excerpt, the caret past the last character
    lines = repair_prompt(ParseError("UNEXPECTED_END", doc="[1,", pos=3)).split("\n")
    assert lines[2:5] == ["Near:", "  [1,", "     ^"]
    # the excerpt starts one character in: it is marked as cut
    doc = "x" * 40
    excerpt = repair_prompt(ParseError("UNEXPECTED_CHARACTER", doc=doc, pos=33)).split("\n")[3]
    assert excerpt == "  ..." + "x" * 32 + "x" * 7
    excerpt = repair_prompt(ParseError("UNEXPECTED_CHARACTER", doc=doc, pos=32)).split("\n")[3]
    assert excerpt == "  " + "x" * 40


# ---------------------------------------------------------------- issue lines


def test_an_issue_without_path_or_code_has_the_defaults() -> None:
    error = SchemaError("SCHEMA_MISMATCH", issues=({"expected": "an object"},))
    lines = repair_prompt(error).split("\n")
    assert "- $: invalid (expected an object)" in lines
    assert fingerprint(error).path == ""


@pytest.mark.parametrize("path", ["$.amount", "$['amount']", '$["amount"]', "$.calls[0].arguments.amount"])
def test_do_not_invent_follows_the_arguments_name_however_the_path_writes_it(path: str) -> None:
    required = SchemaError("SCHEMA_MISMATCH", issues=({"path": path, "code": "required"},))
    assert repair_prompt(required, high_impact={"amount"}).count("do not invent this value") == 1
    # another issue at the same place is not about a missing value
    typed = SchemaError("SCHEMA_MISMATCH", issues=({"path": path, "code": "type"},))
    assert "do not invent" not in repair_prompt(typed, high_impact={"amount"})
    assert "do not invent" not in repair_prompt(required, high_impact={"amount_"})


def test_the_first_line_names_the_codes_meaning() -> None:
    error = SchemaError("EMPTY_DECISION")
    assert repair_prompt(error).split("\n")[0] == (
        f"Your previous response could not be used: schema error EMPTY_DECISION ({ERROR_CODES['EMPTY_DECISION'].meaning})."
    )


def test_twelve_other_calls_are_listed_without_a_count() -> None:
    error = PolicyError("SCOPE_DENIED", call_index=0, call_id="c0", tool="t")
    error.batch = tuple(
        {"index": i, "call_id": f"c{i}", "tool": "t", "status": "not_run", "code": "BATCH_REJECTED"} for i in range(13)
    )
    lines = repair_prompt(error, max_chars=5000).split("\n")
    assert sum(line.startswith("- call ") for line in lines) == 12
    assert not any(line.startswith("- and ") for line in lines)


# ---------------------------------------------------------------- the length bound


def _long_error() -> SchemaError:
    return SchemaError(
        "SCHEMA_MISMATCH", issues=tuple({"path": f"$.a{i}_{'x' * 30}", "code": "type"} for i in range(12))
    )


def test_the_length_bound_is_exact() -> None:
    error = _long_error()
    whole = repair_prompt(error, max_chars=100_000)
    # a prompt exactly at the bound is not cut
    assert repair_prompt(error, max_chars=len(whole)) == whole
    closing = whole.rsplit("\n", 1)[1]
    for bound in range(200, len(whole)):
        prompt = repair_prompt(error, max_chars=bound)
        body, _, end = prompt.rpartition("\n")
        assert end == closing and body.endswith(" ...")
        kept = body[: -len(" ...")]
        assert whole.startswith(kept) and kept == kept.strip()
        cut = whole[: bound - len(closing) - 1 - 4]
        assert kept == cut.rstrip()
        # the bound is reached whenever the cut does not land on a space
        assert len(prompt) == bound - (len(cut) - len(kept))


def test_a_closing_longer_than_the_bound_leaves_no_body() -> None:
    name = "s" * 300
    prompt = repair_prompt(_long_error(), schema_name=name, max_chars=200)
    assert prompt.startswith(" ...\nReturn exactly one corrected JSON value matching the schema " + name)


# ---------------------------------------------------------------- the budget


def test_a_truncation_error_keeps_its_retryable_and_issues() -> None:
    issues = ({"path": "$.a", "code": "cut"},)
    default = ERROR_CODES["INCOMPLETE_RESPONSE"].retryable
    error = StreamError("INCOMPLETE_RESPONSE", "cut", retryable=not default, issues=issues)
    with pytest.raises(StreamError) as info:
        RepairBudget().next_prompt(error)
    assert info.value.retryable is (not default)
    assert tuple(info.value.issues) == issues


def test_the_budget_masks_with_its_own_redactor() -> None:
    error = SchemaError("SCHEMA_MISMATCH", path="$.a", hint="the value TOPSECRET-42 is not allowed")
    redactor = Redactor(patterns=(re.compile(r"TOPSECRET-\d+"),))
    prompt = RepairBudget(redactor=redactor).next_prompt(error)
    assert "TOPSECRET" not in prompt and "the value " in prompt
    assert "TOPSECRET-42" in RepairBudget().next_prompt(error)


# ---------------------------------------------------------------- fixes under the caller's limits

ESCAPED = '{"a": "\\d"}'  # 11 characters; fixed, 12


def test_apply_fixes_parses_under_the_callers_limits() -> None:
    assert apply_fixes(ESCAPED, ["invalid_escapes"]).value == {"a": "\\d"}
    with pytest.raises(ParseError) as info:  # nothing to fix, over the bound
        apply_fixes('{"a": 1}', ["invalid_escapes"], limits=Limits(max_document_bytes=3))
    assert info.value.code == "DOCUMENT_TOO_LARGE"
    with pytest.raises(ParseError) as info:  # the text itself is over the bound
        apply_fixes(ESCAPED, ["invalid_escapes"], limits=Limits(max_document_bytes=10))
    assert info.value.code != "INVALID_ESCAPE"
    with pytest.raises(ParseError) as info:  # the fixed text is over the bound
        apply_fixes(ESCAPED, ["invalid_escapes"], limits=Limits(max_document_bytes=11))
    assert info.value.code != "INVALID_ESCAPE"


def _response(*items: TextItem | ToolCallItem, finish: str = "tool_calls") -> NormalizedResponse:
    return NormalizedResponse(provider="openai-chat", response_id="r", model="m", finish_reason=finish, items=items)  # type: ignore[arg-type]


def _call(arguments: str) -> ToolCallItem:
    return ToolCallItem(item_id="i", call_id="c", name="t", arguments=arguments, complete=True)


def test_fix_response_applies_the_callers_limits() -> None:
    calls = _response(_call(ESCAPED))
    assert fix_response(calls, ["invalid_escapes"]).applied == ("invalid_escapes",)
    assert fix_response(calls, ["invalid_escapes"], limits=Limits(max_document_bytes=11)) == (calls, ())
    text = _response(TextItem(item_id="t", text=ESCAPED), finish="stop")
    fixed = fix_response(text, ["invalid_escapes"])
    assert fixed.applied == ("invalid_escapes",)
    assert [(item.item_id, item.text) for item in fixed.response.items] == [("text_fixed", '{"a":"\\\\d"}')]  # type: ignore[union-attr]
    assert fix_response(text, ["invalid_escapes"], limits=Limits(max_document_bytes=11)) == (text, ())


def test_fix_response_leaves_a_cut_off_response_and_the_text_beside_calls() -> None:
    cut = _response(TextItem(item_id="t", text=ESCAPED), finish="length")
    assert fix_response(cut, ["invalid_escapes"]) == (cut, ())
    cut_call = _response(_call(ESCAPED), finish="length")
    assert fix_response(cut_call, ["invalid_escapes"]) == (cut_call, ())
    beside = _response(TextItem(item_id="t", text=ESCAPED), _call('{"a": 1}'))
    assert fix_response(beside, ["invalid_escapes"]) == (beside, ())
