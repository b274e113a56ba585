"""The ``openai-responses`` provider on both backends: every recording, the
notable ones in detail, and the identity, terminal and output checks on small
synthetic streams."""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from decisions.errors import OutputError, StreamError, TransportError
from decisions.types import NormalizedResponse, ReasoningItem, RefusalItem, TextItem, ToolCallItem
from openai_mutations import damaged
from openai_mutations import outcome as mutated_outcome
from openai_recordings import FIXTURES, lines, outcome, recordings, run, run_events, short, sse

PROVIDER = "openai-responses"
RECORDINGS = recordings(PROVIDER)
RESP = "vercel-ai/packages/openai/src/responses/__fixtures__/"
AZURE = "vercel-ai/packages/azure/src/__fixtures__/"
XAI = "vercel-ai/packages/xai/src/responses/__fixtures__/"
LMSTUDIO = "vercel-ai/packages/open-responses/src/responses/__fixtures__/"
#: recordings holding several responses one after the other
CONCATENATED = [
    RESP + "openai-reasoning-encrypted-content.1.chunks.txt",
    AZURE + "azure-reasoning-encrypted-content.1.chunks.txt",
    RESP + "openai-shell-tool.1.chunks.txt",
]


def segments(path: str) -> list[list[str]]:
    """A recording's events split at each ``response.created``."""
    out: list[list[str]] = []
    for line in lines(path):
        if json.loads(line).get("type") == "response.created" or not out:
            out.append([])
        out[-1].append(line)
    return out


def test_every_file_is_found() -> None:
    assert len(RECORDINGS) >= 90 and {fmt for _, fmt in RECORDINGS} == {"json-body", "jsonl"}


@pytest.mark.parametrize(("path", "fmt"), RECORDINGS, ids=[short(p) for p, _ in RECORDINGS])
def test_every_recording_gives_a_response_or_a_named_error(impl: ModuleType, path: str, fmt: str) -> None:
    result = outcome(impl, PROVIDER, path, fmt)
    if isinstance(result, NormalizedResponse):
        assert result.provider == PROVIDER and result.finish_reason in ("stop", "tool_calls")
        for call in result.tool_calls:
            assert call.complete and call.call_id != call.item_id
            if call.call_kind != "custom":  # a custom tool's input is text
                assert isinstance(json.loads(call.arguments), dict)
    else:
        name, code = result
        assert name in ("StreamError", "TransportError") and code


@pytest.mark.parametrize(("path", "fmt"), RECORDINGS, ids=[short(p) for p, _ in RECORDINGS])
def test_both_backends_agree_on_every_recording(both: tuple[ModuleType, ModuleType], path: str, fmt: str) -> None:
    native, pure = both
    assert outcome(native, PROVIDER, path, fmt) == outcome(pure, PROVIDER, path, fmt)


@pytest.mark.parametrize("path", CONCATENATED, ids=short)
def test_concatenated_responses(impl: ModuleType, path: str) -> None:
    with pytest.raises(StreamError) as info:
        run(impl, PROVIDER, path, "jsonl")
    assert info.value.code == "EVENT_AFTER_TERMINAL"
    parts = segments(path)
    assert len(parts) > 1
    ids = {run_events(impl, PROVIDER, part).response_id for part in parts}
    assert len(ids) == len(parts)


def test_reasoning_with_encrypted_content_then_tool_calls(impl: ModuleType) -> None:
    first, second, *_ = segments(RESP + "openai-reasoning-encrypted-content.1.chunks.txt")
    r = run_events(impl, PROVIDER, first)
    reasoning, call = r.items
    assert isinstance(reasoning, ReasoningItem) and reasoning.signature and reasoning.text
    assert isinstance(call, ToolCallItem) and r.finish_reason == "tool_calls"
    assert call.item_id.startswith("fc_") and call.call_id.startswith("call_")
    assert run_events(impl, PROVIDER, second).tool_calls


