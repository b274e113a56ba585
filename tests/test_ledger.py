"""The execution ledger on SQLite and PostgreSQL: records, claims, commits,
late and duplicate results, lost workers, cancelled runs and approvals.

Every test runs on both databases (see ``ledger_helpers`` for when the
PostgreSQL half runs). Leases are made short and waited out by polling the
ledger, never by asserting a duration.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from decisions import (
    CallVerdict,
    DomainError,
    Ledger,
    ResultError,
    Tool,
    ToolCall,
    ToolDecision,
    ToolRegistry,
    ToolResult,
    open_ledger,
)
from decisions.ledger import STATES, TRANSITIONS, argument_digest, idempotency_key, transition_table
from ledger_helpers import decision, new_run

READ = Tool(name="read_file", side_effects=False)
WRITE = Tool(name="write_file", side_effects=True)
TOOLS = ToolRegistry([READ, WRITE])


def wait_until_expired(ledger: Ledger, run_id: str, call_id: str) -> None:
    """Poll until the call's lease lies in the past by the ledger's own clock."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        entry = ledger.entry(call_id, run_id=run_id)
        if entry.state != "executing" or entry.lease_until is None:
            return
        time.sleep(0.05)
        if entry.lease_until < time.time() - 0.01:
            return
    raise AssertionError("the lease never expired")


# ---------------------------------------------------------------- recording


def test_record_maps_verdicts_to_states(ledger: Ledger) -> None:
    run = new_run()
    d = decision(
        ("a", "read_file", "allowed"),
        ("b", "write_file", "needs_approval"),
        ("c", "write_file", "approved"),
        ("d", "write_file", "denied"),
    )
    entries = ledger.record(d, run_id=run, tools=TOOLS)
    assert [e.state for e in entries] == ["decided", "awaiting_approval", "approved", "denied"]
    assert [e.side_effects for e in entries] == [False, True, True, True]
    assert [e.call_id for e in ledger.entries(run)] == ["a", "b", "c", "d"]


def test_recording_twice_changes_nothing(ledger: Ledger) -> None:
    run = new_run()
    d = decision(("a", "read_file", "allowed"), ("b", "write_file", "allowed"))
    first = ledger.record(d, run_id=run, tools=TOOLS)
    events = ledger.audit(run)
    claim = ledger.claim("a", run_id=run, worker="w")
    again = ledger.record(d, run_id=run, tools=TOOLS)
    assert [e.state for e in again] == ["executing", "decided"]  # the claim is not undone
    assert [(e.digest, e.idempotency_key, e.seq) for e in again] == [
        (e.digest, e.idempotency_key, e.seq) for e in first
    ]
    assert len(ledger.audit(run)) == len(events) + 1  # only the claim's event
    assert claim.granted


def test_a_different_call_under_a_recorded_id_is_a_conflict(ledger: Ledger) -> None:
    run = new_run()
    ledger.record(decision(("a", "write_file", "allowed")), run_id=run)
    for other in (decision(("a", "write_file", "allowed"), extra=1), decision(("a", "read_file", "allowed"))):
        with pytest.raises(ResultError) as caught:
            ledger.record(other, run_id=run)
        assert caught.value.code == "LEDGER_CONFLICT" and caught.value.path == "$.calls[0].call_id"
    assert len(ledger.entries(run)) == 1


def test_idempotency_key_depends_on_run_call_tool_and_arguments(ledger: Ledger) -> None:
    run = new_run()
    entry = ledger.record(decision(("a", "t", "allowed"), x=1), run_id=run)[0]
    assert entry.idempotency_key == idempotency_key(run, "a", "t", argument_digest({"path": "a.txt", "x": 1}))
    assert ledger.claim("a", run_id=run, worker="w").idempotency_key == entry.idempotency_key
    base = idempotency_key("r", "a", "t", argument_digest({"x": 1}))
    assert idempotency_key("r", "a", "t", argument_digest({"x": 1})) == base
    others = [
        idempotency_key("r2", "a", "t", argument_digest({"x": 1})),
        idempotency_key("r", "b", "t", argument_digest({"x": 1})),
        idempotency_key("r", "a", "u", argument_digest({"x": 1})),
        idempotency_key("r", "a", "t", argument_digest({"x": 2})),
    ]
    assert base not in others and len(set(others)) == 4
    assert argument_digest({"a": 1, "b": 2}) == argument_digest({"b": 2, "a": 1})


