"""The first error of a stream, and everything decided before it, do not
depend on how its bytes were chunked.

Every recorded stream under tests/fixtures (raw SSE, one-event-per-line
recordings written as SSE, and Gemini's JSON-array stream) is cut after event
``k`` (or inside event ``k + 1``) and given a framing fault there (invalid
UTF-8, an over-long line, an event too large, one event too many, the stream
too long, a byte order mark, a stray JSON document), with event ``k``
optionally replaced by an event that is an error of its own (a malformed
event, a provider's error, a refused role). Each stream is fed whole, byte by
byte, split at the fault and in seeded random chunks, to a named provider's
assembler and to ``StreamAssembler()`` (the provider detected), on both
backends: the outcome (the error's ``to_dict()`` and whether ``feed`` or
``finish`` raised it, else the response) and the canonical events produced
before it must be the same in every chunking and on every backend. The rule:
events are mapped in byte order, so an event complete before the byte at
fault is mapped (and its own error wins) before the framing error is raised.
"""

from __future__ import annotations

import json
import random
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from conftest import BACKENDS
from decisions import Limits, OutputError, detect
from decisions.types import NormalizedResponse

FIXTURES = Path(__file__).parent / "fixtures"

#: FEATURES.tsv's api -> the provider id
_APIS = {
    "openai-chat": "openai-chat",
    "openai-responses": "openai-responses",
    "anthropic-messages": "anthropic",
    "gemini": "gemini",
}

#: per provider, the data of events that are an error of their own
ERROR_EVENTS: dict[str, tuple[str, ...]] = {
    "openai-chat": (
        '{"error": {"message": "m", "type": "server_error", "code": "502"}}',
        '{"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"role": "user"}}]}',
    ),
    "openai-responses": ('{"type": "error", "code": "server_error", "message": "m", "sequence_number": 1}',),
    "anthropic": ('{"type": "error", "error": {"type": "overloaded_error", "message": "m"}}',),
    "gemini": ('{"error": {"code": 503, "message": "m", "status": "UNAVAILABLE"}}',),
}
#: an event every provider refuses: a repeated key
MALFORMED = '{"type": "x", "type": "y"}'


@dataclass
class Stream:
    """A stream's events (data texts, with their ``event:`` names) and how it is framed."""

    name: str
    provider: str
    events: list[tuple[str | None, str]]
    array: bool = False
    ids: list[str] = field(default_factory=list)


def _sse_events(data: bytes) -> list[tuple[str | None, str]]:
    """A raw SSE recording's events (a recording is valid SSE)."""
    from decisions._pure.sse import SSEDecoder

    decoder = SSEDecoder()
    events = decoder.feed(data) + decoder.feed(b"\n\n")  # some lack their last blank line
    return [(None if e.event == "message" else e.event, e.data) for e in events]


def recorded_streams() -> list[Stream]:
    """Every recorded stream of the four providers, as events."""
    import csv

    streams = []
    rows = csv.DictReader((FIXTURES / "FEATURES.tsv").read_text(encoding="utf-8").splitlines(), delimiter="\t")
    for row in rows:
        provider = _APIS.get(row["api"])
        if provider is None or row["file_format"] not in ("raw-sse", "jsonl"):
            continue
        data = (FIXTURES / row["path"]).read_bytes()
        if row["file_format"] == "raw-sse":
            events = _sse_events(data)
        else:
            events = [(None, line) for line in data.decode().splitlines() if line.strip()]
        name = row["path"].rsplit("/", 1)[-1]
        streams.append(Stream(name, provider, events))
        if provider == "gemini":  # the same chunks as one JSON array
            streams.append(Stream(name + "[array]", provider, events, array=True))
    for path in sorted((FIXTURES / "reconstructed").glob("*.array.json")):
        elements = json.loads(path.read_bytes())
        streams.append(Stream(path.name, "gemini", [(None, json.dumps(e)) for e in elements], array=True))
    return streams


def frame(stream: Stream, events: list[tuple[str | None, str]]) -> bytes:
    """``events`` written as the stream writes them (each event complete)."""
    if stream.array:
        return b"[" + b"".join((b"" if i == 0 else b",\r\n") + d.encode() for i, (_, d) in enumerate(events))
    out = []
    for name, data in events:
        head = f"event: {name}\n" if name else ""
        out.append(head + "".join(f"data: {line}\n" for line in data.split("\n")) + "\n")
    return "".join(out).encode()


