"""Typed stub of the compiled module ``decisions._native`` (the Rust core).

``decisions._pure`` exposes the same names with the same behaviour. The
module is private: use the names ``decisions`` re-exports. ``make typecheck``
runs ``mypy.stubtest decisions._native`` against the built extension; every
name the module exports must be in ``__all__`` here.
"""

from typing import Any

from .limits import Limits

__all__ = ["__version__", "error_codes", "default_limits", "loads"]

__version__: str

def error_codes() -> list[tuple[str, str]]:
    """Every error code the core can produce, with its layer: ``[(code, layer)]``."""

def default_limits() -> list[tuple[str, int]]:
    """The core's default limits as ``[(field, value)]`` (compared with ``decisions.Limits()``)."""

def loads(data: str | bytes | bytearray | memoryview, /, *, limits: Limits | None = None) -> Any:
    """Parse one strict JSON document (RFC 8259 + I-JSON) into plain Python values.

    Raises :class:`decisions.ParseError` with the code and character offset of
    the first rule broken (the rules are in ``decisions._pure.json``).
    """
