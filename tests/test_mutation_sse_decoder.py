"""The SSE decoder's results written out, on both backends (the mutation
run sees the pure backend alone, so a differential test does not count
there): line ends of each kind and split across chunks, fields, the BOM,
UTF-8, and every limit at its bound with the error's code, offset and
message."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from decisions import Limits, StreamError


def outcome(impl: ModuleType, chunks: list[bytes], limits: dict[str, int]) -> list[Any]:
    decoder = impl.SSEDecoder(limits=Limits(**limits) if limits else None)
    events: list[Any] = []
    try:
        for chunk in chunks:
            events.extend((e.event, e.data, e.id, e.retry) for e in decoder.feed(chunk))
        events.extend((e.event, e.data, e.id, e.retry) for e in decoder.finish())
    except StreamError as err:
        return [*events, (err.code, err.offset, err.message)]
    return events


@pytest.mark.parametrize(
    ("chunks", "limits", "expected"),
    [
        pytest.param([b"data: a\n\n"], {}, [("message", "a", None, None)], id="lf"),
        pytest.param([b"data: a\r\r"], {}, [("message", "a", None, None)], id="cr"),
        pytest.param([b"data: a\r\n\r\n"], {}, [("message", "a", None, None)], id="crlf"),
        pytest.param(
            [b"data: a\r", b"\n\r", b"\ndata: b\r\n\r\n"],
            {},
            [("message", "a", None, None), ("message", "b", None, None)],
            id="crlf-split",
        ),
        pytest.param([b"data: a\r", b"\ndata: b\n\n"], {}, [("message", "a\nb", None, None)], id="cr-then-lf-line"),
        pytest.param([b"data: a\ndata:b\ndata:  c\n\n"], {}, [("message", "a\nb\n c", None, None)], id="multi-data"),
        pytest.param([b"data: a\rdata:b\r\r"], {}, [("message", "a\nb", None, None)], id="multi-data-cr"),
        pytest.param(
            [b"event: up\nid: 7\nretry: 15\ndata: x\n\ndata: y\n\n"],
            {},
            [("up", "x", "7", 15), ("message", "y", "7", 15)],
            id="fields",
        ),
        pytest.param([b"event: up\rid: 7\rretry: 15\rdata: x\r\r"], {}, [("up", "x", "7", 15)], id="fields-cr"),
        pytest.param([b"id: 1\nid: a\x00b\ndata: x\n\n"], {}, [("message", "x", "1", None)], id="id-nul"),
        pytest.param(
            [b"retry: 1x\nretry: 18446744073709551616\nretry: \nretry: 18446744073709551615\ndata: x\n\n"],
            {},
            [("message", "x", None, 18446744073709551615)],
            id="retry-bad",
        ),
        pytest.param([b"data:x\nevent:e\n\n"], {}, [("e", "x", None, None)], id="no-space"),
        pytest.param([b"data\n\n"], {}, [("message", "", None, None)], id="field-no-colon"),
        pytest.param([b": hi\ndata: x\n\n"], {}, [("message", "x", None, None)], id="comment"),
        pytest.param([b"foo: bar\ndata: x\n\n"], {}, [("message", "x", None, None)], id="unknown-field"),
        pytest.param([b"event: e\n\ndata: x\n\n"], {}, [("message", "x", None, None)], id="event-no-data"),
        pytest.param([b"\xef\xbb\xbfdata: x\n\n"], {}, [("message", "x", None, None)], id="bom"),
        pytest.param([b"\xef", b"\xbb", b"\xbfdata: x\n\n"], {}, [("message", "x", None, None)], id="bom-split"),
        pytest.param(
            [b"\xef\xbb", b"data"],
            {},
            [("SSE_UNTERMINATED_EVENT", 0, "the stream ended in the middle of an event")],
            id="bom-partial-not",
        ),
        pytest.param(
            [b"\xef\xbb"],
            {},
            [("SSE_UNTERMINATED_EVENT", 0, "the stream ended in the middle of an event")],
            id="bom-only",
        ),
        pytest.param([b"data: \xc3", b"\xa9\n\n"], {}, [("message", "é", None, None)], id="utf8-split"),
        pytest.param(
            [b"data: ok\n\ndata: \xff\n\n"],
            {},
            [("message", "ok", None, None), ("SSE_INVALID_UTF8", 16, "the event stream is not valid UTF-8")],
            id="utf8-bad-lf",
        ),
        pytest.param(
            [b"data: ok\r\rdata: \xff\r\r"],
            {},
            [("message", "ok", None, None), ("SSE_INVALID_UTF8", 16, "the event stream is not valid UTF-8")],
            id="utf8-bad-cr",
        ),
        pytest.param(
            [b"ev\xffent: x\n"],
            {},
            [("SSE_INVALID_UTF8", 2, "the event stream is not valid UTF-8")],
            id="utf8-bad-field",
        ),
        pytest.param(
            [b"data: x"],
            {},
            [("SSE_UNTERMINATED_EVENT", 0, "the stream ended in the middle of an event")],
            id="unterminated-line",
        ),
        pytest.param(
            [b"data: x\n"],
            {},
            [("SSE_UNTERMINATED_EVENT", 8, "the stream ended in the middle of an event")],
            id="unterminated-event",
        ),
        pytest.param(
            [b"data: 1234\n"],
            {"max_sse_line_bytes": 9},
            [("SSE_LINE_TOO_LONG", 0, "an event-stream line exceeds max_sse_line_bytes (9)")],
            id="line-long-lf",
        ),
        pytest.param([b"data: 123\n\n"], {"max_sse_line_bytes": 9}, [("message", "123", None, None)], id="line-ok-lf"),
        pytest.param(
            [b"data: 12", b"34\n"],
            {"max_sse_line_bytes": 9},
            [("SSE_LINE_TOO_LONG", 0, "an event-stream line exceeds max_sse_line_bytes (9)")],
            id="line-long-lf-split",
        ),
        pytest.param(
            [b"data: 12", b"3\n\n"], {"max_sse_line_bytes": 9}, [("message", "123", None, None)], id="line-ok-lf-split"
        ),
        pytest.param(
            [b"data: 1234"],
            {"max_sse_line_bytes": 9},
            [("SSE_LINE_TOO_LONG", 0, "an event-stream line exceeds max_sse_line_bytes (9)")],
            id="line-long-tail",
        ),
        pytest.param(
            [b"data: 1234\r"],
            {"max_sse_line_bytes": 9},
            [("SSE_LINE_TOO_LONG", 0, "an event-stream line exceeds max_sse_line_bytes (9)")],
            id="line-long-cr",
        ),
        pytest.param([b"data: 123\r\r"], {"max_sse_line_bytes": 9}, [("message", "123", None, None)], id="line-ok-cr"),
        pytest.param(
            [b"data: 12\r\rdata: 1", b"234\r"],
            {"max_sse_line_bytes": 9},
            [
                ("message", "12", None, None),
                ("SSE_LINE_TOO_LONG", 10, "an event-stream line exceeds max_sse_line_bytes (9)"),
            ],
            id="line-long-cr-split",
        ),
        pytest.param(
            [b"da", b"ta: 123\r\r"], {"max_sse_line_bytes": 9}, [("message", "123", None, None)], id="line-ok-cr-split"
        ),
        pytest.param(
            [b"\rdata: 1234"],
            {"max_sse_line_bytes": 9},
            [("SSE_LINE_TOO_LONG", 1, "an event-stream line exceeds max_sse_line_bytes (9)")],
            id="line-long-cr-tail",
        ),
        pytest.param(
            [b"\rdata: 123", b"\n\n"], {"max_sse_line_bytes": 9}, [("message", "123", None, None)], id="line-ok-cr-tail"
        ),
        pytest.param(
            [b"data: 12\ndata: 345\n"],
            {"max_sse_event_bytes": 5},
            [("SSE_EVENT_TOO_LARGE", 9, "an event's data exceeds max_sse_event_bytes (5)")],
            id="event-long",
        ),
        pytest.param(
            [b"data: 12\ndata: 34\n\n"], {"max_sse_event_bytes": 5}, [("message", "12\n34", None, None)], id="event-ok"
        ),
        pytest.param(
            [b"data: 12\rdata: 345\r"],
            {"max_sse_event_bytes": 5},
            [("SSE_EVENT_TOO_LARGE", 9, "an event's data exceeds max_sse_event_bytes (5)")],
            id="event-long-cr",
        ),
        pytest.param(
            [b"data: 12\rdata: 34\r\r"],
            {"max_sse_event_bytes": 5},
            [("message", "12\n34", None, None)],
            id="event-ok-cr",
        ),
        pytest.param(
            [b"data: \xc3\xa9\xc3\xa9\xc3\xa9\n"],
            {"max_sse_event_bytes": 5},
            [("SSE_EVENT_TOO_LARGE", 0, "an event's data exceeds max_sse_event_bytes (5)")],
            id="event-long-utf8",
        ),
        pytest.param(
            [b"data: \xc3\xa9\xc3\xa9\xc3\xa9\r"],
            {"max_sse_event_bytes": 5},
            [("SSE_EVENT_TOO_LARGE", 0, "an event's data exceeds max_sse_event_bytes (5)")],
            id="event-long-utf8-cr",
        ),
        pytest.param(
            [b"data: \xc3\xa9\xc3\xa9\n\n"],
            {"max_sse_event_bytes": 5},
            [("message", "éé", None, None)],
            id="event-ok-utf8",
        ),
        pytest.param(
            [b": 12345\n: 1\n"],
            {"max_bytes_without_data": 9},
            [("SSE_NO_DATA", 8, "more than max_bytes_without_data (9) arrived without a data event")],
            id="no-data",
        ),
        pytest.param([b": 1234\n: 1\n"], {"max_bytes_without_data": 11}, [], id="no-data-ok"),
        pytest.param(
            [b": 123\r", b"\n: 1\r\n"],
            {"max_bytes_without_data": 11},
            [("SSE_NO_DATA", 7, "more than max_bytes_without_data (11) arrived without a data event")],
            id="no-data-crlf",
        ),
        pytest.param([b": 123\r", b"\n: 1\r\n"], {"max_bytes_without_data": 12}, [], id="no-data-crlf-ok"),
        pytest.param(
            [b"\n\n\n\n\n\n\n\n\n\n"],
            {"max_bytes_without_data": 9},
            [("SSE_NO_DATA", 9, "more than max_bytes_without_data (9) arrived without a data event")],
            id="no-data-blank",
        ),
        pytest.param(
            [b": 1234\ndata: x\n\n: 1234\n"],
            {"max_bytes_without_data": 9},
            [("message", "x", None, None)],
            id="no-data-reset",
        ),
        pytest.param(
            [b"data: a\n\ndata: b\n\n"],
            {"max_stream_events": 1},
            [
                ("message", "a", None, None),
                ("SSE_TOO_MANY_EVENTS", 17, "the stream has more events than max_stream_events (1)"),
            ],
            id="too-many",
        ),
        pytest.param(
            [b"data: a\r\rdata: b\r\r"],
            {"max_stream_events": 1},
            [
                ("message", "a", None, None),
                ("SSE_TOO_MANY_EVENTS", 17, "the stream has more events than max_stream_events (1)"),
            ],
            id="too-many-cr",
        ),
        pytest.param(
            [b"data: a\n\n", b"data: b\n\n"],
            {"max_stream_bytes": 17},
            [
                ("message", "a", None, None),
                ("SSE_STREAM_TOO_LARGE", 17, "the stream is longer than max_stream_bytes (17)"),
            ],
            id="stream-big",
        ),
        pytest.param(
            [b"data: a\n\n", b"data: b\n\n"],
            {"max_stream_bytes": 18},
            [("message", "a", None, None), ("message", "b", None, None)],
            id="stream-ok",
        ),
        pytest.param(
            [b"\xef\xbb", b"\xbfdata: a\n\n"],
            {"max_stream_bytes": 11},
            [("SSE_STREAM_TOO_LARGE", 11, "the stream is longer than max_stream_bytes (11)")],
            id="stream-big-bom",
        ),
        pytest.param(
            [b"data: a\n\n", b"\xef\xbb\xbfdata: \xff\n"],
            {},
            [("message", "a", None, None), ("SSE_INVALID_UTF8", 18, "the event stream is not valid UTF-8")],
            id="bom-later-is-not-a-bom",
        ),
        pytest.param([b"x\n"], {}, [], id="short-first-chunk"),
        pytest.param([b"\xef\xbb\xbf"], {}, [], id="bom-alone"),
        pytest.param(
            [b"\xef\xbb\xbfx"],
            {},
            [("SSE_UNTERMINATED_EVENT", 3, "the stream ended in the middle of an event")],
            id="bom-then-unterminated",
        ),
        pytest.param(
            [b"data: a\r\r", b"\n: 1\n"],
            {"max_bytes_without_data": 4},
            [("message", "a", None, None)],
            id="cr-dispatch-then-lf",
        ),
        pytest.param(
            [b"data: a\r", b"\n\n: 1\n"],
            {"max_bytes_without_data": 4},
            [("message", "a", None, None)],
            id="cr-data-then-lf",
        ),
        pytest.param(
            [b": x\r", b"\n"],
            {"max_bytes_without_data": 4},
            [("SSE_NO_DATA", 0, "more than max_bytes_without_data (4) arrived without a data event")],
            id="comment-cr-then-lf",
        ),
        pytest.param(
            [b"data: ab\n\ndata: cd\n\n"],
            {"max_sse_event_bytes": 2},
            [("message", "ab", None, None), ("message", "cd", None, None)],
            id="second-event-size",
        ),
        pytest.param(
            [b"data: a\n\nda", b"ta: b\n\n"],
            {"max_stream_bytes": 17},
            [
                ("message", "a", None, None),
                ("SSE_STREAM_TOO_LARGE", 17, "the stream is longer than max_stream_bytes (17)"),
            ],
            id="pos-after-tail",
        ),
        pytest.param(
            [b"data: a\r\rda", b"ta: b\r\r"],
            {"max_stream_bytes": 17},
            [
                ("message", "a", None, None),
                ("SSE_STREAM_TOO_LARGE", 17, "the stream is longer than max_stream_bytes (17)"),
            ],
            id="pos-after-tail-cr",
        ),
        pytest.param(
            [b"data: a\r: 12\r\r"],
            {"max_bytes_without_data": 5},
            [("message", "a", None, None)],
            id="no-data-after-data",
        ),
        pytest.param(
            [b"data: a\r\revent: abc\r"],
            {"max_bytes_without_data": 5},
            [
                ("message", "a", None, None),
                ("SSE_NO_DATA", 9, "more than max_bytes_without_data (5) arrived without a data event"),
            ],
            id="field-no-data-offset",
        ),
    ],
)
def test_the_decoders_result(
    impl: ModuleType, chunks: list[bytes], limits: dict[str, int], expected: list[Any]
) -> None:
    assert outcome(impl, chunks, limits) == expected


def test_a_failed_decoder_stays_failed(impl: ModuleType) -> None:
    decoder = impl.SSEDecoder(limits=Limits(max_sse_line_bytes=4))
    with pytest.raises(StreamError):
        decoder.feed(b"data: long\n")
    for again in (lambda: decoder.feed(b"\n"), decoder.finish):
        with pytest.raises(StreamError) as info:
            again()
        assert (info.value.code, info.value.message) == (
            "STREAM_FAILED",
            "the event stream already failed (SSE_LINE_TOO_LONG)",
        )


def test_what_the_decoder_takes(impl: ModuleType) -> None:
    with pytest.raises(TypeError) as info:
        impl.SSEDecoder().feed("data: x\n\n")
    assert "str" in str(info.value)
    with pytest.raises(TypeError) as info:
        impl.SSEDecoder(limits={"max_stream_bytes": 1})
    assert "dict" in str(info.value)
    decoder = impl.SSEDecoder()
    assert [e.data for e in decoder.feed(bytearray(b"data: a\n\n")) + decoder.feed(memoryview(b"data: b\n\n"))] == [
        "a",
        "b",
    ]
