"""The ``openai-chat`` provider (Chat Completions and OpenAI-compatible
servers) on both backends: every recording, the notable ones in detail, and
the quirks and failure modes on small synthetic streams."""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import decisions
from decisions import Limits
from decisions.errors import OutputError, StreamError, TransportError
from decisions.types import NormalizedResponse, ReasoningItem, RefusalItem, TextItem
from openai_mutations import damaged
from openai_mutations import outcome as mutated_outcome
from openai_recordings import outcome, recordings, run, run_events, short, sse

PROVIDER = "openai-chat"
RECORDINGS = recordings(PROVIDER)
OPENAI = "openai-python/.inline-snapshot/external/"
PARALLEL = OPENAI + "f82268f2fefd5cfbc7eeb59c297688be2f6ca0849a6e4f17851b517310841d9b.bin"
REFUSAL = OPENAI + "173417d553406f034f643e5db3f8d591fb691ebac56f5ae39a22cc7d455c5353.bin"
LENGTH = OPENAI + "4cc50a6135d254573a502310e6af1246f55edb6ad95fa24059f160996b68866d.bin"
THREE_CHOICES = OPENAI + "a491adda08c3d4fde95f5b2ee3f60f7f745f1a56d82e62f58031cc2add502380.bin"
BODIES = "openai-python/extracted/tests/lib/chat/test_completions/"
VERCEL = "vercel-ai/packages/"


def test_every_file_is_found() -> None:
    formats = {fmt for _, fmt in RECORDINGS}
    assert len(RECORDINGS) >= 60 and formats == {"raw-sse", "jsonl", "json-body"}


@pytest.mark.parametrize(("path", "fmt"), RECORDINGS, ids=[short(p) for p, _ in RECORDINGS])
def test_every_recording_gives_a_response_or_a_named_error(impl: ModuleType, path: str, fmt: str) -> None:
    result = outcome(impl, PROVIDER, path, fmt)
    if isinstance(result, NormalizedResponse):
        assert result.provider == PROVIDER
        assert result.finish_reason in ("stop", "tool_calls", "length", "refusal")
        for call in result.tool_calls:
            if call.complete:
                json.loads(call.arguments or "{}")  # complete calls are whole JSON
    else:
        name, code = result
        assert name in ("StreamError", "TransportError") and code


@pytest.mark.parametrize(("path", "fmt"), RECORDINGS, ids=[short(p) for p, _ in RECORDINGS])
def test_both_backends_agree_on_every_recording(both: tuple[ModuleType, ModuleType], path: str, fmt: str) -> None:
    native, pure = both
    assert outcome(native, PROVIDER, path, fmt) == outcome(pure, PROVIDER, path, fmt)


def test_parallel_tool_calls(impl: ModuleType) -> None:
    r = run(impl, PROVIDER, PARALLEL, "raw-sse")
    assert r.finish_reason == "tool_calls" and r.raw_finish_reason == "tool_calls"
    assert [(c.call_id, c.name, json.loads(c.arguments)) for c in r.tool_calls] == [
        ("call_JMW1whyEaYG438VE1OIflxA2", "GetWeatherArgs", {"city": "Edinburgh", "country": "GB", "units": "c"}),
        ("call_DNYTawLBoN8fj3KN6qU9N1Ou", "get_stock_price", {"ticker": "AAPL", "exchange": "NASDAQ"}),
    ]
    assert all(c.complete and not c.call_id_generated for c in r.tool_calls)
    assert len({c.item_id for c in r.tool_calls}) == 2
    # usage arrives in a chunk after the finish chunk
    assert (r.usage.input_tokens, r.usage.output_tokens, r.usage.reasoning_tokens) == (149, 60, 0)


