"""The recorded OpenAI Chat / Responses streams and bodies under
tests/fixtures, and how to run one through a backend."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from types import ModuleType
from typing import Any

from decisions.errors import OutputError
from decisions.types import NormalizedResponse

FIXTURES = Path(__file__).parent / "fixtures"

#: error-only or untagged bodies of the two APIs that FEATURES.tsv files elsewhere
_EXTRA = {
    "vercel-ai/packages/azure/src/__fixtures__/azure-deepseek-reasoning.1.json": "openai-chat",
    "vercel-ai/packages/openai/src/chat/__fixtures__/reasoning-model-legacy-parameter-error.json": "openai-chat",
    "vercel-ai/packages/openai/src/responses/__fixtures__/openai-error.1.json": "openai-responses",
    "vercel-ai/packages/openai/src/responses/__fixtures__/reasoning-model-temperature-error.json": "openai-responses",
}


def recordings(provider: str) -> list[tuple[str, str]]:
    """``(path, file_format)`` of every recording of ``provider``."""
    text = (FIXTURES / "FEATURES.tsv").read_text(encoding="utf-8")
    found = []
    for row in csv.DictReader(text.splitlines(), delimiter="\t"):
        if row["api"] == provider or _EXTRA.get(row["path"]) == provider:
            found.append((row["path"], row["file_format"]))
    return found


def short(path: str) -> str:
    """A test id: the file name."""
    return path.rsplit("/", 1)[-1]


def lines(path: str) -> list[str]:
    """The non-empty lines of a one-event-per-line recording."""
    return [line for line in (FIXTURES / path).read_text(encoding="utf-8").splitlines() if line.strip()]


def run(impl: ModuleType, provider: str, path: str, file_format: str, **options: Any) -> NormalizedResponse:
    """Feed one recording to ``impl`` as it was recorded: raw SSE bytes to
    ``feed``, one event per line to ``feed_event``, a body to ``normalize``."""
    data = (FIXTURES / path).read_bytes()
    if file_format == "raw-sse":
        assembler = impl.StreamAssembler(provider, **options)
        assembler.feed(data)
        return assembler.finish()
    if file_format == "jsonl":
        return run_events(impl, provider, lines(path), **options)
    return impl.normalize(data, provider=provider, **options)


def run_events(impl: ModuleType, provider: str, events: list[Any], **options: Any) -> NormalizedResponse:
    """Feed already-decoded events (JSON text or dicts) and finish."""
    assembler = impl.StreamAssembler(provider, **options)
    for event in events:
        assembler.feed_event(event)
    return assembler.finish()


def outcome(impl: ModuleType, provider: str, path: str, file_format: str, **options: Any) -> Any:
    """The response, or ``(error class name, code)``: anything else propagates."""
    try:
        return run(impl, provider, path, file_format, **options)
    except OutputError as err:
        return (type(err).__name__, err.code)


def sse(events: list[Any]) -> bytes:
    """Events (dicts or the ``[DONE]`` str) framed as an SSE stream."""
    out = []
    for event in events:
        data = event if isinstance(event, str) else json.dumps(event)
        out.append(f"data: {data}\n\n")
    return "".join(out).encode()
