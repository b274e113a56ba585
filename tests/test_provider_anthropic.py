"""Anthropic Messages against every recording of it, on both backends.

Every recording gives a ``NormalizedResponse`` or a typed ``OutputError`` that
names what is wrong, the same on both backends; the notable ones are checked
field by field.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import FIXTURES
from decisions.errors import ERROR_CODES, OutputError, ParseError, StreamError, TransportError
from decisions.types import NormalizedResponse, ReasoningItem, TextItem, ToolCallItem
from json_values import nodes

SDK = FIXTURES / "anthropic-sdk-python" / "tests"
SDK_STREAMS = SDK / "lib" / "streaming" / "fixtures"
VERCEL = FIXTURES / "vercel-ai" / "packages" / "anthropic" / "src" / "__fixtures__"


@dataclass(frozen=True)
class Recording:
    """One recorded interaction: how to feed it, and its bytes."""

    name: str
    kind: str  # "sse" (raw bytes), "lines" (one event JSON per line), "body"
    data: bytes


def _recordings() -> list[Recording]:
    out = [
        Recording(p.relative_to(FIXTURES).as_posix(), "sse", p.read_bytes()) for p in sorted(SDK_STREAMS.glob("*.txt"))
    ]
    out += [
        Recording(p.relative_to(FIXTURES).as_posix(), "sse", p.read_bytes())
        for p in sorted((SDK / "fixtures" / "fable-fallback").glob("*.sse"))
    ]
    out += [
        Recording(p.relative_to(FIXTURES).as_posix(), "lines", p.read_bytes())
        for p in sorted(VERCEL.glob("*.chunks.txt"))
    ]
    out += [
        Recording(p.relative_to(FIXTURES).as_posix(), "body", p.read_bytes()) for p in sorted(VERCEL.glob("*.json"))
    ]
    for path in sorted(SDK.glob("lib/**/__inline_snapshot__/**/*.json")):
        for i, exchange in enumerate(json.loads(path.read_text())):
            body = exchange["response"]["body"]
            name = f"{path.relative_to(FIXTURES).as_posix()}[{i}]"
            if isinstance(body, str):
                out.append(Recording(name, "sse", body.encode()))
            else:
                out.append(Recording(name, "body", json.dumps(body).encode()))
    return out


RECORDINGS = _recordings()
BY_NAME = {r.name: r for r in RECORDINGS}

#: recordings whose honest result is an error, and the code that names it
EXPECTED_ERRORS = {
    # the last event has no terminating blank line: the SSE spec discards it
    **{
        f"anthropic-sdk-python/tests/lib/streaming/fixtures/{name}": "SSE_UNTERMINATED_EVENT"
        for name in (
            "basic_response.txt",
            "compaction_response.txt",
            "fallback_credit_response.txt",
            "fallback_response.txt",
            "incomplete_partial_json_response.txt",
            "refusal_response.txt",
            "tool_use_response.txt",
        )
    },
    # hand-made: a second message_start inside the first message
    "vercel-ai/packages/anthropic/src/__fixtures__/duplicate-message-start.chunks.txt": "DUPLICATE_START",
    "vercel-ai/packages/anthropic/src/__fixtures__/spliced-message-start.chunks.txt": "DUPLICATE_START",
    # several whole messages (agent steps) recorded into one file
    **{
        f"vercel-ai/packages/anthropic/src/__fixtures__/{name}": "EVENT_AFTER_TERMINAL"
        for name in (
            "anthropic-programmatic-tool-calling.1.chunks.txt",
            "anthropic-tool-search-bm25.1.chunks.txt",
            "anthropic-tool-search-deferred-bm25.chunks.txt",
            "anthropic-tool-search-deferred-regex.chunks.txt",
            "anthropic-tool-search-regex.1.chunks.txt",
        )
    },
    # HTTP 429 / 400 error bodies
    **{
        name: "PROVIDER_ERROR"
        for name in (
            "anthropic-sdk-python/tests/lib/_parse/__inline_snapshot__/test_messages/TestAsyncParse/d743d628-16aa-4c9f-ae78-51deb578f746.json[0]",
            "anthropic-sdk-python/tests/lib/_parse/__inline_snapshot__/test_messages/TestAsyncParse/d743d628-16aa-4c9f-ae78-51deb578f746.json[1]",
            "anthropic-sdk-python/tests/lib/_parse/__inline_snapshot__/test_messages/TestAsyncStream/a8b7dbb8-2321-4624-abdb-7ba2136b5c38.json[0]",
            "anthropic-sdk-python/tests/lib/_parse/__inline_snapshot__/test_messages/TestAsyncStream/a8b7dbb8-2321-4624-abdb-7ba2136b5c38.json[1]",
            "anthropic-sdk-python/tests/lib/tools/__inline_snapshot__/test_runners/TestSyncRunTools/f59a9391-643b-422c-96dc-1f28bc7ea4d7.json[1]",
        )
    },
}


def feed(impl: ModuleType, kind: str, data: bytes, **options: Any) -> NormalizedResponse:
    """Run ``data`` through the backend as a stream or a body."""
    if kind == "body":
        result: NormalizedResponse = impl.normalize(data, provider="anthropic", **options)
        return result
    assembler = impl.StreamAssembler("anthropic", **options)
    if kind == "sse":
        assembler.feed(data)
    else:
        for line in data.splitlines():
            if line.strip():
                assembler.feed_event(line)
    result = assembler.finish()
    return result


def outcome(impl: ModuleType, kind: str, data: bytes) -> NormalizedResponse | OutputError:
    """The response, or the package's typed error (anything else propagates)."""
    try:
        return feed(impl, kind, data)
    except OutputError as error:
        return error