def test_sensitive_arguments_are_never_stored(ledger: Ledger) -> None:
    run = new_run()
    secret = "hunter2-very-secret-value"
    d = decision(("a", "send_mail", "needs_approval"), ("b", "read_file", "allowed"), body=secret)
    ledger.record(d, run_id=run, sensitive=("send_mail",), policy="mail-policy@3")
    ledger.approve("a", run_id=run, approver="alice", policy="mail-policy@3")
    claim = ledger.claim("a", run_id=run, worker="w")
    assert claim.granted and claim.arguments is None
    assert ledger.claim("b", run_id=run, worker="w").arguments == {"path": "b.txt", "body": secret}

    def dump(cur: object) -> str:
        rows = []
        for table in ("ledger_calls", "ledger_events"):
            cur.execute(f"SELECT * FROM {table} WHERE run_id = ? AND (call_id = 'a' OR call_id IS NULL)", (run,))  # type: ignore[attr-defined]
            rows += cur.fetchall()  # type: ignore[attr-defined]
        return repr(rows)

    stored = ledger._db.run(dump)
    assert "alice" in stored and secret not in stored
    for event in ledger.audit(run):
        assert secret not in repr(event.detail)  # audit events hold digests, never arguments


# ---------------------------------------------------------------- claims


def test_exactly_one_claim_is_granted(ledger: Ledger, url: str) -> None:
    run = new_run()
    ledger.record(decision(("a", "write_file", "allowed")), run_id=run, tools=TOOLS)
    with open_ledger(url) as other:
        first = ledger.claim("a", run_id=run, worker="w1")
        second = other.claim("a", run_id=run, worker="w2")
    assert first.granted and first.attempt == 1 and first.idempotency_key.startswith("ik_")
    assert not second.granted and second.reason == "leased" and second.state == "executing"
    assert ledger.entry("a", run_id=run).worker == "w1"


@pytest.mark.parametrize("status, reason", [("denied", "denied"), ("needs_approval", "awaiting_approval")])
def test_a_call_that_may_not_run_is_not_granted(ledger: Ledger, status: str, reason: str) -> None:
    run = new_run()
    ledger.record(decision(("a", "write_file", status)), run_id=run)
    claim = ledger.claim("a", run_id=run, worker="w")
    assert not claim.granted and claim.reason == reason and claim.attempt == 0
    with pytest.raises(ResultError) as caught:
        ledger.commit(claim, ToolResult("a", "ok", "x"))
    assert caught.value.code == "NOT_CLAIMED"
    assert ledger.entry("a", run_id=run).state == claim.state


def test_a_committed_call_is_not_granted_and_says_its_result(ledger: Ledger) -> None:
    run = new_run()
    ledger.record(decision(("a", "read_file", "allowed")), run_id=run, tools=TOOLS)
    ledger.commit(ledger.claim("a", run_id=run, worker="w1"), ToolResult("a", "ok", {"lines": 3}))
    claim = ledger.claim("a", run_id=run, worker="w2")
    assert not claim.granted and claim.reason == "committed"
    assert claim.result == ToolResult("a", "ok", {"lines": 3})


def test_claim_of_an_unrecorded_call(ledger: Ledger) -> None:
    run = new_run()
    ledger.record(decision(("a", "read_file", "allowed")), run_id=run)
    with pytest.raises(DomainError) as caught:
        ledger.claim("zzz", run_id=run, worker="w")
    assert caught.value.code == "UNKNOWN_CALL_ID" and caught.value.path == "$.call_id"
    with pytest.raises(DomainError):
        ledger.claim("a", run_id=new_run(), worker="w")


