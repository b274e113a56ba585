"""From bytes to an executable decision, against a lean hand-written path.

A backend author who does not use this package writes: ``orjson.loads`` of the
body, a finish-reason check, ``TypeAdapter.validate_json`` per call and
``os.path.realpath`` under the workspace. That is the ``lean`` baseline of
each group. Ours: ``normalize`` (or a ``StreamAssembler`` fed the SSE bytes)
then ``decide`` with the tools (Pydantic models) and a path policy, on the
native backend and on the pure twin (``decide`` then parses with the pure
``loads``). Bodies hold 1, 2 or 16 calls (``read_file`` and ``grep``, each
with a path rule); the stream is an OpenAI Chat stream of the same calls in
8-byte argument deltas. The ``layers`` groups split each backend's path
for 1, 2 and 16 calls, body and stream: normalized (or assembled), then
decided without tools (the arguments parsed), with tools (schema, domain),
with the policy. The 1-call stream and the 2-call body are also timed
without the policy (no system calls on either side). A JSON-Schema tool is
compared with the same Pydantic one.

Run: ``python benches/report.py -k test_bench_decide``.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any, Callable

import orjson
import pytest
from pydantic import BaseModel, ConfigDict, TypeAdapter

import decisions
from decisions import Policy, Tool, ToolRegistry, ToolRule, _backend, _pure
from decisions._backend import native_module
from decisions.validate import decide as decide_module
from decisions.validate import decision as decision_module
from decisions.validate import policy as policy_module
from decisions.validate.decision import CallVerdict, ToolCall, ToolDecision

_NATIVE = native_module()
BACKENDS: dict[str, ModuleType] = {"pure": _pure} if _NATIVE is None else {"native": _NATIVE, "pure": _pure}


class ReadFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str


class Grep(BaseModel):
    model_config = ConfigDict(extra="forbid")
    pattern: str
    path: str


WORKSPACE = os.path.realpath(tempfile.mkdtemp(prefix="decide-bench-"))
atexit.register(shutil.rmtree, WORKSPACE, ignore_errors=True)
os.makedirs(os.path.join(WORKSPACE, "src"), exist_ok=True)
TOOLS = ToolRegistry(
    [
        Tool(name="read_file", parameters=ReadFile, side_effects=False),
        Tool(name="grep", parameters=Grep, side_effects=False),
    ]
)
POLICY = Policy(
    workspace=WORKSPACE,
    tools={"read_file": ToolRule(paths={"path": "read"}), "grep": ToolRule(paths={"path": "read"})},
)
_JSON_SCHEMA = {
    "type": "object",
    "properties": {"pattern": {"type": "string"}, "path": {"type": "string"}},
    "required": ["pattern", "path"],
    "additionalProperties": False,
}
JSON_SCHEMA_TOOLS = ToolRegistry([Tool(name="grep", parameters=_JSON_SCHEMA, side_effects=False)])
LEAN_MODELS: dict[str, TypeAdapter[Any]] = {"read_file": TypeAdapter(ReadFile), "grep": TypeAdapter(Grep)}


def _arguments(i: int) -> tuple[str, str]:
    if i % 2 == 0:
        return "read_file", json.dumps({"path": f"src/module_{i}.py"})
    return "grep", json.dumps({"pattern": f"def handler_{i}\\(", "path": "src"})


def body(calls: int) -> bytes:
    tool_calls = [
        {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": args}}
        for i, (name, args) in ((i, _arguments(i)) for i in range(calls))
    ]
    return json.dumps(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1,
            "model": "gpt-4o",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": None, "tool_calls": tool_calls},
                    "finish_reason": "tool_calls",
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 20, "total_tokens": 30},
        }
    ).encode()


def stream(calls: int, delta: int = 8) -> bytes:
    head = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o"}
    chunks: list[dict[str, Any]] = [{**head, "choices": [{"index": 0, "delta": {"role": "assistant"}}]}]
    for i in range(calls):
        name, args = _arguments(i)
        start = {"index": i, "id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": ""}}
        chunks.append({**head, "choices": [{"index": 0, "delta": {"tool_calls": [start]}}]})
        for j in range(0, len(args), delta):
            piece = {"index": i, "function": {"arguments": args[j : j + delta]}}
            chunks.append({**head, "choices": [{"index": 0, "delta": {"tool_calls": [piece]}}]})
    chunks.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


# ---------------------------------------------------------------- the lean path


def _lean_check(calls: list[tuple[str, str]], policy: bool) -> list[Any]:
    out = []
    for name, arguments in calls:
        value = LEAN_MODELS[name].validate_json(arguments)
        if policy:
            resolved = os.path.realpath(os.path.join(WORKSPACE, value.path))
            if resolved != WORKSPACE and not resolved.startswith(WORKSPACE + os.sep):
                raise ValueError("outside the workspace")
        out.append(value)
    return out


def lean_body(data: bytes, policy: bool = True) -> list[Any]:
    doc = orjson.loads(data)
    choice = doc["choices"][0]
    if choice["finish_reason"] != "tool_calls":
        raise ValueError("not finished with tool calls")
    calls = [(c["function"]["name"], c["function"]["arguments"]) for c in choice["message"]["tool_calls"]]
    return _lean_check(calls, policy)


def lean_stream(data: bytes, policy: bool = True) -> list[Any]:
    names: dict[int, str] = {}
    pieces: dict[int, list[str]] = {}
    finish = None
    for block in data.split(b"\n\n"):
        if not block.startswith(b"data: ") or block == b"data: [DONE]":
            continue
        chunk = orjson.loads(block[6:])
        choice = chunk["choices"][0]
        for call in choice["delta"].get("tool_calls", ()):
            index = call["index"]
            if "id" in call:
                names[index] = call["function"]["name"]
                pieces[index] = []
            pieces[index].append(call["function"]["arguments"])
        finish = choice.get("finish_reason") or finish
    if finish != "tool_calls":
        raise ValueError("not finished with tool calls")
    return _lean_check([(names[i], "".join(pieces[i])) for i in sorted(names)], policy)


# ---------------------------------------------------------------- ours


#: the modules that bind ``decide``'s object builders by name (each made by
#: the backend's ``Constructor`` at import)
_BUILDER_MODULES = (decision_module, decide_module, policy_module)
_BUILDERS = ("new_tool_call", "new_verdict", "new_tool_decision")
_CLASSES = {"new_tool_call": ToolCall, "new_verdict": CallVerdict, "new_tool_decision": ToolDecision}


@contextmanager
def backend(impl: ModuleType) -> Iterator[None]:
    """``decide`` parses with ``impl``'s ``loads``, and builds its calls,
    verdicts and decision with ``impl``'s ``Constructor``, while the block
    runs: the pure contender is the pure twin throughout, as where no
    wheel is installed."""
    saved = _backend.impl
    bound = [
        (module, name, getattr(module, name))
        for module in _BUILDER_MODULES
        for name in _BUILDERS
        if hasattr(module, name)
    ]
    made = {name: impl.Constructor(cls) for name, cls in _CLASSES.items()}
    _backend.impl = impl  # type: ignore[assignment]
    for module, name, _ in bound:
        setattr(module, name, made[name])
    try:
        yield
    finally:
        _backend.impl = saved  # type: ignore[assignment]
        for module, name, builder in bound:
            setattr(module, name, builder)


def ours_body(impl: ModuleType, data: bytes, policy: bool = True, tools: ToolRegistry = TOOLS) -> Any:
    response = impl.normalize(data, provider="openai-chat")
    return decisions.decide(response, tools=tools, policy=POLICY if policy else None)


def ours_stream(impl: ModuleType, data: bytes, policy: bool = True) -> Any:
    assembler = impl.StreamAssembler("openai-chat")
    assembler.feed(data)
    return decisions.decide(assembler.finish(), tools=TOOLS, policy=POLICY if policy else None)


def _run(benchmark: Any, contender: str, ours: Callable[[ModuleType], Any], lean: Callable[[], Any]) -> None:
    if contender == "lean":
        benchmark.extra_info["baseline"] = True
        result = benchmark(lean)
        assert result
        return
    impl = BACKENDS[contender]
    with backend(impl):
        decision = benchmark(lambda: ours(impl))
    assert decision.kind == "tool" and decision.executable_calls


CONTENDERS = [*BACKENDS, "lean"]


@pytest.mark.parametrize("contender", CONTENDERS)
@pytest.mark.parametrize("calls", [1, 2, 16])
def test_bench_decide_body(benchmark: Any, contender: str, calls: int) -> None:
    benchmark.group = f"decide: body, {calls} call(s), tools + policy"
    data = body(calls)
    _run(benchmark, contender, lambda impl: ours_body(impl, data), lambda: lean_body(data))


@pytest.mark.parametrize("contender", CONTENDERS)
def test_bench_decide_body_no_policy(benchmark: Any, contender: str) -> None:
    benchmark.group = "decide: body, 2 calls, tools, no policy"
    data = body(2)
    _run(benchmark, contender, lambda impl: ours_body(impl, data, policy=False), lambda: lean_body(data, policy=False))


@pytest.mark.parametrize("contender", CONTENDERS)
@pytest.mark.parametrize("calls", [1, 2, 16])
def test_bench_decide_stream(benchmark: Any, contender: str, calls: int) -> None:
    benchmark.group = f"decide: SSE stream, {calls} calls in 8-byte deltas, tools + policy"
    data = stream(calls)
    _run(benchmark, contender, lambda impl: ours_stream(impl, data), lambda: lean_stream(data))


@pytest.mark.parametrize("contender", CONTENDERS)
def test_bench_decide_stream_no_policy(benchmark: Any, contender: str) -> None:
    """The 1-call stream without the path checks: the policy rows' lean path
    spends most of its time in ``os.path.realpath``'s system calls, whose
    cost differs from machine to machine; this row has none on either side."""
    benchmark.group = "decide: SSE stream, 1 call in 8-byte deltas, tools, no policy"
    data = stream(1)
    _run(
        benchmark,
        contender,
        lambda impl: ours_stream(impl, data, policy=False),
        lambda: lean_stream(data, policy=False),
    )


LAYERS = ["orjson", "response", "decide, no tools", "decide, tools", "decide, tools + policy"]


def lean_parse_stream(data: bytes) -> int:
    """The lean stream path's parsing alone: each chunk through ``orjson.loads``."""
    chunks = 0
    for block in data.split(b"\n\n"):
        if block.startswith(b"data: ") and block != b"data: [DONE]":
            orjson.loads(block[6:])
            chunks += 1
    return chunks