def key(result: NormalizedResponse | OutputError) -> object:
    if isinstance(result, OutputError):
        return (type(result).__name__, result.code, result.offset, result.retryable)
    return result


def terminated(data: bytes) -> bytes:
    """The recording with its last event terminated by a blank line."""
    return data.rstrip(b"\n") + b"\n\n"


def sse(*events: tuple[str, dict[str, Any]]) -> bytes:
    return b"".join(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events)


def start(message_id: str = "msg_1") -> tuple[str, dict[str, Any]]:
    message = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [],
        "stop_reason": None,
        "usage": {"input_tokens": 3, "output_tokens": 1},
    }
    return ("message_start", {"type": "message_start", "message": message})


def text_block(index: int, text: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        (
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
        ),
        (
            "content_block_delta",
            {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}},
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": index}),
    ]


def finish(stop_reason: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        (
            "message_delta",
            {"type": "message_delta", "delta": {"stop_reason": stop_reason}, "usage": {"output_tokens": 5}},
        ),
        ("message_stop", {"type": "message_stop"}),
    ]


# ------------------------------------------------------------------ every recording


@pytest.mark.parametrize("rec", RECORDINGS, ids=[r.name for r in RECORDINGS])
def test_every_recording_is_a_response_or_a_named_error(impl: ModuleType, rec: Recording) -> None:
    result = outcome(impl, rec.kind, rec.data)
    expected = EXPECTED_ERRORS.get(rec.name)
    if expected is None:
        assert isinstance(result, NormalizedResponse), result
        assert result.provider == "anthropic"
        assert result.finish_reason in {"stop", "tool_calls", "length", "refusal"}
        assert result.response_id and result.response_id.startswith("msg_")
        for call in result.tool_calls:
            assert call.call_id.startswith("toolu_") and not call.call_id_generated
            if call.complete:
                assert isinstance(json.loads(call.arguments), dict)
    else:
        assert isinstance(result, OutputError)
        assert result.code == expected
        assert result.code in ERROR_CODES


@pytest.mark.parametrize("rec", RECORDINGS, ids=[r.name for r in RECORDINGS])
def test_backends_agree_on_every_recording(both: tuple[ModuleType, ModuleType], rec: Recording) -> None:
    native, pure = both
    assert key(outcome(native, rec.kind, rec.data)) == key(outcome(pure, rec.kind, rec.data))


