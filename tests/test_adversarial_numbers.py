"""Numbers a caller or a model can pass that are not what they look like:
durations and counts that are infinite, NaN, negative, booleans or floats, on
every public parameter that bounds time or size; and numbers at the edges of
IEEE doubles and 64-bit integers in the documents both backends parse."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from decisions import (
    OutputError,
    RepairBudget,
    build_request,
    loads,
    open_ledger,
    parse_json_text,
    repair_prompt,
)
from decisions.request.fragments import json_text_instructions
from ledger_helpers import BACKENDS, decision, new_run, url_for

NOT_DURATIONS: list[tuple[Any, type[Exception]]] = [
    (math.inf, ValueError),
    (-math.inf, ValueError),
    (math.nan, ValueError),
    (-1, ValueError),
    (-0.5, ValueError),
    (10**400, ValueError),
    (True, TypeError),
    ("60", TypeError),
    (None, TypeError),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("lease", "kind"), [*NOT_DURATIONS, (0, ValueError), (0.0, ValueError), (-0.0, ValueError)])
def test_a_lease_is_a_finite_positive_number_of_seconds(
    backend: str, tmp_path: Path, lease: Any, kind: type[Exception]
) -> None:
    """An infinite lease never expires (a dead worker's call is never given
    up); a NaN one compares false to every clock. Neither reaches the database."""
    with open_ledger(url_for(backend, tmp_path)) as ledger:
        run = new_run()
        ledger.record(decision(("a", "read_file", "allowed"), ("b", "read_file", "allowed")), run_id=run)
        with pytest.raises(kind):
            ledger.claim("a", run_id=run, worker="w", lease_seconds=lease)
        with pytest.raises(kind):
            ledger.claim_next(run, worker="w", lease_seconds=lease)
        claim = ledger.claim("b", run_id=run, worker="w", lease_seconds=60)
        with pytest.raises(kind):
            ledger.renew(claim, lease_seconds=lease)
        entry = ledger.entry("a", run_id=run)
        assert entry.state == "decided" and entry.lease_until is None
        held = ledger.entry("b", run_id=run).lease_until
        assert held is not None and math.isfinite(held)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("timeout", "kind"), NOT_DURATIONS)
def test_a_ledger_timeout_is_a_finite_number_of_seconds(
    backend: str, tmp_path: Path, timeout: Any, kind: type[Exception]
) -> None:
    """An infinite or NaN wait for a lock was handed to SQLite's C busy
    timeout as is (undefined once multiplied to milliseconds) and made
    PostgreSQL's setup raise OverflowError."""
    with pytest.raises(kind):
        open_ledger(url_for(backend, tmp_path), timeout=timeout)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("timeout", [0, 0.0, 1e-9, 1e300])
def test_a_ledger_timeout_of_zero_or_a_huge_one_opens(backend: str, tmp_path: Path, timeout: float) -> None:
    with open_ledger(url_for(backend, tmp_path), timeout=timeout) as ledger:
        run = new_run()
        ledger.record(decision(("a", "read_file", "allowed")), run_id=run)
        assert ledger.claim("a", run_id=run, worker="w").granted


NOT_COUNTS: list[tuple[Any, type[Exception]]] = [
    (math.nan, TypeError),
    (math.inf, TypeError),
    (250.5, TypeError),
    (True, TypeError),
    (-1, ValueError),
    (0, ValueError),
]


@pytest.mark.parametrize(("max_chars", "kind"), NOT_COUNTS)
def test_json_text_max_chars_is_a_positive_int(max_chars: Any, kind: type[Exception]) -> None:
    """A NaN or infinite bound turned the length check off; a negative one
    gave a ParseError at offset -1."""
    with pytest.raises(kind, match="max_chars"):
        parse_json_text('{"a": 1}', max_chars=max_chars)
    with pytest.raises(kind, match="max_chars"):
        json_text_instructions({"type": "object"}, max_chars=max_chars)
    with pytest.raises(kind, match="max_output_chars"):
        build_request("openai-chat", output={"type": "object"}, max_output_chars=max_chars)


def test_json_text_max_chars_still_bounds() -> None:
    with pytest.raises(OutputError) as caught:
        parse_json_text('{"a": 1}', max_chars=3)
    assert caught.value.code == "DOCUMENT_TOO_LARGE" and caught.value.offset == 3
    assert parse_json_text('{"a": 1}', max_chars=10**30).value == {"a": 1}
    assert "Keep it under 5 characters" in json_text_instructions({"type": "object"}, max_chars=5)


@pytest.mark.parametrize(("max_chars", "kind"), [*NOT_COUNTS, (199, ValueError)])
def test_repair_max_chars_is_an_int_of_at_least_200(max_chars: Any, kind: type[Exception]) -> None:
    """A NaN or infinite bound was taken and the prompt left uncut; a float
    one failed inside the slicing with Python's own TypeError."""
    with pytest.raises(OutputError) as caught:
        loads('{"a": "\\d"}')
    error = caught.value
    with pytest.raises(kind, match="max_chars"):
        repair_prompt(error, max_chars=max_chars)
    with pytest.raises(kind, match="max_chars"):
        RepairBudget(max_chars=max_chars)
    assert len(repair_prompt(error, max_chars=200)) <= 200