def test_claim_needs_a_positive_lease(ledger: Ledger) -> None:
    with pytest.raises(ValueError):
        ledger.claim("a", run_id=new_run(), worker="w", lease_seconds=0)


# ---------------------------------------------------------------- commits: late, stale, duplicate


def test_commit_ends_the_call(ledger: Ledger) -> None:
    run = new_run()
    ledger.record(decision(("a", "write_file", "allowed"), ("b", "write_file", "allowed")), run_id=run)
    ok = ledger.commit(ledger.claim("a", run_id=run, worker="w"), ToolResult("a", "ok", "done"))
    bad = ledger.commit(ledger.claim("b", run_id=run, worker="w"), ToolResult("b", "error", "disk full"))
    assert (ok.state, ok.result_status, ok.error) == ("committed", "ok", None)
    assert bad.state == "failed" and bad.error is not None and bad.error.code == "TOOL_ERROR"
    assert ok.finished_at is not None and ok.claimed_at is not None and ok.worker == "w"


def test_a_second_result_is_refused_and_the_first_stays(ledger: Ledger) -> None:
    run = new_run()
    ledger.record(decision(("a", "write_file", "allowed"), ("b", "write_file", "allowed")), run_id=run)
    for call_id, first_status in (("a", "ok"), ("b", "error")):
        claim = ledger.claim(call_id, run_id=run, worker="w")
        first = ledger.commit(claim, ToolResult(call_id, first_status, "first"))  # type: ignore[arg-type]
        for second in (ToolResult(call_id, "ok", "second"), ToolResult(call_id, "error", "second")):
            with pytest.raises(ResultError) as caught:
                ledger.commit(claim, second)
            assert caught.value.code == "ALREADY_COMMITTED"
        after = ledger.entry(call_id, run_id=run)
        assert after.result == first.result and after.state == first.state and after.finished_at == first.finished_at
    assert [e.kind for e in ledger.audit(run)].count("duplicate_result") == 4


def test_a_result_for_another_call_is_refused(ledger: Ledger) -> None:
    run = new_run()
    ledger.record(decision(("a", "write_file", "allowed"), ("b", "write_file", "allowed")), run_id=run)
    claim = ledger.claim("a", run_id=run, worker="w")
    with pytest.raises(ResultError) as caught:
        ledger.commit(claim, ToolResult("b", "ok", "x"))
    assert caught.value.code == "NOT_CLAIMED"
    assert [e.state for e in ledger.entries(run)] == ["executing", "decided"]


def test_a_late_result_changes_nothing_and_a_read_only_call_is_claimed_again(ledger: Ledger) -> None:
    run = new_run()
    ledger.record(decision(("a", "read_file", "allowed")), run_id=run, tools=TOOLS)
    slow = ledger.claim("a", run_id=run, worker="slow", lease_seconds=0.2)
    wait_until_expired(ledger, run, "a")
    with pytest.raises(ResultError) as caught:
        ledger.commit(slow, ToolResult("a", "ok", "late"))
    assert caught.value.code == "LATE_RESULT"
    assert ledger.entry("a", run_id=run).state == "executing" and ledger.entry("a", run_id=run).result is None
    fresh = ledger.claim("a", run_id=run, worker="fresh")
    assert fresh.granted and fresh.attempt == 2 and fresh.idempotency_key == slow.idempotency_key
    with pytest.raises(ResultError) as caught:  # the first worker again: now superseded
        ledger.commit(slow, ToolResult("a", "ok", "late again"))
    assert caught.value.code == "STALE_ATTEMPT"
    assert ledger.commit(fresh, ToolResult("a", "ok", "fresh")).result == ToolResult("a", "ok", "fresh")
    kinds = [e.kind for e in ledger.audit(run)]
    assert kinds.count("late_result") == 2