def test_every_anthropic_recording_is_covered() -> None:
    tagged = set()
    for line in (FIXTURES / "FEATURES.tsv").read_text().splitlines()[1:]:
        cols = line.split("\t")
        if cols[3] == "anthropic-messages" and cols[2] != "http-recording-json":
            tagged.add(cols[1])
    covered = {r.name for r in RECORDINGS}
    assert tagged <= covered, tagged - covered


# ------------------------------------------------------------------ notable recordings


def test_tool_use_stream(impl: ModuleType) -> None:
    data = (SDK_STREAMS / "tool_use_response.txt").read_bytes()
    response = feed(impl, "sse", terminated(data))
    assert response.response_id == "msg_019Q1hrJbZG26Fb9BQhrkHEr" and response.model
    assert response.text == "I'll check the current weather in Paris for you."
    assert response.finish_reason == "tool_calls" and response.raw_finish_reason == "tool_use"
    (call,) = response.tool_calls
    assert (call.call_id, call.name, call.complete) == ("toolu_01NRLabsLyVHZPKxbKvkfSMn", "get_weather", True)
    assert json.loads(call.arguments) == {"location": "Paris"}
    assert [type(item) for item in response.items] == [TextItem, ToolCallItem]


def test_max_tokens_cuts_a_tool_input(impl: ModuleType) -> None:
    data = (SDK_STREAMS / "incomplete_partial_json_response.txt").read_bytes()
    response = feed(impl, "sse", terminated(data))
    assert response.finish_reason == "length" and response.raw_finish_reason == "max_tokens"
    (call,) = response.tool_calls
    assert call.name == "make_file" and call.complete is False
    assert call.arguments.startswith('{"filename": "taxes.txt", "lines_of_text": [')
    with pytest.raises(ParseError) as caught:
        impl.loads(call.arguments)
    assert caught.value.code == "UNEXPECTED_END"
    assert response.usage is not None and response.usage.output_tokens == 124


@pytest.mark.parametrize("stop_reason", ["max_tokens", "refusal"])
def test_a_call_ended_before_a_cut_finish_is_incomplete(impl: ModuleType, stop_reason: str) -> None:
    """content_block_stop, then a cutting stop_reason: the call's arguments
    parse, yet it is incomplete (a cut response's calls never execute)."""
    tool = {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {}}
    events = sse(
        start(),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": tool}),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": '{"path": "a"}'},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        *finish(stop_reason),
    )
    response = feed(impl, "sse", events)
    (call,) = response.tool_calls
    assert (call.arguments, call.complete) == ('{"path": "a"}', False)
    assert response.raw_finish_reason == stop_reason
    ended = feed(impl, "sse", events.replace(stop_reason.encode(), b"tool_use"))
    assert [c.complete for c in ended.tool_calls] == [True]


def test_unterminated_last_event_is_named(impl: ModuleType) -> None:
    data = (SDK_STREAMS / "tool_use_response.txt").read_bytes()
    with pytest.raises(StreamError) as caught:
        feed(impl, "sse", data)
    assert caught.value.code == "SSE_UNTERMINATED_EVENT"
    offset = caught.value.offset
    assert offset is not None and data.rindex(b"event: message_stop") <= offset < len(data)  # inside the cut event


def test_refusal(impl: ModuleType) -> None:
    response = feed(impl, "sse", terminated((SDK_STREAMS / "refusal_response.txt").read_bytes()))
    assert response.finish_reason == "refusal" and response.raw_finish_reason == "refusal"
    assert response.tool_calls == ()
    body = feed(impl, "body", (VERCEL / "anthropic-refusal.json").read_bytes())
    assert body.finish_reason == "refusal"


