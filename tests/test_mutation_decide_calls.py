"""``decide`` errors name the call they are about and the batch they stopped
(what an executor or a repair prompt reads to answer one call), and the
state ``decide`` hands to the policy layer (the registry, the run, the
repaired flag, the batch mode) reaches it."""

from __future__ import annotations

from typing import Any, Callable

import pytest
from pydantic import BaseModel, model_serializer

from decide_helpers import READ_FILE_SCHEMA, both_paths, call, needs_loads, response, text
from decisions import OutputError, Policy, Run, Tool, ToolRegistry, decide
from decisions.types import FixedResponse
from decisions.validate.policy import ToolRule

pytestmark = [needs_loads, both_paths]


def failure(fn: Callable[[], Any]) -> OutputError:
    with pytest.raises(OutputError) as info:
        fn()
    return info.value


def named(error: OutputError) -> tuple[Any, ...]:
    return (error.call_index, error.call_id, error.tool)


def test_no_finish_reason_at_all_in_full() -> None:
    error = failure(lambda: decide(response(text("hi"), finish="unknown")))
    assert (error.code, error.message, error.hint) == (
        "UNKNOWN_FINISH_REASON",
        "the response ended with no finish reason, so nothing says it is complete",
        "the stream may have been cut; retry the request",
    )


def test_an_incomplete_call_names_its_call_and_batch() -> None:
    items = (call(call_id="a"), call("grep", call_id="b", complete=False), call(call_id="c"))
    error = failure(lambda: decide(response(*items)))
    assert (error.code, *named(error)) == ("INCOMPLETE_TOOL_CALL", 1, "b", "grep")
    # the completeness gate runs before the batch is known: no batch is listed
    assert error.batch == ()


def test_arguments_that_do_not_parse_name_their_call() -> None:
    items = (call(call_id="a"), call("grep", '{"q": ', call_id="b"))
    error = failure(lambda: decide(response(*items)))
    assert (error.code, error.path, *named(error)) == ("UNEXPECTED_END", "$.calls[1].arguments", 1, "b", "grep")
    error = failure(lambda: decide(response(*items, finish="stop")))
    assert (error.code, error.path, error.offset, *named(error)) == (
        "FINISH_REASON_MISMATCH",
        "$.calls[1].arguments",
        6,
        1,
        "b",
        "grep",
    )


def test_a_failed_call_in_a_batch_lists_every_call_of_the_batch() -> None:
    items = (call(call_id="a"), call("grep", "[]", call_id="b"), call("ls", call_id="c"))
    error = failure(lambda: decide(response(*items)))
    assert (error.code, *named(error)) == ("ARGUMENTS_NOT_OBJECT", 1, "b", "grep")
    assert [dict(entry) for entry in error.batch] == [
        {"index": 0, "call_id": "a", "tool": "read_file", "status": "not_run", "code": "BATCH_REJECTED"},
        {"index": 1, "call_id": "b", "tool": "grep", "status": "denied", "code": "ARGUMENTS_NOT_OBJECT"},
        {"index": 2, "call_id": "c", "tool": "ls", "status": "not_run", "code": "BATCH_REJECTED"},
    ]


def test_a_single_call_or_an_error_of_no_call_lists_no_batch() -> None:
    error = failure(lambda: decide(response(call("grep", "[]", call_id="b"))))
    assert (error.code, *named(error), error.batch) == ("ARGUMENTS_NOT_OBJECT", 0, "b", "grep", ())
    # an error about the whole response (two calls and text) names no call and no batch
    items = (text("note"), call(call_id="a"), call(call_id="b"))
    error = failure(lambda: decide(response(*items), text_policy="reject"))
    assert (error.code, *named(error), error.batch) == ("AMBIGUOUS_DECISION", None, None, None, ())


