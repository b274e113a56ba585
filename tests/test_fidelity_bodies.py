"""Whole bodies named as bodies, on both backends: a body without a finish
signal, a background-mode Responses body not finished yet, and error pages
that are not JSON (gateway bodies as proxies send them)."""

from __future__ import annotations

import json
from types import ModuleType

import pytest

from conftest import FIXTURES
from decisions.errors import StreamError


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
