"""decide(): the layers in order, each stopping the chain with its own error."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, ConfigDict

from decide_helpers import READ_FILE_SCHEMA, both_paths, call, needs_loads, response, text
from decisions import (
    DEFAULT_LIMITS,
    ERROR_CODES,
    DomainError,
    FinalDecision,
    Limits,
    OutputError,
    ParseError,
    PolicyError,
    Run,
    SchemaError,
    SchemaRegistry,
    StreamError,
    Tool,
    ToolDecision,
    ToolRegistry,
    _backend,
    decide,
)
from decisions.types import RefusalItem, ResponseSnapshot

pytestmark = [needs_loads, both_paths]

REGISTRY = ToolRegistry([Tool(name="read_file", parameters=READ_FILE_SCHEMA, side_effects=False, version="2.0")])


def _assert_layer(error: OutputError, code: str) -> None:
    assert error.code == code
    assert error.layer == ERROR_CODES[code].layer
    json.dumps(error.to_dict())


# ---------------------------------------------------------------- completeness


@pytest.mark.parametrize(
    ("finish", "code"),
    [
        ("length", "INCOMPLETE_RESPONSE"),
        ("content_filter", "CONTENT_FILTERED"),
        ("refusal", "REFUSAL"),
        ("cancelled", "RESPONSE_CANCELLED"),
        ("error", "RESPONSE_ERROR"),
        ("unknown", "UNKNOWN_FINISH_REASON"),
        ("end_of_world", "UNKNOWN_FINISH_REASON"),
    ],
)
def test_only_a_normal_finish_goes_on(finish: str, code: str) -> None:
    with pytest.raises(StreamError) as info:
        decide(response(call(), finish=finish, raw="RAW_REASON"), tools=REGISTRY)
    _assert_layer(info.value, code)


def test_length_is_incomplete_even_when_the_arguments_parse() -> None:
    cut = call(arguments='{"path": "a.txt"}', complete=False)
    with pytest.raises(StreamError) as info:
        decide(response(cut, finish="length"), tools=REGISTRY)
    assert info.value.code == "INCOMPLETE_RESPONSE"
    assert "limit" in (info.value.hint or "")


@pytest.mark.parametrize("finish", ["stop", "tool_calls"])
def test_an_unfinished_call_never_runs(finish: str) -> None:
    items = (call(call_id="a"), call(call_id="b", complete=False))
    with pytest.raises(StreamError) as info:
        decide(response(*items, finish=finish), tools=REGISTRY)
    _assert_layer(info.value, "INCOMPLETE_TOOL_CALL")
    assert info.value.path == "$.calls[1]"


def test_a_refusal_item_refuses_even_with_stop() -> None:
    refusal = RefusalItem(item_id="r", text="I can't help with that")
    with pytest.raises(StreamError) as info:
        decide(response(text("Sure"), refusal, finish="stop"))
    _assert_layer(info.value, "REFUSAL")


def test_a_refusal_after_an_unfinished_call_is_the_refusal() -> None:
    """Refusals are looked for in every item before any call is named unfinished."""
    refusal = RefusalItem(item_id="r", text="no")
    with pytest.raises(StreamError) as info:
        decide(response(call(complete=False), refusal, finish="stop"))
    _assert_layer(info.value, "REFUSAL")
    with pytest.raises(StreamError) as info:
        decide(
            response(
                text("a"), call(call_id="c0"), call(call_id="c1", complete=False), call(call_id="c2", complete=False)
            )
        )
    _assert_layer(info.value, "INCOMPLETE_TOOL_CALL")
    assert (info.value.path, info.value.call_index, info.value.call_id) == ("$.calls[1]", 1, "c1")


def test_a_snapshot_is_never_decidable() -> None:
    snap = ResponseSnapshot(provider="anthropic", response_id=None, model=None, text="{}", calls=(), state="streaming")
    with pytest.raises(StreamError) as info:
        decide(snap)  # type: ignore[arg-type]
    _assert_layer(info.value, "SNAPSHOT_NOT_DECIDABLE")


def test_only_responses_are_decided() -> None:
    with pytest.raises(TypeError):
        decide({"finish_reason": "stop"})  # type: ignore[arg-type]


def test_tool_calls_without_a_call_is_a_mismatch() -> None:
    with pytest.raises(StreamError) as info:
        decide(response(text("done"), finish="tool_calls"))
    _assert_layer(info.value, "FINISH_REASON_MISMATCH")


def test_stop_with_calls_is_tolerated() -> None:
    decision = decide(response(call(), finish="stop"), tools=REGISTRY)
    assert isinstance(decision, ToolDecision) and decision.executable


def test_stop_with_arguments_that_do_not_parse_is_named_not_trusted() -> None:
    with pytest.raises(StreamError) as info:
        decide(response(call(arguments='{"path": "a.t'), finish="stop"), tools=REGISTRY)
    error = info.value
    _assert_layer(error, "FINISH_REASON_MISMATCH")
    assert error.path == "$.calls[0].arguments"
    assert isinstance(error.__cause__, ParseError)
    assert error.offset == error.__cause__.pos


def test_stop_with_well_formed_arguments_that_are_not_an_object_keeps_the_parse_code() -> None:
    with pytest.raises(ParseError) as info:
        decide(response(call(arguments="[]"), finish="stop"))
    assert info.value.code == "ARGUMENTS_NOT_OBJECT"


# ---------------------------------------------------------------- parse


def test_a_parse_error_keeps_code_offset_and_hint_and_gains_the_path() -> None:
    bad = '{"path": "a.txt",}'
    with pytest.raises(ParseError) as info:
        decide(response(call(call_id="a"), call(arguments=bad, call_id="b")), tools=REGISTRY)
    error = info.value
    direct = pytest.raises(ParseError, _backend.impl.loads, bad).value
    assert (error.code, error.pos, error.hint) == (direct.code, direct.pos, direct.hint)
    assert error.path == "$.calls[1].arguments"
    assert "$.calls[1].arguments" in str(error)


@pytest.mark.parametrize("arguments", ["[]", "null", "1", "true", '"plain words"', "  [1, 2]"])
def test_arguments_must_be_an_object(arguments: str) -> None:
    with pytest.raises(ParseError) as info:
        decide(response(call(arguments=arguments)))
    _assert_layer(info.value, "ARGUMENTS_NOT_OBJECT")
    assert info.value.path == "$.calls[0].arguments"
    assert info.value.pos == len(arguments) - len(arguments.lstrip())


@pytest.mark.parametrize("inner", ['{"path": "a.txt"}', "[1]", "3"])
def test_double_encoded_arguments_are_named_never_unwrapped(inner: str) -> None:
    with pytest.raises(ParseError) as info:
        decide(response(call(arguments=json.dumps(inner))), tools=REGISTRY)
    _assert_layer(info.value, "DOUBLE_ENCODED_JSON")


def test_the_callers_limits_reach_the_parser() -> None:
    deep = '{"path": "a", "x": [[[[1]]]]}'
    assert isinstance(decide(response(call(arguments=deep))), ToolDecision)
    with pytest.raises(ParseError) as info:
        decide(response(call(arguments=deep)), limits=Limits(max_depth=3))
    assert info.value.code == "DEPTH_EXCEEDED"
    assert info.value.path == "$.calls[0].arguments"


def test_a_structured_answer_is_parsed_strictly() -> None:
    with pytest.raises(ParseError) as info:
        decide(response(text('```json\n{"a": 1}\n```'), finish="stop"), output={"type": "object"})
    assert info.value.path == "$"


# ---------------------------------------------------------------- shape


def test_text_beside_calls_is_kept_as_trace_and_never_parsed() -> None:
    prose = 'I will read it. Also call delete_all with {"path": "/"}.'
    decision = decide(response(text(prose), call()), tools=REGISTRY)
    assert isinstance(decision, ToolDecision)
    assert decision.text == prose
    assert [c.name for c in decision.calls] == ["read_file"]


def test_text_policy_reject_makes_text_beside_calls_ambiguous() -> None:
    with pytest.raises(SchemaError) as info:
        decide(response(text("Let me look."), call()), tools=REGISTRY, text_policy="reject")
    _assert_layer(info.value, "AMBIGUOUS_DECISION")
    assert isinstance(decide(response(text("  \n"), call()), text_policy="reject"), ToolDecision)
    with pytest.raises(ValueError):
        decide(response(call()), text_policy="guess")  # type: ignore[arg-type]


def test_a_final_answer_beside_calls_is_ambiguous() -> None:
    items = (text('{"summary": "done"}'), call())
    with pytest.raises(SchemaError) as info:
        decide(response(*items), tools=REGISTRY, output={"type": "object"})
    _assert_layer(info.value, "AMBIGUOUS_DECISION")
    # without an output schema there is no structured answer: the text is trace
    assert decide(response(*items), tools=REGISTRY).text == '{"summary": "done"}'  # type: ignore[union-attr]


def test_prose_beside_calls_with_an_output_schema_is_trace() -> None:
    decision = decide(response(text("Reading first."), call()), tools=REGISTRY, output={"type": "object"})
    assert isinstance(decision, ToolDecision)


@pytest.mark.parametrize("content", ["", "  \n\t"])
def test_nothing_to_decide_is_empty(content: str) -> None:
    items = (text(content),) if content else ()
    with pytest.raises(SchemaError) as info:
        decide(response(*items, finish="stop"))
    _assert_layer(info.value, "EMPTY_DECISION")


def test_the_number_of_calls_is_bounded_before_parsing() -> None:
    calls = [call(call_id=f"c{i}") for i in range(3)] + [call(arguments="{broken", call_id="c3")]
    with pytest.raises(DomainError) as info:
        decide(response(*calls), max_calls=3)
    _assert_layer(info.value, "TOO_MANY_TOOL_CALLS")
    with pytest.raises(DomainError):
        decide(response(*calls), limits=Limits(max_calls_per_response=2))
    assert len(decide(response(*calls[:3]), max_calls=3).calls) == 3  # type: ignore[union-attr]


# ---------------------------------------------------------------- final answers


class Summary(BaseModel):
    model_config = ConfigDict(extra="forbid")
    summary: str
    files: list[str]


def test_final_text_without_a_schema_is_the_value() -> None:
    decision = decide(response(text("All done."), finish="stop"))
    assert isinstance(decision, FinalDecision)
    assert decision.value == decision.text == "All done."
    assert (decision.provider, decision.response_id, decision.model) == ("openai-chat", "resp_1", "model-x")


def test_final_answer_against_a_pydantic_model() -> None:
    decision = decide(response(text('{"summary": "ok", "files": ["a"]}'), finish="stop"), output=Summary)
    assert isinstance(decision, FinalDecision)
    assert decision.value == Summary(summary="ok", files=["a"])
    with pytest.raises(SchemaError) as info:
        decide(response(text('{"summary": "ok", "files": "a", "extra": 1}'), finish="stop"), output=Summary)
    error = info.value
    _assert_layer(error, "SCHEMA_MISMATCH")
    assert {(i["path"], i["code"]) for i in error.issues} == {("$.files", "type"), ("$.extra", "unexpected")}


def test_a_registered_schema_is_recorded_on_the_decision() -> None:
    registry = SchemaRegistry()
    entry = registry.register("agent.answer@2.1.0", Summary)
    decision = decide(response(text('{"summary": "ok", "files": []}'), finish="stop"), output=entry)
    assert isinstance(decision, FinalDecision) and decision.schema_id == "agent.answer@2.1.0"


def test_a_cancelled_run_accepts_no_final_answer() -> None:
    run = Run()
    run.cancel()
    with pytest.raises(PolicyError) as info:
        decide(response(text("done"), finish="stop"), run=run)
    _assert_layer(info.value, "RUN_CANCELLED")


# ---------------------------------------------------------------- schema, domain, policy order


def test_arguments_against_the_tool_schema_with_paths() -> None:
    items = (
        call(arguments='{"path": "", "limit": "5"}', call_id="a"),
        call(arguments='{"path": "b", "mode": 1}', call_id="b"),
    )
    with pytest.raises(SchemaError) as info:
        decide(response(*items), tools=REGISTRY)
    issues = {(i["path"], i["code"]) for i in info.value.issues}
    assert issues == {
        ("$.calls[0].arguments.path", "too_short"),
        ("$.calls[0].arguments.limit", "type"),
        ("$.calls[1].arguments.mode", "unexpected"),
    }
    assert info.value.path == info.value.issues[0]["path"]


def test_a_pydantic_tool_gives_a_validated_model() -> None:
    class ReadArgs(BaseModel):
        model_config = ConfigDict(extra="forbid")
        path: str
        limit: int = 100

    registry = ToolRegistry([Tool(name="read_file", parameters=ReadArgs)])
    decision = decide(response(call(arguments='{"path": "a.txt"}')), tools=registry)
    assert isinstance(decision, ToolDecision)
    assert decision.calls[0].validated == ReadArgs(path="a.txt")
    assert decision.calls[0].arguments == {"path": "a.txt", "limit": 100}  # the validated values, defaults included
    with pytest.raises(SchemaError) as info:
        decide(response(call(arguments='{"path": "a.txt", "limit": true}')), tools=registry)
    assert info.value.issues[0]["path"] == "$.calls[0].arguments.limit"


def test_schema_comes_before_domain_and_domain_before_policy() -> None:
    from decisions import Policy, ToolRule

    items = (call(name="read_flie", call_id="a"), call(arguments='{"path": 3}', call_id="b"))
    with pytest.raises(SchemaError):
        decide(response(*items), tools=REGISTRY)
    deny_all = Policy(default="deny", tools={"read_file": ToolRule(allowed=False)})
    with pytest.raises(DomainError) as info:
        decide(response(call(name="read_flie")), tools=REGISTRY, policy=deny_all)
    assert info.value.path == "$.calls[0].name"
    with pytest.raises(PolicyError) as denied:
        decide(response(call()), tools=REGISTRY, policy=deny_all)
    assert denied.value.code == "TOOL_DENIED"


def test_a_tool_decision_records_identity_and_version() -> None:
    decision = decide(response(call(call_id="call_9", generated=True)), tools=REGISTRY)
    assert isinstance(decision, ToolDecision)
    (tool_call,) = decision.calls
    assert (tool_call.call_id, tool_call.item_id, tool_call.call_id_generated) == ("call_9", "item_call_9", True)
    assert tool_call.tool_version == "2.0"
    assert decision.executable and decision.executable_calls == decision.calls
    assert decision.verdict("call_9").status == "allowed"


def test_without_tools_any_object_arguments_pass_to_policy() -> None:
    decision = decide(response(call(name="anything", arguments='{"x": [1, {"y": null}]}')))
    assert isinstance(decision, ToolDecision)
    assert decision.calls[0].arguments == {"x": [1, {"y": None}]}
    assert decision.calls[0].tool_version is None


def test_default_limits_are_used() -> None:
    assert decide(response(call()), limits=None, tools=REGISTRY) == decide(
        response(call()), limits=DEFAULT_LIMITS, tools=REGISTRY
    )
