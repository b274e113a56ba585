"""``loads`` side by side: decisions (native and pure), ``json.loads``,
``orjson.loads`` and ``jiter.from_json``, one group per payload of
``benches/payloads.py``; orjson is each group's baseline.

Every contender gets the same text: a ``str`` (jiter takes only bytes, so it
gets the UTF-8 bytes, encoded once outside the timer). jiter runs with its
strict options (``allow_inf_nan=False``, ``catch_duplicate_keys=True``, its
default key cache and float mode). Each result is checked against
``json.loads`` so a benchmark cannot time a wrong answer. With
``--benchmark-disable`` the file is a smoke test.
"""

from __future__ import annotations

import json
from typing import Any, Callable

import jiter
import orjson
import pytest

from decisions import _backend, _pure
from payloads import LIMITS, PAYLOADS

_NATIVE = _backend.native_module()


def _contender(name: str, payload: str) -> tuple[Callable[..., Any], Any, dict[str, Any]]:
    """The function to time, the input it takes and its keyword arguments
    (passed by the timer itself, so no contender pays for a wrapper)."""
    limits = LIMITS[payload]
    text = PAYLOADS[payload]
    if name == "decisions-native":
        if _NATIVE is None:
            pytest.skip("native backend not built")
        return _NATIVE.loads, text, {"limits": limits} if limits else {}
    if name == "decisions-pure":
        return _pure.loads, text, {"limits": limits} if limits else {}
    if name == "json":
        return json.loads, text, {}
    if name == "orjson":
        return orjson.loads, text, {}
    return jiter.from_json, text.encode(), {"allow_inf_nan": False, "catch_duplicate_keys": True}


CONTENDERS = ["decisions-native", "decisions-pure", "orjson", "jiter", "json"]


@pytest.mark.parametrize("name", CONTENDERS)
@pytest.mark.parametrize("payload", list(PAYLOADS))
def test_loads(benchmark: Any, payload: str, name: str) -> None:
    function, data, options = _contender(name, payload)
    benchmark.group = f"loads [{payload}]: {len(PAYLOADS[payload].encode()):,} bytes"
    benchmark.extra_info.update(payload=payload, contender=name, baseline=name == "orjson")
    result = benchmark(function, data, **options)
    assert result == json.loads(PAYLOADS[payload])