def test_parallel_tool_calls_body_is_the_same_calls(impl: ModuleType) -> None:
    body = run(impl, PROVIDER, BODIES + "test_parse_multiple_pydantic_tools.json", "json-body")
    stream = run(impl, PROVIDER, PARALLEL, "raw-sse")
    # a separate recording of the same request: same calls, other call ids
    assert [(c.name, c.arguments) for c in body.tool_calls] == [(c.name, c.arguments) for c in stream.tool_calls]
    assert body.finish_reason == stream.finish_reason == "tool_calls"


def test_refusal(impl: ModuleType) -> None:
    r = run(impl, PROVIDER, REFUSAL, "raw-sse")
    assert (r.finish_reason, r.raw_finish_reason) == ("refusal", "stop")
    assert r.items == (RefusalItem(item_id="choice0.refusal", text="I'm sorry, I can't assist with that request."),)


def test_length(impl: ModuleType) -> None:
    r = run(impl, PROVIDER, LENGTH, "raw-sse")
    assert (r.finish_reason, r.raw_finish_reason, r.text) == ("length", "length", '{"')


def test_three_choices_need_a_choice(impl: ModuleType) -> None:
    with pytest.raises(StreamError) as info:
        run(impl, PROVIDER, THREE_CHOICES, "raw-sse")
    assert info.value.code == "MULTIPLE_CHOICES"
    temperatures = []
    for choice in (0, 1, 2):
        r = run(impl, PROVIDER, THREE_CHOICES, "raw-sse", choice=choice)
        assert r.finish_reason == "stop"
        temperatures.append(json.loads(r.text)["temperature"])
    assert temperatures == [65, 61, 59]


def test_three_choices_body(impl: ModuleType) -> None:
    path = BODIES + "test_parse_pydantic_model_multiple_choices.json"
    with pytest.raises(StreamError) as info:
        run(impl, PROVIDER, path, "json-body")
    assert info.value.code == "MULTIPLE_CHOICES"
    texts = {run(impl, PROVIDER, path, "json-body", choice=c).text for c in (0, 1, 2)}
    assert len(texts) == 3 and all(json.loads(t)["city"] == "San Francisco" for t in texts)
    with pytest.raises(StreamError) as info:
        run(impl, PROVIDER, path, "json-body", choice=3)
    assert info.value.code == "MULTIPLE_CHOICES"


def test_reasoning_content_and_cached_usage(impl: ModuleType) -> None:
    r = run(impl, PROVIDER, VERCEL + "deepseek/src/chat/__fixtures__/deepseek-tool-call.chunks.txt", "jsonl")
    assert isinstance(r.items[0], ReasoningItem) and r.items[0].text.startswith("The user is asking")
    (call,) = r.tool_calls
    assert (call.call_id, call.name, json.loads(call.arguments)) == (
        "call_00_ioIn7yN9p1ZOMNpDLwd4MgAF",
        "weather",
        {"location": "San Francisco"},
    )
    assert (r.usage.cached_tokens, r.usage.reasoning_tokens) == (320, 39)


def test_mistral_content_parts_with_thinking(impl: ModuleType) -> None:
    stream = run(impl, PROVIDER, VERCEL + "mistral/src/__fixtures__/mistral-reasoning.chunks.txt", "jsonl")
    body = run(impl, PROVIDER, VERCEL + "mistral/src/__fixtures__/mistral-reasoning.json", "json-body")
    assert stream.items == body.items
    assert [type(i) for i in body.items] == [ReasoningItem, TextItem] and body.text == "2 + 2 = 4"


def test_continuation_with_empty_name_is_the_same_call(impl: ModuleType) -> None:
    r = run(impl, PROVIDER, VERCEL + "mistral/src/__fixtures__/mistral-incremental-tool-call.chunks.txt", "jsonl")
    (call,) = r.tool_calls
    assert (call.call_id, call.name) == ("chatcmpl-tool-9f149c74c42f265b", "webSearchTool")


def test_prompt_filter_chunk_without_id_does_not_start(impl: ModuleType) -> None:
    r = run(impl, PROVIDER, VERCEL + "openai/src/chat/__fixtures__/azure-model-router.1.chunks.txt", "jsonl")
    assert r.response_id == "chatcmpl-CYPS1lijGoK8gd9lYzY3r9Sx50nbt" and r.model == "gpt-5-nano-2025-08-07"


