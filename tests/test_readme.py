"""The README is executed: every code block runs, and its tables are the code's.

``python`` blocks run in a fresh interpreter; the Anthropic client in the
streaming example talks to a local stand-in server (``ANTHROPIC_BASE_URL``)
that replays a recorded stream, so nothing leaves the machine. ``sh`` blocks:
``decisions ...`` lines run for real (exit code 0 or 1, never 2); ``make X``
lines are checked to name a real target (``make -n``; ``make test`` itself is
what runs this file); ``pip install`` lines must be the two that
``tests/test_wheels.py`` runs as written in a fresh venv. Any other shell line fails the test, so
nothing in the README goes unchecked.
"""

from __future__ import annotations

import http.server
import json
import os
import re
import shlex
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import decisions

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
sys.path.insert(0, str(ROOT / "packaging"))
import readme as readme_tables  # noqa: E402

PURE_RUN = os.environ.get("DECISIONS_PURE", "").strip().lower() not in ("", "0", "false", "no")


def _blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", README, re.M | re.S)


def test_error_table_is_generated_from_error_codes() -> None:
    assert readme_tables.block(README, "errors") == readme_tables.error_table(), (
        "README error table is stale: run python packaging/readme.py"
    )
    assert len(readme_tables.error_table().splitlines()) == len(decisions.ERROR_CODES) + 2


def test_limits_table_is_generated_from_limits() -> None:
    assert readme_tables.block(README, "limits") == readme_tables.limits_table(), (
        "README limits table is stale: run python packaging/readme.py"
    )
    for name, value in (("max_depth", decisions.DEFAULT_LIMITS.max_depth),):
        assert f"| `{name}` | {value:,} |" in README


def _anthropic_stream(arguments: str = '{"path": "config/settings.toml"}', stop: str | None = "tool_use") -> bytes:
    """A Messages stream calling read_file with ``arguments`` (sent in 6-character
    deltas) that ends with ``stop`` as its stop_reason (None: cut before the end)."""
    events: list[dict[str, object]] = [
        {
            "type": "message_start",
            "message": {
                "id": "msg_readme",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 20, "output_tokens": 1},
            },
        },
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "toolu_readme", "name": "read_file", "input": {}},
        },
        *(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": arguments[i : i + 6]},
            }
            for i in range(0, len(arguments), 6)
        ),
    ]
    if stop is not None:
        events += [
            {"type": "content_block_stop", "index": 0},
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": 9},
            },
            {"type": "message_stop"},
        ]
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


_REPAIR_END = "Send the call 'toolu_readme' to 'read_file' again with corrected arguments matching the supplied schema; change only what is wrong."
#: What the streaming example must do with each outcome a real backend meets.
SCENARIOS = {
    "healthy": (_anthropic_stream(), "run read_file {'path': 'config/settings.toml'}"),
    "cut by max_tokens": (
        _anthropic_stream('{"path": "config/sett', stop="max_tokens"),
        "retry INCOMPLETE_RESPONSE",
    ),
    "refused": (_anthropic_stream('{"path": "x"}', stop="refusal"), "stop REFUSAL"),
    "dropped": (_anthropic_stream('{"path": "config/settings.toml"}', stop=None), "retry NO_TERMINAL_EVENT"),
    "bad escape": (
        _anthropic_stream('{"path": "config\\dsettings.toml"}'),
        f"repair INVALID_ESCAPE toolu_readme {_REPAIR_END}",
    ),
    "path escape": (
        _anthropic_stream('{"path": "../../etc/passwd"}'),
        f"repair PATH_OUTSIDE_WORKSPACE toolu_readme {_REPAIR_END}",
    ),
}


@pytest.fixture(scope="module")
def provider_server() -> Iterator[tuple[str, dict[str, bytes]]]:
    """A local stand-in for the provider's API, replaying ``state["body"]``."""
    state = {"body": SCENARIOS["healthy"][0]}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            self.rfile.read(int(self.headers.get("content-length", "0")))
            body = state["body"]
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", state
    finally:
        server.shutdown()
        server.server_close()


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    env.update(extra)
    return env


PYTHON_BLOCKS = _blocks("python")


def test_readme_has_the_examples_it_promises() -> None:
    assert len(PYTHON_BLOCKS) >= 2
    streaming = PYTHON_BLOCKS[0]
    assert "StreamAssembler" in streaming and "decide(" in streaming
    assert len(streaming.strip().splitlines()) <= 32


def _run_block(index: int, url: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    script = tmp_path / f"readme_{index}.py"
    script.write_text(PYTHON_BLOCKS[index], encoding="utf-8")
    env = _env(ANTHROPIC_API_KEY="sk-ant-readme-test", ANTHROPIC_BASE_URL=url)
    return subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120
    )


@pytest.mark.parametrize("index", range(1, len(PYTHON_BLOCKS)))
def test_python_block_runs(index: int, provider_server: tuple[str, dict[str, bytes]], tmp_path: Path) -> None:
    out = _run_block(index, provider_server[0], tmp_path)
    assert out.returncode == 0, out.stderr


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_the_streaming_example_is_right_for_every_outcome(
    scenario: str, provider_server: tuple[str, dict[str, bytes]], tmp_path: Path
) -> None:
    url, state = provider_server
    state["body"], expected = SCENARIOS[scenario]
    out = _run_block(0, url, tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == expected


def _shell_lines() -> list[str]:
    lines = []
    for block in _blocks("sh"):
        for line in block.splitlines():
            command = line.split("  #")[0].split(" # ")[0].strip()
            if command and not command.startswith("#"):
                lines.append(command)
    return lines


SHELL_LINES = _shell_lines()


@pytest.mark.parametrize("command", SHELL_LINES)
def test_shell_line(command: str) -> None:
    argv = shlex.split(command)
    if argv[0] == "make":
        assert len(argv) == 2
        out = subprocess.run(["make", "-n", argv[1]], cwd=ROOT, capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
    elif argv[:2] == ["pip", "install"]:
        # What these lines do is tested in tests/test_wheels.py (binary preferred, pure elsewhere).
        assert argv[2:] in (
            ["--no-index", "--find-links", "dist", "decisions"],
            ["--no-index", "--find-links", "dist", f"dist/decisions-{decisions.__version__}-py3-none-any.whl"],
        )
    elif argv[0] == "decisions":
        if PURE_RUN and argv[1] == "bench":
            pytest.skip("the bench line runs once, in the native pass")
        script = Path(sys.executable).parent / "decisions"
        out = subprocess.run([str(script), *argv[1:]], cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert out.returncode in (0, 1), out.stderr
        assert out.stdout.strip()
        if "--json" in argv:
            json.loads(out.stdout)
    else:
        pytest.fail(f"README shell line that no test checks: {command!r}")
