"""Claims, renewals and commits written out in full: for the sequences of
steps workers really take (claim, heartbeat, commit, a second worker, a lost
lease, a cancelled run), the exact claim granted or refused (its reason,
state, attempt and what it carries), the exact error a late, stale, forged or
duplicate result gets, and the audit events each step leaves. A step that
lets a call run twice, or takes a result that should not count, changes one
of these outcomes."""

from __future__ import annotations

import dataclasses
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from decisions import Ledger, ResultError, ToolResult, open_ledger
from decisions.ledger import Claim, to_dict
from decisions.ledger import sqlite as sqlite_module
from ledger_helpers import decision, new_run, url_for


@pytest.fixture
def ledger(url: str) -> Iterator[Ledger]:
    with open_ledger(url) as opened:
        yield opened


def held(claim: Claim) -> dict[str, Any]:
    """What a claim says, but the lease end (the database's clock)."""
    return {f.name: getattr(claim, f.name) for f in dataclasses.fields(claim) if f.name != "lease_until"}


def claim_of(
    ledger: Ledger,
    run: str,
    call_id: str,
    worker: str,
    *,
    granted: bool,
    reason: str,
    state: str,
    attempt: int,
    result: ToolResult | None = None,
) -> dict[str, Any]:
    """The claim ``worker`` would hold on ``call_id`` (a call of tool ``t`` with side effects)."""
    entry = ledger.entry(call_id, run_id=run)
    return {
        "granted": granted,
        "reason": reason,
        "run_id": run,
        "call_id": call_id,
        "worker": worker,
        "state": state,
        "attempt": attempt,
        "idempotency_key": entry.idempotency_key,
        "tool": "t",
        "arguments": {"path": f"{call_id}.txt"},
        "side_effects": True,
        "result": result,
    }


def refusal(step: Any) -> tuple[str, str, str | None, str | None, bool]:
    with pytest.raises(ResultError) as caught:
        step()
    e = caught.value
    return (e.code, e.message, e.path, e.hint, e.retryable)


def events(ledger: Ledger, run: str) -> list[tuple[str | None, str, str | None, dict[str, Any]]]:
    return [(e.call_id, e.kind, e.actor, e.detail) for e in ledger.audit(run)]


def test_one_call_is_granted_once_then_refused_by_what_holds_it(ledger: Ledger) -> None:
    run = new_run()
    ledger.record(decision(("a", "t", "allowed")), run_id=run)
    won = ledger.claim("a", run_id=run, worker="w1", lease_seconds=30)
    assert held(won) == claim_of(ledger, run, "a", "w1", granted=True, reason="granted", state="executing", attempt=1)
    assert won.lease_until is not None and time.time() + 20 < won.lease_until < time.time() + 40
    lost = ledger.claim("a", run_id=run, worker="w2")
    assert held(lost) == claim_of(ledger, run, "a", "w2", granted=False, reason="leased", state="executing", attempt=1)
    assert lost.lease_until == won.lease_until
    assert ledger.claim_next(run, worker="w2") is None
    entry = ledger.commit(won, ToolResult("a", "ok", "done"))
    assert (entry.state, entry.attempt, entry.worker, entry.lease_until) == ("committed", 1, "w1", None)
    after = ledger.claim("a", run_id=run, worker="w2")
    result = ToolResult("a", "ok", "done")
    assert held(after) == claim_of(
        ledger, run, "a", "w2", granted=False, reason="committed", state="committed", attempt=1, result=result
    )
    assert events(ledger, run)[1:] == [
        ("a", "claimed", "w1", {"attempt": 1}),
        ("a", "committed", "w1", {"attempt": 1, "status": "ok", "code": None}),
    ]


