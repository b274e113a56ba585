"""The openai SDK as an oracle: on every recorded raw Chat Completions stream
(and the one-chunk-per-line recordings of OpenAI itself), the SDK's own
decoder and ``ChatCompletionStreamState`` (no network) must agree with our
tool calls (ids, names, arguments), text, refusal and finish reason, choice
by choice."""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import pytest
from openai._models import construct_type
from openai._streaming import SSEDecoder
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import ChatCompletionChunk

from decisions.types import NormalizedResponse, RefusalItem
from openai_recordings import FIXTURES, lines, recordings, run, short

PROVIDER = "openai-chat"
RAW = [path for path, fmt in recordings(PROVIDER) if fmt == "raw-sse" and path.startswith("openai-python/")]
#: one-chunk-per-line recordings from OpenAI's own API (compatible servers'
#: extensions are outside what the SDK's types describe)
LINES = [
    "vercel-ai/packages/openai/src/chat/__fixtures__/openai-text.chunks.txt",
    "vercel-ai/packages/openai/src/chat/__fixtures__/azure-model-router.1.chunks.txt",
]


def sdk_chunks_from_sse(path: str) -> list[ChatCompletionChunk]:
    """The SDK's own SSE decoding, stopping at ``[DONE]`` as its Stream does."""
    chunks = []
    for sse in SSEDecoder().iter_bytes(iter([(FIXTURES / path).read_bytes()])):
        if sse.data.startswith("[DONE]"):
            break
        chunks.append(sdk_chunk(sse.data))
    return chunks


def sdk_chunk(data: str) -> ChatCompletionChunk:
    """A chunk built the way the SDK's Stream builds it (no validation)."""
    chunk = construct_type(type_=ChatCompletionChunk, value=json.loads(data))
    assert isinstance(chunk, ChatCompletionChunk)
    return chunk


def sdk_state(chunks: list[ChatCompletionChunk]) -> Any:
    state: ChatCompletionStreamState[Any] = ChatCompletionStreamState()
    for chunk in chunks:
        for _ in state.handle_chunk(chunk):
            pass
    return state.current_completion_snapshot


def assert_agree(ours: NormalizedResponse, choice: Any) -> None:
    message = choice.message
    assert ours.text == (message.content or "")
    refusals = "".join(item.text for item in ours.items if isinstance(item, RefusalItem))
    assert refusals == (message.refusal or "")
    theirs = [(call.id, call.function.name, call.function.arguments) for call in message.tool_calls or ()]
    assert [(call.call_id, call.name, call.arguments) for call in ours.tool_calls] == theirs
    assert ours.raw_finish_reason == choice.finish_reason


def test_the_raw_streams_are_all_there() -> None:
    assert len(RAW) == 12


@pytest.mark.parametrize("path", RAW, ids=short)
def test_raw_stream_agrees_with_the_sdk(impl: ModuleType, path: str) -> None:
    snapshot = sdk_state(sdk_chunks_from_sse(path))
    assert snapshot.choices
    for choice in snapshot.choices:
        options = {"choice": choice.index} if len(snapshot.choices) > 1 else {}
        ours = run(impl, PROVIDER, path, "raw-sse", **options)
        assert ours.response_id == snapshot.id and ours.model == snapshot.model
        assert_agree(ours, choice)


@pytest.mark.parametrize("path", LINES, ids=short)
def test_chunk_lines_agree_with_the_sdk(impl: ModuleType, path: str) -> None:
    chunks = [sdk_chunk(line) for line in lines(path)]
    (choice,) = sdk_state(chunks).choices
    assert_agree(run(impl, PROVIDER, path, "jsonl"), choice)


def test_the_oracle_can_disagree(impl: ModuleType) -> None:
    """A changed argument delta makes the comparison fail: the oracle is live."""
    path = next(p for p in RAW if p.startswith("openai-python/.inline-snapshot/external/f82268f2"))
    chunks = sdk_chunks_from_sse(path)
    for chunk in chunks:
        for choice in chunk.choices:
            for call in choice.delta.tool_calls or ():
                if call.function is not None and call.function.arguments == "urgh":
                    call.function.arguments = "urg"
    (choice,) = sdk_state(chunks).choices
    with pytest.raises(AssertionError):
        assert_agree(run(impl, PROVIDER, path, "raw-sse"), choice)
