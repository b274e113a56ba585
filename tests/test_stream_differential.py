"""Native vs pure on generated streams: the same response, or the same error
(class, code, message, retryable, and the event at which it was raised).

Canonical event sequences are generated valid (items opened, deltas
interleaved, items ended, a terminal event), then damaged: events dropped,
duplicated, swapped, deltas split, the stream cut off, limits tightened. SSE
bytes are generated from line fragments (fields, CR/LF, BOM, split and invalid
UTF-8) and fed in random chunks. Allowed differences: none.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from decisions import Limits, OutputError
from decisions.types import (
    CanonicalEvent,
    ItemEnded,
    ItemStarted,
    ReasoningDelta,
    RefusalDelta,
    ResponseFailed,
    ResponseFinished,
    ResponseStarted,
    TextDelta,
    ToolArgumentsDelta,
    ToolCallStarted,
    UsageReported,
)

TEXT = st.text(alphabet=st.sampled_from('ab{}[]":,\\ é€😀\n\u2028'), max_size=6)
REASONS = ("stop", "tool_calls", "length", "content_filter", "refusal", "cancelled", "error", "unknown")


@st.composite
def valid_stream(draw: st.DrawFn) -> list[CanonicalEvent]:
    events: list[CanonicalEvent] = [ResponseStarted(response_id=draw(st.sampled_from([None, "r1"])), model="m")]
    kinds = draw(st.lists(st.sampled_from(["tool_call", "tool_call", "text", "refusal", "reasoning"]), max_size=4))
    open_items: list[tuple[str, str]] = []
    pending = list(enumerate(kinds))
    names = draw(st.lists(st.sampled_from(["read_file", "write_file"]), min_size=len(kinds), max_size=len(kinds)))
    while pending or open_items:
        choice = draw(st.integers(0, 3))
        if pending and (choice == 0 or not open_items):
            index, kind = pending.pop(0)
            item_id = f"it{index}"
            if kind == "tool_call":
                events.append(ToolCallStarted(item_id=item_id, call_id=f"call{index}", name=names[index]))
            else:
                events.append(ItemStarted(item_id=item_id, kind=kind))  # type: ignore[arg-type]
            open_items.append((item_id, kind))
        elif choice == 1 and open_items:
            item_id, _ = open_items.pop(draw(st.integers(0, len(open_items) - 1)))
            events.append(ItemEnded(item_id=item_id))
        else:
            item_id, kind = open_items[draw(st.integers(0, len(open_items) - 1))]
            delta = draw(TEXT)
            if kind == "tool_call":
                events.append(ToolArgumentsDelta(item_id=item_id, delta=delta))
            elif kind == "text":
                events.append(TextDelta(item_id=item_id, delta=delta))
            elif kind == "refusal":
                events.append(RefusalDelta(item_id=item_id, delta=delta))
            else:
                events.append(
                    ReasoningDelta(item_id=item_id, delta=delta, signature=draw(st.sampled_from([None, "s"])))
                )
    if draw(st.booleans()):
        events.append(UsageReported(input_tokens=draw(st.integers(0, 9)), output_tokens=None))
    if draw(st.integers(0, 9)) == 0:
        events.append(ResponseFailed(code="server_error", message="boom", retryable=draw(st.booleans())))
    else:
        events.append(ResponseFinished(finish_reason=draw(st.sampled_from(REASONS)), raw_finish_reason="raw"))  # type: ignore[arg-type]
    return events


@st.composite
def damaged_stream(draw: st.DrawFn) -> list[CanonicalEvent]:
    events = list(draw(valid_stream()))
    for _ in range(draw(st.integers(0, 3))):
        if not events:
            break
        i = draw(st.integers(0, len(events) - 1))
        op = draw(st.sampled_from(["drop", "duplicate", "swap", "split", "cut"]))
        if op == "drop":
            del events[i]
        elif op == "duplicate":
            events.insert(i, events[i])
        elif op == "swap":
            j = draw(st.integers(0, len(events) - 1))
            events[i], events[j] = events[j], events[i]
        elif op == "split":
            event = events[i]
            if isinstance(event, (ToolArgumentsDelta, TextDelta)):
                cut = draw(st.integers(0, len(event.delta)))
                events[i : i + 1] = [
                    type(event)(item_id=event.item_id, delta=event.delta[:cut]),
                    type(event)(item_id=event.item_id, delta=event.delta[cut:]),
                ]
        else:
            del events[i:]
    return events


LIMITS = st.one_of(
    st.none(),
    st.builds(
        Limits,
        max_call_argument_bytes=st.integers(1, 40),
        max_calls_per_response=st.integers(1, 3),
        max_response_bytes=st.integers(1, 80),
        max_stream_events=st.integers(1, 30),
    ),
)


def run_events(impl: ModuleType, events: list[CanonicalEvent], limits: Limits | None, form: str) -> Any:
    asm = impl.StreamAssembler("canonical", limits=limits)
    index = -1
    try:
        for index, event in enumerate(events):
            if form == "object":
                asm.feed_event(event)
            elif form == "dict":
                asm.feed_event(event.to_dict())
            else:
                asm.feed(f"data: {json.dumps(event.to_dict())}\r\n\r\n".encode())
        snapshot = asm.snapshot()
        index = len(events)
        return ("ok", asm.finish(), snapshot, asm.state)
    except OutputError as err:
        return ("error", type(err).__name__, err.code, err.message, err.retryable, index, asm.state)


@given(events=valid_stream(), form=st.sampled_from(["object", "dict", "sse"]))
def test_valid_streams_agree(both: tuple[ModuleType, ModuleType], events: list[CanonicalEvent], form: str) -> None:
    native, pure = both
    assert run_events(native, events, None, form) == run_events(pure, events, None, form)


@given(events=damaged_stream(), limits=LIMITS, form=st.sampled_from(["object", "dict", "sse"]))
def test_damaged_streams_agree(
    both: tuple[ModuleType, ModuleType], events: list[CanonicalEvent], limits: Limits | None, form: str
) -> None:
    native, pure = both
    assert run_events(native, events, limits, form) == run_events(pure, events, limits, form)


def test_generated_streams_reach_every_outcome(both: tuple[ModuleType, ModuleType]) -> None:
    """The generators are not vacuous: valid streams complete, damaged ones fail in many ways."""
    native, _ = both
    seen: set[str] = set()

    @settings(derandomize=True, max_examples=300, database=None)
    @given(events=damaged_stream(), limits=LIMITS)
    def collect(events: list[CanonicalEvent], limits: Limits | None) -> None:
        result = run_events(native, events, limits, "object")
        seen.add("ok" if result[0] == "ok" else result[2])

    collect()
    assert {"ok", "NO_TERMINAL_EVENT", "DELTA_BEFORE_START", "EVENT_AFTER_TERMINAL"} <= seen
    assert len(seen) >= 8, seen


# ------------------------------------------------------------------ SSE bytes

FRAGMENTS = st.sampled_from(
    [
        b"data:",
        b"data: ",
        b"event:",
        b"event: e",
        b"id: ",
        b"id: 7",
        b"retry: ",
        b"retry: 15",
        b":",
        b": ping",
        b" ",
        b"x",
        b"{}",
        b"\r",
        b"\n",
        b"\r\n",
        b"\n\n",
        b"\xef\xbb\xbf",
        b"\xc3",
        b"\xa9",
        b"\xe2\x82\xac",
        b"\xff",
        b"\x00",
        b"\xe2\x80\xa8",
        b"9",
    ]
)


def run_sse(impl: ModuleType, chunks: list[bytes], limits: Limits | None) -> Any:
    decoder = impl.SSEDecoder(limits=limits)
    events: list[Any] = []
    index = -1
    try:
        for index, chunk in enumerate(chunks):
            events.append(decoder.feed(chunk))
        events.append(decoder.finish())
        return ("ok", events)
    except OutputError as err:
        return ("error", err.code, err.message, err.offset, index, events)


SSE_LIMITS = st.one_of(
    st.none(),
    st.builds(
        Limits,
        max_sse_line_bytes=st.integers(1, 12),
        max_sse_event_bytes=st.integers(1, 12),
        max_stream_events=st.integers(1, 4),
        max_stream_bytes=st.integers(1, 60),
        max_bytes_without_data=st.integers(1, 20),
    ),
)


@given(
    fragments=st.lists(FRAGMENTS, max_size=40),
    cuts=st.lists(st.integers(0, 200), max_size=8),
    limits=SSE_LIMITS,
)
def test_sse_bytes_agree(
    both: tuple[ModuleType, ModuleType], fragments: list[bytes], cuts: list[int], limits: Limits | None
) -> None:
    native, pure = both
    data = b"".join(fragments)
    points = sorted({0, len(data), *(c for c in cuts if c < len(data))})
    chunks = [data[a:b] for a, b in zip(points, points[1:])]
    assert run_sse(native, chunks, limits) == run_sse(pure, chunks, limits)


@given(fragments=st.lists(FRAGMENTS, max_size=30), cut=st.integers(0, 100))
def test_sse_chunking_does_not_change_valid_output(impl: ModuleType, fragments: list[bytes], cut: int) -> None:
    data = b"".join(fragments)
    whole = run_sse(impl, [data], None)
    split = run_sse(impl, [data[:cut], data[cut:]], None)
    if whole[0] == "ok" and split[0] == "ok":
        assert [e for batch in whole[1] for e in batch] == [e for batch in split[1] for e in batch]
    else:
        assert (whole[0], whole[1:4]) == (split[0], split[1:4])


# ------------------------------------------------------------------ recorded provider data

FIXTURES = Path(__file__).parent / "fixtures"
_APIS = {
    "openai-chat": "openai-chat",
    "openai-responses": "openai-responses",
    "anthropic-messages": "anthropic",
    "gemini": "gemini",
}


def _recordings() -> list[tuple[str, str, str]]:
    rows = []
    for line in (FIXTURES / "FEATURES.tsv").read_text().splitlines()[1:]:
        _, path, file_format, api, *_ = line.split("\t")
        if api in _APIS and file_format in ("raw-sse", "jsonl", "json-body"):
            rows.append((path, file_format, _APIS[api]))
    return rows


def run_recording(impl: ModuleType, data: bytes, file_format: str, provider: str) -> Any:
    try:
        if file_format == "json-body":
            return ("ok", impl.normalize(data, provider=provider))
        asm = impl.StreamAssembler(provider)
        if file_format == "raw-sse":
            for i in range(0, len(data), 97):
                asm.feed(data[i : i + 97])
        else:
            for line in data.splitlines():
                if line.strip():
                    asm.feed_event(line)
        return ("ok", asm.finish())
    except OutputError as err:
        return ("error", type(err).__name__, err.code, err.message)


@pytest.mark.parametrize("path, file_format, provider", _recordings(), ids=lambda v: str(v)[-40:])
def test_recorded_provider_data_agrees(
    both: tuple[ModuleType, ModuleType], path: str, file_format: str, provider: str
) -> None:
    """The whole chain (SSE, mapper, assembler or normalize) gives the same
    response or the same error on both backends for every recording."""
    native, pure = both
    data = (FIXTURES / path).read_bytes()
    assert run_recording(native, data, file_format, provider) == run_recording(pure, data, file_format, provider)


# ------------------------------------------------------------------ mapper messages

_NAMES = st.text(alphabet=st.sampled_from("ab\"'\\}{ é\u200b\x01\n😀"), min_size=1, max_size=6)


def _outcome(impl: ModuleType, provider: str, events: list[Any]) -> Any:
    """The response, or the error's class, code, message, path, offset and retryable."""
    try:
        assembler = impl.StreamAssembler(provider)
        for event in events:
            assembler.feed_event(json.dumps(event))
        return ("ok", assembler.finish())
    except OutputError as err:
        return ("error", type(err).__name__, err.code, err.message, err.path, err.offset, err.retryable)