@pytest.mark.parametrize(
    "kind, name", [("lines", "anthropic-tool-no-args.chunks.txt"), ("body", "anthropic-tool-no-args.json")]
)
def test_tool_without_arguments_gives_empty_object(impl: ModuleType, kind: str, name: str) -> None:
    response = feed(impl, kind, (VERCEL / name).read_bytes())
    (call,) = response.tool_calls
    assert call.name == "updateIssueList" and call.arguments == "{}" and call.complete
    assert response.finish_reason == "tool_calls"


def test_thinking_with_signature(impl: ModuleType) -> None:
    response = feed(impl, "lines", (VERCEL / "anthropic-clear-thinking.1.chunks.txt").read_bytes())
    reasoning, text = response.items
    assert isinstance(reasoning, ReasoningItem) and isinstance(text, TextItem)
    assert reasoning.text.startswith("The previous result was 925.")
    assert reasoning.signature
    assert text.text == "925 ÷ 5 = 185"


def test_body_tool_inputs_are_deterministic_json(impl: ModuleType) -> None:
    raw = json.loads((VERCEL / "anthropic-json-tool.1.json").read_bytes())
    response = feed(impl, "body", (VERCEL / "anthropic-json-tool.1.json").read_bytes())
    (call,) = response.tool_calls
    (block,) = [b for b in raw["content"] if b["type"] == "tool_use"]
    assert call.arguments == json.dumps(block["input"], sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    assert call.call_id == block["id"]


def test_parallel_calls_in_a_body_keep_order_and_ids(impl: ModuleType) -> None:
    raw = json.loads((VERCEL / "anthropic-programmatic-tool-calling.1.json").read_bytes())
    response = feed(impl, "body", (VERCEL / "anthropic-programmatic-tool-calling.1.json").read_bytes())
    expected = [(b["id"], b["name"], b["input"]) for b in raw["content"] if b["type"] == "tool_use"]
    assert len(expected) == 4
    assert [(c.call_id, c.name, json.loads(c.arguments)) for c in response.tool_calls] == expected
    assert response.unknown_events == {
        "content_block:server_tool_use": 1,
        "content_block:code_execution_tool_result": 1,
    }


def _messages(data: bytes) -> list[bytes]:
    """Split a multi-message chunks recording at each ``message_stop``."""
    out: list[bytes] = []
    current: list[bytes] = []
    for line in data.splitlines():
        if line.strip():
            current.append(line)
            if json.loads(line)["type"] == "message_stop":
                out.append(b"\n".join(current))
                current = []
    assert not current
    return out


@pytest.mark.parametrize(
    "name", [n.rsplit("/", 1)[1] for n, c in EXPECTED_ERRORS.items() if c == "EVENT_AFTER_TERMINAL"]
)
def test_each_message_of_a_multi_step_recording(impl: ModuleType, name: str) -> None:
    segments = _messages((VERCEL / name).read_bytes())
    assert len(segments) >= 2
    responses = [feed(impl, "lines", segment) for segment in segments]
    assert responses[-1].finish_reason == "stop"
    assert all(r.finish_reason == "tool_calls" for r in responses[:-1])
    assert all(r.tool_calls for r in responses[:-1])
    assert len({r.response_id for r in responses}) == len(responses)


def test_message_start_carrying_whole_blocks(impl: ModuleType) -> None:
    segments = _messages((VERCEL / "anthropic-programmatic-tool-calling.1.chunks.txt").read_bytes())
    first_line = json.loads(segments[1].splitlines()[0])
    (block,) = first_line["message"]["content"]
    response = feed(impl, "lines", segments[1])
    (call,) = response.tool_calls
    assert (call.call_id, call.name, json.loads(call.arguments)) == (block["id"], block["name"], block["input"])
    assert response.finish_reason == "tool_calls"


def test_builtin_server_tools_are_recorded_not_called(impl: ModuleType) -> None:
    response = feed(impl, "lines", (VERCEL / "anthropic-web-search-tool.1.chunks.txt").read_bytes())
    assert response.tool_calls == ()
    assert response.unknown_events["content_block:server_tool_use"] == 1
    assert response.unknown_events["content_block:web_search_tool_result"] == 1
    assert response.unknown_events["content_block_delta:citations_delta"] == 14
    assert response.finish_reason == "stop"


def test_usage_counts_cache_reads_and_writes_as_input(impl: ModuleType) -> None:
    data = (VERCEL / "anthropic-code-execution-20260120-prompt-cache.1.chunks.txt").read_bytes()
    usage: dict[str, int] = {}
    for line in data.splitlines():
        event = json.loads(line)
        usage.update((event.get("message") or {}).get("usage") or {})
        usage.update(event.get("usage") or {})
    response = feed(impl, "lines", data)
    assert response.usage is not None
    assert response.usage.input_tokens == (
        usage["input_tokens"] + usage["cache_read_input_tokens"] + usage["cache_creation_input_tokens"]
    )
    assert response.usage.cached_tokens == usage["cache_read_input_tokens"] > 0
    assert response.usage.output_tokens == usage["output_tokens"]


@pytest.mark.parametrize(
    "name, retryable",
    [
        (
            "anthropic-sdk-python/tests/lib/_parse/__inline_snapshot__/test_messages/TestAsyncParse/d743d628-16aa-4c9f-ae78-51deb578f746.json[0]",
            True,
        ),
        (
            "anthropic-sdk-python/tests/lib/tools/__inline_snapshot__/test_runners/TestSyncRunTools/f59a9391-643b-422c-96dc-1f28bc7ea4d7.json[1]",
            False,
        ),
    ],
)
def test_http_error_bodies(impl: ModuleType, name: str, retryable: bool) -> None:
    rec = BY_NAME[name]
    with pytest.raises(TransportError) as caught:
        feed(impl, rec.kind, rec.data)
    assert caught.value.code == "PROVIDER_ERROR" and caught.value.retryable is retryable
    assert caught.value.message.startswith("rate_limit_error" if retryable else "invalid_request_error")


@pytest.mark.parametrize("name", ["duplicate-message-start.chunks.txt", "spliced-message-start.chunks.txt"])
def test_second_message_start_is_named(impl: ModuleType, name: str) -> None:
    with pytest.raises(StreamError) as caught:
        feed(impl, "lines", (VERCEL / name).read_bytes())
    assert caught.value.code == "DUPLICATE_START"


# ------------------------------------------------------------------ hand-made edge cases


@pytest.mark.parametrize(
    "error_type, retryable",
    [("overloaded_error", True), ("api_error", True), ("rate_limit_error", True), ("invalid_request_error", False)],
)
@pytest.mark.parametrize("before_start", [False, True])
def test_error_event_after_http_200(impl: ModuleType, error_type: str, retryable: bool, before_start: bool) -> None:
    error = ("error", {"type": "error", "error": {"type": error_type, "message": "Overloaded"}})
    events = [error] if before_start else [start(), *text_block(0, "Half an ans"), error]
    with pytest.raises(TransportError) as caught:
        feed(impl, "sse", sse(*events))
    assert caught.value.code == "PROVIDER_ERROR"
    assert caught.value.retryable is retryable
    assert error_type in caught.value.message


@pytest.mark.parametrize(
    "raw, normalized",
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("max_tokens", "length"),
        ("model_context_window_exceeded", "length"),
        ("refusal", "refusal"),
        ("pause_turn", "unknown"),
        ("something_new", "unknown"),
    ],
)
def test_stop_reasons_keep_the_raw_value(impl: ModuleType, raw: str, normalized: str) -> None:
    response = feed(impl, "sse", sse(start(), *text_block(0, "hi"), *finish(raw)))
    assert (response.finish_reason, response.raw_finish_reason) == (normalized, raw)


