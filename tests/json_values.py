"""Strict comparison of parsed JSON values, shared by the ``loads`` tests."""

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
