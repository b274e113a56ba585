"""OpenAI Responses calls the application runs, besides function calls:
``custom_tool_call`` (free-form text input), ``local_shell_call``,
``computer_call``, ``apply_patch_call`` and ``shell_call``, on both backends,
from the recordings and from hostile streams; then ``decide`` and the policy
on them."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from decide_helpers import both_paths
from decisions import Policy, Tool, ToolRegistry, ToolRule, decide, wire
from decisions.errors import DomainError, OutputError, PolicyError, SchemaError, StreamError
from decisions.types import NormalizedResponse, ToolCallStarted
from openai_recordings import FIXTURES, lines, run, run_events, sse

pytestmark = both_paths

PROVIDER = "openai-responses"
RESP = "vercel-ai/packages/openai/src/responses/__fixtures__/"


def compact(value: Any) -> str:
    """A client tool's arguments: its object, keys sorted, no whitespace."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def first_response(path: str) -> list[str]:
    """The events of a recording's first response (some hold two)."""
    out: list[str] = []
    for line in lines(path):
        if json.loads(line)["type"] == "response.created" and out:
            break
        out.append(line)
    return out


def done_item(events: list[str], item_type: str) -> dict[str, Any]:
    for line in events:
        event = json.loads(line)
        if event["type"] == "response.output_item.done" and event["item"]["type"] == item_type:
            return dict(event["item"])
    raise AssertionError(f"no {item_type} item")


def body_item(path: str, item_type: str) -> dict[str, Any]:
    body = json.loads((FIXTURES / path).read_text(encoding="utf-8"))
    return next(item for item in body["output"] if item["type"] == item_type)


def code_of(impl: ModuleType, events: list[Any]) -> str:
    with pytest.raises(OutputError) as info:
        run_events(impl, PROVIDER, events)
    return info.value.code


# ---------------------------------------------------------------- the recordings

#: (recording, item type, call kind, the field its arguments come from)
KINDS = [
    ("openai-custom-tool.1", "custom_tool_call", "custom", "input"),
    ("openai-local-shell-tool.1", "local_shell_call", "local_shell", "action"),
    ("openai-apply-patch-tool.1", "apply_patch_call", "apply_patch", "operation"),
    ("openai-apply-patch-tool-delete.1", "apply_patch_call", "apply_patch", "operation"),
    ("openai-shell-tool.1", "shell_call", "shell", "action"),
]


def expected(item: dict[str, Any], field: str) -> str:
    value = item[field]
    return value if field == "input" else compact(value)


@pytest.mark.parametrize(("name", "item_type", "kind", "field"), KINDS, ids=[k[0] for k in KINDS])
def test_each_kind_streamed_is_a_call_of_its_kind(
    impl: ModuleType, name: str, item_type: str, kind: str, field: str
) -> None:
    events = first_response(RESP + name + ".chunks.txt")
    r = run_events(impl, PROVIDER, events)
    item = done_item(events, item_type)
    (call,) = r.tool_calls
    assert r.finish_reason == "tool_calls" and call.complete
    assert call.call_kind == kind and call.item_id == item["id"] and call.call_id == item["call_id"]
    assert call.name == (item["name"] if kind == "custom" else kind)
    assert call.arguments == expected(item, field)  # byte for byte
    assert not any(key.startswith("output_item:") for key in r.unknown_events)


BODIES = [k for k in KINDS if (FIXTURES / (RESP + k[0] + ".json")).exists()]


@pytest.mark.parametrize(("name", "item_type", "kind", "field"), BODIES, ids=[k[0] for k in BODIES])
def test_each_kind_in_a_body_is_a_call_of_its_kind(
    impl: ModuleType, name: str, item_type: str, kind: str, field: str
) -> None:
    path = RESP + name + ".json"
    r = run(impl, PROVIDER, path, "json-body")
    item = body_item(path, item_type)
    call = r.tool_calls[0]
    assert call.call_kind == kind and call.call_id == item["call_id"] and call.item_id == item["id"]
    assert call.arguments == expected(item, field)


