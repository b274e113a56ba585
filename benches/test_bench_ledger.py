"""Ledger throughput: claims + commits per second, SQLite and PostgreSQL.

Two parts:

- ``pytest benches/test_bench_ledger.py --benchmark-only`` (and so
  ``benches/report.py``): one worker, one call = record + claim + commit, on
  a SQLite file and (when ``DECISIONS_TEST_POSTGRES_URL`` is set) PostgreSQL,
  beside the bare minimum on the same SQLite file (one conditional UPDATE for
  the claim, one for the commit, no ledger) as the baseline.
- ``python benches/test_bench_ledger.py [--calls N] [--repeat R]``: 1, 4 and
  16 worker processes sharing the same recorded calls until none is left,
  either through ``claim_next`` (``next``) or by walking the call ids with
  ``claim`` (``claim``: each starts on its own share, then walks on through
  the others', refused claims and all). Prints, as medians of R runs, calls
  per second, the ledger's cost per call (wall time / calls, over all
  workers) and the latency a worker sees (its time in the ledger / the calls
  it ran). SQLite with ``synchronous=normal`` and ``full``; PostgreSQL when
  ``DECISIONS_TEST_POSTGRES_URL`` is set
  (``DECISIONS_PG_FSYNC=on scripts/postgres.sh run python benches/test_bench_ledger.py``).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from decisions import CallVerdict, Ledger, Tool, ToolCall, ToolDecision, ToolRegistry, ToolResult, open_ledger

POSTGRES_URL = os.environ.get("DECISIONS_TEST_POSTGRES_URL", "")
TOOLS = ToolRegistry([Tool(name="write_file", side_effects=True)])


def _decision(ids: list[str]) -> ToolDecision:
    return ToolDecision(
        calls=tuple(
            ToolCall(call_id=c, name="write_file", arguments={"path": f"{c}.txt", "content": "x" * 200}) for c in ids
        ),
        verdicts=tuple(CallVerdict(call_id=c, status="allowed") for c in ids),
        batch="per_call",
    )


# ---------------------------------------------------------------- pytest-benchmark: one worker


def _urls(tmp: Path) -> dict[str, str]:
    urls = {
        "sqlite-normal": f"sqlite:///{tmp / 'normal.db'}?synchronous=normal",
        "sqlite-full": f"sqlite:///{tmp / 'full.db'}?synchronous=full",
    }
    if POSTGRES_URL:
        urls["postgres"] = POSTGRES_URL
    return urls


@pytest.mark.parametrize("backend", ["sqlite-normal", "sqlite-full", "postgres"])
def test_bench_record_claim_commit(benchmark: Any, backend: str, tmp_path: Path) -> None:
    urls = _urls(tmp_path)
    if backend not in urls:
        pytest.skip("no PostgreSQL (DECISIONS_TEST_POSTGRES_URL)")
    benchmark.group = "ledger: record + claim + commit, one call"
    ledger = open_ledger(urls[backend])
    run = f"bench-{uuid.uuid4().hex[:8]}"
    counter = iter(range(10**9))

    def one() -> None:
        call_id = f"c{next(counter)}"
        ledger.record(_decision([call_id]), run_id=run, tools=TOOLS)
        claim = ledger.claim(call_id, run_id=run, worker="w")
        ledger.commit(claim, ToolResult(call_id, "ok", "done"))

    benchmark(one)
    ledger.close()


def test_bench_bare_sqlite(benchmark: Any, tmp_path: Path) -> None:
    benchmark.group = "ledger: record + claim + commit, one call"
    benchmark.extra_info["baseline"] = True
    conn = sqlite3.connect(tmp_path / "bare.db", isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE calls (id TEXT PRIMARY KEY, state TEXT, worker TEXT, result TEXT)")
    counter = iter(range(10**9))

    def one() -> None:
        call_id = f"c{next(counter)}"
        conn.execute("INSERT INTO calls VALUES (?, 'decided', NULL, NULL)", (call_id,))
        conn.execute(
            "UPDATE calls SET state = 'executing', worker = 'w' WHERE id = ? AND state = 'decided'", (call_id,)
        )
        conn.execute(
            "UPDATE calls SET state = 'committed', result = 'done' WHERE id = ? AND state = 'executing'", (call_id,)
        )

    benchmark(one)
    conn.close()


# ---------------------------------------------------------------- many workers, wall clock


def _worker(url: str, run: str, ids: list[str], name: str, first: str, mode: str) -> tuple[int, float]:
    """Run calls until none is left; returns (calls run, seconds spent in the ledger)."""
    won, spent = 0, 0.0
    with open_ledger(url, timeout=120) as ledger:
        if mode == "next":
            while True:
                began = time.perf_counter()
                claim = ledger.claim_next(run, worker=name, lease_seconds=300)
                if claim is not None:
                    ledger.commit(claim, ToolResult(claim.call_id, "ok", "done"))
                spent += time.perf_counter() - began
                if claim is None:
                    return won, spent
                won += 1
        start = ids.index(first)
        for call_id in ids[start:] + ids[:start]:  # a worker starts on its own share, then helps with the rest
            began = time.perf_counter()
            claim = ledger.claim(call_id, run_id=run, worker=name, lease_seconds=300)
            if claim.granted:
                ledger.commit(claim, ToolResult(call_id, "ok", "done"))
                won += 1
            spent += time.perf_counter() - began
    return won, spent


def measure(url: str, workers: int, calls: int, mode: str) -> dict[str, float]:
    """With ``workers`` processes: calls per second, the ledger's cost per
    call (wall time / calls) and the latency a worker sees (its time in the
    ledger, refused claims included, / the calls it ran)."""
    run = f"bench-{uuid.uuid4().hex[:8]}"
    ids = [f"c{i}" for i in range(calls)]
    with open_ledger(url) as ledger:
        for start in range(0, calls, 100):
            ledger.record(_decision(ids[start : start + 100]), run_id=run, tools=TOOLS)
    context = multiprocessing.get_context("fork")
    with context.Pool(workers) as pool:
        pool.map(abs, range(workers))  # start the processes before the clock
        began = time.perf_counter()
        results = pool.starmap(
            _worker, [(url, run, ids, f"w{n}", ids[n * calls // workers], mode) for n in range(workers)]
        )
        wall = time.perf_counter() - began
    won = sum(r[0] for r in results)
    assert won == calls
    return {
        "calls_per_s": calls / wall,
        "wall_ms_per_call": 1000 * wall / calls,
        "worker_ms_per_call": 1000 * sum(r[1] for r in results) / won,
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--workers", default="1,4,16")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure; the median is printed")
    parser.add_argument("--modes", default="claim,next", help="claim: walk the ids; next: claim_next")
    parser.add_argument("--databases", default="sqlite-normal,sqlite-full,postgres")
    parser.add_argument("--label", default="", help="a name for this implementation in the output")
    args = parser.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m != "next" or hasattr(Ledger, "claim_next")]
    with tempfile.TemporaryDirectory() as tmp:
        urls = _urls(Path(tmp))
        print(
            f"{'impl':6} {'database':14} {'mode':5} {'workers':>7} {'calls/s':>8} {'wall ms/call':>12} {'worker ms/call':>14}"
        )
        for name, url in urls.items():
            if name not in args.databases.split(","):
                continue
            for mode in modes:
                for workers in (int(w) for w in args.workers.split(",")):
                    runs = [measure(url, workers, args.calls, mode) for _ in range(args.repeat)]
                    med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
                    print(
                        f"{args.label:6} {name:14} {mode:5} {workers:>7} {med['calls_per_s']:>8.0f} "
                        f"{med['wall_ms_per_call']:>12.3f} {med['worker_ms_per_call']:>14.3f}",
                        flush=True,
                    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