def test_function_call_keeps_item_id_and_call_id(impl: ModuleType) -> None:
    r = run(impl, PROVIDER, AZURE + "azure-tool-call.1.chunks.txt", "jsonl")
    (call,) = r.items
    assert isinstance(call, ToolCallItem)
    assert (call.item_id, call.call_id, call.name, call.arguments) == (
        "fc_04041325ab8ae30400698c51c5468c8197a395f18875a5339f",
        "call_H5DxLSFnsGhiROnUiDHmgyc8",
        "weather",
        '{"location":"San Francisco"}',
    )
    assert (r.finish_reason, r.raw_finish_reason) == ("tool_calls", "completed")
    assert (r.usage.input_tokens, r.usage.output_tokens) == (45, 24)


def test_mid_stream_error_then_response_failed(impl: ModuleType) -> None:
    with pytest.raises(TransportError) as info:
        run(impl, PROVIDER, RESP + "openai-error.1.chunks.txt", "jsonl")
    assert info.value.code == "PROVIDER_ERROR" and info.value.retryable is False
    assert info.value.message.startswith("insufficient_quota: You exceeded your current quota")


def test_builtin_tools_are_not_calls(impl: ModuleType) -> None:
    r = run(impl, PROVIDER, RESP + "openai-web-search-tool.1.chunks.txt", "jsonl")
    assert r.tool_calls == () and r.finish_reason == "stop"
    assert r.unknown_events["output_item:web_search_call"] == 6
    assert r.unknown_events["response.web_search_call.searching"] == 6
    body = run(impl, PROVIDER, RESP + "openai-web-search-tool.1.json", "json-body")
    assert body.tool_calls == () and body.unknown_events["output_item:web_search_call"] == 3


def test_reasoning_summary(impl: ModuleType) -> None:
    path = XAI + "xai-text-with-reasoning-streaming.1.chunks.txt"
    r = run(impl, PROVIDER, path, "jsonl")
    reasoning, text = r.items
    assert isinstance(reasoning, ReasoningItem) and isinstance(text, TextItem)
    done = [json.loads(line) for line in lines(path) if '"response.output_item.done"' in line]
    summary = next(d["item"]["summary"] for d in done if d["item"]["type"] == "reasoning")
    assert reasoning.text == "\n\n".join(part["text"] for part in summary)
    assert (r.usage.reasoning_tokens, r.usage.cached_tokens) == (323, 192)


def test_arguments_only_in_done_events(impl: ModuleType) -> None:
    r = run(impl, PROVIDER, LMSTUDIO + "lmstudio-tool-call.1.chunks.txt", "jsonl")
    assert [type(i) for i in r.items] == [ReasoningItem, TextItem, ToolCallItem]
    assert json.loads(r.tool_calls[0].arguments) == {"location": "San Francisco"}


@pytest.mark.parametrize(
    "path", [RESP + "openai-phase.1.chunks.txt", RESP + "openai-shell-container.1.chunks.txt"], ids=short
)
def test_trimmed_deltas_are_an_output_mismatch(impl: ModuleType, path: str) -> None:
    with pytest.raises(StreamError) as info:
        run(impl, PROVIDER, path, "jsonl")
    assert info.value.code == "OUTPUT_MISMATCH"


def test_event_split_over_two_lines_is_malformed(impl: ModuleType) -> None:
    with pytest.raises(StreamError) as info:
        run(impl, PROVIDER, RESP + "parallel-tool-call-wrapper.1.chunks.txt", "jsonl")
    assert info.value.code == "MALFORMED_EVENT"


def test_rotating_item_ids_are_named(impl: ModuleType) -> None:
    with pytest.raises(StreamError) as info:
        run(impl, PROVIDER, RESP + "github-copilot-id-rotation.1.chunks.txt", "jsonl")
    assert info.value.code == "DELTA_BEFORE_START"


def test_error_bodies(impl: ModuleType) -> None:
    with pytest.raises(TransportError) as info:
        run(impl, PROVIDER, RESP + "reasoning-model-temperature-error.json", "json-body")
    assert info.value.code == "PROVIDER_ERROR" and "temperature" in info.value.message


# ---------------------------------------------------------------- synthetic streams


