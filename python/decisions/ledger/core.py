"""The execution ledger: which call ran, once, with what result.

One :class:`Ledger` class over two databases (see :mod:`.sqlite` and
:mod:`.postgres`): every step is one transaction whose conditional update
(``UPDATE ... WHERE state = ... AND attempt = ...``) is the only arbiter, so
exactly one worker wins a claim across processes and machines; no lock is
held in Python beyond the one that guards this process's connection.

What it promises: exactly-once *claims* and at-most-once *starts* of a call
with side effects. Never exactly-once external effects: a worker can die
after the effect and before its commit, so such a call becomes ``unknown``
and waits for :meth:`Ledger.reconcile`. Hand :attr:`Claim.idempotency_key`
and :attr:`Claim.attempt` (the fencing token) to downstream services so they
can refuse a repeat or a stale writer themselves.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol

from .._payload import canonical_json
from ..errors import DomainError, OutputError, ResultError
from ..validate.decision import ToolCall, ToolDecision
from ..validate.domain import Tool, ToolRegistry
from .messages import result_messages
from .results import Effect, ResultCheck, ToolResult, check_result
from .shapes import from_dict, to_dict
from .states import CallState, Event, step

__all__ = ["Ledger", "Claim", "Entry", "AuditEvent", "ClaimReason", "argument_digest", "idempotency_key"]

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

_COLUMNS: Final = (
    "run_id, call_id, seq, tool, tool_version, arguments, digest, idem_key, side_effects, idempotent, sensitive, "
    "batch_id, batch_mode, state, attempt, worker, lease_until, decided_at, claimed_at, finished_at, "
    "result, result_status, error, effects, retry_safe, approved_by"
)


class Cursor(Protocol):
    """The part of a DB-API cursor the ledger uses (``?`` placeholders)."""

    def execute(self, sql: str, params: tuple[Any, ...] = ...) -> Any: ...
    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...


class Database(Protocol):
    """A connection to one ledger database (SQLite or PostgreSQL)."""

    url: str

    def run(self, work: Callable[[Cursor], Any]) -> Any: ...
    def close(self) -> None: ...


def argument_digest(arguments: Mapping[str, Any] | str) -> str:
    """``sha256:<hex>`` of the canonical JSON of a call's arguments (a custom call's: its input text)."""
    return "sha256:" + hashlib.sha256(canonical_json(arguments).encode("utf-8")).hexdigest()


def idempotency_key(run_id: str, call_id: str, tool: str, digest: str) -> str:
    """The key a host hands to downstream services: one per (run, call id, tool, arguments)."""
    return "ik_" + hashlib.sha256(canonical_json([run_id, call_id, tool, digest]).encode("utf-8")).hexdigest()[:32]


@dataclass(frozen=True, slots=True, kw_only=True)
class Claim:
    """A worker's claim on one call. ``granted`` says whether it may execute
    the call now; ``reason`` why not (and ``state`` the call's state, with
    ``result`` the stored result when there is one). A granted claim carries
    the fencing token ``attempt``, the ``idempotency_key`` and the lease end
    (seconds since the epoch, by the database's clock)."""

    granted: bool
    reason: ClaimReason
    run_id: str
    call_id: str
    worker: str
    state: CallState
    attempt: int
    idempotency_key: str
    tool: str
    arguments: dict[str, Any] | None
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


def _loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def _dumps(value: Any) -> str:
    return canonical_json(value)


def _tools(tools: ToolRegistry | Collection[Tool] | Mapping[str, Tool] | None) -> Callable[[str], Tool | None]:
    if tools is None:
        return lambda name: None
    if isinstance(tools, ToolRegistry):
        return tools.get
    if isinstance(tools, Mapping):
        return tools.get
    by_name = {t.name: t for t in tools}
    return by_name.get


_VERDICT_STATE: Final[Mapping[str, CallState]] = {
    "allowed": "decided",
    "approved": "approved",
    "needs_approval": "awaiting_approval",
    "denied": "denied",
}
_CLAIMABLE_SQL: Final = (
    "(state IN ('decided', 'approved')"
    " OR (state = 'executing' AND lease_until < ledger_now() AND (side_effects = 0 OR idempotent = 1))"
    " OR (state = 'failed' AND retry_safe = 1))"
)
_BATCH_OPEN_SQL: Final = (
    "NOT (batch_mode = 'all_or_nothing' AND EXISTS (SELECT 1 FROM ledger_calls b WHERE b.run_id = ledger_calls.run_id"
    " AND b.batch_id = ledger_calls.batch_id AND b.state IN ('awaiting_approval', 'denied')))"
)
_LIVE_RUN_SQL: Final = (
    "NOT EXISTS (SELECT 1 FROM ledger_runs r WHERE r.run_id = ledger_calls.run_id AND r.cancelled = 1)"
)


class Ledger:
    """The execution ledger on one database; see :func:`decisions.open_ledger`.

    ``checks`` maps a tool name to the :class:`ResultCheck` its results must
    pass at :meth:`commit`. Safe to share between threads (one connection,
    guarded); each process opens its own."""

    def __init__(self, db: Database, *, checks: Mapping[str, ResultCheck] | None = None) -> None:
        self._db = db
        self._lock = threading.Lock()
        self.checks: Mapping[str, ResultCheck] = dict(checks or {})

    @property
    def url(self) -> str:
        """The database URL this ledger was opened on."""
        return self._db.url

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._db.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ internals

    def _run(self, work: Callable[[Cursor], Any]) -> Any:
        with self._lock:
            return self._db.run(work)

    @staticmethod
    def _event(
        cur: Cursor, run_id: str, call_id: str | None, kind: str, actor: str | None, detail: Mapping[str, Any]
    ) -> None:
        cur.execute(
            "INSERT INTO ledger_events (run_id, call_id, at, kind, actor, detail) VALUES (?, ?, ledger_now(), ?, ?, ?)",
            (run_id, call_id, kind, actor, _dumps(dict(detail))),
        )

    @staticmethod
    def _row(cur: Cursor, run_id: str, call_id: str) -> Any:
        cur.execute(f"SELECT {_COLUMNS} FROM ledger_calls WHERE run_id = ? AND call_id = ?", (run_id, call_id))
        row = cur.fetchone()
        if row is None:
            raise DomainError(
                "UNKNOWN_CALL_ID",
                f"no call {call_id!r} recorded in run {run_id!r}",
                path="$.call_id",
                hint="claim only calls the ledger recorded",
            )
        return row

    def _expire(self, cur: Cursor, run_id: str, call_id: str | None = None) -> None:
        """Leases that ran out on calls with side effects: ``unknown``, never re-run by themselves."""
        where = (
            "run_id = ? AND state = 'executing' AND lease_until < ledger_now() AND side_effects = 1 AND idempotent = 0"
        )
        params: tuple[Any, ...] = (run_id,)
        if call_id is not None:
            where += " AND call_id = ?"
            params += (call_id,)
        cur.execute(
            f"UPDATE ledger_calls SET state = 'unknown' WHERE {where} RETURNING call_id, worker, attempt", params
        )
        for expired_id, worker, attempt in cur.fetchall():
            self._event(cur, run_id, expired_id, "lease_expired", worker, {"attempt": attempt})

    @staticmethod
    def _entry(row: Any) -> Entry:
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
        ) = row
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
            result=None if result is None else from_dict(_loads(result)),
            error=None if error is None else from_dict(_loads(error)),
            effects=tuple(from_dict(e) for e in _loads(effects) or ()),
            approved_by=approved_by,
        )

    # ------------------------------------------------------------ recording

    def record(
        self,
        decision: ToolDecision,
        *,
        run_id: str,
        tools: ToolRegistry | Collection[Tool] | Mapping[str, Tool] | None = None,
        idempotent: Collection[str] = (),
        sensitive: Collection[str] = (),
        policy: str | None = None,
    ) -> tuple[Entry, ...]:
        """Store every call of ``decision`` under ``run_id`` with its verdict.

        A call's tool decides whether it has side effects (a tool not found in
        ``tools`` is assumed to have them); ``idempotent`` names tools whose
        calls may run again after a lost worker; the arguments of calls to a
        ``sensitive`` tool are not stored (only their digest: the host hands
        them to the worker itself). ``policy`` names the policy that judged the
        calls, for the audit. Recording the same decision again changes
        nothing; a different call under a recorded (run, call id) is
        ``LEDGER_CONFLICT``."""
        lookup = _tools(tools)
        batch_id = argument_digest({"calls": [c.call_id for c in decision.calls]})

        def work(cur: Cursor) -> tuple[Entry, ...]:
            cur.execute(
                "INSERT INTO ledger_runs (run_id, cancelled, created_at) VALUES (?, 0, ledger_now()) "
                "ON CONFLICT (run_id) DO NOTHING",
                (run_id,),
            )
            cur.execute("SELECT COALESCE(MAX(seq), -1) FROM ledger_calls WHERE run_id = ?", (run_id,))
            base = int(cur.fetchone()[0]) + 1
            out: list[Entry] = []
            for offset, (call, verdict) in enumerate(zip(decision.calls, decision.verdicts)):
                tool = lookup(call.name)
                digest = argument_digest(call.arguments)
                key = idempotency_key(run_id, call.call_id, call.name, digest)
                state = _VERDICT_STATE[verdict.status]
                is_sensitive = call.name in sensitive
                side_effects = True if tool is None else tool.side_effects
                version = call.tool_version if call.tool_version is not None else (tool.version if tool else None)
                cur.execute(
                    "INSERT INTO ledger_calls (run_id, call_id, seq, tool, tool_version, arguments, digest, idem_key, "
                    "side_effects, idempotent, sensitive, batch_id, batch_mode, state, attempt, decided_at, error, "
                    "effects, retry_safe, approved_by, verdict) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ledger_now(), ?, '[]', 0, ?, ?) "
                    "ON CONFLICT (run_id, call_id) DO NOTHING RETURNING call_id",
                    (
                        run_id,
                        call.call_id,
                        base + offset,
                        call.name,
                        version,
                        None if is_sensitive else _dumps(call.arguments),
                        digest,
                        key,
                        int(side_effects),
                        int(call.name in idempotent),
                        int(is_sensitive),
                        batch_id,
                        decision.batch,
                        state,
                        None if verdict.error is None else _dumps(to_dict(verdict.error)),
                        verdict.approved_by,
                        _dumps(to_dict(verdict)),
                    ),
                )
                inserted = cur.fetchone() is not None
                row = self._row(cur, run_id, call.call_id)
                if not inserted:
                    if row[3] != call.name or row[6] != digest:
                        raise ResultError(
                            "LEDGER_CONFLICT",
                            f"run {run_id!r} already holds a different call {call.call_id!r}",
                            path=f"$.calls[{offset}].call_id",
                            hint="give every call of a run its own id",
                        )
                else:
                    detail = {
                        "tool": call.name,
                        "tool_version": version,
                        "digest": digest,
                        "policy": policy,
                        "verdict": verdict.status,
                        "reasons": list(verdict.reasons),
                    }
                    self._event(cur, run_id, call.call_id, "recorded", None, detail)
                    if verdict.status == "approved":
                        self._event(cur, run_id, call.call_id, "approved", verdict.approved_by, detail)
                out.append(self._entry(row))
            return tuple(out)

        result: tuple[Entry, ...] = self._run(work)
        return result

    # ------------------------------------------------------------ approvals, cancel

    def _move(
        self,
        run_id: str,
        call_id: str,
        event: Event,
        actor: str | None,
        detail: Mapping[str, Any],
        sets: str = "",
        params: tuple[Any, ...] = (),
    ) -> Entry:
        """Apply one row of the state machine to a call, or ``INVALID_TRANSITION``."""

        def work(cur: Cursor) -> Entry:
            self._expire(cur, run_id, call_id)
            row = self._row(cur, run_id, call_id)
            state: CallState = row[13]
            target = step(state, event)
            if target is None:
                raise ResultError(
                    "INVALID_TRANSITION",
                    f"call {call_id!r} is {state}; {event} is not possible",
                    path="$.state",
                    hint="see the ledger's state machine",
                )
            cur.execute(
                f"UPDATE ledger_calls SET state = ?{sets} WHERE run_id = ? AND call_id = ? AND state = ?",
                (target, *params, run_id, call_id, state),
            )
            self._event(
                cur, run_id, call_id, event, actor, {"tool": row[3], "tool_version": row[4], "digest": row[6], **detail}
            )
            return self._entry(self._row(cur, run_id, call_id))

        entry: Entry = self._run(work)
        return entry

    def approve(self, call_id: str, *, run_id: str, approver: str, policy: str | None = None) -> Entry:
        """A call waiting for approval may now run; the audit keeps who, when,
        the policy, the tool version and the argument digest."""
        return self._move(run_id, call_id, "approve", approver, {"policy": policy}, ", approved_by = ?", (approver,))

    def reject(
        self, call_id: str, *, run_id: str, approver: str, reason: str | None = None, policy: str | None = None
    ) -> Entry:
        """A call waiting for approval is refused: ``denied``."""
        return self._move(run_id, call_id, "reject", approver, {"policy": policy, "reason": reason})

    def cancel(self, run_id: str, *, actor: str | None = None) -> None:
        """Cancel the run: no call of it is granted again, and results that
        arrive from now on are late."""

        def work(cur: Cursor) -> None:
            cur.execute(
                "INSERT INTO ledger_runs (run_id, cancelled, created_at) VALUES (?, 1, ledger_now()) "
                "ON CONFLICT (run_id) DO UPDATE SET cancelled = 1",
                (run_id,),
            )
            self._event(cur, run_id, None, "cancelled", actor, {})

        self._run(work)

    def cancelled(self, run_id: str) -> bool:
        """True when the run was cancelled."""

        def work(cur: Cursor) -> bool:
            cur.execute("SELECT cancelled FROM ledger_runs WHERE run_id = ?", (run_id,))
            row = cur.fetchone()
            return row is not None and bool(row[0])

        flag: bool = self._run(work)
        return flag

    # ------------------------------------------------------------ claims and commits

    def claim(self, call_id: str, *, run_id: str, worker: str, lease_seconds: float = 60.0) -> Claim:
        """Try to win ``call_id`` for ``worker``: one conditional update in
        the database, so exactly one concurrent claimant is granted."""
        if not lease_seconds > 0:
            raise ValueError("lease_seconds must be positive")

        def work(cur: Cursor) -> Claim:
            self._expire(cur, run_id, call_id)
            cur.execute(
                "UPDATE ledger_calls SET attempt = attempt + 1, worker = ?, lease_until = ledger_now() + ?, "
                "claimed_at = ledger_now(), finished_at = NULL, state = 'executing' "
                f"WHERE run_id = ? AND call_id = ? AND {_CLAIMABLE_SQL} AND {_BATCH_OPEN_SQL} AND {_LIVE_RUN_SQL} "
                "RETURNING attempt, lease_until",
                (worker, float(lease_seconds), run_id, call_id),
            )
            won = cur.fetchone()
            row = self._row(cur, run_id, call_id)
            entry = self._entry(row)
            arguments = _loads(row[5])
            common = dict(
                run_id=run_id,
                call_id=call_id,
                worker=worker,
                idempotency_key=entry.idempotency_key,
                tool=entry.tool,
                arguments=arguments,
                side_effects=entry.side_effects,
            )
            if won is not None:
                self._event(cur, run_id, call_id, "claimed", worker, {"attempt": won[0]})
                return Claim(
                    granted=True, reason="granted", state="executing", attempt=won[0], lease_until=won[1], **common
                )
            reason: ClaimReason
            cur.execute("SELECT cancelled FROM ledger_runs WHERE run_id = ?", (run_id,))
            run = cur.fetchone()
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
                state=entry.state,
                attempt=entry.attempt,
                lease_until=entry.lease_until,
                result=entry.result,
                **common,
            )

        claim: Claim = self._run(work)
        return claim

    def renew(self, claim: Claim, *, lease_seconds: float = 60.0) -> Claim:
        """Extend a live lease (a heartbeat); ``LATE_RESULT`` once it has
        expired, ``STALE_ATTEMPT`` once another attempt has started."""
        if not claim.granted:
            raise ResultError("NOT_CLAIMED", f"the claim on {claim.call_id!r} was not granted")

        def work(cur: Cursor) -> Claim:
            cur.execute(
                "UPDATE ledger_calls SET lease_until = ledger_now() + ? WHERE run_id = ? AND call_id = ? AND state = 'executing' "
                f"AND attempt = ? AND lease_until >= ledger_now() AND {_LIVE_RUN_SQL} RETURNING lease_until",
                (float(lease_seconds), claim.run_id, claim.call_id, claim.attempt),
            )
            row = cur.fetchone()
            if row is None:
                raise self._refusal(cur, claim)
            return Claim(
                granted=True,
                reason="granted",
                run_id=claim.run_id,
                call_id=claim.call_id,
                worker=claim.worker,
                state="executing",
                attempt=claim.attempt,
                idempotency_key=claim.idempotency_key,
                tool=claim.tool,
                arguments=claim.arguments,
                side_effects=claim.side_effects,
                lease_until=row[0],
            )

        renewed: Claim = self._run(work)
        return renewed

    def _refusal(self, cur: Cursor, claim: Claim) -> ResultError:
        """Why a commit or renewal under ``claim`` cannot count."""
        self._expire(cur, claim.run_id, claim.call_id)
        entry = self._entry(self._row(cur, claim.run_id, claim.call_id))
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
        return ResultError(
            "LATE_RESULT",
            f"the lease on {claim.call_id!r} expired or the run was cancelled (call is {entry.state})",
            path="$.call_id",
            hint="the result was kept for the audit only",
        )

    def commit(self, claim: Claim, result: ToolResult) -> Entry:
        """End the claimed call with ``result``: ``committed`` when it passes
        the tool's :class:`ResultCheck`, else ``failed`` with the check's error
        on the returned entry. A result under an expired lease or a cancelled
        run raises ``LATE_RESULT``, under a superseded attempt
        ``STALE_ATTEMPT``, for a call that already has its result
        ``ALREADY_COMMITTED``: each is kept in the audit and changes nothing."""
        if not claim.granted:
            raise ResultError(
                "NOT_CLAIMED",
                f"the claim on {claim.call_id!r} was not granted ({claim.reason})",
                path="$.call_id",
                hint="commit only under a granted claim",
            )
        if result.call_id != claim.call_id:
            raise ResultError(
                "NOT_CLAIMED",
                f"a result for {result.call_id!r} under the claim on {claim.call_id!r}",
                path="$.call_id",
                hint="commit each result under its own call's claim",
            )
        error, observed = check_result(claim.arguments, result, self.checks.get(claim.tool))
        state: CallState = "failed" if error is not None else "committed"
        stored = _dumps(to_dict(result))

        def work(cur: Cursor) -> Entry:
            cur.execute(
                "UPDATE ledger_calls SET state = ?, result = ?, result_status = ?, error = ?, effects = ?, retry_safe = ?, "
                "finished_at = ledger_now(), lease_until = NULL WHERE run_id = ? AND call_id = ? AND state = 'executing' "
                f"AND attempt = ? AND lease_until >= ledger_now() AND {_LIVE_RUN_SQL} RETURNING call_id",
                (
                    state,
                    stored,
                    result.status,
                    None if error is None else _dumps(to_dict(error)),
                    _dumps([to_dict(e) for e in observed]),
                    int(result.retry_safe),
                    claim.run_id,
                    claim.call_id,
                    claim.attempt,
                ),
            )
            if cur.fetchone() is None:
                refusal = self._refusal(cur, claim)
                kind = "duplicate_result" if refusal.code == "ALREADY_COMMITTED" else "late_result"
                self._event(
                    cur,
                    claim.run_id,
                    claim.call_id,
                    kind,
                    claim.worker,
                    {"attempt": claim.attempt, "code": refusal.code, "result": to_dict(result)},
                )
                return _Refused(refusal)  # type: ignore[return-value]
            self._event(
                cur,
                claim.run_id,
                claim.call_id,
                state,
                claim.worker,
                {"attempt": claim.attempt, "status": result.status, "code": None if error is None else error.code},
            )
            return self._entry(self._row(cur, claim.run_id, claim.call_id))

        outcome = self._run(work)
        if isinstance(outcome, _Refused):
            raise outcome.error
        entry: Entry = outcome
        return entry

    def reconcile(
        self, call_id: str, outcome: ToolResult | Literal["retry"], *, run_id: str, actor: str | None = None
    ) -> Entry:
        """Settle an ``unknown`` call: the host looked and found ``outcome``
        (a result: ``committed`` when ``ok``, else ``failed``), or ``"retry"``:
        the call did not happen and may be claimed again."""
        if outcome == "retry":
            return self._move(run_id, call_id, "reconcile_retry", actor, {"outcome": "retry"}, ", lease_until = NULL")
        assert isinstance(outcome, ToolResult)
        if outcome.call_id != call_id:
            raise ResultError(
                "NOT_CLAIMED", f"a result for {outcome.call_id!r} to reconcile {call_id!r}", path="$.call_id"
            )
        ok = outcome.status == "ok"
        error = None if ok else check_result(None, outcome, None)[0]
        return self._move(
            run_id,
            call_id,
            "reconcile_ok" if ok else "reconcile_failed",
            actor,
            {"status": outcome.status},
            ", result = ?, result_status = ?, error = ?, effects = ?, retry_safe = ?, finished_at = ledger_now(), lease_until = NULL",
            (
                _dumps(to_dict(outcome)),
                outcome.status,
                None if error is None else _dumps(to_dict(error)),
                _dumps([to_dict(e) for e in outcome.effects]) if ok else "[]",
                int(outcome.retry_safe),
            ),
        )

    # ------------------------------------------------------------ reading

    def entries(self, run_id: str) -> tuple[Entry, ...]:
        """Every call of the run, in the order recorded (expired leases on
        calls with side effects are turned ``unknown`` first)."""

        def work(cur: Cursor) -> tuple[Entry, ...]:
            self._expire(cur, run_id)
            cur.execute(f"SELECT {_COLUMNS} FROM ledger_calls WHERE run_id = ? ORDER BY seq", (run_id,))
            return tuple(self._entry(row) for row in cur.fetchall())

        entries: tuple[Entry, ...] = self._run(work)
        return entries

    def entry(self, call_id: str, *, run_id: str) -> Entry:
        """One call (``UNKNOWN_CALL_ID`` when it was never recorded)."""

        def work(cur: Cursor) -> Entry:
            self._expire(cur, run_id, call_id)
            return self._entry(self._row(cur, run_id, call_id))

        entry: Entry = self._run(work)
        return entry

    def runs(self) -> tuple[tuple[str, bool, int], ...]:
        """``(run_id, cancelled, number of calls)`` for every run, oldest first."""

        def work(cur: Cursor) -> tuple[tuple[str, bool, int], ...]:
            cur.execute(
                "SELECT r.run_id, r.cancelled, COUNT(c.call_id) FROM ledger_runs r LEFT JOIN ledger_calls c "
                "ON c.run_id = r.run_id GROUP BY r.run_id, r.cancelled, r.created_at ORDER BY r.created_at, r.run_id"
            )
            return tuple((run_id, bool(flag), int(n)) for run_id, flag, n in cur.fetchall())

        runs: tuple[tuple[str, bool, int], ...] = self._run(work)
        return runs

    def audit(self, run_id: str) -> tuple[AuditEvent, ...]:
        """The run's audit events, oldest first."""

        def work(cur: Cursor) -> tuple[AuditEvent, ...]:
            cur.execute(
                "SELECT run_id, call_id, at, kind, actor, detail FROM ledger_events WHERE run_id = ? ORDER BY id",
                (run_id,),
            )
            return tuple(
                AuditEvent(run_id=r, call_id=c, at=at, kind=k, actor=a, detail=_loads(d))
                for r, c, at, k, a, d in cur.fetchall()
            )

        events: tuple[AuditEvent, ...] = self._run(work)
        return events

    def result_messages(
        self, provider: str, *, run_id: str, call_ids: Collection[str] | None = None
    ) -> list[dict[str, Any]]:
        """The provider-shaped messages that tell the model how each ended
        call went: a committed call's result as the tool gave it; for a failed
        call only the error's code, message and hint (never the raw content
        of a result that failed its checks); an ``unknown`` call says its
        outcome is unknown and it will not be re-run. Calls still open are
        left out."""
        pairs: list[tuple[ToolCall, Any]] = []
        for entry in self.entries(run_id):
            if call_ids is not None and entry.call_id not in call_ids:
                continue
            call = ToolCall(call_id=entry.call_id, name=entry.tool, arguments={}, tool_version=entry.tool_version)
            if entry.state == "committed" and entry.result is not None:
                pairs.append((call, entry.result))
            elif entry.state in ("failed", "denied", "unknown"):
                if entry.state == "unknown":
                    content: dict[str, Any] = {
                        "error": "outcome unknown",
                        "message": "the worker was lost mid-call; the call will not be re-run",
                    }
                elif entry.error is not None:
                    content = {"error": entry.error.code, "message": entry.error.message, "hint": entry.error.hint}
                else:
                    content = {"error": "TOOL_ERROR", "message": "the call failed"}
                pairs.append((call, ToolResult(entry.call_id, "error", content)))
        return result_messages(provider, pairs)


@dataclass(frozen=True, slots=True)
class _Refused:
    """A refused commit: its audit event is stored, then the error is raised."""

    error: ResultError
