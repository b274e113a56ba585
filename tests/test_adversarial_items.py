"""A response or a decision built by hand: ``decide`` reads only the items and fields it
knows, each of its own type. An item of another kind (a dict, a snapshot's
call, a look-alike class) is a TypeError, never skipped while the text beside
it becomes the final answer; a tool call's field of another type
(``complete="false"``, a ``None`` name or id, arguments given as a dict) is a
TypeError naming the field, never read by its truthiness. Both backends (the
arguments are parsed by the backend's ``loads``), plain and general paths. A
``ToolDecision`` made by hand names a batch mode and verdict statuses that
exist: another spelling would have run calls as ``per_call`` does.
"""

from __future__ import annotations

import json
import os
from types import ModuleType
from typing import Any

import pytest

from decide_helpers import both_paths
from decisions import DomainError, Policy, Tool, ToolDecision, ToolRule, _backend, check_complete, decide
from decisions.types import CallSnapshot, NormalizedResponse, ReasoningItem, TextItem, ToolCallItem
from decisions.validate.decision import CallVerdict, ToolCall

pytestmark = both_paths

TOOLS = [Tool(name="read_file", parameters={"type": "object", "properties": {"path": {"type": "string"}}})]
GOOD = {"item_id": "fc_1", "call_id": "call_1", "name": "read_file", "arguments": '{"path": "a.txt"}'}


def _response(*items: Any, finish: str = "stop") -> NormalizedResponse:
    return NormalizedResponse(provider="openai-chat", response_id="r", model="m", items=items, finish_reason=finish)  # type: ignore[arg-type]


class _LookAlike:
    """Duck-types a tool call: every field a ToolCallItem has."""

    kind = "tool_call"
    item_id, call_id, name, arguments = "fc_1", "call_1", "read_file", '{"path": "a.txt"}'
    complete, call_id_generated, call_kind = True, False, "function"


FOREIGN_ITEMS = {
    "dict": dict(GOOD, type="function_call"),
    "tuple": ("read_file", '{"path": "a.txt"}'),
    "look-alike class": _LookAlike(),
    "snapshot call": CallSnapshot(
        item_id="fc_1", call_id="call_1", name="read_file", arguments='{"path": "a.txt"}', partial=None, ended=True
    ),
}


@pytest.mark.parametrize("finish", ["stop", "tool_calls"])
@pytest.mark.parametrize("tools", [None, TOOLS], ids=["no registry", "registry"])
@pytest.mark.parametrize("kind", list(FOREIGN_ITEMS))
def test_an_item_of_another_kind_is_never_skipped(
    monkeypatch: pytest.MonkeyPatch, impl: ModuleType, kind: str, tools: Any, finish: str
) -> None:
    monkeypatch.setattr(_backend, "impl", impl)
    response = _response(FOREIGN_ITEMS[kind], TextItem(item_id="t", text="All done."), finish=finish)
    with pytest.raises(TypeError, match=r"response\.items\[0\] is a \w+, not a TextItem"):
        decide(response, tools=tools)
    with pytest.raises(TypeError, match=r"response\.items\[0\]"):
        check_complete(response)


BAD_FIELDS = [
    ("complete", "false", "str"),
    ("complete", "no", "str"),
    ("complete", 1, "int"),
    ("complete", None, "NoneType"),
    ("name", None, "NoneType"),
    ("name", b"read_file", "bytes"),
    ("call_id", None, "NoneType"),
    ("call_id", 7, "int"),
    ("item_id", None, "NoneType"),
    ("arguments", {"path": "a.txt"}, "dict"),
    ("arguments", b'{"path": "a.txt"}', "bytes"),
    ("call_id_generated", 0, "int"),
    ("call_id_generated", "false", "str"),
    ("call_kind", None, "NoneType"),
]


@pytest.mark.parametrize("tools", [None, TOOLS], ids=["no registry", "registry"])
@pytest.mark.parametrize(("field", "value", "type_name"), BAD_FIELDS)
def test_a_call_field_of_another_type_is_refused(
    monkeypatch: pytest.MonkeyPatch, impl: ModuleType, field: str, value: object, type_name: str, tools: Any
) -> None:
    monkeypatch.setattr(_backend, "impl", impl)
    call = ToolCallItem(**{**GOOD, field: value})  # type: ignore[arg-type]
    reasoning = ReasoningItem(item_id="r", text="thinking")
    want = rf"response\.items\[1\]\.{field} must be a \w+, not {type_name}"
    for finish in ("stop", "tool_calls"):
        with pytest.raises(TypeError, match=want):
            decide(_response(reasoning, call, finish=finish), tools=tools)


