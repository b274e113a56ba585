"""OpenAI Chat Completions streams: bytes in, NormalizedResponse out, side by
side with the openai SDK (its ``SSEDecoder`` + ``ChatCompletionStreamState``).

Groups (medians of the same group are compared; ``benches/report.py`` prints
the ratios):

- ``openai-chat-stream``: a whole stream of ~2,000 events, three tool calls
  of ~5 KiB written in 8-byte argument deltas, fed in 16 KiB slices.
- ``openai-chat-growth``: the cost of the same ~2,000 8-byte deltas (then the
  finish chunk and ``[DONE]``) when each call already holds 5 KiB or 1 MiB of
  arguments (fed before the timer starts; the end-of-stream join is not
  timed): flat per event for us, growing with the buffer for the SDK, which
  re-parses the whole arguments on every delta.

The streams are generated deterministically.
"""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any, Callable

import pytest
from openai._models import construct_type
from openai._streaming import SSEDecoder
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import ChatCompletionChunk

from decisions import _pure
from decisions._backend import native_module

NATIVE = native_module()
IMPLS: dict[str, ModuleType] = {"pure": _pure} if NATIVE is None else {"native": NATIVE, "pure": _pure}
CALLS = 3
DELTA = 8
SLICE = 16 * 1024
RID = "chatcmpl-bench"
ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789 .,-_/"


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **top: Any) -> bytes:
    body = {
        "id": RID,
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-bench",
        "choices": [{"index": 0, "delta": delta or {}, "logprobs": None, "finish_reason": finish}],
        **top,
    }
    return b"data: " + json.dumps(body, separators=(",", ":")).encode() + b"\n\n"


def tool_delta(index: int, arguments: str, *, start: bool = False) -> bytes:
    call: dict[str, Any] = {"index": index, "function": {"arguments": arguments}}
    if start:
        call = {
            "index": index,
            "id": f"call_{index}",
            "type": "function",
            "function": {"name": f"write_{index}", "arguments": arguments},
        }
    return chunk({"tool_calls": [call]})


def filler(n: int, seed: int) -> str:
    return "".join(ALPHABET[(seed + 7 * i) % len(ALPHABET)] for i in range(n))


def pieces(text: str) -> list[str]:
    return [text[i : i + DELTA] for i in range(0, len(text), DELTA)]


def whole_stream(per_call: int) -> tuple[bytes, int]:
    """Three calls written one after the other in 8-byte deltas; (SSE bytes, events)."""
    out = [chunk({"role": "assistant", "content": None})]
    for index in range(CALLS):
        out.append(tool_delta(index, "", start=True))
        text = '{"path": "src/f%d.txt", "content": "%s"}' % (index, filler(per_call, index))
        out.extend(tool_delta(index, piece) for piece in pieces(text))
    out.append(chunk(finish="tool_calls"))
    out.append(chunk(choices=[], usage={"prompt_tokens": 10, "completion_tokens": 2000, "total_tokens": 2010}))
    out.append(b"data: [DONE]\n\n")
    return b"".join(out), len(out)


def growth_stream(prefix: int, deltas: int) -> tuple[bytes, bytes, int]:
    """(head, tail, tail events): the head starts three calls holding ``prefix``
    bytes of arguments each; the tail adds ``deltas`` 8-byte deltas round-robin,
    closes the strings, finishes."""
    head = [chunk({"role": "assistant", "content": None})]
    for index in range(CALLS):
        head.append(tool_delta(index, '{"path": "f%d", "content": "%s' % (index, filler(prefix, index)), start=True))
    tail = [tool_delta(i % CALLS, filler(DELTA, i)) for i in range(deltas)]
    tail.extend(tool_delta(index, '"}') for index in range(CALLS))
    tail.append(chunk(finish="tool_calls"))
    tail.append(b"data: [DONE]\n\n")
    return b"".join(head), b"".join(tail), len(tail)


def slices(data: bytes) -> list[bytes]:
    return [data[i : i + SLICE] for i in range(0, len(data), SLICE)]


# ---------------------------------------------------------------- the contenders


def ours(impl: ModuleType) -> Callable[[list[bytes], Any], Any]:
    def feed(parts: list[bytes], assembler: Any = None) -> Any:
        assembler = assembler or impl.StreamAssembler("openai-chat")
        for part in parts:
            assembler.feed(part)
        return assembler.finish()

    return feed


class Sdk:
    """The openai SDK's streaming path without the network: its SSE decoder,
    chunks built as its Stream builds them, ChatCompletionStreamState."""

    def __init__(self) -> None:
        self.decoder = SSEDecoder()
        self.state: ChatCompletionStreamState[Any] = ChatCompletionStreamState()

    def feed(self, parts: list[bytes]) -> bool:
        for sse in self.decoder.iter_bytes(iter(parts)):
            if sse.data.startswith("[DONE]"):
                return True
            data = construct_type(type_=ChatCompletionChunk, value=json.loads(sse.data))
            for _ in self.state.handle_chunk(data):  # type: ignore[arg-type]
                pass
        return False


def sdk(parts: list[bytes], state: Sdk | None = None) -> Any:
    state = state or Sdk()
    state.feed(parts)
    return state.state.get_final_completion()


CONTENDERS = [*IMPLS, "sdk"]


def check(result: Any, per_call_min: int) -> None:
    if hasattr(result, "tool_calls") and not hasattr(result, "choices"):
        calls = [c.arguments for c in result.tool_calls]
    else:
        calls = [c.function.arguments for c in result.choices[0].message.tool_calls]
    assert len(calls) == CALLS and all(len(json.loads(a)["content"]) >= per_call_min for a in calls)


@pytest.mark.parametrize("who", CONTENDERS)
def test_whole_stream(benchmark: Any, who: str) -> None:
    data, events = whole_stream(5 * 1024)
    assert 1900 <= events <= 2100
    parts = slices(data)
    benchmark.group = "openai-chat-stream"
    benchmark.extra_info["events"] = events
    benchmark.extra_info["baseline"] = who == "native"
    run = sdk if who == "sdk" else ours(IMPLS[who])
    check(benchmark(run, parts), 5 * 1024)


@pytest.mark.parametrize("size", ["5k", "1m"])
@pytest.mark.parametrize("who", CONTENDERS)
def test_growth(benchmark: Any, who: str, size: str) -> None:
    prefix = 5 * 1024 if size == "5k" else 1024 * 1024
    head, tail, events = growth_stream(prefix, 2000)
    head_parts, tail_parts = slices(head), slices(tail)
    benchmark.group = "openai-chat-growth"
    benchmark.extra_info["events"] = events
    benchmark.extra_info["baseline"] = who == "native" and size == "5k"
    fed: list[Any] = []

    def setup() -> tuple[tuple[Any], dict[str, Any]]:
        if who == "sdk":
            target: Any = Sdk()
            target.feed(head_parts)
        else:
            target = IMPLS[who].StreamAssembler("openai-chat")
            for part in head_parts:
                target.feed(part)
        fed[:] = [target]  # only the last one is kept, for the check below
        return (target,), {}

    def feed_tail(target: Any) -> None:
        # the deltas only: the end-of-stream work (one join / parse of the
        # whole arguments) is not per event and is left out
        if isinstance(target, Sdk):
            target.feed(tail_parts)
        else:
            for part in tail_parts:
                target.feed(part)

    rounds = {"sdk": 3 if size == "1m" else 5}.get(who, 40)
    benchmark.pedantic(feed_tail, setup=setup, rounds=rounds, iterations=1)
    last = fed[-1]
    check(sdk([], last) if isinstance(last, Sdk) else last.finish(), prefix)