def test_error_body_is_a_provider_error(impl: ModuleType) -> None:
    path = VERCEL + "openai/src/chat/__fixtures__/reasoning-model-legacy-parameter-error.json"
    with pytest.raises(TransportError) as info:
        run(impl, PROVIDER, path, "json-body")
    assert info.value.code == "PROVIDER_ERROR" and "max_completion_tokens" in info.value.message
    assert info.value.retryable is False


# ---------------------------------------------------------------- synthetic streams


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, index: int = 0, **top: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-x",
        "model": "m",
        "choices": [{"index": index, "delta": delta or {}, "finish_reason": finish}],
        **top,
    }


def call(index: int, id: str | None = None, name: str | None = None, arguments: str | None = None) -> dict[str, Any]:
    fn: dict[str, Any] = {}
    if name is not None:
        fn["name"] = name
    if arguments is not None:
        fn["arguments"] = arguments
    out: dict[str, Any] = {"index": index, "function": fn}
    if id is not None:
        out["id"] = id
    return out


def feed_sse(impl: ModuleType, events: list[Any], **options: Any) -> NormalizedResponse:
    assembler = impl.StreamAssembler(PROVIDER, **options)
    assembler.feed(sse(events))
    return assembler.finish()


def error_code(impl: ModuleType, events: list[Any], **options: Any) -> str:
    with pytest.raises(OutputError) as info:
        feed_sse(impl, events, **options)
    return info.value.code


def test_missing_ids_are_generated_and_flagged(impl: ModuleType) -> None:
    r = feed_sse(
        impl,
        [
            chunk({"tool_calls": [call(0, name="a", arguments='{"x":'), call(1, name="b", arguments="{}")]}),
            chunk({"tool_calls": [call(0, arguments="1}")]}),
            chunk(finish="tool_calls"),
            "[DONE]",
        ],
    )
    assert [(c.call_id, c.name, c.arguments, c.call_id_generated) for c in r.tool_calls] == [
        ("chatcmpl-x.call_0", "a", '{"x":1}', True),
        ("chatcmpl-x.call_1", "b", "{}", True),
    ]


def test_index_reuse_with_another_id_is_another_call(impl: ModuleType) -> None:
    r = feed_sse(
        impl,
        [
            chunk({"tool_calls": [call(0, id="c1", name="read", arguments='{"p":1}')]}),
            chunk({"tool_calls": [call(0, id="c2", name="read", arguments='{"p":2}')]}),
            chunk(finish="tool_calls"),
        ],
    )
    assert [(c.call_id, c.arguments) for c in r.tool_calls] == [("c1", '{"p":1}'), ("c2", '{"p":2}')]
    assert all(c.complete for c in r.tool_calls)


def test_repeated_id_continues_the_call(impl: ModuleType) -> None:
    r = feed_sse(
        impl,
        [
            chunk({"tool_calls": [call(0, id="c1", name="f", arguments='{"a"')]}),
            chunk({"tool_calls": [call(0, id="c1", name="f", arguments=":1}")]}),
            chunk(finish="tool_calls"),
        ],
    )
    assert [(c.call_id, c.arguments) for c in r.tool_calls] == [("c1", '{"a":1}')]


def test_name_change_is_named(impl: ModuleType) -> None:
    assert (
        error_code(
            impl,
            [
                chunk({"tool_calls": [call(0, id="c1", name="f")]}),
                chunk({"tool_calls": [call(0, name="g", arguments="{}")]}),
            ],
        )
        == "CALL_NAME_CHANGED"
    )


def test_call_without_name_is_malformed(impl: ModuleType) -> None:
    assert error_code(impl, [chunk({"tool_calls": [call(0, id="c1", arguments="{}")]})]) == "MALFORMED_EVENT"


