"""``StreamAssembler()`` and ``normalize(body)`` with ``provider="auto"``:
the provider is told from the first event or the body's shape, the response
names it, an ambiguous input is ``AMBIGUOUS_PROVIDER`` listing the
candidates, and a named provider gets the backend's own assembler."""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import pytest

import decisions
from decisions import StreamAssembler, StreamError, normalize
from decisions.examples import EXAMPLES, load

STREAMS = {e.name: e for e in EXAMPLES if e.file.endswith(".sse")}
BODIES = {e.name: e for e in EXAMPLES if e.file.endswith(".json")}
EXPECTED = {
    "healthy": "openai-chat",
    "parallel": "anthropic",
    "truncated": "anthropic",
    "invalid_escape": "openai-responses",
    "unknown_tool": "gemini",
    "path_escape": "openai-chat",
}


@pytest.fixture(autouse=True)
def backend(impl: ModuleType, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """Detection builds the live backend's assembler: make each backend live in turn."""
    monkeypatch.setattr(decisions._backend, "impl", impl)
    return impl


def _chunks(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


@pytest.mark.parametrize("name", sorted(STREAMS))
@pytest.mark.parametrize("size", [1, 7, 64, 1 << 20])
def test_a_stream_in_any_chunking_is_detected_from_its_first_event(backend: ModuleType, name: str, size: int) -> None:
    data = load(STREAMS[name])
    expected = EXPECTED[name]
    direct = backend.StreamAssembler(expected, keep_events=True)
    direct.feed(data)
    auto = StreamAssembler(keep_events=True)
    assert auto.provider == "auto" and auto.state == "init"
    for chunk in _chunks(data, size):
        auto.feed(chunk)
    assert auto.provider == expected
    response = auto.finish()
    assert response == direct.finish() and response.provider == expected
    assert auto.take_events() == direct.take_events()
    assert auto.feed.__self__.__class__ is backend.StreamAssembler  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", sorted(STREAMS))
def test_decoded_events_are_detected_too(name: str) -> None:
    data = load(STREAMS[name]).decode()
    payloads = [line[5:].strip() for line in data.splitlines() if line.startswith("data:")]
    payloads = [p for p in payloads if p != "[DONE]"]
    auto = StreamAssembler()
    for payload in payloads:
        auto.feed_event(json.loads(payload))
    assert auto.finish().provider == EXPECTED[name]


@pytest.mark.parametrize("name", sorted(BODIES))
def test_a_body_is_detected_from_its_shape(backend: ModuleType, name: str) -> None:
    body = load(BODIES[name])
    expected = EXPECTED[name]
    for given in (body, body.decode(), json.loads(body)):
        response = normalize(given)
        assert response.provider == expected
        assert response == backend.normalize(body, provider=expected)


def test_canonical_events_are_detected() -> None:
    backend = StreamAssembler("openai-chat", keep_events=True)
    backend.feed(load(STREAMS["healthy"]))
    response = backend.finish()
    front = StreamAssembler()
    for event in backend.take_events():
        front.feed_event(event)
    rebuilt = front.finish()
    assert front.provider == "canonical" and rebuilt.items == response.items


@pytest.mark.parametrize(
    ("payload", "candidates"),
    [
        ({"hello": "world"}, ["openai-chat", "openai-responses", "anthropic", "gemini", "canonical"]),
        ({"choices": [], "candidates": []}, ["openai-chat", "gemini"]),
        ({"type": "message_start", "object": "chat.completion.chunk"}, ["openai-chat", "anthropic"]),
        ([1, 2], ["openai-chat", "openai-responses", "anthropic", "gemini", "canonical"]),
        ("not json at all", ["openai-chat", "openai-responses", "anthropic", "gemini", "canonical"]),
    ],
)
def test_an_ambiguous_first_event_lists_the_candidates(payload: object, candidates: list[str]) -> None:
    data = payload if isinstance(payload, str) else json.dumps(payload)
    for feed in ("bytes", "event"):
        auto = StreamAssembler()
        with pytest.raises(StreamError) as info:
            if feed == "bytes":
                auto.feed(f"data: {data}\n\n".encode())
            else:
                auto.feed_event(data)
        error = info.value
        assert error.code == "AMBIGUOUS_PROVIDER" and error.path == "$"
        assert [issue["expected"] for issue in error.issues] == candidates
        assert "candidates: " + ", ".join(candidates) in error.message


def test_an_ambiguous_body_lists_the_candidates() -> None:
    with pytest.raises(StreamError) as info:
        normalize({"choices": [], "usageMetadata": {}})
    assert info.value.code == "AMBIGUOUS_PROVIDER"
    assert [issue["expected"] for issue in info.value.issues] == ["openai-chat", "gemini"]
    with pytest.raises(StreamError) as info:
        normalize(b'{"type": "response_started"}')  # canonical is a stream format, not a body
    assert [issue["expected"] for issue in info.value.issues] == [
        "openai-chat",
        "openai-responses",
        "anthropic",
        "gemini",
    ]


def test_a_named_provider_gets_the_backends_own_assembler(backend: ModuleType) -> None:
    for provider in decisions.PROVIDER_IDS:
        assembler = StreamAssembler(provider)
        assert type(assembler) is backend.StreamAssembler
        assert isinstance(assembler, StreamAssembler)
    assert isinstance(StreamAssembler(), StreamAssembler)
    with pytest.raises(ValueError):
        StreamAssembler("nope")


@pytest.mark.parametrize(
    "options, error",
    [({"choice": -1}, ValueError), ({"choice": True}, ValueError), ({"keep_events": 1}, TypeError)],
)
def test_an_auto_assembler_refuses_bad_options_at_once(options: dict[str, Any], error: type[Exception]) -> None:
    """``StreamAssembler()`` checks its options as a named provider's
    assembler does, when it is made, not when the first event arrives."""
    with pytest.raises(error):
        StreamAssembler(**options)
    with pytest.raises(error):
        StreamAssembler("openai-chat", **options)


@pytest.mark.parametrize("data", [5, [100, 97], "data: x\n\n", None], ids=["int", "list", "str", "none"])
def test_an_auto_assembler_feeds_only_bytes(data: Any) -> None:
    """``feed`` of the auto assembler takes bytes as the backend's does (an
    int was fed as that many NUL bytes, a list of ints as their bytes)."""
    with pytest.raises(TypeError) as auto:
        StreamAssembler().feed(data)
    with pytest.raises(TypeError) as named:
        StreamAssembler("openai-chat").feed(data)
    assert str(auto.value) == str(named.value) == f"feed() takes bytes, not {type(data).__name__}"


@pytest.mark.parametrize("payload", [5, None, [{}], ("{}",)])
def test_an_auto_assembler_takes_only_event_payloads(payload: Any) -> None:
    """``feed_event`` of the auto assembler refuses what the backend's refuses,
    with its TypeError (it was ``AMBIGUOUS_PROVIDER``, a provider output error)."""
    with pytest.raises(TypeError) as auto:
        StreamAssembler().feed_event(payload)
    with pytest.raises(TypeError) as named:
        StreamAssembler("gemini").feed_event(payload)
    assert str(auto.value) == str(named.value)


class _OtherBytes(bytes):
    def __bytes__(self) -> bytes:
        return b"data: [2]\n\n"


def test_an_auto_assembler_reads_the_bytes_held() -> None:
    """A bytes subclass is read as the bytes it holds (not its ``__bytes__``),
    by detection as by the backend."""
    data = _OtherBytes(load(STREAMS["healthy"]))
    auto = StreamAssembler()
    auto.feed(data)
    named = StreamAssembler(EXPECTED["healthy"])
    named.feed(data)
    assert auto.finish() == named.finish()


def test_an_auto_stream_that_ends_early_is_typed() -> None:
    empty = StreamAssembler()
    with pytest.raises(StreamError) as info:
        empty.finish()
    assert info.value.code == "NO_TERMINAL_EVENT"
    cut = StreamAssembler()
    cut.feed(b'data: {"choi')
    with pytest.raises(StreamError) as info:
        cut.finish()
    assert info.value.code == "SSE_UNTERMINATED_EVENT"
    aborted = StreamAssembler()
    aborted.abort()
    with pytest.raises(StreamError) as info:
        aborted.feed(b"data: {}\n\n")
    assert info.value.code == "STREAM_CANCELLED"


def test_pings_before_the_first_event_are_bounded() -> None:
    limits = decisions.Limits(max_bytes_without_data=1024)
    auto = StreamAssembler(limits=limits)
    with pytest.raises(StreamError) as info:
        for _ in range(100):
            auto.feed(b": keep-alive\n\n")
    assert info.value.code == "SSE_NO_DATA"


def _deep(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = {"k": value}
    return value


_ANTHROPIC = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "stop_reason": None}
_BIG_AND_DEEP = [
    # over max_document_bytes (8 MiB), within max_sse_event_bytes (32 MiB): a body normalize reads
    (
        "anthropic",
        {**_ANTHROPIC, "stop_reason": "end_turn", "content": [{"type": "text", "text": "x" * (9 << 20)}]},
    ),
    (
        "openai-chat",
        {
            "id": "c",
            "object": "chat.completion",
            "model": "m",
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": "x" * (9 << 20)}, "finish_reason": "stop"}
            ],
        },
    ),
    # tool arguments nested past max_depth (64), within the envelope's 100 levels: the parse error of the arguments
    (
        "anthropic",
        {
            **_ANTHROPIC,
            "stop_reason": "tool_use",
            "content": [{"type": "tool_use", "id": "t", "name": "f", "input": _deep(70)}],
        },
    ),
    (
        "gemini",
        {
            "responseId": "r",
            "candidates": [
                {
                    "index": 0,
                    "finishReason": "STOP",
                    "content": {"parts": [{"functionCall": {"name": "f", "args": _deep(70)}}]},
                }
            ],
        },
    ),
]


def _outcome(body: str, **options: Any) -> Any:
    try:
        return normalize(body, **options)
    except StreamError as error:
        return (error.code, error.message, error.path)
    except decisions.ParseError as error:
        return (error.code, error.message, error.path, error.offset)


@pytest.mark.parametrize(
    ("provider", "body"), _BIG_AND_DEEP, ids=["big-anthropic", "big-chat", "deep-anthropic", "deep-gemini"]
)
def test_a_body_normalize_reads_is_detected_whatever_its_size_or_depth(provider: str, body: Any) -> None:
    """Detection reads a body under the limits ``normalize`` reads it with, not
    those of one JSON document: the outcome is the named provider's."""
    text = json.dumps(body)
    named, auto = _outcome(text, provider=provider), _outcome(text)
    assert auto == named
    if isinstance(named, tuple):
        assert named[0] == "DEPTH_EXCEEDED"
    else:
        assert named.provider == provider
