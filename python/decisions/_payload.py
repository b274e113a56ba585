"""JSON text of a payload handed over as Python objects (``feed_event(dict)``,
``normalize(dict)``, an SDK object's ``to_dict()``). Both backends serialise it
here and then apply the envelope rule to the text, so a dict and the same
JSON text give the same outcome.

``json.dumps`` recurses once per level; nesting is measured first without
recursion, and a payload deeper than the envelope allows (a cycle is
infinitely deep) is written by an explicit-stack writer instead, so the text
reaches the envelope rule, which refuses it with its code and path.
"""

from __future__ import annotations

import json
from typing import Any, Final

from .errors import new_error

__all__ = ["payload_text"]

#: json.dumps is used up to this depth (the envelope's 100 levels, plus one
#: so that the envelope rule, not this module, reports the excess).
_DUMPS_DEPTH: Final = 101


def _depth_exceeds(value: Any, bound: int) -> bool:
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > bound:
            return True
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list, tuple)))
    return False


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


def _write_deep(value: Any, limit: int) -> str:
    """``_dumps(value)`` with an explicit stack, stopping after ``limit`` levels
    (the text is already deeper than any rule allows)."""
    out: list[str] = []
    # per open container: an iterator of (separator, key or None, child), and its closer
    frames: list[Any] = [iter([("", None, value)])]
    closers = [""]
    while frames:
        entry = next(frames[-1], None)
        if entry is None:
            frames.pop()
            out.append(closers.pop())
            continue
        separator, key, child = entry
        out.append(separator)
        if key is not None:
            if not isinstance(key, str):
                raise TypeError("keys must be str")
            out.append(_dumps(key) + ": ")
        if len(frames) > limit:
            out.append("0")
            continue
        if isinstance(child, dict):
            out.append("{")
            frames.append((", " if i else "", k, v) for i, (k, v) in enumerate(child.items()))
            closers.append("}")
        elif isinstance(child, (list, tuple)):
            out.append("[")
            frames.append((", " if i else "", None, v) for i, v in enumerate(child))
            closers.append("]")
        else:
            out.append(_dumps(child))
    return "".join(out)


def payload_text(value: Any) -> str:
    """The JSON text of a dict or list payload; ``MALFORMED_EVENT`` when it is
    not JSON (a non-str key, NaN, an object ``json`` cannot write)."""
    try:
        if _depth_exceeds(value, _DUMPS_DEPTH):
            return _write_deep(value, _DUMPS_DEPTH + 1)
        return _dumps(value)
    except (TypeError, ValueError):
        raise new_error("MALFORMED_EVENT", "event payload is not JSON-serialisable") from None
