"""Inputs the fuzzers (``fuzz/``) once stopped on, kept with their expected
outcome on both backends.

None of them was a crash of the library: each showed where the strict parser
and serde_json place an error differently, or where the outcome of a stream
depends on its chunking, and the difference was checked and written down in
the fuzz target (``fuzz/src/json.rs``, ``fuzz/src/provider.rs``). They stay
here so the behaviour they pinned cannot drift. Crash inputs for a fuzz
target go in ``fuzz/regressions/<target>/``, which ``make fuzz`` replays
first; the ones that reach Python go here too.
"""

from __future__ import annotations

from dataclasses import replace
from types import ModuleType

import pytest

from decisions import DEFAULT_LIMITS, ParseError, StreamError
from decisions.errors import OutputError

SERDE_DEPTH = replace(DEFAULT_LIMITS, max_depth=127)

PARSER = [
    # json_compare: we blame the comma, serde_json the closing bracket.
    ("trailing comma before a bracket", b"[1, ]", None, "TRAILING_COMMA", 2),
    # json_compare: serde_json fails on its 128th nested container; with
    # whitespace between the brackets the positions only agree at depth 127.
    (
        "depth with newlines between brackets",
        b"[" * 7 + b"\n" * 6 + b"[" * 121 + b"1",
        SERDE_DEPTH,
        "DEPTH_EXCEEDED",
        133,
    ),
    ("same document, default depth", b"[" * 7 + b"\n" * 6 + b"[" * 121 + b"1", None, "DEPTH_EXCEEDED", 70),
    # json_compare: an integer beyond 64 bits is refused at its start, before
    # the stray "+-" after it is looked at (serde_json turns it into a float
    # and reports the "+").
    ("integer overflow before a stray sign", b"[-" + b"1" * 69 + b"+-1]", None, "NUMBER_OUT_OF_RANGE", 1),
]


@pytest.mark.parametrize(("name", "data", "limits", "code", "offset"), PARSER, ids=[p[0] for p in PARSER])
def test_parser_regressions(impl: ModuleType, name: str, data: bytes, limits: object, code: str, offset: int) -> None:
    with pytest.raises(ParseError) as info:
        impl.loads(data, limits=limits)
    assert (info.value.code, info.value.offset) == (code, offset)


MALFORMED_THEN_BAD_UTF8 = b'event: message_start\ndata: {"type":"message_start"}\n\ndata: \xff\n\n'


@pytest.mark.parametrize(
    ("split", "code"),
    [
        # provider_*: one chunk holding a malformed event and, later, invalid
        # UTF-8 failed on the framing (the chunk was framed before any of its
        # events was mapped), while split after the first event the mapping
        # failed first. Events are now mapped in byte order: the malformed
        # event's error comes first in any chunking, on both backends.
        (None, "MALFORMED_EVENT"),
        (53, "MALFORMED_EVENT"),
    ],
)
def test_chain_error_does_not_depend_on_chunking(impl: ModuleType, split: int | None, code: str) -> None:
    data = MALFORMED_THEN_BAD_UTF8
    pieces = [data] if split is None else [data[:split], data[split:]]
    assembler = impl.StreamAssembler("anthropic")
    with pytest.raises(StreamError) as info:
        for piece in pieces:
            assembler.feed(piece)
    assert info.value.code == code
    assert assembler.state == "failed"
    with pytest.raises(OutputError):
        assembler.finish()


@pytest.mark.parametrize(
    "pieces",
    [
        [b": a\r\n: b\r\n: c\r\n"],
        [b": a\r", b"\n: b\r", b"\n: c\r", b"\n"],
        [bytes([b]) for b in b": a\r\n: b\r\n: c\r\n"],
    ],
    ids=["whole", "split-crlf", "bytes"],
)
def test_no_data_counts_a_split_crlf_once(impl: ModuleType, pieces: list[bytes]) -> None:
    """sse_chunking: the LF of a CRLF that arrived in the next chunk was
    skipped without being counted toward ``max_bytes_without_data``, so the
    limit was crossed one line later (a later offset) than in one chunk."""
    decoder = impl.SSEDecoder(limits=replace(DEFAULT_LIMITS, max_bytes_without_data=9))
    with pytest.raises(StreamError) as info:
        for piece in pieces:
            decoder.feed(piece)
    assert (info.value.code, info.value.offset) == ("SSE_NO_DATA", 5)