def test_a_stale_attempt_cannot_renew_or_commit(ledger: Ledger) -> None:
    run = new_run()
    ledger.record(decision(("a", "read_file", "allowed")), run_id=run, tools=TOOLS)
    old = ledger.claim("a", run_id=run, worker="old", lease_seconds=0.2)
    assert ledger.renew(old, lease_seconds=0.2).lease_until is not None
    wait_until_expired(ledger, run, "a")
    with pytest.raises(ResultError) as caught:
        ledger.renew(old)
    assert caught.value.code == "LATE_RESULT"
    new = ledger.claim("a", run_id=run, worker="new")
    with pytest.raises(ResultError) as caught:
        ledger.renew(old)
    assert caught.value.code == "STALE_ATTEMPT"
    assert ledger.renew(new).attempt == 2


def test_a_lost_side_effect_call_becomes_unknown_and_waits_for_reconcile(ledger: Ledger) -> None:
    run = new_run()
    ledger.record(
        decision(("a", "write_file", "allowed"), ("b", "write_file", "allowed"), ("c", "write_file", "allowed")),
        run_id=run,
        tools=TOOLS,
    )
    lost = {c: ledger.claim(c, run_id=run, worker="lost", lease_seconds=0.2) for c in "abc"}
    for c in "abc":
        wait_until_expired(ledger, run, c)
    assert [e.state for e in ledger.entries(run)] == ["unknown"] * 3
    again = ledger.claim("a", run_id=run, worker="other")
    assert not again.granted and again.reason == "unknown"
    with pytest.raises(ResultError) as caught:
        ledger.commit(lost["a"], ToolResult("a", "ok", "it did happen"))
    assert caught.value.code == "LATE_RESULT" and ledger.entry("a", run_id=run).state == "unknown"
    late = [e for e in ledger.audit(run) if e.kind == "late_result"]
    assert late and late[0].detail["result"]["content"] == "it did happen"  # kept for the host's reconcile
    assert ledger.reconcile("a", ToolResult("a", "ok", "checked by hand"), run_id=run, actor="ops").state == "committed"
    assert ledger.reconcile("b", ToolResult("b", "error", "did not happen"), run_id=run).state == "failed"
    assert ledger.reconcile("c", "retry", run_id=run).state == "decided"
    retry = ledger.claim("c", run_id=run, worker="other")
    assert retry.granted and retry.attempt == 2
    for call_id in ("a", "b", "c"):
        with pytest.raises(ResultError) as caught:
            ledger.reconcile(call_id, "retry", run_id=run)
        assert caught.value.code == "INVALID_TRANSITION"


def test_an_idempotent_side_effect_call_is_claimed_again(ledger: Ledger) -> None:
    run = new_run()
    ledger.record(decision(("a", "write_file", "allowed")), run_id=run, tools=TOOLS, idempotent=("write_file",))
    ledger.claim("a", run_id=run, worker="lost", lease_seconds=0.2)
    wait_until_expired(ledger, run, "a")
    assert ledger.entry("a", run_id=run).state == "executing"
    assert ledger.claim("a", run_id=run, worker="next").attempt == 2


def test_an_unknown_tool_is_treated_as_having_side_effects(ledger: Ledger) -> None:
    run = new_run()
    ledger.record(decision(("a", "mystery", "allowed")), run_id=run, tools=TOOLS)
    ledger.claim("a", run_id=run, worker="lost", lease_seconds=0.2)
    wait_until_expired(ledger, run, "a")
    assert ledger.entry("a", run_id=run).state == "unknown"


def test_a_retry_safe_failure_may_be_claimed_again_and_others_may_not(ledger: Ledger) -> None:
    run = new_run()
    ledger.record(decision(("a", "write_file", "allowed"), ("b", "write_file", "allowed")), run_id=run)
    ledger.commit(ledger.claim("a", run_id=run, worker="w"), ToolResult("a", "error", "busy", retry_safe=True))
    ledger.commit(ledger.claim("b", run_id=run, worker="w"), ToolResult("b", "error", "broke"))
    assert ledger.claim("a", run_id=run, worker="w2").attempt == 2
    refused = ledger.claim("b", run_id=run, worker="w2")
    assert not refused.granted and refused.reason == "failed"


