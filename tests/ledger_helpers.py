"""Shared pieces of the ledger tests: the database URLs and decisions to record.

PostgreSQL: ``make pytest`` (and so ``.ci/run``) starts a throwaway server with
``scripts/postgres.sh run`` and sets ``DECISIONS_TEST_POSTGRES_URL`` and
``DECISIONS_REQUIRE_POSTGRES=1``; then a PostgreSQL test that cannot connect
fails. An ad-hoc ``pytest`` without the URL skips the PostgreSQL half, saying
so, unless ``DECISIONS_REQUIRE_POSTGRES=1`` is set (then it fails).
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from decisions import CallVerdict, ToolCall, ToolDecision

POSTGRES_URL = os.environ.get("DECISIONS_TEST_POSTGRES_URL", "")
REQUIRE_POSTGRES = os.environ.get("DECISIONS_REQUIRE_POSTGRES", "") == "1"
BACKENDS = ("sqlite", "postgres")


def url_for(backend: str, tmp_path: Path) -> str:
    """A ledger URL on ``backend``: a fresh SQLite file, or the test server."""
    if backend == "sqlite":
        return f"sqlite:///{tmp_path / 'ledger.db'}"
    if not POSTGRES_URL:
        if REQUIRE_POSTGRES:
            pytest.fail("DECISIONS_REQUIRE_POSTGRES=1 but no DECISIONS_TEST_POSTGRES_URL: the server did not start")
        pytest.skip("no PostgreSQL: run `make pytest` or `scripts/postgres.sh run pytest ...` to include it")
    return POSTGRES_URL


def new_run() -> str:
    """A run id no other test uses (the PostgreSQL database is shared)."""
    return f"run-{uuid.uuid4().hex[:12]}"


def decision(*specs: tuple[str, str, str], batch: str = "per_call", **arguments: object) -> ToolDecision:
    """A tool decision from ``(call_id, tool, verdict status)`` triples."""
    calls = tuple(
        ToolCall(call_id=c, name=t, arguments={"path": f"{c}.txt", **arguments}, index=i)
        for i, (c, t, _) in enumerate(specs)
    )
    verdicts = tuple(CallVerdict(call_id=c, status=s) for c, _, s in specs)  # type: ignore[arg-type]
    return ToolDecision(calls=calls, verdicts=verdicts, batch=batch)  # type: ignore[arg-type]
