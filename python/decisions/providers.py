"""The provider ids, in one table: the wire formats the mappers read (the
same list as ``decisions._native.PROVIDERS``, a test checks it) and the
``"canonical"`` event format of :mod:`decisions.stream.wire`."""

from __future__ import annotations

from typing import Final

__all__ = ["OPENAI_CHAT", "OPENAI_RESPONSES", "ANTHROPIC", "GEMINI", "CANONICAL", "PROVIDERS", "PROVIDER_IDS", "DONE"]

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
