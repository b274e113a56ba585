"""The ledger's own steps written out in full, on SQLite and PostgreSQL:
what ``record``, ``reserve``, ``reconcile``, ``cancel`` and the readers
keep and return for real sequences of steps, and the exact error (its
every field) each misuse gets. A step that lets a call run twice, reports
a lost or failed call as done, or lets a bad argument through, changes one
of these outcomes."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from decisions import (
    DEFAULT_LIMITS,
    CallVerdict,
    Ledger,
    Limits,
    OutputError,
    PolicyError,
    Tool,
    ToolCall,
    ToolDecision,
    ToolRegistry,
    ToolResult,
    open_ledger,
)
from decisions.ledger import PostgresDatabase, SQLiteDatabase
from decisions.ledger.shapes import to_dict
from ledger_helpers import decision, new_run, url_for


def error_of(step: Callable[[], object]) -> dict[str, Any]:
    """The error ``step`` raises: a typed error's every field, or a Python error's type and text."""
    with pytest.raises((OutputError, TypeError, ValueError)) as caught:
        step()
    e = caught.value
    if isinstance(e, OutputError):
        return e.to_dict()
    return {"type": type(e).__name__, "message": str(e)}


def ended(ledger: Ledger, run: str, *outcomes: tuple[str, str]) -> None:
    """Record one allowed call per ``(call_id, status)`` and end each with a result of that status."""
    ledger.record(decision(*((c, "t", "allowed") for c, _ in outcomes)), run_id=run)
    for call_id, status in outcomes:
        claim = ledger.claim(call_id, run_id=run, worker="w")
        ledger.commit(claim, ToolResult(call_id, status, f"{call_id} {status}"))  # type: ignore[arg-type]


# ------------------------------------------------------------ cancel and the runs


def test_cancel_refuses_an_actor_that_is_not_text_and_cancels_nothing(ledger: Ledger) -> None:
    run = new_run()
    ledger.record(decision(("a", "t", "allowed")), run_id=run)
    assert error_of(lambda: ledger.cancel(run, actor=5)) == {  # type: ignore[arg-type]
        "type": "TypeError",
        "message": "actor must be a str or None, not int",
    }
    assert not ledger.cancelled(run)
    assert ledger.claim("a", run_id=run, worker="w").granted


def test_runs_says_which_run_was_cancelled(ledger: Ledger) -> None:
    kept, cancelled = new_run(), new_run()
    ledger.record(decision(("a", "t", "allowed"), ("b", "t", "allowed")), run_id=kept)
    ledger.record(decision(("a", "t", "allowed")), run_id=cancelled)
    ledger.cancel(cancelled, actor="ops")
    runs = {run_id: (flag, n) for run_id, flag, n in ledger.runs()}
    assert (runs[kept], runs[cancelled]) == ((False, 2), (True, 1))
    assert all(type(flag) is bool and type(n) is int for _, flag, n in ledger.runs())


# ------------------------------------------------------------ decided


def test_decided_checks_both_ids(ledger: Ledger) -> None:
    run = new_run()
    ledger.record(decision(("a", "t", "allowed")), run_id=run)
    long = "x" * 2000
    for step, path in (
        (lambda: ledger.decided("a", run_id=long), "$.run_id"),
        (lambda: ledger.decided(long, run_id=run), "$.call_id"),
    ):
        error = error_of(step)
        assert (error["layer"], error["code"], error["path"], error["retryable"]) == (
            "result",
            "LEDGER_UNAVAILABLE",
            path,
            False,
        )
    assert error_of(lambda: ledger.decided(1, run_id=run)) == {  # type: ignore[arg-type]
        "type": "TypeError",
        "message": "call id must be a str, not int",
    }
    assert error_of(lambda: ledger.decided("a", run_id=None)) == {  # type: ignore[arg-type]
        "type": "TypeError",
        "message": "run id must be a str, not NoneType",
    }
    assert (ledger.decided("a", run_id=run), ledger.decided("b", run_id=run)) == (True, False)


# ------------------------------------------------------------ result messages


def test_result_messages_for_some_calls_skip_the_others_wherever_they_are(ledger: Ledger) -> None:
    run = new_run()
    ended(ledger, run, ("a", "ok"), ("b", "ok"), ("c", "ok"))
    assert ledger.result_messages("openai-chat", run_id=run, call_ids=["b"]) == [
        {"role": "tool", "tool_call_id": "b", "content": "b ok"}
    ]
    assert ledger.result_messages("openai-chat", run_id=run, call_ids=("c", "a")) == [
        {"role": "tool", "tool_call_id": "a", "content": "a ok"},
        {"role": "tool", "tool_call_id": "c", "content": "c ok"},
    ]


def test_result_messages_name_the_first_call_the_run_never_held(ledger: Ledger) -> None:
    run = new_run()
    ended(ledger, run, ("a", "ok"))
    assert error_of(lambda: ledger.result_messages("openai-chat", run_id=run, call_ids=["zz", "a", "yy"])) == {
        "layer": "domain",
        "code": "UNKNOWN_CALL_ID",
        "message": f"run {run!r} holds no call 'yy'",
        "retryable": False,
        "offset": None,
        "path": "$.call_ids",
        "hint": "ask only for the calls of this run",
        "issues": [],
        "call_index": None,
        "call_id": "yy",
        "tool": None,
        "batch": [],
    }
    assert error_of(lambda: ledger.result_messages("openai-chat", run_id=run, call_ids="a")) == {
        "type": "ValueError",
        "message": "call_ids must be a collection of call ids, not the string 'a'",
    }


def test_result_messages_tell_each_ended_call_how_it_went_and_leave_open_ones_out(ledger: Ledger) -> None:
    run = new_run()
    specs = (("a", "t", "allowed"), ("b", "t", "allowed"), ("c", "t", "denied"), ("d", "t", "allowed"))
    ledger.record(decision(*specs, ("e", "t", "allowed")), run_id=run)
    ledger.commit(ledger.claim("a", run_id=run, worker="w"), ToolResult("a", "ok", "a ok"))
    ledger.commit(ledger.claim("b", run_id=run, worker="w"), ToolResult("b", "error", "b raw output"))
    ledger.claim("d", run_id=run, worker="lost", lease_seconds=0.05)
    time.sleep(0.1)
    assert [(e.call_id, e.state, e.result is not None) for e in ledger.entries(run)] == [
        ("a", "committed", True),
        ("b", "failed", True),  # the failed result is kept, but never shown to the model
        ("c", "denied", False),
        ("d", "unknown", False),
        ("e", "decided", False),
    ]
    failed = {"error": "TOOL_ERROR", "message": "the tool reported an error", "hint": None}
    refused = {"error": "TOOL_ERROR", "message": "the call failed"}
    lost = {"error": "outcome unknown", "message": "the worker was lost mid-call; the call will not be re-run"}
    assert ledger.result_messages("gemini", run_id=run) == [
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "t", "response": {"output": "a ok"}, "id": "a"}},
                {"functionResponse": {"name": "t", "response": {"error": failed}, "id": "b"}},
                {"functionResponse": {"name": "t", "response": {"error": refused}, "id": "c"}},
                {"functionResponse": {"name": "t", "response": {"error": lost}, "id": "d"}},
            ],
        }
    ]


# ------------------------------------------------------------ renew


def test_renew_of_a_claim_not_granted_is_not_claimed(ledger: Ledger) -> None:
    run = new_run()
    ledger.record(decision(("a", "t", "allowed")), run_id=run)
    ledger.claim("a", run_id=run, worker="w1")
    refused = ledger.claim("a", run_id=run, worker="w2")
    error = error_of(lambda: ledger.renew(refused))
    assert (error["layer"], error["code"], error["message"], error["path"]) == (
        "result",
        "NOT_CLAIMED",
        "the claim on 'a' was not granted",
        None,
    )


def test_renew_extends_the_lease_by_a_minute_unless_told(ledger: Ledger) -> None:
    run = new_run()
    ledger.record(decision(("a", "t", "allowed")), run_id=run)
    claim = ledger.claim("a", run_id=run, worker="w", lease_seconds=5)
    for given, lease in (({}, 60.0), ({"lease_seconds": 10}, 10.0)):
        before = time.time()
        renewed = ledger.renew(claim, **given)
        after = time.time()
        assert renewed.lease_until is not None
        assert before + lease - 0.5 < renewed.lease_until < after + lease + 0.5
        assert renewed.lease_until == ledger.entry("a", run_id=run).lease_until


# ------------------------------------------------------------ approvals


def events(ledger: Ledger, run: str) -> list[tuple[str | None, str, str | None, dict[str, Any]]]:
    """The run's audit: ``(call_id, kind, actor, detail)`` per event, oldest first."""
    return [(e.call_id, e.kind, e.actor, e.detail) for e in ledger.audit(run)]


