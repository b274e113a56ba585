"""``decide`` errors as the caller and the repair prompt read them (code,
message, path, offset, hint, the parser's fields kept when re-raised), and
the rules a broken chain would get wrong: the caller's limits on the final
answer, a JSON answer beside calls, the call bound, each call's index."""

from __future__ import annotations

import json
from typing import Any, Callable

import pytest
from pydantic import BaseModel, Field

from decide_helpers import READ_FILE_SCHEMA, both_paths, call, needs_loads, response, text
from decisions import Limits, OutputError, Run, Tool, ToolRegistry, decide
from decisions.errors import ParseError
from decisions.types import RefusalItem, ResponseSnapshot
from decisions.validate.decide import check_complete, parse_arguments
from decisions.validate.versions import SchemaRegistry

pytestmark = [needs_loads, both_paths]


def failure(fn: Callable[[], Any]) -> OutputError:
    with pytest.raises(OutputError) as info:
        fn()
    return info.value


def shape(error: OutputError) -> tuple[Any, ...]:
    return (error.code, error.message, error.path, error.offset, error.hint)


# ---------------------------------------------------------------- completeness


FINISH_HINTS = {
    "length": (
        "INCOMPLETE_RESPONSE",
        "the output was cut off at the token limit; retry with a larger limit or a smaller task",
    ),
    "content_filter": ("CONTENT_FILTERED", "the provider withheld the output; rephrase the request"),
    "refusal": ("REFUSAL", "the model refused; do not retry the same request unchanged"),
    "cancelled": ("RESPONSE_CANCELLED", "the response was cancelled"),
    "error": ("RESPONSE_ERROR", "the provider reported an error; retry later"),
}


@pytest.mark.parametrize("reason", sorted(FINISH_HINTS))
@pytest.mark.parametrize("raw", [None, "max_tokens"])
def test_each_unfinished_reason_in_full(reason: str, raw: str | None) -> None:
    error = failure(lambda: decide(response(text("hi"), finish=reason, raw=raw)))
    code, hint = FINISH_HINTS[reason]
    suffix = f" (provider: {raw!r})" if raw else ""
    assert shape(error) == (code, f"the response finished with {reason!r}{suffix}", None, None, hint)


def test_unknown_finish_reasons_in_full() -> None:
    error = failure(lambda: decide(response(text("hi"), finish="unknown", raw="weird")))
    assert shape(error) == (
        "UNKNOWN_FINISH_REASON",
        "the response finished with 'unknown' (provider: 'weird')",
        None,
        None,
        "the provider's finish reason is not one this package knows",
    )
    error = failure(lambda: decide(response(text("hi"), finish="paused", raw="p")))
    assert (error.code, error.message) == (
        "UNKNOWN_FINISH_REASON",
        "finish reason 'paused' (provider: 'p') is not known",
    )


def test_a_snapshot_and_a_wrong_type_are_refused_in_full() -> None:
    snapshot = ResponseSnapshot(
        provider="openai-chat", response_id="r", model="m", text="", calls=(), state="streaming"
    )
    error = failure(lambda: decide(snapshot))
    assert (error.code, error.message, error.hint) == (
        "SNAPSHOT_NOT_DECIDABLE",
        "a snapshot of a streaming stream is provisional",
        "wait for the stream to finish",
    )
    with pytest.raises(TypeError, match=r"^decide takes a NormalizedResponse, not dict$"):
        check_complete({})


def test_a_refusal_item_in_full() -> None:
    error = failure(lambda: decide(response(text("a"), RefusalItem(item_id="r", text="no"), finish="stop")))
    assert shape(error) == (
        "REFUSAL",
        "the response holds a refusal (item 1)",
        "$.items[1]",
        None,
        "the model refused; do not retry the same request unchanged",
    )


def test_an_incomplete_call_in_full() -> None:
    items = (call(call_id="a"), call("grep", call_id="b", complete=False))
    error = failure(lambda: decide(response(*items)))
    assert shape(error) == (
        "INCOMPLETE_TOOL_CALL",
        "tool call 'b' ('grep') was not completed",
        "$.calls[1]",
        None,
        "the call was cut off; it cannot run",
    )


def test_tool_calls_without_a_call_in_full() -> None:
    error = failure(lambda: decide(response(text("hi"), finish="tool_calls")))
    assert shape(error) == (
        "FINISH_REASON_MISMATCH",
        "the finish reason says tool_calls but the response holds no call",
        "$.calls",
        None,
        None,
    )


# ---------------------------------------------------------------- parse


def test_a_parse_error_keeps_the_parsers_fields_and_gains_the_path() -> None:
    items = (call(call_id="a"), call(call_id="b", arguments='{"path": '))
    error = failure(lambda: decide(response(*items)))
    assert isinstance(error, ParseError)
    assert shape(error) == (
        "UNEXPECTED_END",
        "the input ended in the middle of a value",
        "$.calls[1].arguments",
        9,
        "the JSON ends too early at line 1 column 10: close every string, array and object",
    )
    assert (error.pos, error.lineno, error.colno, error.doc, error.retryable) == (9, 1, 10, '{"path": ', True)
    assert isinstance(error.__cause__, ParseError) and error.__cause__.path is None


