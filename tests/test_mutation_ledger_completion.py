"""Completion checks written out in full: for runs an agent backend really
leaves behind (committed, failed, retry-safe, pending, tampered files), the
exact error ``check_completion`` raises (code, message, path, every issue,
hint) or the entries it returns. A check that lets a claim about a call that
never ran, failed or is still open through, or calls an unfinished run
complete, changes one of these outcomes."""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from decisions import (
    CompletionError,
    Effect,
    FileEffects,
    FinalDecision,
    Ledger,
    Tool,
    ToolResult,
    check_completion,
    open_ledger,
)
from decisions.ledger import Entry, file_digest
from decisions.ledger import sqlite as sqlite_module
from ledger_helpers import decision, new_run

FINAL = FinalDecision(value={"status": "completed"}, text="{}")
HINT = "finish or fix the open work before answering"


def observed_as_claimed(arguments: Mapping[str, Any] | str | None, result: ToolResult) -> Sequence[Effect]:
    """An effect check that trusts the result (it has no workspace to look in)."""
    return result.effects


def tools(root: Path) -> list[Tool]:
    return [
        Tool(name="write_file", effects=FileEffects(str(root))),
        Tool(name="count", side_effects=False),
        Tool(name="upload", effects=observed_as_claimed),
    ]


@pytest.fixture
def ledger(url: str, workspace: Path) -> Iterator[Ledger]:
    with open_ledger(url, tools=tools(workspace)) as opened:
        yield opened


def ran(ledger: Ledger, run: str, result: ToolResult) -> Entry:
    """Claim the call of ``result`` and commit ``result`` under the claim."""
    return ledger.commit(ledger.claim(result.call_id, run_id=run, worker="w"), result)


def wrote(ledger: Ledger, workspace: Path, run: str, call_id: str, name: str, text: str) -> Entry:
    """``call_id`` (write_file) writes ``name`` and commits the checked effect."""
    ledger.record(decision((call_id, "write_file", "allowed"), path=name), run_id=run)
    (workspace / name).write_text(text)
    entry = ran(
        ledger, run, ToolResult(call_id, "ok", "written", effects=(Effect(name, file_digest(workspace / name)),))
    )
    assert entry.state == "committed"
    return entry


def refused(**kwargs: Any) -> CompletionError:
    with pytest.raises(CompletionError) as caught:
        check_completion(FINAL, **kwargs)
    error = caught.value
    assert error.layer == "completion" and error.retryable is False and error.hint == HINT
    first = error.issues[0]
    assert (error.code, error.path) == (first["code"], first["path"])
    return error


def issue(path: str, code: str, expected: str, detail: str) -> dict[str, str]:
    return {"path": path, "code": code, "expected": expected, "detail": detail}


def suite_passes(value: Any, entries: Sequence[Entry]) -> str:
    """A criterion that names what is missing."""
    return "tests did not run"


DONE = "a file a committed call's checked effect changed"


