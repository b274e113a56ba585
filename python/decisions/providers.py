"""The provider ids, in one table: the wire formats the mappers read (the
same list as ``decisions._native.PROVIDERS``, a test checks it) and the
``"canonical"`` event format of :mod:`decisions.stream.wire`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from .types import EVENT_TYPES

__all__ = [
    "OPENAI_CHAT",
    "OPENAI_RESPONSES",
    "ANTHROPIC",
    "GEMINI",
    "CANONICAL",
    "PROVIDERS",
    "PROVIDER_IDS",
    "DONE",
    "TITLES",
    "candidates",
    "looks_like",
    "shapeless",
]

OPENAI_CHAT: Final = "openai-chat"
OPENAI_RESPONSES: Final = "openai-responses"
ANTHROPIC: Final = "anthropic"
GEMINI: Final = "gemini"
#: The package's own event format (``StreamAssembler("canonical")``).
CANONICAL: Final = "canonical"

#: The providers whose responses are mapped, in a stable order.
PROVIDERS: Final[tuple[str, ...]] = (OPENAI_CHAT, OPENAI_RESPONSES, ANTHROPIC, GEMINI)

#: Every provider id ``StreamAssembler`` and ``normalize`` take: the providers
#: above and ``"canonical"`` (``"auto"`` asks for detection, see
#: :mod:`decisions.detect`).
PROVIDER_IDS: Final[tuple[str, ...]] = (*PROVIDERS, CANONICAL)

#: The sentinel OpenAI-style streams send as the last ``data``: not JSON; the
#: envelope rule passes it and the mapper reads it.
DONE: Final = "[DONE]"

#: What each wire format is called in messages.
TITLES: Final[Mapping[str, str]] = {
    OPENAI_CHAT: "OpenAI Chat Completions",
    OPENAI_RESPONSES: "OpenAI Responses",
    ANTHROPIC: "Anthropic Messages",
    GEMINI: "Google Gemini",
    CANONICAL: "canonical",
}

_ANTHROPIC_TYPES: Final = frozenset(
    {
        "message_start",
        "message_delta",
        "message_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "ping",
    }
)
_GEMINI_KEYS: Final = ("candidates", "promptFeedback", "usageMetadata", "modelVersion")


def candidates(payload: object, *, stream: bool = True) -> tuple[str, ...]:
    """Every provider whose wire shape ``payload`` (one decoded event, or a
    whole body with ``stream=False``) matches, in :data:`PROVIDERS` order,
    with ``"canonical"`` last (events only). The Rust core has the same rule
    (``rust/src/core/body.rs``; a test checks they agree)."""
    if not isinstance(payload, Mapping):
        return ()
    kind = payload.get("type")
    kind = kind if isinstance(kind, str) else None  # a value of another JSON type matches no name
    obj = payload.get("object")
    found = []
    if obj in ("chat.completion", "chat.completion.chunk") or "choices" in payload:
        found.append(OPENAI_CHAT)
    if obj == "response" or (kind is not None and kind.startswith("response.")):
        found.append(OPENAI_RESPONSES)
    if (
        kind in _ANTHROPIC_TYPES
        or (kind == "message" and "content" in payload)
        or (kind == "error" and isinstance(payload.get("error"), Mapping))
    ):
        found.append(ANTHROPIC)
    if any(key in payload for key in _GEMINI_KEYS):
        found.append(GEMINI)
    if stream and kind in EVENT_TYPES:
        found.append(CANONICAL)
    return tuple(found)


def _a(title: str) -> str:
    return ("an " if title[0] in "AEIOU" else "a ") + title


def looks_like(provider: str, body: object) -> str | None:
    """What a decoded whole ``body`` given to ``provider`` looks like when its
    shape is another provider's and not ``provider``'s ("an Anthropic
    Messages response", "a JSON array of canonical events"); else None. A
    JSON array is told by its first element, read as a stream event."""
    if isinstance(body, list):
        found = candidates(body[0]) if body else ()
    else:
        found = candidates(body, stream=False)
    if not found or provider in found:
        return None
    if isinstance(body, list):
        return "a JSON array of " + " or ".join(TITLES[name] for name in found) + " events"
    return " or ".join(_a(TITLES[name]) for name in found) + " response"


def shapeless(provider: str, body: object) -> str | None:
    """What a decoded whole ``body`` given to ``provider`` is when it has no
    provider's shape at all (an object with none of the members any
    provider's response has, an array whose first element is no provider's
    event); else None. An empty array is a stream with no chunk yet, not
    finished rather than shapeless."""
    if isinstance(body, list):
        return None if not body or candidates(body[0]) else "it is a JSON array of no provider's events"
    if isinstance(body, Mapping) and not candidates(body, stream=False):
        return f"it has none of the members {_a(TITLES[provider])} response has"
    return None
