"""The pure OpenAI mappers' canonical events, checked directly (the
assembler-level tests over both backends are in test_provider_openai_*.py)."""

from __future__ import annotations

import pytest

from decisions._pure.providers import PROVIDERS, mapper_for
from decisions.errors import StreamError
from decisions.types import (
    ItemEnded,
    ResponseFailed,
    ResponseFinished,
    ResponseStarted,
    ToolArgumentsDelta,
    ToolCallStarted,
)


def chunk(delta: dict | None = None, finish: str | None = None, index: int = 0, **extra: object) -> dict:
    choice: dict = {"index": index, "delta": delta or {}, "finish_reason": finish}
    return {"id": "chatcmpl-1", "model": "m", "choices": [choice], **extra}


def test_registered() -> None:
    assert {"openai-chat", "openai-responses"} <= set(PROVIDERS)


def test_chat_index_reuse_with_new_id_is_a_new_call() -> None:
    m = mapper_for("openai-chat")
    assert m is not None
    events = []
    for payload in (
        chunk({"tool_calls": [{"index": 0, "id": "a", "function": {"name": "f", "arguments": "{}"}}]}),
        chunk({"tool_calls": [{"index": 0, "id": "b", "function": {"name": "g", "arguments": "{}"}}]}),
        chunk(finish="tool_calls"),
        "[DONE]",
    ):
        events += m.map_event(None, payload)
    assert isinstance(events[0], ResponseStarted)
    starts = [e for e in events if isinstance(e, ToolCallStarted)]
    assert [(s.call_id, s.name) for s in starts] == [("a", "f"), ("b", "g")]
    assert starts[0].item_id != starts[1].item_id
    ends = [e.item_id for e in events if isinstance(e, ItemEnded)]
    assert sorted(ends) == sorted(s.item_id for s in starts)
    assert events[-1] == ResponseFinished(finish_reason="tool_calls", raw_finish_reason="tool_calls")


def test_chat_missing_id_is_generated_and_flagged() -> None:
    m = mapper_for("openai-chat")
    assert m is not None
    events = m.map_event(None, chunk({"tool_calls": [{"index": 0, "function": {"name": "f", "arguments": "{"}}]}))
    start = next(e for e in events if isinstance(e, ToolCallStarted))
    assert start.call_id_generated and start.call_id == "chatcmpl-1.call_0"
    assert events[-1] == ToolArgumentsDelta(item_id=start.item_id, delta="{")


def test_chat_done_alone_is_not_a_finish() -> None:
    m = mapper_for("openai-chat")
    assert m is not None
    m.map_event(None, chunk({"content": "hi"}))
    assert m.map_event(None, "[DONE]") == []
    assert m.end() == []
    with pytest.raises(StreamError) as info:
        m.map_event(None, chunk({"content": "more"}))
    assert info.value.code == "EVENT_AFTER_TERMINAL"


def test_chat_second_choice_needs_choice() -> None:
    m = mapper_for("openai-chat")
    assert m is not None
    with pytest.raises(StreamError) as info:
        m.map_event(None, chunk({"content": "x"}, index=1))
    assert info.value.code == "MULTIPLE_CHOICES"
    picked = mapper_for("openai-chat", 1)
    assert picked is not None
    assert picked.map_event(None, chunk({"content": "x"}, index=0)) == [ResponseStarted(response_id="chatcmpl-1", model="m")]


def test_chat_wrong_type_is_malformed() -> None:
    m = mapper_for("openai-chat")
    assert m is not None
    with pytest.raises(StreamError) as info:
        m.map_event(None, chunk({"content": 5}))
    assert info.value.code == "MALFORMED_EVENT"


def test_responses_error_then_failed_is_one_failure() -> None:
    m = mapper_for("openai-responses")
    assert m is not None
    m.map_event(None, {"type": "response.created", "sequence_number": 0, "response": {"id": "r", "model": "m"}})
    failed = m.map_event(None, {"type": "error", "sequence_number": 1, "error": {"code": "server_error", "message": "x"}})
    assert failed == [ResponseFailed(code="server_error", message="x", retryable=True, error_type=None)]
    assert m.map_event(None, {"type": "response.failed", "sequence_number": 2, "response": {"id": "r"}}) == []


def test_responses_sequence_must_increase() -> None:
    m = mapper_for("openai-responses")
    assert m is not None
    m.map_event(None, {"type": "response.created", "sequence_number": 3, "response": {"id": "r"}})
    with pytest.raises(StreamError) as info:
        m.map_event(None, {"type": "response.in_progress", "sequence_number": 3, "response": {"id": "r"}})
    assert info.value.code == "SEQUENCE_NOT_MONOTONIC"