def test_a_run_with_every_kind_of_open_work_names_each(ledger: Ledger, workspace: Path) -> None:
    run = new_run()
    wrote(ledger, workspace, run, "w", "a.txt", "hello")
    ledger.record(
        decision(
            ("ok", "count", "allowed"),
            ("again", "count", "allowed"),
            ("final", "count", "allowed"),
            ("unseen", "write_file", "allowed"),
            ("half", "write_file", "allowed"),
            ("open", "count", "allowed"),
        ),
        run_id=run,
    )
    # a committed result that would have been safe to retry is over all the same
    assert ran(ledger, run, ToolResult("ok", "ok", 1, retry_safe=True)).state == "committed"
    # a tool error the result says is safe to retry: a worker may claim it again
    assert ran(ledger, run, ToolResult("again", "error", "busy", retry_safe=True)).state == "failed"
    assert ran(ledger, run, ToolResult("final", "error", "no such file")).state == "failed"
    # retry_safe, but its effect was not observed: not retryable, so it is over
    missing = Effect("unseen.txt", "sha256:" + "0" * 64)
    assert ran(ledger, run, ToolResult("unseen", "ok", "", retry_safe=True, effects=(missing,))).state == "failed"
    # a partial result keeps the effect it did make, but a failed call backs no claim
    (workspace / "half.txt").write_text("half")
    half = Effect("half.txt", file_digest(workspace / "half.txt"))
    entry = ran(ledger, run, ToolResult("half", "partial", "", effects=(half,)))
    assert (entry.state, entry.effects) == ("failed", (half,))
    (workspace / "half.txt").write_text("changed by someone else")  # not a file the answer is held to

    error = refused(
        ledger=ledger,
        run_id=run,
        evidence=["w", "final", "zz", 7, "ok"],
        changed_files=["a.txt", "b.txt", ""],
        criteria=[lambda v, e: True, suite_passes],
    )
    assert error.issues == (
        issue("$.evidence[1]", "EVIDENCE_NOT_FOUND", "a committed call of this run", "'final': failed, not committed"),
        issue("$.evidence[2]", "EVIDENCE_NOT_FOUND", "a committed call of this run", "'zz': not a call of this run"),
        issue("$.evidence[3]", "EVIDENCE_NOT_FOUND", "a committed call of this run", "7: not a call of this run"),
        issue("$.changed_files", "CLAIM_NOT_BACKED", DONE, "'' is not a path"),
        issue("$.changed_files", "CLAIM_NOT_BACKED", DONE, "'b.txt' was not changed by any committed call"),
        issue(
            "$.calls[2]",
            "SIDE_EFFECTS_PENDING",
            "every call ended",
            "'again' (count) is failed and may be claimed again (a retry-safe failure)",
        ),
        issue("$.calls[6]", "SIDE_EFFECTS_PENDING", "every call ended", "'open' (count) is decided"),
        issue("$.criteria[1]", "ACCEPTANCE_FAILED", "suite_passes to pass", "suite_passes: tests did not run"),
    )
    assert error.message == (
        "the task is not complete: EVIDENCE_NOT_FOUND: 'final': failed, not committed; "
        "EVIDENCE_NOT_FOUND: 'zz': not a call of this run; EVIDENCE_NOT_FOUND: 7: not a call of this run; "
        "CLAIM_NOT_BACKED: '' is not a path; CLAIM_NOT_BACKED: 'b.txt' was not changed by any committed call"
        " (and 3 more)"
    )
    # the failed calls are over once the retry-safe one is settled and the open one runs
    assert ran(ledger, run, ToolResult("again", "ok", 2)).state == "committed"
    assert ran(ledger, run, ToolResult("open", "ok", 3)).state == "committed"
    entries = check_completion(FINAL, ledger=ledger, run_id=run, evidence=["w", "ok", "again"], changed_files=["a.txt"])
    assert [(e.call_id, e.state) for e in entries] == [
        ("w", "committed"),
        ("ok", "committed"),
        ("again", "committed"),
        ("final", "failed"),
        ("unseen", "failed"),
        ("half", "failed"),
        ("open", "committed"),
    ]


@pytest.mark.parametrize("count", [5, 6])
def test_the_message_names_five_issues_and_counts_the_rest(ledger: Ledger, count: int) -> None:
    run = new_run()
    ledger.record(decision(("a", "count", "allowed")), run_id=run)
    ran(ledger, run, ToolResult("a", "ok", 1))
    error = refused(ledger=ledger, run_id=run, evidence=[f"e{i}" for i in range(count)])
    named = "; ".join(f"EVIDENCE_NOT_FOUND: 'e{i}': not a call of this run" for i in range(5))
    more = "" if count == 5 else " (and 1 more)"
    assert error.message == f"the task is not complete: {named}{more}"
    assert [i["path"] for i in error.issues] == [f"$.evidence[{i}]" for i in range(count)]