FAULTS = ("utf8", "line", "event_size", "events", "stream_size", "no_data", "bom", "document", "cut")


def faulted(stream: Stream, k: int, fault: str, inside: bool, error: str | None) -> tuple[bytes, Limits]:
    """The stream's first ``k + 1`` events (event ``k`` replaced by
    ``error``), then ``fault``: right after them, or ``inside`` the next
    event (its first half before the fault); the limits the fault needs."""
    events = list(stream.events[: k + 1])
    if error is not None:
        events[k] = (None if stream.array or stream.provider != "anthropic" else "error", error)
    head = frame(stream, events)
    if stream.array and events:
        head += b","
    if inside and k + 1 < len(stream.events):
        nxt = frame(stream, [stream.events[k + 1]])
        nxt = nxt[1:] if stream.array else nxt
        head += nxt[: max(1, len(nxt) // 2)]
    longest_line = max((len(line) for line in head.split(b"\n")), default=0)
    longest_event = max((len(d.encode()) for _, d in events), default=0)
    limits: dict[str, int] = {}
    if fault == "utf8":
        tail = b"\xff\n\n" if inside else b"data: \xc3\x28\n\n"
        if stream.array:
            tail = b'{"a": "\xff"}]' if not inside else b'\xff"]'
    elif fault == "line":
        limits["max_sse_line_bytes"] = longest_line + 4
        tail = b"data: " + b"a" * (longest_line + 8) + b"\n\n"
        if stream.array:  # an array has no lines: an element too large instead
            limits = {"max_sse_event_bytes": max(longest_event, 64) + 4}
            tail = b'{"a": "' + b"a" * (longest_event + 80) + b'"}]'
    elif fault == "event_size":
        limits["max_sse_event_bytes"] = max(longest_event, 64) + 4
        tail = b"data: " + b"b" * (longest_event + 80) + b"\n\n"
        if stream.array:
            tail = b'{"b": "' + b"b" * (longest_event + 80) + b'"}]'
    elif fault == "events":
        limits["max_stream_events"] = k + 1
        tail = b"data: {}\n\n" if not stream.array else b"{}]"
    elif fault == "stream_size":
        limits["max_stream_bytes"] = len(head) + 3
        tail = b"data: {}\n\n" if not stream.array else b"{}]"
    elif fault == "no_data":
        limits["max_bytes_without_data"] = len(head) + 4  # more than the head holds
        tail = b":" + b"c" * (len(head) + 8) + b"\n" if not stream.array else b" " * (len(head) + 8)
    elif fault == "bom":
        tail = b"\xef\xbb\xbfdata: {}\n\n" if not stream.array else b"\xef\xbb\xbf{}]"
    elif fault == "document":
        tail = b'{"error": {"message": "m"}}\n\n' if not stream.array else b'{}] {"error": {"message": "m"}}'
    else:  # cut: the stream ends there
        tail = b""
    return head + tail, Limits(**limits)


@dataclass
class Outcome:
    """What a stream gave: the error (its dict, and ``feed`` or
    ``finish``) or the response's summary, and the canonical events
    produced before it."""

    result: Any
    events: list[dict[str, Any]]


def _summary(response: NormalizedResponse) -> Any:
    return (response.provider, response.finish_reason, [(type(i).__name__, repr(i)) for i in response.items])


def run(impl: ModuleType | None, provider: str, pieces: Iterator[bytes], limits: Limits, keep: bool = True) -> Outcome:
    """Feed ``pieces`` to ``impl``'s assembler for ``provider`` (``impl``
    None: ``StreamAssembler()``, the provider detected), then finish; with
    ``keep``, the canonical events are kept (without, the mappers' fast
    paths run, and ``events`` is empty)."""
    if impl is None:
        assembler: Any = detect.StreamAssembler(limits=limits, keep_events=keep)
    else:
        assembler = impl.StreamAssembler(provider, limits=limits, keep_events=keep)
    kept: list[dict[str, Any]] = []
    stage = "feed"
    try:
        for piece in pieces:
            assembler.feed(piece)
        stage = "finish"
        result: Any = _summary(assembler.finish())
    except OutputError as err:
        result = (stage, err.to_dict())
    if keep:
        kept = [e.to_dict() for e in assembler.take_events()]
    if impl is None:
        kept = []  # the detected stream keeps its events in the backend's assembler: compared by result
    return Outcome(result, kept)


def chunkings(data: bytes, at: int, seed: int) -> Iterator[tuple[str, list[bytes]]]:
    """Whole, split at the fault, byte by byte around it, and random."""
    yield "whole", [data]
    yield "at the fault", [data[:at], data[at:]]
    yield "before the fault", [data[: max(0, at - 1)], data[max(0, at - 1) :]]
    start = max(0, at - 600)  # event k and the fault a byte at a time (the bytes before: whole)
    yield (
        "byte by byte",
        [data[:start], *(data[i : i + 1] for i in range(start, min(len(data), at + 200)))] + [data[at + 200 :]],
    )
    rng = random.Random(seed)
    for n in range(1):
        cuts = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, rng.randint(1, 12)))) if data else []
        yield f"random {n}", [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]