def test_claim_next_takes_calls_in_recorded_order_and_skips_held_ones(ledger: Ledger) -> None:
    run = new_run()
    ledger.record(decision(("a", "t", "allowed"), ("b", "t", "needs_approval"), ("c", "t", "allowed")), run_id=run)
    first = ledger.claim_next(run, worker="w1", lease_seconds=30)
    assert first is not None
    assert held(first) == claim_of(ledger, run, "a", "w1", granted=True, reason="granted", state="executing", attempt=1)
    second = ledger.claim_next(run, worker="w2")
    assert second is not None and (second.call_id, second.worker, second.attempt) == ("c", "w2", 1)
    assert ledger.claim_next(run, worker="w3") is None
    ledger.approve("b", run_id=run, approver="ops")
    third = ledger.claim_next(run, worker="w3")
    assert third is not None and (third.call_id, third.granted) == ("b", True)
    assert [k for _, k, _, _ in events(ledger, run)].count("claimed") == 3


@pytest.mark.parametrize(
    ("status", "reason"),
    [("denied", "denied"), ("needs_approval", "awaiting_approval")],
)
def test_a_call_not_allowed_to_run_is_refused_by_its_state(ledger: Ledger, status: str, reason: str) -> None:
    run = new_run()
    ledger.record(decision(("a", "t", status)), run_id=run)
    refused = ledger.claim("a", run_id=run, worker="w")
    assert held(refused) == claim_of(ledger, run, "a", "w", granted=False, reason=reason, state=reason, attempt=0)
    assert refused.lease_until is None


def test_a_call_held_back_by_its_batch_waits(ledger: Ledger) -> None:
    run = new_run()
    ledger.record(decision(("a", "t", "allowed"), ("b", "t", "needs_approval"), batch="all_or_nothing"), run_id=run)
    waiting = ledger.claim("a", run_id=run, worker="w")
    assert held(waiting) == claim_of(
        ledger, run, "a", "w", granted=False, reason="batch_waiting", state="decided", attempt=0
    )
    ledger.approve("b", run_id=run, approver="ops")
    assert ledger.claim("a", run_id=run, worker="w").granted


def test_a_cancelled_run_refuses_every_claim(ledger: Ledger) -> None:
    run = new_run()
    ledger.record(decision(("a", "t", "allowed"), ("b", "t", "allowed")), run_id=run)
    live = ledger.claim("a", run_id=run, worker="w1")
    ledger.cancel(run, actor="ops")
    refused = ledger.claim("b", run_id=run, worker="w2")
    assert held(refused) == claim_of(
        ledger, run, "b", "w2", granted=False, reason="cancelled", state="decided", attempt=0
    )
    assert ledger.claim_next(run, worker="w2") is None
    message = "the lease on 'a' expired or the run was cancelled (call is executing)"
    assert refusal(lambda: ledger.commit(live, ToolResult("a", "ok", "late"))) == (
        "LATE_RESULT",
        message,
        "$.call_id",
        "the result was kept for the audit only",
        False,
    )
    assert refusal(lambda: ledger.renew(live)) == (
        "LATE_RESULT",
        message,
        "$.call_id",
        "the result was kept for the audit only",
        False,
    )
    assert events(ledger, run)[-1] == (
        "a",
        "late_result",
        "w1",
        {
            "attempt": 1,
            "code": "LATE_RESULT",
            "result": to_dict(ToolResult("a", "ok", "late")),
        },
    )


