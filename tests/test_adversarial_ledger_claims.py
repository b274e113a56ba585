"""The ledger's claims and results against a host that forges a claim, races a
cancel or a record, or hands it values JSON cannot hold; and stored errors that
are malformed. Every ledger test runs on SQLite and PostgreSQL."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from decisions import Ledger, OutputError, ResultError, SchemaError, ToolResult, open_ledger
from decisions.ledger import argument_digest
from decisions.ledger.messages import result_messages
from decisions.recover.results import ResultBook
from ledger_helpers import BACKENDS, decision, new_run, url_for

UNSTORABLE: tuple[Any, ...] = (float("nan"), float("inf"), "\ud800", {"k\udcff": 1}, {1: "x", "1": "y"})


@pytest.fixture(params=BACKENDS)
def ledger(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Ledger]:
    with open_ledger(url_for(request.param, tmp_path)) as opened:
        yield opened


def test_a_forged_claim_does_not_commit(ledger: Ledger) -> None:
    run = new_run()
    ledger.record(decision(("a", "t", "allowed")), run_id=run)
    live = ledger.claim("a", run_id=run, worker="w1")
    refused = ledger.claim("a", run_id=run, worker="w2")
    assert not refused.granted
    forged = dataclasses.replace(refused, granted=True)
    with pytest.raises(ResultError) as caught:
        ledger.commit(forged, ToolResult("a", "ok", "forged"))
    assert caught.value.code == "NOT_CLAIMED"
    with pytest.raises(ResultError):
        ledger.renew(forged)
    assert ledger.entry("a", run_id=run).state == "executing"
    assert ledger.commit(live, ToolResult("a", "ok", "real")).result == ToolResult("a", "ok", "real")


def test_claim_next_waits_for_a_cancel_in_flight(ledger: Ledger) -> None:
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
        outcome: list[Any] = []
        claimer = threading.Thread(target=lambda: outcome.append(ledger.claim_next(run, worker="w")))
        claimer.start()
        time.sleep(0.3)
        release.set()
        canceller.join(10)
        claimer.join(10)
    assert outcome == [None]
    assert ledger.entry("a", run_id=run).state == "decided"


def test_reserve_waits_for_a_record_in_flight(ledger: Ledger) -> None:
    run = new_run()
    ledger.record(decision(("x", "t", "allowed")), run_id=run)  # the run exists
    with open_ledger(ledger.url) as other:
        hold = threading.Event()
        release = threading.Event()

        def record_slowly(cur: Any) -> None:
            cur.execute("UPDATE ledger_runs SET cancelled = cancelled WHERE run_id = ?", (run,))
            hold.set()
            release.wait(10)
            cur.execute(
                "INSERT INTO ledger_decided (run_id, call_id) VALUES (?, ?)", (run, "a")
            )  # as a record of "a" in the same transaction would make it decided

        recorder = threading.Thread(target=lambda: other._run(record_slowly))
        recorder.start()
        assert hold.wait(10)
        seen: list[Any] = []
        reserver = threading.Thread(target=lambda: seen.append(ledger.reserve(run, ["a"])))
        reserver.start()
        time.sleep(0.3)
        release.set()
        recorder.join(10)
        reserver.join(10)
    assert seen == [("a",)]


@pytest.mark.parametrize("bad", UNSTORABLE)
def test_unstorable_arguments_are_typed_and_record_nothing(ledger: Ledger, bad: Any) -> None:
    with pytest.raises(SchemaError) as caught:
        argument_digest({"v": bad} if not isinstance(bad, dict) else bad)
    assert caught.value.code == "SCHEMA_MISMATCH"
    run = new_run()
    good = decision(("a", "t", "allowed"))
    broken = decision(("a", "t", "allowed"), ("b", "t", "allowed"), v=bad)
    with pytest.raises(SchemaError) as caught:
        ledger.record(broken, run_id=run)
    assert caught.value.path == "$.calls[0].arguments"
    assert ledger.entries(run) == ()
    assert ledger.record(good, run_id=run)[0].state == "decided"


@pytest.mark.parametrize("bad", UNSTORABLE)
def test_an_unstorable_result_fails_the_call(ledger: Ledger, bad: Any) -> None:
    run = new_run()
    ledger.record(decision(("a", "t", "allowed")), run_id=run)
    claim = ledger.claim("a", run_id=run, worker="w")
    entry = ledger.commit(claim, ToolResult("a", "ok", {"v": bad}, retry_safe=True))
    assert entry.state == "failed"
    assert entry.error is not None and entry.error.code == "RESULT_SCHEMA_MISMATCH"
    assert entry.result is None
    assert not ledger.claim("a", run_id=run, worker="w2").granted  # not retry-safe: never stored as such
    assert ledger.result_messages("openai-chat", run_id=run)[0]["tool_call_id"] == "a"
    with pytest.raises(ResultError) as caught:
        ledger.commit(claim, ToolResult("a", "ok", {"v": bad}))
    assert caught.value.code == "ALREADY_COMMITTED"


def test_result_book_takes_a_retry_after_a_retry_safe_failure(ledger: Ledger) -> None:
    book = ResultBook(decision(("a", "t", "allowed")), ledger=ledger)
    book.add(ToolResult("a", "error", "timeout", retry_safe=True))
    book.add(ToolResult("a", "ok", "done"))
    assert book.get("a") == ToolResult("a", "ok", "done")
    assert ledger.entry("a", run_id=book.run_id).attempt == 2
    with pytest.raises(OutputError) as caught:
        book.add(ToolResult("a", "ok", "again"))
    assert caught.value.code == "DUPLICATE_RESULT"
    book2 = ResultBook(decision(("a", "t", "allowed")), ledger=ledger)
    book2.add(ToolResult("a", "error", "broken"))  # not retry-safe
    with pytest.raises(OutputError) as caught:
        book2.add(ToolResult("a", "ok", "done"))
    assert caught.value.code == "DUPLICATE_RESULT"


GOOD = {"code": "SCHEMA_MISMATCH", "message": "m", "issues": [{"path": "$", "code": "type", "expected": "x"}]}


@pytest.mark.parametrize(
    ("change", "where"),
    [
        ({"issues": [{"path": 1, "code": "type", "expected": "x"}]}, "$.issues[0].path"),
        ({"issues": [{"code": "type", "expected": "x"}]}, "$.issues[0].path"),
        ({"issues": [{"path": "$", "code": None, "expected": "x"}]}, "$.issues[0].code"),
        ({"issues": [{"path": "$", "code": "type", "expected": ["x"]}]}, "$.issues[0].expected"),
        ({"layer": "parse"}, "$.layer"),
        ({"offset": -1}, "$.offset"),
        ({"call_index": -2}, "$.call_index"),
    ],
)
def test_a_malformed_stored_error_is_refused(change: dict[str, Any], where: str) -> None:
    with pytest.raises(SchemaError) as caught:
        OutputError.from_dict({**GOOD, **change})
    assert caught.value.code == "SCHEMA_MISMATCH"
    assert caught.value.path == where
    assert OutputError.from_dict(GOOD).issues == ({"path": "$", "code": "type", "expected": "x"},)


def _deep(levels: int) -> list[Any]:
    root: list[Any] = []
    node = root
    for _ in range(levels):
        node.append([])
        node = node[0]
    return root


@pytest.mark.parametrize("provider", ["openai-chat", "openai-responses", "anthropic", "gemini"])
@pytest.mark.parametrize("bad", [float("nan"), float("-inf"), "\ud800", b"\xff", {"k": {"\udcff"}}, {1: "x", "1": "y"}])
def test_result_messages_refuse_content_json_cannot_carry(provider: str, bad: Any) -> None:
    call = decision(("a", "t", "allowed")).calls[0]
    with pytest.raises(ResultError) as caught:
        result_messages(provider, [(call, ToolResult("a", "ok", bad))])
    assert (caught.value.code, caught.value.path, caught.value.call_id) == ("RESULT_SCHEMA_MISMATCH", "$.content", "a")


def test_result_messages_carry_deep_content_and_refuse_two_results_for_one_call() -> None:
    calls = decision(("a", "t", "allowed"), ("b", "t", "allowed")).calls
    deep = ToolResult("a", "ok", _deep(100_000))
    [message, other] = result_messages("openai-chat", [(calls[0], deep), (calls[1], ToolResult("b", "ok", "x"))])
    assert message["tool_call_id"] == "a" and message["content"].startswith("[[[")
    assert other == {"role": "tool", "tool_call_id": "b", "content": "x"}
    with pytest.raises(OutputError) as caught:
        result_messages("anthropic", [(calls[0], ToolResult("a", "ok", "1")), (calls[0], ToolResult("a", "ok", "2"))])
    assert caught.value.code == "DUPLICATE_RESULT"


def test_ledger_result_messages_refuse_an_unknown_call_id(ledger: Ledger) -> None:
    run = new_run()
    ledger.record(decision(("ab", "t", "allowed")), run_id=run)
    ledger.commit(ledger.claim("ab", run_id=run, worker="w"), ToolResult("ab", "ok", "x"))
    with pytest.raises(OutputError) as caught:
        ledger.result_messages("openai-chat", run_id=run, call_ids={"ab", "zz"})
    assert (caught.value.code, caught.value.call_id) == ("UNKNOWN_CALL_ID", "zz")
    with pytest.raises(ValueError):
        ledger.result_messages("openai-chat", run_id=run, call_ids="ab")  # "a" in "ab" would match
    assert [m["tool_call_id"] for m in ledger.result_messages("openai-chat", run_id=run, call_ids=["ab"])] == ["ab"]


def test_a_lone_surrogate_in_an_id_is_typed_and_stores_nothing(ledger: Ledger) -> None:
    run = new_run()
    with pytest.raises(ResultError) as caught:
        ledger.record(decision(("a", "t", "allowed")), run_id=run + "\ud800")
    assert caught.value.code == "LEDGER_UNAVAILABLE"
    ledger.record(decision(("a", "t", "allowed")), run_id=run)
    with pytest.raises(ResultError) as caught:
        ledger.claim("a", run_id=run, worker="w\udcff")
    assert caught.value.code == "LEDGER_UNAVAILABLE"
    with pytest.raises(ResultError):
        ledger.cancel(run, actor="\ud800")
    assert not ledger.cancelled(run)
    assert ledger.claim("a", run_id=run, worker="w").granted
    assert [r for r, _, _ in ledger.runs() if r.startswith(run)] == [run]


def test_a_lone_surrogate_in_a_call_id_is_named_at_the_call(ledger: Ledger) -> None:
    run = new_run()
    with pytest.raises(SchemaError) as caught:
        ledger.record(decision(("a", "t", "allowed"), ("b\ud800", "t", "allowed")), run_id=run)
    assert (caught.value.code, caught.value.path) == ("SCHEMA_MISMATCH", "$.calls[1].call_id")
    assert [r for r, _, _ in ledger.runs() if r.startswith(run)] == []