class Stream:
    """Builds a Responses stream with increasing sequence numbers."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def add(self, kind: str, **fields: Any) -> "Stream":
        self.events.append({"type": kind, "sequence_number": len(self.events), **fields})
        return self

    def created(self) -> "Stream":
        return self.add(
            "response.created", response={"id": "resp_1", "model": "m", "status": "in_progress", "output": []}
        )

    def call(self, item_id: str, call_id: str, name: str, deltas: list[str], *, status: str = "completed") -> "Stream":
        self.add(
            "response.output_item.added",
            output_index=0,
            item={
                "type": "function_call",
                "id": item_id,
                "call_id": call_id,
                "name": name,
                "arguments": "",
                "status": "in_progress",
            },
        )
        for delta in deltas:
            self.add("response.function_call_arguments.delta", item_id=item_id, output_index=0, delta=delta)
        self.add("response.function_call_arguments.done", item_id=item_id, output_index=0, arguments="".join(deltas))
        return self.add(
            "response.output_item.done", output_index=0, item=call_item(item_id, call_id, name, "".join(deltas), status)
        )

    def message(self, item_id: str, kind: str, deltas: list[str]) -> "Stream":
        field = "text" if kind == "output_text" else "refusal"
        delta_type = "response.output_text.delta" if kind == "output_text" else "response.refusal.delta"
        self.add(
            "response.output_item.added",
            output_index=1,
            item={"type": "message", "id": item_id, "content": [], "status": "in_progress"},
        )
        self.add(
            "response.content_part.added",
            item_id=item_id,
            output_index=1,
            content_index=0,
            part={"type": kind, field: ""},
        )
        for delta in deltas:
            self.add(delta_type, item_id=item_id, output_index=1, content_index=0, delta=delta)
        self.add(
            "response.content_part.done",
            item_id=item_id,
            output_index=1,
            content_index=0,
            part={"type": kind, field: "".join(deltas)},
        )
        return self.add("response.output_item.done", output_index=1, item=message_item(item_id, kind, "".join(deltas)))

    def end(
        self, kind: str = "response.completed", status: str = "completed", output: list[Any] | None = None, **extra: Any
    ) -> "Stream":
        response = {
            "id": "resp_1",
            "model": "m",
            "status": status,
            "output": output or [],
            "usage": {"input_tokens": 3, "output_tokens": 4},
            **extra,
        }
        return self.add(kind, response=response)


def call_item(item_id: str, call_id: str, name: str, arguments: str, status: str = "completed") -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": item_id,
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": status,
    }


def message_item(item_id: str, kind: str, text: str) -> dict[str, Any]:
    field = "text" if kind == "output_text" else "refusal"
    return {
        "type": "message",
        "id": item_id,
        "status": "completed",
        "role": "assistant",
        "content": [{"type": kind, field: text}],
    }


def feed(impl: ModuleType, events: list[dict[str, Any]], *, raw: bool = False) -> NormalizedResponse:
    if not raw:
        return run_events(impl, PROVIDER, events)
    assembler = impl.StreamAssembler(PROVIDER)
    assembler.feed(sse(events))
    return assembler.finish()


def error_code(impl: ModuleType, events: list[dict[str, Any]]) -> str:
    with pytest.raises(OutputError) as info:
        feed(impl, events)
    return info.value.code


@pytest.mark.parametrize("raw", [False, True], ids=["events", "sse"])
def test_stream_and_body_of_one_generation_agree(impl: ModuleType, raw: bool) -> None:
    output = [call_item("fc_1", "call_1", "read", '{"path": "a"}'), message_item("msg_1", "output_text", "Reading a.")]
    s = (
        Stream()
        .created()
        .call("fc_1", "call_1", "read", ['{"pa', 'th": "a"}'])
        .message("msg_1", "output_text", ["Read", "ing a."])
    )
    streamed = feed(impl, s.end(output=output).events, raw=raw)
    body = {
        "id": "resp_1",
        "model": "m",
        "status": "completed",
        "output": output,
        "usage": {"input_tokens": 3, "output_tokens": 4},
    }
    whole = impl.normalize(json.dumps(body), provider=PROVIDER)
    assert streamed == whole
    assert [(i.item_id, getattr(i, "call_id", None)) for i in whole.items] == [("fc_1", "call_1"), ("msg_1", None)]
    assert whole.finish_reason == "tool_calls" and whole.raw_finish_reason == "completed"


def test_delta_that_disagrees_with_the_final_output(impl: ModuleType) -> None:
    s = Stream().created().call("fc_1", "call_1", "f", ['{"a": 1}'])
    s.end(output=[call_item("fc_1", "call_1", "f", '{"a": 2}')])
    assert error_code(impl, s.events) == "OUTPUT_MISMATCH"


def test_done_event_that_disagrees_with_the_deltas(impl: ModuleType) -> None:
    s = Stream().created()
    s.add(
        "response.output_item.added",
        output_index=0,
        item={"type": "function_call", "id": "fc", "call_id": "c", "name": "f", "arguments": ""},
    )
    s.add("response.function_call_arguments.delta", item_id="fc", delta='{"a"')
    s.add("response.function_call_arguments.done", item_id="fc", arguments='{"b": 1}')
    assert error_code(impl, s.events) == "OUTPUT_MISMATCH"


def test_final_output_with_an_item_never_streamed(impl: ModuleType) -> None:
    s = Stream().created().end(output=[call_item("fc_9", "call_9", "f", "{}")])
    assert error_code(impl, s.events) == "OUTPUT_MISMATCH"


def test_streamed_call_missing_from_final_output(impl: ModuleType) -> None:
    s = Stream().created().call("fc_1", "call_1", "f", ["{}"]).end(output=[])
    assert error_code(impl, s.events) == "OUTPUT_MISMATCH"


def test_sequence_must_increase(impl: ModuleType) -> None:
    s = Stream().created().call("fc_1", "call_1", "f", ["{}"])
    s.events[2]["sequence_number"] = 1
    assert error_code(impl, s.events) == "SEQUENCE_NOT_MONOTONIC"


def test_incomplete_max_output_tokens_is_length(impl: ModuleType) -> None:
    s = Stream().created().call("fc_1", "call_1", "f", ['{"a": "lo'], status="incomplete")
    s.end(
        "response.incomplete",
        "incomplete",
        output=[call_item("fc_1", "call_1", "f", '{"a": "lo', "incomplete")],
        incomplete_details={"reason": "max_output_tokens"},
    )
    r = feed(impl, s.events)
    (call,) = r.tool_calls
    assert (r.finish_reason, r.raw_finish_reason, call.complete) == ("length", "max_output_tokens", False)


def test_incomplete_content_filter(impl: ModuleType) -> None:
    s = Stream().created().end("response.incomplete", "incomplete", incomplete_details={"reason": "content_filter"})
    assert feed(impl, s.events).finish_reason == "content_filter"


def test_refusal_content(impl: ModuleType) -> None:
    s = Stream().created().message("msg_1", "refusal", ["I can't ", "help with that."])
    r = feed(impl, s.end(output=[message_item("msg_1", "refusal", "I can't help with that.")]).events)
    assert r.items == (RefusalItem(item_id="msg_1", text="I can't help with that."),)
    assert (r.finish_reason, r.raw_finish_reason) == ("refusal", "completed")


def test_response_failed_alone(impl: ModuleType) -> None:
    s = Stream().created().end("response.failed", "failed", error={"code": "server_error", "message": "oops"})
    with pytest.raises(TransportError) as info:
        feed(impl, s.events)
    assert info.value.code == "PROVIDER_ERROR" and info.value.retryable is True


def test_error_without_response_failed(impl: ModuleType) -> None:
    s = Stream().created().add("error", code="rate_limit_exceeded", message="slow down", param=None)
    with pytest.raises(TransportError) as info:
        feed(impl, s.events)
    assert info.value.retryable is True and "slow down" in info.value.message


def test_no_terminal_event(impl: ModuleType) -> None:
    s = Stream().created().call("fc_1", "call_1", "f", ["{}"])
    assert error_code(impl, s.events) == "NO_TERMINAL_EVENT"


def test_unknown_event_types_are_counted(impl: ModuleType) -> None:
    s = Stream().created().add("response.future_thing", data={"x": [1]}).add("response.future_thing", delta=5)
    r = feed(impl, s.end().events)
    assert r.unknown_events == {"response.future_thing": 2} and r.items == ()


@pytest.mark.parametrize(
    "bad",
    [
        {"type": "response.created", "response": "resp_1"},
        {"type": "response.output_text.delta", "item_id": "m", "delta": 5},
        {"type": "response.output_item.added", "item": {"type": "function_call", "id": "fc"}},
        {"type": "response.output_item.added", "item": {"type": "message", "id": 7}},
        {"type": "response.completed", "response": {"output": {"type": "message"}}},
        {"type": 3},
        {"type": "response.in_progress", "sequence_number": -1, "response": {}},
    ],
)
def test_known_event_with_wrong_shape_is_malformed(impl: ModuleType, bad: dict[str, Any]) -> None:
    events = Stream().created().events + [bad]
    assert error_code(impl, events) == "MALFORMED_EVENT"


def test_delta_for_an_item_never_added(impl: ModuleType) -> None:
    s = Stream().created().add("response.function_call_arguments.delta", item_id="fc_x", delta="{}")
    assert error_code(impl, s.events) == "DELTA_BEFORE_START"


@pytest.mark.parametrize("where", ["item done", "output"])
def test_a_final_part_the_stream_never_carried_is_unsupported(impl: ModuleType, where: str) -> None:
    """A content part of a kind the mapper cannot represent (``output_audio``) in the final
    message, never announced by the stream, would cut the answer: refused as the body's is."""
    text_only = message_item("msg_1", "output_text", "Hi")
    with_audio = dict(text_only, content=[*text_only["content"], {"type": "output_audio", "transcript": "Hi"}])
    s = Stream().created().message("msg_1", "output_text", ["Hi"])
    if where == "item done":
        s.events[-1]["item"] = with_audio
    s.end(output=[with_audio])
    with pytest.raises(OutputError) as info:
        feed(impl, s.events)
    at = "$.item.content[1]" if where == "item done" else "$.response.output[0].content[1]"
    assert (info.value.code, info.value.path) == ("UNSUPPORTED_ITEM", at)