def test_unknown_event_types_are_counted(impl: ModuleType) -> None:
    odd = ("future_event", {"type": "future_event", "x": 1})
    response = feed(impl, "sse", sse(start(), odd, *text_block(0, "hi"), odd, *finish("end_turn")))
    assert response.unknown_events == {"future_event": 2}
    assert response.text == "hi"


MALFORMED: dict[str, dict[str, Any]] = {
    "text_delta without text": {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta"}},
    "text_delta with a number": {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": 5}},
    "index as a string": {"type": "content_block_delta", "index": "0", "delta": {"type": "text_delta", "text": "x"}},
    "delta as an array": {"type": "content_block_delta", "index": 0, "delta": ["text_delta", "x"]},
    "input_json_delta on a text block": {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "input_json_delta", "partial_json": "{}"},
    },
    "message_delta without delta": {"type": "message_delta", "usage": {"output_tokens": 1}},
    "usage with a negative count": {"type": "message_delta", "delta": {}, "usage": {"output_tokens": -1}},
}


@pytest.mark.parametrize("event", list(MALFORMED.values()), ids=list(MALFORMED))
def test_known_event_with_the_wrong_shape_is_malformed(impl: ModuleType, event: dict[str, Any]) -> None:
    opening = text_block(0, "hi")[:2]
    with pytest.raises(StreamError) as caught:
        feed(impl, "sse", sse(start(), *opening, (event["type"], event), *finish("end_turn")))
    assert caught.value.code == "MALFORMED_EVENT"


def test_tool_use_without_id_is_malformed(impl: ModuleType) -> None:
    block = {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "name": "f", "input": {}}}
    with pytest.raises(StreamError) as caught:
        feed(impl, "sse", sse(start(), ("content_block_start", block)))
    assert caught.value.code == "MALFORMED_EVENT"