def test_a_stale_attempt_and_a_forged_worker_are_told_apart(ledger: Ledger) -> None:
    run = new_run()
    ledger.record(decision(("a", "t", "allowed")), run_id=run, idempotent=["t"])
    first = ledger.claim("a", run_id=run, worker="w1", lease_seconds=0.05)
    time.sleep(0.1)  # an idempotent call whose lease ran out is granted again
    second = ledger.claim("a", run_id=run, worker="w2", lease_seconds=30)
    assert (second.granted, second.attempt) == (True, 2)
    stale = (
        "STALE_ATTEMPT",
        "attempt 1 of 'a' is stale; attempt 2 is current",
        "$.attempt",
        "drop this result: another attempt owns the call",
        False,
    )
    assert refusal(lambda: ledger.commit(first, ToolResult("a", "ok", "x"))) == stale
    assert refusal(lambda: ledger.renew(first)) == stale
    forged = dataclasses.replace(second, worker="w1")
    assert refusal(lambda: ledger.commit(forged, ToolResult("a", "ok", "x"))) == (
        "NOT_CLAIMED",
        "call 'a' is held by another worker's claim, not 'w1''s",
        "$.worker",
        "commit only under the claim the ledger granted",
        False,
    )
    renewed = ledger.renew(second, lease_seconds=60)
    assert held(renewed) == held(second)
    assert renewed.lease_until is not None and second.lease_until is not None
    assert renewed.lease_until > second.lease_until
    assert ledger.commit(second, ToolResult("a", "ok", "x")).state == "committed"
    assert refusal(lambda: ledger.renew(second)) == (
        "ALREADY_COMMITTED",
        "call 'a' is already committed",
        "$.call_id",
        "each call takes exactly one result",
        False,
    )
    assert [k for _, k, _, _ in events(ledger, run)] == [
        "recorded",
        "claimed",
        "claimed",
        "late_result",
        "late_result",
        "committed",
    ]


def test_a_second_result_is_a_duplicate(ledger: Ledger) -> None:
    run = new_run()
    ledger.record(decision(("a", "t", "allowed")), run_id=run)
    claim = ledger.claim("a", run_id=run, worker="w")
    failed = ledger.commit(claim, ToolResult("a", "error", "boom"))
    assert (failed.state, failed.error.code if failed.error else None) == ("failed", "TOOL_ERROR")
    assert refusal(lambda: ledger.commit(claim, ToolResult("a", "ok", "again"))) == (
        "ALREADY_COMMITTED",
        "call 'a' is already failed",
        "$.call_id",
        "each call takes exactly one result",
        False,
    )
    assert events(ledger, run)[2:] == [
        ("a", "failed", "w", {"attempt": 1, "status": "error", "code": "TOOL_ERROR"}),
        (
            "a",
            "duplicate_result",
            "w",
            {
                "attempt": 1,
                "code": "ALREADY_COMMITTED",
                "result": to_dict(ToolResult("a", "ok", "again")),
            },
        ),
    ]
    assert ledger.entry("a", run_id=run).result == ToolResult("a", "error", "boom")


def test_a_retry_safe_failure_is_granted_again_with_the_next_attempt(ledger: Ledger) -> None:
    run = new_run()
    ledger.record(decision(("a", "t", "allowed")), run_id=run)
    first = ledger.claim("a", run_id=run, worker="w1")
    ledger.commit(first, ToolResult("a", "error", "busy", retry_safe=True))
    again = ledger.claim("a", run_id=run, worker="w2", lease_seconds=30)
    assert held(again) == claim_of(ledger, run, "a", "w2", granted=True, reason="granted", state="executing", attempt=2)
    assert ledger.commit(again, ToolResult("a", "ok", "done")).state == "committed"


def test_a_lost_worker_leaves_the_call_unknown(ledger: Ledger) -> None:
    run = new_run()
    ledger.record(decision(("a", "t", "allowed")), run_id=run)
    lost = ledger.claim("a", run_id=run, worker="w1", lease_seconds=0.05)
    time.sleep(0.1)
    refused = ledger.claim("a", run_id=run, worker="w2")
    assert held(refused) == claim_of(
        ledger, run, "a", "w2", granted=False, reason="unknown", state="unknown", attempt=1
    )
    assert refusal(lambda: ledger.commit(lost, ToolResult("a", "ok", "x")))[:3] == (
        "LATE_RESULT",
        "the lease on 'a' expired or the run was cancelled (call is unknown)",
        "$.call_id",
    )


