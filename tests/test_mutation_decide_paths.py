"""What each path of ``decide`` must say on its own, not only that the two
paths agree: ``decide`` takes a plain response down its plain path whatever
options it is given, and the general path (which decides everything the
plain path declines) refuses what it must, with the error that names it.
Every test runs twice (``both_paths``), the second time with the plain path
declining everything."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from pydantic import BaseModel, field_serializer

from decide_helpers import both_paths, call, needs_loads, response
from decisions import (
    DomainError,
    Limits,
    Policy,
    SchemaError,
    StreamError,
    Tool,
    ToolDecision,
    ToolRegistry,
    ToolRule,
    decide,
)
from decisions.types import NormalizedResponse, TextItem, ToolCallItem
from decisions.validate import decide as decide_module

pytestmark = [needs_loads, both_paths]


class Search(BaseModel):
    """A model that says nothing of unknown fields (Pydantic's default would ignore them)."""

    q: str
    limit: int = 10


class Fragile(BaseModel):
    """A model whose dump raises for one value."""

    name: str

    @field_serializer("name")
    def _dump(self, value: str) -> str:
        if value == "boom":
            raise RuntimeError("cannot write it")
        return value


REGISTRY = ToolRegistry(
    [Tool(name="search", parameters=Search, side_effects=False), Tool(name="fragile", parameters=Fragile)]
)


def _error(expected: type[Exception], **options: Any) -> Any:
    target = options.pop("response")
    with pytest.raises(expected) as info:
        decide(target, **options)
    return info.value


# ---------------------------------------------------------------- the plain path is taken


@pytest.mark.parametrize("tools", [None, REGISTRY])
@pytest.mark.parametrize("policy", [None, Policy()])
@pytest.mark.parametrize("limits", [None, Limits()])
def test_a_plain_response_takes_the_plain_path(
    monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest, tools: Any, policy: Any, limits: Any
) -> None:
    """With every kind of option ``decide`` reads as plain, its general path
    (whose first step is ``_complete``) is never reached once the call's
    name is known (without a registry, the general path checks a name the
    first time it meets it)."""
    if request.node.callspec.params["decide_paths"] == "general path only":
        pytest.skip("the plain path is switched off in this run")
    target = response(call("search", '{"q": "x"}'))
    decide(target, tools=tools, policy=policy, limits=limits)

    def unreached(_: object) -> Any:
        raise AssertionError("the general path was taken")

    monkeypatch.setattr(decide_module, "_complete", unreached)
    decision = decide(target, tools=tools, policy=policy, limits=limits)
    assert isinstance(decision, ToolDecision) and decision.calls[0].name == "search"


# ---------------------------------------------------------------- what the general path refuses


def test_an_unknown_field_is_refused_even_where_the_model_would_ignore_it() -> None:
    error = _error(SchemaError, response=response(call("search", '{"q": "x", "mode": "w"}')), tools=REGISTRY)
    assert error.code == "SCHEMA_MISMATCH" and error.call_index == 0
    assert [issue["path"] for issue in error.issues] == ["$.calls[0].arguments.mode"]


def test_a_dump_that_raises_refuses_the_call() -> None:
    error = _error(SchemaError, response=response(call("fragile", '{"name": "boom"}', call_id="c9")), tools=REGISTRY)
    assert error.code == "SCHEMA_MISMATCH"
    assert (error.call_index, error.call_id, error.tool) == (0, "c9", "fragile")
    assert error.issues == (
        {
            "path": "$.calls[0].arguments",
            "code": "invalid",
            "expected": "arguments the tool's serializer can write (it raised PydanticSerializationError)",
        },
    )
    assert isinstance(decide(response(call("fragile", '{"name": "ok"}')), tools=REGISTRY), ToolDecision)


def test_a_name_spelled_like_a_policy_rule_is_refused_without_a_registry() -> None:
    policy = Policy(tools={"search": ToolRule()})
    error = _error(DomainError, response=response(call("Search", "{}", call_id="c2")), policy=policy)
    assert error.code == "AMBIGUOUS_TOOL_NAME" and error.path == "$.calls[0].name"
    assert (error.call_index, error.call_id, error.tool) == (0, "c2", "Search")
    assert decide(response(call("search", "{}")), policy=policy).verdicts[0].status == "allowed"


def test_the_wrapper_of_other_calls_is_refused_without_a_registry() -> None:
    wrapped = call("multi_tool_use.parallel", '{"tool_uses": []}', call_id="c3")
    error = _error(DomainError, response=response(call("search", "{}", call_id="c1"), wrapped))
    assert error.code == "UNKNOWN_TOOL" and error.path == "$.calls[1].name"
    assert (error.call_index, error.call_id, error.tool) == (1, "c3", "multi_tool_use.parallel")
    assert error.message.startswith("'multi_tool_use.parallel' wraps other calls in its arguments")
    assert error.hint == "call each tool directly, in calls of its own"


# ---------------------------------------------------------------- the completeness gate


def test_the_first_unfinished_call_is_named() -> None:
    error = _error(
        StreamError,
        response=response(
            call("search", '{"q": "a"}', call_id="c0", complete=False),
            call("search", '{"q": "b"}', call_id="c1"),
            call("search", '{"q": "c"}', call_id="c2", complete=False),
        ),
    )
    assert error.code == "INCOMPLETE_TOOL_CALL" and (error.call_index, error.call_id) == (0, "c0")


class _SubCall(ToolCallItem):
    """A tool call of a subclass: still a tool call."""


def test_a_tool_call_of_a_subclass_is_a_call() -> None:
    sub = _SubCall(item_id="i", call_id="c0", name="search", arguments='{"q": "x"}')
    decision = decide(response(sub), tools=REGISTRY)
    assert isinstance(decision, ToolDecision) and [c.call_id for c in decision.calls] == ["c0"]


def test_an_item_decide_cannot_read_is_named_by_its_type() -> None:
    with pytest.raises(TypeError, match=r"^response\.items\[1\] is a dict, not a TextItem"):
        decide(response(call("search", '{"q": "x"}'), {"text": "x"}))  # type: ignore[arg-type]


def test_a_response_with_no_finish_reason_may_be_retried() -> None:
    error = _error(StreamError, response=response(call("search", "{}"), finish="unknown"))
    assert error.code == "UNKNOWN_FINISH_REASON" and error.retryable is True


def test_an_unknown_finish_reason_gets_the_hint_its_provider_reason_has() -> None:
    paused = _error(StreamError, response=response(TextItem(item_id="t", text="x"), finish="unknown", raw="pause_turn"))
    assert (paused.hint, paused.retryable) == decide_module._UNKNOWN_FINISH_HINTS["pause_turn"]
    assert paused.retryable is False
    short = _error(
        StreamError,
        response=response(TextItem(item_id="t", text="x"), finish="unknown", raw="insufficient_system_resource"),
    )
    assert (short.hint, short.retryable) == decide_module._UNKNOWN_FINISH_HINTS["insufficient_system_resource"]
    assert short.retryable is True
    other = _error(StreamError, response=response(TextItem(item_id="t", text="x"), finish="unknown", raw="odd"))
    assert other.hint == decide_module._FINISH_ERRORS["unknown"][1]
    cut = _error(StreamError, response=response(TextItem(item_id="t", text="x"), finish="length", raw="pause_turn"))
    assert cut.hint == decide_module._FINISH_ERRORS["length"][1]


# ---------------------------------------------------------------- generated call ids


def _anonymous(*items: Any) -> NormalizedResponse:
    return NormalizedResponse(
        provider="openai-chat", response_id=None, model="m", items=items, finish_reason="tool_calls"
    )


def test_generated_call_ids_of_a_response_without_an_id_are_prefixed_by_its_digest() -> None:
    target = _anonymous(call("search", '{"q": "a"}', call_id="call_0", generated=True), call("search", '{"q": "b"}'))
    prefix = "gen-" + hashlib.sha256(repr(target).encode("utf-8", "surrogatepass")).hexdigest()[:24]
    decision = decide(target, tools=REGISTRY)
    assert isinstance(decision, ToolDecision)
    assert [c.call_id for c in decision.calls] == [f"{prefix}:call_0", "call_1"]
    same = decide(_anonymous(*target.items), tools=REGISTRY)
    assert isinstance(same, ToolDecision) and same.calls[0].call_id == f"{prefix}:call_0"


def test_call_ids_the_provider_sent_are_kept() -> None:
    decision = decide(_anonymous(call("search", '{"q": "a"}', call_id="call_0")), tools=REGISTRY)
    assert isinstance(decision, ToolDecision) and decision.calls[0].call_id == "call_0"
    named = response(call("search", '{"q": "a"}', call_id="call_0", generated=True))
    decision = decide(named, tools=REGISTRY)
    assert isinstance(decision, ToolDecision) and decision.calls[0].call_id == "call_0"


def test_arguments_parsed_once_are_the_calls_own() -> None:
    arguments = {"q": "x", "limit": 3}
    decision = decide(response(call("search", json.dumps(arguments))))
    assert isinstance(decision, ToolDecision) and decision.calls[0].arguments == arguments