@pytest.mark.parametrize(
    "events, code",
    [
        (
            [
                (
                    "content_block_delta",
                    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "x"}},
                )
            ],
            "EVENT_BEFORE_START",
        ),
        (
            [
                start(),
                (
                    "content_block_delta",
                    {"type": "content_block_delta", "index": 3, "delta": {"type": "text_delta", "text": "x"}},
                ),
            ],
            "DELTA_BEFORE_START",
        ),
        (
            [
                start(),
                *text_block(0, "a"),
                (
                    "content_block_delta",
                    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "x"}},
                ),
            ],
            "DELTA_AFTER_END",
        ),
        ([start(), *text_block(0, "a"), *text_block(0, "b")], "DUPLICATE_ITEM_ID"),
        ([start(), *text_block(0, "a"), *finish("end_turn"), ("ping", {"type": "ping"})], "EVENT_AFTER_TERMINAL"),
        ([start(), *text_block(0, "a")], "NO_TERMINAL_EVENT"),
    ],
    ids=["before-start", "unknown-block", "after-stop", "block-twice", "after-stop-event", "no-message-stop"],
)
def test_state_errors(impl: ModuleType, events: list[tuple[str, dict[str, Any]]], code: str) -> None:
    with pytest.raises(StreamError) as caught:
        feed(impl, "sse", sse(*events))
    assert caught.value.code == code


def test_sse_event_name_must_match_the_data(impl: ModuleType) -> None:
    data = sse(start()).replace(b"event: message_start", b"event: message_stop")
    with pytest.raises(StreamError) as caught:
        feed(impl, "sse", data)
    assert caught.value.code == "MALFORMED_EVENT"


# ------------------------------------------------------------------ differential fuzzing

_MUTANTS = [None, 0, 1, -1, 1.5, "", "x", "text_delta", "input_json_delta", [], {}, True, {"type": "text"}]
_KEYS = ["type", "index", "delta", "text", "partial_json", "thinking", "signature", "citation", "input"]
_STREAMS = [r for r in RECORDINGS if r.kind == "lines"] + [r for r in RECORDINGS if r.kind == "body"][:10]