# ---------------------------------------------------------------- cancelled runs


def test_a_cancelled_run_grants_nothing_and_its_results_are_late(ledger: Ledger) -> None:
    run = new_run()
    ledger.record(decision(("a", "write_file", "allowed"), ("b", "read_file", "allowed")), run_id=run, tools=TOOLS)
    running = ledger.claim("a", run_id=run, worker="w")
    ledger.cancel(run, actor="user")
    assert ledger.cancelled(run)
    refused = ledger.claim("b", run_id=run, worker="w")
    assert not refused.granted and refused.reason == "cancelled"
    with pytest.raises(ResultError) as caught:
        ledger.commit(running, ToolResult("a", "ok", "after cancel"))
    assert caught.value.code == "LATE_RESULT"
    with pytest.raises(ResultError):
        ledger.renew(running)
    assert [e.state for e in ledger.entries(run)] == ["executing", "decided"]
    assert ledger.entry("a", run_id=run).result is None
    assert not ledger.cancelled(new_run())


# ---------------------------------------------------------------- approvals


def test_approval_flow_and_its_audit(ledger: Ledger) -> None:
    run = new_run()
    d = ToolDecision(
        calls=(
            ToolCall(call_id="a", name="write_file", arguments={"path": "x", "content": "secret"}, tool_version="7"),
        ),
        verdicts=(CallVerdict(call_id="a", status="needs_approval", reasons=("writes",)),),
    )
    entry = ledger.record(d, run_id=run, tools=TOOLS, policy="policy@2")[0]
    assert not ledger.claim("a", run_id=run, worker="w").granted
    approved = ledger.approve("a", run_id=run, approver="alice", policy="policy@2")
    assert approved.state == "approved" and approved.approved_by == "alice"
    event = [e for e in ledger.audit(run) if e.kind == "approve"][0]
    assert event.actor == "alice" and event.at > 0
    assert event.detail == {"tool": "write_file", "tool_version": "7", "digest": entry.digest, "policy": "policy@2"}
    assert ledger.claim("a", run_id=run, worker="w").granted
    with pytest.raises(ResultError) as caught:
        ledger.approve("a", run_id=run, approver="bob")
    assert caught.value.code == "INVALID_TRANSITION"


def test_an_approved_decision_records_its_approver(ledger: Ledger) -> None:
    run = new_run()
    d = decision(("a", "write_file", "needs_approval")).approve(approver="carol")
    assert ledger.record(d, run_id=run)[0].state == "approved"
    assert [(e.kind, e.actor) for e in ledger.audit(run)] == [("recorded", None), ("approved", "carol")]


def test_rejection_denies(ledger: Ledger) -> None:
    run = new_run()
    ledger.record(decision(("a", "write_file", "needs_approval")), run_id=run)
    assert ledger.reject("a", run_id=run, approver="bob", reason="no").state == "denied"
    assert ledger.claim("a", run_id=run, worker="w").reason == "denied"
    with pytest.raises(ResultError) as caught:
        ledger.approve("a", run_id=run, approver="bob")
    assert caught.value.code == "INVALID_TRANSITION"


def test_an_all_or_nothing_batch_waits_for_its_approvals(ledger: Ledger) -> None:
    run = new_run()
    ledger.record(
        decision(("a", "read_file", "allowed"), ("b", "write_file", "needs_approval"), batch="all_or_nothing"),
        run_id=run,
        tools=TOOLS,
    )
    waiting = ledger.claim("a", run_id=run, worker="w")
    assert not waiting.granted and waiting.reason == "batch_waiting"
    ledger.approve("b", run_id=run, approver="alice")
    assert ledger.claim("a", run_id=run, worker="w").granted and ledger.claim("b", run_id=run, worker="w").granted
    other = new_run()
    ledger.record(
        decision(("a", "read_file", "allowed"), ("b", "write_file", "needs_approval"), batch="all_or_nothing"),
        run_id=other,
        tools=TOOLS,
    )
    ledger.reject("b", run_id=other, approver="bob")
    assert ledger.claim("a", run_id=other, worker="w").reason == "batch_waiting"


