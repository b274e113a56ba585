"""The SSE decoder, on both backends: framing, UTF-8, limits, termination,
and chunking-independence over every recorded stream."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from decisions import Limits, StreamError
from decisions.types import SSEEvent

FIXTURES = Path(__file__).parent / "fixtures"


def _recorded_streams() -> list[Path]:
    paths = set(FIXTURES.glob("**/*.sse"))
    paths.update((FIXTURES / "openai-python/.inline-snapshot/external").glob("*.bin"))
    paths.update((FIXTURES / "anthropic-sdk-python/tests/lib/streaming/fixtures").glob("*.txt"))
    return sorted(paths)


RECORDED = _recorded_streams()


def decode(impl: ModuleType, chunks: list[bytes], **limits: int) -> list[SSEEvent]:
    decoder = impl.SSEDecoder(limits=Limits(**limits) if limits else None)
    events: list[SSEEvent] = []
    for chunk in chunks:
        events.extend(decoder.feed(chunk))
    events.extend(decoder.finish())
    return events


def outcome(impl: ModuleType, chunks: list[bytes]) -> Any:
    """The events, or the error code and offset (the comparable result)."""
    decoder = impl.SSEDecoder()
    events: list[SSEEvent] = []
    try:
        for chunk in chunks:
            events.extend(decoder.feed(chunk))
        events.extend(decoder.finish())
    except StreamError as err:
        return (err.code, err.offset, events)  # the events before the error too: chunking changes neither
    return events


def error(impl: ModuleType, chunks: list[bytes], **limits: int) -> StreamError:
    with pytest.raises(StreamError) as info:
        decode(impl, chunks, **limits)
    return info.value


def bytewise(data: bytes) -> list[bytes]:
    return [data[i : i + 1] for i in range(len(data))]


def random_chunks(data: bytes, seed: int) -> list[bytes]:
    rng = random.Random(seed)
    chunks, i = [], 0
    while i < len(data):
        n = rng.choice((1, 2, 3, 5, 7, 16, 64, 333))
        chunks.append(data[i : i + n])
        i += n
    return chunks


# ------------------------------------------------------------------ framing


@pytest.mark.parametrize("ending", [b"\n", b"\r", b"\r\n"])
def test_every_line_ending(impl: ModuleType, ending: bytes) -> None:
    data = ending.join([b"event: a", b"data: 1", b"data: 2", b"", b"data: 3", b"", b""])
    assert decode(impl, [data]) == [
        SSEEvent(data="1\n2", event="a"),
        SSEEvent(data="3"),
    ]


def test_cr_at_chunk_end_and_lf_at_next_start_count_once(impl: ModuleType) -> None:
    expected = [SSEEvent(data="a"), SSEEvent(data="b")]
    assert decode(impl, [b"data: a\r", b"\n\r", b"\ndata: b\r\n\r", b"\n"]) == expected
    # a lone CR ending a chunk, then a non-LF: still one line end
    assert decode(impl, [b"data: a\r", b"\r", b"data: b\n\n"]) == expected


def test_bom_stripped_once_even_when_split(impl: ModuleType) -> None:
    data = b"\xef\xbb\xbfdata: x\n\n"
    assert decode(impl, bytewise(data)) == [SSEEvent(data="x")]
    # a second BOM is content: the field name is then not "data"
    assert decode(impl, [b"\xef\xbb\xbf\xef\xbb\xbfdata: x\n\ndata: y\n\n"]) == [SSEEvent(data="y")]


def test_comments_space_unknown_fields_and_no_data(impl: ModuleType) -> None:
    data = b": keep-alive\ndata:no-space\ndata:  two spaces\nfoo: bar\ndata\n\nevent: lonely\n\ndata: after\n\n"
    assert decode(impl, [data]) == [
        SSEEvent(data="no-space\n two spaces\n"),
        SSEEvent(data="after"),  # the event type of an event without data is reset
    ]


def test_empty_data_line_is_dispatched(impl: ModuleType) -> None:
    assert decode(impl, [b"data:\n\n", b"data\n\n"]) == [SSEEvent(data=""), SSEEvent(data="")]


def test_id_and_retry(impl: ModuleType) -> None:
    data = (
        b"id: 1\nretry: 100\ndata: a\n\n"
        b"id: bad\x00id\nretry: 12x\ndata: b\n\n"
        b"id\nretry: 99999999999999999999999\ndata: c\n\n"
    )
    assert decode(impl, [data]) == [
        SSEEvent(data="a", id="1", retry=100),
        SSEEvent(data="b", id="1", retry=100),  # NUL id and non-digit retry ignored
        SSEEvent(data="c", id="", retry=100),  # retry beyond 64 bits ignored
    ]


@pytest.mark.parametrize(
    "digits", [b"1" * 5000, b"0" * 5000 + b"7", b"0" * 5000, b"0" * 4990 + b"18446744073709551616"]
)
def test_retry_of_thousands_of_digits(impl: ModuleType, digits: bytes) -> None:
    """A retry value of more digits than int() converts is read by its value
    (leading zeros are no digits of it): beyond 64 bits it is ignored."""
    value = digits.lstrip(b"0")
    expected = int(value or b"0") if len(value) <= 20 and int(value or b"0") < 2**64 else None
    events = decode(impl, [b"retry: " + digits + b"\ndata: x\n\n"])
    assert events == [SSEEvent(data="x", retry=expected)]


def test_unicode_line_separators_are_not_line_ends(impl: ModuleType) -> None:
    text = "a\u2028b\u2029c\u0085d\x0be\x0cf"
    assert decode(impl, [f"data: {text}\n\n".encode()]) == [SSEEvent(data=text)]


def test_utf8_split_at_every_byte_boundary(impl: ModuleType) -> None:
    text = "é€😀 ok ünïcødé"
    data = f"event: ü\ndata: {text}\n\n".encode()
    for cut in range(1, len(data)):
        assert decode(impl, [data[:cut], data[cut:]]) == [SSEEvent(data=text, event="ü")], cut


@pytest.mark.parametrize(
    "data, offset",
    [
        (b"data: \xff\n\n", 6),
        (b"data: ok\n\ndata: \xc3(\n\n", 16),
        (b"event: \xe2\x82\n\n", 7),  # truncated sequence before the line end
        (b"data: \xed\xa0\x80\n\n", 6),  # an encoded surrogate
    ],
)
def test_invalid_utf8_is_an_error_not_a_replacement(impl: ModuleType, data: bytes, offset: int) -> None:
    err = error(impl, [data])
    assert (err.code, err.offset) == ("SSE_INVALID_UTF8", offset)
    assert error(impl, bytewise(data)).offset == offset


def test_failed_decoder_stays_failed(impl: ModuleType) -> None:
    decoder = impl.SSEDecoder()
    with pytest.raises(StreamError):
        decoder.feed(b"data: \xff\n")
    for call in (lambda: decoder.feed(b"data: ok\n\n"), decoder.finish):
        with pytest.raises(StreamError) as info:
            call()
        assert info.value.code == "STREAM_FAILED"


def test_feed_type_checked(impl: ModuleType) -> None:
    decoder = impl.SSEDecoder()
    with pytest.raises(TypeError):
        decoder.feed("data: x\n\n")
    assert decoder.feed(bytearray(b"data: x\n\n")) == decoder.feed(memoryview(b"data: x\n\n"))
    with pytest.raises(TypeError):
        impl.SSEDecoder(limits={"max_sse_line_bytes": 3})


# ------------------------------------------------------------------ termination


@pytest.mark.parametrize("tail", [b"data: x\n", b"data: x", b": comment", b"\xef\xbb"])
def test_unterminated_event_is_reported(impl: ModuleType, tail: bytes) -> None:
    err = error(impl, [b"data: done\n\n", tail])
    assert err.code == "SSE_UNTERMINATED_EVENT"
    assert err.retryable


def test_fields_without_data_at_the_end_are_not_an_event(impl: ModuleType) -> None:
    assert decode(impl, [b"data: a\n\nevent: x\nid: 3\n"]) == [SSEEvent(data="a")]


# ------------------------------------------------------------------ limits


def test_line_limit_at_the_crossing_chunk(impl: ModuleType) -> None:
    decoder = impl.SSEDecoder(limits=Limits(max_sse_line_bytes=16))
    assert decoder.feed(b"data: 0123456789") == []  # 16 bytes: at the limit
    with pytest.raises(StreamError) as info:
        decoder.feed(b"x")  # no line end ever arrives, yet the error is here
    assert (info.value.code, info.value.offset) == ("SSE_LINE_TOO_LONG", 0)
    assert decode(impl, [b"data: 0123456789\n\n"], max_sse_line_bytes=16) == [SSEEvent(data="0123456789")]


def test_event_limit(impl: ModuleType) -> None:
    ok = b"data: 12345\ndata: 6789\n\n"  # "12345\n6789" is 10 bytes
    assert decode(impl, [ok], max_sse_event_bytes=10) == [SSEEvent(data="12345\n6789")]
    err = error(impl, [b"data: a\n\n" + ok], max_sse_event_bytes=9)
    assert (err.code, err.offset) == ("SSE_EVENT_TOO_LARGE", 21)


def test_event_count_limit(impl: ModuleType) -> None:
    assert len(decode(impl, [b"data: a\n\n" * 3], max_stream_events=3)) == 3
    err = error(impl, [b"data: a\n\n" * 4], max_stream_events=3)
    assert (err.code, err.offset) == ("SSE_TOO_MANY_EVENTS", 35)


def test_stream_byte_limit_at_the_crossing_chunk(impl: ModuleType) -> None:
    decoder = impl.SSEDecoder(limits=Limits(max_stream_bytes=20))
    assert decoder.feed(b"data: 123456789\n\n") == [SSEEvent(data="123456789")]  # 17 bytes
    with pytest.raises(StreamError) as info:
        decoder.feed(b"data")
    assert (info.value.code, info.value.offset) == ("SSE_STREAM_TOO_LARGE", 20)


def test_keep_alives_cannot_run_forever(impl: ModuleType) -> None:
    ping = b": ping\n"  # 7 bytes
    decoder = impl.SSEDecoder(limits=Limits(max_bytes_without_data=70))
    for _ in range(10):
        decoder.feed(ping)
    decoder.feed(b"data: x\n\n")  # data resets the count
    for _ in range(10):
        decoder.feed(ping)
    with pytest.raises(StreamError) as info:
        decoder.feed(ping)
    assert info.value.code == "SSE_NO_DATA"
    # blank lines and events without data count too
    assert error(impl, [b"\n" * 71], max_bytes_without_data=70).code == "SSE_NO_DATA"
    assert error(impl, [b"event: x\n\n" * 8], max_bytes_without_data=70).code == "SSE_NO_DATA"


def test_limits_default_to_the_documented_values(impl: ModuleType) -> None:
    big = b"data: " + b"x" * (2 * 1024 * 1024) + b"\n\n"  # 2 MiB line: within 32 MiB
    assert len(decode(impl, [big])[0].data) == 2 * 1024 * 1024
    assert dataclasses.asdict(Limits())["max_sse_line_bytes"] == 32 * 1024 * 1024


# ------------------------------------------------------------------ chunking independence


def test_recorded_streams_are_found() -> None:
    assert len(RECORDED) >= 20


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.name[:40])
def test_recorded_stream_same_whatever_the_chunking(impl: ModuleType, path: Path) -> None:
    data = path.read_bytes()
    whole = outcome(impl, [data])
    assert whole, "no events decoded"
    assert outcome(impl, bytewise(data)) == whole
    for seed in range(3):
        assert outcome(impl, random_chunks(data, seed)) == whole


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.name[:40])
def test_recorded_stream_same_on_both_backends(both: tuple[ModuleType, ModuleType], path: Path) -> None:
    native, pure = both
    data = path.read_bytes()
    assert outcome(native, [data]) == outcome(pure, [data])
    chunks = random_chunks(data, 7)
    assert outcome(native, chunks) == outcome(pure, chunks)