def test_done_without_finish_reason_is_not_a_finish(impl: ModuleType) -> None:
    assert error_code(impl, [chunk({"content": "Hel"}), chunk({"content": "lo"}), "[DONE]"]) == "NO_TERMINAL_EVENT"


def test_finish_without_done_is_a_finish(impl: ModuleType) -> None:
    r = feed_sse(impl, [chunk({"content": "Hi"}), chunk(finish="stop")])
    assert (r.text, r.finish_reason) == ("Hi", "stop")


def test_cut_stream_is_not_a_finish(impl: ModuleType) -> None:
    assert (
        error_code(impl, [chunk({"tool_calls": [call(0, id="c", name="f", arguments='{"a"')]})]) == "NO_TERMINAL_EVENT"
    )


def test_nothing_after_done(impl: ModuleType) -> None:
    assert error_code(impl, [chunk(finish="stop"), "[DONE]", chunk({"content": "x"})]) == "EVENT_AFTER_TERMINAL"


def test_content_after_finish_reason(impl: ModuleType) -> None:
    assert error_code(impl, [chunk(finish="stop"), chunk({"content": "x"})]) == "EVENT_AFTER_TERMINAL"


def test_length_leaves_the_call_incomplete(impl: ModuleType) -> None:
    r = feed_sse(
        impl, [chunk({"tool_calls": [call(0, id="c", name="f", arguments='{"a": 1}')]}), chunk(finish="length")]
    )
    (c,) = r.tool_calls
    assert r.finish_reason == "length" and c.complete is False and c.arguments == '{"a": 1}'


@pytest.mark.parametrize(
    ("raw", "normalized"),
    [
        ("stop", "stop"),
        ("tool_calls", "tool_calls"),
        ("function_call", "tool_calls"),
        ("length", "length"),
        ("content_filter", "content_filter"),
    ],
)
def test_finish_reasons(impl: ModuleType, raw: str, normalized: str) -> None:
    r = feed_sse(impl, [chunk({"content": "x"}), chunk(finish=raw)])
    assert (r.finish_reason, r.raw_finish_reason) == (normalized, raw)


@pytest.mark.parametrize("raw", ["eos", "model_length", "insufficient_system_resource", "abort"])
@pytest.mark.parametrize(
    "delta", [{"content": "x"}, {"tool_calls": [{"index": 0, "id": "c", "function": {"name": "f", "arguments": "{}"}}]}]
)
def test_unknown_finish_reason_ends_the_choice_and_is_refused_as_unknown(
    impl: ModuleType, raw: str, delta: dict[str, Any]
) -> None:
    """A finish_reason this package does not know still ends the choice (it
    was the chunk that ended it): the response is refused by ``decide`` as
    ``UNKNOWN_FINISH_REASON``, naming the reason, not as an item left open."""
    r = feed_sse(impl, [chunk(delta), chunk(finish=raw)])
    assert (r.finish_reason, r.raw_finish_reason) == ("unknown", raw)
    with pytest.raises(StreamError) as caught:
        decisions.decide(r)
    assert caught.value.code == "UNKNOWN_FINISH_REASON" and repr(raw) in caught.value.message
    # documented by their servers: a hint that says what to do, retryable where a retry helps
    expected = {"insufficient_system_resource": True}.get(raw, False)
    assert caught.value.retryable is expected
    if raw in ("model_length", "insufficient_system_resource"):
        assert caught.value.hint and ("context window" in caught.value.hint or "resources" in caught.value.hint)


def test_legacy_function_call(impl: ModuleType) -> None:
    r = feed_sse(
        impl,
        [
            chunk({"function_call": {"name": "f", "arguments": '{"a"'}}),
            chunk({"function_call": {"arguments": ": 2}"}}),
            chunk(finish="function_call"),
        ],
    )
    (c,) = r.tool_calls
    assert (c.name, c.arguments, c.call_id_generated, r.finish_reason) == ("f", '{"a": 2}', True, "tool_calls")