def test_a_sensitive_call_is_handed_without_its_arguments(ledger: Ledger) -> None:
    run = new_run()
    ledger.record(decision(("a", "t", "allowed")), run_id=run, sensitive=["t"])
    claim = ledger.claim("a", run_id=run, worker="w")
    assert claim.granted and claim.arguments is None
    assert ledger.claim("a", run_id=run, worker="w2").arguments is None


# ---------------------------------------------------------------- rows this version never writes (SQLite keeps any value)


def tampered(tmp_path: Path, sql: str) -> tuple[Ledger, str]:
    """A SQLite ledger holding call ``a`` (and ``b``) of a new run, with ``sql`` run on its table."""
    url = f"sqlite:///{tmp_path / 'tampered.db'}"
    run = new_run()
    with open_ledger(url) as ledger:
        ledger.record(decision(("a", "t", "allowed"), ("b", "t", "allowed")), run_id=run)
    raw = sqlite3.connect(tmp_path / "tampered.db")
    with raw:
        raw.execute(sql, (run,))
    raw.close()
    return open_ledger(url), run


@pytest.mark.parametrize(
    ("sql", "what"),
    [
        ("UPDATE ledger_calls SET attempt = -1 WHERE run_id = ?", "an attempt of 0"),
        ("UPDATE ledger_calls SET side_effects = 2 WHERE run_id = ?", "a side_effects of 2"),
        ("UPDATE ledger_calls SET side_effects = 0.5 WHERE run_id = ?", "a side_effects of 0.5"),
        ("UPDATE ledger_calls SET side_effects = X'01' WHERE run_id = ?", "a side_effects of b'\\x01'"),
        ("UPDATE ledger_calls SET tool = X'74' WHERE run_id = ?", "a tool of type bytes"),
        ("UPDATE ledger_calls SET idem_key = X'6b' WHERE run_id = ?", "a idem_key of type bytes"),
        ("UPDATE ledger_calls SET call_id = CAST(call_id AS BLOB) WHERE run_id = ?", "a call_id of type bytes"),
        ("UPDATE ledger_calls SET arguments = '[1]' WHERE run_id = ?", "arguments of type list"),
        ("UPDATE ledger_calls SET arguments = '7' WHERE run_id = ?", "arguments of type int"),
        ("UPDATE ledger_calls SET arguments = 'nope' WHERE run_id = ?", "a JSON column that is not JSON"),
    ],
)
def test_a_call_from_a_table_something_else_wrote_is_never_handed_out(tmp_path: Path, sql: str, what: str) -> None:
    ledger, run = tampered(tmp_path, sql)
    with ledger:
        with pytest.raises(ResultError) as caught:
            ledger.claim_next(run, worker="w")
    assert (caught.value.code, caught.value.retryable) == ("LEDGER_UNAVAILABLE", False)
    assert caught.value.message == f"the ledger holds {what}, which this version never writes"


@pytest.mark.parametrize(
    ("sql", "arguments", "side_effects"),
    [
        ("UPDATE ledger_calls SET arguments = '\"cat a.txt\"' WHERE run_id = ?", "cat a.txt", True),
        ("UPDATE ledger_calls SET side_effects = 0 WHERE run_id = ?", {"path": "a.txt"}, False),
        ("UPDATE ledger_calls SET attempt = 0 WHERE run_id = ?", {"path": "a.txt"}, True),
    ],
)
def test_what_this_version_writes_is_handed_out(tmp_path: Path, sql: str, arguments: Any, side_effects: bool) -> None:
    ledger, run = tampered(tmp_path, sql)
    with ledger:
        claim = ledger.claim("a", run_id=run, worker="w")
    assert (claim.granted, claim.attempt, claim.arguments, claim.side_effects) == (True, 1, arguments, side_effects)
    assert type(claim.side_effects) is bool