def test_approvals_and_rejections_keep_who_why_and_what_in_the_audit(ledger: Ledger) -> None:
    run = new_run()
    entries = ledger.record(decision(("a", "t", "needs_approval"), ("b", "t", "needs_approval")), run_id=run)
    approved = ledger.approve("a", run_id=run, approver="ann", policy="p1")
    rejected = ledger.reject("b", run_id=run, approver="bob", reason="too broad", policy="p2")
    assert (approved.state, approved.approved_by, rejected.state, rejected.approved_by) == (
        "approved",
        "ann",
        "denied",
        None,
    )
    what = [{"tool": "t", "tool_version": None, "digest": e.digest} for e in entries]
    assert events(ledger, run)[2:] == [
        ("a", "approve", "ann", {**what[0], "policy": "p1"}),
        ("b", "reject", "bob", {**what[1], "policy": "p2", "reason": "too broad"}),
    ]


def test_an_approver_must_be_text(ledger: Ledger) -> None:
    run = new_run()
    ledger.record(decision(("a", "t", "needs_approval")), run_id=run)
    for step in (ledger.approve, ledger.reject):
        assert error_of(partial(step, "a", run_id=run, approver=7)) == {  # type: ignore[arg-type]
            "type": "TypeError",
            "message": "approver must be a str, not int",
        }
    assert ledger.entry("a", run_id=run).state == "awaiting_approval"