def test_per_call_batches_stand_alone(ledger: Ledger) -> None:
    run = new_run()
    ledger.record(
        decision(("a", "read_file", "allowed"), ("b", "write_file", "needs_approval")), run_id=run, tools=TOOLS
    )
    assert ledger.claim("a", run_id=run, worker="w").granted


# ---------------------------------------------------------------- the state machine


def test_every_state_change_the_ledger_makes_is_in_the_table(ledger: Ledger) -> None:
    """Drive calls through every path and check each observed change against TRANSITIONS."""
    table = transition_table()
    assert all(f"`{s}`" in table for s in STATES if s != "decided") and len(table.splitlines()) == len(TRANSITIONS) + 2
    allowed = {(s, n) for (s, _), n in TRANSITIONS.items()}
    run = new_run()
    ledger.record(decision(*[(c, "write_file", "needs_approval") for c in "abcdef"]), run_id=run)
    seen: dict[str, str] = {e.call_id: e.state for e in ledger.entries(run)}

    def observe() -> None:
        for e in ledger.entries(run):
            if e.state != seen[e.call_id]:
                assert (seen[e.call_id], e.state) in allowed, (seen[e.call_id], e.state)
                seen[e.call_id] = e.state

    ledger.reject("f", run_id=run, approver="x")

    observe()
    for c in "abcde":
        ledger.approve(c, run_id=run, approver="x")
        observe()
    claims = {c: ledger.claim(c, run_id=run, worker="w", lease_seconds=0.2 if c in "cd" else 60) for c in "abcde"}
    observe()
    ledger.commit(claims["a"], ToolResult("a", "ok", ""))
    observe()
    ledger.commit(claims["b"], ToolResult("b", "error", "", retry_safe=True))
    observe()
    ledger.claim("b", run_id=run, worker="w")
    observe()
    for c in "cd":
        wait_until_expired(ledger, run, c)
    observe()
    ledger.reconcile("c", "retry", run_id=run)
    observe()
    ledger.reconcile("d", ToolResult("d", "ok", ""), run_id=run)
    observe()
    assert seen == {
        "a": "committed",
        "b": "executing",
        "c": "decided",
        "d": "committed",
        "e": "executing",
        "f": "denied",
    }


# ---------------------------------------------------------------- claim_next


def test_claim_next_takes_the_claimable_calls_in_recorded_order(ledger: Ledger, url: str) -> None:
    run = new_run()
    ledger.record(
        decision(
            ("a", "write_file", "denied"),
            ("b", "write_file", "needs_approval"),
            ("c", "write_file", "allowed"),
            ("d", "read_file", "allowed"),
            ("e", "write_file", "approved"),
        ),
        run_id=run,
        tools=TOOLS,
    )
    with open_ledger(url) as other:
        first = ledger.claim_next(run, worker="w1")
        second = other.claim_next(run, worker="w2")
    assert first is not None and second is not None
    assert (first.call_id, first.worker, first.attempt, first.granted) == ("c", "w1", 1, True)
    assert (second.call_id, second.tool, second.arguments) == ("d", "read_file", {"path": "d.txt"})
    assert not second.side_effects and second.idempotency_key == ledger.entry("d", run_id=run).idempotency_key
    third = ledger.claim_next(run, worker="w1")
    assert third is not None and third.call_id == "e"
    assert ledger.claim_next(run, worker="w1") is None  # a, b may not run; c, d, e are leased
    ledger.approve("b", run_id=run, approver="x")
    fourth = ledger.claim_next(run, worker="w3")
    assert fourth is not None and fourth.call_id == "b"
    assert [e.kind for e in ledger.audit(run)].count("claimed") == 4
    assert {e.call_id: e.worker for e in ledger.entries(run) if e.state == "executing"} == {
        "b": "w3",
        "c": "w1",
        "d": "w2",
        "e": "w1",
    }
    assert ledger.claim_next(new_run(), worker="w") is None  # a run with no calls