STREAMS = recorded_streams()


def _cases() -> list[Any]:
    cases = []
    for stream in STREAMS:
        n = len(stream.events)
        # the first events, one a little later, and the one before the last (in a short stream)
        for k in sorted({0, 1, min(n - 2, 9), n - 2 if n <= 60 else 0} & set(range(n))):
            cases.append(pytest.param(stream, k, id=f"{stream.name}-{k}"))
    return cases


def test_the_recordings_are_found() -> None:
    providers = {s.provider for s in STREAMS}
    assert providers == set(_APIS.values()) and len(STREAMS) >= 120
    assert any(s.array for s in STREAMS)


@pytest.mark.parametrize(("stream", "k"), _cases())
def test_first_error_is_independent_of_chunking(stream: Stream, k: int) -> None:
    seed = zlib.crc32(f"{stream.name}:{k}".encode())
    errors = (None, MALFORMED, *ERROR_EVENTS[stream.provider])
    rng = random.Random(seed)
    start = rng.randrange(len(FAULTS))  # half the faults per case, in turn
    for fault in (FAULTS + FAULTS)[start : start + len(FAULTS) // 2]:
        inside = rng.random() < 0.5
        error = errors[rng.randrange(len(errors))]
        data, limits = faulted(stream, k, fault, inside, error)
        at = len(faulted(stream, k, "cut", inside, error)[0])
        first: tuple[str, Outcome] | None = None
        for backend, impl in [*BACKENDS.items(), ("auto", None)]:
            for how, pieces in chunkings(data, at, seed):
                keep = how in ("whole", "byte by byte")  # the others run the fast paths
                outcome = run(impl, stream.provider, iter(pieces), limits, keep)
                label = f"{backend} {how}"
                if backend == "auto":
                    # told from the first event: the named provider's result, or an error of its own
                    assert first is not None
                    if outcome.result != first[1].result:
                        named = first[1].result
                        assert isinstance(outcome.result, tuple) and outcome.result[1]["code"] in (
                            "AMBIGUOUS_PROVIDER",
                            "NOT_A_RESPONSE_BODY",
                        ), (fault, inside, error, label, outcome.result, named)
                        auto_first = (label, outcome)
                        for _, again in chunkings(data, at, seed):
                            assert run(None, stream.provider, iter(again), limits).result == auto_first[1].result
                        break
                    continue
                if first is None:
                    first = (label, outcome)
                    continue
                assert outcome.result == first[1].result, (fault, inside, error, label, first[0])
                if keep:
                    assert outcome.events == first[1].events, (fault, inside, error, label, first[0])


# ---------------------------------------------------------------- regressions: one chunk, an event then a fault

USER_ROLE = b'data: {"choices": [{"index": 0, "delta": {"role": "user"}}]}\n\n'
ROLE_PATH = "$.choices[0].delta.role"
TWICE = b'{"candidates": [], "candidates": []}'

#: (provider, stream, limits, the first error's code and path): the event
#: before the fault was dropped when both came in one chunk, and the fault raised
REGRESSIONS = {
    "invalid UTF-8": ("openai-chat", USER_ROLE + b"data: \xff\n\n", Limits(), ("MALFORMED_EVENT", ROLE_PATH)),
    "line too long": (
        "openai-chat",
        USER_ROLE + b"data: " + b"a" * 80 + b"\n",
        Limits(max_sse_line_bytes=70),
        ("MALFORMED_EVENT", ROLE_PATH),
    ),
    "event too large": (
        "openai-chat",
        USER_ROLE + b"data: " + b"a" * 80 + b"\n",
        Limits(max_sse_event_bytes=70),
        ("MALFORMED_EVENT", ROLE_PATH),
    ),
    "too many events": (
        "openai-chat",
        USER_ROLE + b"data: {}\n\n",
        Limits(max_stream_events=1),
        ("MALFORMED_EVENT", ROLE_PATH),
    ),
    "stream too long": (
        "openai-chat",
        USER_ROLE + b"data: {}\n\n",
        Limits(max_stream_bytes=len(USER_ROLE) + 2),
        ("MALFORMED_EVENT", ROLE_PATH),
    ),
    "array: invalid UTF-8": (
        "gemini",
        b"[" + TWICE + b',{"a": "\xff"}]',
        Limits(),
        ("MALFORMED_EVENT", "$.candidates"),
    ),
    "array: stray document": (
        "gemini",
        b"[" + TWICE + b'] {"error": {}}',
        Limits(),
        ("MALFORMED_EVENT", "$.candidates"),
    ),
    "array: too many events": (
        "gemini",
        b"[" + TWICE + b",{}]",
        Limits(max_stream_events=1),
        ("MALFORMED_EVENT", "$.candidates"),
    ),
    "array: element too large": (
        "gemini",
        b"[" + TWICE + b',{"a": "' + b"a" * 80 + b'"}]',
        Limits(max_sse_event_bytes=60),
        ("MALFORMED_EVENT", "$.candidates"),
    ),
}


def _first_error(assembler: Any, pieces: list[bytes]) -> tuple[str, str | None]:
    with pytest.raises(OutputError) as caught:
        for piece in pieces:
            assembler.feed(piece)
        assembler.finish()
    return caught.value.code, caught.value.path


@pytest.mark.parametrize("case", list(REGRESSIONS))
def test_an_event_before_a_fault_in_its_chunk_is_mapped_first(impl: ModuleType, case: str) -> None:
    provider, data, limits, expected = REGRESSIONS[case]
    for pieces in ([data], [data[i : i + 1] for i in range(len(data))]):
        assert _first_error(impl.StreamAssembler(provider, limits=limits), pieces) == expected
        assert _first_error(detect.StreamAssembler(limits=limits), pieces) == expected  # the provider detected


def test_a_first_event_that_tells_no_provider_comes_before_a_fault_in_its_chunk() -> None:
    data = b'data: {"x": 1}\n\ndata: \xff\n\n'
    for pieces in ([data], [data[i : i + 1] for i in range(len(data))]):
        assert _first_error(detect.StreamAssembler(), pieces) == ("AMBIGUOUS_PROVIDER", "$")


def _forwarded(pieces: list[bytes], asynchronous: bool) -> tuple[list[dict[str, Any]], str]:
    """The canonical events ``stream_httpx`` (or its async twin) gives for a
    body sent in ``pieces``, and the code of the error it then raises."""
    import asyncio

    from decisions import integrations

    httpx = pytest.importorskip("httpx")
    headers = {"content-type": "text/event-stream"}
    got: list[dict[str, Any]] = []

    class Body(httpx.SyncByteStream, httpx.AsyncByteStream):  # type: ignore[misc]
        def __iter__(self) -> Iterator[bytes]:
            yield from pieces

        async def __aiter__(self) -> Any:
            for piece in pieces:
                yield piece

    def respond(request: Any) -> Any:
        return httpx.Response(200, stream=Body(), headers=headers)

    with pytest.raises(OutputError) as caught:
        if not asynchronous:
            with (
                httpx.Client(transport=httpx.MockTransport(respond)) as client,
                client.stream("POST", "http://x/") as r,
            ):
                got.extend(e.to_dict() for e in integrations.stream_httpx(r, provider="openai-chat"))
        else:

            async def arespond(request: Any) -> Any:
                return respond(request)

            async def run() -> None:
                async with httpx.AsyncClient(transport=httpx.MockTransport(arespond)) as client:
                    async with client.stream("POST", "http://x/") as r:
                        async for e in integrations.astream_httpx(r, provider="openai-chat"):
                            got.append(e.to_dict())

            asyncio.run(run())
    return got, caught.value.code


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_stream_httpx_gives_the_events_before_a_fault_in_their_chunk(asynchronous: bool) -> None:
    """The events a chunk produced before its error are forwarded, then the
    error raised, as when the chunk comes a byte at a time."""
    text = b'data: {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "hi"}}]}\n\n'
    for fault, code in ((b"data: \xff\n\n", "SSE_INVALID_UTF8"), (USER_ROLE, "MALFORMED_EVENT")):
        data = text + fault
        whole = _forwarded([data], asynchronous)
        assert whole == _forwarded([data[i : i + 1] for i in range(len(data))], asynchronous)
        assert whole[1] == code and [e["type"] for e in whole[0]][:3] == [
            "response_started",
            "item_started",
            "text_delta",
        ]


@pytest.mark.parametrize("case", [c for c in REGRESSIONS if not c.startswith("array")])
def test_sse_decoder_returns_the_events_before_a_fault_in_their_chunk(impl: ModuleType, case: str) -> None:
    """The events before the error, then the error (at the next call), in any chunking."""
    _, data, limits, _ = REGRESSIONS[case]

    def decoded(pieces: list[bytes]) -> tuple[list[str], tuple[str, int | None]]:
        decoder = impl.SSEDecoder(limits=limits)
        events: list[str] = []
        with pytest.raises(OutputError) as caught:
            for piece in pieces:
                events.extend(e.data for e in decoder.feed(piece))
            decoder.finish()
        return events, (caught.value.code, caught.value.offset)

    whole = decoded([data])
    assert whole == decoded([data[i : i + 1] for i in range(len(data))])
    assert whole[0] == [USER_ROLE[6:-2].decode()]


def test_a_detected_stream_raises_a_fault_after_blank_events_in_the_same_feed() -> None:
    """Events with blank data tell no provider: a framing error after them in
    their chunk is raised by that ``feed``, as a byte at a time."""
    data = b"data:\n\ndata: \xff\n\n"
    for pieces in ([data], [data[i : i + 1] for i in range(len(data))]):
        assembler = detect.StreamAssembler()
        with pytest.raises(OutputError) as caught:
            for piece in pieces:
                assembler.feed(piece)
        assert (caught.value.code, caught.value.offset) == ("SSE_INVALID_UTF8", 13)


@pytest.mark.parametrize("lead", [b"", b"  ", b"\xef\xbb\xbf", b"\r\n"], ids=["none", "spaces", "bom", "crlf"])
@pytest.mark.parametrize("room", [0, -1], ids=["at the bound", "past it"])
def test_a_detected_json_document_is_bounded_from_its_first_byte(impl: ModuleType, lead: bytes, room: int) -> None:
    """``StreamAssembler()`` holds a stream that is one JSON document as a
    named provider's assembler does: up to ``max_sse_event_bytes`` from its
    ``{`` (the whitespace and byte order mark before it not counted), past
    it ``NOT_A_RESPONSE_BODY`` at that ``{``, raised by the same call."""
    doc = b'{"error": {"message": "m"}}'
    limits = Limits(max_sse_event_bytes=len(doc) + room)
    data = lead + doc

    def first(assembler: Any) -> tuple[str, str, int | None]:
        stage = "feed"
        with pytest.raises(OutputError) as caught:
            for piece in (data[i : i + 1] for i in range(len(data))):
                assembler.feed(piece)
            stage = "finish"
            assembler.finish()
        return stage, caught.value.code, caught.value.offset

    auto = first(detect.StreamAssembler(limits=limits))
    if room < 0:
        assert (
            auto
            == first(impl.StreamAssembler("openai-chat", limits=limits))
            == ("feed", "NOT_A_RESPONSE_BODY", len(lead))
        )
    else:  # read whole; told by no provider as a body (the error object is every OpenAI API's)
        assert auto == ("finish", "NOT_A_RESPONSE_BODY", len(lead))