@pytest.mark.parametrize(
    ("status", "step", "state"),
    [("allowed", "approve", "decided"), ("denied", "reject", "denied"), ("allowed", "reject", "decided")],
)
def test_a_step_the_state_machine_has_no_row_for_is_an_invalid_transition(
    ledger: Ledger, status: str, step: str, state: str
) -> None:
    run = new_run()
    ledger.record(decision(("a", "t", status)), run_id=run)
    assert error_of(lambda: getattr(ledger, step)("a", run_id=run, approver="ann")) == {
        "layer": "result",
        "code": "INVALID_TRANSITION",
        "message": f"call 'a' is {state}; {step} is not possible",
        "retryable": False,
        "offset": None,
        "path": "$.state",
        "hint": "see the ledger's state machine",
        "issues": [],
        "call_index": None,
        "call_id": None,
        "tool": None,
        "batch": [],
    }
    assert ledger.entry("a", run_id=run).state == state
    assert [kind for _, kind, _, _ in events(ledger, run)] == ["recorded"]


# ------------------------------------------------------------ reserve


def test_reserve_reports_the_ids_recorded_or_reserved_before_and_reserves_none(ledger: Ledger) -> None:
    run = new_run()
    ledger.record(decision(("a", "t", "allowed")), run_id=run)
    assert ledger.reserve(run, ["b"]) == ()
    assert ledger.reserve(run, ["c", "a", "d", "b"]) == ("a", "b")  # recorded, reserved: in the order asked
    assert [ledger.decided(c, run_id=run) for c in "abcd"] == [True, True, False, False]
    assert ledger.reserve(run, iter(["c", "d", "c"])) == ()
    assert [ledger.decided(c, run_id=run) for c in "cd"] == [True, True]
    assert ledger.reserve(run, ["d"]) == ("d",)


def test_reserve_checks_its_arguments_before_it_reserves_anything(ledger: Ledger) -> None:
    run = new_run()
    assert error_of(lambda: ledger.reserve(run, "ab")) == {
        "type": "ValueError",
        "message": "call_ids must be a collection of call ids, not the string 'ab'",
    }
    assert error_of(lambda: ledger.reserve(run, ["a", 2])) == {  # type: ignore[list-item]
        "type": "TypeError",
        "message": "call id must be a str, not int",
    }
    error = error_of(lambda: ledger.reserve(run, ["a", "b", "x" * 2000]))
    assert (error["code"], error["message"][:43], error["path"]) == (
        "LEDGER_UNAVAILABLE",
        "the ledger cannot hold a call id of more th",
        "$.call_ids[2]",
    )
    assert not ledger.decided("a", run_id=run)


def _reserve_alongside(url: str, run: str, when: str, also: str) -> Callable[[], None]:
    """Make the database reserve ``also`` in ``run`` as ``when`` is reserved (as a
    concurrent reservation would between reserve's check and its inserts); call
    the result to stop."""
    tag = run.replace("-", "_")
    condition = f"NEW.run_id = '{run}' AND NEW.call_id = '{when}'"
    insert = f"INSERT INTO ledger_decided (run_id, call_id) VALUES ('{run}', '{also}')"
    if url.startswith("sqlite:"):
        raw: Any = sqlite3.connect(url[len("sqlite:///") :], isolation_level=None)
        raw.execute(
            f"CREATE TRIGGER alongside_{tag} AFTER INSERT ON ledger_decided WHEN {condition} BEGIN {insert}; END"
        )
        drop = [f"DROP TRIGGER alongside_{tag}"]
    else:
        import psycopg

        raw = psycopg.connect(url, autocommit=True)
        raw.execute(
            f"CREATE FUNCTION alongside_{tag}() RETURNS trigger AS $$ BEGIN {insert}; RETURN NULL; END $$ "
            "LANGUAGE plpgsql"
        )
        raw.execute(
            f"CREATE TRIGGER alongside_{tag} AFTER INSERT ON ledger_decided FOR EACH ROW WHEN ({condition}) "
            f"EXECUTE FUNCTION alongside_{tag}()"
        )
        drop = [f"DROP TRIGGER alongside_{tag} ON ledger_decided", f"DROP FUNCTION alongside_{tag}()"]

    def stop() -> None:
        for sql in drop:
            raw.execute(sql)
        raw.close()

    return stop


def test_a_reservation_that_loses_an_id_to_another_reserves_none_of_its_ids(ledger: Ledger) -> None:
    run = new_run()
    stop = _reserve_alongside(ledger.url, run, "b", "c")
    try:
        assert ledger.reserve(run, ["a", "b", "c", "d"]) == ("c",)
    finally:
        stop()
    assert [ledger.decided(c, run_id=run) for c in "abcd"] == [False, False, True, False]
    assert ledger.reserve(run, ["a", "b", "d"]) == ()


# ------------------------------------------------------------ reconcile


def _lost(ledger: Ledger, run: str, *call_ids: str) -> None:
    """Record allowed calls with side effects and lose the worker of each: ``unknown``."""
    ledger.record(decision(*((c, "t", "allowed") for c in call_ids)), run_id=run)
    for call_id in call_ids:
        ledger.claim(call_id, run_id=run, worker="lost", lease_seconds=0.05)
    time.sleep(0.1)
    assert {e.state for e in ledger.entries(run)} == {"unknown"}


