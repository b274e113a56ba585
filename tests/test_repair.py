"""Repair prompts, the repair budget, and deterministic fixes, with a
scripted fake model that repeats an error, fixes it, or truncates."""

from __future__ import annotations

from typing import Any, Callable

import pytest

import decisions
from decisions.errors import DomainError, OutputError, ParseError, PolicyError, SchemaError, StreamError
from decisions.recover.repair import (
    RepairBudget,
    apply_fixes,
    fingerprint,
    fix_invalid_escapes,
    is_repairable,
    repair_prompt,
)
from decisions.request.textcalls import parse_json_text

BAD_REGEX = '{"path": "src/dates.py", "pattern": "(\\d{4})-(\\d{2})"}'


def _parse_error(text: str) -> ParseError:
    with pytest.raises(ParseError) as info:
        decisions.loads(text)
    return info.value


# ---------------------------------------------------------------- the prompt


def test_parse_error_prompt_has_position_excerpt_and_concrete_fix() -> None:
    error = _parse_error(BAD_REGEX)
    assert error.code == "INVALID_ESCAPE"
    prompt = repair_prompt(error, schema_name="grep_args")
    assert "parse error INVALID_ESCAPE" in prompt
    assert f"character {error.pos}" in prompt and f"line {error.lineno}, column {error.colno}" in prompt
    assert "write \\\\d instead of \\d" in prompt
    excerpt_line, caret_line = [line for line in prompt.splitlines() if line.startswith("  ")][:2]
    # the caret points at the offending backslash in the excerpt
    assert excerpt_line[caret_line.index("^")] == "\\"
    assert "(\\d{4})" in excerpt_line  # the excerpt shows what the model wrote
    assert prompt.rstrip().endswith("change only what is wrong.") and "grep_args" in prompt
    assert "Traceback" not in prompt and "decisions." not in prompt and "_pure" not in prompt


@pytest.mark.parametrize(
    ("text", "code", "fix"),
    [
        ('{"a": 1,}', "TRAILING_COMMA", "remove the comma"),
        ("{'a': 1}", "SINGLE_QUOTES", "double quotes"),
        ('```json\n{"a": 1}\n```', "MARKDOWN_FENCE", "without ``` fences"),
        ('{"a": 1} thanks', "TRAILING_CONTENT", "exactly one JSON value"),
        ('{"a": [1, 2', "UNEXPECTED_END", "close every string"),
    ],
)
def test_each_parse_code_gets_its_fix(text: str, code: str, fix: str) -> None:
    error = _parse_error(text)
    assert error.code == code
    assert fix in repair_prompt(error)


def test_schema_prompt_lists_paths_and_codes_and_never_invents() -> None:
    issues = tuple({"path": f"$.calls[0].arguments.f{i}", "code": "type", "expected": "string"} for i in range(20))
    issues = ({"path": "$.calls[0].arguments.path", "code": "required", "expected": "a workspace path"},) + issues
    error = SchemaError("SCHEMA_MISMATCH", issues=issues)
    prompt = repair_prompt(error, target="tool_call", high_impact={"path"})
    assert "- $.calls[0].arguments.path: required (expected a workspace path); do not invent this value" in prompt
    assert "- $.calls[0].arguments.f0: type (expected string)" in prompt
    assert "more issue(s)" in prompt
    assert "Send the tool call again with corrected arguments" in prompt


def test_length_limit_and_huge_input() -> None:
    text = '{"a": "' + "x" * 100_000 + '\\q"}'
    error = _parse_error(text)
    prompt = repair_prompt(error, max_chars=400)
    assert len(prompt) <= 400
    assert "x" * 100 not in prompt
    long_hint = DomainError("UNKNOWN_TOOL", hint="did you mean " + "read_file, " * 500)
    assert len(repair_prompt(long_hint, max_chars=300)) <= 300
    with pytest.raises(ValueError):
        repair_prompt(error, max_chars=10)


def test_truncation_and_transport_are_not_sent_for_repair() -> None:
    for error in (StreamError("INCOMPLETE_RESPONSE"), StreamError("INCOMPLETE_TOOL_CALL")):
        assert not is_repairable(error)
        with pytest.raises(ValueError, match="raise the output token limit or shorten the task"):
            repair_prompt(error)
    assert not is_repairable(StreamError("NO_TERMINAL_EVENT"))
    assert not is_repairable(PolicyError("TOOL_DENIED"))  # not retryable
    assert is_repairable(PolicyError("PATH_OUTSIDE_WORKSPACE"))
    assert is_repairable(_parse_error("[1,]"))


def test_fingerprint_is_layer_code_path() -> None:
    error = SchemaError("SCHEMA_MISMATCH", path="$.a")
    assert fingerprint(error).to_dict() == {"layer": "schema", "code": "SCHEMA_MISMATCH", "path": "$.a"}
    several = SchemaError("SCHEMA_MISMATCH", issues=({"path": "$.b"}, {"path": "$.a"}))
    assert fingerprint(several).path == "$.a,$.b"


# ---------------------------------------------------------------- the loop with a scripted model

Reply = tuple[str, str]  # (text, finish reason)


