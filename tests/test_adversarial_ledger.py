"""The ledger against what breaks its promises: results that say they are safe
to retry after a partial effect, a host's reconcile that claims effects nobody
looked at, two steps racing on one call or one call id, text PostgreSQL cannot
hold, and a closed connection. Every test runs on SQLite and PostgreSQL (see
``ledger_helpers``)."""

from __future__ import annotations

import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from decisions import (
    CallVerdict,
    CompletionError,
    Effect,
    FileEffects,
    FinalDecision,
    Ledger,
    ResultError,
    Run,
    Tool,
    ToolCall,
    ToolDecision,
    ToolResult,
    check_completion,
    open_ledger,
)
from decisions.ledger import file_digest
from ledger_helpers import decision, new_run

FINAL = FinalDecision(value="done", text="done")


@pytest.fixture
def ledger(url: str, workspace: Path) -> Iterator[Ledger]:
    tools = [
        Tool(
            name="write_file",
            side_effects=True,
            effects=FileEffects(str(workspace)),
            returns={"type": "object", "properties": {"bytes": {"type": "integer"}}, "required": ["bytes"]},
        )
    ]
    with open_ledger(url, tools=tools) as opened:
        yield opened


def lost(ledger: Ledger, call_id: str = "a") -> str:
    """A run whose one write_file call lost its worker: ``unknown``."""
    run = new_run()
    ledger.record(decision((call_id, "write_file", "allowed")), run_id=run)
    ledger.claim(call_id, run_id=run, worker="lost", lease_seconds=0.05)
    deadline = time.monotonic() + 30
    while ledger.entry(call_id, run_id=run).state != "unknown":
        assert time.monotonic() < deadline, "the lease never expired"
        time.sleep(0.05)
    return run


# ---------------------------------------------------------------- what may be claimed again


@pytest.mark.parametrize(
    "result, code",
    [
        (ToolResult("a", "partial", {"bytes": 1}, retry_safe=True, effects=(Effect("a.txt", None),)), "PARTIAL_EFFECT"),
        (
            ToolResult("a", "ok", {"bytes": 1}, retry_safe=True, effects=(Effect("a.txt", "sha256:" + "0" * 64),)),
            "EFFECT_NOT_OBSERVED",
        ),
        (
            ToolResult("a", "ok", "not an object", retry_safe=True, effects=(Effect("a.txt", None),)),
            "RESULT_SCHEMA_MISMATCH",
        ),
    ],
    ids=["partial", "effect-not-observed", "schema-mismatch"],
)
def test_a_failure_that_is_not_retryable_is_never_claimed_again(ledger: Ledger, result: ToolResult, code: str) -> None:
    run = new_run()
    ledger.record(decision(("a", "write_file", "allowed")), run_id=run)
    failed = ledger.commit(ledger.claim("a", run_id=run, worker="w1"), result)
    assert failed.state == "failed" and failed.error is not None and failed.error.code == code
    again = ledger.claim("a", run_id=run, worker="w2")
    assert not again.granted and again.reason == "failed" and again.attempt == 1
    assert ledger.claim_next(run, worker="w2") is None


def test_a_reconciled_partial_result_is_never_claimed_again(ledger: Ledger) -> None:
    run = lost(ledger)
    partial = ToolResult("a", "partial", None, retry_safe=True, effects=(Effect("a.txt", None),))
    settled = ledger.reconcile("a", partial, run_id=run)
    assert settled.state == "failed" and settled.error is not None and settled.error.code == "PARTIAL_EFFECT"
    assert not ledger.claim("a", run_id=run, worker="w2").granted


# ---------------------------------------------------------------- reconcile checks the result


