"""Deterministic JSON text for values a provider sends as objects (Anthropic
``tool_use.input`` in whole bodies, Gemini ``functionCall.args``): keys
sorted, no whitespace, non-ASCII kept, floats as Python's ``repr``. The Rust
twin (``core/providers/jsontext.rs``) writes the same text for the same value.
"""

from __future__ import annotations

from ..._payload import canonical_json as dumps

__all__ = ["dumps"]
