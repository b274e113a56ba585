"""The ledger's tables, written once for both databases.

``{real}`` and ``{serial}`` are filled per dialect. ``ledger_now()`` is the
database's clock in seconds since the epoch (a registered function on
SQLite, a SQL function on PostgreSQL), so leases on many machines are judged
by one clock.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Final

from ..errors import ResultError
from .states import STATES

__all__: list[str] = []  # internal to the package

#: The most UTF-8 bytes a run id or a call id may have: they are the keys of
#: PostgreSQL's indexes, whose rows hold at most 2704 bytes (both ids of a row
#: fit with room), and SQLite is held to the same bound so both agree.
MAX_ID_BYTES: Final = 1024

#: Bumped when the tables change; a ledger of another version is refused.
SCHEMA_VERSION: Final = "1"

_STATES = ", ".join(f"'{s}'" for s in STATES)

_TABLES: Final = (
    "CREATE TABLE IF NOT EXISTS ledger_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS ledger_runs (run_id TEXT PRIMARY KEY, cancelled INTEGER NOT NULL DEFAULT 0, "
    "created_at {real} NOT NULL)",
    "CREATE TABLE IF NOT EXISTS ledger_calls ("
    "run_id TEXT NOT NULL, call_id TEXT NOT NULL, seq INTEGER NOT NULL, tool TEXT NOT NULL, tool_version TEXT, "
    "arguments TEXT, digest TEXT NOT NULL, idem_key TEXT NOT NULL, side_effects INTEGER NOT NULL, "
    "idempotent INTEGER NOT NULL, sensitive INTEGER NOT NULL, batch_id TEXT NOT NULL, batch_mode TEXT NOT NULL, "
    f"state TEXT NOT NULL CHECK (state IN ({_STATES})), attempt INTEGER NOT NULL, worker TEXT, "
    "lease_until {real}, decided_at {real} NOT NULL, claimed_at {real}, finished_at {real}, result TEXT, "
    "result_status TEXT, error TEXT, effects TEXT NOT NULL, retry_safe INTEGER NOT NULL, approved_by TEXT, "
    "verdict TEXT NOT NULL, call_id_generated INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (run_id, call_id))",
    "CREATE INDEX IF NOT EXISTS ledger_calls_seq ON ledger_calls (run_id, seq)",
    # the calls claim_next looks at, so a run's ended calls are not walked again and again
    "CREATE INDEX IF NOT EXISTS ledger_calls_open ON ledger_calls (run_id, seq) "
    "WHERE state IN ('decided', 'approved', 'executing', 'failed')",
    "CREATE INDEX IF NOT EXISTS ledger_calls_batch ON ledger_calls (run_id, batch_id)",
    # call ids a Run marked as decided before their decision was recorded
    "CREATE TABLE IF NOT EXISTS ledger_decided (run_id TEXT NOT NULL, call_id TEXT NOT NULL, "
    "PRIMARY KEY (run_id, call_id))",
    "CREATE TABLE IF NOT EXISTS ledger_events (id {serial}, run_id TEXT NOT NULL, call_id TEXT, at {real} NOT NULL, "
    "kind TEXT NOT NULL, actor TEXT, detail TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS ledger_events_run ON ledger_events (run_id, id)",
)


#: Columns added after a ledger's tables were first written: ``(table, column,
#: type)``. A ledger that lacks one gets it (:func:`create`), with its default
#: for the rows already there; code of the same schema version that does not
#: know the column still reads and writes those tables.
_ADDED: Final = (("ledger_calls", "call_id_generated", "INTEGER NOT NULL DEFAULT 0"),)


def tables(*, real: str, serial: str) -> tuple[str, ...]:
    """The CREATE statements for one dialect."""
    return tuple(sql.replace("{real}", real).replace("{serial}", serial) for sql in _TABLES)


def create(cur: Any, statements: Iterable[str], columns: Callable[[Any, str], set[str]]) -> None:
    """Run a dialect's CREATE ``statements`` on ``cur`` (a cursor taking
    ``?`` placeholders), add the columns a table written before lacks
    (``columns(cur, table)``: the names it has), record the schema version
    once, and refuse a ledger written by another version (``LEDGER_UNAVAILABLE``)."""
    for sql in statements:
        cur.execute(sql)
    for table, column, kind in _ADDED:
        if column not in columns(cur, table):
            cur.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
    cur.execute(
        "INSERT INTO ledger_meta (key, value) VALUES ('schema_version', ?) ON CONFLICT (key) DO NOTHING",
        (SCHEMA_VERSION,),
    )
    cur.execute("SELECT value FROM ledger_meta WHERE key = 'schema_version'")
    found = cur.fetchone()[0]
    if found != SCHEMA_VERSION:
        raise ResultError(
            "LEDGER_UNAVAILABLE",
            f"the ledger has schema version {found}, this code reads {SCHEMA_VERSION}",
            retryable=False,
        )


def storable(params: tuple[Any, ...]) -> tuple[Any, ...]:
    """``params`` when both databases can hold them: PostgreSQL's text cannot
    hold U+0000, so a run id, call id, tool name or worker holding it is
    ``LEDGER_UNAVAILABLE`` on either database (JSON columns escape it)."""
    for value in params:
        if isinstance(value, str) and "\x00" in value:
            raise ResultError(
                "LEDGER_UNAVAILABLE",
                f"the ledger cannot hold text with a NUL character: {value!r}",
                retryable=False,
                hint="ids, tool names and workers must not contain U+0000",
            )
    return params


def unencodable() -> ResultError:
    """A run id, call id, tool name, worker or actor holding a lone surrogate:
    neither database can hold it (UTF-8 cannot), so ``LEDGER_UNAVAILABLE``
    as for U+0000 (the statement was not sent)."""
    return ResultError(
        "LEDGER_UNAVAILABLE",
        "the ledger cannot hold text with a lone surrogate",
        retryable=False,
        hint="ids, tool names and workers must be valid Unicode",
    )


def checked_id(value: object, what: str, path: str) -> str:
    """``value`` when it is a run id or call id both databases hold alike: a
    ``str`` (TypeError otherwise: SQLite would compare ``1`` equal to ``"1"``,
    PostgreSQL would refuse it) of at most :data:`MAX_ID_BYTES` UTF-8 bytes
    (``LEDGER_UNAVAILABLE`` at ``path``, not retryable, otherwise)."""
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, not {type(value).__name__}")
    if len(value) > MAX_ID_BYTES // 4 and len(value.encode("utf-8", "surrogatepass")) > MAX_ID_BYTES:
        raise ResultError(
            "LEDGER_UNAVAILABLE",
            f"the ledger cannot hold a {what} of more than {MAX_ID_BYTES} bytes",
            path=path,
            retryable=False,
            hint=f"ids must have at most {MAX_ID_BYTES} bytes of UTF-8",
        )
    return value
