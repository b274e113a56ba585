"""A worker process for the ledger's multi-process tests.

``python ledger_worker.py hold URL RUN CALL LEASE``: claim CALL, print
``claimed <attempt>`` and hang (the test kills it with SIGKILL mid-call).
``race(url, run_id, call_ids, worker, log)``: claim every call it can, "run"
each granted one (one line appended to ``log``) and commit it.
``race_next(...)``: the same through ``claim_next`` until the run has no call left.
"""

from __future__ import annotations

import os
import random
import sys
import time

from decisions import Claim, Ledger, ToolResult, open_ledger


def _execute(ledger: Ledger, claim: Claim, log: str) -> None:
    """ "Run" a granted call (one line appended to ``log``) and commit it."""
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{claim.call_id} {claim.worker} {claim.attempt}\n".encode())
    finally:
        os.close(fd)
    ledger.commit(claim, ToolResult(claim.call_id, "ok", {"by": claim.worker}))


def race(url: str, run_id: str, call_ids: list[str], worker: str, log: str) -> int:
    """Claim-run-commit every call this worker wins; returns how many it ran."""
    ran = 0
    order = list(call_ids)
    random.Random(worker).shuffle(order)
    with open_ledger(url, timeout=120) as ledger:
        for call_id in order:
            claim = ledger.claim(call_id, run_id=run_id, worker=worker, lease_seconds=120)
            if claim.granted:
                _execute(ledger, claim, log)
                ran += 1
    return ran


def race_next(url: str, run_id: str, call_ids: list[str], worker: str, log: str) -> int:
    """Take the run's next free call until there is none; returns how many it ran."""
    ran = 0
    with open_ledger(url, timeout=120) as ledger:
        while (claim := ledger.claim_next(run_id, worker=worker, lease_seconds=120)) is not None:
            assert claim.granted and claim.call_id in call_ids
            _execute(ledger, claim, log)
            ran += 1
    return ran


def hold(url: str, run_id: str, call_id: str, lease: float) -> None:
    """Claim the call, say so, and never finish."""
    ledger = open_ledger(url)
    claim = ledger.claim(call_id, run_id=run_id, worker=f"doomed-{os.getpid()}", lease_seconds=lease)
    print(f"claimed {claim.attempt}" if claim.granted else f"refused {claim.reason}", flush=True)
    while True:
        time.sleep(60)


if __name__ == "__main__":
    if sys.argv[1] == "hold":
        hold(sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5]))
