"""Deterministic JSON text for values a provider sends as objects (Anthropic
``tool_use.input`` in whole bodies, Gemini ``functionCall.args``): keys
sorted, no whitespace, non-ASCII kept, floats as Python's ``repr``. The Rust
twin (``core/providers/jsontext.rs``) writes the same text for the same value.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["dumps"]


def dumps(value: Any) -> str:
    """The canonical arguments text of ``value``."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