def test_reasoning_fields_of_compatible_servers(impl: ModuleType) -> None:
    r = feed_sse(
        impl,
        [
            chunk({"reasoning": "think "}),
            chunk({"reasoning_content": "more", "reasoning": "more"}),
            chunk({"content": "answer"}),
            chunk(finish="stop"),
        ],
    )
    assert r.items == (
        ReasoningItem(item_id="choice0.reasoning", text="think more"),
        TextItem(item_id="choice0.content", text="answer"),
    )
    assert error_code(impl, [chunk({"reasoning_content": "a", "reasoning": "b"})]) == "MALFORMED_EVENT"


@pytest.mark.parametrize(
    "bad",
    [
        chunk({"content": 5}),
        chunk({"tool_calls": {"index": 0}}),
        chunk({"tool_calls": [{"index": -1, "id": "c", "function": {"name": "f"}}]}),
        chunk({"content": [{"type": "image", "url": "x"}]}),
        chunk(finish=3),
        {"id": "x", "choices": "none"},
        {"id": "x", "choices": [], "usage": {"prompt_tokens": "9"}},
        [1, 2],
    ],
)
def test_known_chunk_with_wrong_shape_is_malformed(impl: ModuleType, bad: Any) -> None:
    assert error_code(impl, [bad]) == "MALFORMED_EVENT"


def test_error_chunk_is_a_provider_error(impl: ModuleType) -> None:
    with pytest.raises(TransportError) as info:
        feed_sse(impl, [chunk({"content": "x"}), {"error": {"message": "boom", "type": "server_error", "code": 500}}])
    assert info.value.code == "PROVIDER_ERROR" and info.value.retryable is True


#: Chunks that carry none of choices, usage, error or prompt_filter_results:
#: other servers' error objects, an empty object.
BARE_CHUNKS = [
    {"object": "error", "message": "CUDA out of memory", "type": "InternalServerError", "code": 500},
    {"text": "NETWORK ERROR DUE TO HIGH TRAFFIC", "error_code": 50001},
    {"detail": "upstream timeout"},
    {"message": "boom"},
    {"id": "chatcmpl-x", "object": "chat.completion.chunk", "model": "m"},
    {"choices": None, "usage": None, "error": None},
    {},
]


@pytest.mark.parametrize("after", [False, True], ids=["before the finish", "after the finish"])
@pytest.mark.parametrize("bare", BARE_CHUNKS, ids=[json.dumps(b)[:40] for b in BARE_CHUNKS])
def test_a_chunk_with_nothing_a_chunk_carries_is_malformed(impl: ModuleType, bare: dict[str, Any], after: bool) -> None:
    """A chunk without choices, usage or an error is no chunk: another
    server's error object in the stream is refused at ``$.choices``, never
    skipped while the calls around it are decided."""
    start = chunk({"role": "assistant", "tool_calls": [call(0, "call_1", "read_file", '{"path": "a"}')]})
    end = chunk(finish="tool_calls")
    events = [start, end, bare, "[DONE]"] if after else [start, bare, end, "[DONE]"]
    with pytest.raises(StreamError) as info:
        feed_sse(impl, events)
    error = info.value
    assert (error.code, error.path) == ("MALFORMED_EVENT", "$.choices")
    assert str(error) == (
        "MALFORMED_EVENT: chat.completion.chunk: the chunk has no choices, usage or error at $.choices"
    )
    assert feed_sse(impl, [start, end, "[DONE]"]).finish_reason == "tool_calls"  # the control


@pytest.mark.parametrize("alone", [False, True], ids=["mid-stream", "as the body"])
def test_an_error_given_as_a_string_is_a_provider_error(impl: ModuleType, alone: bool) -> None:
    """Hugging Face TGI's ``{"error": "...", "error_type": "..."}``: the
    provider's failure, not a malformed event."""
    failed = {"error": "Request failed during generation: Server error: CUDA out of memory", "error_type": "generation"}
    with pytest.raises(TransportError) as info:
        if alone:
            impl.normalize(json.dumps(failed), provider=PROVIDER)
        else:
            feed_sse(impl, [chunk({"content": "x"}), failed])
    assert (info.value.code, info.value.retryable) == ("PROVIDER_ERROR", False)
    assert info.value.message == "error: Request failed during generation: Server error: CUDA out of memory"