def test_a_batch_listed_by_the_policy_is_kept() -> None:
    # the policy lists the batch itself (every denied call with its own code): decide keeps it
    policy = Policy(tools={"rm": ToolRule(allowed=False)})
    items = (call(call_id="a"), call("rm", call_id="b"), call("rm", call_id="c"))
    error = failure(lambda: decide(response(*items), policy=policy))
    assert (error.code, *named(error)) == ("TOOL_DENIED", 1, "b", "rm")
    assert [entry["status"] for entry in error.batch] == ["not_run", "denied", "denied"]
    assert [entry["code"] for entry in error.batch] == ["BATCH_REJECTED", "TOOL_DENIED", "TOOL_DENIED"]


def test_schema_issues_of_one_call_name_it_and_of_several_name_none() -> None:
    registry = ToolRegistry([Tool(name="read_file", parameters=READ_FILE_SCHEMA), Tool(name="free")])
    one = (call("free", '{"x": 1}', call_id="a"), call(arguments='{"path": ""}', call_id="b"))
    error = failure(lambda: decide(response(*one), tools=registry))
    assert (error.code, *named(error)) == ("SCHEMA_MISMATCH", 1, "b", "read_file")
    assert [entry["status"] for entry in error.batch] == ["not_run", "denied"]
    two = (call(arguments='{"path": ""}', call_id="a"), call(arguments='{"path": ""}', call_id="b"))
    error = failure(lambda: decide(response(*two), tools=registry))
    assert (error.code, *named(error), error.batch) == ("SCHEMA_MISMATCH", None, None, None, ())


def test_an_unknown_name_names_its_call() -> None:
    registry = ToolRegistry([Tool(name="read_file")])
    error = failure(lambda: decide(response(call(call_id="a"), call("rm", call_id="b")), tools=registry))
    assert (error.code, *named(error)) == ("UNKNOWN_TOOL", 1, "b", "rm")


class _Listed(BaseModel):
    path: str

    @model_serializer
    def _as_list(self) -> list[str]:
        return [self.path]


def test_a_tool_whose_parameters_dump_to_no_object_is_a_type_error() -> None:
    registry = ToolRegistry([Tool(name="read_file", parameters=_Listed)])
    with pytest.raises(TypeError, match=r"^the parameters of tool 'read_file' do not describe its function input$"):
        decide(response(call()), tools=registry)


def test_a_policy_rule_that_does_not_fit_the_registry_fails_before_any_call() -> None:
    registry = ToolRegistry([Tool(name="read_file")])
    policy = Policy(tools={"READ_FILE": ToolRule(approval=True)})
    with pytest.raises(ValueError, match="registered as 'read_file'"):
        decide(response(call()), tools=registry, policy=policy)


def test_the_batch_mode_of_the_policy_is_on_the_decision() -> None:
    decision = decide(response(call()), policy=Policy(batch="per_call"))
    assert decision.batch == "per_call"


def test_the_run_reaches_the_policy() -> None:
    run = Run()
    decide(response(call(call_id="a")), run=run)
    error = failure(lambda: decide(response(call(call_id="a")), run=run))
    assert (error.code, error.path) == ("CALL_ALREADY_DECIDED", "$.calls[0].call_id")
    run.cancel()
    error = failure(lambda: decide(response(call(call_id="b")), run=run))
    assert error.code == "RUN_CANCELLED"


REGISTRY = ToolRegistry([Tool(name="read_file", side_effects=False), Tool(name="write_file")])


@pytest.mark.parametrize(
    ("applied", "repaired", "refused"),
    [((), False, False), (("strip_fences",), False, True), ((), True, True), (("strip_fences",), True, True)],
)
def test_a_repaired_response_may_not_run_a_side_effecting_tool(
    applied: tuple[str, ...], repaired: bool, refused: bool
) -> None:
    fixed = FixedResponse(response(call("write_file")), applied)
    if refused:
        error = failure(lambda: decide(fixed, tools=REGISTRY, repaired=repaired))
        assert (error.code, error.path) == ("REPAIRED_CALL_REFUSED", "$.calls[0].name")
    else:
        decision = decide(fixed, tools=REGISTRY, repaired=repaired)
        assert [c.name for c in decision.calls] == ["write_file"]
    # a read-only tool of the registry may run after a repair
    read = FixedResponse(response(call("read_file")), applied)
    assert [v.status for v in decide(read, tools=REGISTRY, repaired=repaired).verdicts] == ["allowed"]


