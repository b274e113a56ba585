"""Stream framing at its edges, on both backends, with the results written
out (the mutation run sees the pure backend alone): Gemini's JSON-array
stream told from SSE by its first byte other than whitespace (a BOM and
whitespace before it, any chunking), and its errors with their offsets."""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import pytest

from decisions import Limits, StreamError


def _chunk(text: str, finish: str | None = None) -> str:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": [{"text": text}]}}
    if finish:
        candidate["finishReason"] = finish
    return json.dumps({"candidates": [candidate], "modelVersion": "g", "responseId": "r1"})


FIRST, LAST = _chunk("hi"), _chunk(" there", "STOP")
ARRAY = ("[" + FIRST + ",\r\n" + LAST + "]").encode()
SSE = f"data: {FIRST}\r\n\r\ndata: {LAST}\n\n".encode()


def gemini(impl: ModuleType, chunks: list[bytes]) -> Any:
    assembler = impl.StreamAssembler("gemini")
    try:
        for chunk in chunks:
            assembler.feed(chunk)
        response = assembler.finish()
    except StreamError as error:
        return (error.code, error.offset)
    return (response.text, response.finish_reason)


@pytest.mark.parametrize(
    "chunks",
    [
        [ARRAY],
        [b"  \r\n", b"\n ", ARRAY],
        [b"\xef\xbb\xbf" + ARRAY],
        [b"\xef", b"\xbb", b"\xbf  ", ARRAY],
        [bytes([byte]) for byte in ARRAY],
        [SSE],
        [b"\r\n", SSE],
        [b"\xef\xbb\xbf", b" \n", SSE],
        [bytes([byte]) for byte in SSE],
    ],
)
def test_the_framing_is_chosen_by_the_first_byte_other_than_whitespace(impl: ModuleType, chunks: list[bytes]) -> None:
    assert gemini(impl, chunks) == ("hi there", "stop")


@pytest.mark.parametrize(
    ("chunks", "expected"),
    [
        ([b"  \r\n"], ("NO_TERMINAL_EVENT", None)),
        ([ARRAY[:-1]], ("NO_TERMINAL_EVENT", len(ARRAY) - 1)),
        ([b"[1x"], ("MALFORMED_EVENT", 1)),
        ([b" \n", b"[1x"], ("MALFORMED_EVENT", 3)),
        ([b" \n[1x"], ("MALFORMED_EVENT", 3)),
        ([b"\xef\xbb\xbf[1x"], ("MALFORMED_EVENT", 4)),
        ([ARRAY + b"x"], ("MALFORMED_EVENT", len(ARRAY))),
    ],
)
def test_array_stream_errors_and_their_offsets(impl: ModuleType, chunks: list[bytes], expected: Any) -> None:
    assert gemini(impl, chunks) == expected


def test_a_failed_array_stream_stays_failed(impl: ModuleType) -> None:
    assembler = impl.StreamAssembler("gemini")
    with pytest.raises(StreamError):
        assembler.feed(b"[1x")
    for again in (lambda: assembler.feed(b"]"), assembler.finish):
        with pytest.raises(StreamError) as info:
            again()
        assert (info.value.code, info.value.message) == (
            "STREAM_FAILED",
            "the stream already failed (MALFORMED_EVENT)",
        )


def test_an_array_stream_counts_toward_the_stream_bound(impl: ModuleType) -> None:
    third = len(ARRAY) // 3
    chunks = [ARRAY[:third], ARRAY[third : 2 * third], ARRAY[2 * third :]]
    assembler = impl.StreamAssembler("gemini", limits=Limits(max_stream_bytes=len(ARRAY) - 1))
    with pytest.raises(StreamError) as info:
        for chunk in chunks:
            assembler.feed(chunk)
    assert (info.value.code, info.value.offset) == ("SSE_STREAM_TOO_LARGE", len(ARRAY) - 1)
    assembler = impl.StreamAssembler("gemini", limits=Limits(max_stream_bytes=len(ARRAY)))
    for chunk in chunks:
        assembler.feed(chunk)
    assert assembler.finish().text == "hi there"


def test_the_plain_decoder_never_reads_a_json_array(impl: ModuleType) -> None:
    """Only a provider that streams an array (Gemini) looks for one: for the
    plain decoder a line starting with ``[`` is a field name like any other."""
    decoder = impl.SSEDecoder()
    events = decoder.feed(b"[1]\ndata: x\n\n") + decoder.finish()
    assert [(e.event, e.data, e.id, e.retry) for e in events] == [("message", "x", None, None)]
