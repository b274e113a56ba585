"""The ledger against what it is handed and could not hold the same way on
both databases, or could write and not read back: deep results and arguments.
Every ledger test runs on SQLite and PostgreSQL."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from decisions import (
    CallVerdict,
    FinalDecision,
    Ledger,
    ResultError,
    ToolCall,
    ToolDecision,
    ToolResult,
    check_completion,
    open_ledger,
)
from decisions._payload import canonical_json, dumps, strict_loads
from decisions.cli import main
from ledger_helpers import BACKENDS, decision, new_run, url_for


@pytest.fixture(params=BACKENDS)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return url_for(request.param, tmp_path)


@pytest.fixture
def ledger(url: str) -> Iterator[Ledger]:
    with open_ledger(url) as opened:
        yield opened


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