@pytest.mark.parametrize(("arguments", "line", "column"), [("\n []", 2, 2), ("  " + '"{\\"a\\": 1}"', 1, 3)])
def test_a_not_an_object_error_carries_the_text(arguments: str, line: int, column: int) -> None:
    error = failure(lambda: decide(response(call(arguments=arguments))))
    assert error.code in ("ARGUMENTS_NOT_OBJECT", "DOUBLE_ENCODED_JSON")
    assert (error.doc, error.lineno, error.colno) == (arguments, line, column)  # type: ignore[attr-defined]


# ---------------------------------------------------------------- call kinds


def _kind_call(kind: str, name: str, arguments: str, call_id: str) -> Any:
    from decisions.types import ToolCallItem

    return ToolCallItem(item_id=f"item_{call_id}", call_id=call_id, name=name, arguments=arguments, call_kind=kind)  # type: ignore[arg-type]


def test_a_client_call_without_a_registry_is_refused_by_name() -> None:
    items = (call(call_id="a"), _kind_call("local_shell", "local_shell", '{"command": ["ls"]}', "b"))
    with pytest.raises(OutputError) as info:
        decide(response(*items))
    error = info.value
    assert (error.code, error.path, error.call_index, error.call_id, error.tool) == (
        "UNKNOWN_TOOL",
        "$.calls[1].name",
        1,
        "b",
        "local_shell",
    )
    assert (
        error.message
        == "a local_shell call ('local_shell') runs only through a registered tool, and no registry was given"
    )
    assert error.hint == "register a Tool(name='local_shell', kind='local_shell') to run it"


def test_a_call_of_another_kind_than_its_tool_is_refused_by_name() -> None:
    registry = ToolRegistry([Tool(name="read_file", parameters=READ_FILE_SCHEMA), Tool(name="sql", kind="custom")])
    items = (call(call_id="a"), _kind_call("function", "sql", '{"q": 1}', "b"))
    with pytest.raises(OutputError) as info:
        decide(response(*items), tools=registry)
    error = info.value
    assert (error.code, error.path, error.call_index, error.call_id, error.tool) == (
        "CALL_KIND_MISMATCH",
        "$.calls[1]",
        1,
        "b",
        "sql",
    )
    assert error.message == "a function call was sent to the custom tool 'sql'"
    assert error.hint == "call 'sql' as a custom tool"


def test_a_custom_call_before_other_calls_leaves_them_parsed_and_checked() -> None:
    """A custom call's text is kept as it came, and the calls after it are
    still parsed (and refused when their arguments do not parse)."""
    registry = ToolRegistry(
        [Tool(name="read_file", parameters=READ_FILE_SCHEMA), Tool(name="sql", kind="custom", parameters=str)]
    )
    items = (_kind_call("custom", "sql", "select 1 -- not JSON", "a"), call(call_id="b"))
    decision = decide(response(*items), tools=registry)
    assert decision.kind == "tool"
    assert [c.arguments for c in decision.calls] == ["select 1 -- not JSON", {"path": "a.txt"}]
    assert [c.call_kind for c in decision.calls] == ["custom", "function"]
    broken = (items[0], call(call_id="b", arguments='{"path": '))
    with pytest.raises(OutputError) as info:
        decide(response(*broken), tools=registry)
    assert (info.value.code, info.value.path) == ("UNEXPECTED_END", "$.calls[1].arguments")


def test_a_custom_input_is_validated_as_text_not_as_json() -> None:
    """A Pydantic ``str`` schema gets the custom input as a string value; it is
    never handed to Pydantic as JSON text (``hello`` is not a JSON document)."""
    registry = ToolRegistry([Tool(name="note", kind="custom", parameters=str)])
    decision = decide(response(_kind_call("custom", "note", "hello", "a")), tools=registry)
    assert decision.kind == "tool" and decision.calls[0].arguments == "hello"