def test_the_streamed_apply_patch_diff_is_the_operation_diff(impl: ModuleType) -> None:
    events = lines(RESP + "openai-apply-patch-tool.1.chunks.txt")
    streamed = "".join(json.loads(line)["delta"] for line in events if "apply_patch_call_operation_diff.delta" in line)
    (call,) = run_events(impl, PROVIDER, events).tool_calls
    assert json.loads(call.arguments)["diff"] == streamed


def test_a_container_shell_call_is_the_providers_own(impl: ModuleType) -> None:
    r = run(impl, PROVIDER, RESP + "openai-shell-container.1.json", "json-body")
    assert r.tool_calls == () and r.unknown_events["output_item:shell_call"] == 1


def test_function_calls_are_of_kind_function(impl: ModuleType) -> None:
    r = run(impl, PROVIDER, "vercel-ai/packages/azure/src/__fixtures__/azure-tool-call.1.chunks.txt", "jsonl")
    assert r.tool_calls and {c.call_kind for c in r.tool_calls} == {"function"}


# ---------------------------------------------------------------- synthetic streams


def created() -> dict[str, Any]:
    return {"type": "response.created", "response": {"id": "resp_1", "model": "m"}}


def custom(status: str | None = "completed", text: str = "", **extra: Any) -> dict[str, Any]:
    item = {"type": "custom_tool_call", "id": "ct_1", "call_id": "call_1", "name": "sql", "input": text, **extra}
    if status is not None:
        item["status"] = status
    return item


def added(item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "response.output_item.added", "output_index": 0, "item": item}


def done(item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "response.output_item.done", "output_index": 0, "item": item}


def completed(*output: dict[str, Any]) -> dict[str, Any]:
    return {"type": "response.completed", "response": {"id": "resp_1", "status": "completed", "output": list(output)}}


def input_delta(delta: str, item_id: str = "ct_1") -> dict[str, Any]:
    return {"type": "response.custom_tool_call_input.delta", "item_id": item_id, "output_index": 0, "delta": delta}


def input_done(text: str) -> dict[str, Any]:
    return {"type": "response.custom_tool_call_input.done", "item_id": "ct_1", "output_index": 0, "input": text}


JSONISH = '{"path": "a.txt",  "x": [1, 2.50]}'


def custom_stream(pieces: list[str]) -> list[dict[str, Any]]:
    text = "".join(pieces)
    return [
        created(),
        added(custom(status="in_progress")),
        *(input_delta(piece) for piece in pieces),
        input_done(text),
        done(custom(text=text)),
        completed(custom(text=text)),
    ]


def test_custom_input_that_looks_like_json_stays_text(impl: ModuleType) -> None:
    (call,) = run_events(impl, PROVIDER, custom_stream(['{"path": "a', '.txt",  "x": [1, 2.50]}'])).tool_calls
    assert call.call_kind == "custom" and call.arguments == JSONISH
    (body_call,) = impl.normalize(json.dumps(completed(custom(text=JSONISH))["response"]), provider=PROVIDER).tool_calls
    assert body_call.arguments == JSONISH and body_call.call_kind == "custom"


@settings(max_examples=40, deadline=None)
@given(cuts=st.lists(st.integers(min_value=0, max_value=len(JSONISH)), max_size=6), data=st.data())
def test_custom_input_in_any_chunking_is_the_same_text(impl: ModuleType, cuts: list[int], data: st.DataObject) -> None:
    bounds = sorted({0, len(JSONISH), *cuts})
    pieces = [JSONISH[a:b] for a, b in zip(bounds, bounds[1:])]
    raw = sse(custom_stream(pieces))
    splits = sorted(data.draw(st.lists(st.integers(min_value=0, max_value=len(raw)), max_size=8)))
    assembler = impl.StreamAssembler(PROVIDER)
    for a, b in zip([0, *splits], [*splits, len(raw)]):
        assembler.feed(raw[a:b])
    (call,) = assembler.finish().tool_calls
    assert call.arguments == JSONISH and call.call_kind == "custom"


