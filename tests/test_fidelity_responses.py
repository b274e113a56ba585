"""OpenAI Responses as OpenAI-compatible servers send it, on both backends:
reasoning that only ``response.completed`` carries (OpenRouter), rebuilt from
a recorded OpenAI stream by dropping the reasoning item's events."""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import pytest

from conftest import FIXTURES
from decisions.errors import OutputError
from decisions.types import NormalizedResponse, ReasoningItem

RESPONSES = FIXTURES / "vercel-ai" / "packages" / "openai" / "src" / "responses" / "__fixtures__"


def events_of(name: str, which: int = 0) -> list[dict[str, Any]]:
    """The events of response ``which`` of a recording (some hold several turns)."""
    lines = (RESPONSES / f"{name}.chunks.txt").read_text().splitlines()
    turns: list[list[dict[str, Any]]] = []
    for event in (json.loads(line) for line in lines if line.strip()):
        if event["type"] == "response.created":
            turns.append([])
        turns[-1].append(event)
    return turns[which]


def run(impl: ModuleType, events: list[dict[str, Any]]) -> NormalizedResponse | str:
    assembler = impl.StreamAssembler("openai-responses")
    try:
        assembler.feed(b"".join(f"data: {json.dumps(e)}\n\n".encode() for e in events))
        response: NormalizedResponse = assembler.finish()
    except OutputError as err:
        return err.code
    return response


def _about(event: dict[str, Any], kind: str) -> bool:
    item = event.get("item")
    return event["type"].startswith("response.reasoning") or (isinstance(item, dict) and item.get("type") == kind)


def test_reasoning_only_in_completed_output_is_taken_from_it(impl: ModuleType) -> None:
    events = events_of("openai-reasoning-encrypted-content.1")
    streamed = run(impl, events)
    assert isinstance(streamed, NormalizedResponse)
    unannounced = [e for e in events if not _about(e, "reasoning")]
    response = run(impl, unannounced)
    assert isinstance(response, NormalizedResponse), response
    assert response.finish_reason == streamed.finish_reason
    assert response.text == streamed.text
    # (the recording's encrypted_content differs between output_item.done and response.completed)
    reasoning = [(i.item_id, i.text, bool(i.signature)) for i in response.items if isinstance(i, ReasoningItem)]
    assert reasoning == [(i.item_id, i.text, True) for i in streamed.items if isinstance(i, ReasoningItem)]
    assert len(reasoning) == 1
    assert response.unknown_events.get("completed_only:reasoning") == 1
    # placed at its output position (before the call it preceded), not after the streamed items
    assert [i.item_id for i in response.items] == [i.item_id for i in streamed.items]


def test_a_message_only_in_completed_output_is_still_a_mismatch(impl: ModuleType) -> None:
    events = events_of("openai-reasoning-encrypted-content.1", 3)
    assert isinstance(run(impl, events), NormalizedResponse)
    unannounced = [e for e in events if not _about(e, "message") and "item_id" not in e]
    assert run(impl, unannounced) == "OUTPUT_MISMATCH"


def test_a_function_call_only_in_completed_output_is_still_a_mismatch(impl: ModuleType) -> None:
    events = events_of("openai-reasoning-encrypted-content.1")
    unannounced = [e for e in events if not _about(e, "function_call") and "function_call" not in e["type"]]
    assert run(impl, unannounced) == "OUTPUT_MISMATCH"


@pytest.mark.parametrize("name", ["openai-file-search-tool.1", "openai-code-interpreter-tool.1"])
def test_provider_run_tools_only_in_completed_output(impl: ModuleType, name: str) -> None:
    events = events_of(name)
    kinds = {e["item"]["type"] for e in events if isinstance(e.get("item"), dict)} - {
        "message",
        "reasoning",
        "function_call",
    }
    unannounced = [e for e in events if not (isinstance(e.get("item"), dict) and e["item"]["type"] in kinds)]
    unannounced = [e for e in unannounced if not any(k.split("_call")[0] in e["type"] for k in kinds)]
    assert isinstance(run(impl, unannounced), NormalizedResponse)


@pytest.mark.parametrize(
    "layout",
    [["rs", "fc"], ["fc", "rs"], ["rs", "fc", "rs2"], ["rs", "rs2", "fc"], ["rs2", "fc", "rs"]],
    ids=lambda layout: "-".join(layout),
)
def test_reasoning_only_in_completed_output_keeps_its_output_position(impl: ModuleType, layout: list[str]) -> None:
    """Each reasoning item ``response.completed`` alone carries is placed at
    its index in ``response.output`` (first, last, between, two in a row)."""
    events = [e for e in events_of("openai-reasoning-encrypted-content.1") if not _about(e, "reasoning")]
    completed = events[-1]
    assert completed["type"] == "response.completed"
    (rs,) = [i for i in completed["response"]["output"] if i["type"] == "reasoning"]
    (fc,) = [i for i in completed["response"]["output"] if i["type"] == "function_call"]
    by_name = {"rs": rs, "fc": fc, "rs2": {**rs, "id": rs["id"] + "_2"}}
    output = [by_name[name] for name in layout]
    events[-1] = {**completed, "response": {**completed["response"], "output": output}}
    response = run(impl, events)
    assert isinstance(response, NormalizedResponse), response
    assert [i.item_id for i in response.items] == [item["id"] for item in output]
    assert response.unknown_events.get("completed_only:reasoning") == layout.count("rs") + layout.count("rs2")
