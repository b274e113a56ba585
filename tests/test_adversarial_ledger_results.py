"""The ledger's results on their way back to the model: a call id the package
made up (the provider sent none) must not be echoed to Gemini from the ledger
either, a ledger written before the ledger kept that flag still opens, and a
tool result too large to keep or send is refused before it is written. Every
test runs on SQLite and PostgreSQL (see ``ledger_helpers``)."""

from __future__ import annotations

import dataclasses
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from decisions import (
    CallVerdict,
    Effect,
    Ledger,
    Limits,
    ResultBook,
    ResultError,
    ToolCall,
    ToolDecision,
    ToolResult,
    open_ledger,
    result_messages,
)
from decisions.ledger import check_result_size
from decisions.ledger.ddl import SCHEMA_VERSION, tables
from ledger_helpers import BACKENDS, POSTGRES_URL, new_run, url_for

PROVIDERS = ("openai-chat", "openai-responses", "anthropic", "gemini")
SMALL = dataclasses.replace(Limits(), max_result_bytes=64)


def mixed() -> ToolDecision:
    """Calls with a provider's id and with ids the package generated, one denied."""
    calls = (
        ToolCall(call_id="toolu_1", name="read", arguments={"p": "a"}, index=0),
        ToolCall(call_id="gen-1:call_1", name="read", arguments={"p": "b"}, index=1, call_id_generated=True),
        ToolCall(call_id="gen-1:call_2", name="read", arguments={"p": "c"}, index=2, call_id_generated=True),
        ToolCall(call_id="gen-1:call_3", name="read", arguments={"p": "d"}, index=3, call_id_generated=True),
    )
    verdicts = (
        CallVerdict(call_id="toolu_1", status="allowed"),
        CallVerdict(call_id="gen-1:call_1", status="allowed"),
        CallVerdict(call_id="gen-1:call_2", status="allowed"),
        CallVerdict(call_id="gen-1:call_3", status="denied"),
    )
    return ToolDecision(calls=calls, verdicts=verdicts, batch="per_call")


# ---------------------------------------------------------------- generated call ids


@pytest.mark.parametrize("provider", PROVIDERS)
def test_ledger_result_messages_equal_the_result_books(ledger: Ledger, provider: str) -> None:
    book = ResultBook(mixed(), ledger=ledger, run_id=new_run())
    book.add(ToolResult("toolu_1", "ok", {"text": "a"}))
    book.add(ToolResult("gen-1:call_1", "ok", "b"))
    book.add(ToolResult("gen-1:call_2", "ok", ["c"]))
    # (a failed call differs by design: the book passes the tool's own error on, the ledger only the code)
    assert ledger.result_messages(provider, run_id=book.run_id) == book.messages(provider)
    assert [e.call_id_generated for e in ledger.entries(book.run_id)] == [False, True, True, True]


def test_gemini_gets_no_id_the_provider_never_sent(ledger: Ledger) -> None:
    run = new_run()
    ledger.record(mixed(), run_id=run)
    for call_id in ("toolu_1", "gen-1:call_1"):
        ledger.commit(ledger.claim(call_id, run_id=run, worker="w"), ToolResult(call_id, "ok", "x"))
    [turn] = ledger.result_messages("gemini", run_id=run)
    assert [p["functionResponse"].get("id") for p in turn["parts"]] == ["toolu_1", None, None]
    assert ledger.entry("gen-1:call_1", run_id=run).to_dict()["call_id_generated"] is True


def _old_tables(real: str, serial: str) -> tuple[str, ...]:
    """The tables as a ledger of this schema version wrote them before it kept ``call_id_generated``."""
    new = tables(real=real, serial=serial)
    old = tuple(sql.replace(", call_id_generated INTEGER NOT NULL DEFAULT 0", "") for sql in new)
    assert old != new
    return old


_OLD_ROW = (
    "INSERT INTO ledger_calls (run_id, call_id, seq, tool, arguments, digest, idem_key, side_effects, idempotent, "
    "sensitive, batch_id, batch_mode, state, attempt, decided_at, effects, retry_safe, verdict) VALUES "
    "('old-run', 'c1', 0, 'read', '{}', 'sha256:0', 'ik_0', 0, 0, 0, 'b', 'per_call', 'decided', 0, 1.0, '[]', 0, "
    '\'{"shape":"call_verdict","version":1,"call_id":"c1","status":"allowed","error":null,"reasons":[],'
    '"paths":{},"empty_paths":[],"approved_by":null}\')'
)