@pytest.mark.parametrize(
    ("events", "code"),
    [
        # deltas, then no .done and no output_item.done: the completed output names it, it never ended
        (
            [
                created(),
                added(custom(None)),
                input_delta('{"a":'),
                input_delta("1}"),
                completed(custom(text='{"a":1}')),
            ],
            "ITEM_NOT_ENDED",
        ),
        # deltas and the stream just stops
        ([created(), added(custom(None)), input_delta("SELECT 1"), input_delta(" FROM t")], "NO_TERMINAL_EVENT"),
        # the .done says something else than the deltas
        ([created(), added(custom(None)), input_delta("rm "), input_done("rm -rf /")], "OUTPUT_MISMATCH"),
        # the completed output says something else than the deltas
        (
            [
                created(),
                added(custom(None)),
                input_delta("ls"),
                done(custom(text="ls")),
                completed(custom(text="ls /")),
            ],
            "OUTPUT_MISMATCH",
        ),
        # done, but not completed
        (
            [
                created(),
                added(custom(None)),
                input_delta("ls"),
                done(custom("incomplete", "ls")),
                completed(custom("incomplete", "ls")),
            ],
            "ITEM_NOT_ENDED",
        ),
        # an input delta for a function call, a function delta for a custom call
        (
            [
                created(),
                added({"type": "function_call", "id": "ct_1", "call_id": "c", "name": "f", "arguments": ""}),
                input_delta("x"),
            ],
            "UNKNOWN_ITEM",
        ),
        (
            [
                created(),
                added(custom(None)),
                {"type": "response.function_call_arguments.delta", "item_id": "ct_1", "delta": "{}"},
            ],
            "UNKNOWN_ITEM",
        ),
        ([created(), input_delta("x")], "DELTA_BEFORE_START"),
        (
            [created(), added(custom(None)), input_delta("x"), done(custom(text="x")), input_delta("y")],
            "DELTA_AFTER_END",
        ),
        # a custom call with no call_id, a client call done without its action
        ([created(), added({"type": "custom_tool_call", "id": "ct_1", "name": "sql", "input": ""})], "MALFORMED_EVENT"),
        (
            [
                created(),
                added({"type": "local_shell_call", "id": "ls_1", "call_id": "c", "status": "in_progress"}),
                done({"type": "local_shell_call", "id": "ls_1", "call_id": "c", "status": "completed"}),
            ],
            "MALFORMED_EVENT",
        ),
        ([created(), added({"type": "computer_call", "id": "cu_1", "call_id": "c", "action": [1]})], "MALFORMED_EVENT"),
        (
            [created(), added({"type": "custom_tool_call", "id": "ct_1", "call_id": "c", "name": "s", "input": 5})],
            "MALFORMED_EVENT",
        ),
    ],
    ids=[
        "no-done",
        "cut",
        "done-differs",
        "output-differs",
        "incomplete",
        "input-delta-to-function",
        "function-delta-to-custom",
        "never-added",
        "after-end",
        "no-call-id",
        "no-action",
        "action-not-object",
        "input-not-text",
    ],
)
def test_hostile_custom_and_client_streams(impl: ModuleType, events: list[dict[str, Any]], code: str) -> None:
    assert code_of(impl, events) == code


def test_an_incomplete_custom_call_is_refused_like_a_function_call(impl: ModuleType) -> None:
    function = {"type": "function_call", "id": "ct_1", "call_id": "call_1", "name": "sql", "arguments": ""}
    base = [created(), added(custom(None)), input_delta("x"), completed(custom(text="x"))]
    twin = [
        created(),
        added(function),
        {"type": "response.function_call_arguments.delta", "item_id": "ct_1", "delta": "x"},
        completed({**function, "arguments": "x"}),
    ]
    assert code_of(impl, base) == code_of(impl, twin) == "ITEM_NOT_ENDED"


def shell_call(call_id: str, item_id: str = "ls_1") -> dict[str, Any]:
    return {
        "type": "local_shell_call",
        "id": item_id,
        "call_id": call_id,
        "status": "completed",
        "action": {"type": "exec", "command": ["ls"], "env": {}},
    }


