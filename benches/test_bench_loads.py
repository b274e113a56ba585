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


def _contender(name: str, payload: str) -> tuple[Callable[[Any], Any], Any]:
    """The function to time and the input it takes."""
    limits = LIMITS[payload]
    text = PAYLOADS[payload]
    if name == "decisions-native":
        if _NATIVE is None:
            pytest.skip("native backend not built")
        native_loads = _NATIVE.loads
        return (lambda data: native_loads(data, limits=limits)) if limits else native_loads, text
    if name == "decisions-pure":
        pure_loads = _pure.loads
        return (lambda data: pure_loads(data, limits=limits)) if limits else pure_loads, text
    if name == "json":
        return json.loads, text
    if name == "orjson":
        return orjson.loads, text
    from_json = jiter.from_json
    return (lambda data: from_json(data, allow_inf_nan=False, catch_duplicate_keys=True)), text.encode()


CONTENDERS = ["decisions-native", "decisions-pure", "orjson", "jiter", "json"]


@pytest.mark.parametrize("name", CONTENDERS)
@pytest.mark.parametrize("payload", list(PAYLOADS))
def test_loads(benchmark: Any, payload: str, name: str) -> None:
    function, data = _contender(name, payload)
    benchmark.group = f"loads [{payload}]: {len(PAYLOADS[payload].encode()):,} bytes"
    benchmark.extra_info.update(payload=payload, contender=name, baseline=name == "orjson")
    result = benchmark(function, data)
    assert result == json.loads(PAYLOADS[payload])
