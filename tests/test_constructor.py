"""``Constructor`` (both backends) and the decisions ``decide`` builds with it.

``decide`` builds ``ToolCall``, ``CallVerdict`` and ``ToolDecision`` from
positional values without their ``__init__``. A value in the wrong position,
a field left unset or an invariant ``__post_init__`` would refuse must show
here: each built object equals what ``__init__`` builds from the same
fields, and each field holds what the response and the policy said.
"""

from __future__ import annotations

import abc
import dataclasses
import os
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

import decisions
from decisions import CallVerdict, Policy, Tool, ToolCall, ToolDecision, ToolRegistry, ToolRule
from decisions.types import NormalizedResponse, TextItem, ToolCallItem


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Pair:
    left: Any
    right: Any = None
    kind: str = dataclasses.field(default="pair", init=False)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Unslotted:
    left: Any


def test_builds_what_init_builds(impl: ModuleType) -> None:
    make = impl.Constructor(Pair)
    built = make([1], "r", "pair")
    assert built == Pair(left=[1], right="r")
    assert type(built) is Pair and make.cls is Pair
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.left = 2  # type: ignore[misc]


@pytest.mark.parametrize("values", [(), (1,), (1, 2), (1, 2, "pair", 4)])
def test_every_field_must_be_given(impl: ModuleType, values: tuple[Any, ...]) -> None:
    with pytest.raises(TypeError) as caught:
        impl.Constructor(Pair)(*values)
    assert str(caught.value) == f"Pair takes 3 field values, not {len(values)}"


def test_refuses_what_it_cannot_build(impl: ModuleType) -> None:
    with pytest.raises(TypeError) as not_dataclass:
        impl.Constructor(int)
    assert str(not_dataclass.value) == "Constructor takes a dataclass, not int"
    with pytest.raises(ValueError) as unslotted:
        impl.Constructor(Unslotted)
    assert str(unslotted.value) == "Constructor needs a dataclass whose slots are its fields, which Unslotted is not"


@dataclasses.dataclass(slots=True)
class Mapping(dict[str, Any]):
    left: Any


@dataclasses.dataclass(slots=True)
class Members(set[Any]):
    left: Any


@dataclasses.dataclass(slots=True)
class Failure(Exception):
    left: Any


@dataclasses.dataclass(slots=True)
class Abstract(abc.ABC):
    left: Any

    @abc.abstractmethod
    def run(self) -> None:
        """Never defined."""


@pytest.mark.parametrize("cls", [Mapping, Members, Failure, Abstract])
def test_builds_only_what_object_new_builds(impl: ModuleType, cls: type) -> None:
    """A dataclass whose instances need their built-in base's ``__new__`` (a
    dict or set whose storage an allocation alone leaves unset: using one
    crashed the interpreter) or that is abstract is refused as
    ``object.__new__`` refuses it, on each call."""
    make = impl.Constructor(cls)
    for _ in range(2):
        with pytest.raises(TypeError) as caught:
            make(1)
        with pytest.raises(TypeError) as direct:
            object.__new__(cls)
        assert str(caught.value) == str(direct.value)


@pytest.mark.parametrize("cls", [ToolCall, CallVerdict, ToolDecision])
def test_decision_classes_can_be_built(impl: ModuleType, cls: type) -> None:
    assert impl.Constructor(cls).cls is cls


class Read(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str


def _response(calls: list[tuple[str, str, str]], text: str = "") -> NormalizedResponse:
    items: list[Any] = [TextItem(item_id="t", text=text)] if text else []
    items += [
        ToolCallItem(item_id=f"item_{call_id}", call_id=call_id, name=name, arguments=args, call_id_generated=i == 1)
        for i, (call_id, name, args) in enumerate(calls)
    ]
    return NormalizedResponse(
        provider="openai-chat", response_id="resp_9", model="m-1", items=tuple(items), finish_reason="tool_calls"
    )


def _same_as_init(value: Any) -> None:
    fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value) if f.init}
    assert type(value)(**fields) == value