def run_loop(model: Callable[[list[str]], Reply], budget: RepairBudget) -> tuple[Any, list[str]]:
    """A minimal agent turn: ask, check, send a repair prompt, until a value
    comes back or the budget says stop."""
    prompts: list[str] = []
    while True:
        text, finish = model(prompts)
        try:
            if finish == "length":
                raise StreamError("INCOMPLETE_RESPONSE")
            return parse_json_text(text).value, prompts
        except OutputError as error:
            prompts.append(budget.next_prompt(error, text=text))


def scripted(*replies: Reply) -> Callable[[list[str]], Reply]:
    queue = list(replies)

    def model(prompts: list[str]) -> Reply:
        assert len(prompts) == len(replies) - len(queue)  # one repair prompt per failed reply
        return queue.pop(0)

    return model


def test_model_that_fixes_the_error() -> None:
    budget = RepairBudget(max_attempts=2)
    value, prompts = run_loop(scripted((BAD_REGEX, "stop"), (BAD_REGEX.replace("\\d", "\\\\d"), "stop")), budget)
    assert value == {"path": "src/dates.py", "pattern": "(\\d{4})-(\\d{2})"}
    assert len(prompts) == 1 and "write \\\\d" in prompts[0]
    assert budget.attempts == 1 and budget.remaining == 1


def test_model_that_repeats_the_error_stops_early() -> None:
    budget = RepairBudget(max_attempts=5)
    with pytest.raises(PolicyError) as info:
        run_loop(scripted((BAD_REGEX, "stop"), (BAD_REGEX, "stop"), (BAD_REGEX, "stop")), budget)
    assert info.value.code == "REPEATED_ERROR"
    assert budget.attempts == 1  # stopped at the first repetition, long before 5
    assert budget.to_dict()["history"] == [{"layer": "parse", "code": "INVALID_ESCAPE", "path": None}]


def test_model_that_truncates_is_never_repaired() -> None:
    budget = RepairBudget()
    with pytest.raises(StreamError) as info:
        run_loop(scripted(('{"content": "half a fi', "length")), budget)
    assert info.value.code == "INCOMPLETE_RESPONSE"
    assert "raise the output token limit" in (info.value.hint or "")
    assert budget.attempts == 0


def test_budget_exhausted_by_different_errors() -> None:
    budget = RepairBudget(max_attempts=2)
    with pytest.raises(PolicyError) as info:
        run_loop(scripted(("{'a': 1}", "stop"), ('{"a": 1,}', "stop"), ("[1] x", "stop")), budget)
    assert info.value.code == "REPAIR_BUDGET_EXHAUSTED"
    assert budget.attempts == 2
    with pytest.raises(PolicyError) as info:
        RepairBudget(max_attempts=0).next_prompt(_parse_error("[1,]"))
    assert info.value.code == "REPAIR_BUDGET_EXHAUSTED"


# ---------------------------------------------------------------- deterministic fixes


def test_fixes_are_off_by_default() -> None:
    with pytest.raises(ParseError) as info:
        apply_fixes(BAD_REGEX)
    assert info.value.code == "INVALID_ESCAPE"
    plain = apply_fixes('{"a": 1}')
    assert plain.value == {"a": 1} and plain.repaired == ()


def test_invalid_escape_fix_is_recorded() -> None:
    fixed = apply_fixes(BAD_REGEX, ["invalid_escapes"])
    assert fixed.value["pattern"] == "(\\d{4})-(\\d{2})"
    assert fixed.repaired == ("invalid_escapes",)
    both = apply_fixes("```json\n" + BAD_REGEX + "\n```", ["invalid_escapes", "markdown_fence"])
    assert both.value == fixed.value and set(both.repaired) == {"invalid_escapes", "markdown_fence"}
    # a fix only addresses its own error
    with pytest.raises(ParseError) as info:
        apply_fixes('{"a": 1,}', ["invalid_escapes"])
    assert info.value.code == "TRAILING_COMMA"
    with pytest.raises(ValueError, match="whitelist"):
        apply_fixes("{}", ["trailing_commas"])  # type: ignore[list-item]


def test_escape_fixer_touches_only_invalid_escapes_inside_strings() -> None:
    text = '{"ok": "a\\nb\\\\c\\"d\\u00e9", "bad": "\\d\\s", "k\\w": 1}'
    fixed, count = fix_invalid_escapes(text)
    assert count == 3
    assert decisions.loads(fixed) == {"ok": 'a\nb\\c"d\u00e9', "bad": "\\d\\s", "k\\w": 1}
    assert fix_invalid_escapes('{"a": 1}') == ('{"a": 1}', 0)


# ---------------------------------------------------------------- the loop through decide


from decisions import Policy, Tool, ToolRegistry, decide  # noqa: E402
from decisions.recover.repair import fix_response  # noqa: E402
from decisions.types import NormalizedResponse, TextItem, ToolCallItem  # noqa: E402