def test_a_file_the_run_changed_must_be_listed(ledger: Ledger, workspace: Path) -> None:
    run = new_run()
    wrote(ledger, workspace, run, "a", "a.txt", "one")
    wrote(ledger, workspace, run, "b", "b.txt", "two")
    error = refused(ledger=ledger, run_id=run, evidence=["a", "b"], changed_files=["./b.txt"])
    assert error.issues == (
        issue(
            "$.changed_files", "CLAIM_NOT_BACKED", "every file the run changed", "'a.txt' was changed but is not listed"
        ),
    )
    check_completion(FINAL, ledger=ledger, run_id=run, changed_files=("b.txt", "src/../a.txt"))


def test_changed_files_may_be_a_generator(ledger: Ledger, workspace: Path) -> None:
    run = new_run()
    wrote(ledger, workspace, run, "a", "a.txt", "one")
    check_completion(FINAL, ledger=ledger, run_id=run, changed_files=(p for p in ["a.txt"]))


@pytest.mark.parametrize("change", ["edited", "deleted", "replaced by a directory", "linked outside"])
def test_a_file_changed_after_its_result_is_named(ledger: Ledger, workspace: Path, tmp_path: Path, change: str) -> None:
    run = new_run()
    ledger.record(decision(("n", "count", "allowed")), run_id=run)  # calls that wrote nothing come first
    ran(ledger, run, ToolResult("n", "ok", 1))
    wrote(ledger, workspace, run, "a", "a.txt", "hello")
    digest = file_digest(workspace / "a.txt")
    target = workspace / "a.txt"
    target.unlink()
    if change == "edited":
        target.write_text("tampered")
        now = f"has {file_digest(target)}"
    elif change == "deleted":
        now = "missing"
    elif change == "replaced by a directory":
        target.mkdir()
        now = "has something that is not a file"
    else:  # the same bytes, but outside the workspace: not the file the call wrote
        (tmp_path / "outside.txt").write_text("hello")
        target.symlink_to(tmp_path / "outside.txt")
        now = "missing"
    error = refused(ledger=ledger, run_id=run, evidence=["a"], changed_files=["a.txt"])
    assert error.issues == (
        issue(
            "$.changed_files",
            "CLAIM_NOT_BACKED",
            "the files as the run left them",
            f"'a.txt' {now}, not what 'a' left it ({digest})",
        ),
    )


def test_a_deleted_file_must_stay_deleted(ledger: Ledger, workspace: Path) -> None:
    run = new_run()
    ledger.record(decision(("rm", "write_file", "allowed"), path="gone.txt"), run_id=run)
    assert ran(ledger, run, ToolResult("rm", "ok", "", effects=(Effect("gone.txt", None),))).state == "committed"
    check_completion(FINAL, ledger=ledger, run_id=run, evidence=["rm"], changed_files=["gone.txt"])
    (workspace / "gone.txt").write_text("back")
    error = refused(ledger=ledger, run_id=run, changed_files=["gone.txt"])
    detail = f"'gone.txt' has {file_digest(workspace / 'gone.txt')}, not what 'rm' left it (deleted)"
    assert error.issues == (issue("$.changed_files", "CLAIM_NOT_BACKED", "the files as the run left them", detail),)


def test_each_file_is_held_to_its_last_committed_write(ledger: Ledger, workspace: Path) -> None:
    run = new_run()
    wrote(ledger, workspace, run, "a1", "a.txt", "first")
    wrote(ledger, workspace, run, "b1", "b.txt", "first")
    wrote(ledger, workspace, run, "a2", "a.txt", "second")
    check_completion(FINAL, ledger=ledger, run_id=run, changed_files=["a.txt", "b.txt"])
    (workspace / "b.txt").write_text("tampered")
    (workspace / "a.txt").write_text("first")  # what a1 left, no longer what is there
    error = refused(ledger=ledger, run_id=run, changed_files=["a.txt", "b.txt"])
    assert [i["detail"].split(",")[0] for i in error.issues] == [
        f"'a.txt' has {file_digest(workspace / 'a.txt')}",
        f"'b.txt' has {file_digest(workspace / 'b.txt')}",
    ]
    assert [i["detail"].split("what ")[1].split(" ")[0] for i in error.issues] == ["'a2'", "'b1'"]


