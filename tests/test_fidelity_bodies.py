"""Whole bodies named as bodies, on both backends: a body without a finish
signal, a background-mode Responses body not finished yet, and error pages
that are not JSON (gateway bodies as proxies send them)."""

from __future__ import annotations

import json
from types import ModuleType

import pytest

from conftest import FIXTURES
from decisions.errors import OutputError, StreamError


def refused(impl: ModuleType, body: str | bytes, provider: str) -> StreamError:
    with pytest.raises(StreamError) as caught:
        impl.normalize(body, provider=provider)
    return caught.value


RESPONSES = FIXTURES / "vercel-ai" / "packages" / "openai" / "src" / "responses" / "__fixtures__"


@pytest.mark.parametrize(
    ("provider", "body"),
    [
        (
            "openai-responses",
            {
                k: v
                for k, v in json.loads((RESPONSES / "openai-custom-tool.1.json").read_text()).items()
                if k != "status"
            },
        ),
        ("gemini", []),
    ],
)
def test_a_body_without_finish_signal(impl: ModuleType, provider: str, body: object) -> None:
    err = refused(impl, json.dumps(body), provider)
    assert (err.code, err.retryable) == ("BODY_NOT_FINISHED", True)
    assert "terminal event" not in err.message and "stream" not in err.message


@pytest.mark.parametrize("status", ["queued", "in_progress"])
def test_a_background_responses_body_not_finished(impl: ModuleType, status: str) -> None:
    # the shape of POST /responses with background=true (OpenAI background mode)
    body = {
        "id": "resp_68b7c5d1",
        "object": "response",
        "status": status,
        "model": "o3",
        "output": [],
        "background": True,
    }
    err = refused(impl, json.dumps(body), "openai-responses")
    assert (err.code, err.retryable) == ("RESPONSE_NOT_FINISHED", True)
    assert "resp_68b7c5d1" in err.message and status in err.message


@pytest.mark.parametrize(
    ("body", "looks"),
    [
        ("upstream connect error or disconnect/reset before headers. reset reason: overflow", "text"),
        ("<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1>", "HTML"),
        (b"Internal Server Error", "text"),
    ],
)
@pytest.mark.parametrize("provider", ["openai-chat", "openai-responses", "anthropic", "gemini"])
def test_an_error_page_is_not_a_response(impl: ModuleType, body: str | bytes, looks: str, provider: str) -> None:
    err = refused(impl, body, provider)
    assert err.code == "NOT_A_RESPONSE_BODY"
    assert looks in err.message and "event data" not in err.message
    text = body if isinstance(body, str) else body.decode()
    assert text[:40] in err.message


def test_streams_keep_their_own_codes(impl: ModuleType) -> None:
    assembler = impl.StreamAssembler("openai-chat")
    with pytest.raises(StreamError) as caught:
        assembler.feed(b"data: upstream connect error\n\n")
    assert caught.value.code == "MALFORMED_EVENT"


#: One small finished body of each provider, and a dump of canonical events.
_BODIES: dict[str, object] = {
    "openai-chat": {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "gpt-4o",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
    },
    "openai-responses": {
        "id": "resp_1",
        "object": "response",
        "status": "completed",
        "model": "o3",
        "output": [
            {"type": "message", "id": "msg_1", "role": "assistant", "content": [{"type": "output_text", "text": "hi"}]}
        ],
    },
    "anthropic": {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude",
        "content": [{"type": "text", "text": "hi"}],
        "stop_reason": "end_turn",
    },
    "gemini": {
        "candidates": [{"content": {"role": "model", "parts": [{"text": "hi"}]}, "finishReason": "STOP"}],
        "modelVersion": "gemini-2.0",
    },
    "canonical": [
        {"type": "response_started", "response_id": "r"},
        {"type": "item_started", "item_id": "a", "kind": "text"},
        {"type": "text_delta", "item_id": "a", "delta": "hi"},
        {"type": "item_ended", "item_id": "a"},
        {"type": "response_finished", "finish_reason": "stop"},
    ],
}
_LOOKS = {
    "openai-chat": "an OpenAI Chat Completions response",
    "openai-responses": "an OpenAI Responses response",
    "anthropic": "an Anthropic Messages response",
    "gemini": "a Google Gemini response",
    "canonical": "a JSON array of canonical events",
}


@pytest.mark.parametrize("provider", list(_BODIES))
def test_each_body_is_read_by_its_own_provider(impl: ModuleType, provider: str) -> None:
    assert [item.text for item in impl.normalize(json.dumps(_BODIES[provider]), provider=provider).items] == ["hi"]


@pytest.mark.parametrize(("source", "given"), [(s, g) for s in _BODIES for g in _BODIES if s != g])
@pytest.mark.parametrize("form", ["text", "object"])
def test_another_providers_body_says_what_it_looks_like(impl: ModuleType, source: str, given: str, form: str) -> None:
    """Every cross pairing (a mapper that reads it as nothing, or fails to read
    it) names the body's look, not the mapper's complaint."""
    body = _BODIES[source]
    err = refused(impl, json.dumps(body) if form == "text" else body, given)  # type: ignore[arg-type]
    assert (err.code, err.retryable, err.path) == ("NOT_A_RESPONSE_BODY", False, None)
    assert err.message == f"the body is not a response of provider '{given}': this looks like {_LOOKS[source]}"


