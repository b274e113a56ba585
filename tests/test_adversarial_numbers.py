"""Numbers a caller or a model can pass that are not what they look like:
durations and counts that are infinite, NaN, negative, booleans or floats, on
every public parameter that bounds time or size; and numbers at the edges of
IEEE doubles and 64-bit integers in the documents both backends parse."""

from __future__ import annotations

import io
import json
import math
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from decisions import (
    OutputError,
    RepairBudget,
    ResultError,
    build_request,
    loads,
    open_ledger,
    parse_json_text,
    parse_record,
    repair_prompt,
)
from decisions.cli import main
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


# ---------------------------------------------------------------- rows of a ledger written by something else


def _tampered(tmp_path: Path, column: str, value: Any) -> str:
    """A SQLite ledger with one recorded call whose ``column`` was overwritten
    with ``value`` (SQLite keeps any value in any column)."""
    url = url_for("sqlite", tmp_path)
    with open_ledger(url) as ledger:
        ledger.record(decision(("a", "read_file", "allowed")), run_id="r")
    connection = sqlite3.connect(tmp_path / "ledger.db")
    with connection:
        connection.execute(f"UPDATE ledger_calls SET {column} = ?", (value,))
    connection.close()
    return url


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("decided_at", math.inf),
        ("decided_at", "yesterday"),
        ("claimed_at", -math.inf),
        ("attempt", "x"),
        ("attempt", 1.5),
        ("seq", -1),
        ("side_effects", 5),
        ("call_id", b"a"),
        ("worker", b"w"),
        ("result", "[1"),
        ("error", "NaN"),
        ("effects", "not json"),
    ],
)
def test_a_row_this_version_never_writes_is_ledger_unavailable(
    tmp_path: Path, column: str, value: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """Entries were handed out with a time of 'yesterday' or infinity, or the
    read failed with json's JSONDecodeError; now the ledger refuses the row
    as a table it does not read (not retryable), and ``decisions ledger``
    says so with exit code 1."""
    url = _tampered(tmp_path, column, value)
    with open_ledger(url) as ledger, pytest.raises(ResultError) as caught:
        ledger.entries("r")
    assert (caught.value.code, caught.value.retryable) == ("LEDGER_UNAVAILABLE", False)
    for argv in (["ledger", url, "r"], ["ledger", url, "r", "--json"]):
        out = io.StringIO()
        assert main(argv, out) == 1
        assert "LEDGER_UNAVAILABLE" in out.getvalue()


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("arguments", "{bad"),
        ("arguments", '{"a": Infinity}'),
        ("arguments", "[1]"),
        ("arguments", "1"),
        ("arguments", "true"),
        ("tool", b"read_file"),
        ("idem_key", b"k"),
        ("side_effects", 5),
        ("attempt", 1.5),
    ],
)
def test_a_claim_is_never_granted_from_a_row_this_version_never_writes(tmp_path: Path, column: str, value: Any) -> None:
    """A claim was granted from the row as it was: a tool of bytes, arguments
    that are a list or a number, a flag of 5; now the claim is refused as a
    table the ledger does not read (not retryable), and the call stays
    unclaimed. (A JSON string is what a custom call's input text is stored as.)"""
    url = _tampered(tmp_path, column, value)
    with open_ledger(url) as ledger:
        for claim in (lambda: ledger.claim("a", run_id="r", worker="w"), lambda: ledger.claim_next("r", worker="w")):
            with pytest.raises(ResultError) as caught:
                claim()
            assert (caught.value.code, caught.value.retryable) == ("LEDGER_UNAVAILABLE", False)
    connection = sqlite3.connect(tmp_path / "ledger.db")
    with connection:
        assert connection.execute("SELECT state, attempt FROM ledger_calls").fetchall()[0][0] == "decided"
    connection.close()


def test_a_time_beyond_any_date_is_shown_not_raised(tmp_path: Path) -> None:
    """A finite time past year 9999 made ``decisions ledger`` die with
    OverflowError while it formatted the table."""
    url = _tampered(tmp_path, "decided_at", 1e300)
    out = io.StringIO()
    assert main(["ledger", url, "r"], out) == 0
    assert "1e+300" in out.getvalue()


@pytest.mark.parametrize(
    ("options", "kind"),
    [
        ({"parse_duration_ms": math.nan}, ValueError),
        ({"validation_duration_ms": math.inf}, ValueError),
        ({"parse_duration_ms": -1.0}, ValueError),
        ({"event_count": -1}, ValueError),
        ({"event_count": 2.0}, TypeError),
        ({"repair_attempt": -1}, ValueError),
        ({"repair_attempt": True}, TypeError),
    ],
)
def test_a_parse_record_holds_finite_non_negative_numbers(options: dict[str, Any], kind: type[Exception]) -> None:
    """A NaN or infinite duration went into the record as is, and its JSON
    log line was not JSON (``NaN``); a negative count went in too."""
    with pytest.raises(kind):
        parse_record(**options)
    fine = parse_record(parse_duration_ms=0, validation_duration_ms=1.5, event_count=0, repair_attempt=2)
    assert json.loads(json.dumps(fine, allow_nan=False))["parse_duration_ms"] == 0
