"""What a call is made of: a call whose arguments the provider did not send,
a call whose id is empty, and content the mapper does not know inside a
block that becomes the decision, are refused; none is filled in (``{}``),
kept unpairable or dropped while the rest executes.

Each case runs as raw SSE bytes or a whole body (text and dict), on both
backends, then through ``decide``; the control beside each refusal shows the
same envelope with the documented shape gives the executable call.
"""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import pytest

from decisions import Tool, ToolDecision, _backend, decide
from decisions.errors import OutputError

TOOLS = [Tool(name="read_file", parameters={"type": "object", "properties": {"path": {"type": "string"}}})]
ANTHROPIC = "anthropic"

START = {
    "type": "message_start",
    "message": {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude",
        "content": [],
        "stop_reason": None,
        "usage": {"input_tokens": 3, "output_tokens": 1},
    },
}
TOOL_USE = {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {}}
ARGS = {"type": "input_json_delta", "partial_json": '{"path": "a.txt"}'}


def block_start(block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": 0, "content_block": block}


def delta(body: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": 0, "delta": body}


def stream(*middle: dict[str, Any], stop_reason: str = "tool_use") -> list[dict[str, Any]]:
    return [
        START,
        *middle,
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": stop_reason}, "usage": {"output_tokens": 5}},
        {"type": "message_stop"},
    ]


def body(block: dict[str, Any], stop_reason: str = "tool_use") -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude",
        "content": [block],
        "stop_reason": stop_reason,
        "usage": {"input_tokens": 3, "output_tokens": 5},
    }


def from_stream(impl: ModuleType, events: list[dict[str, Any]]) -> Any:
    assembler = impl.StreamAssembler(ANTHROPIC)
    for event in events:
        assembler.feed(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
    return decide(assembler.finish(), tools=TOOLS)


def outcome(run: Any) -> Any:
    """The executed calls, or (code, path) of the first error."""
    try:
        decision = run()
    except OutputError as error:
        return error.code, error.path
    assert isinstance(decision, ToolDecision), decision
    return [(call.name, call.arguments) for call in decision.calls]


NO_INPUT = {key: value for key, value in TOOL_USE.items() if key != "input"}
EMPTY = ("EMPTY_INPUT", "$.calls[0].arguments")


@pytest.mark.parametrize(
    "events, expected",
    [
        (stream(block_start(TOOL_USE), delta(ARGS)), [("read_file", {"path": "a.txt"})]),
        (stream(block_start(TOOL_USE)), [("read_file", {})]),  # a tool without arguments
        (stream(block_start(NO_INPUT)), EMPTY),
        (stream(block_start({**TOOL_USE, "input": None})), EMPTY),
        (stream(block_start(NO_INPUT), stop_reason="end_turn"), ("FINISH_REASON_MISMATCH", "$.calls[0].arguments")),
        (stream(block_start(NO_INPUT), delta(ARGS)), [("read_file", {"path": "a.txt"})]),
        # a delta type the mapper does not know, in the call's own block
        (stream(block_start(TOOL_USE), delta({"type": "input_patch_delta", "patch": "x"})), None),
        (stream(block_start(TOOL_USE), delta({"type": "input_patch_delta"}), delta(ARGS)), None),
        (stream(block_start(TOOL_USE), delta(ARGS), delta({"type": "input_patch_delta"})), None),
    ],
)
def test_anthropic_stream_calls(
    impl: ModuleType, events: list[dict[str, Any]], expected: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_backend, "impl", impl)
    assert outcome(lambda: from_stream(impl, events)) == (expected or ("MALFORMED_EVENT", "$.delta.type"))


@pytest.mark.parametrize("kind", ["text", "thinking"])
def test_anthropic_unknown_delta_in_an_answer_block(
    impl: ModuleType, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A final answer is not given without what an unknown delta of its text
    block held; a thinking block's unknown delta is counted (never acted on)."""
    monkeypatch.setattr(_backend, "impl", impl)
    block = {"type": "text", "text": ""} if kind == "text" else {"type": "thinking", "thinking": "", "signature": ""}
    first = {"type": "text_delta", "text": "done"} if kind == "text" else {"type": "thinking_delta", "thinking": "t"}
    events = stream(block_start(block), delta(first), delta({"type": "future_delta", "x": "y"}), stop_reason="end_turn")
    assembler = impl.StreamAssembler(ANTHROPIC)
    feed = [f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode() for event in events]
    if kind == "text":
        with pytest.raises(OutputError) as caught:
            for chunk in feed:
                assembler.feed(chunk)
        assert (caught.value.code, caught.value.path) == ("MALFORMED_EVENT", "$.delta.type")
        assert "future_delta" in caught.value.message
        return
    for chunk in feed:
        assembler.feed(chunk)
    response = assembler.finish()
    assert response.unknown_events["content_block_delta:future_delta"] == 1
    assert outcome(lambda: decide(response, tools=TOOLS)) == ("EMPTY_DECISION", "$")


@pytest.mark.parametrize("form", ["text", "dict"])
@pytest.mark.parametrize(
    "block, stop_reason, expected",
    [
        ({**TOOL_USE, "input": {"path": "a.txt"}}, "tool_use", [("read_file", {"path": "a.txt"})]),
        (TOOL_USE, "tool_use", [("read_file", {})]),
        (NO_INPUT, "tool_use", EMPTY),
        ({**TOOL_USE, "input": None}, "tool_use", EMPTY),
        (NO_INPUT, "end_turn", ("FINISH_REASON_MISMATCH", "$.calls[0].arguments")),
    ],
)
def test_anthropic_body_calls(
    impl: ModuleType, form: str, block: dict[str, Any], stop_reason: str, expected: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tool_use block without an ``input`` object has no arguments, as a
    Chat or Responses call without ``arguments`` has none."""
    monkeypatch.setattr(_backend, "impl", impl)
    payload: Any = body(block, stop_reason)
    payload = json.dumps(payload) if form == "text" else payload
    assert outcome(lambda: decide(impl.normalize(payload, provider=ANTHROPIC), tools=TOOLS)) == expected


def test_anthropic_message_start_with_a_call_without_input(impl: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_backend, "impl", impl)
    start = {**START, "message": {**START["message"], "content": [NO_INPUT], "stop_reason": "tool_use"}}
    assert outcome(lambda: from_stream(impl, [start, {"type": "message_stop"}])) == EMPTY


RESPONSES = "openai-responses"


def responses_call(call_id: str) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": "fc_1",
        "call_id": call_id,
        "name": "read_file",
        "arguments": '{"path": "a.txt"}',
        "status": "completed",
    }


def responses_stream(call_id: str) -> list[dict[str, Any]]:
    added = {**responses_call(call_id), "status": "in_progress"}
    final = {"id": "resp_1", "model": "m", "status": "completed", "output": [responses_call(call_id)]}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {"id": "resp_1", "model": "m", "status": "in_progress"}},
        {"type": "response.output_item.added", "output_index": 0, "item": added},
        {"type": "response.output_item.done", "output_index": 0, "item": responses_call(call_id)},
        {"type": "response.completed", "response": final},
    ]
    for number, event in enumerate(events):
        event["sequence_number"] = number
    return events


@pytest.mark.parametrize("call_id", ["call_1", ""])
def test_an_empty_call_id_is_no_call_id(impl: ModuleType, call_id: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A call whose id is empty cannot be paired with its result: refused as a
    missing one is (Responses ``call_id``, Anthropic ``tool_use.id``), in a
    body and in a stream."""
    monkeypatch.setattr(_backend, "impl", impl)
    executable = [("read_file", {"path": "a.txt"})]
    body_call = {"id": "resp_1", "model": "m", "status": "completed", "output": [responses_call(call_id)]}
    assembler = impl.StreamAssembler(RESPONSES)

    def stream_run() -> Any:
        for event in responses_stream(call_id):
            assembler.feed(f"data: {json.dumps(event)}\n\n".encode())
        return decide(assembler.finish(), tools=TOOLS)

    runs: dict[str, tuple[Any, str]] = {
        "responses body": (lambda: decide(impl.normalize(body_call, provider=RESPONSES), tools=TOOLS), "$.output[0]"),
        "responses stream": (stream_run, "$.item"),
        "anthropic body": (
            lambda: decide(
                impl.normalize(body({**TOOL_USE, "id": call_id, "input": {"path": "a.txt"}}), provider=ANTHROPIC),
                tools=TOOLS,
            ),
            "$.content[0]",
        ),
        "anthropic stream": (
            lambda: from_stream(impl, stream(block_start({**TOOL_USE, "id": call_id}), delta(ARGS))),
            "$.content_block",
        ),
    }
    for name, (run, at) in runs.items():
        key = "call_id" if name.startswith("responses") else "id"
        expected = executable if call_id else ("MALFORMED_EVENT", f"{at}.{key}")
        assert outcome(run) == expected, name