#: Shapes near and across the rule's lines, hostile member types included.
_SHAPES: list[object] = [
    {"choices": None},
    {"choices": []},
    {"object": "chat.completion"},
    {"object": "chat.completion.chunk", "x": 1},
    {"object": ["chat.completion"]},
    {"object": {"chat.completion": 1}},
    {"object": "response"},
    {"object": "respons\u0065"},
    {"type": "response.completed"},
    {"type": "respons\u0065.created"},
    {"type": ["message_start"]},
    {"type": {"message_start": 1}},
    {"type": 1, "content": []},
    {"type": None, "candidates": []},
    {"type": "message", "content": None},
    {"type": "message"},
    {"type": "message_start"},
    {"type": "ping"},
    {"type": "error", "error": {"message": "x"}},
    {"type": "error", "error": "x"},
    {"type": "error", "error": None},
    {"type": "error", "error": [1]},
    {"type": "response_started"},
    {"candidates": None},
    {"promptFeedback": {}},
    {"usageMetadata": 1},
    {"modelVersion": "m"},
    {"choices": [], "candidates": []},
    {"object": "response", "type": "message", "content": []},
    {"error": {"message": "x"}},
    {"hello": "world"},
    {},
    [],
    [1, 2],
    [[{"type": "message_start"}]],
    [{"type": "message_start"}],
    [{"type": "response.created"}],
    [{"object": "chat.completion.chunk"}],
    [{"candidates": []}],
    [{"type": "item_started"}, 1],
    [{"type": ["response_started"]}],
    "text",
    1,
    None,
]


@pytest.mark.parametrize("shape", _SHAPES, ids=[json.dumps(s)[:40] for s in _SHAPES])
@pytest.mark.parametrize("given", list(_BODIES))
def test_both_backends_tell_a_body_alike(both: tuple[ModuleType, ModuleType], shape: object, given: str) -> None:
    """The Rust core's copy of the rule of ``decisions.providers.candidates``
    agrees with it: the same outcome on both backends (the mappers' own
    messages aside), and the look named is the rule's."""
    from decisions.providers import looks_like

    def outcome(impl: ModuleType) -> tuple[str, str]:
        try:
            return ("ok", repr(impl.normalize(json.dumps(shape), provider=given)))
        except OutputError as err:
            return (err.code, err.message if err.code == "NOT_A_RESPONSE_BODY" else "")

    native, pure = both
    assert outcome(native) == outcome(pure)
    code, message = outcome(pure)
    what = looks_like(given, shape)
    if "this looks like" in message:
        assert (code, message.split("this looks like ")[1]) == ("NOT_A_RESPONSE_BODY", what)
    elif what is not None:
        assert code not in ("ok", "MALFORMED_EVENT", "BODY_NOT_FINISHED")  # a failure of its own kind


def test_a_hostile_type_member_is_no_crash() -> None:
    """``candidates`` reads a ``type`` of any JSON type (a list is unhashable)."""
    from decisions.detect import candidates

    for kind in ([], ["message_start"], {}, {"a": 1}, 1, 1.5, True, None):
        assert candidates({"type": kind}) == ()
        assert candidates({"type": kind, "candidates": []}, stream=False) == ("gemini",)


_SHAPELESS = [
    ("openai-responses", {}, "it has none of the members {} response has"),
    ("openai-responses", {"hello": "world", "id": "x"}, "it has none of the members {} response has"),
    ("gemini", {}, "it has none of the members {} response has"),
    ("gemini", {"hello": "world", "id": "x"}, "it has none of the members {} response has"),
    ("gemini", [{}], "it is a JSON array of no provider's events"),
    ("gemini", [{"hello": 1}, {"candidates": []}], "it is a JSON array of no provider's events"),
]
_ARTICLE_TITLES = {
    "openai-chat": "an OpenAI Chat Completions",
    "openai-responses": "an OpenAI Responses",
    "anthropic": "an Anthropic Messages",
    "gemini": "a Google Gemini",
}


@pytest.mark.parametrize(
    ("provider", "body", "what"), _SHAPELESS, ids=[f"{p}-{json.dumps(b)}" for p, b, _ in _SHAPELESS]
)
@pytest.mark.parametrize("form", ["text", "object"])
def test_a_body_of_no_providers_shape_is_not_a_response(
    impl: ModuleType, provider: str, body: object, what: str, form: str
) -> None:
    """A body the mapper reads as nothing (Gemini's), or as a response
    without a finish signal (Responses'), that has no provider's shape at all
    is not an empty response and not an unfinished one: NOT_A_RESPONSE_BODY
    saying what it is. (A body the mapper cannot read keeps the mapper's
    MALFORMED_EVENT and the path it names.)"""
    if form == "object" and not isinstance(body, dict):
        pytest.skip("only an object is given as a dict")
    err = refused(impl, json.dumps(body) if form == "text" else body, provider)
    expected = what.format(_ARTICLE_TITLES[provider])
    assert (err.code, err.retryable) == ("NOT_A_RESPONSE_BODY", False)
    assert err.message == f"the body is not a response of provider {provider!r}: {expected}"


@pytest.mark.parametrize(
    ("provider", "body"),
    [
        ("gemini", {"promptFeedback": {"blockReason": "SAFETY"}}),
        ("gemini", {"usageMetadata": {"promptTokenCount": 1}}),
        ("openai-responses", {"object": "response", "id": "r"}),
    ],
)
def test_a_body_of_its_own_shape_keeps_its_outcome(impl: ModuleType, provider: str, body: object) -> None:
    """The rule above leaves alone every body that has its provider's members."""
    try:
        impl.normalize(json.dumps(body), provider=provider)
    except OutputError as err:
        assert err.code != "NOT_A_RESPONSE_BODY"