@pytest.mark.parametrize("second", ["function", "local_shell"])
def test_duplicate_call_ids_across_kinds(impl: ModuleType, second: str) -> None:
    other = (
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "f",
            "arguments": "{}",
            "status": "completed",
        }
        if second == "function"
        else shell_call("call_1")
    )
    stream = [
        created(),
        added(custom(None)),
        input_done("x"),
        done(custom(text="x")),
        added(other),
        done(other),
        completed(custom(text="x"), other),
    ]
    assert code_of(impl, stream) == "DUPLICATE_CALL_ID"
    with pytest.raises(StreamError) as info:
        impl.normalize(json.dumps(completed(custom(text="x"), other)["response"]), provider=PROVIDER)
    assert info.value.code == "DUPLICATE_CALL_ID"


def test_a_streamed_diff_that_differs_from_the_operation(impl: ModuleType) -> None:
    events = [json.loads(line) for line in lines(RESP + "openai-apply-patch-tool.1.chunks.txt")]
    for event in events:
        if event["type"] == "response.apply_patch_call_operation_diff.delta":
            event["delta"] = event["delta"].replace("Milk", "Mi1k")
            event.pop("obfuscation")
    events = [e for e in events if e["type"] != "response.apply_patch_call_operation_diff.done"]
    assert code_of(impl, events) == "OUTPUT_MISMATCH"


def test_a_computer_call_body(impl: ModuleType) -> None:
    action = {"type": "click", "x": 10, "y": 20, "button": "left"}
    item = {
        "type": "computer_call",
        "id": "cu_1",
        "call_id": "call_9",
        "status": "completed",
        "action": action,
        "pending_safety_checks": [],
    }
    (call,) = impl.normalize(json.dumps(completed(item)["response"]), provider=PROVIDER).tool_calls
    assert (call.call_kind, call.name, call.arguments) == ("computer", "computer", compact(action))


def test_the_kind_crosses_the_canonical_wire_format(impl: ModuleType) -> None:
    started = ToolCallStarted(item_id="i", call_id="c", name="sql", call_kind="custom")
    events = [
        {"type": "response_started"},
        started.to_dict(),
        {"type": "tool_arguments_delta", "item_id": "i", "delta": "SELECT"},
        {"type": "item_ended", "item_id": "i"},
        {"type": "response_finished", "finish_reason": "tool_calls"},
    ]
    (call,) = run_events(impl, "canonical", events).tool_calls
    assert call.call_kind == "custom" and started.to_dict()["call_kind"] == "custom"
    assert wire.event_from_dict(started.to_dict()) == started
    with pytest.raises(StreamError) as bad:
        wire.event_from_dict({**started.to_dict(), "call_kind": "bash"})
    assert bad.value.code == "MALFORMED_EVENT"
    events[1] = {**started.to_dict(), "call_kind": "bash"}
    with pytest.raises(StreamError) as info:
        run_events(impl, "canonical", events)
    assert info.value.code == "MALFORMED_EVENT" and "call_kind" in info.value.message


def test_a_custom_call_snapshot_is_not_parsed(impl: ModuleType) -> None:
    assembler = impl.StreamAssembler(PROVIDER)
    for event in custom_stream(["{", '"a":'])[:3]:
        assembler.feed_event(json.dumps(event))
    (call,) = assembler.snapshot().calls
    assert (call.call_kind, call.arguments, call.partial) == ("custom", "{", None)


# ---------------------------------------------------------------- decide and the policy


def custom_response(impl: ModuleType, text: str = "SELECT 1") -> NormalizedResponse:
    return run_events(impl, PROVIDER, custom_stream([text]))


def local_shell_response(impl: ModuleType) -> NormalizedResponse:
    return run(impl, PROVIDER, RESP + "openai-local-shell-tool.1.json", "json-body")


def apply_patch_response(impl: ModuleType, path: str) -> NormalizedResponse:
    item = {
        "type": "apply_patch_call",
        "id": "apc_1",
        "call_id": "call_p",
        "status": "completed",
        "operation": {"type": "update_file", "path": path, "diff": "@@\n-a\n+b\n"},
    }
    return impl.normalize(json.dumps(completed(item)["response"]), provider=PROVIDER)


