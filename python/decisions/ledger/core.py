"""The execution ledger: which call ran, once, with what result.

One :class:`Ledger` class over two databases (see :mod:`.sqlite` and
:mod:`.postgres`): every step is a conditional update
(``UPDATE ... WHERE state = ... AND attempt = ...``, see :mod:`.claims`)
and that update is the only arbiter, so exactly one worker wins a claim
across processes and machines; no lock is held in Python beyond the one
that guards this process's connection.

What it promises: exactly-once *claims* and at-most-once *starts* of a call
with side effects. Never exactly-once external effects: a worker can die
after the effect and before its commit, so such a call becomes ``unknown``
and waits for :meth:`Ledger.reconcile`. Hand :attr:`Claim.idempotency_key`
and :attr:`Claim.attempt` (the fencing token) to downstream services so they
can refuse a repeat or a stale writer themselves.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, Final, Literal

from ..errors import DomainError, OutputError, ResultError
from ..limits import DEFAULT_LIMITS, Limits, seconds
from ..validate.decision import ToolCall, ToolDecision
from ..validate.domain import Tool, ToolRegistry
from . import claims
from .ddl import checked_id
from .messages import written
from .records import (
    ARGUMENTS,
    COLUMNS,
    DIGEST,
    STATE,
    TOOL,
    TOOL_VERSION,
    AuditEvent,
    Claim,
    Cursor,
    Database,
    Entry,
    argument_digest,
    dumps,
    entry_of,
    expire,
    idempotency_key,
    loads,
    row_of,
    storable,
)
from .records import (
    event as log_event,
)
from .results import Effect, ToolResult, check_result, check_result_size
from .shapes import from_dict, to_dict
from .states import CallState, Event, step

__all__ = ["Ledger", "Tools"]

#: What a ledger is told about the tools: a registry, a collection or a mapping by name.
Tools = ToolRegistry | Collection[Tool] | Mapping[str, Tool]


def _lookup(tools: Tools | None) -> Callable[[str], Tool | None]:
    if tools is None:
        return lambda name: None
    if isinstance(tools, (ToolRegistry, Mapping)):
        return tools.get
    return {t.name: t for t in tools}.get


_VERDICT_STATE: Final[Mapping[str, CallState]] = {
    "allowed": "decided",
    "approved": "approved",
    "needs_approval": "awaiting_approval",
    "denied": "denied",
}


def error_content(entry: Entry) -> dict[str, Any]:
    """What the model is told about a call that did not commit: the error's
    code, message and hint (never a failed result's raw content)."""
    if entry.state == "unknown":
        return {"error": "outcome unknown", "message": "the worker was lost mid-call; the call will not be re-run"}
    if entry.error is not None:
        return {"error": entry.error.code, "message": entry.error.message, "hint": entry.error.hint}
    return {"error": "TOOL_ERROR", "message": "the call failed"}


class Ledger:
    """The execution ledger on one database; see :func:`decisions.open_ledger`.

    ``tools`` are the tools whose calls it records and whose results it
    checks at :meth:`commit` (each :class:`~decisions.Tool`'s ``returns``
    schema and ``effects`` check); ``limits`` bound the results it takes
    (``max_result_bytes``). Safe to share between threads (one connection,
    guarded); each process opens its own."""

    def __init__(self, db: Database, *, tools: Tools | None = None, limits: Limits | None = None) -> None:
        if limits is not None and not isinstance(limits, Limits):
            raise TypeError(f"limits must be a decisions.Limits, not {type(limits).__name__}")
        self._db = db
        self._dialect: claims.Dialect = "postgresql" if db.writable_cte else "sqlite"
        self._lock = threading.Lock()
        self._tool = _lookup(tools)
        self._limits = DEFAULT_LIMITS if limits is None else limits

    @property
    def limits(self) -> Limits:
        """The limits the ledger's results are held to."""
        return self._limits

    def tool(self, name: str) -> Tool | None:
        """The declaration of tool ``name`` the ledger checks results by (None: not given)."""
        return self._tool(name)

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

    def _run(self, work: Callable[[Cursor], Any], *, single: bool = False) -> Any:
        with self._lock:
            return self._db.run(work, single=single)

    # ------------------------------------------------------------ recording

    def record(
        self,
        decision: ToolDecision,
        *,
        run_id: str,
        tools: Tools | None = None,
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
        calls, for the audit. Both name collections hold tool names as
        ``str`` (a name of another type is a TypeError: it would match no
        call). Recording the same decision again changes
        nothing; a different call under a recorded (run, call id) is
        ``LEDGER_CONFLICT``."""
        for what, names in (("idempotent", idempotent), ("sensitive", sensitive)):
            if isinstance(names, str):  # `in` would match any part of it: "write" in "write_file"
                raise ValueError(f"{what} must be a collection of tool names, not the string {names!r}")
        # read once: `in` on a generator consumes it, and a later call of a sensitive tool would be stored;
        # a name of a str subclass as the str it holds, or a call's plain name would not be found
        idempotent, sensitive = _tool_names(idempotent, "idempotent"), _tool_names(sensitive, "sensitive")
        checked_id(run_id, "run id", "$.run_id")
        lookup = self._tool if tools is None else _lookup(tools)
        for i, c in enumerate(decision.calls):  # a call id the ledger cannot hold is named at its own path
            checked_id(c.call_id, "call id", f"$.calls[{i}].call_id")
            storable(c.call_id, "SCHEMA_MISMATCH", f"$.calls[{i}].call_id")
        batch_id = argument_digest({"calls": [c.call_id for c in decision.calls]}, path="$.calls")
        # checked before the transaction: a call the ledger cannot store records nothing of the decision
        digests = [argument_digest(c.arguments, path=f"$.calls[{i}].arguments") for i, c in enumerate(decision.calls)]

        def work(cur: Cursor) -> tuple[Entry, ...]:
            # DO UPDATE locks the run's row (PostgreSQL), so records of one run take their seqs in turn
            cur.execute(
                "INSERT INTO ledger_runs (run_id, cancelled, created_at) VALUES (?, 0, ledger_now()) "
                "ON CONFLICT (run_id) DO UPDATE SET cancelled = ledger_runs.cancelled",
                (run_id,),
            )
            cur.execute("SELECT COALESCE(MAX(seq), -1) FROM ledger_calls WHERE run_id = ?", (run_id,))
            base = int(cur.fetchone()[0]) + 1
            out: list[Entry] = []
            for offset, (call, verdict) in enumerate(zip(decision.calls, decision.verdicts)):
                tool = lookup(call.name)
                digest = digests[offset]
                key = idempotency_key(run_id, call.call_id, call.name, digest)
                state = _VERDICT_STATE[verdict.status]
                is_sensitive = call.name in sensitive
                side_effects = True if tool is None else tool.side_effects
                version = call.tool_version if call.tool_version is not None else (tool.version if tool else None)
                cur.execute(
                    "INSERT INTO ledger_calls (run_id, call_id, seq, tool, tool_version, arguments, digest, idem_key, "
                    "side_effects, idempotent, sensitive, batch_id, batch_mode, state, attempt, decided_at, error, "
                    "effects, retry_safe, approved_by, verdict, call_id_generated) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ledger_now(), ?, '[]', 0, ?, ?, ?) "
                    "ON CONFLICT (run_id, call_id) DO NOTHING RETURNING call_id",
                    (
                        run_id,
                        call.call_id,
                        base + offset,
                        call.name,
                        version,
                        None if is_sensitive else dumps(call.arguments),
                        digest,
                        key,
                        int(side_effects),
                        int(call.name in idempotent),
                        int(is_sensitive),
                        batch_id,
                        decision.batch,
                        state,
                        None if verdict.error is None else dumps(to_dict(verdict.error)),
                        verdict.approved_by,
                        dumps(to_dict(verdict)),
                        int(call.call_id_generated),
                    ),
                )
                inserted = cur.fetchone() is not None
                row = row_of(cur, run_id, call.call_id)
                if not inserted:
                    if row[TOOL] != call.name or row[DIGEST] != digest:
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
                    log_event(cur, run_id, call.call_id, "recorded", None, detail)
                    if verdict.status == "approved":
                        log_event(cur, run_id, call.call_id, "approved", verdict.approved_by, detail)
                out.append(entry_of(row))
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
        _ids(run_id, call_id)
        _name(actor, "actor", optional=True)

        def work(cur: Cursor) -> Entry:
            expire(cur, run_id, call_id)
            row = row_of(cur, run_id, call_id)
            state: CallState = row[STATE]
            target = step(state, event)
            if target is None:
                raise _invalid_transition(call_id, state, event)
            cur.execute(
                f"UPDATE ledger_calls SET state = ?{sets} WHERE run_id = ? AND call_id = ? AND state = ? "
                "RETURNING call_id",
                (target, *params, run_id, call_id, state),
            )
            if cur.fetchone() is None:  # another step moved the call since it was read (PostgreSQL)
                raise _invalid_transition(call_id, row_of(cur, run_id, call_id)[STATE], event)
            log_event(
                cur,
                run_id,
                call_id,
                event,
                actor,
                {"tool": row[TOOL], "tool_version": row[TOOL_VERSION], "digest": row[DIGEST], **detail},
            )
            return entry_of(row_of(cur, run_id, call_id))

        entry: Entry = self._run(work)
        return entry

    def approve(self, call_id: str, *, run_id: str, approver: str, policy: str | None = None) -> Entry:
        """A call waiting for approval may now run; the audit keeps who, when,
        the policy, the tool version and the argument digest."""
        _name(approver, "approver")
        return self._move(run_id, call_id, "approve", approver, {"policy": policy}, ", approved_by = ?", (approver,))

    def reject(
        self, call_id: str, *, run_id: str, approver: str, reason: str | None = None, policy: str | None = None
    ) -> Entry:
        """A call waiting for approval is refused: ``denied``."""
        _name(approver, "approver")
        return self._move(run_id, call_id, "reject", approver, {"policy": policy, "reason": reason})

    def cancel(self, run_id: str, *, actor: str | None = None) -> None:
        """Cancel the run: no call of it is granted again, and results that
        arrive from now on are late."""
        _ids(run_id)
        _name(actor, "actor", optional=True)

        def work(cur: Cursor) -> None:
            cur.execute(
                "INSERT INTO ledger_runs (run_id, cancelled, created_at) VALUES (?, 1, ledger_now()) "
                "ON CONFLICT (run_id) DO UPDATE SET cancelled = 1",
                (run_id,),
            )
            log_event(cur, run_id, None, "cancelled", actor, {})

        self._run(work)

    def cancelled(self, run_id: str) -> bool:
        """True when the run was cancelled."""
        _ids(run_id)

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
        _ids(run_id, call_id)
        _name(worker, "worker")
        lease = _lease(lease_seconds)

        def work(cur: Cursor) -> Claim | None:
            won = claims.claim_one(cur, self._dialect, run_id, call_id, worker, lease)
            if won is not None or self._dialect == "postgresql":  # PostgreSQL: the statement ran on its own
                return won
            return claims.refused_claim(cur, run_id, call_id, worker)  # SQLite: in the same transaction

        outcome: Claim | None = self._run(work, single=True)
        if outcome is not None:
            return outcome
        refused: Claim = self._run(lambda cur: claims.refused_claim(cur, run_id, call_id, worker))
        return refused

    def claim_next(self, run_id: str, *, worker: str, lease_seconds: float = 60.0) -> Claim | None:
        """Win the first call of the run that may be claimed now (recorded
        order), or None when there is none. Workers that share a run take
        different calls without contending on one row (``FOR UPDATE SKIP
        LOCKED`` on PostgreSQL)."""
        _ids(run_id)
        _name(worker, "worker")
        lease = _lease(lease_seconds)
        won: Claim | None = self._run(
            lambda cur: claims.claim_next(cur, self._dialect, run_id, worker, lease), single=True
        )
        return won

    def renew(self, claim: Claim, *, lease_seconds: float = 60.0) -> Claim:
        """Extend a live lease (a heartbeat); ``LATE_RESULT`` once it has
        expired, ``STALE_ATTEMPT`` once another attempt has started."""
        if not claim.granted:
            raise ResultError("NOT_CLAIMED", f"the claim on {claim.call_id!r} was not granted")
        lease = _lease(lease_seconds)
        until: float | None = self._run(lambda cur: claims.renew(cur, claim, lease), single=True)
        if until is None:
            raise self._run(lambda cur: claims.refusal(cur, claim))
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
            lease_until=until,
        )

    def commit(self, claim: Claim, result: ToolResult) -> Entry:
        """End the claimed call with ``result``: ``committed`` when it passes
        the tool's result checks (its ``returns`` schema and ``effects``
        check), else ``failed`` with the check's error on the returned entry.
        A result the ledger cannot keep (content larger than
        ``max_result_bytes``: ``RESULT_TOO_LARGE``; not JSON:
        ``RESULT_SCHEMA_MISMATCH``) ends the call ``failed``, not retry-safe,
        with no result stored. A result under an expired lease or a cancelled run raises
        ``LATE_RESULT``, under a superseded attempt ``STALE_ATTEMPT``, for a
        call that already has its result ``ALREADY_COMMITTED``: each is kept
        in the audit and changes nothing."""
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
        stored: str | None
        error: OutputError | None
        observed: tuple[Effect, ...]
        try:
            check_result_size(result, self._limits)  # before the content is written
            stored = storable(to_dict(result), "RESULT_SCHEMA_MISMATCH", "$.content")
        except ResultError as unstorable:  # the call ends failed; nothing of the result can be kept
            stored, error, observed = None, unstorable, ()
        else:  # checked as it is stored: read back from its text, whatever the caller's objects do
            error, observed = check_result(claim.arguments, from_dict(loads(stored)), self._tool(claim.tool))
        state: CallState = "failed" if error is not None else "committed"
        sets = (
            state,
            stored,
            result.status,
            None if error is None else dumps(to_dict(error)),
            dumps([to_dict(e) for e in observed]),
            _retry_safe(result, error),
        )
        detail = {"attempt": claim.attempt, "status": result.status, "code": None if error is None else error.code}

        def refuse(cur: Cursor) -> ResultError:
            refusal = claims.refusal(cur, claim)
            kind = "duplicate_result" if refusal.code == "ALREADY_COMMITTED" else "late_result"
            detail = {"attempt": claim.attempt, "code": refusal.code, "result": loads(stored)}
            log_event(cur, claim.run_id, claim.call_id, kind, claim.worker, detail)
            return refusal

        def work(cur: Cursor) -> Any:
            row = claims.commit(cur, self._dialect, claim, sets, state, detail)
            if row is not None or self._dialect == "postgresql":  # PostgreSQL: the statement ran on its own
                return row
            return refuse(cur)  # SQLite: in the same transaction

        outcome = self._run(work, single=True)
        if isinstance(outcome, ResultError):
            raise outcome
        if outcome is not None:
            return entry_of(outcome[4:])
        raise self._run(refuse)

    # ------------------------------------------------------------ call ids a run has decided

    def reserve(self, run_id: str, call_ids: Sequence[str]) -> tuple[str, ...] | None:
        """Mark ``call_ids`` as decided in the run, atomically (what
        :class:`~decisions.Run` does before a decision is recorded): the ids
        decided before (recorded or reserved; then nothing is reserved), or
        None when the run was cancelled."""
        _ids(run_id)
        if isinstance(call_ids, str):  # its letters would be reserved
            raise ValueError(f"call_ids must be a collection of call ids, not the string {call_ids!r}")
        call_ids = tuple(call_ids)  # read once: a generator would be spent by the first pass over it
        for index, call_id in enumerate(call_ids):
            checked_id(call_id, "call id", f"$.call_ids[{index}]")

        def work(cur: Cursor) -> tuple[str, ...] | None:
            # locks the run's row (PostgreSQL) as record does, so a concurrent record of these ids
            # either comes first (and is seen below) or waits for this reservation
            cur.execute(
                "INSERT INTO ledger_runs (run_id, cancelled, created_at) VALUES (?, 0, ledger_now()) "
                "ON CONFLICT (run_id) DO UPDATE SET cancelled = ledger_runs.cancelled RETURNING cancelled",
                (run_id,),
            )
            run = cur.fetchone()
            if run[0]:
                return None
            seen = tuple(c for c in call_ids if _decided(cur, run_id, c))
            if seen:
                return seen
            inserted: set[str] = set()
            for call_id in dict.fromkeys(call_ids):
                cur.execute(
                    "INSERT INTO ledger_decided (run_id, call_id) VALUES (?, ?) ON CONFLICT DO NOTHING "
                    "RETURNING call_id",
                    (run_id, call_id),
                )
                if cur.fetchone() is not None:
                    inserted.add(call_id)
            # PostgreSQL: a concurrent reserve inserted some of them after the check above
            late = tuple(c for c in call_ids if c not in inserted)
            for call_id in inserted if late else ():
                cur.execute("DELETE FROM ledger_decided WHERE run_id = ? AND call_id = ?", (run_id, call_id))
            return late

        seen: tuple[str, ...] | None = self._run(work)
        return seen

    def decided(self, call_id: str, *, run_id: str) -> bool:
        """True when ``call_id`` was recorded or reserved in the run."""
        _ids(run_id, call_id)
        found: bool = self._run(lambda cur: _decided(cur, run_id, call_id))
        return found

    def reconcile(
        self, call_id: str, outcome: ToolResult | Literal["retry"], *, run_id: str, actor: str | None = None
    ) -> Entry:
        """Settle an ``unknown`` call: the host looked and found ``outcome``
        (a result, checked as :meth:`commit` checks it: ``committed`` when it
        is ``ok`` and passes the tool's result checks, else ``failed`` with the
        check's error), or ``"retry"``: the call did not happen and may be
        claimed again. A result the ledger cannot keep (``RESULT_TOO_LARGE``,
        ``RESULT_SCHEMA_MISMATCH``) is raised and changes nothing: the call
        stays ``unknown``."""
        _ids(run_id, call_id)
        if outcome == "retry":
            return self._move(run_id, call_id, "reconcile_retry", actor, {"outcome": "retry"}, ", lease_until = NULL")
        if not isinstance(outcome, ToolResult):
            raise TypeError("reconcile takes a ToolResult or 'retry'")
        if outcome.call_id != call_id:
            raise ResultError(
                "NOT_CLAIMED", f"a result for {outcome.call_id!r} to reconcile {call_id!r}", path="$.call_id"
            )
        check_result_size(outcome, self._limits)
        stored = storable(to_dict(outcome), "RESULT_SCHEMA_MISMATCH", "$.content")
        row = self._run(lambda cur: row_of(cur, run_id, call_id))
        error, observed = check_result(loads(row[ARGUMENTS]), from_dict(loads(stored)), self._tool(row[TOOL]))
        return self._move(
            run_id,
            call_id,
            "reconcile_ok" if error is None else "reconcile_failed",
            actor,
            {"status": outcome.status, "code": None if error is None else error.code},
            ", result = ?, result_status = ?, error = ?, effects = ?, retry_safe = ?, finished_at = ledger_now(), lease_until = NULL",
            (
                stored,
                outcome.status,
                None if error is None else dumps(to_dict(error)),
                dumps([to_dict(e) for e in observed]),
                _retry_safe(outcome, error),
            ),
        )

    # ------------------------------------------------------------ reading

    def entries(self, run_id: str) -> tuple[Entry, ...]:
        """Every call of the run, in the order recorded (expired leases on
        calls with side effects are turned ``unknown`` first)."""
        _ids(run_id)

        def work(cur: Cursor) -> tuple[Entry, ...]:
            expire(cur, run_id)
            cur.execute(f"SELECT {COLUMNS} FROM ledger_calls WHERE run_id = ? ORDER BY seq", (run_id,))
            return tuple(entry_of(row) for row in cur.fetchall())

        entries: tuple[Entry, ...] = self._run(work)
        return entries

    def entry(self, call_id: str, *, run_id: str) -> Entry:
        """One call (``UNKNOWN_CALL_ID`` when it was never recorded)."""
        _ids(run_id, call_id)

        def work(cur: Cursor) -> Entry:
            expire(cur, run_id, call_id)
            return entry_of(row_of(cur, run_id, call_id))

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
        _ids(run_id)

        def work(cur: Cursor) -> tuple[AuditEvent, ...]:
            cur.execute(
                "SELECT run_id, call_id, at, kind, actor, detail FROM ledger_events WHERE run_id = ? ORDER BY id",
                (run_id,),
            )
            return tuple(
                AuditEvent(run_id=r, call_id=c, at=at, kind=k, actor=a, detail=loads(d))
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
        left out; a call id in ``call_ids`` the run never recorded is
        ``UNKNOWN_CALL_ID``; a result larger than this ledger's
        ``max_result_bytes`` is ``RESULT_TOO_LARGE`` (no message is written)."""
        if isinstance(call_ids, str):  # `in` would match any part of it: "a" in "ab"
            raise ValueError(f"call_ids must be a collection of call ids, not the string {call_ids!r}")
        wanted = None if call_ids is None else set(call_ids)  # read once: a generator is spent by one pass
        entries = self.entries(run_id)
        unknown = sorted((wanted or set()) - {e.call_id for e in entries})
        if unknown:
            raise DomainError(
                "UNKNOWN_CALL_ID",
                f"run {run_id!r} holds no call {unknown[0]!r}",
                path="$.call_ids",
                call_id=unknown[0],
                hint="ask only for the calls of this run",
            )
        pairs: list[tuple[ToolCall, Any]] = []
        notes: list[str] = []
        for entry in entries:
            if wanted is not None and entry.call_id not in wanted:
                continue
            call = ToolCall(
                call_id=entry.call_id,
                name=entry.tool,
                arguments={},
                call_id_generated=entry.call_id_generated,
                tool_version=entry.tool_version,
            )
            if entry.state == "committed" and entry.result is not None:
                pairs.append((call, entry.result))
            elif entry.state in ("failed", "denied", "unknown"):
                pairs.append((call, ToolResult(entry.call_id, "error", error_content(entry))))
                notes.append(entry.call_id)
        return written(provider, pairs, self._limits, notes)


def _invalid_transition(call_id: str, state: CallState, event: Event) -> ResultError:
    return ResultError(
        "INVALID_TRANSITION",
        f"call {call_id!r} is {state}; {event} is not possible",
        path="$.state",
        hint="see the ledger's state machine",
    )


def _retry_safe(result: ToolResult, error: OutputError | None) -> int:
    """Whether a failed call may be claimed again: its result says so and the
    error that failed it is retryable (never a partial effect or a failed check)."""
    return int(result.retry_safe and (error is None or error.retryable))


def _ids(run_id: object, *call_id: object) -> None:
    """``run_id`` and the ``call_id`` if one is given as both databases hold them (see :func:`.ddl.checked_id`)."""
    checked_id(run_id, "run id", "$.run_id")
    for value in call_id:
        checked_id(value, "call id", "$.call_id")


def _tool_names(names: Collection[str], what: str) -> frozenset[str]:
    """The tool names in ``names``, each of a str subclass as the str it holds;
    TypeError for a name that is not a str (it would match no call: the
    arguments of a ``sensitive`` tool named so would be stored)."""
    found: set[str] = set()
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"{what} must hold tool names of type str, not {type(name).__name__}")
        found.add(str.__str__(name))
    return frozenset(found)


def _name(value: object, what: str, *, optional: bool = False) -> None:
    """TypeError unless ``value`` (a worker, an approver, an actor) is a str, or
    None when ``optional``: SQLite would store ``5`` as ``"5"``, PostgreSQL refuse it."""
    if not (isinstance(value, str) or (optional and value is None)):
        raise TypeError(f"{what} must be a str{' or None' if optional else ''}, not {type(value).__name__}")


def _lease(value: float) -> float:
    return seconds("lease_seconds", value)


def _decided(cur: Cursor, run_id: str, call_id: str) -> bool:
    cur.execute(
        "SELECT 1 FROM ledger_calls WHERE run_id = ? AND call_id = ? "
        "UNION ALL SELECT 1 FROM ledger_decided WHERE run_id = ? AND call_id = ?",
        (run_id, call_id, run_id, call_id),
    )
    return cur.fetchone() is not None
