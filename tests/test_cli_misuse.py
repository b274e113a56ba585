"""Every misuse of the command line: exit code 2 and one clear line on
stderr, never a traceback; and ``--tools MODULE:OBJ`` finds a module in the
current directory, as ``python -m`` would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "python" / "decisions" / "examples"
ESCAPE = str(EXAMPLES / "invalid_escape.sse")

MYTOOLS = """
from pydantic import BaseModel
from decisions import Policy, Tool, ToolRegistry, ToolRule

class Search(BaseModel):
    pattern: str
    path: str = "."

tools = ToolRegistry([Tool(name="search", parameters=Search, side_effects=False)])
policy = Policy(workspace=".", tools={"search": ToolRule(paths={"path": "read"})})
not_tools = 42
not_a_policy = ["x"]
"""


def _cli(cwd: Path, *argv: str, stdin: bytes = b"") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "decisions", *argv],
        cwd=cwd,
        input=stdin.decode(),
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture(scope="module")
def here(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cwd = tmp_path_factory.mktemp("cwd")
    (cwd / "mytools.py").write_text(MYTOOLS)
    (cwd / "broken.py").write_text("raise RuntimeError('boom at import')\n")
    (cwd / "unknown.json").write_text('{"hello": "world"}')
    (cwd / "deep.json").write_text("[" * 100_000)
    (cwd / "binary.bin").write_bytes(b"\xff\xfe\x00\x80 not text")
    os.mkfifo(cwd / "fifo")  # nobody ever writes to it: reading it would wait forever
    return cwd


MISUSES = {
    "missing file": (["inspect", "/nonexistent/recording.sse"], "cannot read /nonexistent/recording.sse"),
    "unknown provider": (["inspect", ESCAPE, "--provider", "nope"], "invalid choice: 'nope'"),
    "unknown command": (["frobnicate"], "invalid choice: 'frobnicate'"),
    "extra arguments": (["inspect", ESCAPE, "more", "args"], "unrecognized arguments: more args"),
    "unknown option": (["inspect", ESCAPE, "--colour"], "unrecognized arguments: --colour"),
    "tools without colon": (["inspect", ESCAPE, "--tools", "mytools"], "--tools takes MODULE:OBJ"),
    "tools missing attribute": (["inspect", ESCAPE, "--tools", "mytools:nope"], "has no attribute 'nope'"),
    "tools missing module": (["inspect", ESCAPE, "--tools", "no_such_module:x"], "cannot import 'no_such_module'"),
    "tools wrong type": (["inspect", ESCAPE, "--tools", "mytools:not_tools"], "mytools:not_tools is of type int, not"),
    "policy wrong type": (
        ["inspect", ESCAPE, "--policy", "mytools:not_a_policy"],
        "is of type list, not a decisions.Policy",
    ),
    "output wrong type": (["inspect", ESCAPE, "--output", "mytools:not_tools"], "is of type int, not a Pydantic model"),
    "module fails at import": (["inspect", ESCAPE, "--tools", "broken:x"], "RuntimeError: boom at import"),
    "empty stdin": (["inspect", "-"], "the input is empty"),
    "unknown shape": (["inspect", "unknown.json"], "cannot tell the provider"),
    "html without file": (["inspect", "--html", "out.html"], "--html needs FILE"),
    "a directory": (["inspect", "."], "cannot read .: a directory"),
    "a FIFO": (["inspect", "fifo"], "cannot read fifo: not a regular file"),
    "a device without end": (["inspect", "/dev/zero"], "cannot read /dev/zero: not a regular file"),
    "deeply nested JSON": (["inspect", "deep.json"], "cannot tell the provider"),
    "binary, not UTF-8": (["inspect", "binary.bin"], "cannot tell the provider"),
    "html unwritable": (["inspect", ESCAPE, "--html", "/nonexistent/dir/out.html"], "cannot write /nonexistent/dir"),
}


@pytest.mark.parametrize("case", list(MISUSES))
def test_each_misuse_is_exit_2_with_one_line(here: Path, case: str) -> None:
    argv, expected = MISUSES[case]
    done = _cli(here, *argv)
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("decisions: "), done.stderr
    assert expected in lines[0]
    assert "Traceback" not in done.stderr + done.stdout


def test_tools_and_policy_come_from_the_current_directory(here: Path) -> None:
    done = _cli(here, "inspect", ESCAPE, "--tools", "mytools:tools", "--policy", "mytools:policy", "--json")
    assert done.returncode == 1, done.stderr  # a typed failure of the recording, not a usage error
    assert '"INVALID_ESCAPE"' in done.stdout and done.stderr == ""


def test_an_input_larger_than_any_limit_is_refused_before_it_is_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from decisions import cli

    monkeypatch.setattr(cli, "_MAX_INPUT", 16)
    path = tmp_path / "big.json"
    path.write_bytes(b'{"candidates": []}  ')
    with pytest.raises(cli.UsageError, match="larger than 16 bytes"):
        cli._read(str(path))
    path.write_bytes(b"{}")
    assert cli._read(str(path)) == b"{}"
