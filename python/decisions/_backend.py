"""Selects the backend once, at import: the Rust core when it imports, the
pure-Python twin otherwise. ``DECISIONS_PURE=1`` forces the twin, and so does a
free-threaded CPython (the extension is built for the GIL; importing it there
would switch the GIL back on for the whole process). Nothing else in the
package repeats this check.
"""

from __future__ import annotations

import importlib
import os
import sysconfig
import warnings
from types import ModuleType
from typing import Literal

from . import _pure
from ._version import __version__

__all__ = ["BACKEND", "impl", "native_module", "pure"]


def _forced_pure() -> bool:
    return os.environ.get("DECISIONS_PURE", "").strip().lower() not in ("", "0", "false", "no")


def free_threaded() -> bool:
    """True on a free-threaded (``--disable-gil``) CPython build."""
    return bool(sysconfig.get_config_var("Py_GIL_DISABLED"))


def native_module() -> ModuleType | None:
    """The compiled module if it is importable and current, else None.

    No extension at all (a pure wheel) is the silent fallback. An extension
    that is there but does not import (a broken or foreign build) also falls
    back, with a RuntimeWarning that says why. A stale build (its version
    differs from the package's) is refused with an ImportError rather than
    silently used.
    """
    try:
        _native = importlib.import_module(f"{__package__}._native")
    except ModuleNotFoundError:
        return None
    except ImportError as exc:
        warnings.warn(
            f"decisions._native is present but does not import ({exc}); using the pure-Python backend",
            RuntimeWarning,
            stacklevel=2,
        )
        return None
    if _native.__version__ != __version__:
        raise ImportError(
            f"decisions._native is version {_native.__version__} but the package is {__version__}: "
            "the extension is stale; rebuild it (make build) or set DECISIONS_PURE=1"
        )
    return _native


#: The pure twin, always importable (for side-by-side comparisons).
pure: ModuleType = _pure
impl: ModuleType
BACKEND: Literal["native", "pure"]
_native_impl = None if _forced_pure() or free_threaded() else native_module()
if _native_impl is None:
    impl, BACKEND = _pure, "pure"
else:
    impl, BACKEND = _native_impl, "native"
