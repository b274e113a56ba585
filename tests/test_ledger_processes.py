"""The ledger across real processes: eight workers race for the same 200
calls and each runs exactly once; a worker killed with SIGKILL mid-call
leaves a side-effect call ``unknown`` and a read-only call claimable again.
The longer soak run is behind the ``slow`` marker."""

from __future__ import annotations

import collections
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from decisions import Tool, ToolRegistry, open_ledger
from ledger_helpers import decision, new_run
from ledger_worker import race, race_next

HERE = Path(__file__).resolve().parent
TOOLS = ToolRegistry([Tool(name="read_file", side_effects=False), Tool(name="write_file", side_effects=True)])


def _race(url: str, tmp_path: Path, workers: int, calls: int, how: Callable[..., int] = race) -> None:
    run = new_run()
    ids = [f"call_{i}" for i in range(calls)]
    with open_ledger(url) as ledger:
        for start in range(0, calls, 50):
            ledger.record(
                decision(*[(c, "write_file", "allowed") for c in ids[start : start + 50]]), run_id=run, tools=TOOLS
            )
    log = str(tmp_path / "executions.log")
    context = multiprocessing.get_context("fork")
    with context.Pool(workers) as pool:
        ran = pool.starmap(how, [(url, run, ids, f"worker-{n}", log) for n in range(workers)])
    lines = Path(log).read_text().splitlines()
    executed = collections.Counter(line.split()[0] for line in lines)
    assert sum(ran) == calls and len(lines) == calls
    assert set(executed) == set(ids) and set(executed.values()) == {1}, "a call ran twice or never"
    assert all(line.split()[2] == "1" for line in lines)  # no call needed a second attempt
    with open_ledger(url) as ledger:
        entries = ledger.entries(run)
        assert [e.state for e in entries] == ["committed"] * calls
        assert {e.call_id: e.worker for e in entries} == {line.split()[0]: line.split()[1] for line in lines}


@pytest.mark.parametrize("how", [race, race_next], ids=["claim", "claim_next"])
def test_eight_processes_race_and_each_call_runs_once(url: str, tmp_path: Path, how: Callable[..., int]) -> None:
    _race(url, tmp_path, workers=8, calls=200, how=how)


@pytest.mark.slow
@pytest.mark.parametrize("how", [race, race_next], ids=["claim", "claim_next"])
def test_soak_sixteen_processes_two_thousand_calls(url: str, tmp_path: Path, how: Callable[..., int]) -> None:
    _race(url, tmp_path, workers=16, calls=2000, how=how)


def _doomed(url: str, run: str, call_id: str, lease: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "ledger_worker.py"), "hold", url, run, call_id, str(lease)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "claimed 1"
    return proc


@pytest.mark.parametrize("tool, after", [("write_file", "unknown"), ("read_file", "executing")])
def test_a_worker_killed_mid_call(url: str, tool: str, after: str) -> None:
    run = new_run()
    with open_ledger(url) as ledger:
        ledger.record(decision(("a", tool, "allowed")), run_id=run, tools=TOOLS)
        proc = _doomed(url, run, "a", 1.0)
        assert not ledger.claim("a", run_id=run, worker="rival").granted  # the lease is live
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        assert proc.stdout is not None
        proc.stdout.close()
        deadline = time.monotonic() + 60
        claim = ledger.claim("a", run_id=run, worker="rival")
        while not claim.granted and claim.reason == "leased" and time.monotonic() < deadline:
            time.sleep(0.1)
            claim = ledger.claim("a", run_id=run, worker="rival")
        if after == "unknown":
            assert not claim.granted and claim.reason == "unknown"
            assert ledger.entry("a", run_id=run).state == "unknown"
            assert "lease_expired" in [e.kind for e in ledger.audit(run)]
        else:
            assert claim.granted and claim.attempt == 2
            assert ledger.entry("a", run_id=run).state == after
