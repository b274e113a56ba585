"""What the ledger stores and hands out: claims, entries, audit events, the
argument digest and idempotency key, and the cursor-level reads every step
shares (one call's row, the audit insert, expiring lost side-effect leases).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol

from .._payload import canonical_json, strict_dumps, strict_loads
from ..errors import DomainError, OutputError, ResultError, error_class
from .results import Effect, ToolResult
from .shapes import from_dict, to_dict
from .states import STATES, CallState

__all__ = ["Claim", "Entry", "AuditEvent", "ClaimReason", "argument_digest", "idempotency_key"]

#: Why a claim was (not) granted: ``granted``, or the state that refused it,
#: ``cancelled`` (the run), ``leased`` (another worker holds a live lease) or
#: ``batch_waiting`` (an all-or-nothing batch has a call waiting or denied).
ClaimReason = Literal[
    "granted",
    "denied",
    "awaiting_approval",
    "committed",
    "failed",
    "unknown",
    "leased",
    "cancelled",
    "batch_waiting",
]

COLUMNS: Final = (
    "run_id, call_id, seq, tool, tool_version, arguments, digest, idem_key, side_effects, idempotent, sensitive, "
    "batch_id, batch_mode, state, attempt, worker, lease_until, decided_at, claimed_at, finished_at, "
    "result, result_status, error, effects, retry_safe, approved_by, call_id_generated"
)
_NAMES: Final = tuple(name.strip() for name in COLUMNS.split(","))
_DECIDED_AT: Final = 17
#: Positions in :data:`COLUMNS` read outside :func:`entry_of`.
TOOL, TOOL_VERSION, ARGUMENTS, DIGEST, STATE = 3, 4, 5, 6, 13


class Cursor(Protocol):
    """The part of a DB-API cursor the ledger uses (``?`` placeholders)."""

    def execute(self, sql: str, params: tuple[Any, ...] = ...) -> Any: ...
    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...


class Database(Protocol):
    """A connection to one ledger database (SQLite or PostgreSQL).

    ``writable_cte``: the database takes ``WITH x AS (UPDATE ... RETURNING
    ...) INSERT ...``, so a step and its audit event are one statement.
    ``run(work, single=True)`` may run a one-statement step without an
    explicit transaction (one round trip on PostgreSQL)."""

    url: str
    writable_cte: bool

    def run(self, work: Callable[[Cursor], Any], *, single: bool = False) -> Any: ...
    def close(self) -> None: ...


def storable(value: Any, code: str, path: str) -> str:
    """The canonical JSON of ``value`` as UTF-8 can hold it, or the error
    ``code`` at ``path`` (NaN, Infinity, a lone surrogate, a value JSON
    cannot write) raised before anything is stored."""
    try:
        text = strict_dumps(value, sort_keys=True, separators=(",", ":"))  # canonical_json, keys checked
        text.encode("utf-8")
    except (TypeError, ValueError, RecursionError) as error:  # UnicodeEncodeError is a ValueError
        why = "a lone surrogate" if isinstance(error, UnicodeEncodeError) else "a value JSON cannot hold"
        raise error_class(code)(
            code,
            f"not storable as JSON: {why}",
            path=path,
            hint="only finite numbers and valid Unicode text can be stored",
        ) from None
    return text


def argument_digest(arguments: Mapping[str, Any] | str, *, path: str = "$.arguments") -> str:
    """``sha256:<hex>`` of the canonical JSON of a call's arguments (a custom
    call's: its input text); ``SCHEMA_MISMATCH`` at ``path`` when they are
    not JSON (NaN, Infinity, a lone surrogate)."""
    text = storable(arguments, "SCHEMA_MISMATCH", path)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def idempotency_key(run_id: str, call_id: str, tool: str, digest: str) -> str:
    """The key a host hands to downstream services: one per (run, call id, tool, arguments)."""
    return "ik_" + hashlib.sha256(canonical_json([run_id, call_id, tool, digest]).encode("utf-8")).hexdigest()[:32]


@dataclass(frozen=True, slots=True, kw_only=True)
class Claim:
    """A worker's claim on one call. ``granted`` says whether it may execute
    the call now; ``reason`` why not (and ``state`` the call's state, with
    ``result`` the stored result when there is one). A granted claim carries
    the fencing token ``attempt``, the ``idempotency_key`` and the lease end
    (seconds since the epoch, by the database's clock). ``arguments`` are the
    call's arguments: an object, the input text of a custom call, or None
    for a call recorded as sensitive."""

    granted: bool
    reason: ClaimReason
    run_id: str
    call_id: str
    worker: str
    state: CallState
    attempt: int
    idempotency_key: str
    tool: str
    arguments: dict[str, Any] | str | None
    side_effects: bool
    lease_until: float | None = None
    result: ToolResult | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Entry:
    """One recorded call as the ledger holds it."""

    run_id: str
    call_id: str
    seq: int
    tool: str
    tool_version: str | None
    digest: str
    idempotency_key: str
    side_effects: bool
    idempotent: bool
    state: CallState
    attempt: int
    worker: str | None
    lease_until: float | None
    decided_at: float
    claimed_at: float | None
    finished_at: float | None
    result: ToolResult | None
    error: OutputError | None
    effects: tuple[Effect, ...]
    approved_by: str | None
    #: The provider sent no id for the call; ``call_id`` was made up by the package
    #: (see :attr:`~decisions.ToolCall.call_id_generated`), so no result message echoes it.
    call_id_generated: bool

    @property
    def result_status(self) -> str | None:
        """The stored result's status, if any."""
        return None if self.result is None else self.result.status

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable view (results and errors in their versioned shapes)."""
        return {
            "run_id": self.run_id,
            "call_id": self.call_id,
            "seq": self.seq,
            "tool": self.tool,
            "tool_version": self.tool_version,
            "digest": self.digest,
            "idempotency_key": self.idempotency_key,
            "side_effects": self.side_effects,
            "idempotent": self.idempotent,
            "state": self.state,
            "attempt": self.attempt,
            "worker": self.worker,
            "lease_until": self.lease_until,
            "decided_at": self.decided_at,
            "claimed_at": self.claimed_at,
            "finished_at": self.finished_at,
            "result": None if self.result is None else to_dict(self.result),
            "error": None if self.error is None else to_dict(self.error),
            "effects": [to_dict(e) for e in self.effects],
            "approved_by": self.approved_by,
            "call_id_generated": self.call_id_generated,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditEvent:
    """One audit event: ``kind`` (``recorded``, ``approved``, ``rejected``,
    ``claimed``, ``committed``, ``failed``, ``late_result``,
    ``duplicate_result``, ``lease_expired``, ``reconciled``, ``cancelled``),
    who (``actor``), when, and details: the tool version, the argument digest
    and the policy, never a call's raw arguments."""

    run_id: str
    call_id: str | None
    at: float
    kind: str
    actor: str | None
    detail: dict[str, Any]


def unreadable(what: str) -> ResultError:
    """A row this version never writes (a column of another type, a JSON
    column that is not JSON, a state not in the state machine): the table
    was written by something else, and retrying will not change it."""
    return ResultError(
        "LEDGER_UNAVAILABLE",
        f"the ledger holds {what}, which this version never writes",
        retryable=False,
        hint="the ledger's tables are not what this version writes: check the database's schema",
    )


def loads(text: str | None) -> Any:
    """A stored JSON column (None stays None); ``LEDGER_UNAVAILABLE`` for one
    that is not the strict JSON the ledger writes."""
    if text is None:
        return None
    if type(text) is not str:
        raise unreadable(f"a JSON column of type {type(text).__name__}")
    try:
        return strict_loads(text)
    except (ValueError, RecursionError):
        raise unreadable("a JSON column that is not JSON") from None


def dumps(value: Any) -> str:
    """The canonical JSON the ledger stores."""
    return canonical_json(value)


_EVENT_SQL: Final = (
    "INSERT INTO ledger_events (run_id, call_id, at, kind, actor, detail) VALUES (?, ?, ledger_now(), ?, ?, ?)"
)


def event(
    cur: Cursor, run_id: str, call_id: str | None, kind: str, actor: str | None, detail: Mapping[str, Any]
) -> None:
    """Append one audit event."""
    cur.execute(_EVENT_SQL, (run_id, call_id, kind, actor, dumps(dict(detail))))


def row_of(cur: Cursor, run_id: str, call_id: str) -> Any:
    """One call's row (``UNKNOWN_CALL_ID`` when it was never recorded)."""
    cur.execute(f"SELECT {COLUMNS} FROM ledger_calls WHERE run_id = ? AND call_id = ?", (run_id, call_id))
    row = cur.fetchone()
    if row is None:
        raise DomainError(
            "UNKNOWN_CALL_ID",
            f"no call {call_id!r} recorded in run {run_id!r}",
            path="$.call_id",
            hint="claim only calls the ledger recorded",
        )
    return row


def expire(cur: Cursor, run_id: str, call_id: str | None = None) -> None:
    """Leases that ran out on calls with side effects: ``unknown``, never re-run by themselves."""
    where = "run_id = ? AND state = 'executing' AND lease_until < ledger_now() AND side_effects = 1 AND idempotent = 0"
    params: tuple[Any, ...] = (run_id,)
    if call_id is not None:
        where += " AND call_id = ?"
        params += (call_id,)
    cur.execute(f"UPDATE ledger_calls SET state = 'unknown' WHERE {where} RETURNING call_id, worker, attempt", params)
    for expired_id, worker, attempt in cur.fetchall():
        event(cur, run_id, expired_id, "lease_expired", worker, {"attempt": attempt})


_TEXT: Final = (0, 1, 3, 6, 7)  # run_id, call_id, tool, digest, idem_key
_OPTIONAL_TEXT: Final = (4, 15, 25)  # tool_version, worker, approved_by
_COUNTS: Final = (2, 14)  # seq, attempt
_FLAGS: Final = (8, 9, 26)  # side_effects, idempotent, call_id_generated
_TIMES: Final = (16, 17, 18, 19)  # lease_until, decided_at, claimed_at, finished_at


def is_time(value: Any) -> bool:
    """Whether a stored time is one this version writes: a finite number of seconds."""
    return type(value) in (int, float) and math.isfinite(value)


def _check_row(row: Any) -> None:
    """``LEDGER_UNAVAILABLE`` for a row of :data:`COLUMNS` holding what this
    version never writes (SQLite keeps any value in any column)."""
    for index in _TEXT:
        if type(row[index]) is not str:
            raise unreadable(f"a {_NAMES[index]} of type {type(row[index]).__name__}")
    for index in _OPTIONAL_TEXT:
        if row[index] is not None and type(row[index]) is not str:
            raise unreadable(f"a {_NAMES[index]} of type {type(row[index]).__name__}")
    for index in _COUNTS:
        if type(row[index]) is not int or row[index] < 0:
            raise unreadable(f"a {_NAMES[index]} of {row[index]!r}")
    for index in _FLAGS:
        if row[index] not in (0, 1) or type(row[index]) not in (int, bool):
            raise unreadable(f"a {_NAMES[index]} of {row[index]!r}")
    if row[STATE] not in STATES:
        raise unreadable(f"a state of {row[STATE]!r}")
    for index in _TIMES:
        if not is_time(row[index]) and (row[index] is not None or index == _DECIDED_AT):
            raise unreadable(f"a {_NAMES[index]} of {row[index]!r}")


def entry_of(row: Any) -> Entry:
    """An :class:`Entry` from a row of :data:`COLUMNS`."""
    (
        run_id,
        call_id,
        seq,
        tool,
        tool_version,
        _arguments,
        digest,
        idem_key,
        side_effects,
        idempotent,
        _sensitive,
        _batch_id,
        _batch_mode,
        state,
        attempt,
        worker,
        lease_until,
        decided_at,
        claimed_at,
        finished_at,
        result,
        _result_status,
        error,
        effects,
        _retry_safe,
        approved_by,
        call_id_generated,
    ) = row
    _check_row(row)
    return Entry(
        run_id=run_id,
        call_id=call_id,
        seq=seq,
        tool=tool,
        tool_version=tool_version,
        digest=digest,
        idempotency_key=idem_key,
        side_effects=bool(side_effects),
        idempotent=bool(idempotent),
        state=state,
        attempt=attempt,
        worker=worker,
        lease_until=lease_until,
        decided_at=decided_at,
        claimed_at=claimed_at,
        finished_at=finished_at,
        result=None if result is None else from_dict(loads(result)),
        error=None if error is None else from_dict(loads(error)),
        effects=tuple(from_dict(e) for e in loads(effects) or ()),
        approved_by=approved_by,
        call_id_generated=bool(call_id_generated),
    )