SQL = Tool(name="sql", kind="custom", parameters={"type": "string", "pattern": "^SELECT "})


def test_a_custom_call_decided_keeps_its_text(impl: ModuleType) -> None:
    decision = decide(custom_response(impl, JSONISH), tools=[Tool(name="sql", kind="custom")])
    assert decision.kind == "tool"
    (call,) = decision.calls
    assert call.arguments == JSONISH and call.call_kind == "custom" and decision.executable


def test_a_custom_call_is_validated_as_text(impl: ModuleType) -> None:
    assert decide(custom_response(impl, "SELECT 1"), tools=[SQL]).executable
    with pytest.raises(SchemaError) as info:
        decide(custom_response(impl, "DROP TABLE t"), tools=[SQL])
    assert info.value.code == "SCHEMA_MISMATCH" and info.value.issues[0]["path"] == "$.calls[0].arguments"


def test_kinds_must_match(impl: ModuleType) -> None:
    with pytest.raises(DomainError) as info:
        decide(custom_response(impl), tools=[Tool(name="sql")])  # a JSON tool
    assert (info.value.code, info.value.path) == ("CALL_KIND_MISMATCH", "$.calls[0]")
    function = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "c",
        "name": "sql",
        "arguments": "{}",
        "status": "completed",
    }
    response = impl.normalize(json.dumps(completed(function)["response"]), provider=PROVIDER)
    with pytest.raises(DomainError) as info:
        decide(response, tools=[SQL])  # a text tool
    assert (info.value.code, info.value.path) == ("CALL_KIND_MISMATCH", "$.calls[0]")


def test_a_local_shell_call_to_an_unregistered_tool(impl: ModuleType) -> None:
    for tools in (None, [Tool(name="read_file")], ToolRegistry([Tool(name="sql", kind="custom")])):
        with pytest.raises(DomainError) as info:
            decide(local_shell_response(impl), tools=tools)
        assert (info.value.code, info.value.path) == ("UNKNOWN_TOOL", "$.calls[0].name")
    registered = decide(local_shell_response(impl), tools=[Tool(name="local_shell", kind="local_shell")])
    assert registered.kind == "tool"
    assert registered.calls[0].arguments["command"] == ["ls"] and registered.calls[0].call_kind == "local_shell"


def test_a_custom_call_needs_a_registry(impl: ModuleType) -> None:
    with pytest.raises(DomainError) as info:
        decide(custom_response(impl))
    assert (info.value.code, info.value.path) == ("UNKNOWN_TOOL", "$.calls[0].name")


def test_an_apply_patch_path_escaping_the_workspace(impl: ModuleType, tmp_path: Path) -> None:
    tools = [Tool(name="apply_patch", kind="apply_patch")]
    policy = Policy(workspace=tmp_path, write_scopes=("",), tools={"apply_patch": ToolRule(paths={"path": "write"})})
    ok = decide(apply_patch_response(impl, "src/a.py"), tools=tools, policy=policy)
    assert ok.kind == "tool" and ok.verdicts[0].paths == {"$.calls[0].arguments.path": str(tmp_path / "src/a.py")}
    for escape in ("../outside.py", "/etc/passwd", "src/../../x"):
        with pytest.raises(PolicyError) as info:
            decide(apply_patch_response(impl, escape), tools=tools, policy=policy)
        assert (info.value.code, info.value.path) == ("PATH_OUTSIDE_WORKSPACE", "$.calls[0].arguments.path")


def test_tool_kinds_are_checked_when_registered(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        Tool(name="sh", kind="local_shell")  # a client tool is registered under its kind
    with pytest.raises(ValueError):
        Tool(name="sql", kind="custom", parameters={"type": "object"})
    with pytest.raises(ValueError):
        Tool(name="x", kind="bash")  # type: ignore[arg-type]
    policy = Policy(workspace=tmp_path, tools={"sql": ToolRule(paths={"path": "read"})})
    with pytest.raises(ValueError):
        policy.plan(ToolRegistry([Tool(name="sql", kind="custom")]))
