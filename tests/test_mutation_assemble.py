"""The assembler's fast path (canonical events read from the wire) and its
snapshot, with the results written out on both backends (the mutation run sees
the pure backend alone): the order errors in full, a snapshot's every field."""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import pytest

from decisions import Limits, StreamError


def ev(**fields: Any) -> bytes:
    return ("data: " + json.dumps(fields) + "\n\n").encode()


START = ev(type="response_started", response_id="r", model="m")
TEXT = ev(type="item_started", item_id="t", kind="text") + ev(type="text_delta", item_id="t", delta="Hi")
CALL = ev(type="tool_call_started", item_id="a", call_id="c1", name="f") + ev(
    type="tool_arguments_delta", item_id="a", delta='{"x": [1, 2'
)
DONE = ev(type="item_ended", item_id="t") + ev(type="item_ended", item_id="a")
FINISH = ev(type="response_finished", finish_reason="tool_calls")


def wire(impl: ModuleType, data: bytes, **limits: int) -> Any:
    assembler = impl.StreamAssembler("canonical", limits=Limits(**limits) if limits else None)
    try:
        assembler.feed(data)
        return assembler
    except StreamError as error:
        return (error.code, error.message)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (ev(type="text_delta", item_id="t", delta="x"), ("EVENT_BEFORE_START", "text_delta before response_started")),
        (
            ev(type="tool_arguments_delta", item_id="a", delta="x"),
            ("EVENT_BEFORE_START", "tool_arguments_delta before response_started"),
        ),
        (START + FINISH + TEXT, ("EVENT_AFTER_TERMINAL", "item_started after the terminal event")),
        (
            START + FINISH + ev(type="text_delta", item_id="t", delta="x"),
            ("EVENT_AFTER_TERMINAL", "text_delta after the terminal event"),
        ),
        (
            START + FINISH + ev(type="tool_arguments_delta", item_id="a", delta="x"),
            ("EVENT_AFTER_TERMINAL", "tool_arguments_delta after the terminal event"),
        ),
    ],
)
def test_order_errors_on_the_fast_path(impl: ModuleType, data: bytes, expected: Any) -> None:
    assert wire(impl, data) == expected


def test_a_snapshot_in_full_then_the_response(impl: ModuleType) -> None:
    assembler = wire(impl, START + TEXT + CALL)
    snap = assembler.snapshot()
    assert (snap.provider, snap.response_id, snap.model, snap.text, snap.state) == (
        "canonical",
        "r",
        "m",
        "Hi",
        "streaming",
    )
    ((call),) = snap.calls
    assert (call.item_id, call.call_id, call.name, call.arguments, call.partial, call.ended, call.call_kind) == (
        "a",
        "c1",
        "f",
        '{"x": [1, 2',
        {"x": [1, 2]},
        False,
        "function",
    )
    assembler.feed(ev(type="tool_arguments_delta", item_id="a", delta="]}") + DONE + FINISH)
    snap = assembler.snapshot()
    assert snap.state == "completed" and snap.calls[0].ended and snap.calls[0].partial == {"x": [1, 2]}
    response = assembler.finish()
    assert (response.text, [(c.name, c.arguments) for c in response.tool_calls]) == ("Hi", [("f", '{"x": [1, 2]}')])


def test_a_snapshot_of_a_cancelled_stream(impl: ModuleType) -> None:
    assembler = wire(impl, START + TEXT)
    assembler.abort()
    with pytest.raises(StreamError) as info:
        assembler.snapshot()
    assert (info.value.code, info.value.message) == ("STREAM_CANCELLED", "the stream was cancelled by the caller")
