"""A message that is not the model's is never decided: a Chat ``message`` or
``delta``, an Anthropic message (a body, or ``message_start.message``), a
Gemini candidate's ``content`` or an OpenAI Responses ``message`` output item
whose ``role`` is present, not null and not the provider's model role
(``assistant``; Gemini's ``model``) is ``MALFORMED_EVENT`` at the role's path,
with the same message on both backends, bodies and streams.

Each case rewrites the role in a real recorded fixture (``tests/fixtures``)
and nothing else, so the foreign role is the only thing standing between the
input and its decision; the controls (the role null, absent or the model's)
give what the recording gives. The Chat cases include plain bodies and
chunks, which the common-case readers (``fast_body``, ``fast_event``, the
native tree reader) take, so the check is shown to be reached there too.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from conftest import FIXTURES
from decisions.errors import OutputError
from decisions.types import NormalizedResponse

VERCEL = FIXTURES / "vercel-ai" / "packages"
GROQ = VERCEL / "groq" / "src" / "__fixtures__"
DEEPSEEK = VERCEL / "deepseek" / "src" / "chat" / "__fixtures__"
AZURE = VERCEL / "azure" / "src" / "__fixtures__"
ANTHROPIC = VERCEL / "anthropic" / "src" / "__fixtures__"
GOOGLE = VERCEL / "google" / "src" / "__fixtures__"
RESPONSES = VERCEL / "openai" / "src" / "responses" / "__fixtures__"

#: a key of a JSON object or an index of a JSON array
Step = str | int


@dataclass(frozen=True)
class Site:
    """Where a fixture's message carries its role: ``owner`` is the path
    (from the event on ``line``, or from the body when ``line`` is None) of
    the object holding ``role``; ``what`` names the payload in the error."""

    name: str
    provider: str
    fixture: Path
    line: int | None
    owner: tuple[Step, ...]
    what: str

    @property
    def path(self) -> str:
        """The role's path in the error."""
        out = "$"
        for step in (*self.owner, "role"):
            out += f"[{step}]" if isinstance(step, int) else f".{step}"
        return out


SITES = [
    # Chat: a plain body and plain chunks (the common-case readers), a body
    # and a stream with reasoning (the general readers)
    Site(
        "chat plain body",
        "openai-chat",
        GROQ / "groq-tool-call.json",
        None,
        ("choices", 0, "message"),
        "chat.completion",
    ),
    Site(
        "chat body with reasoning",
        "openai-chat",
        DEEPSEEK / "deepseek-tool-call.json",
        None,
        ("choices", 0, "message"),
        "chat.completion",
    ),
    Site(
        "chat first chunk",
        "openai-chat",
        GROQ / "groq-tool-call.chunks.txt",
        0,
        ("choices", 0, "delta"),
        "chat.completion.chunk",
    ),
    Site(
        "chat tool-call chunk",
        "openai-chat",
        GROQ / "groq-tool-call.chunks.txt",
        1,
        ("choices", 0, "delta"),
        "chat.completion.chunk",
    ),
    Site(
        "chat text chunk",
        "openai-chat",
        GROQ / "groq-text.chunks.txt",
        2,
        ("choices", 0, "delta"),
        "chat.completion.chunk",
    ),
    Site(
        "chat chunk with reasoning",
        "openai-chat",
        DEEPSEEK / "deepseek-tool-call.chunks.txt",
        0,
        ("choices", 0, "delta"),
        "chat.completion.chunk",
    ),
    # Anthropic
    Site("anthropic body", "anthropic", ANTHROPIC / "anthropic-tool-no-args.json", None, (), "message body"),
    Site(
        "anthropic message_start",
        "anthropic",
        ANTHROPIC / "anthropic-tool-no-args.chunks.txt",
        0,
        ("message",),
        "message_start event",
    ),
    # Gemini
    Site(
        "gemini body", "gemini", GOOGLE / "google-tool-call.json", None, ("candidates", 0, "content"), "gemini content"
    ),
    Site(
        "gemini first chunk",
        "gemini",
        GOOGLE / "google-tool-call.chunks.txt",
        0,
        ("candidates", 0, "content"),
        "gemini content",
    ),
    Site(
        "gemini last chunk",
        "gemini",
        GOOGLE / "google-tool-call.chunks.txt",
        1,
        ("candidates", 0, "content"),
        "gemini content",
    ),
    # OpenAI Responses: the body's output, and a stream's added item, done
    # item and terminal response (each the only place rewritten)
    Site("responses body", "openai-responses", RESPONSES / "openai-phase.1.json", None, ("output", 1), "response"),
    Site(
        "responses item added",
        "openai-responses",
        RESPONSES / "openai-shell-local-multiturn.1.chunks.txt",
        2,
        ("item",),
        "response.output_item.added",
    ),
    Site(
        "responses item done",
        "openai-responses",
        RESPONSES / "openai-shell-local-multiturn.1.chunks.txt",
        14,
        ("item",),
        "response.output_item.done",
    ),
    Site(
        "responses completed output",
        "openai-responses",
        RESPONSES / "openai-shell-local-multiturn.1.chunks.txt",
        15,
        ("response", "output", 0),
        "response.completed",
    ),
]