def test_reconcile_retry_frees_the_call_for_one_new_attempt_and_keeps_who_said_so(ledger: Ledger) -> None:
    run = new_run()
    _lost(ledger, run, "a")
    retried = ledger.reconcile("a", "retry", run_id=run, actor="ops")
    assert (retried.state, retried.attempt, retried.lease_until) == ("decided", 1, None)
    assert events(ledger, run)[-1][1:3] == ("reconcile_retry", "ops")
    assert events(ledger, run)[-1][3]["outcome"] == "retry"
    again = ledger.claim("a", run_id=run, worker="w2")
    assert (again.granted, again.attempt) == (True, 2)
    assert ledger.claim("a", run_id=run, worker="w3").granted is False


def test_reconcile_checks_both_ids(ledger: Ledger) -> None:
    run = new_run()
    _lost(ledger, run, "a")
    for step, path in (
        (lambda: ledger.reconcile("a", "retry", run_id="x" * 2000), "$.run_id"),
        (lambda: ledger.reconcile("x" * 2000, "retry", run_id=run), "$.call_id"),
    ):
        error = error_of(step)
        assert (error["code"], error["path"]) == ("LEDGER_UNAVAILABLE", path)
    assert error_of(lambda: ledger.reconcile(5, "retry", run_id=run)) == {  # type: ignore[arg-type]
        "type": "TypeError",
        "message": "call id must be a str, not int",
    }
    assert error_of(lambda: ledger.reconcile("a", "retry", run_id=5)) == {  # type: ignore[arg-type]
        "type": "TypeError",
        "message": "run id must be a str, not int",
    }
    assert ledger.entry("a", run_id=run).state == "unknown"


def test_reconcile_settles_an_unknown_call_by_the_result_found(ledger: Ledger) -> None:
    run = new_run()
    _lost(ledger, run, "a", "b", "c")
    ok = ledger.reconcile("a", ToolResult("a", "ok", {"n": 1}), run_id=run, actor="ops")
    again = ledger.reconcile("b", ToolResult("b", "error", "boom", retry_safe=True), run_id=run, actor="ops")
    final = ledger.reconcile("c", ToolResult("c", "error", "boom"), run_id=run)
    assert [(e.state, e.attempt, e.lease_until, e.finished_at is not None) for e in (ok, again, final)] == [
        ("committed", 1, None, True),
        ("failed", 1, None, True),
        ("failed", 1, None, True),
    ]
    assert (ok.result, ok.error) == (ToolResult("a", "ok", {"n": 1}), None)
    assert again.result == ToolResult("b", "error", "boom", retry_safe=True)
    assert again.error is not None and final.error is not None
    assert (again.error.code, again.error.retryable, final.error.code) == ("TOOL_ERROR", True, "TOOL_ERROR")
    what = {e.call_id: {"tool": "t", "tool_version": None, "digest": e.digest} for e in (ok, again, final)}
    assert events(ledger, run)[-3:] == [
        ("a", "reconcile_ok", "ops", {**what["a"], "status": "ok", "code": None}),
        ("b", "reconcile_failed", "ops", {**what["b"], "status": "error", "code": "TOOL_ERROR"}),
        ("c", "reconcile_failed", None, {**what["c"], "status": "error", "code": "TOOL_ERROR"}),
    ]
    # only the failure the result called safe to retry is claimed again
    claims = [ledger.claim(c, run_id=run, worker="w") for c in "abc"]
    assert [(c.granted, c.reason, c.attempt) for c in claims] == [
        (False, "committed", 1),
        (True, "granted", 2),
        (False, "failed", 1),
    ]


def test_reconcile_refuses_what_is_not_the_call_s_result_and_changes_nothing(ledger: Ledger, url: str) -> None:
    run = new_run()
    _lost(ledger, run, "a")
    assert error_of(lambda: ledger.reconcile("a", "done", run_id=run)) == {  # type: ignore[arg-type]
        "type": "TypeError",
        "message": "reconcile takes a ToolResult or 'retry'",
    }
    assert error_of(lambda: ledger.reconcile("a", ToolResult("b", "ok", "x"), run_id=run)) == {
        "layer": "result",
        "code": "NOT_CLAIMED",
        "message": "a result for 'b' to reconcile 'a'",
        "retryable": False,
        "offset": None,
        "path": "$.call_id",
        "hint": None,
        "issues": [],
        "call_index": None,
        "call_id": None,
        "tool": None,
        "batch": [],
    }
    with open_ledger(url, limits=Limits(max_result_bytes=8)) as tight:
        error = error_of(lambda: tight.reconcile("a", ToolResult("a", "ok", "x" * 9), run_id=run))
        assert (error["code"], error["path"]) == ("RESULT_TOO_LARGE", "$.content")
        assert tight.reconcile("a", ToolResult("a", "ok", "x" * 8), run_id=run).state == "committed"
    assert [kind for _, kind, _, _ in events(ledger, run)].count("reconcile_ok") == 1


# ------------------------------------------------------------ the arguments of every step


def test_an_approval_checks_both_ids_and_a_reconcile_its_actor(ledger: Ledger) -> None:
    run = new_run()
    ledger.record(decision(("a", "t", "needs_approval")), run_id=run)
    for step, path in (
        (lambda: ledger.approve("a", run_id="x" * 2000, approver="ann"), "$.run_id"),
        (lambda: ledger.reject("x" * 2000, run_id=run, approver="ann"), "$.call_id"),
    ):
        error = error_of(step)
        assert (error["code"], error["path"]) == ("LEDGER_UNAVAILABLE", path)
    lost_run = new_run()
    _lost(ledger, lost_run, "b")
    assert error_of(lambda: ledger.reconcile("b", "retry", run_id=lost_run, actor=5)) == {  # type: ignore[arg-type]
        "type": "TypeError",
        "message": "actor must be a str or None, not int",
    }
    assert ledger.entry("b", run_id=lost_run).state == "unknown"
    assert ledger.entry("a", run_id=run).state == "awaiting_approval"


