"""After the decision: the execution ledger, result checks and completion checks.

``open_ledger(url)`` opens a :class:`Ledger` on SQLite (``sqlite:///path``,
the embedded default) or PostgreSQL (``postgresql://...``, needs the
``postgres`` extra). See :mod:`.core` for what it promises and
:mod:`.states` for the state machine.
"""

from __future__ import annotations

from collections.abc import Mapping

from .completion import Criterion, check_completion
from .core import AuditEvent, Claim, ClaimReason, Entry, Ledger, argument_digest, idempotency_key
from .postgres import PostgresDatabase
from .results import Effect, EffectCheck, FileEffects, ResultCheck, ResultStatus, ToolResult, check_result, file_digest
from .shapes import SHAPE_VERSION, from_dict, to_dict
from .sqlite import SQLiteDatabase
from .states import STATES, TRANSITIONS, CallState, transition_table

__all__ = [
    "open_ledger",
    "Ledger",
    "Claim",
    "ClaimReason",
    "Entry",
    "AuditEvent",
    "CallState",
    "STATES",
    "TRANSITIONS",
    "transition_table",
    "ToolResult",
    "ResultStatus",
    "Effect",
    "EffectCheck",
    "ResultCheck",
    "FileEffects",
    "check_result",
    "file_digest",
    "check_completion",
    "Criterion",
    "to_dict",
    "from_dict",
    "SHAPE_VERSION",
    "argument_digest",
    "idempotency_key",
]


def open_ledger(url: str, *, checks: Mapping[str, ResultCheck] | None = None, timeout: float = 30.0) -> Ledger:
    """A :class:`Ledger` on ``url``: ``sqlite:///relative.db``,
    ``sqlite:////absolute.db``, ``sqlite:///:memory:`` (one process only), or
    ``postgresql://user@host:port/db``. ``checks`` maps a tool name to the
    :class:`ResultCheck` its results must pass; ``timeout`` is how long to wait
    for the database (a lock, a connection) before ``LEDGER_UNAVAILABLE``."""
    if url.startswith("sqlite:"):
        return Ledger(SQLiteDatabase(url, timeout=timeout), checks=checks)
    if url.startswith(("postgresql://", "postgres://")):
        return Ledger(PostgresDatabase(url, timeout=timeout), checks=checks)
    raise ValueError(f"unsupported ledger URL {url!r}: use sqlite:///path or postgresql://...")