def test_a_late_result_settles_its_own_lapsed_lease_only(ledger: Ledger) -> None:
    run = new_run()
    ledger.record(decision(("a", "t", "allowed"), ("b", "t", "allowed")), run_id=run)
    lost_a = ledger.claim("a", run_id=run, worker="w1", lease_seconds=0.05)
    ledger.claim("b", run_id=run, worker="w2", lease_seconds=0.05)
    time.sleep(0.1)
    # the first step after the lease lapsed is the lost worker's own result: it finds the call unknown
    assert refusal(lambda: ledger.commit(lost_a, ToolResult("a", "ok", "x")))[:2] == (
        "LATE_RESULT",
        "the lease on 'a' expired or the run was cancelled (call is unknown)",
    )
    refused = ledger.claim("a", run_id=run, worker="w3")
    assert (refused.reason, refused.state) == ("unknown", "unknown")
    assert [(c, k) for c, k, _, _ in events(ledger, run)][4:] == [("a", "lease_expired"), ("a", "late_result")]
    assert ledger.entry("b", run_id=run).state == "unknown"  # read: its lease is settled now
    assert [(c, k) for c, k, _, _ in events(ledger, run)][6:] == [("b", "lease_expired")]


def test_a_refused_claim_settles_its_own_lapsed_lease_only(ledger: Ledger) -> None:
    run = new_run()
    ledger.record(decision(("a", "t", "allowed"), ("b", "t", "allowed")), run_id=run)
    ledger.claim("a", run_id=run, worker="w1", lease_seconds=0.05)
    ledger.claim("b", run_id=run, worker="w2", lease_seconds=0.05)
    time.sleep(0.1)
    refused = ledger.claim("a", run_id=run, worker="w3")
    assert (refused.granted, refused.reason, refused.state) == (False, "unknown", "unknown")
    assert [(c, k) for c, k, _, _ in events(ledger, run)][4:] == [("a", "lease_expired")]


def _refuse_audit(url: str, run: str, kinds: tuple[str, ...]) -> Any:
    """Make the database refuse the audit events ``kinds`` of ``run``; call the result to allow them again."""
    tag = run.replace("-", "_")
    condition = f"NEW.run_id = '{run}' AND NEW.kind IN ({', '.join(repr(k) for k in kinds)})"
    if url.startswith("sqlite:"):
        raw: Any = sqlite3.connect(url[len("sqlite:///") :], isolation_level=None)
        raw.execute(
            f"CREATE TRIGGER refuse_{tag} BEFORE INSERT ON ledger_events WHEN {condition} "
            "BEGIN SELECT RAISE(ABORT, 'no audit'); END"
        )
        drop = [f"DROP TRIGGER refuse_{tag}"]
    else:
        import psycopg

        raw = psycopg.connect(url, autocommit=True)
        raw.execute(
            f"CREATE FUNCTION refuse_{tag}() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'no audit'; END $$ "
            "LANGUAGE plpgsql"
        )
        raw.execute(
            f"CREATE TRIGGER refuse_{tag} BEFORE INSERT ON ledger_events FOR EACH ROW WHEN ({condition}) "
            f"EXECUTE FUNCTION refuse_{tag}()"
        )
        drop = [f"DROP TRIGGER refuse_{tag} ON ledger_events", f"DROP FUNCTION refuse_{tag}()"]

    def allow() -> None:
        for sql in drop:
            raw.execute(sql)
        raw.close()

    return allow


