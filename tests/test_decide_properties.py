"""Properties of decide(): nothing unfinished ever becomes executable, and
every refusal is a typed OutputError."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from decide_helpers import both_paths, needs_loads
from decisions import (
    ERROR_CODES,
    FinalDecision,
    OutputError,
    Policy,
    StreamError,
    Tool,
    ToolDecision,
    ToolRegistry,
    decide,
)
from decisions.types import (
    FINISH_REASONS,
    CallSnapshot,
    NormalizedResponse,
    ReasoningItem,
    RefusalItem,
    ResponseSnapshot,
    TextItem,
    ToolCallItem,
)

pytestmark = [needs_loads, both_paths]

REGISTRY = ToolRegistry(
    [
        Tool(
            name="read_file",
            parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        ),
        Tool(name="search"),
    ]
)
GOOD = {"stop", "tool_calls"}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
arguments = st.one_of(
    st.dictionaries(st.sampled_from(["path", "q", "x"]), json_values, max_size=3).map(json.dumps),
    json_values.map(json.dumps),
    st.text(max_size=30),
    st.sampled_from(['{"path": "a"', '{"path": "a"}}', "", "{'path': 'a'}", '"{\\"path\\": \\"a\\"}"']),
)


@st.composite
def tool_calls(draw: st.DrawFn, index: int) -> ToolCallItem:
    return ToolCallItem(
        item_id=f"item_{index}",
        call_id=draw(st.sampled_from([f"call_{index}", "call_0"])),
        name=draw(st.sampled_from(["read_file", "search", "read_flie", "rm"])),
        arguments=draw(arguments),
        complete=draw(st.booleans()),
        call_id_generated=draw(st.booleans()),
    )


@st.composite
def items(draw: st.DrawFn, need_call: bool = False) -> tuple[object, ...]:
    count = draw(st.integers(0, 4))
    out: list[object] = [draw(tool_calls(9))] if need_call else []
    for index in range(count):
        kind = draw(st.sampled_from(["text", "call", "call", "refusal", "reasoning"]))
        if kind == "text":
            out.append(TextItem(item_id=f"t{index}", text=draw(st.text(max_size=20) | json_values.map(json.dumps))))
        elif kind == "refusal":
            out.append(RefusalItem(item_id=f"r{index}", text="no"))
        elif kind == "reasoning":
            out.append(ReasoningItem(item_id=f"g{index}", text="thinking"))
        else:
            out.append(draw(tool_calls(index)))
    return tuple(out)


ANY_FINISH = st.sampled_from(FINISH_REASONS) | st.text(max_size=8)


@st.composite
def responses(
    draw: st.DrawFn, finish: st.SearchStrategy[str] = ANY_FINISH, need_call: bool = False
) -> NormalizedResponse:
    return NormalizedResponse(
        provider=draw(st.sampled_from(["openai-chat", "openai-responses", "anthropic", "gemini"])),
        response_id=draw(st.none() | st.just("resp_1")),
        model=None,
        items=draw(items(need_call)),  # type: ignore[arg-type]
        finish_reason=draw(finish),  # type: ignore[arg-type]
    )


def _decide(response: object) -> object:
    try:
        return decide(response, tools=REGISTRY, output=None, policy=Policy())  # type: ignore[arg-type]
    except OutputError as error:
        assert ERROR_CODES[error.code].layer == error.layer
        json.dumps(error.to_dict())
        return error


@given(responses())
def test_only_finished_responses_become_decisions(response: NormalizedResponse) -> None:
    outcome = _decide(response)
    unfinished = (
        response.finish_reason not in GOOD
        or any(isinstance(i, RefusalItem) for i in response.items)
        or any(not c.complete for c in response.tool_calls)
    )
    if unfinished:
        assert isinstance(outcome, StreamError)
    if isinstance(outcome, ToolDecision):
        assert response.finish_reason in GOOD
        assert all(c.complete for c in response.tool_calls)
        for call, item in zip(outcome.calls, response.tool_calls, strict=True):
            if item.call_id_generated and not response.response_id:  # prefixed with the response's digest
                assert call.call_id.startswith("gen-") and call.call_id.endswith(f":{item.call_id}")
            else:
                assert call.call_id == item.call_id
        assert all(isinstance(c.arguments, dict) for c in outcome.calls)
    if isinstance(outcome, FinalDecision):
        assert response.finish_reason == "stop" and not response.tool_calls


@given(responses(need_call=True), st.sampled_from(sorted(set(FINISH_REASONS) - GOOD)))
def test_no_finish_but_stop_or_tool_calls_is_ever_executable(response: NormalizedResponse, finish: str) -> None:
    forced = NormalizedResponse(
        provider=response.provider,
        response_id=None,
        model=None,
        items=response.items,
        finish_reason=finish,  # type: ignore[arg-type]
    )
    assert isinstance(_decide(forced), StreamError)


@given(responses(st.sampled_from(sorted(GOOD)), need_call=True), st.data())
def test_one_unfinished_call_stops_the_whole_response(response: NormalizedResponse, data: st.DataObject) -> None:
    calls = [i for i, item in enumerate(response.items) if isinstance(item, ToolCallItem)]
    cut = data.draw(st.sampled_from(calls))
    items = list(response.items)
    item = items[cut]
    assert isinstance(item, ToolCallItem)
    items[cut] = ToolCallItem(
        item_id=item.item_id, call_id=item.call_id, name=item.name, arguments=item.arguments, complete=False
    )
    outcome = _decide(
        NormalizedResponse(
            provider="anthropic", response_id=None, model=None, items=tuple(items), finish_reason=response.finish_reason
        )
    )
    assert isinstance(outcome, StreamError)
    assert outcome.code in ("INCOMPLETE_TOOL_CALL", "REFUSAL")


@given(
    st.text(max_size=20),
    st.lists(st.tuples(st.text(max_size=6), st.text(max_size=20), st.booleans()), max_size=3),
    st.sampled_from(["init", "started", "streaming", "completed", "failed"]),
)
def test_a_snapshot_is_never_a_decision(text: str, calls: list[tuple[str, str, bool]], state: str) -> None:
    snapshot = ResponseSnapshot(
        provider="openai-chat",
        response_id=None,
        model=None,
        text=text,
        calls=tuple(
            CallSnapshot(item_id=f"i{n}", call_id=f"c{n}", name=name, arguments=args, partial=None, ended=ended)
            for n, (name, args, ended) in enumerate(calls)
        ),
        state=state,
    )
    outcome = _decide(snapshot)
    assert isinstance(outcome, StreamError) and outcome.code == "SNAPSHOT_NOT_DECIDABLE"