REGISTRY = ToolRegistry(
    [
        Tool(
            name="grep",
            parameters={
                "type": "object",
                "properties": {"pattern": {"type": "string"}, "path": {"type": "string"}},
                "required": ["pattern", "path"],
                "additionalProperties": False,
            },
            side_effects=False,
        ),
        Tool(
            name="write_file",
            parameters={
                "type": "object",
                "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                "required": ["path", "content"],
                "additionalProperties": False,
            },
        ),
    ]
)


def _call_response(
    name: str, arguments: str, *, finish: str = "tool_calls", complete: bool = True
) -> NormalizedResponse:
    return NormalizedResponse(
        provider="openai-chat",
        response_id="r",
        model="m",
        finish_reason=finish,  # type: ignore[arg-type]
        items=(ToolCallItem(item_id="i", call_id="call_1", name=name, arguments=arguments, complete=complete),),
    )


def run_decide_loop(model: Callable[[list[str]], NormalizedResponse], budget: RepairBudget) -> tuple[Any, list[str]]:
    prompts: list[str] = []
    while True:
        response = model(prompts)
        try:
            return decide(response, tools=REGISTRY, repaired=bool(prompts)), prompts
        except OutputError as error:
            text = response.tool_calls[0].arguments if response.tool_calls else response.text
            prompts.append(budget.next_prompt(error, text=text, target="tool_call"))


def scripted_responses(*replies: NormalizedResponse) -> Callable[[list[str]], NormalizedResponse]:
    queue = list(replies)
    return lambda prompts: queue.pop(0)


GOOD_GREP = '{"pattern": "(\\\\d{4})", "path": "src"}'
BAD_GREP = '{"pattern": "(\\d{4})", "path": "src"}'


def test_decide_loop_fixed_by_the_model() -> None:
    budget = RepairBudget()
    decision, prompts = run_decide_loop(
        scripted_responses(_call_response("grep", BAD_GREP), _call_response("grep", GOOD_GREP)), budget
    )
    assert decision.kind == "tool" and decision.calls[0].arguments["pattern"] == "(\\d{4})"
    assert decision.executable  # grep has no side effects, so a repaired call may run
    assert len(prompts) == 1 and "$.calls[0].arguments" in prompts[0] and "write \\\\d" in prompts[0]


def test_decide_loop_model_repeats_schema_error() -> None:
    missing = '{"pattern": "x"}'
    budget = RepairBudget(max_attempts=3)
    with pytest.raises(PolicyError) as info:
        run_decide_loop(scripted_responses(*[_call_response("grep", missing)] * 3), budget)
    assert info.value.code == "REPEATED_ERROR" and budget.attempts == 1
    assert budget.history[0].layer == "schema" and budget.history[0].code == "SCHEMA_MISMATCH"


def test_decide_loop_truncated_call_is_not_repaired() -> None:
    budget = RepairBudget()
    cut = _call_response("write_file", '{"path": "a.py", "content": "def f(', finish="length", complete=False)
    with pytest.raises(StreamError) as info:
        run_decide_loop(scripted_responses(cut), budget)
    assert info.value.code == "INCOMPLETE_RESPONSE" and budget.attempts == 0
    assert "raise the output token limit" in (info.value.hint or "")
    assert fix_response(cut, ["invalid_escapes"]) == (cut, ())


def test_deterministic_fix_is_recorded_and_refused_by_side_effecting_tools() -> None:
    response = _call_response("grep", BAD_GREP)
    fixed, applied = fix_response(response, ["invalid_escapes"])
    assert applied == ("invalid_escapes",)
    decision = decide(fixed, tools=REGISTRY, repaired=bool(applied))
    assert decision.executable and decision.calls[0].arguments["pattern"] == "(\\d{4})"
    write = _call_response("write_file", '{"path": "a.py", "content": "\\d"}')
    fixed, applied = fix_response(write, ["invalid_escapes"])
    with pytest.raises(PolicyError) as refused:
        decide(fixed, tools=REGISTRY, repaired=bool(applied), policy=Policy())
    assert refused.value.code == "REPAIRED_CALL_REFUSED"
    # off by default: nothing is changed, decide reports the parse error
    assert fix_response(write) == (write, ())
    with pytest.raises(ParseError):
        decide(write, tools=REGISTRY)


def test_missing_arguments_are_never_invented() -> None:
    missing = _call_response("write_file", '{"path": "a.py"}')
    assert fix_response(missing, ["invalid_escapes", "markdown_fence"]) == (missing, ())
    with pytest.raises(SchemaError) as info:
        decide(missing, tools=REGISTRY)
    prompt = repair_prompt(info.value, target="tool_call", high_impact={"content"})
    assert "do not invent this value" in prompt


def test_fenced_final_answer_fix() -> None:
    response = NormalizedResponse(
        provider="anthropic",
        response_id="r",
        model="m",
        finish_reason="stop",
        items=(TextItem(item_id="t", text='```json\n{"a": 1}\n```'),),
    )
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    with pytest.raises(ParseError) as info:
        decide(response, output=schema)
    assert info.value.code == "MARKDOWN_FENCE"
    fixed, applied = fix_response(response, ["markdown_fence"])
    assert applied == ("markdown_fence",)
    assert decide(fixed, output=schema).value == {"a": 1}
