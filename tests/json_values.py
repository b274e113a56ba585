"""Helpers on parsed JSON values shared by the tests: strict comparison (the
``loads`` tests) and the paths inside a value (the provider mutation tests)."""

from __future__ import annotations

import math
from typing import Any


def same_value(a: Any, b: Any) -> bool:
    """Whether two parsed JSON values are identical: same types all the way down
    (``1`` is not ``1.0``, ``True`` is not ``1``), ``-0.0`` is not ``0.0``, same key
    order. NaN never comes out of the parser, so it is never equal here."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if type(x) is not type(y):
            return False
        if type(x) is float:
            if math.isnan(x) or math.isnan(y) or x != y or math.copysign(1.0, x) != math.copysign(1.0, y):
                return False
        elif type(x) is list:
            if len(x) != len(y):
                return False
            stack.extend(zip(x, y))
        elif type(x) is dict:
            if list(x) != list(y):
                return False
            stack.extend((x[k], y[k]) for k in x)
        elif x != y:
            return False
    return True


def nodes(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """``path`` and the path of every value inside ``value`` below it, in document order."""
    out = [path]
    if isinstance(value, dict):
        for k, v in value.items():
            out += nodes(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += nodes(v, (*path, i))
    return out
