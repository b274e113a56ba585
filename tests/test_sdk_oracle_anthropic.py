"""The anthropic SDK as an oracle: on every recorded Anthropic stream, the
SDK's own SSE decoder and ``accumulate_event`` (no network) must agree with our
response on tool calls (ids, names, arguments as parsed values), text,
thinking and stop reason. Blocks that run on Anthropic's side (server tools)
are in the SDK's content but must be counted, never called, by us.
"""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import pytest

anthropic_streaming = pytest.importorskip("anthropic.lib.streaming._messages")
sdk_sse = pytest.importorskip("anthropic._streaming")
jiter = pytest.importorskip("jiter")

from conftest import FIXTURES  # noqa: E402
from decisions.types import NormalizedResponse, ReasoningItem  # noqa: E402

SDK = FIXTURES / "anthropic-sdk-python" / "tests"
VERCEL = FIXTURES / "vercel-ai" / "packages" / "anthropic" / "src" / "__fixtures__"
_HAND_MADE = {"duplicate-message-start.chunks.txt", "spliced-message-start.chunks.txt"}


def _streams() -> list[tuple[str, bytes]]:
    """Every recorded Anthropic stream as SSE bytes, one message each."""
    out: list[tuple[str, bytes]] = []
    raw = sorted((SDK / "lib" / "streaming" / "fixtures").glob("*.txt")) + sorted(
        (SDK / "fixtures" / "fable-fallback").glob("*.sse")
    )
    for path in raw:
        # the SDK fixtures end without the blank line that dispatches the last event
        out.append((path.name, path.read_bytes().rstrip(b"\n") + b"\n\n"))
    for path in sorted(SDK.glob("lib/**/__inline_snapshot__/**/*.json")):
        for i, exchange in enumerate(json.loads(path.read_text())):
            body = exchange["response"]["body"]
            if isinstance(body, str):
                out.append((f"{path.name}[{i}]", body.encode()))
    for path in sorted(VERCEL.glob("*.chunks.txt")):
        if path.name in _HAND_MADE:
            continue
        message: list[str] = []
        part = 0
        for line in path.read_text().splitlines():
            if not line.strip():
                continue
            event = json.loads(line)
            message.append(f"event: {event['type']}\ndata: {line}\n\n")
            if event["type"] == "message_stop":
                out.append((f"{path.name}#{part}", "".join(message).encode()))
                message, part = [], part + 1
        assert not message
    return out


STREAMS = _streams()


def sdk_accumulate(data: bytes) -> Any:
    """The SDK's final message snapshot for ``data``."""
    snapshot = None
    json_bufs: dict[int, bytes] = {}
    for sse in sdk_sse.SSEDecoder().iter_bytes(iter([data])):
        if sse.event == "ping":
            continue
        snapshot = anthropic_streaming.accumulate_event(
            event=sse.json(), current_snapshot=snapshot, json_bufs=json_bufs
        )
    return snapshot


def ours(impl: ModuleType, data: bytes) -> NormalizedResponse:
    assembler = impl.StreamAssembler("anthropic")
    assembler.feed(data)
    response: NormalizedResponse = assembler.finish()
    return response


@pytest.mark.parametrize("name, data", STREAMS, ids=[name for name, _ in STREAMS])
def test_sdk_accumulator_agrees(impl: ModuleType, name: str, data: bytes) -> None:
    snapshot = sdk_accumulate(data)
    response = ours(impl, data)
    blocks = list(snapshot.content)

    assert response.response_id == snapshot.id
    assert response.raw_finish_reason == snapshot.stop_reason

    sdk_calls = [b for b in blocks if b.type == "tool_use"]
    assert [(c.call_id, c.name) for c in response.tool_calls] == [(b.id, b.name) for b in sdk_calls]
    for call, block in zip(response.tool_calls, sdk_calls):
        if call.complete:
            assert json.loads(call.arguments) == block.input
        else:  # cut by max_tokens: the SDK keeps a partial parse of the same text
            assert jiter.from_json(call.arguments.encode(), partial_mode=True) == block.input
            assert response.finish_reason == "length"

    assert response.text == "".join(b.text for b in blocks if b.type == "text")

    sdk_thinking = [(b.thinking, b.signature) for b in blocks if b.type == "thinking"]
    our_thinking = [(i.text, i.signature) for i in response.items if isinstance(i, ReasoningItem) and i.text]
    assert our_thinking == sdk_thinking

    others = [b.type for b in blocks if b.type not in ("text", "tool_use", "thinking", "redacted_thinking")]
    recorded = {k.split(":", 1)[1]: v for k, v in response.unknown_events.items() if k.startswith("content_block:")}
    assert recorded == {t: others.count(t) for t in set(others)}


def test_oracle_covers_the_notable_streams() -> None:
    names = {name for name, _ in STREAMS}
    assert {"tool_use_response.txt", "incomplete_partial_json_response.txt", "refusal_response.txt"} <= names
    assert any(name.startswith("anthropic-programmatic-tool-calling") for name in names)
    assert len(STREAMS) >= 40
