"""Provider detection (``decisions.detect``) written out in full, on both
backends: the ``AMBIGUOUS_PROVIDER`` error of a stream and of a body, and an
auto assembler's every state before its provider is told (its snapshot, its
cancelled and failed states, the limits it reads the first event under, the
event name it passes on, a byte order mark cut in pieces)."""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import pytest

import decisions
from decisions import OutputError, StreamError, _backend
from decisions.detect import AutoAssembler, detect
from decisions.types import ResponseSnapshot


@pytest.fixture
def live(impl: ModuleType, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """``impl`` as the backend ``StreamAssembler()`` builds its assembler with."""
    monkeypatch.setattr(_backend, "impl", impl)
    return impl


def _chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    body = {"id": "c1", "object": "chat.completion.chunk", "model": "m", "choices": [choice], **extra}
    return b"data: " + json.dumps(body).encode() + b"\n\n"


_CHAT = _chunk({"role": "assistant", "content": "hi"}) + _chunk({}, "stop") + b"data: [DONE]\n\n"


def _refused(call: Any) -> OutputError:
    with pytest.raises(OutputError) as caught:
        call()
    return caught.value


@pytest.mark.parametrize(
    ("payload", "stream", "message", "expected"),
    [
        (
            {"a": 1},
            True,
            "cannot tell the provider: the first event matches no provider's shape; candidates: "
            "openai-chat, openai-responses, anthropic, gemini, canonical",
            ["openai-chat", "openai-responses", "anthropic", "gemini", "canonical"],
        ),
        (
            {"a": 1},
            False,
            "cannot tell the provider: the body matches no provider's shape; candidates: "
            "openai-chat, openai-responses, anthropic, gemini",
            ["openai-chat", "openai-responses", "anthropic", "gemini"],
        ),
    ],
    ids=["stream", "body"],
)
def test_an_undetectable_payload_is_refused_in_full(
    payload: object, stream: bool, message: str, expected: list[str]
) -> None:
    error = _refused(lambda: detect(payload, stream=stream))
    assert (error.code, error.path, error.retryable, error.hint) == (
        "AMBIGUOUS_PROVIDER",
        "$",
        False,
        "pass provider= explicitly",
    )
    assert isinstance(error, StreamError)
    assert str(error) == f"AMBIGUOUS_PROVIDER: {message} at $"
    assert list(error.issues) == [{"path": "$", "code": "provider_candidate", "expected": e} for e in expected]


def test_a_payload_of_several_providers_says_it_matches_several() -> None:
    both = {"choices": [], "candidates": []}
    found = decisions.detect.candidates(both, stream=False)
    assert len(found) > 1
    error = _refused(lambda: detect(both, stream=False))
    assert str(error) == (
        f"AMBIGUOUS_PROVIDER: cannot tell the provider: the body matches several providers; candidates: "
        f"{', '.join(found)} at $"
    )


def test_an_untold_assembler_gives_an_empty_snapshot_and_no_events(live: ModuleType) -> None:
    auto = decisions.StreamAssembler()
    assert isinstance(auto, AutoAssembler)
    assert auto.snapshot() == ResponseSnapshot(
        provider="auto", response_id=None, model=None, text="", calls=(), state="init"
    )
    with pytest.raises(ValueError, match="take_events needs keep_events=True"):
        auto.take_events()
    kept = decisions.StreamAssembler(keep_events=True)
    assert kept.take_events() == []
    auto.abort()
    assert auto.state == "failed"
    for call in (auto.snapshot, auto.finish, lambda: auto.feed(_CHAT), lambda: auto.feed_event({"a": 1})):
        error = _refused(call)
        assert str(error) == "STREAM_CANCELLED: the stream was cancelled by the caller"


def test_an_untold_assembler_that_failed_says_so_at_every_call(live: ModuleType) -> None:
    auto = decisions.StreamAssembler()
    first = _refused(lambda: auto.feed(b'data: {"a": 1}\n\n'))
    assert first.code == "AMBIGUOUS_PROVIDER"
    assert auto.state == "failed"
    for call in (auto.finish, lambda: auto.feed(_CHAT)):
        assert str(_refused(call)) == "STREAM_FAILED: the stream already failed (AMBIGUOUS_PROVIDER)"
    auto.abort()  # the outcome was given: kept
    assert str(_refused(auto.finish)) == "STREAM_FAILED: the stream already failed (AMBIGUOUS_PROVIDER)"


def test_an_undetectable_event_fails_the_stream(live: ModuleType) -> None:
    auto = decisions.StreamAssembler()
    assert _refused(lambda: auto.feed_event({"a": 1})).code == "AMBIGUOUS_PROVIDER"
    assert str(_refused(lambda: auto.feed_event({"a": 1}))) == (
        "STREAM_FAILED: the stream already failed (AMBIGUOUS_PROVIDER)"
    )


def test_a_cut_first_event_fails_the_stream(live: ModuleType) -> None:
    auto = decisions.StreamAssembler()
    auto.feed(b'data: {"choi')
    assert _refused(auto.finish).code == "SSE_UNTERMINATED_EVENT"
    assert str(_refused(auto.finish)) == "STREAM_FAILED: the stream already failed (SSE_UNTERMINATED_EVENT)"


def test_a_stream_without_events_ends_in_no_terminal_event(live: ModuleType) -> None:
    auto = decisions.StreamAssembler()
    auto.feed(b": keep-alive\n\n")
    error = _refused(auto.finish)
    assert str(error) == (
        "NO_TERMINAL_EVENT: the stream ended before its first event, so nothing was received "
        "(the provider was not detected)"
    )
    assert str(_refused(auto.finish)) == "STREAM_FAILED: the stream already failed (NO_TERMINAL_EVENT)"


def test_an_assembler_fed_bytes_takes_no_events(live: ModuleType) -> None:
    auto = decisions.StreamAssembler()
    auto.feed(b"\n")
    with pytest.raises(ValueError, match="keep to feed"):
        auto.feed_event({"a": 1})


@pytest.mark.parametrize("how", ["feed", "feed_event"])
def test_the_first_event_is_read_under_the_callers_limits(live: ModuleType, how: str) -> None:
    """A number longer than the default bound, within the caller's, is read
    by detection as the assembler reads it."""
    limits = decisions.Limits(max_number_length=500)
    number = "0." + "1" * 300
    first = b'{"id": "c1", "object": "chat.completion.chunk", "x": ' + number.encode() + b', "model": "m", '
    first += b'"choices": [{"index": 0, "delta": {"role": "assistant", "content": "hi"}, "finish_reason": null}]}'
    named = live.StreamAssembler("openai-chat", limits=limits)
    auto = decisions.StreamAssembler(limits=limits)
    for assembler in (named, auto):
        if how == "feed":
            assembler.feed(b"data: " + first + b"\n\n" + _chunk({}, "stop") + b"data: [DONE]\n\n")
        else:
            assembler.feed_event(first)
            assembler.feed_event(_chunk({}, "stop")[6:-2])
    assert auto.provider == "openai-chat"
    assert auto.finish() == named.finish()


def test_the_first_events_name_is_passed_on(live: ModuleType) -> None:
    """An Anthropic event named otherwise than its type is refused by the
    assembler as when its provider is given."""
    start = {
        "type": "message_start",
        "message": {
            "id": "m1",
            "type": "message",
            "role": "assistant",
            "model": "x",
            "content": [],
            "stop_reason": None,
            "usage": {"input_tokens": 1},
        },
    }
    named = live.StreamAssembler("anthropic")
    expected = _refused(lambda: named.feed_event(start, "content_block_stop"))
    auto = decisions.StreamAssembler()
    error = _refused(lambda: auto.feed_event(start, "content_block_stop"))
    assert (error.code, str(error), error.path) == (expected.code, str(expected), expected.path)


@pytest.mark.parametrize("split", [1, 2])
def test_a_byte_order_mark_in_pieces_before_a_document(live: ModuleType, split: int) -> None:
    """A byte order mark fed in pieces, then a JSON document: the document is
    held and read at finish, not decoded as event lines."""
    document = b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'
    data = b"\xef\xbb\xbf" + document
    auto = decisions.StreamAssembler()
    auto.feed(data[:split])
    auto.feed(data[split:3])
    auto.feed(data[3:])
    error = _refused(auto.finish)
    assert (error.code, error.retryable) == ("PROVIDER_ERROR", True)
    assert auto.provider == "anthropic"


def test_a_document_held_up_to_its_bound_exactly(live: ModuleType) -> None:
    """A document of exactly ``max_sse_event_bytes`` bytes fed in two pieces
    is held; one byte more is refused."""
    document = b'{"type":"error","error":{"type":"overloaded_error","message":"' + b"x" * 200 + b'"}}'
    limits = decisions.Limits(max_sse_event_bytes=len(document))
    auto = decisions.StreamAssembler(limits=limits)
    auto.feed(document[:10])
    auto.feed(document[10:])
    assert _refused(auto.finish).code == "PROVIDER_ERROR"
    over = decisions.StreamAssembler(limits=limits)
    over.feed(document[:10])
    error = _refused(lambda: over.feed(document[10:] + b" "))
    assert error.code == "NOT_A_RESPONSE_BODY"
    assert error.message.endswith(f"longer than max_sse_event_bytes ({len(document)})")
    assert error.offset == 0  # at its first byte, as a named provider's assembler says


_LONG = b"0." + b"1" * 300  # a number longer than the default bound, within 500
_ANTHROPIC_BODY = (
    b'{"id": "m1", "type": "message", "role": "assistant", "model": "x", "x": ' + _LONG + b", "
    b'"content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn", '
    b'"usage": {"input_tokens": 1, "output_tokens": 1}}'
)


def test_a_body_is_detected_under_the_callers_limits(live: ModuleType) -> None:
    limits = decisions.Limits(max_number_length=500)
    response = decisions.normalize(_ANTHROPIC_BODY, limits=limits)
    assert (response.provider, response.text) == ("anthropic", "hi")
    assert response == live.normalize(_ANTHROPIC_BODY, provider="anthropic", limits=limits)


def test_a_body_that_is_no_json_is_refused_by_a_mapper(live: ModuleType) -> None:
    with pytest.raises(OutputError) as expected:
        live.normalize(b"{bad", provider="openai-chat")
    error = _refused(lambda: decisions.normalize(b"{bad"))
    assert error.to_dict() == expected.value.to_dict()


def test_a_detected_body_is_read_with_the_callers_choice_and_limits(live: ModuleType) -> None:
    def choice(index: int, text: str) -> dict[str, Any]:
        return {"index": index, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}

    body = {
        "id": "c",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [choice(0, "a"), choice(1, "b")],
    }
    assert decisions.normalize(body, choice=1).text == "b"
    assert decisions.normalize(json.dumps(body), choice=0).text == "a"
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    message = {"role": "assistant", "content": None, "tool_calls": [call, {**call, "id": "c2"}]}
    calls = {**body, "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}]}
    limits = decisions.Limits(max_calls_per_response=1)
    with pytest.raises(OutputError) as expected:
        live.normalize(calls, provider="openai-chat", limits=limits)
    assert _refused(lambda: decisions.normalize(calls, limits=limits)).to_dict() == expected.value.to_dict()


def test_a_told_document_is_read_under_the_callers_limits(live: ModuleType) -> None:
    document = b'{"type": "error", "x": ' + _LONG + b', "error": {"type": "overloaded_error", "message": "Over"}}'
    auto = decisions.StreamAssembler(limits=decisions.Limits(max_number_length=500))
    auto.feed(document)
    error = _refused(auto.finish)
    assert (error.code, str(error), auto.provider) == (
        "PROVIDER_ERROR",
        "PROVIDER_ERROR: overloaded_error: Over",
        "anthropic",
    )


@pytest.mark.parametrize(
    "document",
    [b'{"type": "response_started", "response_id": "r"}', b'{"a": 1}'],
    ids=["a canonical event", "no provider's"],
)
def test_a_told_document_is_read_as_a_body(live: ModuleType, document: bytes) -> None:
    """A stream that is one JSON document is told as a body is: a canonical
    event is no body, so no assembler reads it."""
    auto = decisions.StreamAssembler()
    auto.feed(b" " + document)
    error = _refused(auto.finish)
    assert (error.code, error.message, error.offset, auto.provider) == (
        "NOT_A_RESPONSE_BODY",
        "the stream is a JSON document, not an event stream (a whole response body is read with normalize)",
        1,
        "auto",
    )


def test_a_form_feed_is_no_whitespace_before_a_document(live: ModuleType) -> None:
    """Only JSON's whitespace may come before a document: after a form feed
    the bytes are an event stream (here, one line left unterminated), not a document."""
    auto = decisions.StreamAssembler()
    auto.feed(b"\x0c" + b'{"type": "error", "error": {"type": "overloaded_error", "message": "Over"}}')
    assert _refused(auto.finish).code == "SSE_UNTERMINATED_EVENT"