def assembled(impl: ModuleType, data: bytes) -> Any:
    assembler = impl.StreamAssembler("openai-chat")
    assembler.feed(data)
    return assembler.finish()


@pytest.mark.parametrize("layer", LAYERS)
@pytest.mark.parametrize("contender", list(BACKENDS))
@pytest.mark.parametrize("calls", [1, 2, 16])
@pytest.mark.parametrize("source", ["body", "stream"])
def test_bench_decide_layers(benchmark: Any, source: str, calls: int, contender: str, layer: str) -> None:
    """Each layer adds to the one before: the response normalized (a body)
    or assembled (the SSE stream); then ``decide`` parsing the arguments (no
    tools: names checked, open policy); then each call's schema and the
    registry; then the path policy. The baseline is ``orjson.loads`` of the
    body, or of each chunk of the stream."""
    benchmark.group = f"decide: layers, {contender}, {source}, {calls} call(s)"
    data = body(calls) if source == "body" else stream(calls)
    impl = BACKENDS[contender]
    if layer == "orjson":
        benchmark.extra_info["baseline"] = True
        benchmark(lambda: orjson.loads(data) if source == "body" else lean_parse_stream(data))
        return
    response: Callable[[], Any] = (
        (lambda: impl.normalize(data, provider="openai-chat")) if source == "body" else (lambda: assembled(impl, data))
    )
    steps: dict[str, Callable[[], Any]] = {
        "response": response,
        "decide, no tools": lambda: decisions.decide(response()),
        "decide, tools": lambda: decisions.decide(response(), tools=TOOLS),
        "decide, tools + policy": lambda: decisions.decide(response(), tools=TOOLS, policy=POLICY),
    }
    with backend(impl):
        benchmark(steps[layer])


@pytest.mark.parametrize("tools", ["pydantic", "json-schema"])
def test_bench_decide_schema_kind(benchmark: Any, tools: str) -> None:
    benchmark.group = "decide: one grep call, Pydantic vs JSON-Schema tool (native if built)"
    data = (
        body(2)
        .replace(b'"read_file"', b'"grep"')
        .replace(b'{\\"path\\": \\"src/module_0.py\\"}', b'{\\"pattern\\": \\"x\\", \\"path\\": \\"src\\"}')
    )
    impl = next(iter(BACKENDS.values()))
    registry = TOOLS if tools == "pydantic" else JSON_SCHEMA_TOOLS
    if tools == "pydantic":
        benchmark.extra_info["baseline"] = True
    with backend(impl):
        decision = benchmark(lambda: ours_body(impl, data, policy=False, tools=registry))
    assert decision.kind == "tool" and len(decision.calls) == 2