@pytest.mark.parametrize("batch", ["all_or_nothing", "per_call"])
def test_decide_fills_every_field(tmp_path: Path, batch: Any) -> None:
    (tmp_path / "src").mkdir()
    registry = ToolRegistry([Tool(name="read", parameters=Read, version="3"), Tool(name="free")])
    policy = Policy(
        workspace=tmp_path,
        tools={"read": ToolRule(paths={"path": "read"}), "free": ToolRule(approval="ask first")},
        batch=batch,
    )
    response = _response([("c1", "read", '{"path": "src/a.py"}'), ("c2", "free", '{"x": [1]}')], text="I will read it.")
    decision = decisions.decide(response, tools=registry, policy=policy)
    assert isinstance(decision, ToolDecision)
    assert (decision.kind, decision.batch, decision.text) == ("tool", batch, "I will read it.")
    assert (decision.provider, decision.response_id, decision.model) == ("openai-chat", "resp_9", "m-1")
    first, second = decision.calls
    assert (first.call_id, first.name, first.index, first.item_id, first.call_id_generated) == (
        "c1",
        "read",
        0,
        "item_c1",
        False,
    )
    assert (first.arguments, first.validated, first.tool_version, first.call_kind) == (
        {"path": "src/a.py"},
        Read(path="src/a.py"),
        "3",
        "function",
    )
    assert (second.call_id, second.name, second.index, second.item_id, second.call_id_generated) == (
        "c2",
        "free",
        1,
        "item_c2",
        True,
    )
    assert (second.arguments, second.validated, second.tool_version) == ({"x": [1]}, {"x": [1]}, "1")
    allowed, waiting = decision.verdicts
    assert (allowed.call_id, allowed.status, allowed.error, allowed.reasons, allowed.approved_by) == (
        "c1",
        "allowed",
        None,
        (),
        None,
    )
    assert dict(allowed.paths) == {"$.calls[0].arguments.path": os.path.join(os.path.realpath(tmp_path), "src/a.py")}
    assert allowed.empty_paths == ()
    assert (waiting.call_id, waiting.status, waiting.reasons, dict(waiting.paths)) == (
        "c2",
        "needs_approval",
        ("ask first",),
        {},
    )
    for value in (decision, *decision.calls, *decision.verdicts):
        _same_as_init(value)
    approved = decision.approve(approver="ops")
    assert approved.executable and approved.verdicts[1].approved_by == "ops"


def test_decide_without_tools_or_policy() -> None:
    decision = decisions.decide(_response([("c1", "anything", "{}")]))
    assert isinstance(decision, ToolDecision)
    (call,) = decision.calls
    assert (call.name, call.arguments, call.validated, call.tool_version, call.index) == ("anything", {}, {}, None, 0)
    (verdict,) = decision.verdicts
    assert (verdict.call_id, verdict.status, dict(verdict.paths), verdict.empty_paths) == ("c1", "allowed", {}, ())
    _same_as_init(decision)
    _same_as_init(call)
    _same_as_init(verdict)


class _Meta(type):
    """A metaclass of its own: the pure twin sets such a class's slots
    through their setters instead of building it as its slotted twin."""


@dataclasses.dataclass(frozen=True, slots=True)
class Custom(metaclass=_Meta):
    left: Any
    right: Any


@pytest.mark.parametrize(("cls", "values"), [(Pair, ([0], [1], "pair")), (Custom, ([0], [1]))])
def test_builds_each_kind_of_class_alike(impl: ModuleType, cls: type, values: tuple[Any, ...]) -> None:
    """A class of the plain metaclass and one of its own: each instance is
    of the class itself, holds each value in its own field, and is frozen
    and equal to what ``__init__`` builds."""
    built = impl.Constructor(cls)(*values)
    assert type(built) is cls and built.__class__ is cls
    assert tuple(getattr(built, f.name) for f in dataclasses.fields(cls)) == values
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.left = 2
    _same_as_init(built)