def test_a_worker_must_be_text(ledger: Ledger) -> None:
    run = new_run()
    ledger.record(decision(("a", "t", "allowed")), run_id=run)
    for step in (
        lambda: ledger.claim("a", run_id=run, worker=5),  # type: ignore[arg-type]
        lambda: ledger.claim_next(run, worker=5),  # type: ignore[arg-type]
    ):
        assert error_of(step) == {"type": "TypeError", "message": "worker must be a str, not int"}
    assert ledger.entry("a", run_id=run).state == "decided"


def test_a_claim_holds_its_lease_a_minute_unless_told(ledger: Ledger) -> None:
    run = new_run()
    ledger.record(decision(("a", "t", "allowed"), ("b", "t", "allowed"), ("c", "t", "allowed")), run_id=run)
    steps = (
        ({}, 60.0, lambda **given: ledger.claim("a", run_id=run, worker="w", **given)),
        ({}, 60.0, lambda **given: ledger.claim_next(run, worker="w", **given)),
        ({"lease_seconds": 10}, 10.0, lambda **given: ledger.claim_next(run, worker="w", **given)),
    )
    for given, lease, step in steps:
        before = time.time()
        claim = step(**given)
        after = time.time()
        assert claim is not None and claim.granted and claim.lease_until is not None
        assert before + lease - 0.5 < claim.lease_until < after + lease + 0.5


def test_a_step_first_settles_the_lapsed_lease_of_its_own_call_only(ledger: Ledger) -> None:
    run = new_run()
    ledger.record(decision(("a", "t", "allowed"), ("b", "t", "allowed")), run_id=run)
    for call_id in "ab":
        ledger.claim(call_id, run_id=run, worker="lost", lease_seconds=0.05)
    time.sleep(0.1)
    retried = ledger.reconcile("a", "retry", run_id=run, actor="ops")  # no read turned it unknown first
    assert (retried.state, retried.attempt) == ("decided", 1)
    assert [(e.run_id, e.call_id, e.kind, e.actor) for e in ledger.audit(run)][-2:] == [
        (run, "a", "lease_expired", "lost"),
        (run, "a", "reconcile_retry", "ops"),
    ]
    assert [e.state for e in ledger.entries(run)] == ["decided", "unknown"]


def _skip_updates(url: str, run: str) -> Callable[[], None]:
    """Make the database skip every update of ``run``'s calls (as if another
    step had moved the call between a step's read and its update); call the
    result to stop."""
    tag = run.replace("-", "_")
    if url.startswith("sqlite:"):
        raw: Any = sqlite3.connect(url[len("sqlite:///") :], isolation_level=None)
        raw.execute(
            f"CREATE TRIGGER skip_{tag} BEFORE UPDATE ON ledger_calls WHEN OLD.run_id = '{run}' "
            "BEGIN SELECT RAISE(IGNORE); END"
        )
        drop = [f"DROP TRIGGER skip_{tag}"]
    else:
        import psycopg

        raw = psycopg.connect(url, autocommit=True)
        raw.execute(f"CREATE FUNCTION skip_{tag}() RETURNS trigger AS $$ BEGIN RETURN NULL; END $$ LANGUAGE plpgsql")
        raw.execute(
            f"CREATE TRIGGER skip_{tag} BEFORE UPDATE ON ledger_calls FOR EACH ROW WHEN (OLD.run_id = '{run}') "
            f"EXECUTE FUNCTION skip_{tag}()"
        )
        drop = [f"DROP TRIGGER skip_{tag} ON ledger_calls", f"DROP FUNCTION skip_{tag}()"]

    def stop() -> None:
        for sql in drop:
            raw.execute(sql)
        raw.close()

    return stop


def test_a_step_whose_update_did_not_apply_is_an_invalid_transition_and_leaves_no_event(ledger: Ledger) -> None:
    run = new_run()
    ledger.record(decision(("a", "t", "needs_approval")), run_id=run)
    stop = _skip_updates(ledger.url, run)
    try:
        error = error_of(lambda: ledger.approve("a", run_id=run, approver="ann"))
    finally:
        stop()
    assert (error["layer"], error["code"], error["message"], error["path"]) == (
        "result",
        "INVALID_TRANSITION",
        "call 'a' is awaiting_approval; approve is not possible",
        "$.state",
    )
    assert [kind for _, kind, _, _ in events(ledger, run)] == ["recorded"]
    assert ledger.approve("a", run_id=run, approver="ann").state == "approved"


# ------------------------------------------------------------ commit


def _not_claimed(message: str, hint: str) -> dict[str, Any]:
    return {
        "layer": "result",
        "code": "NOT_CLAIMED",
        "message": message,
        "retryable": False,
        "offset": None,
        "path": "$.call_id",
        "hint": hint,
        "issues": [],
        "call_index": None,
        "call_id": None,
        "tool": None,
        "batch": [],
    }


