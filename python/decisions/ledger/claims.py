"""Claims and commits: the steps a worker takes, as conditional updates.

Each step is one ``UPDATE ... WHERE <the state allows it> RETURNING ...``
and its audit event. On PostgreSQL both are one statement (a writable CTE)
sent without an explicit transaction: one round trip. On SQLite they run in
one ``BEGIN IMMEDIATE`` transaction. Only when the update changed nothing
does a second transaction read why (the refusal path).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

from ..errors import ResultError
from .records import (
    ARGUMENTS,
    COLUMNS,
    Claim,
    ClaimReason,
    Cursor,
    dumps,
    entry_of,
    event,
    expire,
    is_time,
    loads,
    row_of,
    unreadable,
)

__all__: list[str] = []  # internal to the package

Dialect = Literal["sqlite", "postgresql"]

#: States a claimable row can be in (the partial index ``ledger_calls_open`` holds them).
OPEN_SQL: Final = "state IN ('decided', 'approved', 'executing', 'failed')"
CLAIMABLE_SQL: Final = (
    "(state IN ('decided', 'approved')"
    " OR (state = 'executing' AND lease_until < ledger_now() AND (side_effects = 0 OR idempotent = 1))"
    " OR (state = 'failed' AND retry_safe = 1))"
)
BATCH_OPEN_SQL: Final = (
    "NOT (batch_mode = 'all_or_nothing' AND EXISTS (SELECT 1 FROM ledger_calls b WHERE b.run_id = ledger_calls.run_id"
    " AND b.batch_id = ledger_calls.batch_id AND b.state IN ('awaiting_approval', 'denied')))"
)
LIVE_RUN_SQL: Final = (
    "NOT EXISTS (SELECT 1 FROM ledger_runs r WHERE r.run_id = ledger_calls.run_id AND r.cancelled = 1)"
)
#: PostgreSQL: the run is not cancelled, read under a share lock on its row, so a claim waits
#: for a cancel in flight and sees it (a plain subquery reads the statement's snapshot).
RUN_LIVE_LOCKED_SQL: Final = (
    "COALESCE((SELECT r.cancelled FROM ledger_runs r WHERE r.run_id = ledger_calls.run_id FOR SHARE), 0) = 0"
)
_CLAIM_SET: Final = (
    "attempt = attempt + 1, worker = ?, lease_until = ledger_now() + ?, claimed_at = ledger_now(), "
    "finished_at = NULL, state = 'executing'"
)
#: Every step returns these four first (named apart from :data:`COLUMNS`), for its audit event.
_WHO: Final = "run_id AS e_run, call_id AS e_call, worker AS e_worker, attempt AS e_attempt"
_GRANTED: Final = f"{_WHO}, lease_until, idem_key, tool, arguments, side_effects"
#: The claim still holds the call: its worker and attempt (fencing token) are the live ones.
_LIVE_LEASE: Final = (
    f"state = 'executing' AND worker = ? AND attempt = ? AND lease_until >= ledger_now() AND {LIVE_RUN_SQL}"
)


def step_with_event(
    cur: Cursor, dialect: Dialect, update: str, params: tuple[Any, ...], kind: str, detail: Mapping[str, Any] | None
) -> Any:
    """Run ``update`` (an ``UPDATE ... RETURNING`` starting with :data:`_WHO`)
    and, when it changed a row, append the audit event ``kind`` with
    ``detail`` (None: ``{"attempt": n}`` of the returned attempt). The
    returned row, or None."""
    if dialect == "postgresql":
        detail_sql = "?" if detail is not None else """'{"attempt":' || e_attempt || '}'"""
        cur.execute(
            f"WITH won AS ({update}), ev AS (INSERT INTO ledger_events (run_id, call_id, at, kind, actor, detail) "
            f"SELECT e_run, e_call, ledger_now(), ?, e_worker, {detail_sql} FROM won) SELECT * FROM won",
            (*params, kind, *(() if detail is None else (dumps(dict(detail)),))),
        )
        return cur.fetchone()
    cur.execute(update, params)
    row = cur.fetchone()
    if row is not None:
        event(cur, row[0], row[1], kind, row[2], {"attempt": row[3]} if detail is None else detail)
    return row


def granted(row: Any) -> Claim:
    """The granted :class:`Claim` of a row of :data:`_GRANTED`;
    ``LEDGER_UNAVAILABLE`` for a row holding what this version never writes
    (as :func:`~decisions.ledger.records.entry_of` refuses it), so a worker
    is never handed a call to run from a table something else wrote."""
    run_id, call_id, worker, attempt, lease_until, idem_key, tool, arguments, side_effects = row
    for name, text in (
        ("run_id", run_id),
        ("call_id", call_id),
        ("worker", worker),
        ("idem_key", idem_key),
        ("tool", tool),
    ):
        if type(text) is not str:
            raise unreadable(f"a {name} of type {type(text).__name__}")
    if type(attempt) is not int or attempt < 1:
        raise unreadable(f"an attempt of {attempt!r}")
    if not is_time(lease_until):
        raise unreadable(f"a lease_until of {lease_until!r}")
    if side_effects not in (0, 1) or type(side_effects) not in (int, bool):
        raise unreadable(f"a side_effects of {side_effects!r}")
    arguments = loads(arguments)  # None: sensitive arguments are not stored; a custom call's are its text
    if arguments is not None and type(arguments) not in (dict, str):
        raise unreadable(f"arguments of type {type(arguments).__name__}")
    return Claim(
        granted=True,
        reason="granted",
        run_id=run_id,
        call_id=call_id,
        worker=worker,
        state="executing",
        attempt=attempt,
        lease_until=lease_until,
        idempotency_key=idem_key,
        tool=tool,
        arguments=arguments,
        side_effects=bool(side_effects),
    )


def claim_one(cur: Cursor, dialect: Dialect, run_id: str, call_id: str, worker: str, lease: float) -> Claim | None:
    """Win ``call_id`` in one statement, or None."""
    live = RUN_LIVE_LOCKED_SQL if dialect == "postgresql" else LIVE_RUN_SQL
    row = step_with_event(
        cur,
        dialect,
        f"UPDATE ledger_calls SET {_CLAIM_SET} WHERE run_id = ? AND call_id = ? AND {CLAIMABLE_SQL} "
        f"AND {BATCH_OPEN_SQL} AND {live} RETURNING {_GRANTED}",
        (worker, lease, run_id, call_id),
        "claimed",
        None,
    )
    return None if row is None else granted(row)


def claim_next(cur: Cursor, dialect: Dialect, run_id: str, worker: str, lease: float) -> Claim | None:
    """Win the first claimable call of the run (in recorded order) in one
    statement, or None. On PostgreSQL the candidate row is picked with ``FOR
    UPDATE SKIP LOCKED``, so concurrent workers take different calls instead
    of queueing on one row; the outer ``WHERE`` checks every condition again
    (a concurrently updated row is re-read there), and the run's row is
    locked (:data:`RUN_LIVE_LOCKED_SQL`) so a concurrent cancel cannot be overtaken."""
    lock = " FOR UPDATE SKIP LOCKED" if dialect == "postgresql" else ""
    live = RUN_LIVE_LOCKED_SQL if dialect == "postgresql" else LIVE_RUN_SQL
    pick = (
        f"SELECT call_id FROM ledger_calls WHERE run_id = ? AND {OPEN_SQL} AND {CLAIMABLE_SQL} AND {BATCH_OPEN_SQL} "
        f"AND {LIVE_RUN_SQL} ORDER BY seq LIMIT 1{lock}"
    )
    row = step_with_event(
        cur,
        dialect,
        f"UPDATE ledger_calls SET {_CLAIM_SET} WHERE run_id = ? AND call_id = ({pick}) AND {CLAIMABLE_SQL} "
        f"AND {BATCH_OPEN_SQL} AND {live} RETURNING {_GRANTED}",
        (worker, lease, run_id, run_id),
        "claimed",
        None,
    )
    return None if row is None else granted(row)


def refused_claim(cur: Cursor, run_id: str, call_id: str, worker: str) -> Claim:
    """The refused :class:`Claim` on ``call_id``: which state (or run) refused it."""
    expire(cur, run_id, call_id)
    row = row_of(cur, run_id, call_id)
    entry = entry_of(row)
    cur.execute("SELECT cancelled FROM ledger_runs WHERE run_id = ?", (run_id,))
    run = cur.fetchone()
    reason: ClaimReason
    if run is not None and run[0]:
        reason = "cancelled"
    elif entry.state == "executing":
        reason = "leased"
    elif entry.state in ("decided", "approved"):
        reason = "batch_waiting"
    else:
        reason = entry.state  # type: ignore[assignment]
    return Claim(
        granted=False,
        reason=reason,
        run_id=run_id,
        call_id=call_id,
        worker=worker,
        state=entry.state,
        attempt=entry.attempt,
        idempotency_key=entry.idempotency_key,
        tool=entry.tool,
        arguments=loads(row[ARGUMENTS]),
        side_effects=entry.side_effects,
        lease_until=entry.lease_until,
        result=entry.result,
    )


def renew(cur: Cursor, claim: Claim, lease: float) -> float | None:
    """The new lease end, or None when the claim no longer holds the call."""
    cur.execute(
        f"UPDATE ledger_calls SET lease_until = ledger_now() + ? WHERE run_id = ? AND call_id = ? AND {_LIVE_LEASE} "
        "RETURNING lease_until",
        (lease, claim.run_id, claim.call_id, claim.worker, claim.attempt),
    )
    row = cur.fetchone()
    return None if row is None else float(row[0])


def commit(
    cur: Cursor, dialect: Dialect, claim: Claim, sets: tuple[Any, ...], kind: str, detail: Mapping[str, Any]
) -> Any:
    """End the claimed call with the result columns ``sets`` (state, result,
    status, error, effects, retry_safe) in one statement; the call's row
    (:data:`COLUMNS` after the four of :data:`_WHO`), or None when the claim
    no longer holds it."""
    return step_with_event(
        cur,
        dialect,
        "UPDATE ledger_calls SET state = ?, result = ?, result_status = ?, error = ?, effects = ?, retry_safe = ?, "
        f"finished_at = ledger_now(), lease_until = NULL WHERE run_id = ? AND call_id = ? AND {_LIVE_LEASE} "
        f"RETURNING {_WHO}, {COLUMNS}",
        (*sets, claim.run_id, claim.call_id, claim.worker, claim.attempt),
        kind,
        detail,
    )


def refusal(cur: Cursor, claim: Claim) -> ResultError:
    """Why a commit or renewal under ``claim`` cannot count."""
    expire(cur, claim.run_id, claim.call_id)
    entry = entry_of(row_of(cur, claim.run_id, claim.call_id))
    if entry.state in ("committed", "failed"):
        return ResultError(
            "ALREADY_COMMITTED",
            f"call {claim.call_id!r} is already {entry.state}",
            path="$.call_id",
            hint="each call takes exactly one result",
        )
    if entry.attempt != claim.attempt:
        return ResultError(
            "STALE_ATTEMPT",
            f"attempt {claim.attempt} of {claim.call_id!r} is stale; attempt {entry.attempt} is current",
            path="$.attempt",
            hint="drop this result: another attempt owns the call",
        )
    if entry.worker != claim.worker:
        return ResultError(
            "NOT_CLAIMED",
            f"call {claim.call_id!r} is held by another worker's claim, not {claim.worker!r}'s",
            path="$.worker",
            hint="commit only under the claim the ledger granted",
        )
    return ResultError(
        "LATE_RESULT",
        f"the lease on {claim.call_id!r} expired or the run was cancelled (call is {entry.state})",
        path="$.call_id",
        hint="the result was kept for the audit only",
    )