def test_a_text_of_another_type_is_refused(monkeypatch: pytest.MonkeyPatch, impl: ModuleType) -> None:
    monkeypatch.setattr(_backend, "impl", impl)
    with pytest.raises(TypeError, match=r"response\.items\[0\]\.text must be a str, not bytes"):
        decide(_response(TextItem(item_id="t", text=b"done")))  # type: ignore[arg-type]


@pytest.mark.parametrize("tools", [None, TOOLS], ids=["no registry", "registry"])
def test_the_well_typed_call_still_runs(monkeypatch: pytest.MonkeyPatch, impl: ModuleType, tools: Any) -> None:
    """The control: the same call with each field of its type is decided."""
    monkeypatch.setattr(_backend, "impl", impl)
    decision = decide(_response(ReasoningItem(item_id="r", text="thinking"), ToolCallItem(**GOOD)), tools=tools)
    assert isinstance(decision, ToolDecision)
    assert [(c.call_id, c.name, c.arguments) for c in decision.executable_calls] == [
        ("call_1", "read_file", {"path": "a.txt"})
    ]


_WRAPPED = json.dumps(
    {
        "tool_uses": [
            {"recipient_name": "functions.read_file", "parameters": {"path": "/etc/passwd"}},
            {"recipient_name": "functions.read_file", "parameters": {"path": "a.txt"}},
        ]
    }
)


@pytest.mark.parametrize(
    "policy",
    [
        None,
        Policy(workspace=os.getcwd(), tools={"read_file": ToolRule(paths={"path": "read"})}),
        Policy(tools={"multi_tool_use.parallel": ToolRule()}),
    ],
    ids=["no policy", "path rules", "a rule naming the wrapper"],
)
def test_the_wrapper_of_other_calls_needs_a_registry(
    monkeypatch: pytest.MonkeyPatch, impl: ModuleType, policy: Policy | None
) -> None:
    """OpenAI Chat's ``multi_tool_use.parallel`` holds calls no schema, tool
    or policy check would see: without a registry it is UNKNOWN_TOOL (with
    one, it is a call of whatever the registry says it is)."""
    monkeypatch.setattr(_backend, "impl", impl)
    wrapper = ToolCallItem(item_id="fc_2", call_id="call_2", name="multi_tool_use.parallel", arguments=_WRAPPED)
    for items in [(wrapper,), (ToolCallItem(**GOOD), wrapper)]:
        with pytest.raises(DomainError) as caught:
            decide(_response(*items, finish="tool_calls"), policy=policy)
        assert (caught.value.code, caught.value.path, caught.value.call_id) == (
            "UNKNOWN_TOOL",
            f"$.calls[{len(items) - 1}].name",
            "call_2",
        )
    with pytest.raises(DomainError, match="UNKNOWN_TOOL|not registered"):
        decide(_response(wrapper, finish="tool_calls"), tools=TOOLS, policy=policy)
    wrapper_tool = Tool(name="multi_tool_use.parallel", parameters={"type": "object"})
    decision = decide(_response(wrapper, finish="tool_calls"), tools=[wrapper_tool])
    assert isinstance(decision, ToolDecision) and decision.executable_calls[0].name == "multi_tool_use.parallel"


# --- a decision built by hand: its batch mode and verdicts are checked when it is made

_CALLS = (ToolCall(call_id="a", name="rm", arguments={}), ToolCall(call_id="b", name="rm", arguments={}))


def _verdicts(first: str = "allowed", second: str = "denied") -> tuple[CallVerdict, CallVerdict]:
    return CallVerdict(call_id="a", status=first), CallVerdict(call_id="b", status=second)  # type: ignore[arg-type]


@pytest.mark.parametrize("batch", ["all-or-nothing", "ALL_OR_NOTHING", "", None, "per-call"])
def test_a_batch_mode_of_another_spelling_is_refused(batch: object) -> None:
    """A mode that is neither name would have run the allowed call of a
    batch with a denied one, as ``per_call`` does."""
    with pytest.raises(ValueError, match="ToolDecision.batch must be"):
        ToolDecision(calls=_CALLS, verdicts=_verdicts(), batch=batch)  # type: ignore[arg-type]


@pytest.mark.parametrize("status", ["Allowed", "allow", "ok", "", None])
def test_a_verdict_status_of_another_spelling_is_refused(status: object) -> None:
    with pytest.raises(ValueError, match="has no known status"):
        ToolDecision(calls=_CALLS, verdicts=_verdicts("allowed", status))  # type: ignore[arg-type]


def test_the_batch_modes_run_what_they_say() -> None:
    """The control: all or nothing runs nothing beside a denied call; per call runs the allowed one."""
    assert ToolDecision(calls=_CALLS, verdicts=_verdicts()).executable_calls == ()
    assert ToolDecision(calls=_CALLS, verdicts=_verdicts(), batch="per_call").executable_calls == _CALLS[:1]