def test_stop_with_arguments_that_do_not_parse_in_full() -> None:
    error = failure(lambda: decide(response(call(arguments='{"path": '), finish="stop")))
    assert shape(error) == (
        "FINISH_REASON_MISMATCH",
        "the finish reason says stop, but the arguments of call 'call_1' do not parse (UNEXPECTED_END at offset 9)",
        "$.calls[0].arguments",
        9,
        "the call may have been cut off; it cannot run",
    )
    assert isinstance(error.__cause__, ParseError)
    for arguments, code in [("[]", "ARGUMENTS_NOT_OBJECT"), (json.dumps('{"a": 1}'), "DOUBLE_ENCODED_JSON")]:
        assert failure(lambda a=arguments: decide(response(call(arguments=a), finish="stop"))).code == code


@pytest.mark.parametrize(
    ("arguments", "kind"),
    [
        (" []", "an array"),
        ("\ttrue", "a boolean"),
        ("\n1", "a number"),
        (" 1.5", "a number"),
        (' "plain"', "a string"),
        ("\r null", "null"),
    ],
)
def test_arguments_that_are_not_an_object_in_full(arguments: str, kind: str) -> None:
    error = failure(lambda: parse_arguments(arguments, path="$.x"))
    offset = len(arguments) - len(arguments.lstrip())
    assert shape(error) == (
        "ARGUMENTS_NOT_OBJECT",
        f"the arguments are {kind}, not a JSON object",
        "$.x",
        offset,
        'arguments must be a JSON object such as {"path": "a.txt"}',
    )


def test_double_encoded_arguments_in_full() -> None:
    arguments = "  " + json.dumps('{"path": "a.txt"}')
    error = failure(lambda: parse_arguments(arguments, path="$.x"))
    assert shape(error) == (
        "DOUBLE_ENCODED_JSON",
        "the arguments are a JSON string holding JSON, not an object",
        "$.x",
        2,
        "send the arguments object itself, not a string containing it",
    )
    # the caller's limits apply to the string's content too
    deep = json.dumps(json.dumps([[[[1]]]]))
    assert failure(lambda: parse_arguments(deep, limits=Limits(max_depth=2))).code == "ARGUMENTS_NOT_OBJECT"


def test_the_callers_limits_apply_to_arguments_and_to_the_final_answer() -> None:
    limits = Limits(max_depth=2)
    error = failure(lambda: decide(response(call(arguments='{"a": [[1]]}')), limits=limits))
    assert (error.code, error.path) == ("DEPTH_EXCEEDED", "$.calls[0].arguments")
    answer = response(text('{"a": [[1]]}'), finish="stop")
    error = failure(lambda: decide(answer, output={"type": "object"}, limits=limits))
    assert (error.code, error.path) == ("DEPTH_EXCEEDED", "$")
    assert decide(answer, output={"type": "object"}).value == {"a": [[1]]}


# ---------------------------------------------------------------- decision shape


@pytest.mark.parametrize("answer", ['{"done": true}', " [1, 2] ", "[]"])
def test_a_json_answer_beside_calls_is_ambiguous_when_an_output_schema_is_given(answer: str) -> None:
    error = failure(lambda: decide(response(text(answer), call()), output={"type": ["object", "array"]}))
    assert shape(error) == (
        "AMBIGUOUS_DECISION",
        "the response holds tool calls and a final answer",
        "$",
        None,
        "either call tools or give the final answer, not both",
    )
    # without an output schema it is trace
    assert decide(response(text(answer), call())).text == answer


@pytest.mark.parametrize("answer", ["I'll read it", "{not json", "[1, 2", '"quoted"', "1"])
def test_text_that_is_not_a_json_answer_stays_trace(answer: str) -> None:
    decision = decide(response(text(answer), call()), output={"type": "object"})
    assert decision.kind == "tool" and decision.text == answer


def test_the_limits_decide_whether_text_is_a_json_answer() -> None:
    decision = decide(response(text("[[[1]]]"), call()), output={"type": "array"}, limits=Limits(max_depth=2))
    assert decision.kind == "tool"


def test_text_policy() -> None:
    with pytest.raises(ValueError, match=r"^text_policy must be 'trace' or 'reject'$"):
        decide(response(call()), text_policy="keep")  # type: ignore[arg-type]
    error = failure(lambda: decide(response(text("note"), call()), text_policy="reject"))
    assert (error.code, error.path) == ("AMBIGUOUS_DECISION", "$")
    assert decide(response(text(" \n"), call()), text_policy="reject").kind == "tool"


def test_an_empty_decision_in_full() -> None:
    error = failure(lambda: decide(response(text("  "), finish="stop")))
    assert (error.code, error.path, error.hint) == ("EMPTY_DECISION", "$", "call a tool or give the final answer")