def test_feed_event_accepts_dicts_text_and_bytes(impl: ModuleType) -> None:
    events = [
        chunk({"content": "a"}),
        json.dumps(chunk({"content": "b"})),
        json.dumps(chunk(finish="stop")).encode(),
        "[DONE]",
    ]
    assert run_events(impl, PROVIDER, events).text == "ab"


def test_stream_and_body_of_one_generation_agree(impl: ModuleType) -> None:
    body = {
        "id": "chatcmpl-g",
        "model": "m",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": "Reading.",
                    "reasoning_content": "Need the file.",
                    "tool_calls": [
                        {"id": "c1", "type": "function", "function": {"name": "read", "arguments": '{"path": "a"}'}},
                        {"type": "function", "function": {"name": "list", "arguments": "{}"}},
                    ],
                },
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 2}},
    }
    chunks = [
        {
            "id": "chatcmpl-g",
            "model": "m",
            "choices": [{"index": 0, "delta": {"role": "assistant", "reasoning_content": "Need "}}],
        },
        {"id": "chatcmpl-g", "model": "m", "choices": [{"index": 0, "delta": {"reasoning_content": "the file."}}]},
        {"id": "chatcmpl-g", "model": "m", "choices": [{"index": 0, "delta": {"content": "Reading."}}]},
        {
            "id": "chatcmpl-g",
            "model": "m",
            "choices": [{"index": 0, "delta": {"tool_calls": [call(0, "c1", "read", '{"pa')]}}],
        },
        {
            "id": "chatcmpl-g",
            "model": "m",
            "choices": [{"index": 0, "delta": {"tool_calls": [call(0, None, None, 'th": "a"}')]}}],
        },
        {
            "id": "chatcmpl-g",
            "model": "m",
            "choices": [{"index": 0, "delta": {"tool_calls": [call(1, None, "list", "{}")]}}],
        },
        {"id": "chatcmpl-g", "model": "m", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        {"id": "chatcmpl-g", "model": "m", "choices": [], "usage": body["usage"]},
        "[DONE]",
    ]
    streamed = feed_sse(impl, chunks)
    whole = impl.normalize(json.dumps(body), provider=PROVIDER)
    assert streamed == whole
    assert [c.call_id_generated for c in whole.tool_calls] == [False, True]
    assert whole.usage is not None and whole.usage.cached_tokens == 2


# ---------------------------------------------------------------- differential


def _chat_events(path: str) -> list[Any]:
    from openai_recordings import FIXTURES

    data = (FIXTURES / path).read_text(encoding="utf-8")
    if path.endswith(".bin"):
        return [
            line[6:] if line[6:] == "[DONE]" else json.loads(line[6:])
            for line in data.splitlines()
            if line.startswith("data: ")
        ]
    return [json.loads(line) for line in data.splitlines() if line.strip()]


_BASES = [
    _chat_events(PARALLEL),
    _chat_events(VERCEL + "deepseek/src/chat/__fixtures__/deepseek-tool-call.chunks.txt")[-12:],
    _chat_events(VERCEL + "mistral/src/__fixtures__/mistral-reasoning.chunks.txt"),
    _chat_events(VERCEL + "openai/src/chat/__fixtures__/azure-model-router.1.chunks.txt"),
]


@given(data=st.data())
def test_damaged_streams_give_the_same_result_on_both_backends(
    both: tuple[ModuleType, ModuleType], data: st.DataObject
) -> None:
    native, pure = both
    base = data.draw(st.sampled_from(_BASES))
    events = data.draw(damaged(base))
    assert mutated_outcome(native, PROVIDER, events) == mutated_outcome(pure, PROVIDER, events)


def _fast_and_general(events: list[Any]) -> tuple[Any, Any]:
    """The pure backend's outcome (error message included) through its
    ``fast_delta`` path and through ``map_event`` (``keep_events=True``)."""
    from decisions import _pure

    def run(keep: bool) -> Any:
        try:
            assembler = _pure.StreamAssembler(PROVIDER, keep_events=keep)
            assembler.feed(sse(events))
            return assembler.finish()
        except OutputError as err:
            return (type(err).__name__, err.code, err.message)

    return run(False), run(True)


_OPEN_CALL = [
    chunk({"tool_calls": [call(0, id="c", name="f", arguments="{")]}),
    chunk({"tool_calls": [call(0, arguments='"a"')]}),
]
_OPEN_TEXT = [chunk({"content": "a"}), chunk({"content": "b"})]
_FAST_EDGES = {
    "text after finish": [*_OPEN_TEXT, chunk(finish="stop"), chunk({"content": "c"})],
    "arguments after finish": [
        *_OPEN_CALL,
        chunk(finish="tool_calls"),
        chunk({"tool_calls": [call(0, arguments="}")]}),
    ],
    "arguments after done": [
        *_OPEN_CALL,
        chunk(finish="tool_calls"),
        "[DONE]",
        chunk({"tool_calls": [call(0, arguments="}")]}),
    ],
    "unknown call index": [*_OPEN_CALL, chunk({"tool_calls": [call(5, arguments="}")]}), chunk(finish="tool_calls")],
    "index reused by another id": [
        *_OPEN_CALL,
        chunk({"tool_calls": [call(0, id="d", arguments="}")]}),
        chunk(finish="stop"),
    ],
    "empty name continues": [
        *_OPEN_CALL,
        chunk({"tool_calls": [call(0, name="", arguments="}")]}),
        chunk(finish="tool_calls"),
    ],
    "other name": [*_OPEN_CALL, chunk({"tool_calls": [call(0, name="g", arguments="}")]}), chunk(finish="tool_calls")],
    "other choice": [*_OPEN_TEXT, chunk({"content": "c"}, index=1), chunk(finish="stop")],
    "bool index": [
        *_OPEN_TEXT,
        {"id": "x", "choices": [{"index": True, "delta": {"content": "c"}}]},
        chunk(finish="stop"),
    ],
    "bool call index": [
        *_OPEN_CALL,
        chunk({"tool_calls": [{"index": False, "function": {"arguments": "}"}}]}),
        chunk(finish="stop"),
    ],
    "id not a string": [*_OPEN_TEXT, {**chunk({"content": "c"}), "id": 5}, chunk(finish="stop")],
    "model not a string": [*_OPEN_CALL, {**chunk({"tool_calls": [call(0, arguments="}")]}), "model": []}],
    "usage with a delta": [
        *_OPEN_TEXT,
        {**chunk({"content": "c"}), "usage": {"prompt_tokens": 1}},
        chunk(finish="stop"),
    ],
    "refusal with content": [*_OPEN_TEXT, chunk({"content": "c", "refusal": "no"}), chunk(finish="stop")],
    "reasoning with content": [*_OPEN_TEXT, chunk({"content": "c", "reasoning": 3}), chunk(finish="stop")],
    "content not a string": [*_OPEN_TEXT, chunk({"content": 3}), chunk(finish="stop")],
    "arguments not a string": [*_OPEN_CALL, chunk({"tool_calls": [{"index": 0, "function": {"arguments": 1}}]})],
    "two calls in one delta": [
        *_OPEN_CALL,
        chunk({"tool_calls": [call(0, arguments="}"), call(0, arguments="")]}),
        chunk(finish="stop"),
    ],
    "choices not a list": [*_OPEN_TEXT, {"id": "x", "choices": {"index": 0}}],
    "delta not an object": [*_OPEN_TEXT, {"id": "x", "choices": [{"index": 0, "delta": "c"}]}],
}


@pytest.mark.parametrize("events", list(_FAST_EDGES.values()), ids=list(_FAST_EDGES))
def test_fast_delta_path_edges(events: list[Any]) -> None:
    fast, general = _fast_and_general(events)
    assert fast == general


@given(data=st.data())
def test_fast_delta_path_maps_like_map_event(data: st.DataObject) -> None:
    """The pure mapper's ``fast_delta`` (taken unless events are kept) gives
    what ``map_event`` gives (taken with ``keep_events=True``), as raw SSE."""
    base = data.draw(st.sampled_from([*_BASES, *_FAST_EDGES.values()]))
    fast, general = _fast_and_general(data.draw(damaged(base)))
    assert fast == general


def _delta_stream(pieces: list[str]) -> bytes:
    """A Chat stream of one call whose arguments come in ``pieces`` (LF line ends)."""
    head = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice: dict[str, Any] = {"index": 0, "delta": delta}
        if finish is not None:
            choice["finish_reason"] = finish
        return b"data: " + json.dumps({**head, "choices": [choice]}).encode() + b"\n\n"

    start = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": ""}}
    out = [chunk({"role": "assistant"}), chunk({"tool_calls": [start]})]
    out += [chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}) for piece in pieces]
    out.append(chunk({}, "tool_calls"))
    return b"".join(out) + b"data: [DONE]\n\n"