def _old_ledger(backend: str, tmp_path: Path) -> Iterator[str]:
    """A ledger URL whose tables were written before ``call_id_generated``, holding one call."""
    meta = f"INSERT INTO ledger_meta (key, value) VALUES ('schema_version', '{SCHEMA_VERSION}')"
    if backend == "sqlite":
        path = tmp_path / "old.db"
        with sqlite3.connect(path) as conn:
            for sql in (*_old_tables("REAL", "INTEGER PRIMARY KEY AUTOINCREMENT"), meta, _OLD_ROW):
                conn.execute(sql)
        yield f"sqlite:///{path}"
        return
    import psycopg

    base = url_for(backend, tmp_path)
    schema = f"old_{uuid.uuid4().hex[:12]}"  # its own schema: the test server's tables are the new ones
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(f"SET search_path = {schema}")
        for sql in (*_old_tables("DOUBLE PRECISION", "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY"), meta):
            conn.execute(sql)
        conn.execute(_OLD_ROW)
    try:
        yield f"{base}{'&' if '?' in base else '?'}options=-csearch_path%3D{schema}"
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_ledger_written_before_call_id_generated_opens_and_works(backend: str, tmp_path: Path) -> None:
    if backend == "postgres" and not POSTGRES_URL:
        url_for(backend, tmp_path)  # skips (or fails) as every PostgreSQL test does
    for old in _old_ledger(backend, tmp_path):
        with open_ledger(old) as ledger:
            [before] = ledger.entries("old-run")
            assert before.state == "decided" and before.call_id_generated is False
            claim = ledger.claim("c1", run_id="old-run", worker="w")
            ledger.commit(claim, ToolResult("c1", "ok", "done"))
            [turn] = ledger.result_messages("gemini", run_id="old-run")
            assert turn["parts"][0]["functionResponse"]["id"] == "c1"
            run = new_run()
            ledger.record(mixed(), run_id=run)
            assert [e.call_id_generated for e in ledger.entries(run)] == [False, True, True, True]
        with open_ledger(old) as again:  # opened a second time: the column is there, nothing to add
            assert again.entry("c1", run_id="old-run").state == "committed"


# ---------------------------------------------------------------- result size


def _content(kind: str) -> Any:
    return {
        "text": "x" * 65,
        "wide text": "é" * 33,  # 66 bytes of UTF-8 in 33 characters
        "object": {"lines": ["0123456789"] * 6},
        "escaped": {"k": "\x01" * 11},  # 66 bytes of JSON escapes
    }[kind]


KINDS = ("text", "wide text", "object", "escaped")


@pytest.mark.parametrize("kind", KINDS)
def test_a_result_over_max_result_bytes_fails_the_call_and_stores_nothing(url: str, kind: str) -> None:
    with open_ledger(url, limits=SMALL) as ledger:
        run = new_run()
        ledger.record(mixed(), run_id=run)
        claim = ledger.claim("toolu_1", run_id=run, worker="w")
        entry = ledger.commit(claim, ToolResult("toolu_1", "ok", _content(kind), retry_safe=True))
        assert entry.state == "failed" and entry.result is None
        assert entry.error is not None and entry.error.code == "RESULT_TOO_LARGE"
        assert (entry.error.path, entry.error.retryable) == ("$.content", False)
        assert not ledger.claim("toolu_1", run_id=run, worker="w2").granted  # never retry-safe
        [message] = ledger.result_messages("openai-chat", run_id=run, call_ids=["toolu_1"])
        assert "RESULT_TOO_LARGE" in message["content"]
        with pytest.raises(ResultError) as caught:
            ledger.commit(claim, ToolResult("toolu_1", "ok", "small"))
        assert caught.value.code == "ALREADY_COMMITTED"
        fits = ledger.claim("gen-1:call_1", run_id=run, worker="w")
        assert ledger.commit(fits, ToolResult("gen-1:call_1", "ok", "y" * 64)).state == "committed"


def test_a_reconciled_result_over_the_limit_changes_nothing(url: str) -> None:
    with open_ledger(url, limits=SMALL) as ledger:
        run = new_run()
        ledger.record(mixed(), run_id=run)
        ledger._run(  # a lost worker, without waiting out a lease
            lambda cur: cur.execute(
                "UPDATE ledger_calls SET state = 'unknown', attempt = 1 WHERE run_id = ? AND call_id = ?",
                (run, "toolu_1"),
            )
        )
        with pytest.raises(ResultError) as caught:
            ledger.reconcile("toolu_1", ToolResult("toolu_1", "ok", "x" * 65), run_id=run)
        assert caught.value.code == "RESULT_TOO_LARGE"
        assert ledger.entry("toolu_1", run_id=run).state == "unknown"
        assert ledger.reconcile("toolu_1", ToolResult("toolu_1", "ok", "x"), run_id=run).state == "committed"


