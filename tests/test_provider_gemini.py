"""Google Gemini (generateContent / streamGenerateContent) against every
recording of it, on both backends.

Recordings come as one chunk JSON per line (``feed_event``), as whole bodies
(``normalize``), and are also replayed as ``alt=sse`` bytes with CRLF line ends
(``feed``): all three must give the same response.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import FIXTURES
from decisions.errors import OutputError, ParseError, StreamError, TransportError
from decisions.types import NormalizedResponse, ReasoningItem
from json_values import nodes

GOOGLE = FIXTURES / "vercel-ai" / "packages" / "google" / "src" / "__fixtures__"
CHUNKS = sorted(GOOGLE.glob("*.chunks.txt"))
BODIES = sorted(GOOGLE.glob("*.json"))


def lines_of(path: Path) -> list[str]:
    return [line for line in path.read_text().splitlines() if line.strip()]


def as_sse(lines: list[str]) -> bytes:
    """Chunks framed as ``streamGenerateContent?alt=sse`` sends them (CRLF)."""
    return "".join(f"data: {line}\r\n\r\n" for line in lines).encode()


def stream(impl: ModuleType, lines: list[str], **options: Any) -> NormalizedResponse:
    assembler = impl.StreamAssembler("gemini", **options)
    for line in lines:
        assembler.feed_event(line)
    response: NormalizedResponse = assembler.finish()
    return response


def stream_bytes(impl: ModuleType, data: bytes, **options: Any) -> NormalizedResponse:
    assembler = impl.StreamAssembler("gemini", **options)
    assembler.feed(data)
    response: NormalizedResponse = assembler.finish()
    return response


def body(impl: ModuleType, data: bytes | str, **options: Any) -> NormalizedResponse:
    response: NormalizedResponse = impl.normalize(data, provider="gemini", **options)
    return response


def outcome(run: Callable[[], NormalizedResponse]) -> NormalizedResponse | OutputError:
    try:
        return run()
    except OutputError as error:
        return error


def key(result: NormalizedResponse | OutputError) -> object:
    if isinstance(result, OutputError):
        return (type(result).__name__, result.code, result.offset, result.retryable)
    return result


def chunk(parts: list[dict[str, Any]], finish: str | None = None, response_id: str = "resp-1", **extra: Any) -> str:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}}
    if finish is not None:
        candidate["finishReason"] = finish
    return json.dumps({"candidates": [candidate], "modelVersion": "gemini-test", "responseId": response_id, **extra})


USAGE = {"promptTokenCount": 10, "candidatesTokenCount": 4, "thoughtsTokenCount": 6, "cachedContentTokenCount": 2}

# ------------------------------------------------------------------ every recording


@pytest.mark.parametrize("path", CHUNKS, ids=[p.name for p in CHUNKS])
def test_every_stream_recording_gives_a_response(impl: ModuleType, path: Path) -> None:
    lines = lines_of(path)
    response = stream(impl, lines)
    assert response.provider == "gemini"
    assert response.response_id == json.loads(lines[0])["responseId"]
    assert response.model == json.loads(lines[0])["modelVersion"]
    assert response.raw_finish_reason == "STOP"
    assert response.finish_reason == ("tool_calls" if response.tool_calls else "stop")
    for k, call in enumerate(response.tool_calls):
        assert call.call_id == f"{response.response_id}:call_{k}" and call.call_id_generated
        assert call.complete and isinstance(json.loads(call.arguments), dict)
    # the same chunks as alt=sse bytes with CRLF line ends give the same response
    assert stream_bytes(impl, as_sse(lines)) == response
    # and as the JSON array streamGenerateContent returns without alt=sse
    assert body(impl, "[" + ",".join(lines) + "]") == response


@pytest.mark.parametrize("path", BODIES, ids=[p.name for p in BODIES])
def test_every_body_recording_is_a_response_or_a_named_error(impl: ModuleType, path: Path) -> None:
    result = outcome(lambda: body(impl, path.read_bytes()))
    if path.name == "google-429-retry-info.json":
        assert isinstance(result, TransportError)
        assert (result.code, result.retryable) == ("PROVIDER_ERROR", True)
        assert result.message.startswith("RESOURCE_EXHAUSTED")
        return
    assert isinstance(result, NormalizedResponse), result
    raw = json.loads(path.read_bytes())
    assert result.response_id == raw["responseId"] and result.raw_finish_reason == "STOP"
    (candidate,) = raw["candidates"]
    expected_calls = [p["functionCall"] for p in candidate["content"]["parts"] if "functionCall" in p]
    assert [(c.name, json.loads(c.arguments)) for c in result.tool_calls] == [
        (fc["name"], fc.get("args", {})) for fc in expected_calls
    ]
    expected_text = "".join(p.get("text", "") for p in candidate["content"]["parts"] if not p.get("thought"))
    assert result.text == expected_text


@pytest.mark.parametrize("path", CHUNKS + BODIES, ids=[p.name for p in CHUNKS + BODIES])
def test_backends_agree_on_every_recording(both: tuple[ModuleType, ModuleType], path: Path) -> None:
    native, pure = both
    if path.name.endswith(".chunks.txt"):
        lines = lines_of(path)
        assert key(outcome(lambda: stream(native, lines))) == key(outcome(lambda: stream(pure, lines)))
    else:
        data = path.read_bytes()
        assert key(outcome(lambda: body(native, data))) == key(outcome(lambda: body(pure, data)))


def test_every_gemini_recording_is_covered() -> None:
    tagged = {
        cols[1]
        for cols in (line.split("\t") for line in (FIXTURES / "FEATURES.tsv").read_text().splitlines()[1:])
        if cols[3] == "gemini"
    }
    covered = {p.relative_to(FIXTURES).as_posix() for p in CHUNKS + BODIES}
    assert tagged <= covered, tagged - covered


# ------------------------------------------------------------------ notable recordings


def test_streamed_function_call_arguments(impl: ModuleType) -> None:
    response = stream(impl, lines_of(GOOGLE / "google-stream-tool-call-arguments.chunks.txt"))
    assert [(c.name, json.loads(c.arguments)) for c in response.tool_calls] == [
        ("getWeather", {"location": "Boston"}),
        ("getWeather", {"location": "San Francisco"}),
    ]
    # the thought signature on the first call part is kept, just before the call
    assert isinstance(response.items[0], ReasoningItem) and response.items[0].signature
    assert response.usage is not None and response.usage.reasoning_tokens == 132


def test_streamed_arguments_without_a_closing_part(impl: ModuleType) -> None:
    name = "google-stream-tool-call-array-arguments-missing-terminal-function-call.chunks.txt"
    (call,) = stream(impl, lines_of(GOOGLE / name)).tool_calls
    assert json.loads(call.arguments) == {
        "operations": [
            {"action": "add", "description": "Fresh red apple", "itemid": "apple_001", "price": 0.5},
            {"action": "add", "description": "Ripe yellow banana", "itemid": "banana_001", "price": 0.3},
        ]
    }


def test_nested_streamed_arguments(impl: ModuleType) -> None:
    (call,) = stream(impl, lines_of(GOOGLE / "google-vertex-stream-tool-call-arguments-nested.1.chunks.txt")).tool_calls
    args = json.loads(call.arguments)
    assert call.name == "cookRecipe"
    recipe = args["recipe"]
    assert sorted(recipe) == ["ingredients", "name", "steps"] and recipe["name"] == "Lasagna"
    assert len(recipe["ingredients"]) == 10 and len(recipe["steps"]) == 10
    assert recipe["ingredients"][0] == {"amount": "16 oz", "name": "Lasagna noodles"}
    assert recipe["ingredients"][-1] == {"amount": "1/2 tsp", "name": "Pepper"}
    assert recipe["steps"][0] == "Preheat oven to 375°F (190°C)."


def test_parallel_calls_and_a_call_without_arguments(impl: ModuleType) -> None:
    response = stream(impl, lines_of(GOOGLE / "google-stream-no-args-tool-call.chunks.txt"))
    assert [(c.name, c.arguments) for c in response.tool_calls] == [
        ("read_theme", "{}"),
        ("read_screen", '{"id":"A"}'),
        ("read_screen", '{"id":"B"}'),
        ("read_screen", '{"id":"C"}'),
    ]
    assert len({c.call_id for c in response.tool_calls}) == 4
    assert response.finish_reason == "tool_calls"


def test_thought_parts_are_reasoning(impl: ModuleType) -> None:
    lines = lines_of(GOOGLE / "google-stream-no-args-tool-call.chunks.txt")
    response = stream(impl, lines)
    first = response.items[0]
    assert isinstance(first, ReasoningItem)
    assert first.text.startswith("**Processing User Requests**")


def test_usage_is_normalized(impl: ModuleType) -> None:
    response = stream(impl, [chunk([{"text": "hi"}], "STOP", usageMetadata=USAGE)])
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (10, 10)
    assert (response.usage.cached_tokens, response.usage.reasoning_tokens) == (2, 6)


# ------------------------------------------------------------------ finish reasons and blocks


@pytest.mark.parametrize(
    "raw, normalized",
    [
        ("STOP", "stop"),
        ("MAX_TOKENS", "length"),
        ("SAFETY", "content_filter"),
        ("RECITATION", "content_filter"),
        ("BLOCKLIST", "content_filter"),
        ("PROHIBITED_CONTENT", "content_filter"),
        ("SPII", "content_filter"),
        ("MALFORMED_FUNCTION_CALL", "error"),
        ("OTHER", "unknown"),
        ("FINISH_REASON_UNSPECIFIED", "unknown"),
    ],
)
def test_finish_reasons_keep_the_raw_value(impl: ModuleType, raw: str, normalized: str) -> None:
    response = stream(impl, [chunk([{"text": "Hel"}]), chunk([{"text": "lo"}], raw)])
    assert (response.finish_reason, response.raw_finish_reason) == (normalized, raw)
    assert response.text == "Hello"


def test_max_tokens_from_a_recording(impl: ModuleType) -> None:
    lines = lines_of(GOOGLE / "google-text.chunks.txt")
    last = json.loads(lines[-1])
    last["candidates"][0]["finishReason"] = "MAX_TOKENS"
    response = stream(impl, [*lines[:-1], json.dumps(last)])
    assert (response.finish_reason, response.raw_finish_reason) == ("length", "MAX_TOKENS")


def test_safety_mid_stream(impl: ModuleType) -> None:
    lines = lines_of(GOOGLE / "google-text.chunks.txt")
    cut = json.loads(lines[0])
    cut["candidates"][0]["finishReason"] = "SAFETY"
    cut["candidates"][0]["safetyRatings"] = [
        {"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": True}
    ]
    response = stream(impl, [json.dumps(cut)])
    assert (response.finish_reason, response.raw_finish_reason) == ("content_filter", "SAFETY")


def test_prompt_blocked(impl: ModuleType) -> None:
    blocked = json.dumps(
        {"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}, "responseId": "r", "modelVersion": "m"}
    )
    for response in (stream(impl, [blocked]), body(impl, blocked)):
        assert (response.finish_reason, response.raw_finish_reason) == ("content_filter", "PROHIBITED_CONTENT")
        assert response.items == ()


def test_a_stream_without_finish_reason_is_unknown(impl: ModuleType) -> None:
    lines = lines_of(GOOGLE / "google-text.chunks.txt")
    response = stream(impl, lines[:-1])
    assert (response.finish_reason, response.raw_finish_reason) == ("unknown", None)


def test_a_different_response_id_mid_stream(impl: ModuleType) -> None:
    with pytest.raises(StreamError) as caught:
        stream(impl, [chunk([{"text": "a"}], response_id="one"), chunk([{"text": "b"}], "STOP", response_id="two")])
    assert caught.value.code == "DUPLICATE_START"


def test_error_chunk_mid_stream(impl: ModuleType) -> None:
    error = json.dumps({"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}})
    with pytest.raises(TransportError) as caught:
        stream(impl, [chunk([{"text": "par"}]), error])
    assert (caught.value.code, caught.value.retryable) == ("PROVIDER_ERROR", True)
    bad = json.dumps({"error": {"code": 400, "message": "bad", "status": "INVALID_ARGUMENT"}})
    with pytest.raises(TransportError) as caught:
        body(impl, bad)
    assert caught.value.retryable is False


# ------------------------------------------------------------------ calls and ids


def test_provider_call_ids_are_kept(impl: ModuleType) -> None:
    response = stream(
        impl, [chunk([{"functionCall": {"id": "fc-7", "name": "f", "args": {"b": 1, "a": [True, None]}}}], "STOP")]
    )
    (call,) = response.tool_calls
    assert (call.call_id, call.call_id_generated, call.arguments) == ("fc-7", False, '{"a":[true,null],"b":1}')


def test_generated_ids_without_a_response_id(impl: ModuleType) -> None:
    line = json.dumps(
        {"candidates": [{"content": {"parts": [{"functionCall": {"name": "f"}}]}, "finishReason": "STOP"}]}
    )
    (call,) = stream(impl, [line]).tool_calls
    assert (call.call_id, call.call_id_generated) == ("call_0", True)


def test_several_candidates_need_a_choice(impl: ModuleType) -> None:
    two = json.dumps(
        {
            "responseId": "r",
            "candidates": [
                {"index": 0, "content": {"parts": [{"text": "zero"}]}, "finishReason": "STOP"},
                {"index": 1, "content": {"parts": [{"text": "one"}]}, "finishReason": "STOP"},
            ],
        }
    )
    with pytest.raises(StreamError) as caught:
        body(impl, two)
    assert caught.value.code == "MULTIPLE_CHOICES"
    assert body(impl, two, choice=1).text == "one"


MALFORMED = {
    "args as a list": {"functionCall": {"name": "f", "args": [1]}},
    "name as a number": {"functionCall": {"name": 5}},
    "call without a name": {"functionCall": {"args": {}}},
    "text and a call": {"text": "x", "functionCall": {"name": "f"}},
    "thought as a string": {"text": "x", "thought": "yes"},
    "partial without a value": {"functionCall": {"name": "f", "partialArgs": [{"jsonPath": "$.a"}]}},
    "partial with a bad path": {"functionCall": {"name": "f", "partialArgs": [{"jsonPath": "a", "stringValue": "x"}]}},
    "partial assigning twice": {
        "functionCall": {
            "name": "f",
            "partialArgs": [{"jsonPath": "$.a", "boolValue": True}, {"jsonPath": "$.a", "boolValue": False}],
        }
    },
    "partial with a gap in an array": {
        "functionCall": {"name": "f", "partialArgs": [{"jsonPath": "$.a[1]", "nullValue": None}]}
    },
}


@pytest.mark.parametrize("part", list(MALFORMED.values()), ids=list(MALFORMED))
def test_known_parts_with_the_wrong_shape_are_malformed(impl: ModuleType, part: dict[str, Any]) -> None:
    with pytest.raises(StreamError) as caught:
        stream(impl, [chunk([part], "STOP")])
    assert caught.value.code == "MALFORMED_EVENT"


@pytest.mark.parametrize("part", list(MALFORMED.values()), ids=list(MALFORMED))
def test_a_malformed_part_names_its_path_in_what_it_shows(impl: ModuleType, part: dict[str, Any]) -> None:
    """The path an error is located at is in its text too (a partialArgs
    entry's jsonPath was set on the pure error after it was made)."""
    with pytest.raises(StreamError) as caught:
        stream(impl, [chunk([part], "STOP")])
    error = caught.value
    assert error.path is not None and str(error) == f"MALFORMED_EVENT: {error.message} at {error.path}"


@pytest.mark.parametrize("part", list(MALFORMED.values()), ids=list(MALFORMED))
def test_a_malformed_part_is_shown_alike(both: tuple[ModuleType, ModuleType], part: dict[str, Any]) -> None:
    shown = []
    for impl in both:
        with pytest.raises(StreamError) as caught:
            stream(impl, [chunk([part], "STOP")])
        shown.append((str(caught.value), repr(caught.value), caught.value.to_dict()))
    assert shown[0] == shown[1]


#: Chunks with none of candidates, promptFeedback, usageMetadata, modelVersion
#: or error: a gateway's error object, an empty object.
BARE_CHUNKS = [{"detail": "upstream timeout"}, {"message": "boom"}, {"responseId": "resp-1"}, {"candidates": None}, {}]


@pytest.mark.parametrize("framing", ["events", "sse", "array"])
@pytest.mark.parametrize("after", [False, True], ids=["before the finish", "after the finish"])
@pytest.mark.parametrize("bare", BARE_CHUNKS, ids=[json.dumps(b) for b in BARE_CHUNKS])
def test_a_chunk_with_nothing_a_chunk_carries_is_malformed(
    impl: ModuleType, bare: dict[str, Any], after: bool, framing: str
) -> None:
    """Another server's error object in a stream is no chunk: refused at
    ``$.candidates``, never skipped while the call beside it is decided."""
    call = chunk([{"functionCall": {"name": "read_file", "args": {"path": "a"}}}])
    end = chunk([{"text": ""}], "STOP")
    lines = [call, end, json.dumps(bare)] if after else [call, json.dumps(bare), end]
    data = {
        "events": None,
        "sse": "".join(f"data: {line}\n\n" for line in lines).encode(),
        "array": ("[" + ",\r\n".join(lines) + "]").encode(),
    }[framing]
    with pytest.raises(StreamError) as caught:
        stream(impl, lines) if data is None else stream_bytes(impl, data)
    error = caught.value
    assert (error.code, error.path) == ("MALFORMED_EVENT", "$.candidates")
    assert error.message == "gemini chunk has none of candidates, promptFeedback, usageMetadata, modelVersion or error"
    assert stream(impl, [call, end]).finish_reason == "tool_calls"  # the control


def test_streamed_call_interrupted_by_text_is_malformed(impl: ModuleType) -> None:
    with pytest.raises(StreamError) as caught:
        stream(impl, [chunk([{"functionCall": {"name": "f", "willContinue": True}}]), chunk([{"text": "x"}], "STOP")])
    assert caught.value.code == "MALFORMED_EVENT"


def test_other_part_kinds_are_counted(impl: ModuleType) -> None:
    parts = [{"executableCode": {"language": "PYTHON", "code": "1+1"}}, {"text": "2"}]
    response = stream(impl, [chunk(parts, "STOP")])
    assert response.unknown_events == {"part:executableCode": 1}
    assert response.text == "2"


def test_the_callers_payload_is_not_mutated(impl: ModuleType) -> None:
    first = {
        "candidates": [
            {"content": {"parts": [{"functionCall": {"name": "f", "args": {"a": "x"}, "willContinue": True}}]}}
        ]
    }
    second = {
        "candidates": [
            {
                "content": {"parts": [{"functionCall": {"partialArgs": [{"jsonPath": "$.b", "numberValue": 2}]}}]},
                "finishReason": "STOP",
            }
        ]
    }
    saved = copy.deepcopy(first)
    assembler = impl.StreamAssembler("gemini")
    assembler.feed_event(first)
    assembler.feed_event(second)
    (call,) = assembler.finish().tool_calls
    assert call.arguments == '{"a":"x","b":2}'
    assert first == saved


# ------------------------------------------------------------------ differential fuzzing

_MUTANTS = [None, 0, 1, -1, 1.5, "", "x", "STOP", "$.a", "$.a[0]", "NULL_VALUE", [], {}, True, {"text": "y"}]
_ALL_LINES = [lines_of(p) for p in CHUNKS]


@st.composite
def mutated(draw: Callable[..., Any]) -> list[str]:
    lines = list(draw(st.sampled_from(_ALL_LINES)))
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(lines) - 1))
        value = json.loads(lines[i])
        path = draw(st.sampled_from(nodes(value)))
        if path:
            parent = value
            for step in path[:-1]:
                parent = parent[step]
            if draw(st.booleans()):
                del parent[path[-1]]
            else:
                parent[path[-1]] = draw(st.sampled_from(_MUTANTS))
        lines[i] = json.dumps(value)
    return lines


