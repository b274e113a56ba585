"""``multipleOf`` as JSON Schema means it: on the decimal numbers the JSON
text writes.

The reference validator divided floats: ``19.99 / 0.01`` is
``1998.9999999999998``, so ``{"amount": 19.99}`` was refused by a schema
asking for cents (``multipleOf: 0.01``), every time the model sent it, as
were ``0.3`` for ``0.1`` and ``0.7`` for ``0.1``: a repair prompt the model
cannot satisfy. ``jsonschema-rs`` and Pydantic accept them. Each number is
now read as the shortest decimal that reads back as it, and the division
is exact.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import pytest
from hypothesis import given, settings

import decisions
from decide_helpers import both_paths, call, plain_id, response
from decisions import Tool, ToolRegistry

pytestmark = both_paths

SUITE = Path(__file__).parent / "fixtures" / "json-schema-test-suite" / "draft2020-12"


def verdict(schema: dict[str, Any], text: str) -> str:
    """``accept`` or the error code of a decision on ``{"v": <text>}``."""
    wrapped = {"type": "object", "properties": {"v": schema}, "required": ["v"]}
    registry = ToolRegistry([Tool(name="t", parameters=wrapped, side_effects=False)])
    try:
        decision = decisions.decide(response(call("t", f'{{"v": {text}}}')), tools=registry)
    except decisions.OutputError as error:
        return error.code
    assert decision.executable_calls[0].arguments == {"v": json.loads(text)}
    return "accept"


@pytest.mark.parametrize(
    ("divisor", "text"),
    [("0.01", "19.99"), ("0.1", "0.3"), ("0.1", "0.7"), ("0.01", "0.07"), ("0.05", "1.15"), ("0.001", "2.675"), ("0.01", "1e308"), ("1e-8", "12391239123"), ("3", "9.0"), ("0.25", "-0.75")],
    ids=plain_id,
)  # fmt: skip
def test_a_decimal_multiple_is_accepted(divisor: str, text: str) -> None:
    assert verdict({"multipleOf": json.loads(divisor)}, text) == "accept"


@pytest.mark.parametrize(
    ("divisor", "text"),
    [("0.01", "19.991"), ("0.1", "0.35"), ("0.0001", "0.00751"), ("0.123456789", "1e308"), ("0.5", "1.25"), ("3", "10.0")],
    ids=plain_id,
)  # fmt: skip
def test_a_number_that_is_no_multiple_is_refused(divisor: str, text: str) -> None:
    assert verdict({"multipleOf": json.loads(divisor)}, text) == "SCHEMA_MISMATCH"


def _suite_cases() -> list[Any]:
    cases = []
    for name in ("multipleOf.json", "optional/float-overflow.json"):
        for group in json.loads((SUITE / name).read_text(encoding="utf-8")):
            for test in group["tests"]:
                data = test["data"]
                # integers are ints here (1e308 is no integer): the number cases, less those
                if type(data) is int or (type(data) is float and group["schema"].get("type") != "integer"):
                    cases.append(
                        pytest.param(
                            group["schema"],
                            test["data"],
                            test["valid"],
                            id=f"{group['description']}: {test['description']}",
                        )
                    )
    return cases


@pytest.mark.parametrize(("schema", "value", "valid"), _suite_cases())
def test_the_suites_multiple_of_cases(schema: dict[str, Any], value: float, valid: bool) -> None:
    schema = {k: v for k, v in schema.items() if k != "$schema"}
    assert verdict(schema, json.dumps(value)) == ("accept" if valid else "SCHEMA_MISMATCH")


_DIGITS = st.integers(min_value=1, max_value=99_999)
_SCALE = st.integers(min_value=-6, max_value=3)


@settings(max_examples=200, deadline=None)
@given(
    unit=_DIGITS,
    scale=_SCALE,
    times=st.integers(min_value=-9_999, max_value=9_999),
    off=st.integers(min_value=0, max_value=9),
)
def test_multiples_of_a_decimal_written_as_json(unit: int, scale: int, times: int, off: int) -> None:
    """``times * divisor`` (plus ``off`` in the next decimal place) written
    as JSON with at most 15 significant digits, so the float it parses to
    writes back as the same decimal: a multiple exactly when ``off`` is 0."""
    divisor = Decimal(unit).scaleb(scale)
    value = divisor * times + Decimal(off).scaleb(scale - 1)
    text = f"{value:f}"
    if len(value.as_tuple().digits) > 15:
        return
    expected = "accept" if off == 0 else "SCHEMA_MISMATCH"
    assert verdict({"multipleOf": float(divisor) if scale < 0 else int(divisor)}, text) == expected
