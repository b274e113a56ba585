"""A streaming HTTP response read through ``stream_httpx`` (or its async twin)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

from decisions import OutputError, integrations

URL = "http://test.invalid/"


def finished(http: ModuleType, respond: Callable[[Any], Any], provider: str, asynchronous: bool, **options: Any) -> Any:
    """What ``stream_httpx`` (or ``astream_httpx``) gives for the response
    ``respond`` makes (``http`` is httpx or httpx2): the response, or the
    error ``finish`` raises, which a second ``finish`` must raise again."""
    if not asynchronous:
        with http.Client(transport=http.MockTransport(respond)) as client, client.stream("POST", URL) as response:
            stream = integrations.stream_httpx(response, provider=provider, **options)
            try:
                return stream.finish()
            except OutputError as error:
                with pytest.raises(OutputError) as again:
                    stream.finish()
                assert again.value is error
                return error

    async def run() -> Any:
        async def arespond(request: Any) -> Any:
            return respond(request)

        async with http.AsyncClient(transport=http.MockTransport(arespond)) as client:
            async with client.stream("POST", URL) as response:
                stream = integrations.astream_httpx(response, provider=provider, **options)
                try:
                    return await stream.finish()
                except OutputError as error:
                    with pytest.raises(OutputError) as again:
                        await stream.finish()
                    assert again.value is error
                    return error

    return asyncio.run(run())