@given(lines=mutated())
def test_backends_agree_on_mutated_recordings(both: tuple[ModuleType, ModuleType], lines: list[str]) -> None:
    native, pure = both
    assert key(outcome(lambda: stream(native, lines))) == key(outcome(lambda: stream(pure, lines)))


@pytest.mark.parametrize(
    "args, text",
    [
        ('{"id":18446744073709551615,"x":[1.0,-0,2.50]}', '{"id":18446744073709551615,"x":[1.0,0,2.5]}'),
        ('{"b":1e16,"a":0.00001}', '{"a":1e-05,"b":1e+16}'),
    ],
    ids=["u64-exact", "floats-as-python-repr"],
)
def test_args_are_canonical_and_exact(impl: ModuleType, args: str, text: str) -> None:
    line = (
        '{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":%s}}]},"finishReason":"STOP"}]}' % args
    )
    (call,) = stream(impl, [line]).tool_calls
    assert call.arguments == text


@pytest.mark.parametrize("number", ["123456789012345678901234567890", "18446744073709551615", "2.50", "1e400"])
def test_streamed_numbers_are_exact(impl: ModuleType, number: str) -> None:
    lines = [
        '{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","willContinue":true}}]}}]}',
        '{"candidates":[{"content":{"parts":[{"functionCall":{"partialArgs":[{"jsonPath":"$.a","numberValue":%s}]}}]},'
        '"finishReason":"STOP"}]}' % number,
    ]
    if number in ("1e400", "123456789012345678901234567890"):
        with pytest.raises(ParseError) as caught:
            stream(impl, lines)
        path = "$.candidates[0].content.parts[0].functionCall.partialArgs[0].numberValue"
        assert (caught.value.code, caught.value.path) == ("NUMBER_OUT_OF_RANGE", path)
    else:
        (call,) = stream(impl, lines).tool_calls
        assert call.arguments == '{"a":%s}' % ("2.5" if number == "2.50" else number)