def test_a_result_is_committed_only_under_the_granted_claim_of_its_own_call(ledger: Ledger) -> None:
    run = new_run()
    ledger.record(decision(("a", "t", "allowed")), run_id=run)
    won = ledger.claim("a", run_id=run, worker="w1")
    lost = ledger.claim("a", run_id=run, worker="w2")
    assert error_of(lambda: ledger.commit(lost, ToolResult("a", "ok", "x"))) == _not_claimed(
        "the claim on 'a' was not granted (leased)", "commit only under a granted claim"
    )
    assert error_of(lambda: ledger.commit(won, ToolResult("b", "ok", "x"))) == _not_claimed(
        "a result for 'b' under the claim on 'a'", "commit each result under its own call's claim"
    )
    assert (ledger.entry("a", run_id=run).state, [k for _, k, _, _ in events(ledger, run)]) == (
        "executing",
        ["recorded", "claimed"],
    )
    assert ledger.commit(won, ToolResult("a", "ok", "x")).state == "committed"


# ------------------------------------------------------------ the ledger itself


def test_a_ledger_knows_its_tools_however_they_are_given(url: str) -> None:
    read, write = Tool(name="read", side_effects=False, version="2"), Tool(name="write")
    for tools in ([read, write], {"read": read, "write": write}, ToolRegistry([read, write])):
        with open_ledger(url, tools=tools) as ledger:  # type: ignore[arg-type]
            assert (ledger.tool("read"), ledger.tool("write"), ledger.tool("other")) == (read, write, None)
            run = new_run()
            entries = ledger.record(decision(("a", "read", "allowed"), ("b", "other", "allowed")), run_id=run)
            assert [(e.tool_version, e.side_effects) for e in entries] == [("2", False), (None, True)]
    with open_ledger(url) as bare:
        assert bare.tool("read") is None
        assert (bare.limits, bare.url) == (DEFAULT_LIMITS, url)
    assert error_of(lambda: open_ledger(url, limits=5)) == {  # type: ignore[arg-type]
        "type": "TypeError",
        "message": "limits must be a decisions.Limits, not int",
    }


@pytest.mark.parametrize(
    ("lease", "expected"),
    [
        (0, ("ValueError", "lease_seconds must be positive, not 0")),
        (-1, ("ValueError", "lease_seconds must be positive, not -1")),
        (float("inf"), ("ValueError", "lease_seconds must be a finite number of seconds, not inf")),
        (True, ("TypeError", "lease_seconds must be a number of seconds, not bool")),
    ],
)
def test_a_lease_must_be_a_positive_number_of_seconds(ledger: Ledger, lease: Any, expected: tuple[str, str]) -> None:
    run = new_run()
    ledger.record(decision(("a", "t", "allowed"), ("b", "t", "allowed")), run_id=run)
    held = ledger.claim("b", run_id=run, worker="w")
    for step in (
        lambda: ledger.claim("a", run_id=run, worker="w", lease_seconds=lease),
        lambda: ledger.claim_next(run, worker="w", lease_seconds=lease),
        lambda: ledger.renew(held, lease_seconds=lease),
    ):
        assert error_of(step) == {"type": expected[0], "message": expected[1]}
    assert [(e.state, e.lease_until) for e in ledger.entries(run)] == [
        ("decided", None),
        ("executing", held.lease_until),
    ]


def test_an_entry_is_read_after_its_own_lapsed_lease_is_settled(ledger: Ledger) -> None:
    run = new_run()
    ledger.record(decision(("a", "t", "allowed"), ("b", "t", "allowed")), run_id=run)
    for call_id in "ab":
        ledger.claim(call_id, run_id=run, worker="lost", lease_seconds=0.05)
    time.sleep(0.1)
    assert ledger.entry("a", run_id=run).state == "unknown"
    assert [(e.call_id, e.kind) for e in ledger.audit(run)][-1] == ("a", "lease_expired")
    assert error_of(lambda: ledger.entry("zz", run_id=run)) == {
        "layer": "domain",
        "code": "UNKNOWN_CALL_ID",
        "message": f"no call 'zz' recorded in run {run!r}",
        "retryable": False,
        "offset": None,
        "path": "$.call_id",
        "hint": "claim only calls the ledger recorded",
        "issues": [],
        "call_index": None,
        "call_id": None,
        "tool": None,
        "batch": [],
    }
    for step, path in (
        (lambda: ledger.entry("a", run_id="x" * 2000), "$.run_id"),
        (lambda: ledger.entry("x" * 2000, run_id=run), "$.call_id"),
    ):
        error = error_of(step)
        assert (error["code"], error["path"]) == ("LEDGER_UNAVAILABLE", path)


