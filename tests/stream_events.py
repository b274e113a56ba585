"""Canonical-shape provider events fed to one backend's assembler."""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

from decisions.types import NormalizedResponse


def fed_events(impl: ModuleType, provider: str, events: list[Any]) -> NormalizedResponse:
    """``events`` (JSON values) fed one by one as event data, then finished."""
    assembler = impl.StreamAssembler(provider)
    for event in events:
        assembler.feed_event(json.dumps(event))
    response: NormalizedResponse = assembler.finish()
    return response
