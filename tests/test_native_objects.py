"""The objects the native backend builds without running their ``__init__``
(responses, items, usage, SSE events) are the objects ``__init__`` builds.

The bindings allocate a frozen dataclass and set each field, skipping the
keyword matching of ``__init__``. A field they forget would be an unset slot
(``AttributeError`` on read), a field they set wrong a different value: each
built object is compared, field by field, with the one its class's own
``__init__`` makes from the same values, and with the pure twin's.
"""

from __future__ import annotations

import dataclasses
import json
from types import ModuleType
from typing import Any

import pytest

from decisions import types as T

#: Every class the bindings build field by field.
BUILT = (
    T.SSEEvent,
    T.TextItem,
    T.RefusalItem,
    T.ReasoningItem,
    T.ToolCallItem,
    T.Usage,
    T.UsageReported,
    T.NormalizedResponse,
)


@pytest.mark.parametrize("cls", BUILT, ids=lambda c: c.__name__)
def test_built_classes_have_no_post_init(cls: type) -> None:
    """Skipping ``__init__`` skips ``__post_init__`` too: none may have one."""
    assert dataclasses.is_dataclass(cls)
    assert not hasattr(cls, "__post_init__")
    assert cls.__dataclass_params__.frozen  # type: ignore[attr-defined]


def _same_as_init(value: Any) -> None:
    """``value`` (and every dataclass inside it) equals the instance its
    class's ``__init__`` builds from its fields, and every slot is set."""
    if isinstance(value, tuple):
        for item in value:
            _same_as_init(item)
        return
    if not dataclasses.is_dataclass(value) or isinstance(value, type):
        return
    fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value) if f.init}
    rebuilt = type(value)(**fields)
    assert rebuilt == value
    for name, field_value in fields.items():
        assert type(getattr(rebuilt, name)) is type(field_value), name
        _same_as_init(field_value)


def _events() -> list[dict[str, Any]]:
    return [
        {"type": "response_started", "response_id": "r1", "model": "m"},
        {"type": "item_started", "item_id": "t", "kind": "text"},
        {"type": "text_delta", "item_id": "t", "delta": "héllo"},
        {"type": "item_ended", "item_id": "t"},
        {"type": "item_started", "item_id": "z", "kind": "reasoning"},
        {"type": "reasoning_delta", "item_id": "z", "delta": "think", "signature": "sig"},
        {"type": "item_ended", "item_id": "z"},
        {"type": "item_started", "item_id": "f", "kind": "refusal"},
        {"type": "refusal_delta", "item_id": "f", "delta": "no"},
        {"type": "item_ended", "item_id": "f"},
        {"type": "tool_call_started", "item_id": "c", "call_id": "call_1", "name": "read_file"},
        {"type": "tool_arguments_delta", "item_id": "c", "delta": '{"path": "a"}'},
        {"type": "item_ended", "item_id": "c"},
        {"type": "usage", "input_tokens": 3, "output_tokens": None, "cached_tokens": 1, "reasoning_tokens": 0},
        {"type": "response_finished", "finish_reason": "stop", "raw_finish_reason": "end"},
    ]


def _assembled(impl: ModuleType, finish: str = "stop") -> tuple[Any, list[Any]]:
    assembler = impl.StreamAssembler("canonical", keep_events=True)
    for event in _events():
        if event["type"] == "response_finished":
            event = {**event, "finish_reason": finish}
        assembler.feed_event(json.dumps(event))
    return assembler.finish(), assembler.take_events()


@pytest.mark.parametrize("finish", ["stop", "length"])
def test_assembled_response_matches_init_and_pure(both: tuple[ModuleType, ModuleType], finish: str) -> None:
    native, pure = both
    response, events = _assembled(native, finish)
    _same_as_init(response)
    _same_as_init(tuple(events))
    assert (response, events) == _assembled(pure, finish)
    assert {type(item) for item in response.items} == {T.TextItem, T.RefusalItem, T.ReasoningItem, T.ToolCallItem}
    assert response.usage == T.Usage(input_tokens=3, output_tokens=None, cached_tokens=1, reasoning_tokens=0)
    assert response.tool_calls[0].complete is (finish == "stop")


def test_normalized_body_matches_init_and_pure(both: tuple[ModuleType, ModuleType]) -> None:
    native, pure = both
    body = {
        "id": "chatcmpl-1",
        "model": "gpt-4o",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": "text",
                    "tool_calls": [
                        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                        {"type": "function", "function": {"name": "g", "arguments": '{"a": 1}'}},
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3},
        "surprise": {"type": "x"},
    }
    for data in (json.dumps(body), json.dumps({**body, "usage": None})):
        response = native.normalize(data, provider="openai-chat")
        _same_as_init(response)
        assert response == pure.normalize(data, provider="openai-chat")
    assert any(call.call_id_generated for call in response.tool_calls)


def test_sse_events_match_init_and_pure(both: tuple[ModuleType, ModuleType]) -> None:
    native, pure = both
    data = b"event: a\nid: 7\nretry: 10\ndata: x\n\ndata: y\n\n"
    events = native.SSEDecoder().feed(data)
    _same_as_init(tuple(events))
    assert events == pure.SSEDecoder().feed(data)