def test_files_are_looked_at_only_under_a_workspace_the_ledger_knows(url: str, workspace: Path) -> None:
    run = new_run()
    with open_ledger(url, tools=tools(workspace)) as ledger:
        wrote(ledger, workspace, run, "a", "a.txt", "hello")
        ledger.record(decision(("up", "upload", "allowed"), path="remote.txt"), run_id=run)
        # an effect check with no workspace: what it observed is not looked at again
        ran(ledger, run, ToolResult("up", "ok", "", effects=(Effect("remote.txt", "sha256:" + "1" * 64),)))
        check_completion(FINAL, ledger=ledger, run_id=run, changed_files=["a.txt", "remote.txt"])
    (workspace / "a.txt").write_text("tampered")
    with open_ledger(url) as unaware:  # no tools: nothing says where a.txt is
        entries = check_completion(FINAL, ledger=unaware, run_id=run, changed_files=["a.txt", "remote.txt"])
        assert [e.call_id for e in entries] == ["a", "up"]


def test_an_effect_path_that_cannot_be_looked_up_is_missing(url: str, workspace: Path) -> None:
    run = new_run()
    # written where the call's tool trusted its result, then checked where write_file looks at files
    with open_ledger(url, tools=[Tool(name="write_file", effects=observed_as_claimed)]) as trusting:
        trusting.record(decision(("a", "write_file", "allowed")), run_id=run)
        ran(trusting, run, ToolResult("a", "ok", "", effects=(Effect("a\x00.txt", "sha256:" + "2" * 64),)))
    with open_ledger(url, tools=tools(workspace)) as ledger:
        error = refused(ledger=ledger, run_id=run, changed_files=["a\x00.txt"])
    detail = f"'a\\x00.txt' missing, not what 'a' left it (sha256:{'2' * 64})"
    assert error.issues == (issue("$.changed_files", "CLAIM_NOT_BACKED", "the files as the run left them", detail),)


class _Broken:
    @property
    def __name__(self) -> str:  # type: ignore[override]
        raise RuntimeError("no name")

    def __call__(self, value: object, entries: object) -> object:
        return None


@pytest.mark.parametrize(
    ("criterion", "detail"),
    [
        (lambda v, e: 1 / 0, "<lambda>: raised ZeroDivisionError"),
        (lambda v, e: False, "<lambda>: returned False"),
        (lambda v, e: 0, "<lambda>: returned int, not True, None, False or a reason"),
        (lambda v, e: "", "<lambda>: "),
    ],
)
def test_each_criterion_is_named_at_its_place(ledger: Ledger, criterion: Any, detail: str) -> None:
    run = new_run()
    seen: list[tuple[Any, tuple[str, ...]]] = []

    def records(value: Any, entries: Sequence[Entry]) -> None:
        seen.append((value, tuple(e.call_id for e in entries)))

    ledger.record(decision(("a", "count", "allowed")), run_id=run)
    ran(ledger, run, ToolResult("a", "ok", 1))
    error = refused(ledger=ledger, run_id=run, criteria=[records, _Broken(), criterion])
    name = detail.split(":")[0]
    assert error.issues == (issue("$.criteria[2]", "ACCEPTANCE_FAILED", f"{name} to pass", detail),)
    assert seen == [({"status": "completed"}, ("a",))]


def test_an_empty_run_is_complete(ledger: Ledger) -> None:
    assert check_completion(FINAL, ledger=ledger, run_id=new_run(), changed_files=[]) == ()


