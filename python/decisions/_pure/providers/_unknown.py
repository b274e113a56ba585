"""Bounded bookkeeping of provider names that no mapper knows (pure twin of
``rust/src/core/providers/unknown.rs``).

A mapper counts each unknown event type, item type or part key it sees. The
names come from the provider, so what is kept is bounded: at most
:data:`MAX_NAMES` distinct names, each cut to :data:`MAX_NAME_CHARS` characters
(a cut name ends with ``…``); every name past the cap is counted under
:data:`OVERFLOW`. Memory stays flat whatever the stream sends.
"""

from __future__ import annotations

from typing import Final

__all__ = ["MAX_NAMES", "MAX_NAME_CHARS", "MAX_RECORDED_ITEMS", "OVERFLOW", "count_unknown"]

#: distinct names kept with their own count
MAX_NAMES: Final = 64
#: characters kept of one name (a longer name is cut and ends with "…")
MAX_NAME_CHARS: Final = 64
#: the key counting every name past ``MAX_NAMES``
OVERFLOW: Final = "<other>"
#: unknown items a mapper keeps state for (to pair their start and stop);
#: one more is ``TOO_MANY_ITEMS_IN_RESPONSE``, as a known item past the limit is
MAX_RECORDED_ITEMS: Final = 4096


def count_unknown(counts: dict[str, int], name: str) -> None:
    """Count one sighting of ``name`` in ``counts``, within the bounds."""
    if len(name) > MAX_NAME_CHARS:
        name = name[:MAX_NAME_CHARS] + "…"
    seen = counts.get(name)
    if seen is not None:
        counts[name] = seen + 1
    elif len(counts) - (OVERFLOW in counts) < MAX_NAMES:
        counts[name] = 1
    else:
        counts[OVERFLOW] = counts.get(OVERFLOW, 0) + 1
