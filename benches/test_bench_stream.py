"""Stream decoding and assembly, side by side in one run.

The stream: SSE bytes of canonical events (``data: {"type": ...}``), one
response with three tool calls whose arguments arrive interleaved in 8-byte
deltas, fed in 4 KiB chunks. With 5 KiB of arguments per call that is ~2,000
events. Contenders per group: the native backend, the pure twin, and a lean
hand-written pure-Python accumulator (split on blank lines, ``json.loads`` per
event, a list of pieces per call, one join at the end) marked as the baseline.

Run: ``python -m pytest benches/test_bench_stream.py --benchmark-only``;
``benches/report.py`` prints each group's medians as ratios to the baseline.
"""

from __future__ import annotations

import json
from functools import lru_cache
from types import ModuleType
from typing import Any, Callable

import pytest

from decisions import _pure
from decisions._backend import native_module

KiB = 1024
MiB = 1024 * KiB
CHUNK = 4 * KiB
DELTA = 8

_NATIVE = native_module()
BACKENDS: dict[str, ModuleType] = {"pure": _pure} if _NATIVE is None else {"native": _NATIVE, "pure": _pure}
CONTENDERS = [*BACKENDS, "lean"]


def _arguments(index: int, size: int) -> str:
    """A write_file-like arguments JSON text of about ``size`` bytes."""
    line = f'    value_{index} = compute(value_{index}, "é") * 2  # step\n'
    body = (line * (size // len(line) + 1))[: max(size - 40, 1)]
    return json.dumps({"path": f"src/module_{index}.py", "content": body})


def _split(text: str) -> list[str]:
    return [text[j : j + DELTA] for j in range(0, len(text), DELTA)]


def _sse(events: list[Any]) -> list[bytes]:
    data = b"".join(b"data: " + (e if isinstance(e, bytes) else json.dumps(e).encode()) + b"\n\n" for e in events)
    return [data[i : i + CHUNK] for i in range(0, len(data), CHUNK)]


@lru_cache(maxsize=None)
def stream(per_call: int, shape: str = "canonical") -> tuple[list[bytes], int]:
    """The SSE bytes in 4 KiB chunks, and the number of events.

    ``canonical``: the three calls' deltas interleaved. ``openai-chat``: Chat
    Completions chunks, the calls one after the other (as the API sends them),
    then the finish chunk, a usage chunk and ``[DONE]``."""
    calls = [_arguments(i, per_call) for i in range(3)]
    if shape == "openai-chat":
        return _openai_chat(calls)
    events: list[Any] = [{"type": "response_started", "response_id": "resp_1", "model": "m"}]
    for i in range(3):
        events.append({"type": "tool_call_started", "item_id": f"it_{i}", "call_id": f"call_{i}", "name": "write_file"})
    pieces = [_split(text) for text in calls]
    for j in range(max(len(p) for p in pieces)):
        for i, p in enumerate(pieces):
            if j < len(p):
                events.append({"type": "tool_arguments_delta", "item_id": f"it_{i}", "delta": p[j]})
    events += [{"type": "item_ended", "item_id": f"it_{i}"} for i in range(3)]
    events.append({"type": "usage", "input_tokens": 10, "output_tokens": 20})
    events.append({"type": "response_finished", "finish_reason": "tool_calls", "raw_finish_reason": "tool_calls"})
    return _sse(events), len(events)


def _openai_chat(calls: list[str]) -> tuple[list[bytes], int]:
    head = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1700000000, "model": "gpt-4o"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**head, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}

    events: list[Any] = [chunk({"role": "assistant", "content": None})]
    for i, text in enumerate(calls):
        start = {"index": i, "id": f"call_{i}", "type": "function", "function": {"name": "write_file", "arguments": ""}}
        events.append(chunk({"tool_calls": [start]}))
        events += [chunk({"tool_calls": [{"index": i, "function": {"arguments": p}}]}) for p in _split(text)]
    events.append(chunk({}, "tool_calls"))
    events.append({**head, "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 20, "total_tokens": 30}})
    events.append(b"[DONE]")
    return _sse(events), len(events)


def lean_accumulate(chunks: list[bytes]) -> dict[str, Any]:
    """What a careful hand-written consumer of the canonical stream does: no
    checks beyond the shape."""
    buffer = b""
    calls: dict[str, tuple[str, str, list[str]]] = {}
    result: dict[str, Any] = {}
    for chunk in chunks:
        blocks = (buffer + chunk).split(b"\n\n")
        buffer = blocks.pop()
        for block in blocks:
            if not block.startswith(b"data: "):
                continue
            event = json.loads(block[6:])
            kind = event["type"]
            if kind == "tool_arguments_delta":
                calls[event["item_id"]][2].append(event["delta"])
            elif kind == "tool_call_started":
                calls[event["item_id"]] = (event["call_id"], event["name"], [])
            elif kind == "response_started":
                result["id"] = event["response_id"]
            elif kind == "response_finished":
                result["finish_reason"] = event["finish_reason"]
    result["calls"] = [(call_id, name, "".join(parts)) for call_id, name, parts in calls.values()]
    return result


def lean_openai_chat(chunks: list[bytes]) -> dict[str, Any]:
    """The same for Chat Completions chunks (the usual ``tool_calls[].index`` accumulator)."""
    buffer = b""
    calls: dict[int, list[Any]] = {}
    result: dict[str, Any] = {}
    for chunk in chunks:
        blocks = (buffer + chunk).split(b"\n\n")
        buffer = blocks.pop()
        for block in blocks:
            if not block.startswith(b"data: ") or block == b"data: [DONE]":
                continue
            event = json.loads(block[6:])
            for choice in event["choices"]:
                for call in choice["delta"].get("tool_calls") or ():
                    entry = calls.get(call["index"])
                    if entry is None:
                        entry = calls[call["index"]] = [call.get("id"), call["function"].get("name"), []]
                    entry[2].append(call["function"].get("arguments") or "")
                if choice["finish_reason"]:
                    result["finish_reason"] = choice["finish_reason"]
    result["calls"] = [(call_id, name, "".join(parts)) for call_id, name, parts in calls.values()]
    return result


LEAN = {"canonical": lean_accumulate, "openai-chat": lean_openai_chat}


def assemble(impl: ModuleType, chunks: list[bytes], provider: str = "canonical") -> Any:
    asm = impl.StreamAssembler(provider)
    for chunk in chunks:
        asm.feed(chunk)
    return asm.finish()


def lean_decode(chunks: list[bytes]) -> list[str]:
    buffer = b""
    out: list[str] = []
    for chunk in chunks:
        blocks = (buffer + chunk).split(b"\n\n")
        buffer = blocks.pop()
        out.extend(block[6:].decode() for block in blocks if block.startswith(b"data: "))
    return out


def decode(impl: ModuleType, chunks: list[bytes]) -> list[Any]:
    decoder = impl.SSEDecoder()
    out: list[Any] = []
    for chunk in chunks:
        out.extend(decoder.feed(chunk))
    out.extend(decoder.finish())
    return out


def _runner(
    name: str, lean: Callable[[list[bytes]], Any], full: Callable[[ModuleType, list[bytes]], Any]
) -> Callable[[list[bytes]], Any]:
    if name == "lean":
        return lean
    impl = BACKENDS[name]
    return lambda chunks: full(impl, chunks)


def _check(name: str, result: Any, per_call: int) -> None:
    calls = result["calls"] if name == "lean" else [(c.call_id, c.name, c.arguments) for c in result.tool_calls]
    assert [args for _, _, args in calls] == [_arguments(i, per_call) for i in range(3)]


@pytest.mark.parametrize("shape", ["canonical", "openai-chat"])
@pytest.mark.parametrize("name", CONTENDERS)
def test_assemble_2000_events(benchmark: Any, name: str, shape: str) -> None:
    chunks, events = stream(5 * KiB, shape)
    benchmark.group = f"stream [{shape}]: decode + assemble, ~2,000 events, 3 calls, 8-byte deltas"
    benchmark.extra_info.update(events=events, baseline=name == "lean")
    if name == "lean":
        run: Callable[[list[bytes]], Any] = LEAN[shape]
    else:
        impl = BACKENDS[name]
        run = lambda chunks: assemble(impl, chunks, shape)  # noqa: E731
    result = benchmark(run, chunks)
    _check(name, result, 5 * KiB)


@pytest.mark.parametrize("name", CONTENDERS)
def test_sse_decode_2000_events(benchmark: Any, name: str) -> None:
    chunks, events = stream(5 * KiB)
    benchmark.group = "stream: SSE decoding alone, ~2,000 events"
    benchmark.extra_info.update(events=events, baseline=name == "lean")
    result = benchmark(_runner(name, lean_decode, decode), chunks)
    assert len(result) == events


@pytest.mark.parametrize("per_call", [5 * KiB, 64 * KiB, 1 * MiB], ids=["5KiB", "64KiB", "1MiB"])
@pytest.mark.parametrize("name", CONTENDERS)
def test_cost_per_event_as_arguments_grow(benchmark: Any, name: str, per_call: int) -> None:
    chunks, events = stream(per_call)
    benchmark.group = f"stream growth: {name}, arguments per call 5 KiB -> 1 MiB"
    benchmark.extra_info.update(events=events, baseline=per_call == 5 * KiB)
    run = _runner(name, lean_accumulate, assemble)
    rounds = 20 if per_call <= 64 * KiB else 3
    result = benchmark.pedantic(run, args=(chunks,), rounds=rounds, iterations=1, warmup_rounds=1)
    _check(name, result, per_call)
