"""Result checks (schema, effects), completion checks, and the versioned
to_dict/from_dict shapes the ledger stores."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from decisions import (
    ERROR_CODES,
    CallVerdict,
    CompletionError,
    Effect,
    FileEffects,
    FinalDecision,
    Ledger,
    SchemaError,
    Tool,
    ToolCall,
    ToolDecision,
    ToolResult,
    check_completion,
    open_ledger,
)
from decisions.errors import new_error
from decisions.ledger import SHAPE_VERSION, file_digest, from_dict, to_dict
from ledger_helpers import decision, new_run


class Lines(BaseModel):
    lines: int


@pytest.fixture
def ledger(url: str, workspace: Path) -> Iterator[Ledger]:
    tools = [
        Tool(name="count", returns=Lines, side_effects=False),
        Tool(
            name="count_js",
            returns={"type": "object", "properties": {"lines": {"type": "integer"}}, "required": ["lines"]},
            side_effects=False,
        ),
        Tool(name="write_file", effects=FileEffects(str(workspace))),
        Tool(name="write_many", effects=FileEffects(str(workspace), paths=("files",))),
    ]
    with open_ledger(url, tools=tools) as opened:
        yield opened


def run_one(ledger: Ledger, tool: str, result: ToolResult, **arguments: Any) -> Any:
    run = new_run()
    d = ToolDecision(
        calls=(ToolCall(call_id=result.call_id, name=tool, arguments=arguments),),
        verdicts=(CallVerdict(call_id=result.call_id, status="allowed"),),
    )
    ledger.record(d, run_id=run)
    return ledger.commit(ledger.claim(result.call_id, run_id=run, worker="w"), result)


def write(root: Path, name: str, text: str) -> Effect:
    (root / name).write_text(text)
    return Effect(name, file_digest(root / name))


# ---------------------------------------------------------------- result checks


@pytest.mark.parametrize("tool", ["count", "count_js"])
@pytest.mark.parametrize(
    "content, ok",
    [
        ({"lines": 3}, True),
        ({"lines": "3"}, False),
        ({}, False),
        ({"lines": 3, "extra": 1}, False),
        ("3", False),
        (None, False),
    ],
)
def test_result_schema(ledger: Ledger, tool: str, content: Any, ok: bool) -> None:
    entry = run_one(ledger, tool, ToolResult("a", "ok", content))
    if ok:
        assert entry.state == "committed" and entry.error is None
    else:
        assert entry.state == "failed" and entry.error.code == "RESULT_SCHEMA_MISMATCH"
        assert entry.error.layer == "result" and entry.error.path.startswith("$.content")
        assert entry.result == ToolResult("a", "ok", content)  # what the tool said is kept


def test_error_and_partial_results_fail(ledger: Ledger, workspace: Path) -> None:
    assert run_one(ledger, "count", ToolResult("a", "error", "boom")).error.code == "TOOL_ERROR"
    effect = write(workspace, "a.txt", "x")
    partial = run_one(ledger, "write_file", ToolResult("a", "partial", None, effects=(effect,)), path="a.txt")
    assert partial.state == "failed" and partial.error.code == "PARTIAL_EFFECT" and partial.effects == (effect,)


def test_observed_effects_commit(ledger: Ledger, workspace: Path) -> None:
    effect = write(workspace, "a.txt", "hello")
    entry = run_one(ledger, "write_file", ToolResult("a", "ok", "written", effects=(effect,)), path="a.txt")
    assert entry.state == "committed" and entry.effects == (effect,)
    (workspace / "gone.txt").unlink(missing_ok=True)
    deleted = run_one(
        ledger, "write_file", ToolResult("a", "ok", "", effects=(Effect("gone.txt", None),)), path="gone.txt"
    )
    assert deleted.state == "committed"


@pytest.mark.parametrize(
    "case",
    [
        "wrong_digest",
        "missing_file",
        "not_deleted",
        "outside",
        "no_effect_claimed",
        "symlink_out",
        "nul",
        "nul_deleted",
    ],
)
def test_effects_not_observed(ledger: Ledger, workspace: Path, tmp_path: Path, case: str) -> None:
    real = write(workspace, "a.txt", "hello")
    effects: tuple[Effect, ...]
    if case == "wrong_digest":
        effects = (Effect("a.txt", file_digest(workspace / "a.txt").replace("sha256:", "sha256:0")),)
    elif case == "missing_file":
        effects = (Effect("nope.txt", real.digest),)
    elif case == "not_deleted":
        effects = (Effect("a.txt", None),)
    elif case == "outside":
        (tmp_path / "out.txt").write_text("hello")
        effects = (Effect("../out.txt", real.digest),)
    elif case == "symlink_out":
        (tmp_path / "out.txt").write_text("hello")
        (workspace / "link.txt").symlink_to(tmp_path / "out.txt")
        effects = (Effect("link.txt", real.digest),)
    elif case in ("nul", "nul_deleted"):  # a path no file system lookup takes
        effects = (Effect("a.txt\x00", real.digest if case == "nul" else None),)
    else:
        effects = ()
    path = effects[0].path if effects else "a.txt"
    entry = run_one(ledger, "write_file", ToolResult("a", "ok", "written", effects=effects), path=path)
    assert entry.state == "failed" and entry.error.code == "EFFECT_NOT_OBSERVED" and entry.effects == ()


def test_names_given_as_a_string_are_refused(ledger: Ledger, workspace: Path) -> None:
    """A string would be read letter by letter (no path argument checked) or
    matched by any part of it (``"write"`` in ``"write_file"``)."""
    with pytest.raises(ValueError, match="not the string"):
        FileEffects(str(workspace), paths="path")  # type: ignore[arg-type]
    d = decision(("a", "write", "allowed"))
    for keyword in ("idempotent", "sensitive"):
        with pytest.raises(ValueError, match="not the string"):
            ledger.record(d, run_id=new_run(), **{keyword: "write_file"})


def test_some_expected_effects_missing_is_partial(ledger: Ledger, workspace: Path) -> None:
    done = write(workspace, "a.txt", "1")
    entry = run_one(ledger, "write_many", ToolResult("a", "ok", "", effects=(done,)), files=["a.txt", "b.txt"])
    assert entry.state == "failed" and entry.error.code == "PARTIAL_EFFECT" and "b.txt" in entry.error.message
    both = (done, write(workspace, "b.txt", "2"))
    assert (
        run_one(ledger, "write_many", ToolResult("a", "ok", "", effects=both), files=["a.txt", "b.txt"]).state
        == "committed"
    )


def test_result_messages_say_what_happened_without_the_failed_content(ledger: Ledger, workspace: Path) -> None:
    run = new_run()
    ledger.record(
        decision(
            ("a", "count", "allowed"), ("b", "count", "allowed"), ("c", "count", "allowed"), ("d", "count", "denied")
        ),
        run_id=run,
    )
    ledger.commit(ledger.claim("a", run_id=run, worker="w"), ToolResult("a", "ok", {"lines": 2}))
    ledger.commit(
        ledger.claim("b", run_id=run, worker="w"), ToolResult("b", "ok", {"lines": "sk-live-SECRETSECRETSECRET"})
    )
    messages = ledger.result_messages("openai-chat", run_id=run)
    assert [m["tool_call_id"] for m in messages] == ["a", "b", "d"]  # c is still open
    assert json.loads(messages[0]["content"]) == {"lines": 2}
    assert json.loads(messages[1]["content"])["error"] == "RESULT_SCHEMA_MISMATCH"
    assert "SECRET" not in json.dumps(messages)
    anthropic = ledger.result_messages("anthropic", run_id=run, call_ids={"a", "b"})
    assert [b["is_error"] for b in anthropic[0]["content"]] == [False, True]


def test_partial_results_are_errors_in_provider_messages() -> None:
    from decisions import result_messages

    call = ToolCall(call_id="a", name="t", arguments={})
    [message] = result_messages("anthropic", [(call, ToolResult("a", "partial", "half"))])
    assert message["content"][0]["is_error"] is True
    [gemini] = result_messages("gemini", [(call, ToolResult("a", "partial", "half"))])
    assert gemini["parts"][0]["functionResponse"]["response"] == {"error": "half"}


# ---------------------------------------------------------------- completion


def finished_run(ledger: Ledger, workspace: Path) -> str:
    run = new_run()
    ledger.record(decision(("w1", "write_file", "allowed"), ("r1", "count", "allowed")), run_id=run)
    effect = write(workspace, "w1.txt", "content")
    ledger.commit(ledger.claim("w1", run_id=run, worker="w"), ToolResult("w1", "ok", "ok", effects=(effect,)))
    ledger.commit(ledger.claim("r1", run_id=run, worker="w"), ToolResult("r1", "ok", {"lines": 1}))
    return run


FINAL = FinalDecision(value={"status": "completed"}, text="{}")


def test_a_backed_answer_passes(ledger: Ledger, workspace: Path) -> None:
    run = finished_run(ledger, workspace)
    entries = check_completion(
        FINAL,
        ledger=ledger,
        run_id=run,
        evidence=["w1", "r1"],
        changed_files=["./w1.txt"],
        criteria=[lambda value, entries: value["status"] == "completed", lambda v, e: None],
    )
    assert [e.call_id for e in entries] == ["w1", "r1"]


@pytest.mark.parametrize(
    "kwargs, code",
    [
        ({"evidence": ["nope"]}, "EVIDENCE_NOT_FOUND"),
        ({"changed_files": ["w1.txt", "other.txt"]}, "CLAIM_NOT_BACKED"),
        ({"changed_files": []}, "CLAIM_NOT_BACKED"),
        ({"criteria": [lambda v, e: False]}, "ACCEPTANCE_FAILED"),
        ({"criteria": [lambda v, e: "tests did not run"]}, "ACCEPTANCE_FAILED"),
        ({"criteria": [lambda v, e: 1 / 0]}, "ACCEPTANCE_FAILED"),
        ({"evidence": [["a"]]}, "EVIDENCE_NOT_FOUND"),  # the answer's own values: judged, never raised on
        ({"evidence": [{"id": "a"}]}, "EVIDENCE_NOT_FOUND"),
        ({"changed_files": ["w1.txt", 1]}, "CLAIM_NOT_BACKED"),
        ({"changed_files": ["w1.txt", None]}, "CLAIM_NOT_BACKED"),
        ({"changed_files": ["w1.txt", ""]}, "CLAIM_NOT_BACKED"),
        ({"criteria": [lambda v, e: 0]}, "ACCEPTANCE_FAILED"),  # anything but True or None fails
        ({"criteria": [lambda v, e: []]}, "ACCEPTANCE_FAILED"),
    ],
)
def test_each_completion_check(ledger: Ledger, workspace: Path, kwargs: dict[str, Any], code: str) -> None:
    run = finished_run(ledger, workspace)
    with pytest.raises(CompletionError) as caught:
        check_completion(FINAL, ledger=ledger, run_id=run, **kwargs)
    assert caught.value.code == code and caught.value.layer == "completion"
    assert [i["code"] for i in caught.value.issues] == [code]


def test_evidence_must_be_committed_in_this_run(ledger: Ledger, workspace: Path) -> None:
    run = finished_run(ledger, workspace)
    other = finished_run(ledger, workspace)
    ledger.record(decision(("f", "count", "allowed"), ("p", "count", "allowed")), run_id=run)
    ledger.commit(ledger.claim("f", run_id=run, worker="w"), ToolResult("f", "error", "x"))
    with pytest.raises(CompletionError) as caught:
        check_completion(FINAL, ledger=ledger, run_id=other, evidence=["f"])
    assert caught.value.code == "EVIDENCE_NOT_FOUND"
    with pytest.raises(CompletionError) as caught:
        check_completion(FINAL, ledger=ledger, run_id=run, evidence=["f", "w1"])
    codes = [i["code"] for i in caught.value.issues]
    assert codes == ["EVIDENCE_NOT_FOUND", "SIDE_EFFECTS_PENDING"]  # f failed; p never ran
    assert caught.value.issues[0]["path"] == "$.evidence[0]"


@pytest.mark.parametrize("state", ["decided", "awaiting_approval", "approved", "executing", "unknown"])
def test_pending_calls_keep_the_run_unfinished(ledger: Ledger, workspace: Path, state: str) -> None:
    run = finished_run(ledger, workspace)
    status = "needs_approval" if state in ("approved", "awaiting_approval") else "allowed"
    ledger.record(decision(("x", "write_file", status)), run_id=run)
    if state == "approved":
        ledger.approve("x", run_id=run, approver="a")
    if state in ("executing", "unknown"):
        ledger.claim("x", run_id=run, worker="w", lease_seconds=0.05 if state == "unknown" else 60)
    if state == "unknown":
        import time

        while ledger.entry("x", run_id=run).state != "unknown":
            time.sleep(0.05)
    with pytest.raises(CompletionError) as caught:
        check_completion(FINAL, ledger=ledger, run_id=run)
    assert caught.value.code == "SIDE_EFFECTS_PENDING" and state in caught.value.issues[0]["detail"]


def test_every_failed_check_is_named(ledger: Ledger, workspace: Path) -> None:
    run = finished_run(ledger, workspace)
    ledger.record(decision(("x", "count", "allowed")), run_id=run)
    with pytest.raises(CompletionError) as caught:
        check_completion(
            FINAL, ledger=ledger, run_id=run, evidence=["zz"], changed_files=[], criteria=[lambda v, e: False]
        )
    assert [i["code"] for i in caught.value.issues] == [
        "EVIDENCE_NOT_FOUND",
        "CLAIM_NOT_BACKED",
        "SIDE_EFFECTS_PENDING",
        "ACCEPTANCE_FAILED",
    ]
    assert caught.value.code == "EVIDENCE_NOT_FOUND"


def test_unchecked_effects_do_not_back_a_claim(ledger: Ledger) -> None:
    run = new_run()
    ledger.record(decision(("a", "count", "allowed")), run_id=run)  # count has no effect check
    ledger.commit(
        ledger.claim("a", run_id=run, worker="w"),
        ToolResult("a", "ok", {"lines": 1}, effects=(Effect("x.txt", "sha256:00"),)),
    )
    with pytest.raises(CompletionError) as caught:
        check_completion(FINAL, ledger=ledger, run_id=run, changed_files=["x.txt"])
    assert caught.value.code == "CLAIM_NOT_BACKED"


def test_check_completion_takes_a_final_decision(ledger: Ledger) -> None:
    with pytest.raises(TypeError):
        check_completion(decision(("a", "t", "allowed")), ledger=ledger, run_id=new_run())  # type: ignore[arg-type]


# ---------------------------------------------------------------- shapes

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.text(max_size=8)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=10,
)
text = st.text(max_size=10)
ids = st.text(min_size=1, max_size=8)
errors = st.builds(
    lambda code, message, path: (
        new_error(code, message, path=path)
        if ERROR_CODES[code].layer != "parse"
        else new_error(code, message, doc="ab\ncd", pos=4, path=path)
    ),
    st.sampled_from(sorted(ERROR_CODES)),
    text,
    st.none() | text,
)
effects = st.builds(
    Effect, ids, st.none() | st.text(alphabet="0123456789abcdef", max_size=64).map(lambda h: "sha256:" + h)
)
results = st.builds(
    ToolResult,
    ids,
    st.sampled_from(["ok", "error", "partial"]),
    json_values,
    retry_safe=st.booleans(),
    effects=st.lists(effects, max_size=3).map(tuple),
)
calls = st.builds(
    lambda i, name, args, index, item, gen, version: ToolCall(
        call_id=i, name=name, arguments=args, index=index, item_id=item, call_id_generated=gen, tool_version=version
    ),
    ids,
    ids,
    st.dictionaries(text, json_values, max_size=3),
    st.integers(0, 10),
    st.none() | ids,
    st.booleans(),
    st.none() | ids,
)


@st.composite
def tool_decisions(draw: st.DrawFn) -> ToolDecision:
    drawn = draw(st.lists(calls, min_size=1, max_size=3, unique_by=lambda c: c.call_id))
    verdicts = tuple(
        CallVerdict(
            call_id=c.call_id,
            status=draw(st.sampled_from(["allowed", "approved", "needs_approval", "denied"])),
            error=draw(st.none() | errors),
            reasons=tuple(draw(st.lists(text, max_size=2))),
            paths=draw(st.dictionaries(text, text, max_size=2)),
            empty_paths=tuple(draw(st.lists(text, max_size=2))),
            approved_by=draw(st.none() | text),
        )
        for c in drawn
    )
    return ToolDecision(
        calls=tuple(drawn),
        verdicts=verdicts,
        batch=draw(st.sampled_from(["all_or_nothing", "per_call"])),
        text=draw(text),
        provider=draw(st.none() | text),
        response_id=draw(st.none() | text),
        model=draw(st.none() | text),
    )


finals = st.builds(lambda v, t, s: FinalDecision(value=v, text=t, schema_id=s), json_values, text, st.none() | text)


@given(st.one_of(tool_decisions(), finals, calls, results, effects, errors))
def test_shapes_round_trip(obj: Any) -> None:
    data = to_dict(obj)
    assert data["version"] == SHAPE_VERSION and isinstance(data["shape"], str)
    wire = json.loads(json.dumps(data, allow_nan=False))
    back = from_dict(wire)
    assert type(back) is type(obj) and to_dict(back) == data
    if not hasattr(obj, "code") and not isinstance(obj, ToolDecision):
        assert back == obj


def test_a_pydantic_final_value_is_stored_as_json() -> None:
    data = to_dict(FinalDecision(value=Lines(lines=2), text="{}"))
    assert data["value"] == {"lines": 2} and from_dict(data).value == {"lines": 2}


@pytest.mark.parametrize(
    "data, code, path",
    [
        ({"shape": "tool_result", "version": SHAPE_VERSION + 1}, "UNKNOWN_SCHEMA_VERSION", "$.shape"),
        ({"shape": "tool_result", "version": 0}, "UNKNOWN_SCHEMA_VERSION", "$.shape"),
        ({"shape": "nope", "version": 1}, "UNKNOWN_SCHEMA_VERSION", "$.shape"),
        ({"version": 1}, "SCHEMA_MISMATCH", "$.shape"),
        (
            {"shape": "tool_result", "version": 1, "call_id": 3, "status": "ok", "retry_safe": False, "effects": []},
            "SCHEMA_MISMATCH",
            "$.call_id",
        ),
        (
            {
                "shape": "tool_result",
                "version": 1,
                "call_id": "a",
                "status": "maybe",
                "content": None,
                "retry_safe": False,
                "effects": [],
            },
            "SCHEMA_MISMATCH",
            "$",
        ),
        (
            {
                "shape": "call_verdict",
                "version": 1,
                "call_id": "a",
                "status": "maybe",
                "reasons": [],
                "paths": {},
                "empty_paths": [],
            },
            "SCHEMA_MISMATCH",
            "$.status",
        ),
        (
            {"shape": "tool_decision", "version": 1, "calls": [], "verdicts": [], "batch": "some", "text": ""},
            "SCHEMA_MISMATCH",
            "$.batch",
        ),
        ({"shape": "effect", "version": 1, "path": "a", "digest": "md5:0"}, "SCHEMA_MISMATCH", "$"),
        ({"shape": "error", "version": 1, "code": "NOT_A_CODE"}, "SCHEMA_MISMATCH", "$.code"),
        (
            {"shape": "tool_call", "version": 1, "call_id": "a", "name": "t", "arguments": [], "index": 0},
            "SCHEMA_MISMATCH",
            "$.arguments",
        ),
        ({"shape": "tool_call", "version": True}, "SCHEMA_MISMATCH", "$.version"),
    ],
)
def test_shapes_refuse_what_they_do_not_know(data: dict[str, Any], code: str, path: str) -> None:
    with pytest.raises(SchemaError) as caught:
        from_dict(data)
    assert caught.value.code == code and caught.value.path == path


_STORED_ERROR_MEMBERS = ["message", "retryable", "offset", "path", "hint", "lineno", "colno", "call_index"]
_STORED_ERROR_MEMBERS += ["call_id", "tool", "issues", "batch", "issues[0]", "batch[0]"]


@pytest.mark.parametrize("member", _STORED_ERROR_MEMBERS)
@pytest.mark.parametrize("value", [[], ["x"], {}, {"a": 1}, 1, 1.5, True, "x"], ids=repr)
@pytest.mark.parametrize("code", ["INVALID_ESCAPE", "UNKNOWN_TOOL"])
def test_a_stored_error_member_of_another_json_type_is_a_mismatch(member: str, value: object, code: str) -> None:
    """Each member of a stored error is typed before the error is built: a
    wrong JSON type is SCHEMA_MISMATCH at its path, never an AttributeError
    or TypeError from inside the error class."""
    from decisions.errors import error_class

    data = to_dict(error_class(code)(code, "m", issues=({"path": "$", "code": "c", "expected": "e"},)))
    data["batch"] = [{"call_id": "c"}]
    name, _, index = member.partition("[")
    kinds = {"message": str, "path": str, "hint": str, "call_id": str, "tool": str, "retryable": bool}
    kinds |= {"issues": list, "batch": list, "issues[0]": dict, "batch[0]": dict}
    wanted = kinds.get(member, int)
    if type(value) is wanted:
        pytest.skip("the member's own type")
    if index:
        data[name][0] = value
    else:
        data[name] = value
    with pytest.raises(SchemaError) as caught:
        from_dict(data)
    assert (caught.value.code, caught.value.path) == ("SCHEMA_MISMATCH", f"$.{member}")


def test_the_checks_are_the_tools_the_ledger_was_opened_with(url: str) -> None:
    with pytest.raises(ValueError):
        Tool(name="count", effects="not a check")  # type: ignore[arg-type]
    assert Tool(name="count", returns=Lines).result_schema is not None and Tool(name="count").result_schema is None
    bad = ToolResult("x", "ok", {"lines": "three"})
    with open_ledger(url) as unchecked:  # no tools: an ok result passes unchecked
        assert run_one(unchecked, "count", bad).state == "committed"
    with open_ledger(url, tools=[Tool(name="count", returns=Lines)]) as checked:
        entry = run_one(checked, "count", bad)
        assert entry.state == "failed" and entry.error is not None and entry.error.code == "RESULT_SCHEMA_MISMATCH"
        assert entry.error.path == "$.content.lines"