def test_claim_next_reclaims_what_a_claim_would_and_nothing_else(ledger: Ledger) -> None:
    run = new_run()
    ledger.record(
        decision(("r", "read_file", "allowed"), ("w", "write_file", "allowed"), ("f", "write_file", "allowed")),
        run_id=run,
        tools=TOOLS,
    )
    lost = {c: ledger.claim(c, run_id=run, worker="lost", lease_seconds=0.2) for c in "rw"}
    ledger.commit(ledger.claim("f", run_id=run, worker="x"), ToolResult("f", "error", "busy", retry_safe=True))
    for c in "rw":
        wait_until_expired(ledger, run, c)
    taken = [ledger.claim_next(run, worker="next", lease_seconds=60) for _ in range(3)]
    assert [(c.call_id, c.attempt) if c else None for c in taken] == [("r", 2), ("f", 2), None]
    assert ledger.entry("w", run_id=run).state == "unknown"  # a lost side-effect call is never re-run
    with pytest.raises(ResultError) as late:
        ledger.commit(lost["r"], ToolResult("r", "ok", "late"))
    assert late.value.code == "STALE_ATTEMPT"


def test_claim_next_respects_cancelled_runs_and_waiting_batches(ledger: Ledger) -> None:
    run = new_run()
    ledger.record(
        decision(("a", "write_file", "allowed"), ("b", "write_file", "needs_approval"), batch="all_or_nothing"),
        run_id=run,
    )
    assert ledger.claim_next(run, worker="w") is None  # b waits, so the batch waits
    ledger.approve("b", run_id=run, approver="x")
    ledger.cancel(run)
    assert ledger.claim_next(run, worker="w") is None
    with pytest.raises(ValueError):
        ledger.claim_next(run, worker="w", lease_seconds=0)


# ---------------------------------------------------------------- Run and ResultBook on a ledger


def test_runs_on_one_ledger_share_decided_ids_and_cancellation(url: str) -> None:
    from decisions import PolicyError, ResultBook, Run

    run_id = new_run()
    with open_ledger(url) as one, open_ledger(url) as two:
        here, there = Run(run_id, ledger=one), Run(run_id, ledger=two)
        assert here.claim(["a", "b"]) == ()
        assert there.decided("a") and there.claim(["c", "b"]) == ("b",) and not here.decided("c")
        one.record(decision(("d", "write_file", "allowed")), run_id=run_id)
        assert there.decided("d")  # a recorded call was decided
        book = ResultBook(
            decision(("e", "write_file", "allowed"), ("f", "write_file", "denied")), ledger=two, run_id=run_id
        )
        assert here.decided("e") and book.pending == ("e",)
        with pytest.raises(ResultError) as denied:
            book.add(ToolResult("f", "ok", "ran anyway"))
        assert denied.value.code == "NOT_CLAIMED" and book.pending == ("e",)
        book.add(ToolResult("e", "ok", "done"))
        assert one.entry("e", run_id=run_id).state == "committed"
        messages = book.messages("openai-chat")
        assert [m["tool_call_id"] for m in messages] == ["e", "f"] and messages[0]["content"] == "done"
        there.cancel()
        assert here.cancelled and one.cancelled(run_id)
        with pytest.raises(PolicyError) as cancelled:
            here.claim(["z"])
        assert cancelled.value.code == "RUN_CANCELLED" and not there.decided("z")


def test_a_sqlite_ledger_takes_only_known_options(tmp_path: Path) -> None:
    with open_ledger(f"sqlite:///{tmp_path / 'full.db'}?synchronous=full") as full:
        assert full.claim_next(new_run(), worker="w") is None
    with pytest.raises(ValueError):
        open_ledger(f"sqlite:///{tmp_path / 'x.db'}?synchronous=off")
