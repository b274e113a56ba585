"""A repair prompt knows what failed: a tool call's error asks for that call
again, named by the id and tool the model knows, and says what to do with the
rest of its batch; any other error asks for one JSON value. And
``fix_response`` returns a ``FixedResponse`` that ``decide`` takes as it is."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import BaseModel

import decisions
from decide_helpers import call, needs_loads, response, text
from decisions import FixedResponse, OutputError, Policy, Tool, ToolRegistry, ToolRule, decide, repair_prompt


class ReadFile(BaseModel):
    path: str
    limit: int = 10


REGISTRY = ToolRegistry(
    [Tool(name="read_file", parameters=ReadFile, side_effects=False), Tool(name="write_file", parameters=ReadFile)]
)

#: One failing call of each repairable layer: (name, arguments, code).
FAILING = [
    ("read_file", '{"path": "C:\\dir"}', "INVALID_ESCAPE"),
    ("read_file", '{"path": "a", "limit": "ten"}', "SCHEMA_MISMATCH"),
    ("read_fle", '{"path": "a"}', "UNKNOWN_TOOL"),
    ("read_file", '{"path": "../../etc/passwd"}', "PATH_OUTSIDE_WORKSPACE"),
    ("read_file", "[]", "ARGUMENTS_NOT_OBJECT"),
]


def _fail(tmp_path: Path, items: list) -> OutputError:  # type: ignore[type-arg]
    policy = Policy(workspace=tmp_path, tools={"read_file": ToolRule(paths={"path": "read"})})
    with pytest.raises(OutputError) as info:
        decide(response(*items), tools=REGISTRY, policy=policy)
    return info.value


@needs_loads
@pytest.mark.parametrize("size", [1, 3])
@pytest.mark.parametrize("failing", FAILING, ids=[f[2] for f in FAILING])
def test_a_call_error_names_the_call_and_the_rest_of_the_batch(
    tmp_path: Path, size: int, failing: tuple[str, str, str]
) -> None:
    name, arguments, code = failing
    for position in range(size):
        items = [call(arguments='{"path": "ok.txt"}', call_id=f"toolu_{i}") for i in range(size)]
        items[position] = call(name=name, arguments=arguments, call_id=f"toolu_{position}")
        error = _fail(tmp_path, items)
        assert (error.code, error.call_index, error.call_id, error.tool) == (code, position, f"toolu_{position}", name)
        prompt = repair_prompt(error)
        assert f"The call: 'toolu_{position}' to the tool {name!r}." in prompt
        assert prompt.endswith(
            f"Send the call 'toolu_{position}' to {name!r} again with corrected arguments matching the supplied "
            "schema; change only what is wrong."
        )
        assert "JSON value" not in prompt
        others = [i for i in range(size) if i != position]
        for i in others:
            assert (
                f"- call 'toolu_{i}' to 'read_file': not run because of this error; send it again unchanged" in prompt
            )
        assert ("None of the calls in this response ran" in prompt) == bool(others)
        assert repair_prompt(error, target="value").endswith(
            "Return exactly one corrected JSON value matching the supplied schema; change only what is wrong."
        )


@needs_loads
def test_other_refused_calls_of_the_batch_are_named_with_their_codes(tmp_path: Path) -> None:
    items = [
        call(arguments='{"path": "../a"}', call_id="c0"),
        call(arguments='{"path": "ok"}', call_id="c1"),
        call(arguments='{"path": "~/b"}', call_id="c2"),
    ]
    prompt = repair_prompt(_fail(tmp_path, items))
    assert "- call 'c1' to 'read_file': not run because of this error" in prompt
    assert "- call 'c2' to 'read_file': refused too (PATH_INVALID); correct it as well or leave it out" in prompt


@needs_loads
@pytest.mark.parametrize(
    ("answer", "code"),
    [('{"path": 1', "UNEXPECTED_END"), ('{"path": 3}', "SCHEMA_MISMATCH"), ('{"path": "\\d"}', "INVALID_ESCAPE")],
)
def test_an_answer_error_asks_for_one_json_value(answer: str, code: str) -> None:
    with pytest.raises(OutputError) as info:
        decide(response(text(answer), finish="stop"), output=ReadFile)
    error = info.value
    assert (error.code, error.call_id, error.tool, error.batch) == (code, None, None, ())
    prompt = repair_prompt(error)
    assert prompt.endswith(
        "Return exactly one corrected JSON value matching the supplied schema; change only what is wrong."
    )
    assert "The call:" not in prompt


@needs_loads
def test_fix_response_returns_a_fixed_response_decide_takes_as_it_is() -> None:
    bad = response(call(name="write_file", arguments='{"path": "a\\d"}', call_id="w"))
    fixed = decisions.fix_response(bad, ["invalid_escapes"])
    assert isinstance(fixed, FixedResponse) and fixed.repaired and fixed.applied == ("invalid_escapes",)
    assert fixed.response.tool_calls[0].arguments == '{"path":"a\\\\d"}'
    fixed_response, applied = fixed  # still unpacks
    assert applied == ("invalid_escapes",)
    with pytest.raises(decisions.PolicyError) as info:  # decided as repaired: the side-effecting tool refuses
        decide(fixed, tools=REGISTRY)
    assert info.value.code == "REPAIRED_CALL_REFUSED"
    read = decisions.fix_response(response(call(arguments='{"path": "a\\d"}')), ["invalid_escapes"])
    decision = decide(read, tools=REGISTRY)
    assert decision.kind == "tool" and decision.calls[0].arguments == {"path": "a\\d", "limit": 10}
    untouched = decisions.fix_response(response(call()), ["invalid_escapes"])
    assert not untouched.repaired and untouched.applied == ()
    assert decide(untouched, tools=REGISTRY, repaired=False).kind == "tool"
    assert re.search(r"FixedResponse", decisions.fix_response.__doc__ or "")
