"""The ledger against what it is handed and could not hold the same way on
both databases, or could write and not read back: deep results and arguments.
Every ledger test runs on SQLite and PostgreSQL."""

from __future__ import annotations

import io
import json
import random
import string
import uuid
from collections.abc import Callable
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
from decisions._payload import canonical_json, dumps, strict_loads
from decisions.cli import main
from decisions.ledger import file_digest
from decisions.ledger.ddl import MAX_ID_BYTES
from ledger_helpers import decision, new_run, url_for


def _deep(levels: int, leaf: Any = 1) -> Any:
    value = leaf
    for level in range(levels):
        value = [value] if level % 2 else {"k": value}
    return value


# ---------------------------------------------------------------- values nested deeper than json.loads goes


@pytest.mark.parametrize("levels", [990, 5_000, 100_000])
def test_a_deep_result_is_read_back(ledger: Ledger, levels: int) -> None:
    run = new_run()
    ledger.record(decision(("a", "t", "allowed")), run_id=run)
    claim = ledger.claim("a", run_id=run, worker="w")
    text = dumps(_deep(levels))  # deep values are compared as text: == recurses too
    committed = ledger.commit(claim, ToolResult("a", "ok", _deep(levels))).result
    assert committed is not None and dumps(committed.content) == text
    [entry] = ledger.entries(run)
    assert entry.state == "committed" and entry.result is not None and dumps(entry.result.content) == text
    [message] = ledger.result_messages("openai-chat", run_id=run)
    assert message["content"] == text
    assert check_completion(FinalDecision(value="done", text="done"), ledger=ledger, run_id=run, evidence=["a"])
    with pytest.raises(ResultError) as caught:
        ledger.commit(claim, ToolResult("a", "ok", _deep(levels, "again")))
    assert caught.value.code == "ALREADY_COMMITTED"
    assert dumps(ledger.audit(run)[-1].detail["result"]["content"]) == dumps(_deep(levels, "again"))


def test_deep_arguments_are_handed_to_the_worker(ledger: Ledger) -> None:
    run = new_run()
    arguments = {"path": "a.txt", "tree": _deep(5_000)}
    call = ToolCall(call_id="a", name="t", arguments=arguments)
    ledger.record(ToolDecision(calls=(call,), verdicts=(CallVerdict(call_id="a", status="allowed"),)), run_id=run)
    claim = ledger.claim("a", run_id=run, worker="w")
    assert claim.granted and dumps(claim.arguments) == dumps(arguments)
    assert ledger.entry("a", run_id=run).state == "executing"


def test_the_cli_shows_a_deep_result(url: str) -> None:
    run = new_run()
    with open_ledger(url) as ledger:
        ledger.record(decision(("a", "t", "allowed")), run_id=run)
        ledger.commit(ledger.claim("a", run_id=run, worker="w"), ToolResult("a", "ok", _deep(5_000)))
    out = io.StringIO()
    assert main(["ledger", url, run, "--json"], out=out) == 0
    assert dumps(strict_loads(out.getvalue())["entries"][0]["result"]["content"]) == dumps(_deep(5_000))


@pytest.mark.parametrize(
    "value",
    [
        _deep(3),
        _deep(5_000),
        _deep(5_000, 'é"\\\u2028\x01'),
        [[], {}, [{}], {"": []}],
        {"a": [1, -2.5e300, None, True]},
    ],
)
def test_strict_loads_reads_what_the_ledger_writes_at_any_depth(value: Any) -> None:
    for text in (canonical_json(value), dumps(value), json.dumps(value, indent=2) if len(dumps(value)) < 99 else ""):
        if text:
            assert canonical_json(strict_loads(text)) == canonical_json(value)


@pytest.mark.parametrize(
    "text",
    [
        "[",
        "[1,]",
        '{"a":1,}',
        "[1 2]",
        '{"a" 1}',
        "{1:2}",
        "[NaN]",
        "[1]x",
        '{"a":1',
        "]",
        "[,1]",
        "{,}",
        '{"a":}',
        "[]]",
        '["\x01"]',
    ],
)
def test_strict_loads_refuses_what_is_not_json_at_any_depth(text: str) -> None:
    for deep in (text, "[" * 5_000 + text + "]" * 5_000):
        with pytest.raises(ValueError):
            strict_loads(deep)


# ---------------------------------------------------------------- ids both databases hold alike