@st.composite
def mutated(draw: Callable[..., Any]) -> tuple[str, list[str]]:
    rec = draw(st.sampled_from(_STREAMS))
    if rec.kind == "body":
        lines = [json.dumps(json.loads(rec.data))]
    else:
        lines = [line.decode() for line in rec.data.splitlines() if line.strip()]
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(lines) - 1))
        value = json.loads(lines[i])
        path = draw(st.sampled_from(nodes(value)))
        if path:
            parent = value
            for step in path[:-1]:
                parent = parent[step]
            action = draw(st.sampled_from(["delete", "replace", "rename"]))
            if action == "delete":
                del parent[path[-1]]
            elif action == "replace" or not isinstance(parent, dict):
                parent[path[-1]] = draw(st.sampled_from(_MUTANTS))
            else:  # another documented key in its place (the typed fast path must not be fooled)
                parent[draw(st.sampled_from(_KEYS))] = parent.pop(path[-1])
        lines[i] = json.dumps(value)
        if rec.kind == "lines" and draw(st.integers(0, 9)) == 0:
            lines.insert(draw(st.integers(0, len(lines))), lines[draw(st.integers(0, len(lines) - 1))])
    return rec.kind, lines


@given(case=mutated())
def test_backends_agree_on_mutated_recordings(both: tuple[ModuleType, ModuleType], case: tuple[str, list[str]]) -> None:
    kind, lines = case
    data = "\n".join(lines).encode()
    native, pure = both
    assert key(outcome(native, kind, data)) == key(outcome(pure, kind, data))


@pytest.mark.parametrize(
    "given, text",
    [
        ('{"id":18446744073709551615}', '{"id":18446744073709551615}'),
        ('{"b":1E2,"a":-0,"c":0.00001,"d":1e16,"e":-0.0}', '{"a":0,"b":100.0,"c":1e-05,"d":1e+16,"e":-0.0}'),
        ('{"s":"\\u0000 \\u007f é \\ud83d\\ude00"}', '{"s":"\\u0000 \x7f é \U0001f600"}'),
    ],
    ids=["u64-exact", "floats-as-python-repr", "escapes"],
)
def test_whole_inputs_are_canonical_and_exact(impl: ModuleType, given: str, text: str) -> None:
    block = (
        '{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"f","input":%s}}'
    )
    lines = [
        json.dumps(start()[1]),
        block % given,
        '{"type":"content_block_stop","index":0}',
        json.dumps(finish("tool_use")[1][1]),
    ]
    (call,) = feed(impl, "lines", "\n".join(lines).encode()).tool_calls
    assert call.arguments == text


@pytest.mark.parametrize(
    "given, code, path",
    [
        ('{"a":1e400}', "NUMBER_OUT_OF_RANGE", "$.content_block.input.a"),
        ('{"id":123456789012345678901234567890}', "NUMBER_OUT_OF_RANGE", "$.content_block.input.id"),
        ('{"s":"x","s":"last"}', "DUPLICATE_KEY", "$.content_block.input.s"),
    ],
)
def test_input_objects_follow_the_strict_rules(impl: ModuleType, given: str, code: str, path: str) -> None:
    block = (
        '{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"f","input":%s}}'
    )
    with pytest.raises(ParseError) as caught:
        feed(impl, "lines", "\n".join([json.dumps(start()[1]), block % given]).encode())
    assert (caught.value.code, caught.value.path) == (code, path)


def test_refusal_fallback_streams_are_never_glued(impl: ModuleType) -> None:
    """Stream A is refused after a partial "Hi"; stream B is the fallback
    model's new generation, starting mid-sentence. Each is its own response,
    and B appended to A is named, not joined."""
    fable = SDK / "fixtures" / "fable-fallback"
    first = feed(impl, "sse", (fable / "stream-a-refusal.sse").read_bytes())
    second = feed(impl, "sse", (fable / "stream-b-fallback.sse").read_bytes())
    assert (first.finish_reason, first.text) == ("refusal", "Hi")
    assert second.finish_reason == "stop" and second.text.startswith(" there! Happy to explain.")
    assert first.response_id != second.response_id and first.model != second.model
    spliced = (fable / "stream-a-refusal.sse").read_bytes() + (fable / "stream-b-fallback.sse").read_bytes()
    with pytest.raises(StreamError) as caught:
        feed(impl, "sse", spliced)
    assert caught.value.code == "EVENT_AFTER_TERMINAL"


