"""Gemini as real clients and servers send it, on both backends: the
JSON-array stream of ``streamGenerateContent`` without ``alt=sse``, chunks
after a ``finishReason`` and responses that never send one.

The array recordings in ``fixtures/reconstructed`` are vercel-ai's recorded
chunks framed as the REST endpoint frames them (see the fixtures README).
"""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import BACKENDS, FIXTURES
from decisions import Limits, decide
from decisions.errors import OutputError, StreamError
from decisions.types import NormalizedResponse

GOOGLE = FIXTURES / "vercel-ai" / "packages" / "google" / "src" / "__fixtures__"
ARRAYS = FIXTURES / "reconstructed"
NAMES = ("google-text", "google-tool-call")


def lines_of(name: str) -> list[str]:
    return [line for line in (GOOGLE / f"{name}.chunks.txt").read_text().splitlines() if line.strip()]


def as_sse(lines: list[str]) -> bytes:
    return "".join(f"data: {line}\r\n\r\n" for line in lines).encode()


def feed(impl: ModuleType, chunks: list[bytes], **options: Any) -> NormalizedResponse:
    assembler = impl.StreamAssembler("gemini", **options)
    for chunk in chunks:
        assembler.feed(chunk)
    response: NormalizedResponse = assembler.finish()
    return response


def outcome(impl: ModuleType, chunks: list[bytes], **options: Any) -> NormalizedResponse | tuple[str, int | None]:
    try:
        return feed(impl, chunks, **options)
    except OutputError as err:
        return err.code, err.offset