LONG = "é" * (MAX_ID_BYTES // 2 + 1)  # fewer characters than MAX_ID_BYTES, more bytes


def _random_text(size: int) -> str:
    """``size`` bytes of text PostgreSQL cannot compress."""
    return "".join(random.choice(string.ascii_letters) for _ in range(size))


@pytest.mark.parametrize(
    ("step", "path"),
    [
        (
            lambda ledger, run: ledger.record(decision(("a", "t", "allowed"), (LONG, "t", "allowed")), run_id=run),
            "$.calls[1].call_id",
        ),
        (lambda ledger, run: ledger.record(decision(("a", "t", "allowed")), run_id=run + LONG), "$.run_id"),
        (lambda ledger, run: ledger.cancel(run + LONG), "$.run_id"),
        (lambda ledger, run: Run(run, ledger=ledger).claim(["b", LONG]), "$.call_ids[1]"),
        (lambda ledger, run: ledger.claim(LONG, run_id=run, worker="w"), "$.call_id"),
        (lambda ledger, run: ledger.claim_next(run + LONG, worker="w"), "$.run_id"),
        (lambda ledger, run: ledger.approve(LONG, run_id=run, approver="x"), "$.call_id"),
        (lambda ledger, run: ledger.entry(LONG, run_id=run), "$.call_id"),
    ],
    ids=["record-call-id", "record-run-id", "cancel", "reserve", "claim", "claim-next", "approve", "entry"],
)
def test_an_id_over_max_id_bytes_is_typed_alike_on_both_databases(
    ledger: Ledger, step: Callable[[Ledger, str], Any], path: str
) -> None:
    run = new_run()
    with pytest.raises(ResultError) as caught:
        step(ledger, run)
    assert (caught.value.code, caught.value.retryable, caught.value.path) == ("LEDGER_UNAVAILABLE", False, path)
    assert [r for r, _, _ in ledger.runs() if r.startswith(run)] == []


def test_ids_of_max_id_bytes_are_held(ledger: Ledger) -> None:
    run, call_id = _random_text(MAX_ID_BYTES), _random_text(MAX_ID_BYTES)
    ledger.record(decision((call_id, "t", "allowed")), run_id=run)
    assert Run(run, ledger=ledger).claim([_random_text(MAX_ID_BYTES)]) == ()
    claim = ledger.claim(call_id, run_id=run, worker="w")
    assert ledger.commit(claim, ToolResult(call_id, "ok", "done")).state == "committed"


@pytest.mark.parametrize(
    "step",
    [
        lambda ledger, run: ledger.claim(1, run_id=run, worker="w"),
        lambda ledger, run: ledger.claim("1", run_id=run, worker=7),
        lambda ledger, run: ledger.claim_next(run, worker=None),
        lambda ledger, run: ledger.record(decision(("2", "t", "allowed")), run_id=None),
        lambda ledger, run: ledger.record(decision(("2", "t", "allowed")), run_id=7),
        lambda ledger, run: ledger.entry(b"1", run_id=run),
        lambda ledger, run: ledger.entries(7),
        lambda ledger, run: ledger.cancelled(None),
        lambda ledger, run: ledger.approve("1", run_id=run, approver=7),
        lambda ledger, run: ledger.cancel(run, actor=7),
        lambda ledger, run: Run(run, ledger=ledger).claim([2]),
        lambda ledger, run: ledger.reconcile(1, "retry", run_id=run),
    ],
    ids=[
        "claim-call-id",
        "claim-worker",
        "claim-next-worker",
        "record-none-run",
        "record-int-run",
        "entry-bytes",
        "entries",
        "cancelled",
        "approver",
        "actor",
        "reserve",
        "reconcile",
    ],
)
def test_ids_and_names_that_are_not_text_are_a_type_error_on_both_databases(
    ledger: Ledger, step: Callable[[Ledger, str], Any]
) -> None:
    run = new_run()
    ledger.record(decision(("1", "t", "needs_approval")), run_id=run)
    with pytest.raises(TypeError):
        step(ledger, run)
    assert [(e.call_id, e.state, e.attempt) for e in ledger.entries(run)] == [("1", "awaiting_approval", 0)]
    assert not ledger.cancelled(run) and not ledger.decided("2", run_id=run)
    assert [r for r, _, _ in ledger.runs() if r in ("7", "None")] == []


def test_a_value_over_a_postgresql_limit_is_not_retryable() -> None:
    """Tables someone else indexed on a column the ledger does not bound: the
    server's limit on an index row is not a transient failure."""
    url = url_for("postgres", Path())
    import psycopg

    schema = f"indexed_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    own = url + ("&" if "?" in url else "?") + f"options=-csearch_path%3D{schema}"
    open_ledger(own).close()
    with psycopg.connect(own, autocommit=True) as conn:
        conn.execute("CREATE INDEX ledger_calls_tool ON ledger_calls (tool)")
    with open_ledger(own) as ledger, pytest.raises(ResultError) as caught:
        ledger.record(decision(("a", _random_text(10_000), "allowed")), run_id=new_run())
    assert (caught.value.code, caught.value.retryable) == ("LEDGER_UNAVAILABLE", False)


# ---------------------------------------------------------------- an answer while a call may still run


@pytest.mark.parametrize(
    ("result", "runs_again"),
    [
        (ToolResult("a", "error", "timeout", retry_safe=True), True),
        (ToolResult("a", "error", "timeout"), False),
        (ToolResult("a", "partial", None, retry_safe=True), False),
        (ToolResult("a", "ok", float("nan"), retry_safe=True), False),
    ],
    ids=["retry-safe-error", "error", "partial", "unstorable"],
)
def test_an_answer_is_not_complete_while_a_failed_call_may_be_claimed_again(
    ledger: Ledger, result: ToolResult, runs_again: bool
) -> None:
    run = new_run()
    ledger.record(decision(("a", "deploy", "allowed")), run_id=run)
    ledger.commit(ledger.claim("a", run_id=run, worker="w"), result)
    final = FinalDecision(value="done", text="done")
    if runs_again:
        with pytest.raises(CompletionError) as caught:
            check_completion(final, ledger=ledger, run_id=run)
        assert (caught.value.code, caught.value.path) == ("SIDE_EFFECTS_PENDING", "$.calls[0]")
    else:
        assert check_completion(final, ledger=ledger, run_id=run)
    retry = ledger.claim_next(run, worker="w2")
    assert (retry is not None) == runs_again
    if retry is not None:
        ledger.commit(retry, ToolResult("a", "ok", "deployed"))
        assert check_completion(final, ledger=ledger, run_id=run, evidence=["a"])


# ---------------------------------------------------------------- collections handed over as one-shot iterators


def test_tool_names_given_as_an_iterator_mark_every_call(ledger: Ledger) -> None:
    run = new_run()
    specs = [("a", "login"), ("b", "login"), ("c", "fetch"), ("d", "fetch")]
    calls = tuple(ToolCall(call_id=c, name=t, arguments={"secret": "pw"}, index=i) for i, (c, t) in enumerate(specs))
    verdicts = tuple(CallVerdict(call_id=c, status="allowed") for c, _ in specs)
    ledger.record(
        ToolDecision(calls=calls, verdicts=verdicts),
        run_id=run,
        sensitive=(name for name in ["login"]),
        idempotent=iter(["fetch"]),
    )
    assert [ledger.claim(c, run_id=run, worker="w").arguments for c, _ in specs] == [
        None,
        None,
        {"secret": "pw"},
        {"secret": "pw"},
    ]
    assert [e.idempotent for e in ledger.entries(run)] == [False, False, True, True]


def test_call_ids_given_as_an_iterator_are_all_reserved(ledger: Ledger) -> None:
    run = Run(new_run(), ledger=ledger)
    assert run.claim(c for c in ["a", "b"]) == ()  # type: ignore[arg-type]
    assert ledger.decided("a", run_id=run.run_id) and ledger.decided("b", run_id=run.run_id)
    assert run.claim(iter(["c", "b"])) == ("b",)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        ledger.reserve(run.run_id, "cd")
    assert not ledger.decided("c", run_id=run.run_id) and not ledger.decided("d", run_id=run.run_id)


def test_result_messages_for_call_ids_given_as_an_iterator(ledger: Ledger) -> None:
    run = new_run()
    ledger.record(decision(("a", "t", "allowed"), ("b", "t", "allowed")), run_id=run)
    for call_id in "ab":
        ledger.commit(ledger.claim(call_id, run_id=run, worker="w"), ToolResult(call_id, "ok", call_id * 2))
    messages = ledger.result_messages("openai-chat", run_id=run, call_ids=(c for c in ["b"]))
    assert messages == [{"role": "tool", "tool_call_id": "b", "content": "bb"}]


@pytest.mark.parametrize("claimed", [["a.txt"], [123], [""]])
def test_changed_files_given_as_an_iterator_are_all_checked(ledger: Ledger, claimed: list[Any]) -> None:
    run = new_run()
    ledger.record(decision(("a", "t", "allowed")), run_id=run)
    ledger.commit(ledger.claim("a", run_id=run, worker="w"), ToolResult("a", "ok", "done"))
    final = FinalDecision(value="done", text="done")
    with pytest.raises(CompletionError) as caught:
        check_completion(final, ledger=ledger, run_id=run, changed_files=iter(claimed))  # type: ignore[arg-type]
    assert caught.value.code == "CLAIM_NOT_BACKED"


# ---------------------------------------------------------------- custom calls: their input is text


def test_a_custom_call_is_handed_to_its_worker_as_its_text(url: str, tmp_path: Path) -> None:
    tool = Tool(name="apply_patch", kind="custom", effects=FileEffects(str(tmp_path)))
    patch = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n"
    calls = tuple(
        ToolCall(call_id=c, name="apply_patch", arguments=patch, index=i, call_kind="custom")
        for i, c in enumerate("ab")
    )
    run = new_run()
    with open_ledger(url, tools=[tool]) as ledger:
        ledger.record(
            ToolDecision(calls=calls, verdicts=tuple(CallVerdict(call_id=c, status="allowed") for c in "ab")),
            run_id=run,
        )
        claim = ledger.claim("a", run_id=run, worker="w")
        assert claim.granted and claim.arguments == patch
        (tmp_path / "a.txt").write_text("hi\n")
        effect = Effect("a.txt", file_digest(tmp_path / "a.txt"))
        assert ledger.commit(claim, ToolResult("a", "ok", "done", effects=(effect,))).state == "committed"
        following = ledger.claim_next(run, worker="w")
        assert following is not None and (following.call_id, following.arguments) == ("b", patch)
        failed = ledger.commit(following, ToolResult("b", "ok", "done", effects=(Effect("b.txt", effect.digest),)))
        assert failed.state == "failed" and failed.error is not None and failed.error.code == "EFFECT_NOT_OBSERVED"