@pytest.mark.parametrize(("max_calls", "limit"), [(None, 2), (1, 5)])
def test_the_call_bound_in_full(max_calls: int | None, limit: int) -> None:
    bound = max_calls if max_calls is not None else limit
    limits = Limits(max_calls_per_response=limit)
    ok = [call(call_id=f"c{i}") for i in range(bound)]
    assert len(decide(response(*ok), limits=limits, max_calls=max_calls).calls) == bound
    over = [*ok, call(call_id="extra")]
    error = failure(lambda: decide(response(*over), limits=limits, max_calls=max_calls))
    assert shape(error) == (
        "TOO_MANY_TOOL_CALLS",
        f"the response holds {bound + 1} tool calls; at most {bound} are allowed",
        "$.calls",
        None,
        f"make at most {bound} tool calls at once",
    )


def test_a_cancelled_run_refuses_a_final_answer_in_full() -> None:
    run = Run()
    run.cancel()
    error = failure(lambda: decide(response(text("done"), finish="stop"), run=run))
    assert (error.code, error.path, error.hint) == ("RUN_CANCELLED", "$", "the run was cancelled; nothing may execute")


def test_a_final_decision_carries_its_origin_and_schema_id() -> None:
    versioned = SchemaRegistry().register("agent.answer@1.0.0", {"type": "object"})
    decision = decide(response(text('{"a": 1}'), finish="stop"), output=versioned)
    assert (decision.value, decision.text, decision.schema_id) == ({"a": 1}, '{"a": 1}', "agent.answer@1.0.0")
    assert (decision.provider, decision.response_id, decision.model) == ("openai-chat", "resp_1", "model-x")
    plain = decide(response(text("done"), finish="stop"))
    assert (plain.value, plain.schema_id) == ("done", None)


# ---------------------------------------------------------------- calls


class _Read(BaseModel):
    path: str = Field(alias="file")
    limit: int = 10


def test_each_call_keeps_its_index_ids_version_and_validated_value() -> None:
    registry = ToolRegistry(
        [Tool(name="read_file", parameters=_Read, version="2", side_effects=False), Tool(name="grep")]
    )
    items = (
        call("grep", '{"q": 1}', call_id="a"),
        call("read_file", '{"file": "a.txt"}', call_id="b", generated=True),
    )
    decision = decide(response(text("looking"), *items), tools=registry)
    first, second = decision.calls
    assert (first.index, first.call_id, first.item_id, first.call_id_generated) == (0, "a", "item_a", False)
    assert (first.arguments, first.validated, first.tool_version) == ({"q": 1}, {"q": 1}, "1")
    assert (second.index, second.call_id, second.item_id, second.call_id_generated) == (1, "b", "item_b", True)
    assert second.arguments == {"path": "a.txt", "limit": 10}
    assert isinstance(second.validated, _Read) and second.tool_version == "2"
    assert [v.call_id for v in decision.verdicts] == ["a", "b"]
    assert (decision.batch, decision.text, decision.provider, decision.response_id, decision.model) == (
        "all_or_nothing",
        "looking",
        "openai-chat",
        "resp_1",
        "model-x",
    )
    bare = decide(response(call(call_id="x"), call(call_id="y")))
    assert [(c.index, c.tool_version, c.validated) for c in bare.calls] == [
        (0, None, {"path": "a.txt"}),
        (1, None, {"path": "a.txt"}),
    ]


def test_schema_issues_of_every_call_in_one_error() -> None:
    registry = ToolRegistry([Tool(name="read_file", parameters=READ_FILE_SCHEMA), Tool(name="free")])
    items = (
        call(arguments='{"path": ""}', call_id="a"),
        call("free", '{"x": 1}', call_id="b"),
        call(arguments='{"limit": 0, "path": "x"}', call_id="c"),
    )
    error = failure(lambda: decide(response(*items), tools=registry))
    assert error.code == "SCHEMA_MISMATCH"
    assert [issue["path"] for issue in error.issues] == ["$.calls[0].arguments.path", "$.calls[2].arguments.limit"]


def test_names_are_checked_for_every_call_with_its_path() -> None:
    registry = ToolRegistry([Tool(name="read_file")])
    error = failure(lambda: decide(response(call(call_id="a"), call("rm", call_id="b")), tools=registry))
    assert (error.code, error.path) == ("UNKNOWN_TOOL", "$.calls[1].name")
    error = failure(lambda: decide(response(call(call_id="a"), call("READ_FILE", call_id="b")), tools=registry))
    assert (error.code, error.path) == ("AMBIGUOUS_TOOL_NAME", "$.calls[1].name")


def test_the_text_beside_calls_is_every_text_item_in_order() -> None:
    decision = decide(response(text("first, "), call(), text("then more")))
    assert decision.kind == "tool"
    assert decision.text == "first, then more"
    final = decide(response(text("an "), text("answer"), finish="stop"))
    assert final.kind == "final" and (final.value, final.text) == ("an answer", "an answer")
