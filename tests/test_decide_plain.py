"""``decide`` tries a plain response first (``_plain_decision``: one pass,
no error of its own) and gives everything else to its general path. The two
must agree on every response: the same decision, or the same error (layer,
code, path, call, batch). The plain path is switched off by patching it to
decline, so the general path alone decides the same inputs."""

from __future__ import annotations

import json
import os
from datetime import datetime
from typing import Any
from uuid import UUID

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field, field_validator

from decide_helpers import needs_loads
from decisions import Limits, OutputError, Policy, Tool, ToolDecision, ToolRegistry, ToolRule, decide
from decisions.types import NormalizedResponse, ReasoningItem, RefusalItem, TextItem, ToolCallItem
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


class Stamp(BaseModel):
    """Values whose JSON-mode dump differs from their Python one, and an aliased field."""

    when: datetime
    ident: UUID
    tags: tuple[str, ...] = ()
    file_name: str = Field(default="", alias="fileName")


class Store(BaseModel):
    data: Any


WORKSPACE = os.path.realpath(os.path.dirname(__file__))
PYDANTIC_REGISTRY = ToolRegistry(
    [
        Tool(name="read_file", parameters=ReadFile, side_effects=False),
        Tool(name="search", parameters=Search),
        Tool(name="stamp", parameters=Stamp, side_effects=False),
        Tool(name="store", parameters=Store, side_effects=False),
    ]
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
        calls = [(call, call.arguments, call.validated) for call in decision.calls]
        return (calls, verdicts, decision.batch, decision.text, decision.provider, decision.response_id, decision.model)
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
    "a path outside the workspace in the second of two calls": [
        _call(0, "search", {"q": "a"}),
        _call(1, "read_file", {"path": "../../etc/passwd"}),
    ],
    "a path outside the workspace in the first of three calls": [
        _call(0, "read_file", {"path": "/etc/passwd"}),
        _call(1, "search", {"q": "a"}),
        _call(2, "read_file", {"path": "a.txt"}),
    ],
    "an unknown field of a model that does not forbid them": [_call(0, "search", {"q": "x", "mode": "w"})],
    "text between two calls": [
        _call(0, "search", {"q": "a"}),
        TextItem(item_id="t", text="and then"),
        _call(1, "read_file", {"path": "a.txt"}),
    ],
    "reasoning between two calls": [
        _call(0, "search", {"q": "a"}),
        ReasoningItem(item_id="r", text="next"),
        _call(1, "read_file", {"path": "a.txt"}),
    ],
    "a refusal beside a call": [RefusalItem(item_id="x", text="I can't."), _call(0, "read_file", {"path": "a.txt"})],
    "a call after a refusal after a call": [
        _call(0, "search", {}),
        RefusalItem(item_id="x", text="no"),
        _call(1, "search", {"q": "b"}),
    ],
    "arguments longer than validation's depth bound": [_call(0, "read_file", {"path": "d/" * 80 + "a.txt"})],
    "a dump that is not the arguments (JSON-mode values, an alias)": [
        _call(
            0,
            "stamp",
            {"fileName": "a.txt", "ident": "12345678-1234-5678-1234-567812345678", "when": "2026-01-02T03:04:05Z"},
        ),
        _call(1, "stamp", {"when": "2026-01-02T03:04:05+01:00", "ident": "12345678123456781234567812345678"}),
    ],
    "the wrapper of parallel calls": [_call(0, "multi_tool_use.parallel", {"tool_uses": []})],
    "a call id that is not a str": [
        ToolCallItem(item_id="fc_0", call_id=7, name="search", arguments="{}")  # type: ignore[arg-type]
    ],
    "a name that is not a str": [
        ToolCallItem(item_id="fc_0", call_id="call_0", name=b"search", arguments="{}")  # type: ignore[arg-type]
    ],
    "an item id that is not a str": [
        ToolCallItem(item_id=None, call_id="call_0", name="search", arguments="{}")  # type: ignore[arg-type]
    ],
    "arguments that are not a str": [
        ToolCallItem(item_id="fc_0", call_id="call_0", name="search", arguments=b"{}")  # type: ignore[arg-type]
    ],
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("policy", range(len(POLICIES)))
@pytest.mark.parametrize("repaired", [False, True])
def test_cases_decide_alike(monkeypatch: pytest.MonkeyPatch, case: str, policy: int, repaired: bool) -> None:
    response = NormalizedResponse(
        provider="openai-responses", response_id="resp_1", model="m", items=tuple(CASES[case]), finish_reason="stop"
    )
    for registry in REGISTRIES:
        options = {"tools": registry, "policy": POLICIES[policy], "repaired": repaired}
        assert _outcome(response, **options) == _general(monkeypatch, response, **options)


def _nested(depth: int, key: str | None) -> object:
    value: object = 1
    for _ in range(depth - 1):
        value = [value] if key is None else {key: value}
    return value


@pytest.mark.parametrize("key", [None, "k"])
@pytest.mark.parametrize("depth", [128, 129, 130, 131])
def test_arguments_at_validation_depth_decide_alike(
    monkeypatch: pytest.MonkeyPatch, key: str | None, depth: int
) -> None:
    """Arguments nested in arrays or in objects alone, around validation's
    depth bound (under limits that let the parser read them): a text of more
    than 128 brackets is refused."""
    response = NormalizedResponse(
        provider="openai-chat",
        response_id="r",
        model="m",
        items=(_call(0, "store", {"data": _nested(depth - 1, key)}),),
        finish_reason="tool_calls",
    )
    options = {"tools": PYDANTIC_REGISTRY, "limits": Limits(max_depth=256)}
    outcome = _outcome(response, **options)
    assert outcome == _general(monkeypatch, response, **options)
    assert (outcome[0] == "error") is (depth - 1 > 128)  # the brackets of the text


def test_the_dump_is_json_mode_and_by_field_name() -> None:
    response = NormalizedResponse(
        provider="openai-chat",
        response_id="r",
        model="m",
        items=tuple(CASES["a dump that is not the arguments (JSON-mode values, an alias)"]),
        finish_reason="tool_calls",
    )
    decision = decide(response, tools=PYDANTIC_REGISTRY)
    assert isinstance(decision, ToolDecision)
    assert [call.arguments for call in decision.calls] == [
        {
            "when": "2026-01-02T03:04:05Z",
            "ident": "12345678-1234-5678-1234-567812345678",
            "tags": [],
            "file_name": "a.txt",
        },
        {
            "when": "2026-01-02T03:04:05+01:00",
            "ident": "12345678-1234-5678-1234-567812345678",
            "tags": [],
            "file_name": "",
        },
    ]


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


def _plain(items: tuple[Any, ...], limits: Limits | None = None) -> object:
    response = NormalizedResponse(provider="openai-chat", response_id="r", model="m", items=items, finish_reason="stop")
    return decide_module._plain_decision(response, PYDANTIC_REGISTRY, None, None, limits, None, False)


def test_the_plain_path_answers_up_to_its_bounds() -> None:
    """Plain responses at each bound the plain path checks are its own to
    answer: as many calls as allowed, distinct ids among three, arguments
    longer than validation's depth bound with few brackets, and exactly that
    many brackets."""
    three = tuple(_call(k, "search", {"q": str(k)}) for k in range(3))
    assert isinstance(_plain(three), ToolDecision)
    assert isinstance(_plain(three, Limits(max_calls_per_response=3)), ToolDecision)
    assert _plain(three, Limits(max_calls_per_response=2)) is None
    long = (_call(0, "read_file", {"path": "d/" * 80 + "a.txt"}),)
    assert len(long[0].arguments) > 128 and isinstance(_plain(long), ToolDecision)
    brackets = (_call(0, "store", {"data": _nested(128, None)}),)
    assert brackets[0].arguments.count("[") + brackets[0].arguments.count("{") == 128
    assert isinstance(_plain(brackets, Limits(max_depth=256)), ToolDecision)
    deeper = (_call(0, "store", {"data": _nested(129, None)}),)
    assert _plain(deeper, Limits(max_depth=256)) is None
