"""decide() on recorded provider responses, end to end: bytes → assembler or
normalize → decision → provider-shaped results."""

from __future__ import annotations

from pathlib import Path

import pytest

import decisions
from conftest import FIXTURES
from decide_helpers import both_paths, needs_loads
from decisions import ResultBook, StreamError, Tool, ToolDecision, ToolRegistry, ToolResult, decide

pytestmark = [needs_loads, both_paths]

ANTHROPIC_STREAMS = FIXTURES / "anthropic-sdk-python/tests/lib/streaming/fixtures"
CHAT_BODIES = FIXTURES / "openai-python/extracted/tests/lib/chat/test_completions"


def _needs(provider: str) -> None:
    if provider not in decisions._backend.impl.PROVIDERS:
        pytest.skip(f"{provider} is not mapped by the {decisions.BACKEND} backend yet")


def _stream(path: Path, provider: str = "anthropic") -> decisions.StreamAssembler:
    _needs(provider)
    assembler = decisions.StreamAssembler(provider)
    # the recorded file drops the blank line that ends the last event
    assembler.feed(path.read_bytes().rstrip(b"\n") + b"\n\n")
    return assembler


def test_an_anthropic_tool_use_stream_becomes_a_decision() -> None:
    weather = Tool(
        name="get_weather",
        parameters={
            "type": "object",
            "properties": {"location": {"type": "string"}},
            "required": ["location"],
            "additionalProperties": False,
        },
        side_effects=False,
    )
    decision = decide(_stream(ANTHROPIC_STREAMS / "tool_use_response.txt").finish(), tools=ToolRegistry([weather]))
    assert isinstance(decision, ToolDecision) and decision.executable
    (call,) = decision.calls
    assert (call.name, call.arguments) == ("get_weather", {"location": "Paris"})
    assert call.call_id.startswith("toolu_")
    assert decision.text.startswith("I'll check the current weather")  # trace, not an action
    book = ResultBook(decision)
    book.add(ToolResult(call.call_id, "ok", "18°C, cloudy"))
    (message,) = book.messages("anthropic")
    assert message["content"][0]["tool_use_id"] == call.call_id


def test_an_anthropic_stream_cut_at_max_tokens_is_never_a_decision() -> None:
    response = _stream(ANTHROPIC_STREAMS / "incomplete_partial_json_response.txt").finish()
    with pytest.raises(StreamError) as info:
        decide(response)
    assert info.value.code == "INCOMPLETE_RESPONSE"


def test_a_snapshot_mid_stream_is_refused() -> None:
    _needs("anthropic")
    data = (ANTHROPIC_STREAMS / "tool_use_response.txt").read_bytes()
    assembler = decisions.StreamAssembler("anthropic")
    assembler.feed(data[: len(data) // 2])
    with pytest.raises(StreamError) as info:
        decide(assembler.snapshot())  # type: ignore[arg-type]
    assert info.value.code == "SNAPSHOT_NOT_DECIDABLE"


def test_an_openai_chat_body_with_parallel_calls() -> None:
    _needs("openai-chat")
    body = (CHAT_BODIES / "test_parse_multiple_pydantic_tools.json").read_bytes()
    decision = decide(
        decisions.normalize(body, provider="openai-chat"), tools={"GetWeatherArgs": None, "get_stock_price": None}
    )
    assert isinstance(decision, ToolDecision)
    assert [c.name for c in decision.calls] == ["GetWeatherArgs", "get_stock_price"]
    assert decision.calls[1].arguments == {"ticker": "AAPL", "exchange": "NASDAQ"}
    book = ResultBook(decision)
    for call in reversed(decision.calls):
        book.add(ToolResult(call.call_id, "ok", {"for": call.name}))
    assert [m["tool_call_id"] for m in book.messages("openai-chat")] == [c.call_id for c in decision.calls]
