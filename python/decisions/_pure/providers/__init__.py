"""Provider mappers (pure twin of ``rust/src/core/providers``): one provider's
wire events or whole body in, canonical events out. ``mapper_for`` is the only
place that knows the provider ids.

The template is ``_shape``: every event passed the envelope rule before a
mapper sees it, and the mapper checks each documented field with a shape
reader when it reaches it, in the Rust mapper's order, so both backends give
the same code, message and JSON path (every mapper follows it). What the two
OpenAI mappers share is in ``_openai``, never in one of them.
Adding a provider: README, "Adding a provider".
"""

from __future__ import annotations

from typing import Any, Callable, Protocol

from ...providers import ANTHROPIC, GEMINI, OPENAI_CHAT, OPENAI_RESPONSES, PROVIDERS
from ...types import CanonicalEvent
from .anthropic import AnthropicMapper
from .gemini import GeminiMapper
from .openai_chat import OpenAIChatMapper
from .openai_responses import OpenAIResponsesMapper

__all__ = ["Mapper", "PROVIDERS", "mapper_for"]


class Mapper(Protocol):
    """Maps one provider's events to canonical events."""

    #: provider event types seen but not known, with their counts
    unknown_events: dict[str, int]

    def map_event(self, event: str | None, payload: Any) -> list[CanonicalEvent]:
        """One provider event: its SSE ``event:`` name (or None) and its ``data``
        already decoded from JSON (the assembler decodes it and reports
        undecodable data as ``MALFORMED_EVENT``)."""
        ...

    def end(self) -> list[CanonicalEvent]:
        """The end of the provider stream (EOF)."""
        ...

    def map_body(self, body: Any) -> list[CanonicalEvent]:
        """A whole non-streaming response body, decoded from JSON."""
        ...


# Optional: ``limit_arguments(max_bytes)``: ``max_call_argument_bytes``, for a
# mapper that assembles a call's arguments itself before it emits them
# (Gemini's streamed ``partialArgs``): it refuses them as soon as they pass
# the bound, not once the whole value is held.
#
# Optional: ``ARGUMENT_FIELDS``: the fields of the provider's events and bodies
# that carry a tool call's arguments as a JSON object (see ``_pure/envelope.py``).
#
# Optional: ``fast_event(event, payload, assembler) -> bool | tuple``: the
# mapper's common events applied straight to the assembler's entry points
# (``call_started``, ``item_ended``, ``finished``..., each the same as
# ``apply`` of its event object), with the same effect on the mapper's state
# as ``map_event`` and the same calls in the same order as ``map_event``'s
# events would be applied (never a placement); False, with nothing changed,
# for any other event, which then goes through ``map_event``; when taken,
# True, or ``(key, delta)`` for a delta event: one whose only varying part is
# the string ``delta`` continuing what ``key`` names, which
# ``more_delta(key, delta, assembler) -> bool`` takes as ``fast_event`` does
# (the same event with another string in its place).
# With ``more_delta`` the pipeline learns the text around a delta event's
# string and reads the next such events without decoding them
# (``pipeline._DeltaText``). Not used when events are kept.
#
# Optional: ``fast_body(body, provider, limits) -> NormalizedResponse | None``:
# the mapper's common whole body straight to its response, exactly what
# ``map_body`` and the assembler give (never an error); None for any other
# body, which then goes through them. ``normalize`` tries it first.
#
# Optional: ``placements: list[tuple[str, int]]``: items the mapper produced
# after later ones (a Responses reasoning item only ``response.completed``
# carries), each with its position among the response's items; the pipeline
# hands them to ``Assembler.place`` and clears the list.


#: provider id -> factory taking the selected ``choice`` (or None).
_FACTORIES: dict[str, Callable[[int | None], Mapper]] = {
    OPENAI_CHAT: OpenAIChatMapper,
    OPENAI_RESPONSES: OpenAIResponsesMapper,
    ANTHROPIC: AnthropicMapper,
    GEMINI: GeminiMapper,
}


def mapper_for(provider: str, choice: int | None = None) -> Mapper | None:
    """The mapper for ``provider``, or None if the id is unknown."""
    factory = _FACTORIES.get(provider)
    return None if factory is None else factory(choice)
