"""``decisions inspect FILE`` on a saved stream that lost the blank line
closing its last event (anthropic-sdk-python's recorded tool_use stream is itself such a file): the
live rule stays strict, the CLI says what happened and offers a flag."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from conftest import FIXTURES
from decisions import cli

BASIC = FIXTURES / "anthropic-sdk-python" / "tests" / "lib" / "streaming" / "fixtures" / "tool_use_response.txt"


def _run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return cli.main(list(argv), out=out), out.getvalue()


@pytest.fixture()
def trimmed(tmp_path: Path) -> Path:
    data = BASIC.read_bytes().rstrip(b"\r\n")
    assert data.splitlines()[-1].startswith(b"data: ")
    path = tmp_path / "saved.sse"
    path.write_bytes(data)
    return path


def test_the_file_without_its_last_blank_line(trimmed: Path) -> None:
    code, text = _run("inspect", str(trimmed), "--provider", "anthropic")
    assert code == 1
    assert "SSE_UNTERMINATED_EVENT" in text
    assert "ends without the blank line that closes its last event" in text
    assert '"message_stop"' in text  # the event it would have been
    assert "--accept-unterminated" in text
    code, raw = _run("inspect", str(trimmed), "--provider", "anthropic", "--json")
    result = json.loads(raw)
    assert result["error"]["code"] == "SSE_UNTERMINATED_EVENT"
    assert json.loads(result["unterminated_event"])["type"] == "message_stop"


def test_the_flag_accepts_it(trimmed: Path, tmp_path: Path) -> None:
    code, raw = _run("inspect", str(trimmed), "--provider", "anthropic", "--json", "--accept-unterminated")
    closed = tmp_path / "closed.sse"
    closed.write_bytes(trimmed.read_bytes() + b"\n\n")
    whole = json.loads(_run("inspect", str(closed), "--provider", "anthropic", "--json")[1])
    result = json.loads(raw)
    assert result["error"] == whole["error"] and result["response"] == whole["response"]
    assert result["response"] is not None


def test_a_file_cut_inside_a_line_is_not_offered(tmp_path: Path) -> None:
    path = tmp_path / "cut.sse"
    path.write_bytes(BASIC.read_bytes().rstrip(b"\r\n")[:-5])
    code, raw = _run("inspect", str(path), "--provider", "anthropic", "--json", "--accept-unterminated")
    result = json.loads(raw)
    assert result["error"]["code"] in ("MALFORMED_EVENT", "SSE_UNTERMINATED_EVENT")
    assert result["response"] is None