MODEL_ROLE = {"openai-chat": "assistant", "anthropic": "assistant", "gemini": "model", "openai-responses": "assistant"}

#: another party's role, as each provider spells its own messages
FOREIGN = ["user", "system", "developer", "tool", "function", "Assistant", "", "model ", "assistant\u0000"]
#: a role that is not a string
NOT_STRINGS: list[Any] = [0, True, ["assistant"], {"role": "assistant"}]


def load(site: Site) -> Any:
    """The fixture: a list of events (one JSON per line) or a body."""
    text = site.fixture.read_text()
    if site.line is None:
        return json.loads(text)
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def with_role(site: Site, role: Any, *, absent: bool = False) -> Any:
    """The fixture with the role at ``site`` set to ``role`` (or removed)."""
    data = copy.deepcopy(load(site))
    owner = data if site.line is None else data[site.line]
    for step in site.owner:
        owner = owner[step]
    if absent:
        owner.pop("role", None)
    else:
        owner["role"] = role
    return data


def run(impl: ModuleType, site: Site, data: Any) -> NormalizedResponse:
    """The fixture's response, as a stream (each event its own SSE frame) or a body."""
    if site.line is None:
        response: NormalizedResponse = impl.normalize(json.dumps(data), provider=site.provider)
        return response
    assembler = impl.StreamAssembler(site.provider)
    for event in data:
        assembler.feed(f"data: {json.dumps(event)}\n\n".encode())
    response = assembler.finish()
    return response


def refusal(impl: ModuleType, site: Site, data: Any) -> OutputError:
    with pytest.raises(OutputError) as caught:
        run(impl, site, data)
    return caught.value


@pytest.mark.parametrize("role", FOREIGN)
@pytest.mark.parametrize("site", SITES, ids=lambda s: s.name)
def test_a_foreign_role_is_refused_at_its_path(impl: ModuleType, site: Site, role: str) -> None:
    error = refusal(impl, site, with_role(site, role))
    assert (error.code, error.path) == ("MALFORMED_EVENT", site.path)
    assert str(error.message) == f'{site.what}: a message of role "{role}" is not the model\'s answer'
    assert not error.retryable


@pytest.mark.parametrize("role", NOT_STRINGS, ids=lambda r: type(r).__name__)
@pytest.mark.parametrize("site", SITES, ids=lambda s: s.name)
def test_a_role_that_is_not_a_string_is_refused_at_its_path(impl: ModuleType, site: Site, role: Any) -> None:
    error = refusal(impl, site, with_role(site, role))
    assert (error.code, error.path) == ("MALFORMED_EVENT", site.path)
    assert str(error.message) == f"{site.what}: a message whose role is not a string is not the model's answer"


@pytest.mark.parametrize("form", ["null", "absent", "model role"])
@pytest.mark.parametrize("site", SITES, ids=lambda s: s.name)
def test_a_null_absent_or_model_role_decides_as_recorded(impl: ModuleType, site: Site, form: str) -> None:
    recorded = run(impl, site, load(site))
    if form == "absent":
        data = with_role(site, None, absent=True)
    else:
        data = with_role(site, None if form == "null" else MODEL_ROLE[site.provider])
    assert run(impl, site, data) == recorded


def test_the_recorded_chat_fixtures_send_the_model_role_then_none_or_null() -> None:
    """What the controls above stand for: Chat servers name the role in the
    first chunk only; Azure sends ``"role": null`` in every later one."""
    groq = load(SITES[2])
    assert [chunk["choices"][0]["delta"].get("role", "absent") for chunk in groq[:2]] == ["assistant", "absent"]
    azure = [json.loads(line) for line in (AZURE / "azure-deepseek-reasoning.1.chunks.txt").read_text().splitlines()]
    roles = {c["choices"][0]["delta"].get("role", "absent") for c in azure if c.get("choices")}
    assert None in roles and roles <= {"assistant", None, "absent"}


@pytest.mark.parametrize("name", ["azure-deepseek-reasoning.1.chunks.txt"])
def test_azure_null_roles_still_decide(impl: ModuleType, name: str) -> None:
    site = Site(name, "openai-chat", AZURE / name, 0, (), "")
    response = run(impl, site, load(site))
    assert response.finish_reason == "stop"