def test_a_denied_call_is_not_open_work(ledger: Ledger) -> None:
    run = new_run()
    ledger.record(decision(("no", "write_file", "denied"), ("yes", "count", "allowed")), run_id=run)
    ran(ledger, run, ToolResult("yes", "ok", 1))
    entries = check_completion(FINAL, ledger=ledger, run_id=run, evidence=["yes"])
    assert [(e.call_id, e.state) for e in entries] == [("no", "denied"), ("yes", "committed")]
    assert refused(ledger=ledger, run_id=run, evidence=["no"]).issues == (
        issue("$.evidence[0]", "EVIDENCE_NOT_FOUND", "a committed call of this run", "'no': denied, not committed"),
    )


def test_the_run_is_read_as_of_the_check(ledger: Ledger) -> None:
    """The check reads the ledger when it runs: an answer given before the
    last result came in is refused, the same answer after it passes."""
    run = new_run()
    ledger.record(decision(("a", "count", "allowed")), run_id=run)
    claim = ledger.claim("a", run_id=run, worker="w")
    error = refused(ledger=ledger, run_id=run, evidence=["a"])
    assert [i["detail"] for i in error.issues] == ["'a': executing, not committed", "'a' (count) is executing"]
    ledger.commit(claim, ToolResult("a", "ok", 1))
    assert [e.state for e in check_completion(FINAL, ledger=ledger, run_id=run, evidence=["a"])] == ["committed"]


@pytest.mark.parametrize(
    ("final", "kwargs", "message"),
    [
        (decision(("a", "count", "allowed")), {}, "check_completion takes a FinalDecision"),
        (FINAL, {"evidence": "a"}, "evidence and changed_files take a collection of call ids and of paths"),
        (FINAL, {"changed_files": "a.txt"}, "evidence and changed_files take a collection of call ids and of paths"),
    ],
)
def test_what_check_completion_takes(ledger: Ledger, final: Any, kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(TypeError, match=message):
        check_completion(final, ledger=ledger, run_id=new_run(), **kwargs)


def test_writes_that_finish_at_one_instant_count_in_recorded_order(
    tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The database's clock may give two commits one time: the call recorded
    later is then the last write of the file."""
    monkeypatch.setattr(sqlite_module.time, "time", lambda: 1_800_000_000.0)
    run = new_run()
    with open_ledger(f"sqlite:///{tmp_path / 'still.db'}", tools=tools(workspace)) as ledger:
        first = wrote(ledger, workspace, run, "a", "a.txt", "first")
        second = wrote(ledger, workspace, run, "b", "a.txt", "second")
        assert first.finished_at == second.finished_at
        check_completion(FINAL, ledger=ledger, run_id=run, changed_files=["a.txt"])
        (workspace / "a.txt").write_text("first")
        error = refused(ledger=ledger, run_id=run, changed_files=["a.txt"])
        assert [i["detail"].split("what ")[1] for i in error.issues] == [f"'b' left it ({second.effects[0].digest})"]


def test_the_write_that_finished_last_counts_not_the_one_recorded_last(ledger: Ledger, workspace: Path) -> None:
    run = new_run()
    ledger.record(decision(("a", "write_file", "allowed"), ("b", "write_file", "allowed"), path="f.txt"), run_id=run)
    first, second = (ledger.claim(c, run_id=run, worker=c) for c in ("a", "b"))
    for claim, text in ((second, "from b"), (first, "from a")):  # b finishes first, a overwrites it
        (workspace / "f.txt").write_text(text)
        effect = Effect("f.txt", file_digest(workspace / "f.txt"))
        assert ledger.commit(claim, ToolResult(claim.call_id, "ok", "", effects=(effect,))).state == "committed"
    check_completion(FINAL, ledger=ledger, run_id=run, evidence=["a", "b"], changed_files=["f.txt"])


def test_a_criterion_with_no_name_is_named_by_its_place(ledger: Ledger) -> None:
    error = refused(ledger=ledger, run_id=new_run(), criteria=[lambda v, e: None, functools.partial(suite_passes)])
    assert error.issues == (
        issue("$.criteria[1]", "ACCEPTANCE_FAILED", "criterion 1 to pass", "criterion 1: tests did not run"),
    )