_PIECES = ['{"pa', 'th": "', "src/a.", 'py"}']


@pytest.mark.parametrize(
    ("field", "value", "code"),
    [
        # 8 SSE events: the role, the call's start, 4 argument deltas, the finish, [DONE];
        # the canonical events they make pass the bound first (the decoder's
        # bound is met at the 8th event, after them in the stream)
        ("max_stream_events", 7, "TOO_MANY_EVENTS"),
        ("max_stream_events", 8, None),
        ("max_call_argument_bytes", 19, "ARGUMENTS_TOO_LARGE"),
        ("max_call_argument_bytes", 20, None),
        ("max_response_bytes", 19, "RESPONSE_TOO_LARGE"),
        ("max_response_bytes", 20, None),
    ],
)
def test_argument_deltas_at_each_limit(impl: ModuleType, field: str, value: int, code: str | None) -> None:
    """A Chat stream in small argument deltas (the decoder's, the mapper's
    and the assembler's per-event paths) meets each limit at its bound."""
    asm = impl.StreamAssembler(PROVIDER, limits=Limits(**{field: value}))
    data = _delta_stream(_PIECES)
    if code is None:
        asm.feed(data)
        (call,) = asm.finish().items
        assert call.arguments == "".join(_PIECES)
        return
    with pytest.raises(OutputError) as info:
        asm.feed(data)
        asm.finish()
    assert info.value.code == code
    if code.startswith("SSE_"):  # at the blank line that would dispatch the event beyond the limit
        assert info.value.offset == len(data) - 1
    assert asm.state == "failed"


@pytest.mark.parametrize("after", ["end", "failure"])
def test_argument_delta_after_the_call_or_the_stream_ended(impl: ModuleType, after: str) -> None:
    """A delta for a call after its finish is EVENT_AFTER_TERMINAL; any feed
    after a failure is STREAM_FAILED, on the delta path too."""
    asm = impl.StreamAssembler(PROVIDER)
    data = _delta_stream(_PIECES)
    if after == "end":
        body, done = data.rsplit(b"data: [DONE]", 1)
        late = _delta_stream(["x"]).split(b"\n\n")[2] + b"\n\n"
        with pytest.raises(OutputError) as info:
            asm.feed(body + late)
        assert info.value.code == "EVENT_AFTER_TERMINAL"
        return
    with pytest.raises(OutputError):  # a delta of a call never started
        asm.feed(data.split(b"\n\n")[2] + b"\n\n")
    with pytest.raises(StreamError) as info:
        asm.feed(data)
    assert info.value.code == "STREAM_FAILED"