def _fast_and_general(kind: str, data: bytes) -> tuple[object, object]:
    """The pure backend's outcome (error message included) through its
    ``fast_delta`` path and through ``map_event`` (``keep_events=True``)."""
    from decisions import _pure

    def run(keep: bool) -> object:
        try:
            assembler = _pure.StreamAssembler("anthropic", keep_events=keep)
            if kind == "sse":
                assembler.feed(data)
            else:
                for line in data.splitlines():
                    if line.strip():
                        assembler.feed_event(line)
            return assembler.finish()
        except OutputError as error:
            return (type(error).__name__, error.code, error.message)

    return run(False), run(True)


def _tool_start(index: int, tool_input: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    block = {"type": "tool_use", "id": f"toolu_{index}", "name": "f", "input": tool_input}
    return ("content_block_start", {"type": "content_block_start", "index": index, "content_block": block})


def _json_delta(index: Any, text: Any, name: str = "content_block_delta") -> tuple[str, dict[str, Any]]:
    return (
        name,
        {"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": text}},
    )


def _stop(index: int) -> tuple[str, dict[str, Any]]:
    return ("content_block_stop", {"type": "content_block_stop", "index": index})


_FAST_EDGES = {
    "input object and json deltas": [
        start(),
        _tool_start(0, {"a": 1}),
        _json_delta(0, "{}"),
        _stop(0),
        *finish("tool_use"),
    ],
    "json delta to a text block": [
        start(),
        *text_block(0, "x")[:1],
        _json_delta(0, "{}"),
        _stop(0),
        *finish("end_turn"),
    ],
    "text delta to a tool block": [start(), _tool_start(0, {}), *text_block(0, "x")[1:], *finish("tool_use")],
    "delta after the block stopped": [start(), _tool_start(0, {}), _json_delta(0, "{"), _stop(0), _json_delta(0, "}")],
    "delta after message_stop": [
        start(),
        _tool_start(0, {}),
        _json_delta(0, "{}"),
        _stop(0),
        *finish("tool_use"),
        _json_delta(0, "x"),
    ],
    "delta before the start": [_json_delta(0, "{}"), start()],
    "delta for an unknown block": [start(), _tool_start(0, {}), _json_delta(1, "{}"), _stop(0), *finish("tool_use")],
    "event name of another type": [
        start(),
        _tool_start(0, {}),
        _json_delta(0, "{}", name="ping"),
        _stop(0),
        *finish("tool_use"),
    ],
    "bool index": [start(), _tool_start(0, {}), _json_delta(False, "{}"), _stop(0), *finish("tool_use")],
    "json delta not a string": [start(), _tool_start(0, {}), _json_delta(0, 5), _stop(0), *finish("tool_use")],
    "empty json delta": [start(), _tool_start(0, {}), _json_delta(0, ""), _stop(0), *finish("tool_use")],
    "json delta to a server tool": [
        start(),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "server_tool_use", "id": "s", "name": "web_search", "input": {}},
            },
        ),
        _json_delta(0, "{}"),
        _stop(0),
        *finish("end_turn"),
    ],
}


@pytest.mark.parametrize("events", list(_FAST_EDGES.values()), ids=list(_FAST_EDGES))
def test_fast_delta_path_edges(events: list[tuple[str, dict[str, Any]]]) -> None:
    fast, general = _fast_and_general("sse", sse(*events))
    assert fast == general


@given(case=mutated())
def test_fast_delta_path_maps_like_map_event(case: tuple[str, list[str]]) -> None:
    """The pure mapper's ``fast_delta`` (taken unless events are kept) gives
    what ``map_event`` gives (taken with ``keep_events=True``)."""
    kind, lines = case
    fast, general = _fast_and_general(kind, "\n".join(lines).encode())
    assert fast == general