def test_a_result_book_holds_results_to_its_ledgers_limit(url: str) -> None:
    with open_ledger(url, limits=SMALL) as ledger:
        book = ResultBook(mixed(), ledger=ledger, run_id=new_run())
        book.add(ToolResult("toolu_1", "ok", "x" * 65))
        book.add(ToolResult("gen-1:call_1", "ok", "fits"))
        book.add(ToolResult("gen-1:call_2", "ok", "fits"))
        assert ledger.entry("toolu_1", run_id=book.run_id).state == "failed"
        assert book.get("toolu_1") is None
        for provider in PROVIDERS:
            assert book.messages(provider) == ledger.result_messages(provider, run_id=book.run_id)


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("kind", KINDS)
def test_result_messages_refuse_content_over_the_limit(provider: str, kind: str) -> None:
    call = mixed().calls[0]
    with pytest.raises(ResultError) as caught:
        result_messages(provider, [(call, ToolResult("toolu_1", "ok", _content(kind)))], limits=SMALL)
    assert (caught.value.code, caught.value.path, caught.value.call_id) == ("RESULT_TOO_LARGE", "$.content", "toolu_1")
    assert result_messages(provider, [(call, ToolResult("toolu_1", "ok", _content(kind)))])  # the default fits it


def test_the_default_limit_refuses_a_result_before_writing_it() -> None:
    big = ["x" * 1024] * (Limits().max_result_bytes // 1024)  # 1 KiB strings: the JSON is just over the limit
    with pytest.raises(ResultError) as caught:
        result_messages("openai-chat", [(mixed().calls[0], ToolResult("toolu_1", "ok", big))])
    assert caught.value.code == "RESULT_TOO_LARGE"
    endless: list[Any] = []
    endless.append(endless)  # a cycle is not JSON, and is named so
    with pytest.raises(ResultError) as caught:
        result_messages("openai-chat", [(mixed().calls[0], ToolResult("toolu_1", "ok", endless))])
    assert caught.value.code == "RESULT_SCHEMA_MISMATCH"


FEW_EFFECTS = dataclasses.replace(Limits(), max_result_effects=3, max_result_bytes=64)


@pytest.mark.parametrize(
    "effects",
    [
        tuple(Effect(f"f{i}.txt") for i in range(4)),  # one more than max_result_effects
        (Effect("d/" * 40 + "a.txt"),),  # one path longer than max_result_bytes
        (Effect("a.txt", "sha256:" + "0" * 64),),  # a path and a digest longer together
    ],
    ids=["count", "path", "digest"],
)
def test_a_result_claiming_too_many_effects_fails_the_call_and_stores_nothing(
    url: str, effects: tuple[Effect, ...]
) -> None:
    with open_ledger(url, limits=FEW_EFFECTS) as ledger:
        run = new_run()
        ledger.record(mixed(), run_id=run)
        claim = ledger.claim("toolu_1", run_id=run, worker="w")
        entry = ledger.commit(claim, ToolResult("toolu_1", "ok", "done", retry_safe=True, effects=effects))
        assert entry.state == "failed" and entry.result is None and entry.effects == ()
        assert entry.error is not None and entry.error.code == "RESULT_TOO_LARGE"
        assert (entry.error.path, entry.error.retryable) == ("$.effects", False)
        fits = ledger.claim("gen-1:call_1", run_id=run, worker="w")
        three = tuple(Effect(f"f{i}.txt") for i in range(3))
        assert ledger.commit(fits, ToolResult("gen-1:call_1", "ok", "done", effects=three)).state == "committed"


def test_check_result_size_bounds_the_effects_without_walking_them_all() -> None:
    many = ToolResult("c", "ok", None, effects=(Effect("a.txt"),) * 1_000_000)
    with pytest.raises(ResultError) as caught:
        check_result_size(many)
    assert (caught.value.code, caught.value.path) == ("RESULT_TOO_LARGE", "$.effects")
    assert "1000000 effects" in caught.value.message
    check_result_size(ToolResult("c", "ok", None, effects=(Effect("a.txt"),) * Limits().max_result_effects))