def split_every(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


# ---------------------------------------------------------------- 1. the JSON-array stream


@pytest.mark.parametrize("name", NAMES)
def test_the_array_stream_gives_what_its_sse_form_gives(impl: ModuleType, name: str) -> None:
    array = (ARRAYS / f"{name}.array.json").read_bytes()
    expected = feed(impl, [as_sse(lines_of(name))])
    for size in (1, 2, 3, 5, 64, len(array)):
        assert feed(impl, split_every(array, size)) == expected, size
    assert impl.normalize(array, provider="gemini") == expected


@pytest.mark.parametrize("name", NAMES)
def test_every_two_piece_split_of_the_array(impl: ModuleType, name: str) -> None:
    array = (ARRAYS / f"{name}.array.json").read_bytes()
    expected = feed(impl, [array])
    for at in range(0, len(array), 7):
        assert feed(impl, [array[:at], array[at:]]) == expected, at


@pytest.mark.parametrize("name", NAMES)
def test_an_array_cut_before_its_bracket_has_no_terminal(impl: ModuleType, name: str) -> None:
    array = (ARRAYS / f"{name}.array.json").read_bytes()
    for end in (1, len(array) // 2, len(array) - 3, len(array) - 1):
        with pytest.raises(StreamError) as caught:
            feed(impl, [array[:end]])
        assert (caught.value.code, caught.value.offset) == ("NO_TERMINAL_EVENT", end)


def test_array_framing_is_chosen_by_the_first_byte(impl: ModuleType) -> None:
    lines = lines_of("google-text")
    expected = feed(impl, [as_sse(lines)])
    compact = ("[" + ",".join(lines) + "]").encode()
    assert feed(impl, [b" \r\n\t", b"\n", compact, b"\r\n "]) == expected
    # SSE after leading blank lines is still SSE
    assert feed(impl, [b"\r\n\r\n", as_sse(lines)]) == expected
    # only Gemini streams may be arrays: elsewhere "[" starts a JSON document, no event stream
    chat = impl.StreamAssembler("openai-chat")
    chat.feed(compact)
    with pytest.raises(StreamError) as caught:
        chat.finish()
    assert (caught.value.code, caught.value.offset) == ("NOT_A_RESPONSE_BODY", 0)


#: the smallest chunk: an element the framing errors below are found after
_E = b'{"modelVersion":"m"}'


@pytest.mark.parametrize(
    ("data", "code", "offset"),
    [
        (b"[" + _E + b" " + _E + b"]", "MALFORMED_EVENT", len(_E) + 2),  # no comma
        (b"[" + _E + b",]", "MALFORMED_EVENT", len(_E) + 2),  # trailing comma
        (b"[" + _E + b'] {"x":1}', "MALFORMED_EVENT", len(_E) + 3),  # after the array
        (b'["text"]', "MALFORMED_EVENT", 1),  # an element must be an object
        (b"[,{}]", "MALFORMED_EVENT", 1),
        (b"[{}]", "MALFORMED_EVENT", None),  # an element with none of a chunk's members
        (b"[{]", "MALFORMED_EVENT", None),  # brackets balance but the element is not JSON
        (b'[{"a":"\xff"}]', "SSE_INVALID_UTF8", 7),
    ],
)
def test_a_broken_array(impl: ModuleType, data: bytes, code: str, offset: int | None) -> None:
    for chunks in ([data], split_every(data, 1)):
        got = outcome(impl, chunks)
        assert got == (code, offset), chunks


def test_array_limits_are_those_of_an_event(impl: ModuleType) -> None:
    line = lines_of("google-text")[0]
    array = f"[{line},\r\n{line}]".encode()
    small = Limits(max_sse_event_bytes=len(line) - 1)
    assert outcome(impl, split_every(array, 10), limits=small) == ("SSE_EVENT_TOO_LARGE", 1)
    # the first element alone makes more canonical events than that bound, and
    # it comes first in the stream: its error, in any chunking
    one = Limits(max_stream_events=1)
    assert outcome(impl, [array], limits=one) == outcome(impl, split_every(array, 1), limits=one)
    assert outcome(impl, [array], limits=one) == ("TOO_MANY_EVENTS", None)
    usage = b'[{"usageMetadata": {}},\r\n{}]'  # an element of one canonical event, then one too many
    assert outcome(impl, [usage], limits=one) == ("SSE_TOO_MANY_EVENTS", usage.index(b"{}]"))
    blank = b"[" + b" " * 65 + b"]"
    assert outcome(impl, [blank], limits=Limits(max_bytes_without_data=64)) == ("SSE_NO_DATA", 1)
    assert outcome(impl, [array], limits=Limits(max_stream_bytes=len(array) - 1))[0] == "SSE_STREAM_TOO_LARGE"


def test_each_element_passes_the_envelope_rule(impl: ModuleType) -> None:
    # a repeated key in an element is refused exactly as in an SSE event
    chunk = '{"responseId":"r","responseId":"r"}'
    sse = outcome(impl, [f"data: {chunk}\n\n".encode()])
    assert outcome(impl, [f"[{chunk}]".encode()]) == sse
    assert sse[0] == "MALFORMED_EVENT"


@settings(max_examples=60, deadline=None)
@given(cuts=st.lists(st.integers(min_value=0, max_value=4000), max_size=12))
def test_any_chunking_of_the_array(cuts: list[int]) -> None:
    array = (ARRAYS / "google-tool-call.array.json").read_bytes()
    points = sorted({c % (len(array) + 1) for c in cuts})
    chunks = [array[a:b] for a, b in zip([0, *points], [*points, len(array)])]
    for impl in BACKENDS.values():
        assert feed(impl, chunks) == feed(impl, [array])


# ---------------------------------------------------------------- 2. chunks after a finishReason


def _with_finish(line: str, reason: str) -> str:
    chunk = json.loads(line)
    chunk["candidates"][0]["finishReason"] = reason
    return json.dumps(chunk)


def test_older_vertex_models_say_stop_on_every_chunk(impl: ModuleType) -> None:
    lines = lines_of("google-text")
    expected = feed(impl, [as_sse(lines)])
    every = [_with_finish(line, "STOP") for line in lines]
    assert feed(impl, [as_sse(every)]) == expected
    assert impl.normalize("[" + ",".join(every) + "]", provider="gemini") == expected


def test_usage_after_the_finishing_chunk(impl: ModuleType) -> None:
    lines = lines_of("google-tool-call")
    last = json.loads(lines[-1])
    usage = json.dumps({"usageMetadata": {"promptTokenCount": 29, "candidatesTokenCount": 16}, "responseId": "x"})
    usage = usage.replace('"x"', json.dumps(last.get("responseId")))
    response = feed(impl, [as_sse([*lines, usage])])
    assert response.finish_reason == "tool_calls"
    assert response.usage is not None and response.usage.output_tokens == 16
    assert len(decide(response).calls) == 1  # type: ignore[union-attr]


@pytest.mark.parametrize("veto", ["MAX_TOKENS", "SAFETY", "MALFORMED_FUNCTION_CALL", "OTHER"])
def test_content_after_a_veto_keeps_it(impl: ModuleType, veto: str) -> None:
    lines = lines_of("google-text")
    vetoed = [_with_finish(lines[0], veto), *[_with_finish(line, "STOP") for line in lines[1:]]]
    response = feed(impl, [as_sse(vetoed)])
    assert response.raw_finish_reason == veto
    with pytest.raises(StreamError):
        decide(response)


def test_a_blocked_prompt_keeps_its_veto(impl: ModuleType) -> None:
    lines = lines_of("google-text")
    blocked = json.dumps(
        {"promptFeedback": {"blockReason": "SAFETY"}, "responseId": json.loads(lines[0])["responseId"]}
    )
    response = feed(impl, [as_sse([blocked, *lines])])
    assert (response.finish_reason, response.raw_finish_reason) == ("content_filter", "SAFETY")


def test_nothing_after_an_error(impl: ModuleType) -> None:
    lines = lines_of("google-text")
    error = json.dumps({"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}})
    assert outcome(impl, [as_sse([lines[0], error, lines[1]])]) == ("EVENT_AFTER_TERMINAL", None)


# ---------------------------------------------------------------- 7. no finishReason at all


def test_a_stream_without_finish_reason_is_unknown(impl: ModuleType) -> None:
    lines = lines_of("google-text")[:-1]
    for response in (feed(impl, [as_sse(lines)]), impl.normalize("[" + ",".join(lines) + "]", provider="gemini")):
        assert (response.finish_reason, response.raw_finish_reason) == ("unknown", None)
        assert response.text.startswith("There are **3**")
        with pytest.raises(StreamError) as caught:
            decide(response)
        assert caught.value.code == "UNKNOWN_FINISH_REASON"
        assert "no finish reason" in caught.value.message


def test_a_body_without_finish_reason_is_unknown(impl: ModuleType) -> None:
    body = json.loads((GOOGLE / "google-text.json").read_text())
    for candidate in body["candidates"]:
        candidate.pop("finishReason", None)
    response = impl.normalize(json.dumps(body), provider="gemini")
    assert (response.finish_reason, response.raw_finish_reason) == ("unknown", None)


def test_a_call_still_streaming_at_the_end_is_not_a_call(impl: ModuleType) -> None:
    lines = lines_of("google-stream-tool-call-arguments")
    open_call = [line for line in lines if '"willContinue":true' in line.replace(" ", "")]
    assert open_call
    got = outcome(impl, [as_sse(lines[: lines.index(open_call[0]) + 1])])
    assert isinstance(got, tuple)


# ---------------------------------------------------------------- whole and streamed arguments in one part

PARTIAL = [{"jsonPath": "$.unit", "stringValue": "celsius"}]


def _first_call(lines: list[str], **members: Any) -> list[str]:
    """The lines with ``members`` set in the first part's functionCall."""
    first = json.loads(lines[0])
    first["candidates"][0]["content"]["parts"][0]["functionCall"].update(members)
    return [json.dumps(first), *lines[1:]]


@pytest.mark.parametrize("will_continue", [True, False], ids=["streamed call", "whole call"])
@pytest.mark.parametrize("partial", [PARTIAL, []], ids=["partialArgs", "empty partialArgs"])
def test_a_function_call_with_args_and_partial_args_is_refused(
    impl: ModuleType, will_continue: bool, partial: list[Any]
) -> None:
    lines = _first_call(
        lines_of("google-stream-tool-call-arguments"),
        args={"location": "Paris"},
        partialArgs=partial,
        willContinue=will_continue,
    )
    with pytest.raises(OutputError) as caught:
        feed(impl, [as_sse(lines)])
    error = caught.value
    assert (error.code, error.path) == ("MALFORMED_EVENT", "$.candidates[0].content.parts[0].functionCall")
    assert error.message == "gemini functionCall holds both args and partialArgs"


def test_a_body_function_call_with_args_and_partial_args_is_refused(impl: ModuleType) -> None:
    body = json.loads((GOOGLE / "google-tool-call.json").read_text())
    body["candidates"][0]["content"]["parts"][0]["functionCall"]["partialArgs"] = PARTIAL
    with pytest.raises(OutputError) as caught:
        impl.normalize(json.dumps(body), provider="gemini")
    assert (caught.value.code, caught.value.path) == (
        "MALFORMED_EVENT",
        "$.candidates[0].content.parts[0].functionCall",
    )
    assert caught.value.message == "gemini functionCall holds both args and partialArgs"


def test_args_beside_null_partial_args_is_a_whole_call(impl: ModuleType) -> None:
    lines = lines_of("google-stream-tool-call-arguments")
    recorded = feed(impl, [as_sse(lines)])
    whole = _first_call(lines, args={}, partialArgs=None)
    assert feed(impl, [as_sse(whole)]) == recorded
