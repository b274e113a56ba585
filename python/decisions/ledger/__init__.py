"""After the decision: the execution ledger, result checks and completion checks.

``open_ledger(url)`` opens a :class:`Ledger` on SQLite (``sqlite:///path``,
the embedded default) or PostgreSQL (``postgresql://...``, needs the
``postgres`` extra). See :mod:`.core` for what it promises and
:mod:`.states` for the state machine.
"""

from __future__ import annotations

from ..limits import Limits
from .completion import Criterion, check_completion
from .core import Ledger, Tools
from .postgres import PostgresDatabase
from .records import AuditEvent, Claim, ClaimReason, Database, Entry, argument_digest, idempotency_key
from .results import (
    Effect,
    EffectCheck,
    FileEffects,
    ResultStatus,
    ToolResult,
    check_result,
    check_result_size,
    file_digest,
)
from .run import Run
from .shapes import SHAPE_VERSION, from_dict, to_dict
from .sqlite import SQLiteDatabase
from .states import STATES, TRANSITIONS, CallState, transition_table

__all__ = [
    "open_ledger",
    "Ledger",
    "Run",
    "Tools",
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
    "FileEffects",
    "check_result",
    "check_result_size",
    "file_digest",
    "check_completion",
    "Criterion",
    "to_dict",
    "from_dict",
    "SHAPE_VERSION",
    "argument_digest",
    "idempotency_key",
]


def open_ledger(url: str, *, tools: Tools | None = None, timeout: float = 30.0, limits: Limits | None = None) -> Ledger:
    """A :class:`Ledger` on ``url``: ``sqlite:///relative.db``,
    ``sqlite:////absolute.db`` (``?synchronous=full`` to sync every step; see
    :mod:`.sqlite` for what the default promises), ``sqlite://`` (in memory:
    one process only), or ``postgresql://user@host:port/db``. ``tools`` are
    the :class:`~decisions.Tool` declarations (side effects, result schema,
    effect check) the ledger records calls and checks results by;
    ``timeout`` is how long to wait for the database (a lock, a connection)
    before ``LEDGER_UNAVAILABLE``; ``limits`` bound the results it takes
    (``max_result_bytes``)."""
    db: Database
    if url.startswith("sqlite:"):
        db = SQLiteDatabase(url, timeout=timeout)
    elif url.startswith(("postgresql://", "postgres://")):
        db = PostgresDatabase(url, timeout=timeout)
    else:
        raise ValueError(f"unsupported ledger URL {url!r}: use sqlite:///path or postgresql://...")
    try:
        return Ledger(db, tools=tools, limits=limits)
    except BaseException:  # arguments the ledger refuses: the connection is not left open
        db.close()
        raise