def test_a_reconciled_result_is_checked_like_a_commit(ledger: Ledger, workspace: Path) -> None:
    never_written = ToolResult("a", "ok", {"bytes": 1}, effects=(Effect("a.txt", "sha256:" + "0" * 64),))
    run = lost(ledger)
    settled = ledger.reconcile("a", never_written, run_id=run, actor="ops")
    assert settled.state == "failed" and settled.error is not None and settled.error.code == "EFFECT_NOT_OBSERVED"
    assert settled.effects == ()
    with pytest.raises(CompletionError) as caught:
        check_completion(FINAL, ledger=ledger, run_id=run, evidence=["a"], changed_files=["a.txt"])
    assert caught.value.code == "EVIDENCE_NOT_FOUND"

    (workspace / "a.txt").write_text("hello")
    written = Effect("a.txt", file_digest(workspace / "a.txt"))
    run = lost(ledger)
    mismatch = ledger.reconcile("a", ToolResult("a", "ok", "not an object", effects=(written,)), run_id=run)
    assert mismatch.state == "failed" and mismatch.error is not None
    assert mismatch.error.code == "RESULT_SCHEMA_MISMATCH"

    run = lost(ledger)
    done = ledger.reconcile("a", ToolResult("a", "ok", {"bytes": 5}, effects=(written,)), run_id=run)
    assert done.state == "committed" and done.effects == (written,)
    check_completion(FINAL, ledger=ledger, run_id=run, evidence=["a"], changed_files=["a.txt"])


def test_reconcile_takes_a_result_or_retry(ledger: Ledger) -> None:
    run = lost(ledger)
    with pytest.raises(TypeError):
        ledger.reconcile("a", "ok", run_id=run)  # type: ignore[arg-type]
    assert ledger.entry("a", run_id=run).state == "unknown"


# ---------------------------------------------------------------- racing steps


