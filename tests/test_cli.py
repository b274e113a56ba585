"""The ``decisions`` command: inspect (bundled examples and files) and bench."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import decisions
from decisions import cli, wire
from decisions.examples import EXAMPLES, load, run_examples

FIXTURES = Path(__file__).parent / "fixtures"
EXAMPLES_DIR = Path(decisions.__file__).parent / "examples"
BY_NAME = {example.name: example for example in EXAMPLES}


def _run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = cli.main(list(argv), out=out)
    return code, out.getvalue()


def _inspect_json(*argv: str) -> tuple[int, dict[str, object]]:
    code, text = _run("inspect", *argv, "--json")
    return code, json.loads(text)


@pytest.fixture(scope="module")
def report() -> dict[str, object]:
    return run_examples()


def test_every_bundled_example_gives_its_outcome(report: dict[str, object]) -> None:
    examples = report["examples"]
    assert isinstance(examples, list) and len(examples) == 6
    assert report["backend"] == decisions.BACKEND
    outcomes = {e["name"]: e["outcome"] for e in examples}
    assert outcomes == {e.name: e.expected for e in EXAMPLES}
    assert report["all_as_expected"] is True


def _result(report: dict[str, object], name: str) -> dict[str, object]:
    examples = report["examples"]
    assert isinstance(examples, list)
    (entry,) = [e for e in examples if e["name"] == name]
    result = entry["result"]
    assert isinstance(result, dict)
    return result


def test_healthy_and_parallel_calls_are_executable_decisions(report: dict[str, object]) -> None:
    healthy = _result(report, "healthy")
    assert healthy["provider"] == "openai-chat" and healthy["format"] == "sse" and healthy["exit_code"] == 0
    decision = healthy["decision"]
    assert decision["kind"] == "tool"
    assert [(c["name"], c["arguments"]) for c in decision["calls"]] == [("read_file", {"path": "src/app.py"})]
    assert [v["status"] for v in decision["verdicts"]] == ["allowed"]
    parallel = _result(report, "parallel")
    assert parallel["provider"] == "anthropic"
    assert [c["name"] for c in parallel["decision"]["calls"]] == ["read_file", "search"]
    assert [e["type"] for e in parallel["events"]].count("tool_call_started") == 2


def test_truncated_call_is_not_sent_for_repair(report: dict[str, object]) -> None:
    result = _result(report, "truncated")
    assert result["response"]["finish_reason"] == "length"
    assert result["error"]["code"] == "INCOMPLETE_RESPONSE" and result["stage"] == "decide"
    assert result["repair_prompt"] is None and result["repair_refused"]
    assert result["exit_code"] == 1


def test_invalid_escape_names_its_position_and_the_fix(report: dict[str, object]) -> None:
    result = _result(report, "invalid_escape")
    error = result["error"]
    assert error["layer"] == "parse" and error["code"] == "INVALID_ESCAPE"
    arguments = result["response"]["items"][0]["arguments"]
    assert arguments[error["offset"] : error["offset"] + 2] == "\\d"
    assert error["lineno"] == 1 and error["colno"] == error["offset"] + 1
    assert "\\\\d" in result["repair_prompt"]


def test_unknown_tool_suggests_the_registered_name(report: dict[str, object]) -> None:
    result = _result(report, "unknown_tool")
    assert result["provider"] == "gemini" and result["format"] == "body"
    assert result["error"]["code"] == "UNKNOWN_TOOL"
    assert "read_file" in json.dumps(result["error"]) and "read_file" in result["repair_prompt"]


def test_path_escape_is_denied_by_policy(report: dict[str, object]) -> None:
    result = _result(report, "path_escape")
    assert result["error"]["code"] == "PATH_OUTSIDE_WORKSPACE" and result["error"]["layer"] == "policy"
    assert result["stage"] == "decide" and result["decision"] is None
    assert result["exit_code"] == 1


def test_no_arguments_runs_the_examples_readably() -> None:
    code, text = _run()
    assert code == 0
    for example in EXAMPLES:
        assert f"## {example.name}:" in text
    assert "INVALID_ESCAPE" in text and "repair message to the model:" in text
    assert "UNEXPECTED" not in text
    assert text.rstrip().endswith(
        f"6/6 examples gave the outcome they were recorded to show (backend {decisions.BACKEND})."
    )


def test_python_dash_m_runs_the_main_job() -> None:
    env = {k: v for k, v in os.environ.items()}
    out = subprocess.run([sys.executable, "-m", "decisions"], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "## path_escape" in out.stdout


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.name)
def test_inspect_file_exit_codes(example: object) -> None:
    path = EXAMPLES_DIR / example.file  # type: ignore[attr-defined]
    code, result = _inspect_json(
        str(path), "--tools", "decisions.examples:TOOLS", "--policy", "decisions.examples:POLICY"
    )
    expected_failure = example.expected not in ("tool", "final")  # type: ignore[attr-defined]
    assert code == (1 if expected_failure else 0)
    assert result["exit_code"] == code and result["shape_version"] == 1
    assert set(result) == {
        "source",
        "format",
        "provider",
        "backend",
        "events",
        "response",
        "decision",
        "error",
        "stage",
        "repair_prompt",
        "repair_refused",
        "unterminated_event",
        "exit_code",
        "shape_version",
    }


def test_stdin_and_readable_output(monkeypatch: pytest.MonkeyPatch) -> None:
    data = load(BY_NAME["invalid_escape"])
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    code, text = _run("inspect", "-")
    assert code == 1
    assert "provider openai-responses" in text
    assert "error: parse/INVALID_ESCAPE" in text and "line 1 column" in text


def test_json_lines_and_bodies_from_real_recordings() -> None:
    groq = FIXTURES / "vercel-ai/packages/groq/src/__fixtures__/groq-tool-call.chunks.txt"
    code, result = _inspect_json(str(groq))
    assert (result["format"], result["provider"]) == ("jsonl", "openai-chat") and code in (0, 1)
    assert result["response"] is not None and result["response"]["items"]
    gemini = FIXTURES / "vercel-ai/packages/google/src/__fixtures__/google-stream-tool-call-arguments.chunks.txt"
    code, result = _inspect_json(str(gemini))
    assert (result["format"], result["provider"]) == ("jsonl", "gemini") and code in (0, 1)
    azure = FIXTURES / "vercel-ai/packages/azure/src/__fixtures__/azure-tool-call.1.json"
    code, result = _inspect_json(str(azure))
    assert (result["format"], result["provider"]) == ("body", "openai-responses") and code in (0, 1)


def test_canonical_wire_recordings(tmp_path: Path) -> None:
    assembler = decisions.StreamAssembler("anthropic", keep_events=True)
    assembler.feed(load(BY_NAME["parallel"]))
    response = assembler.finish()
    events = assembler.take_events()
    jsonl = tmp_path / "events.jsonl"
    jsonl.write_text("".join(wire.encode_json(e) + "\n" for e in events))
    code, result = _inspect_json(str(jsonl))
    assert (result["format"], result["provider"], code) == ("jsonl", "canonical", 0)
    assert [c["name"] for c in result["decision"]["calls"]] == [c.name for c in response.tool_calls]
    sse = tmp_path / "events.sse"
    sse.write_bytes(b"".join(wire.encode_sse(e) for e in events))
    code, result = _inspect_json(str(sse), "--provider", "canonical")
    assert code == 0 and len(result["events"]) == len(events)


def test_a_cut_stream_is_a_typed_failure(tmp_path: Path) -> None:
    data = load(BY_NAME["healthy"])
    cut = tmp_path / "cut.sse"
    cut.write_bytes(data[: data.index(b'"finish_reason":"tool_calls"') - 200].rsplit(b"\n\n", 1)[0] + b"\n\n")
    code, result = _inspect_json(str(cut))
    assert code == 1 and result["stage"] == "stream"
    assert result["error"]["code"] == "NO_TERMINAL_EVENT" and result["response"] is None


@pytest.mark.parametrize(
    "argv",
    [
        ["inspect", "/nonexistent/recording.sse"],
        ["inspect", "-", "--provider", "nope"],
        ["inspect", "x", "--tools", "no-colon"],
        ["inspect", "x", "--tools", "decisions.examples:MISSING"],
        ["inspect", "x", "--tools", "no_such_module_here:X"],
        ["frobnicate"],
    ],
)
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(argv, out=io.StringIO()) == 2


def test_undetectable_input_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "what.json"
    path.write_text('{"hello": "world"}')
    assert cli.main(["inspect", str(path)], out=io.StringIO()) == 2


def test_format_detection() -> None:
    assert cli.detect_format(b"event: x\ndata: {}\n\n") == "sse"
    assert cli.detect_format(b"\n: keep-alive\n\ndata: {}\n\n") == "sse"
    assert cli.detect_format(b'{"a": 1}\n{"b": 2}\n') == "jsonl"
    assert cli.detect_format(b'{\n  "a": 1\n}\n') == "body"
    assert cli.detect_format(b'{"a": 1}') == "body"


def test_bench_quick_reports_ratios() -> None:
    if decisions.BACKEND == "pure" and os.environ.get("DECISIONS_PURE"):
        pytest.skip("the bench runs once, in the native pass")
    code, text = _run("bench", "--quick", "--json")
    assert code == 0
    report = json.loads(text)
    parse = report["parse"]["small_args"]["results"]
    assert parse["json"]["vs_json"] == 1.0
    assert "decisions (pure)" in parse and all(r["median_us"] > 0 for r in parse.values())
    assembly = report["assembly"]["openai-chat"]["results"]
    assert "decisions (pure)" in assembly and assembly["json per event"]["vs_json_per_event"] == 1.0


def _chat_body(content: str) -> bytes:
    return json.dumps(
        {
            "id": "chatcmpl-final",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        }
    ).encode()


def test_output_schema_for_a_final_answer(tmp_path: Path) -> None:
    good = tmp_path / "good.json"
    good.write_bytes(_chat_body('{"path": "docs/index.md"}'))
    code, result = _inspect_json(str(good), "--output", "decisions.examples:ReadFile")
    assert code == 0 and result["decision"]["kind"] == "final"
    assert result["decision"]["value"] == {"path": "docs/index.md"}
    bad = tmp_path / "bad.json"
    bad.write_bytes(_chat_body('{"path": 42}'))
    code, result = _inspect_json(str(bad), "--output", "decisions.examples:ReadFile")
    assert code == 1 and result["error"]["code"] == "SCHEMA_MISMATCH"
    assert result["error"]["issues"] and "path" in result["repair_prompt"]
