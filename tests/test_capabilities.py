"""Capabilities per provider and the strategy chosen from them."""

from __future__ import annotations

import dataclasses
import json
from typing import Optional

import pytest
from pydantic import BaseModel

import decisions
from decisions.request.capabilities import STRATEGIES, Capabilities, capabilities
from decisions.request.fragments import choose_strategy


class Answer(BaseModel):
    text: str
    confidence: Optional[float] = None


class Node(BaseModel):
    name: str
    children: list["Node"] = []


class Counts(BaseModel):
    counts: dict[str, int]


def test_profiles_describe_the_four_apis() -> None:
    for provider in ("openai-chat", "openai-responses", "anthropic", "gemini"):
        caps = capabilities(provider)
        assert isinstance(caps, Capabilities) and caps.provider == provider
        assert caps.native_structured_output and caps.tool_calling and caps.parallel_tool_calls
        assert {"type", "properties", "required", "enum"} <= caps.supported_schema_keywords
    assert capabilities("openai-chat").strict_requires_all_required
    assert not capabilities("anthropic").strict_requires_all_required
    assert not capabilities("anthropic").recursive_refs
    assert not capabilities("gemini").strict_json_schema
    assert not capabilities("gemini").streaming_tool_arguments
    assert "minLength" not in capabilities("openai-responses").supported_schema_keywords
    assert "minimum" not in capabilities("anthropic").supported_schema_keywords
    assert "const" not in capabilities("gemini").supported_schema_keywords


def test_capabilities_are_frozen_and_serialisable() -> None:
    caps = decisions.capabilities("anthropic")
    with pytest.raises(dataclasses.FrozenInstanceError):
        caps.tool_calling = False  # type: ignore[misc]
    data = caps.to_dict()
    assert json.loads(json.dumps(data)) == data
    assert data["supported_schema_keywords"] == sorted(caps.supported_schema_keywords)


def test_overrides_and_unknown_provider() -> None:
    local = capabilities("openai-compatible", tool_calling=True, supported_schema_keywords=["type"])
    assert local.tool_calling and local.supported_schema_keywords == frozenset({"type"})
    assert capabilities("openai-compatible").tool_calling is False
    with pytest.raises(ValueError, match="unknown provider"):
        capabilities("mistral")
    with pytest.raises(TypeError):
        capabilities("gemini", no_such_field=True)


def test_strategy_follows_capabilities_not_names() -> None:
    assert STRATEGIES == ("native_structured_output", "tool_structured_response", "json_text")
    openai = capabilities("openai-chat")
    assert choose_strategy(openai, Answer) == "native_structured_output"
    assert (
        choose_strategy(capabilities("openai-chat", native_structured_output=False), Answer)
        == "tool_structured_response"
    )
    assert choose_strategy(capabilities("openai-compatible"), Answer) == "json_text"
    assert choose_strategy(capabilities("openai-compatible", tool_calling=True), Answer) == "tool_structured_response"
    # the same rules decide for any provider: a recursive schema where strict
    # recursion is not allowed moves to a (non-strict) tool
    assert choose_strategy(capabilities("anthropic"), Node) == "tool_structured_response"
    assert choose_strategy(capabilities("openai-chat", recursive_refs=False), Node) == "tool_structured_response"
    # forced strict with nothing that can take it: JSON text
    assert choose_strategy(capabilities("anthropic"), Node, strict=True) == "json_text"
    # an open map cannot be strict; a non-strict tool can carry it
    assert choose_strategy(openai, Counts) == "tool_structured_response"
    assert choose_strategy(openai) == "native_structured_output"
