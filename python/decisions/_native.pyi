"""Type stub of the compiled Rust core, ``decisions._native``.

The module is private: use the names re-exported by ``decisions``. Its pure
Python twin, ``decisions._pure``, exposes the same names with the same
signatures. ``mypy.stubtest decisions._native`` checks this file against the
built extension (``make lint``).
"""

from typing import Final

__all__ = ["__version__", "error_codes", "default_limits"]

__version__: Final[str]

def error_codes() -> list[tuple[str, str]]:
    """Every error code the core can produce, with its layer: ``[(code, layer)]``."""

def default_limits() -> list[tuple[str, int]]:
    """The core's default limits as ``[(field, value)]`` (compared with ``decisions.Limits()``)."""
