"""``decisions bench``: parse and stream-assembly timings on this machine.

Every contender runs on the same payloads, interleaved round by round; the
report gives each one's median CPU time per call and its ratio to the stdlib
baseline (``json.loads`` for parsing, ``json.loads`` of every event for
assembly) and, where installed, to orjson. Optional contenders (orjson,
jiter, the openai and anthropic SDKs' stream accumulators) are skipped when
they are not installed. The pytest-benchmark suites in ``benches/`` are the
fuller version; this one ships with the package.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import json
import statistics
import time
import timeit
from collections.abc import Callable
from typing import Any, TextIO

from . import _backend
from ._backend import native_module

__all__ = ["payloads", "chat_stream", "anthropic_stream", "run", "render"]


def payloads(quick: bool = False) -> dict[str, bytes]:
    """The parse payloads: small tool arguments, an edit, a write_file."""
    small = json.dumps(
        {"path": "src/app/main.py", "start_line": 120, "end_line": 164, "reason": "read the handler before editing it"}
    ).encode()
    body = "".join(
        f"    def handler_{i}(self, request: Request) -> Response:\n"
        f'        """Réponse n°{i} — gère «{i}» et \\n les échappements\\t."""\n'
        for i in range(24)
    )
    edit = json.dumps(
        {"path": "src/app/handlers.py", "old": body[:1800], "new": body[1800:]}, ensure_ascii=False
    ).encode()
    records = 500 if quick else 5000
    write = json.dumps(
        {
            "path": "data/records.json",
            "content": "x" * (2_000 if quick else 400_000),
            "records": [
                {"id": i, "name": f"record-{i}", "score": i * 0.25, "tags": ["a", "b"], "ok": i % 2 == 0}
                for i in range(records)
            ],
        }
    ).encode()
    return {"small_args": small, "edit_4k": edit, "write_file": write}


def _sse(chunks: list[dict[str, Any]], named: bool) -> bytes:
    out = []
    for chunk in chunks:
        if named:
            out.append(f"event: {chunk['type']}\n")
        out.append(f"data: {json.dumps(chunk, separators=(',', ':'))}\n\n")
    if not named:
        out.append("data: [DONE]\n\n")
    return "".join(out).encode()


def _argument_text(i: int, size: int) -> str:
    return json.dumps({"path": f"src/module_{i}.py", "content": "print('hello world')\n" * (size // 22 + 1)})


def chat_stream(events: int = 2000) -> bytes:
    """An OpenAI Chat stream: three tool calls in ~8-byte argument deltas."""
    base = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 0, "model": "bench"}
    per_call = events // 3
    chunks = []
    for i in range(3):
        text = _argument_text(i, per_call * 8)
        parts = [text[j : j + 8] for j in range(0, len(text), 8)][:per_call]
        parts[-1] += text[len(parts) * 8 :]
        chunks.append(
            dict(
                base,
                choices=[
                    {
                        "index": 0,
                        "delta": {
                            "tool_calls": [
                                {
                                    "index": i,
                                    "id": f"call_{i}",
                                    "type": "function",
                                    "function": {"name": "write_file", "arguments": ""},
                                }
                            ]
                        },
                        "finish_reason": None,
                    }
                ],
            )
        )
        chunks.extend(
            dict(
                base,
                choices=[
                    {
                        "index": 0,
                        "delta": {"tool_calls": [{"index": i, "function": {"arguments": p}}]},
                        "finish_reason": None,
                    }
                ],
            )
            for p in parts
        )
    chunks.append(dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]))
    return _sse(chunks, named=False)


def anthropic_stream(events: int = 2000) -> bytes:
    """An Anthropic Messages stream: three tool_use blocks in ~8-byte deltas."""
    message: dict[str, Any] = {
        "id": "msg_bench",
        "type": "message",
        "role": "assistant",
        "model": "bench",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    chunks: list[dict[str, Any]] = [{"type": "message_start", "message": message}]
    per_call = events // 3
    for i in range(3):
        text = _argument_text(i, per_call * 8)
        parts = [text[j : j + 8] for j in range(0, len(text), 8)][:per_call]
        parts[-1] += text[len(parts) * 8 :]
        chunks.append(
            {
                "type": "content_block_start",
                "index": i,
                "content_block": {"type": "tool_use", "id": f"toolu_{i}", "name": "write_file", "input": {}},
            }
        )
        chunks.extend(
            {"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": p}}
            for p in parts
        )
        chunks.append({"type": "content_block_stop", "index": i})
    chunks.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use", "stop_sequence": None},
            "usage": {"output_tokens": 10},
        }
    )
    chunks.append({"type": "message_stop"})
    return _sse(chunks, named=True)


def _optional(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def _parsers() -> dict[str, Callable[[bytes], Any]]:
    found: dict[str, Callable[[bytes], Any]] = {"json": json.loads}
    native = native_module() if _backend.BACKEND == "native" else None
    if native is not None:
        found["decisions (native)"] = native.loads
    pure: Any = _backend.pure
    found["decisions (pure)"] = pure.loads
    orjson = _optional("orjson")
    if orjson is not None:
        found["orjson"] = orjson.loads
    jiter = _optional("jiter")
    if jiter is not None:
        found["jiter"] = jiter.from_json
    return found


def _data_lines(stream: bytes) -> list[bytes]:
    return [line[6:] for line in stream.split(b"\n") if line.startswith(b"data: ") and line != b"data: [DONE]"]


def _assemblers(provider: str) -> dict[str, Callable[[bytes], Any]]:
    def baseline(stream: bytes) -> Any:
        return [json.loads(line) for line in _data_lines(stream)]

    found: dict[str, Callable[[bytes], Any]] = {"json per event": baseline}
    native = native_module() if _backend.BACKEND == "native" else None
    for label, module in (("decisions (native)", native), ("decisions (pure)", _backend.pure)):
        if module is not None:

            def assemble(stream: bytes, module: Any = module) -> Any:
                assembler = module.StreamAssembler(provider)
                assembler.feed(stream)
                return assembler.finish()

            found[label] = assemble
    if provider == "openai-chat" and _optional("openai") is not None:
        from openai._models import construct_type
        from openai.lib.streaming.chat import ChatCompletionStreamState
        from openai.types.chat import ChatCompletionChunk

        def openai_sdk(stream: bytes) -> Any:
            state: Any = ChatCompletionStreamState()
            for line in _data_lines(stream):
                state.handle_chunk(construct_type(type_=ChatCompletionChunk, value=json.loads(line)))
            return state.current_completion_snapshot

        found["openai SDK"] = openai_sdk
    if provider == "anthropic" and _optional("anthropic") is not None:
        from anthropic._models import construct_type as construct
        from anthropic.lib.streaming._messages import accumulate_event
        from anthropic.types import RawMessageStreamEvent

        # Newer SDKs keep each tool input's raw JSON in a caller-held ``json_bufs``.
        takes_bufs = "json_bufs" in inspect.signature(accumulate_event).parameters

        def anthropic_sdk(stream: bytes) -> Any:
            snapshot: Any = None
            extra: dict[str, Any] = {"json_bufs": {}} if takes_bufs else {}
            accumulate: Any = accumulate_event
            for line in _data_lines(stream):
                event: Any = construct(type_=RawMessageStreamEvent, value=json.loads(line))
                snapshot = accumulate(event=event, current_snapshot=snapshot, **extra)
            return snapshot

        found["anthropic SDK"] = anthropic_sdk
    return found


def _measure(
    contenders: dict[str, Callable[[bytes], Any]], data: bytes, rounds: int, budget: float
) -> dict[str, float]:
    """Median CPU seconds per call, contenders interleaved round by round
    (process CPU time: on a loaded machine, wall time mostly measures the
    scheduler).

    Each contender is warmed up and calibrated first (``timeit``'s autorange:
    enough calls to fill 0.2 s), then every round times each of them in turn
    for its share of ``budget``."""
    loops: dict[str, int] = {}
    share = budget / rounds / len(contenders)
    for name, fn in contenders.items():
        calls, elapsed = timeit.Timer(functools.partial(fn, data), timer=time.process_time).autorange()
        loops[name] = max(1, int(calls * share / max(elapsed, 1e-9)))
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(rounds):
        for name, fn in contenders.items():
            n = loops[name]
            start = time.process_time()
            for _ in range(n):
                fn(data)
            samples[name].append((time.process_time() - start) / n)
    return {name: statistics.median(values) for name, values in samples.items()}


def run(quick: bool = False) -> dict[str, Any]:
    """Measure everything; returns ``{"backend", "parse": {...}, "assembly": {...}}``
    with, per payload, ``{contender: {"median_us", "vs_json", "vs_orjson"}}``."""
    rounds, budget = (3, 0.3) if quick else (7, 2.0)
    report: dict[str, Any] = {"backend": _backend.BACKEND, "quick": quick, "parse": {}, "assembly": {}}
    for name, data in payloads(quick).items():
        medians = _measure(_parsers(), data, rounds, budget)
        report["parse"][name] = _ratios(medians, "json", len(data))
    events = 300 if quick else 2000
    for provider, stream in (("openai-chat", chat_stream(events)), ("anthropic", anthropic_stream(events))):
        medians = _measure(_assemblers(provider), stream, rounds, budget)
        report["assembly"][provider] = _ratios(medians, "json per event", len(stream))
    return report


def _ratios(medians: dict[str, float], baseline: str, size: int) -> dict[str, Any]:
    base = medians[baseline]
    orjson = medians.get("orjson")
    return {
        "bytes": size,
        "results": {
            name: {
                "median_us": round(value * 1e6, 2),
                f"vs_{baseline.replace(' ', '_')}": round(value / base, 3),
                **({"vs_orjson": round(value / orjson, 3)} if orjson else {}),
            }
            for name, value in medians.items()
        },
    }


def render(report: dict[str, Any], out: TextIO) -> None:
    """The report as text tables (time ratios: lower is faster)."""
    out.write(
        f"decisions bench (backend {report['backend']}{', quick' if report['quick'] else ''}): "
        "median CPU time per call and its ratio to the baseline (lower is faster)\n"
    )
    for section, title in (("parse", "parse"), ("assembly", "stream assembly, bytes in -> response out")):
        for name, entry in report[section].items():
            out.write(f"\n{title}: {name} ({entry['bytes']:,} bytes)\n")
            for contender, figures in entry["results"].items():
                ratios = "  ".join(f"{k}={v:.2f}x" for k, v in figures.items() if k.startswith("vs_"))
                out.write(f"  {contender:<22} {figures['median_us']:>12,.1f} µs  {ratios}\n")
