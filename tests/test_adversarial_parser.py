"""Hostile text at the parser's entry points, on both backends.

1. A ``str`` holding a lone surrogate character has no UTF-8 form: given as
   a body, as event data, as an event's name or inside a dict payload, it is
   the typed ``MALFORMED_EVENT`` its UTF-8 bytes would give, never a
   ``UnicodeEncodeError``, and the stream
   is failed by it.
2. A body or event's bytes beyond ``max_sse_event_bytes`` are refused before
   their text is built, the UTF-8 check still first.
3. A ``Limits`` field beyond 64 bits bounds nothing, natively too.
4. An SSE id is shared by the events it applies to, never copied per event.
5. ``loads`` refuses a too-large bytearray or memoryview before copying it.
"""

from __future__ import annotations

import dataclasses
import json
import tracemalloc
from types import ModuleType
from typing import Any, Callable

import pytest

from decisions import Limits, OutputError, ParseError

CHUNK = '{"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"\ud800"}}]}'
BODY = (
    '{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,'
    '"message":{"role":"assistant","content":"x\udfff"},"finish_reason":"stop"}]}'
)
NOT_UTF8 = ("MALFORMED_EVENT", "event data is not valid UTF-8")


def _outcome(call: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[str, str]:
    with pytest.raises(OutputError) as info:
        call(*args, **kwargs)
    return info.value.code, info.value.message


@pytest.mark.parametrize("limits", [None, Limits(max_sse_event_bytes=10)])
def test_str_with_lone_surrogate_is_malformed(impl: ModuleType, limits: Limits | None) -> None:
    """Checked before the size, as the bytes of one are."""
    assert _outcome(impl.normalize, BODY, provider="openai-chat", limits=limits) == NOT_UTF8
    assert _outcome(impl.normalize, json.loads(BODY), provider="openai-chat", limits=limits) == NOT_UTF8
    cases: list[tuple[Any, str | None, tuple[str, str]]] = [
        (CHUNK, None, NOT_UTF8),
        (json.loads(CHUNK), None, NOT_UTF8),
        ("{}", "message\udcff", ("MALFORMED_EVENT", "event name is not valid UTF-8")),
    ]
    for payload, event, expected in cases:
        assembler = impl.StreamAssembler("openai-chat", limits=limits)
        assert _outcome(assembler.feed_event, payload, event=event) == expected
        assert assembler.state == "failed"
        assert _outcome(assembler.feed_event, "{}")[0] == "STREAM_FAILED"


def test_provider_name_with_lone_surrogate_is_unknown(impl: ModuleType) -> None:
    with pytest.raises(ValueError, match="unknown provider") as info:
        impl.StreamAssembler("\ud800")
    assert not isinstance(info.value, UnicodeError)
    with pytest.raises(ValueError, match="unknown provider") as info:
        impl.normalize("{}", provider="openai\udc80")
    assert not isinstance(info.value, UnicodeError)


def test_too_large_body_bytes_are_not_decoded_whole(impl: ModuleType) -> None:
    """Bytes beyond ``max_sse_event_bytes`` are refused without their text
    being built (ASCII and one emoji would be a str four times their size);
    invalid UTF-8 in them is still the error named first."""
    limits = Limits(max_sse_event_bytes=64 * 1024)
    body = b'{"a":"' + b"x" * (4 * 1024 * 1024) + '\U0001f600"}'.encode()
    tracemalloc.start()
    try:
        error = _outcome(impl.normalize, body, provider="openai-chat", limits=limits)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert error == ("MALFORMED_EVENT", f"event data has more than {64 * 1024} bytes")
    assert peak < len(body) // 4
    assembler = impl.StreamAssembler("openai-chat", limits=limits)
    assert _outcome(assembler.feed_event, body) == error
    bad = body[:-3] + b"\xff" + body[-3:]
    assert _outcome(impl.normalize, bad, provider="openai-chat", limits=limits) == NOT_UTF8
    assert (
        _outcome(impl.normalize, bytearray(bad[:-3] + b"\xf0\x9f"), provider="openai-chat", limits=limits) == NOT_UTF8
    )
    assert impl.StreamAssembler("openai-chat", limits=Limits(max_sse_event_bytes=5)).feed_event(b"[DONE]") is None


@pytest.mark.parametrize("name", [field.name for field in dataclasses.fields(Limits)])
def test_limits_beyond_64_bits_bound_nothing(impl: ModuleType, name: str) -> None:
    """``Limits`` takes any positive int; one beyond 64 bits is a bound no
    input reaches, on every entry point (the native one raised OverflowError)."""
    if name in ("max_depth", "max_number_length"):
        pytest.skip("capped by Limits itself")
    limits = Limits(**{name: 2**70})
    assert impl.loads("[1]", limits=limits) == [1]
    assert impl.SSEDecoder(limits=limits).feed(b"data: 1\n\n")[0].data == "1"
    assembler = impl.StreamAssembler("openai-chat", limits=limits)
    assembler.feed(b"data: " + CHUNK.replace("\ud800", "hi").encode() + b"\n\n")
    assert assembler.snapshot().text == "hi"
    assert impl.normalize(BODY.replace("\udfff", ""), provider="openai-chat", limits=limits).items[0].text == "x"


def test_a_long_event_id_is_shared_not_copied_per_event(impl: ModuleType) -> None:
    """An ``id:`` line of half a megabyte applies to every later event: they
    share one str (a copy per event made 4,000 events cost 8 GB natively)."""
    decoder = impl.SSEDecoder()
    long_id = "i" * (512 * 1024)
    events = decoder.feed(b"data: x\nid: " + long_id.encode() + b"\n\n" + b"data: y\n\n" * 2000)
    events += decoder.feed(b"data: z\n\n")
    assert len(events) == 2002 and events[0].id == long_id
    assert all(event.id is events[0].id for event in events)
    events = decoder.feed(b"id: 2\ndata: w\n\ndata: v\n\n")
    assert [event.id for event in events] == ["2", "2"]


@pytest.mark.parametrize("kind", [bytearray, memoryview])
def test_too_large_buffer_is_not_copied(impl: ModuleType, kind: type) -> None:
    """``loads`` measures a bytearray or memoryview before copying it."""
    data = kind(b"[" + b"1," * (2 * 1024 * 1024) + b"1]")
    tracemalloc.start()
    try:
        with pytest.raises(ParseError) as info:
            impl.loads(data, limits=Limits(max_document_bytes=1024))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (info.value.code, info.value.pos) == ("DOCUMENT_TOO_LARGE", 0)
    assert peak < 1024 * 1024