# ---------------------------------------------------------------- differential

_BASES = [
    [json.loads(line) for line in lines(path)]
    for path in (
        AZURE + "azure-tool-call.1.chunks.txt",
        RESP + "openai-custom-tool.1.chunks.txt",
        RESP + "openai-local-shell-tool.1.chunks.txt",
        RESP + "openai-apply-patch-tool.1.chunks.txt",
        LMSTUDIO + "lmstudio-tool-call.1.chunks.txt",
        RESP + "openai-error.1.chunks.txt",
        RESP + "openai-file-search-tool.1.chunks.txt",
    )
] + [
    Stream()
    .created()
    .message("msg_1", "refusal", ["No", "pe."])
    .end(output=[message_item("msg_1", "refusal", "Nope.")])
    .events,
    Stream()
    .created()
    .call("fc_1", "call_1", "f", ['{"a": "lo'], status="incomplete")
    .end(
        "response.incomplete",
        "incomplete",
        output=[call_item("fc_1", "call_1", "f", '{"a": "lo', "incomplete")],
        incomplete_details={"reason": "max_output_tokens"},
    )
    .events,
]


@given(data=st.data())
def test_damaged_streams_give_the_same_result_on_both_backends(
    both: tuple[ModuleType, ModuleType], data: st.DataObject
) -> None:
    native, pure = both
    events = data.draw(damaged(data.draw(st.sampled_from(_BASES))))
    assert mutated_outcome(native, PROVIDER, events) == mutated_outcome(pure, PROVIDER, events)


@given(data=st.data())
def test_damaged_bodies_give_the_same_result_on_both_backends(
    both: tuple[ModuleType, ModuleType], data: st.DataObject
) -> None:
    native, pure = both
    base = data.draw(st.sampled_from(_BODIES))
    (body,) = data.draw(damaged([base], reorder=False))

    def result(impl: ModuleType) -> Any:
        try:
            return impl.normalize(json.dumps(body), provider=PROVIDER)
        except OutputError as err:
            return (type(err).__name__, err.code)

    assert result(native) == result(pure)


_BODIES = [
    json.loads((FIXTURES / path).read_text(encoding="utf-8"))
    for path in (
        RESP + "openai-file-search-tool.1.json",
        AZURE + "azure-tool-call.1.json",
        RESP + "openai-custom-tool.1.json",
        RESP + "openai-apply-patch-tool.1.json",
        LMSTUDIO + "lmstudio-basic.1.json",
        RESP + "openai-error.1.json",
    )
]
