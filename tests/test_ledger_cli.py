"""``decisions ledger URL [RUN]``: a run's entries as a table or JSON."""

from __future__ import annotations

import io
import json
from pathlib import Path

from decisions import ToolResult, open_ledger
from decisions.cli import main
from ledger_helpers import decision, new_run


def cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return main(list(argv), out=out), out.getvalue()


def test_entries_as_table_and_json(url: str) -> None:
    run = new_run()
    with open_ledger(url) as ledger:
        ledger.record(decision(("a", "read_file", "allowed"), ("b", "write_file", "needs_approval")), run_id=run)
        ledger.commit(ledger.claim("a", run_id=run, worker="w7"), ToolResult("a", "error", "x"))
    code, text = cli("ledger", url, run)
    assert code == 0
    lines = text.splitlines()
    assert lines[0] == f"run {run}: 2 call(s)" and lines[1].split()[:5] == [
        "call",
        "tool",
        "state",
        "attempt",
        "worker",
    ]
    assert lines[2].split()[:5] == ["a", "read_file", "failed", "1", "w7"] and "TOOL_ERROR" in lines[2]
    assert lines[3].split()[:3] == ["b", "write_file", "awaiting_approval"]
    code, text = cli("ledger", url, run, "--json")
    data = json.loads(text)
    assert code == 0 and [e["state"] for e in data["entries"]] == ["failed", "awaiting_approval"]
    assert (
        data["entries"][0]["error"]["code"] == "TOOL_ERROR" and data["entries"][0]["result"]["shape"] == "tool_result"
    )
    code, text = cli("ledger", url, "--json")
    assert code == 0 and {"run_id": run, "cancelled": False, "calls": 2} in json.loads(text)
    code, text = cli("ledger", url)
    assert code == 0 and run in text


def test_a_run_without_calls_and_bad_urls(url: str, tmp_path: Path) -> None:
    assert cli("ledger", url, new_run())[0] == 1
    assert cli("ledger", "mysql://x/y")[0] == 2
    code, text = cli("ledger", f"sqlite:///{tmp_path}/no/such/dir/x.db")
    assert code == 1 and text.startswith("LEDGER_UNAVAILABLE")


def test_the_table_escapes_control_and_format_characters(url: str) -> None:
    run = new_run() + "\x1b]0;x\x07"
    with open_ledger(url) as ledger:
        ledger.record(decision(("a\x1b[2J\u202e", "read_file", "allowed")), run_id=run)
        ledger.claim("a\x1b[2J\u202e", run_id=run, worker="w\r")
    code, text = cli("ledger", url, run)
    assert code == 0 and "\x1b" not in text and "\u202e" not in text and "\r" not in text and "\x07" not in text
    assert "a\\x1b[2J\\u202e" in text and "w\\r" in text
    code, text = cli("ledger", url)
    assert code == 0 and "\x1b" not in text
    code, text = cli("ledger", url, run, "--json")
    assert json.loads(text)["entries"][0]["call_id"] == "a\x1b[2J\u202e"