@given(first=_NAMES, second=_NAMES, legacy=st.booleans())
@settings(max_examples=60)
def test_a_chat_call_renamed_gives_one_message(
    both: tuple[ModuleType, ModuleType], first: str, second: str, legacy: bool
) -> None:
    """A Chat call whose name changes mid-stream (any characters in either
    name, quotes and escapes included): the same CALL_NAME_CHANGED message
    on both backends."""

    def delta(name: str) -> dict[str, Any]:
        if legacy:
            return {"function_call": {"name": name, "arguments": ""}}
        return {"tool_calls": [{"index": 0, "id": "call_1", "function": {"name": name, "arguments": ""}}]}

    events = [
        {"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta(name)}]}
        for name in (first, second)
    ]
    native, pure = (_outcome(impl, "openai-chat", events) for impl in both)
    assert native == pure


# ------------------------------------------------------------------ mutated recordings


def _recorded_payloads() -> list[tuple[str, str, Any]]:
    """(provider, form, payload) of every recording: a stream as its list of
    ``(event name, decoded data)``, a body decoded."""
    from decisions import _pure

    out: list[tuple[str, str, Any]] = []
    for path, file_format, provider in _recordings():
        data = (FIXTURES / path).read_bytes()
        try:
            if file_format == "json-body":
                out.append((provider, "body", json.loads(data)))
                continue
            if file_format == "jsonl":
                raw = [(None, line.decode()) for line in data.splitlines() if line.strip()]
            else:
                decoder = _pure.SSEDecoder()
                raw = [(e.event, e.data) for e in decoder.feed(data) + decoder.finish()]
        except (ValueError, OutputError):
            continue
        events = []
        for name, text in raw:
            try:
                events.append((name, json.loads(text)))
            except ValueError:
                events.append((name, text))
        out.append((provider, "stream", events))
    return out


_RECORDED = _recorded_payloads()
_ODD = st.sampled_from(
    [None, True, 0, -1, 2**64, 1.5, "", " ", "\u200b", "x", "stop", "tool_calls", "STOP", "length", [], {}, [None]]
)
_KEYS = st.sampled_from(
    ["index", "id", "type", "error", "finish_reason", "stop_reason", "status", "name", "arguments", "call_id"]
    + ["output_index", "sequence_number", "finishReason", "functionCall", "delta", "tool_calls", "content"]
)


def _nodes(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The paths of every member and element of ``value``."""
    out = [path]
    if isinstance(value, dict):
        for key, child in value.items():
            out += _nodes(child, (*path, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            out += _nodes(child, (*path, index))
    return out


@st.composite
def _mutated_value(draw: st.DrawFn, value: Any) -> Any:
    """``value`` (JSON) with one member replaced, dropped, added or copied."""
    value = json.loads(json.dumps(value))
    paths = [p for p in _nodes(value) if p]
    if not paths:
        return draw(_ODD)
    path = draw(st.sampled_from(paths))
    parent = value
    for step in path[:-1]:
        parent = parent[step]
    key, op = path[-1], draw(st.integers(0, 3))
    if op == 0:
        parent[key] = draw(_ODD)
    elif op == 1:
        del parent[key]
    elif op == 2 and isinstance(parent, dict):
        parent[draw(_KEYS)] = draw(_ODD)
    else:  # a copy of another member here
        source = value
        for step in draw(st.sampled_from(paths)):
            source = source[step]
        parent[key] = json.loads(json.dumps(source))
    return value


def _run_mutated(impl: ModuleType, provider: str, form: str, payload: Any) -> Any:
    """The response (and each snapshot of a stream), or the error in full."""
    snapshots: list[Any] = []
    try:
        if form == "body":
            return ("ok", impl.normalize(json.dumps(payload), provider=provider))
        assembler = impl.StreamAssembler(provider)
        for name, data in payload:
            assembler.feed_event(data if isinstance(data, str) else json.dumps(data), event=name)
            snapshots.append(repr(assembler.snapshot()))
        return ("ok", assembler.finish(), snapshots)
    except OutputError as err:
        return ("error", type(err).__name__, err.code, err.message, err.path, err.offset, err.retryable, snapshots)


@given(data=st.data())
@settings(deadline=None)
def test_mutated_recordings_agree(both: tuple[ModuleType, ModuleType], data: st.DataObject) -> None:
    """A real recording with events dropped, repeated, swapped or cut, or a
    member of an event or body replaced, dropped, added or copied: the same
    response, snapshots and error (code, message, path, offset) on both."""
    provider, form, payload = data.draw(st.sampled_from(_RECORDED))
    if form == "body":
        payload = data.draw(_mutated_value(payload))
    else:
        events = list(payload)
        for _ in range(data.draw(st.integers(1, 3))):
            if not events:
                break
            i, op = data.draw(st.integers(0, len(events) - 1)), data.draw(st.integers(0, 4))
            if op == 0:
                del events[i]
            elif op == 1:
                events.insert(i, events[i])
            elif op == 2:
                j = data.draw(st.integers(0, len(events) - 1))
                events[i], events[j] = events[j], events[i]
            elif op == 3:
                del events[i:]
            else:
                name, value = events[i]
                events[i] = (name, data.draw(_mutated_value(value)))
        payload = events
    native, pure = both
    assert _run_mutated(native, provider, form, payload) == _run_mutated(pure, provider, form, payload)