def test_a_step_whose_audit_event_cannot_be_written_does_not_happen(ledger: Ledger) -> None:
    """A claim or a commit and its audit event are one: the step is undone with its event."""
    run = new_run()
    ledger.record(decision(("a", "t", "allowed"), ("b", "t", "allowed")), run_id=run)
    allow = _refuse_audit(ledger.url, run, ("claimed", "committed"))
    try:
        for step in (
            lambda: ledger.claim("a", run_id=run, worker="w"),
            lambda: ledger.claim_next(run, worker="w"),
        ):
            with pytest.raises(ResultError) as caught:
                step()
            assert (caught.value.code, caught.value.retryable) == ("LEDGER_UNAVAILABLE", False)
        assert [(e.state, e.attempt) for e in ledger.entries(run)] == [("decided", 0), ("decided", 0)]
    finally:
        allow()
    claim = ledger.claim("a", run_id=run, worker="w")
    assert (claim.granted, claim.attempt) == (True, 1)
    allow = _refuse_audit(ledger.url, run, ("committed",))
    try:
        with pytest.raises(ResultError) as caught:
            ledger.commit(claim, ToolResult("a", "ok", "done"))
        assert caught.value.code == "LEDGER_UNAVAILABLE"
        assert (ledger.entry("a", run_id=run).state, ledger.entry("a", run_id=run).result) == ("executing", None)
    finally:
        allow()
    assert ledger.commit(claim, ToolResult("a", "ok", "done")).state == "committed"


def test_claim_next_passes_over_a_call_another_transaction_holds(tmp_path: Path) -> None:
    """PostgreSQL: a worker is not kept waiting behind a row another worker is claiming."""
    url = url_for("postgres", tmp_path)
    import psycopg

    run = new_run()
    with open_ledger(url, timeout=2) as ledger:
        ledger.record(decision(("a", "t", "allowed"), ("b", "t", "allowed")), run_id=run)
        with psycopg.connect(url) as holder:
            holder.execute("SELECT 1 FROM ledger_calls WHERE run_id = %s AND call_id = 'a' FOR UPDATE", (run,))
            taken = ledger.claim_next(run, worker="w1")
            holder.rollback()
        assert taken is not None and (taken.call_id, taken.granted) == ("b", True)
        after = ledger.claim_next(run, worker="w2")
        assert after is not None and after.call_id == "a"


def test_a_claim_waits_for_a_cancel_in_flight(ledger: Ledger) -> None:
    """A claim sent while another connection is cancelling the run sees the
    cancel once it commits, and is refused (PostgreSQL reads the run's row
    under a lock for it; SQLite takes one writer at a time)."""
    run = new_run()
    ledger.record(decision(("a", "t", "allowed")), run_id=run)
    with open_ledger(ledger.url) as other:
        hold = threading.Event()
        release = threading.Event()

        def cancel_slowly(cur: Any) -> None:
            cur.execute("UPDATE ledger_runs SET cancelled = 1 WHERE run_id = ?", (run,))
            hold.set()
            release.wait(10)

        canceller = threading.Thread(target=lambda: other._run(cancel_slowly))
        canceller.start()
        assert hold.wait(10)
        outcome: list[Claim] = []
        claimer = threading.Thread(target=lambda: outcome.append(ledger.claim("a", run_id=run, worker="w")))
        claimer.start()
        time.sleep(0.3)
        release.set()
        canceller.join(10)
        claimer.join(10)
    assert [(c.granted, c.reason, c.state) for c in outcome] == [(False, "cancelled", "decided")]
    assert ledger.entry("a", run_id=run).state == "decided"


def test_a_clock_at_infinity_grants_no_lease(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLite's clock is the process's; one that gives infinity would give a
    lease that never ends: nothing is handed out under it."""
    url = f"sqlite:///{tmp_path / 'clock.db'}"
    run = new_run()
    with open_ledger(url) as ledger:
        ledger.record(decision(("a", "t", "allowed")), run_id=run)
    monkeypatch.setattr(sqlite_module.time, "time", lambda: float("inf"))
    with open_ledger(url) as broken, pytest.raises(ResultError) as caught:
        broken.claim("a", run_id=run, worker="w")
    assert (caught.value.code, caught.value.retryable) == ("LEDGER_UNAVAILABLE", False)
    assert caught.value.message == "the ledger holds a lease_until of inf, which this version never writes"
    monkeypatch.undo()
    with open_ledger(url) as ledger:
        assert (ledger.entry("a", run_id=run).state, ledger.claim("a", run_id=run, worker="w").attempt) == (
            "decided",
            1,
        )
