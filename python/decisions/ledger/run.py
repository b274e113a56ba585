"""The run that policy consults, kept in the execution ledger.

A :class:`Run` is what :func:`decisions.decide` asks whether the run was
cancelled and which call ids it already decided. It keeps both in a
:class:`~decisions.ledger.Ledger`: a SQLite ledger in memory of its own by
default (one process), or the host's ledger, shared by every process and
machine on it, so a call id replayed to another worker is decided once only
and :meth:`Ledger.cancel` stops the run everywhere.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from ..errors import PolicyError
from .core import Ledger
from .sqlite import SQLiteDatabase

__all__ = ["Run"]


class Run:
    """The state of one agent run in a ledger: cancellation and the call ids
    already decided. ``run_id`` defaults to a fresh one; ``ledger`` to a
    SQLite ledger in memory. Thread-safe."""

    __slots__ = ("run_id", "ledger")

    def __init__(self, run_id: str | None = None, *, ledger: Ledger | None = None) -> None:
        self.run_id = run_id if run_id is not None else f"run-{uuid.uuid4().hex}"
        self.ledger = ledger if ledger is not None else Ledger(SQLiteDatabase("sqlite://"))

    def cancel(self) -> None:
        """Cancel the run: no later decision is executable, no call of it is claimed again."""
        self.ledger.cancel(self.run_id)

    @property
    def cancelled(self) -> bool:
        """True when the run was cancelled."""
        return self.ledger.cancelled(self.run_id)

    def decided(self, call_id: str) -> bool:
        """True when ``call_id`` was already decided (or recorded) in this run."""
        return self.ledger.decided(call_id, run_id=self.run_id)

    def claim(self, call_ids: Sequence[str]) -> tuple[str, ...]:
        """Record ``call_ids`` as decided, atomically; returns those that
        were decided before (and records nothing when there are any), or
        raises RUN_CANCELLED if the run was cancelled meanwhile."""
        seen = self.ledger.reserve(self.run_id, call_ids)
        if seen is None:
            raise PolicyError("RUN_CANCELLED", path="$", hint="the run was cancelled; nothing may execute")
        return seen
