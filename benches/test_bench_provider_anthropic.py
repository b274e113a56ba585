"""Anthropic Messages stream, bytes in, ``NormalizedResponse`` out, side by side
in one run with the anthropic SDK.

The stream (generated, deterministic): ``message_start``, a short text block,
then three ``tool_use`` blocks whose arguments (a write_file call) arrive in
8-byte ``input_json_delta`` events, ``message_delta``, ``message_stop``; SSE
bytes fed in 4 KiB chunks. With 5 KiB of arguments per call that is ~2,000
events. Contenders: the native backend, the pure twin, a lean hand-written
accumulator (the reference for the pure twin), and the SDK baseline
(its ``SSEDecoder`` + ``accumulate_event`` per event, as its ``MessageStream``
does; it re-parses the whole argument buffer on every delta).

Groups ``anthropic-<size>`` per argument size; the 1 MiB group runs ours only
(the SDK is quadratic there). Per-event cost = median / events (``extra_info``).

Run: ``python -m pytest benches/test_bench_provider_anthropic.py --benchmark-only``.
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
SIZES = {"5KiB": 5 * KiB, "64KiB": 64 * KiB, "1MiB": 1 * MiB}


def _arguments(index: int, size: int) -> str:
    """A write_file arguments JSON text of about ``size`` bytes."""
    line = f'    value_{index} = compute(value_{index}, "é") * 2  # step\n'
    body = (line * (size // len(line) + 1))[: max(size - 40, 1)]
    return json.dumps({"path": f"src/module_{index}.py", "content": body})


def _event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


@lru_cache(maxsize=None)
def stream(per_call: int) -> tuple[tuple[bytes, ...], int, tuple[str, ...]]:
    """The SSE bytes in 4 KiB chunks, the number of events, the three arguments texts."""
    message = {
        "id": "msg_bench",
        "type": "message",
        "role": "assistant",
        "model": "claude-bench",
        "content": [],
        "stop_reason": None,
        "usage": {"input_tokens": 100, "output_tokens": 1},
    }
    events = [_event("message_start", {"type": "message_start", "message": message}), _event("ping", {"type": "ping"})]
    events.append(
        _event(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        )
    )
    for piece in ("I'll write ", "the three ", "files now."):
        events.append(
            _event(
                "content_block_delta",
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}},
            )
        )
    events.append(_event("content_block_stop", {"type": "content_block_stop", "index": 0}))
    texts = tuple(_arguments(i, per_call) for i in range(3))
    for i, text in enumerate(texts, start=1):
        block = {"type": "tool_use", "id": f"toolu_{i:024d}", "name": "write_file", "input": {}}
        events.append(
            _event("content_block_start", {"type": "content_block_start", "index": i, "content_block": block})
        )
        for j in range(0, len(text), DELTA):
            delta = {"type": "input_json_delta", "partial_json": text[j : j + DELTA]}
            events.append(_event("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta}))
        events.append(_event("content_block_stop", {"type": "content_block_stop", "index": i}))
    events.append(
        _event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                "usage": {"output_tokens": 900},
            },
        )
    )
    events.append(_event("message_stop", {"type": "message_stop"}))
    data = b"".join(events)
    return tuple(data[i : i + CHUNK] for i in range(0, len(data), CHUNK)), len(events), texts


def ours(impl: ModuleType) -> Callable[[tuple[bytes, ...]], Any]:
    def run(chunks: tuple[bytes, ...]) -> Any:
        assembler = impl.StreamAssembler("anthropic")
        for chunk in chunks:
            assembler.feed(chunk)
        return assembler.finish()

    return run


def sdk(chunks: tuple[bytes, ...]) -> Any:
    """The anthropic SDK: its SSE decoder, then ``accumulate_event`` per event."""
    from anthropic._streaming import SSEDecoder
    from anthropic.lib.streaming._messages import accumulate_event

    snapshot = None
    json_bufs: dict[int, bytes] = {}
    for sse in SSEDecoder().iter_bytes(iter(chunks)):
        if sse.event == "ping":
            continue
        snapshot = accumulate_event(event=sse.json(), current_snapshot=snapshot, json_bufs=json_bufs)
    return snapshot


def lean(chunks: tuple[bytes, ...]) -> dict[str, Any]:
    """A lean hand-written consumer (split on blank lines, ``json.loads`` per
    event, a list of pieces per block, one join; no checks beyond the shape),
    the reference for the pure twin's per-event cost."""
    buffer = b""
    blocks: dict[int, tuple[dict[str, Any], list[str]]] = {}
    result: dict[str, Any] = {}
    for chunk in chunks:
        parts = (buffer + chunk).split(b"\n\n")
        buffer = parts.pop()
        for part in parts:
            at = part.find(b"data: ")
            if at < 0:
                continue
            event = json.loads(part[at + 6 :])
            kind = event["type"]
            if kind == "content_block_delta":
                delta = event["delta"]
                blocks[event["index"]][1].append(delta.get("partial_json") or delta.get("text") or "")
            elif kind == "content_block_start":
                blocks[event["index"]] = (event["content_block"], [])
            elif kind == "message_delta":
                result["stop_reason"] = event["delta"]["stop_reason"]
    result["tool_calls"] = [
        (block["id"], block["name"], "".join(pieces))
        for block, pieces in blocks.values()
        if block["type"] == "tool_use"
    ]
    return result


def _check(name: str, result: Any, texts: tuple[str, ...]) -> None:
    """Every contender must have produced the same three calls."""
    if name == "lean":
        inputs = [json.loads(arguments) for _, _, arguments in result["tool_calls"]]
    elif name == "sdk":
        inputs = [block.input for block in result.content if block.type == "tool_use"]
    else:
        assert result.finish_reason == "tool_calls"
        inputs = [json.loads(call.arguments) for call in result.tool_calls]
    assert inputs == [json.loads(text) for text in texts]


CASES = [(size, name) for size in ("5KiB", "64KiB") for name in (*BACKENDS, "lean", "sdk")] + [
    ("1MiB", name) for name in (*BACKENDS, "lean")
]


@pytest.mark.parametrize("size, contender", CASES, ids=[f"{s}-{c}" for s, c in CASES])
def test_anthropic_stream(benchmark: Any, size: str, contender: str) -> None:
    pytest.importorskip("anthropic")
    chunks, events, texts = stream(SIZES[size])
    run = sdk if contender == "sdk" else lean if contender == "lean" else ours(BACKENDS[contender])
    benchmark.group = f"anthropic-{size}"
    benchmark.extra_info.update(events=events, contender=contender, baseline=contender == "sdk")
    heavy = SIZES[size] >= MiB or (contender != "native" and SIZES[size] >= 64 * KiB)
    if heavy:
        result = benchmark.pedantic(run, args=(chunks,), rounds=3, iterations=1, warmup_rounds=0)
    else:
        result = benchmark(run, chunks)
    _check(contender, result, texts)