def race(first: Callable[[], Any], second: Callable[[], Any]) -> list[Any]:
    """Run both at once; each one's value or the code of its ResultError."""
    barrier = threading.Barrier(2)
    out: list[Any] = [None, None]

    def body(index: int, step: Callable[[], Any]) -> None:
        barrier.wait()
        try:
            out[index] = step()
        except ResultError as error:
            out[index] = error.code

    threads = [threading.Thread(target=body, args=(i, s)) for i, s in enumerate((first, second))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return out


def test_an_approval_and_a_rejection_racing_one_call_are_not_both_taken(url: str) -> None:
    with open_ledger(url) as one, open_ledger(url) as two:
        for _ in range(30):
            run = new_run()
            one.record(decision(("a", "write_file", "needs_approval")), run_id=run)
            approved, rejected = race(
                lambda run=run: one.approve("a", run_id=run, approver="x").state,
                lambda run=run: two.reject("a", run_id=run, approver="y").state,
            )
            final = one.entry("a", run_id=run).state
            assert sorted([approved, rejected]) == sorted([final, "INVALID_TRANSITION"])
            kinds = [e.kind for e in one.audit(run)]
            assert kinds == ["recorded", "approve" if final == "approved" else "reject"]


def test_two_runs_reserving_one_call_id_at_once_do_not_both_decide_it(url: str) -> None:
    with open_ledger(url) as one, open_ledger(url) as two:
        for _ in range(30):
            run_id = new_run()
            here, there = Run(run_id, ledger=one), Run(run_id, ledger=two)
            seen = race(lambda here=here: here.claim(["a", "b"]), lambda there=there: there.claim(["a", "b"]))
            assert seen.count(()) == 1, seen  # the other saw some of the ids decided


def test_decisions_recorded_at_once_into_one_run_take_their_own_places(url: str) -> None:
    with open_ledger(url) as one, open_ledger(url) as two:
        for _ in range(30):
            run = new_run()
            one.record(decision(("a", "read_file", "allowed")), run_id=run)
            race(
                lambda run=run: one.record(decision(("b", "read_file", "allowed")), run_id=run),
                lambda run=run: two.record(decision(("c", "read_file", "allowed")), run_id=run),
            )
            assert sorted(e.seq for e in one.entries(run)) == [0, 1, 2]


# ---------------------------------------------------------------- what the databases can hold


@pytest.mark.parametrize(
    "step",
    [
        lambda ledger, run: ledger.record(decision(("a\x00b", "write_file", "allowed")), run_id=run),
        lambda ledger, run: ledger.record(decision(("a", "write_file", "allowed")), run_id=run + "\x00"),
        lambda ledger, run: ledger.claim("a", run_id=run, worker="w\x00"),
        lambda ledger, run: ledger.entry("a\x00", run_id=run),
        lambda ledger, run: Run(run, ledger=ledger).claim(["a\x00"]),
    ],
    ids=["call-id", "run-id", "worker", "entry", "reserve"],
)
def test_a_nul_character_in_ledger_text_is_typed_on_both_databases(
    ledger: Ledger, step: Callable[[Ledger, str], Any]
) -> None:
    run = new_run()
    ledger.record(decision(("a", "write_file", "allowed")), run_id=run)
    with pytest.raises(ResultError) as caught:
        step(ledger, run)
    assert caught.value.code == "LEDGER_UNAVAILABLE" and not caught.value.retryable
    assert [e.call_id for e in ledger.entries(run)] == ["a"]


def test_nul_in_arguments_is_stored_as_json(ledger: Ledger) -> None:
    run = new_run()
    call = ToolCall(call_id="a", name="write_file", arguments={"path": "a\x00.txt"})
    ledger.record(ToolDecision(calls=(call,), verdicts=(CallVerdict(call_id="a", status="allowed"),)), run_id=run)
    assert ledger.claim("a", run_id=run, worker="w").arguments == {"path": "a\x00.txt"}


def test_a_closed_ledger_is_unavailable(url: str) -> None:
    ledger = open_ledger(url)
    ledger.close()
    with pytest.raises(ResultError) as caught:
        ledger.entries(new_run())
    assert caught.value.code == "LEDGER_UNAVAILABLE"


def _foreign_tables_url(url: str, tmp_path: Path, change: str) -> str:
    """A ledger of its own (a fresh SQLite file, a fresh PostgreSQL schema)
    whose ``ledger_calls`` someone else then changed with ``change`` (SQL)."""
    if url.startswith("sqlite:"):
        path = tmp_path / "foreign.db"
        own = f"sqlite:///{path}"
        open_ledger(own).close()
        with sqlite3.connect(path) as conn:
            conn.execute(change)
        return own
    import psycopg

    schema = f"foreign_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    own = url + ("&" if "?" in url else "?") + f"options=-csearch_path%3D{schema}"
    open_ledger(own).close()
    with psycopg.connect(own, autocommit=True) as conn:
        conn.execute(change)
    return own


@pytest.mark.parametrize(
    "change",
    [
        "ALTER TABLE ledger_calls ADD COLUMN owner_team TEXT NOT NULL DEFAULT 'x' CHECK (owner_team <> 'x')",
        "CREATE UNIQUE INDEX ledger_calls_one_per_run ON ledger_calls (run_id, tool)",
    ],
    ids=["check-constraint", "unique-index"],
)
def test_tables_of_another_shape_are_typed_on_both_databases(url: str, tmp_path: Path, change: str) -> None:
    """A constraint the ledger does not know refuses its statements: a typed,
    not retryable ``LEDGER_UNAVAILABLE``, never the driver's exception, and
    nothing half written."""
    run = new_run()
    with open_ledger(_foreign_tables_url(url, tmp_path, change)) as ledger:
        if "UNIQUE" in change:
            ledger.record(decision(("a", "read_file", "allowed")), run_id=run)
        with pytest.raises(ResultError) as caught:
            ledger.record(decision(("b", "read_file", "allowed"), ("c", "read_file", "allowed")), run_id=run)
        assert caught.value.code == "LEDGER_UNAVAILABLE" and not caught.value.retryable
        assert [e.call_id for e in ledger.entries(run)] == (["a"] if "UNIQUE" in change else [])


def test_a_missing_column_is_typed_on_both_databases(url: str, tmp_path: Path) -> None:
    run = new_run()
    with open_ledger(_foreign_tables_url(url, tmp_path, "ALTER TABLE ledger_calls DROP COLUMN verdict")) as ledger:
        with pytest.raises(ResultError) as caught:
            ledger.record(decision(("a", "read_file", "allowed")), run_id=run)
        assert caught.value.code == "LEDGER_UNAVAILABLE" and "verdict" in caught.value.message


# ---------------------------------------------------------------- completion


def written(ledger: Ledger, workspace: Path, run: str, call_id: str, text: str) -> None:
    """``call_id`` writes ``a.txt`` and commits with the checked effect."""
    ledger.record(decision((call_id, "write_file", "allowed"), path="a.txt"), run_id=run)
    (workspace / "a.txt").write_text(text)
    effect = Effect("a.txt", file_digest(workspace / "a.txt"))
    result = ToolResult(call_id, "ok", {"bytes": len(text)}, effects=(effect,))
    assert ledger.commit(ledger.claim(call_id, run_id=run, worker="w"), result).state == "committed"


@pytest.mark.parametrize("change", ["edited", "deleted", "replaced by a directory"])
def test_a_file_changed_after_its_result_does_not_back_the_answer(ledger: Ledger, workspace: Path, change: str) -> None:
    run = new_run()
    written(ledger, workspace, run, "a", "hello")
    check_completion(FINAL, ledger=ledger, run_id=run, evidence=["a"], changed_files=["a.txt"])
    target = workspace / "a.txt"
    if change == "edited":
        target.write_text("tampered")
    else:
        target.unlink()
    if change == "replaced by a directory":
        target.mkdir()
    with pytest.raises(CompletionError) as caught:
        check_completion(FINAL, ledger=ledger, run_id=run, evidence=["a"], changed_files=["a.txt"])
    assert caught.value.code == "CLAIM_NOT_BACKED" and "not what 'a' left it" in caught.value.issues[0]["detail"]


def test_the_last_committed_write_of_a_file_is_what_counts(ledger: Ledger, workspace: Path) -> None:
    run = new_run()
    written(ledger, workspace, run, "a", "first")
    written(ledger, workspace, run, "b", "second")
    check_completion(FINAL, ledger=ledger, run_id=run, evidence=["a", "b"], changed_files=["a.txt"])


@pytest.mark.parametrize("outcome", [0, [], 0.0, "", {"ok": False}], ids=repr)
def test_a_criterion_passes_only_with_true_or_none(ledger: Ledger, outcome: object) -> None:
    run = new_run()
    with pytest.raises(CompletionError) as caught:
        check_completion(FINAL, ledger=ledger, run_id=run, criteria=[lambda v, e: outcome])
    assert caught.value.code == "ACCEPTANCE_FAILED"
    check_completion(FINAL, ledger=ledger, run_id=run, criteria=[lambda v, e: True, lambda v, e: None])


@pytest.mark.parametrize("kwargs", [{"evidence": "a"}, {"changed_files": "a.txt"}])
def test_completion_takes_collections_not_one_string(ledger: Ledger, kwargs: dict[str, Any]) -> None:
    with pytest.raises(TypeError):
        check_completion(FINAL, ledger=ledger, run_id=new_run(), **kwargs)


def test_a_lock_held_elsewhere_is_waited_for_only_up_to_the_timeout(url: str) -> None:
    run = new_run()
    with open_ledger(url, timeout=0.5) as ledger:
        ledger.record(decision(("a", "read_file", "allowed")), run_id=run)
        if url.startswith("sqlite:"):
            holder: Any = sqlite3.connect(url[len("sqlite:///") :], isolation_level=None)
            holder.execute("BEGIN IMMEDIATE")
        else:
            import psycopg

            holder = psycopg.connect(url)
            holder.execute("SELECT 1 FROM ledger_calls WHERE run_id = %s FOR UPDATE", (run,))
        release = threading.Timer(10, holder.rollback)  # a claim that waits for it is granted then
        release.start()
        try:
            with pytest.raises(ResultError) as caught:
                ledger.claim("a", run_id=run, worker="w")
            assert caught.value.code == "LEDGER_UNAVAILABLE" and caught.value.retryable
        finally:
            release.cancel()
            holder.rollback()
            holder.close()
        assert ledger.claim("a", run_id=run, worker="w").granted


# ---------------------------------------------------------------- the host's checks fail closed


class _Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no text")


class _LoudReason(str):
    """A reason whose overrides raise: only its text counts."""

    def __str__(self) -> str:
        raise RuntimeError("no text")

    def __format__(self, spec: str) -> str:
        raise RuntimeError("no format")


class _BadName:
    """A criterion whose name cannot be read."""

    @property
    def __name__(self) -> str:  # type: ignore[override]
        raise RuntimeError("no name")

    def __call__(self, value: object, entries: object) -> object:
        return _LoudReason("not yet")


def test_a_criterion_answer_or_name_that_cannot_be_read_fails_closed(ledger: Ledger) -> None:
    with pytest.raises(CompletionError) as caught:
        check_completion(FINAL, ledger=ledger, run_id=new_run(), criteria=[_BadName()])  # type: ignore[list-item]
    assert caught.value.code == "ACCEPTANCE_FAILED"
    assert caught.value.issues[0]["detail"] == "criterion 0: not yet"


@pytest.mark.parametrize(
    "check",
    [
        lambda a, r: 1 / 0,  # raises something other than ResultError
        lambda a, r: 42,  # not iterable
        lambda a, r: [_Unprintable()],  # not Effect objects
    ],
    ids=["raises", "not-iterable", "not-effects"],
)
def test_an_effect_check_that_breaks_fails_the_result(url: str, check: Any) -> None:
    with open_ledger(url, tools=[Tool(name="write_file", side_effects=True, effects=check)]) as opened:
        run = new_run()
        opened.record(decision(("a", "write_file", "allowed")), run_id=run)
        result = ToolResult("a", "ok", None, effects=(Effect("a.txt", None),))
        failed = opened.commit(opened.claim("a", run_id=run, worker="w"), result)
    assert failed.state == "failed" and failed.error is not None and failed.error.code == "EFFECT_NOT_OBSERVED"


# ---------------------------------------------------------------- effect paths are resolved


@pytest.mark.parametrize("spelling", ["./a.txt", "src/../a.txt", ".//a.txt", "ABSOLUTE"])
def test_a_path_argument_matches_its_effect_however_it_is_spelt(ledger: Ledger, workspace: Path, spelling: str) -> None:
    raw = str(workspace / "a.txt") if spelling == "ABSOLUTE" else spelling
    (workspace / "src").mkdir()
    run = new_run()
    ledger.record(decision(("a", "write_file", "allowed"), path=raw), run_id=run)
    (workspace / "a.txt").write_text("hello")
    result = ToolResult("a", "ok", {"bytes": 5}, effects=(Effect("a.txt", file_digest(workspace / "a.txt")),))
    assert ledger.commit(ledger.claim("a", run_id=run, worker="w"), result).state == "committed"


@pytest.mark.parametrize("spelling", ["../ws2/a.txt", "OUTSIDE", "b.txt", "a.txt/../b.txt"])
def test_a_path_argument_elsewhere_still_fails_the_effect_check(ledger: Ledger, workspace: Path, spelling: str) -> None:
    other = workspace.parent / "ws2"
    other.mkdir()
    (other / "a.txt").write_text("hello")
    raw = str(other / "a.txt") if spelling == "OUTSIDE" else spelling
    run = new_run()
    ledger.record(decision(("a", "write_file", "allowed"), path=raw), run_id=run)
    (workspace / "a.txt").write_text("hello")
    result = ToolResult("a", "ok", {"bytes": 5}, effects=(Effect("a.txt", file_digest(workspace / "a.txt")),))
    failed = ledger.commit(ledger.claim("a", run_id=run, worker="w"), result)
    assert failed.state == "failed" and failed.error is not None and failed.error.code == "PARTIAL_EFFECT"


def test_a_ledger_of_another_schema_version_is_not_retryable(url: str, tmp_path: Path) -> None:
    """Waiting does not change the version a ledger was written by."""
    change = "UPDATE ledger_meta SET value = '999' WHERE key = 'schema_version'"
    with pytest.raises(ResultError) as caught:
        open_ledger(_foreign_tables_url(url, tmp_path, change))
    assert caught.value.code == "LEDGER_UNAVAILABLE" and not caught.value.retryable
    assert "schema version 999" in caught.value.message
