"""``decide`` tries a plain response first (``_plain_decision``: one pass,
no error of its own) and gives everything else to its general path. The two
must agree on every response: the same decision, or the same error (layer,
code, path, call, batch). The plain path is switched off by patching it to
decline, so the general path alone decides the same inputs."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, field_validator

from decide_helpers import needs_loads
from decisions import Limits, OutputError, Policy, Tool, ToolDecision, ToolRegistry, ToolRule, decide
from decisions.types import NormalizedResponse, ReasoningItem, TextItem, ToolCallItem
from decisions.validate import decide as decide_module
from test_decide_properties import REGISTRY as JSON_SCHEMA_REGISTRY
from test_decide_properties import responses

pytestmark = needs_loads


class ReadFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str

    @field_validator("path")
    @classmethod
    def _no_tilde(cls, value: str) -> str:
        if value.startswith("~"):
            raise ValueError("no home paths")
        return value


class Search(BaseModel):
    q: str = "all"
    limit: int = 10


WORKSPACE = os.path.realpath(os.path.dirname(__file__))
PYDANTIC_REGISTRY = ToolRegistry(
    [Tool(name="read_file", parameters=ReadFile, side_effects=False), Tool(name="search", parameters=Search)]
)
POLICIES: list[Policy | None] = [
    None,
    Policy(),
    Policy(batch="per_call"),
    Policy(workspace=WORKSPACE, tools={"read_file": ToolRule(paths={"path": "read"})}),
    Policy(default="deny", tools={"search": ToolRule()}),
]
REGISTRIES = [None, JSON_SCHEMA_REGISTRY, PYDANTIC_REGISTRY]


def _outcome(response: NormalizedResponse, **options: Any) -> object:
    try:
        decision = decide(response, **options)
    except OutputError as error:
        return ("error", error.to_dict())
    except (TypeError, ValueError) as error:
        return (type(error).__name__, str(error))
    if isinstance(decision, ToolDecision):  # a denied verdict's error compares by what it says
        verdicts = [
            (v.call_id, v.status, v.error and v.error.to_dict(), v.reasons, dict(v.paths)) for v in decision.verdicts
        ]
        return (decision.calls, verdicts, decision.batch, decision.text, decision.provider, decision.response_id)
    return decision


def _general(monkeypatch: pytest.MonkeyPatch, response: NormalizedResponse, **options: Any) -> object:
    with monkeypatch.context() as patched:
        patched.setattr(decide_module, "_plain_decision", lambda *args: None)
        return _outcome(response, **options)


@given(
    responses(st.sampled_from(["stop", "tool_calls"]), need_call=True),
    st.sampled_from(range(len(REGISTRIES))),
    st.sampled_from(range(len(POLICIES))),
    st.booleans(),
    st.sampled_from([None, Limits(max_calls_per_response=2), Limits(max_depth=2)]),
)
def test_the_plain_path_decides_as_the_general_path(
    response: NormalizedResponse, registry: int, policy: int, repaired: bool, limits: Limits | None
) -> None:
    options = {"tools": REGISTRIES[registry], "policy": POLICIES[policy], "repaired": repaired, "limits": limits}
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert _outcome(response, **options) == _general(monkeypatch, response, **options)


def _call(index: int, name: str, arguments: object) -> ToolCallItem:
    return ToolCallItem(item_id=f"fc_{index}", call_id=f"call_{index}", name=name, arguments=json.dumps(arguments))


CASES = {
    "two calls": [_call(0, "read_file", {"path": "a.txt"}), _call(1, "search", {"q": "x"})],
    "text and reasoning beside a call": [
        ReasoningItem(item_id="r", text="thinking"),
        TextItem(item_id="t", text="I will read it."),
        _call(0, "read_file", {"path": "a.txt"}),
    ],
    "defaults filled by the model's dump": [_call(0, "search", {})],
    "a validator that refuses": [_call(0, "read_file", {"path": "~/.ssh/id_rsa"})],
    "an unknown field": [_call(0, "read_file", {"path": "a", "mode": "w"})],
    "an unknown tool": [_call(0, "read_flie", {"path": "a"})],
    "a repeated call id": [_call(0, "read_file", {"path": "a"}), _call(0, "read_file", {"path": "b"})],
    "a call id repeated among three": [_call(0, "search", {}), _call(1, "search", {}), _call(0, "search", {})],
    "a call id repeated among four": [_call(k % 3, "search", {"q": str(k)}) for k in range(4)],
    "four calls": [_call(k, "search", {"q": str(k)}) for k in range(4)],
    "a path outside the workspace": [_call(0, "read_file", {"path": "../../etc/passwd"})],
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("policy", range(len(POLICIES)))
def test_cases_decide_alike(monkeypatch: pytest.MonkeyPatch, case: str, policy: int) -> None:
    response = NormalizedResponse(
        provider="openai-responses", response_id="resp_1", model="m", items=tuple(CASES[case]), finish_reason="stop"
    )
    for registry in REGISTRIES:
        options = {"tools": registry, "policy": POLICIES[policy]}
        assert _outcome(response, **options) == _general(monkeypatch, response, **options)


def test_a_plain_response_takes_the_plain_path() -> None:
    """The one-pass path decides the common case itself (so the tests above
    compare two paths, not one with itself)."""
    response = NormalizedResponse(
        provider="openai-chat", response_id="r", model="m", items=tuple(CASES["two calls"]), finish_reason="tool_calls"
    )
    for registry in REGISTRIES:
        for policy in (None, POLICIES[3]):
            decision = decide_module._plain_decision(response, registry, policy, None, None, None, False)
            assert isinstance(decision, ToolDecision)
            assert decision == decide(response, tools=registry, policy=policy)
    plain = decide_module._plain_decision(response, PYDANTIC_REGISTRY, None, None, None, None, False)
    assert plain is not None
    assert [call.arguments for call in plain.calls] == [{"path": "a.txt"}, {"q": "x", "limit": 10}]
    assert [verdict.status for verdict in plain.verdicts] == ["allowed", "allowed"]