def test_a_ledger_refusing_its_arguments_closes_the_connection_it_was_opened_on(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    closed: list[str] = []
    for kind in (SQLiteDatabase, PostgresDatabase):
        close = kind.close

        def counted(self: Any, close: Callable[[Any], None] = close) -> None:
            closed.append(type(self).__name__)
            close(self)

        monkeypatch.setattr(kind, "close", counted)
    assert error_of(lambda: open_ledger(url, limits=5))["type"] == "TypeError"  # type: ignore[arg-type]
    assert closed == ["SQLiteDatabase" if url.startswith("sqlite:") else "PostgresDatabase"]


def test_a_result_json_cannot_hold_fails_a_commit_and_is_refused_by_a_reconcile(url: str) -> None:
    checked: list[Any] = []

    def effects(arguments: Any, result: ToolResult) -> tuple[()]:
        checked.append((arguments, result.call_id))
        return ()

    unstorable = {
        "layer": "result",
        "code": "RESULT_SCHEMA_MISMATCH",
        "message": "not storable as JSON: a value JSON cannot hold",
        "retryable": False,
        "offset": None,
        "path": "$.content",
        "hint": "only finite numbers and valid Unicode text can be stored",
        "issues": [],
        "call_index": None,
        "call_id": None,
        "tool": None,
        "batch": [],
    }
    with open_ledger(url, tools=[Tool(name="t", effects=effects)]) as ledger:
        run = new_run()
        ledger.record(decision(("a", "t", "allowed"), ("b", "t", "allowed"), ("c", "t", "allowed")), run_id=run)
        failed = ledger.commit(ledger.claim("a", run_id=run, worker="w"), ToolResult("a", "ok", {1, 2}))
        assert (failed.state, failed.result, failed.error is not None and failed.error.to_dict()) == (
            "failed",
            None,
            unstorable,
        )
        for call_id in "bc":
            ledger.claim(call_id, run_id=run, worker="lost", lease_seconds=0.05)
        time.sleep(0.1)
        assert error_of(lambda: ledger.reconcile("b", ToolResult("b", "ok", {1, 2}), run_id=run)) == unstorable
        assert ledger.entry("b", run_id=run).state == "unknown"
        # the effects check sees the arguments the call was recorded with
        assert ledger.reconcile("b", ToolResult("b", "ok", "fine"), run_id=run).state == "committed"
        again = ledger.claim("a", run_id=run, worker="w")  # an unstorable result is not retry-safe
        assert (again.granted, again.reason) == (False, "failed")
        error = error_of(lambda: ledger.reconcile("x" * 2000, ToolResult("x" * 2000, "ok", "x"), run_id=run))
        assert (error["code"], error["path"]) == ("LEDGER_UNAVAILABLE", "$.call_id")
    assert checked == [({"path": "b.txt"}, "b")]


def test_a_claim_checks_both_ids(ledger: Ledger) -> None:
    run = new_run()
    ledger.record(decision(("a", "t", "allowed")), run_id=run)
    for step, path in (
        (lambda: ledger.claim("a", run_id="x" * 2000, worker="w"), "$.run_id"),
        (lambda: ledger.claim("x" * 2000, run_id=run, worker="w"), "$.call_id"),
    ):
        error = error_of(step)
        assert (error["code"], error["path"], error["retryable"]) == ("LEDGER_UNAVAILABLE", path, False)
    assert ledger.entry("a", run_id=run).state == "decided"


# ------------------------------------------------------------ record


def _column(url: str, column: str, run: str, call_id: str) -> Any:
    """The raw value of ``column`` in the row of ``(run, call_id)``, read past the ledger."""
    if url.startswith("sqlite:"):
        raw: Any = sqlite3.connect(url[len("sqlite:///") :])
        row = raw.execute(f"SELECT {column} FROM ledger_calls WHERE run_id = ? AND call_id = ?", (run, call_id))
        value = row.fetchone()[0]
    else:
        import psycopg

        raw = psycopg.connect(url, autocommit=True)
        found = raw.execute(f"SELECT {column} FROM ledger_calls WHERE run_id = %s AND call_id = %s", (run, call_id))
        value = found.fetchone()[0]  # type: ignore[index]
    raw.close()
    return value


def test_record_stores_each_verdict_and_the_error_that_decided_it(ledger: Ledger) -> None:
    run = new_run()
    refused = PolicyError("PATH_OUTSIDE_WORKSPACE", "'../x' is outside the workspace", path="$.calls[0].arguments.path")
    verdicts = (
        CallVerdict(call_id="a", status="denied", error=refused),
        CallVerdict(call_id="b", status="approved", reasons=("writes",), approved_by="ann"),
    )
    calls = tuple(ToolCall(call_id=v.call_id, name="t", arguments={"n": i}, index=i) for i, v in enumerate(verdicts))
    ledger.record(ToolDecision(calls=calls, verdicts=verdicts), run_id=run)
    denied, approved = ledger.entries(run)
    assert (denied.state, denied.error is not None and denied.error.to_dict()) == ("denied", refused.to_dict())
    assert (approved.state, approved.error, approved.approved_by) == ("approved", None, "ann")
    for verdict in verdicts:
        assert json.loads(_column(ledger.url, "verdict", run, verdict.call_id)) == to_dict(verdict)
    assert _column(ledger.url, "error", run, "b") is None


def test_record_keeps_each_call_s_id_in_the_audit(ledger: Ledger) -> None:
    run = new_run()
    verdicts = (
        CallVerdict(call_id="a", status="allowed"),
        CallVerdict(call_id="b", status="approved", approved_by="ann"),
    )
    calls = tuple(ToolCall(call_id=v.call_id, name="t", arguments={}, index=i) for i, v in enumerate(verdicts))
    entries = ledger.record(ToolDecision(calls=calls, verdicts=verdicts), run_id=run, policy="p")
    what = {e.call_id: {"tool": "t", "tool_version": None, "digest": e.digest, "policy": "p"} for e in entries}
    assert events(ledger, run) == [
        ("a", "recorded", None, {**what["a"], "verdict": "allowed", "reasons": []}),
        ("b", "recorded", None, {**what["b"], "verdict": "approved", "reasons": []}),
        ("b", "approved", "ann", {**what["b"], "verdict": "approved", "reasons": []}),
    ]


def test_record_names_the_id_it_cannot_hold_at_its_own_path(ledger: Ledger) -> None:
    run = new_run()
    assert error_of(lambda: ledger.record(decision(("a", "t", "allowed")), run_id=5)) == {  # type: ignore[arg-type]
        "type": "TypeError",
        "message": "run id must be a str, not int",
    }
    too_long = "x" * 2000
    for made, run_id, what, path in (
        (decision(("a", "t", "allowed")), too_long, "run id", "$.run_id"),
        (decision(("a", "t", "allowed"), (too_long, "t", "allowed")), run, "call id", "$.calls[1].call_id"),
    ):
        error = error_of(partial(ledger.record, made, run_id=run_id))
        assert (error["layer"], error["code"], error["message"], error["path"], error["retryable"]) == (
            "result",
            "LEDGER_UNAVAILABLE",
            f"the ledger cannot hold a {what} of more than 1024 bytes",
            path,
            False,
        )
    assert ledger.entries(run) == ()


def test_record_of_a_different_call_under_a_recorded_id_is_a_conflict(ledger: Ledger) -> None:
    run = new_run()
    ledger.record(decision(("a", "t", "allowed"), ("b", "t", "allowed")), run_id=run)
    assert error_of(lambda: ledger.record(decision(("b", "t", "allowed"), ("a", "u", "allowed")), run_id=run)) == {
        "layer": "result",
        "code": "LEDGER_CONFLICT",
        "message": f"run {run!r} already holds a different call 'a'",
        "retryable": False,
        "offset": None,
        "path": "$.calls[1].call_id",
        "hint": "give every call of a run its own id",
        "issues": [],
        "call_index": None,
        "call_id": None,
        "tool": None,
        "batch": [],
    }
    assert [(e.call_id, e.tool) for e in ledger.entries(run)] == [("a", "t"), ("b", "t")]


def test_a_batch_is_the_calls_of_one_decision_only(ledger: Ledger) -> None:
    run = new_run()
    ledger.record(decision(("a", "t", "needs_approval"), ("b", "t", "allowed"), batch="all_or_nothing"), run_id=run)
    ledger.record(decision(("c", "t", "allowed"), batch="all_or_nothing"), run_id=run)
    claims = [ledger.claim(c, run_id=run, worker="w") for c in "bc"]
    assert [(c.call_id, c.granted) for c in claims] == [("b", False), ("c", True)]


@pytest.mark.parametrize("what", ["idempotent", "sensitive"])
def test_record_takes_tool_names_as_the_strs_they_hold_and_nothing_else(ledger: Ledger, what: str) -> None:
    class Named(str):
        """A tool name that hashes and compares by identity."""

        __hash__ = object.__hash__

        def __eq__(self, other: object) -> bool:
            return self is other

    run = new_run()
    assert error_of(lambda: ledger.record(decision(("a", "t", "allowed")), run_id=run, **{what: "t"})) == {
        "type": "ValueError",
        "message": f"{what} must be a collection of tool names, not the string 't'",
    }
    for names in ([b"t"], ["t", None]):
        assert error_of(partial(ledger.record, decision(("a", "t", "allowed")), run_id=run, **{what: names})) == {
            "type": "TypeError",
            "message": f"{what} must hold tool names of type str, not {type(names[-1]).__name__}",
        }
    assert ledger.entries(run) == ()
    entry = ledger.record(decision(("a", "t", "allowed")), run_id=run, **{what: [Named("t")]})[0]
    claim = ledger.claim("a", run_id=run, worker="w")
    assert (entry.idempotent, claim.arguments is None) == (what == "idempotent", what == "sensitive")


def test_a_step_of_one_statement_sends_it_on_its_own_on_postgresql(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A claim, a renewal and a commit each send one statement: on PostgreSQL
    it runs on its own, with no BEGIN and COMMIT round trips (SQLite runs
    every step in one write transaction)."""
    url = url_for("postgres", tmp_path)
    import psycopg

    opened: list[str] = []
    step = "open"
    transaction = psycopg.Connection.transaction

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(step)
        return transaction(self, *args, **kwargs)

    monkeypatch.setattr(psycopg.Connection, "transaction", counted)
    with open_ledger(url) as ledger:
        run = new_run()
        step = "record"
        ledger.record(decision(("a", "t", "allowed"), ("b", "t", "allowed")), run_id=run)
        step = "claim"
        claim = ledger.claim("a", run_id=run, worker="w")
        refused = ledger.claim("a", run_id=run, worker="w2")
        step = "claim_next"
        following = ledger.claim_next(run, worker="w")
        step = "renew"
        renewed = ledger.renew(claim)
        step = "commit"
        committed = ledger.commit(renewed, ToolResult("a", "ok", "done"))
    assert (claim.granted, refused.reason, following is not None and following.call_id, committed.state) == (
        True,
        "leased",
        "b",
        "committed",
    )
    # the refused claim then settles a lapsed lease and reads the call's state in one transaction of its own
    assert opened == ["open", "record", "claim"]
