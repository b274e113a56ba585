"""The pure twin's shortcuts against its general path: a mapper's
``fast_body`` (a whole body straight to its response) must give exactly what
``map_body`` and the assembler give, for every recorded body and mutations of
them, under default and tight limits; where it cannot, it must decline (None)
so that the general path raises its error."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from decisions import DEFAULT_LIMITS, Limits
from decisions._pure import pipeline
from decisions._pure.envelope import decode
from decisions._pure.providers import mapper_for
from decisions.errors import OutputError
from decisions.types import NormalizedResponse
from openai_mutations import damaged
from openai_recordings import FIXTURES, recordings, short

CHAT = "openai-chat"
BODIES = [path for path, file_format in recordings(CHAT) if file_format == "json-body"]


class _EventsOnly:
    """A mapper with its shortcut hidden: ``normalize_text`` takes the events."""

    def __init__(self, mapper: Any) -> None:
        self._mapper = mapper
        self.ARGUMENT_FIELDS = getattr(mapper, "ARGUMENT_FIELDS", ())

    @property
    def unknown_events(self) -> dict[str, int]:
        return self._mapper.unknown_events  # type: ignore[no-any-return]

    def map_body(self, body: Any) -> Any:
        return self._mapper.map_body(body)


def _outcome(text: bytes, limits: Limits, choice: int | None, fast: bool) -> Any:
    mapper = mapper_for(CHAT, choice)
    assert mapper is not None
    try:
        return pipeline.normalize_text(CHAT, mapper if fast else _EventsOnly(mapper), text, limits)  # type: ignore[arg-type]
    except OutputError as err:
        return (type(err).__name__, err.code, err.message, err.path, err.offset)


def _fast_taken(text: bytes, limits: Limits, choice: int | None) -> bool:
    mapper = mapper_for(CHAT, choice)
    try:
        body = decode(text, limits, ())
    except OutputError:
        return False
    return mapper.fast_body(body, CHAT, limits) is not None  # type: ignore[union-attr]


def check(body: Any, limits: Limits = DEFAULT_LIMITS, choice: int | None = None) -> bool:
    """Both paths give the same outcome; whether the shortcut answered."""
    text = json.dumps(body).encode()
    fast = _outcome(text, limits, choice, fast=True)
    events = _outcome(text, limits, choice, fast=False)
    assert fast == events
    taken = _fast_taken(text, limits, choice)
    if taken:
        assert isinstance(events, NormalizedResponse)
    return taken


def _body(path: str) -> Any:
    return json.loads((FIXTURES / path).read_bytes())


@pytest.mark.parametrize("path", BODIES, ids=short)
def test_recorded_bodies(path: str) -> None:
    check(_body(path))
    check(_body(path), choice=0)
    check(_body(path), choice=1)


def test_the_shortcut_answers_common_bodies() -> None:
    """Most recorded bodies are common ones: the shortcut is not dead code."""
    taken = [path for path in BODIES if check(_body(path))]
    assert len(taken) >= len(BODIES) // 2


def _chat(message: dict[str, Any], finish: Any = "tool_calls", **top: Any) -> dict[str, Any]:
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "gpt-4o",
        "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 20, "total_tokens": 30},
    }
    body.update(top)
    return body


def _call(call_id: Any, name: Any = "read_file", arguments: Any = '{"path": "a"}', **extra: Any) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}, **extra}


TWO_CALLS = _chat({"content": None, "tool_calls": [_call("call_a"), _call("call_b", "grep", "")]})

EDGES: list[tuple[dict[str, Any], dict[str, int], int | None]] = [
    (TWO_CALLS, {}, None),
    (_chat({"content": "hello"}, "stop"), {}, None),
    (_chat({"content": "hi", "tool_calls": [_call("c")]}, "tool_calls"), {}, None),
    (_chat({"content": ""}, "stop"), {}, None),
    (_chat({"content": None, "tool_calls": []}, "stop"), {}, None),
    (_chat({"content": "cut", "tool_calls": [_call("c", arguments='{"pa')]}, "length"), {}, None),
    (_chat({"content": "x", "tool_calls": [_call("c")]}, "content_filter"), {}, None),
    (_chat({"content": "x", "tool_calls": [_call("c")]}, "eos"), {}, None),
    (_chat({"content": "x"}, None), {}, None),
    (_chat({"content": "x"}, "stop", id=""), {}, None),
    (_chat({"content": "x"}, "stop", model=""), {}, None),
    (_chat({"content": "x"}, "stop", usage=None), {}, None),
    (_chat({"content": "x"}, "stop", usage={}), {}, None),
    (_chat({"content": "x"}, "stop", usage={"prompt_tokens": -1}), {}, None),
    (_chat({"content": "x"}, "stop", usage={"prompt_tokens": 2**64}), {}, None),
    (_chat({"content": "x"}, "stop", usage={"prompt_tokens": True}), {}, None),
    (_chat({"content": "x"}, "stop", usage={"prompt_tokens_details": {"cached_tokens": 3}}), {}, None),
    (_chat({"content": "x"}, "stop", usage={"completion_tokens_details": {"reasoning_tokens": "3"}}), {}, None),
    (_chat({"content": "x"}, "stop", usage={"completion_tokens_details": []}), {}, None),
    (_chat({"content": "x"}, "stop", error={"message": "boom"}), {}, None),
    (_chat({"content": "x"}, "stop", prompt_filter_results=[]), {}, None),
    (_chat({"content": "x", "refusal": "no"}, "stop"), {}, None),
    (_chat({"content": "x", "refusal": ""}, "stop"), {}, None),
    (_chat({"content": "x", "reasoning_content": "r"}, "stop"), {}, None),
    (_chat({"content": [{"type": "text", "text": "x"}]}, "stop"), {}, None),
    (_chat({"content": 3}, "stop"), {}, None),
    (_chat({"content": "x", "audio": {"id": "a"}}, "stop"), {}, None),
    (_chat({"content": None, "function_call": {"name": "f", "arguments": "{}"}}, "function_call"), {}, None),
    (_chat({"tool_calls": [_call(None), _call("call_1")]}), {}, None),
    (_chat({"tool_calls": [_call(None), _call("chatcmpl-1.call_0")]}), {}, None),
    (_chat({"tool_calls": [_call(None)]}, id=""), {}, None),
    (_chat({"tool_calls": [_call("")]}), {}, None),
    (_chat({"tool_calls": [_call("a"), _call("a")]}), {}, None),
    (_chat({"tool_calls": [_call("a", "")]}), {}, None),
    (_chat({"tool_calls": [_call("a", None)]}), {}, None),
    (_chat({"tool_calls": [_call("a", arguments=None)]}), {}, None),
    (_chat({"tool_calls": [_call("a", arguments=3)]}), {}, None),
    (_chat({"tool_calls": [_call("a", index=-1)]}), {}, None),
    (_chat({"tool_calls": [_call("a", index=7)]}), {}, None),
    (_chat({"tool_calls": [{"id": "a", "function": None}]}), {}, None),
    (_chat({"tool_calls": ["a"]}), {}, None),
    (_chat({"tool_calls": {}}), {}, None),
    (TWO_CALLS, {"max_calls_per_response": 1}, None),
    (TWO_CALLS, {"max_calls_per_response": 2}, None),
    (TWO_CALLS, {"max_items_per_response": 1}, None),
    (TWO_CALLS, {"max_stream_events": 7}, None),
    (TWO_CALLS, {"max_stream_events": 8}, None),
    (TWO_CALLS, {"max_call_argument_bytes": 12}, None),
    (TWO_CALLS, {"max_call_argument_bytes": 13}, None),
    (TWO_CALLS, {"max_response_bytes": 12}, None),
    (_chat({"content": "héllo", "tool_calls": [_call("c", arguments='{"p": "é"}')]}), {"max_response_bytes": 17}, None),
    (_chat({"content": "héllo", "tool_calls": [_call("c", arguments='{"p": "é"}')]}), {"max_response_bytes": 18}, None),
    (TWO_CALLS, {}, 0),
    (TWO_CALLS, {}, 1),
    ({**TWO_CALLS, "choices": [{**TWO_CALLS["choices"][0], "index": 1}]}, {}, 1),
    ({**TWO_CALLS, "choices": [{**TWO_CALLS["choices"][0], "index": 1}]}, {}, None),
    ({**TWO_CALLS, "choices": [TWO_CALLS["choices"][0]] * 2}, {}, None),
    ({**TWO_CALLS, "choices": [TWO_CALLS["choices"][0]] * 2}, {}, 0),
    ({**TWO_CALLS, "choices": [{**TWO_CALLS["choices"][0], "content_filter_results": {}}]}, {}, None),
    ({**TWO_CALLS, "choices": [{**TWO_CALLS["choices"][0], "message": None}]}, {}, None),
    ({**TWO_CALLS, "choices": []}, {}, None),
    ({**TWO_CALLS, "choices": None}, {}, None),
    ({**TWO_CALLS, "id": 3}, {}, None),
    ([TWO_CALLS], {}, None),
]


@pytest.mark.parametrize(("body", "limits", "choice"), EDGES)
def test_edges(body: dict[str, Any], limits: dict[str, int], choice: int | None) -> None:
    check(body, Limits(**limits), choice)


def test_edges_exercise_both_ways() -> None:
    taken = [check(body, Limits(**limits), choice) for body, limits, choice in EDGES]
    assert any(taken) and not all(taken)


_SEEDS = [_body(path) for path in BODIES] + [body for body, _, _ in EDGES[:8]]


@given(st.sampled_from(_SEEDS).flatmap(lambda body: damaged([copy.deepcopy(body)], reorder=False)))
def test_mutated_bodies(bodies: list[Any]) -> None:
    check(bodies[0])


@given(
    st.sampled_from(_SEEDS[-8:]),
    st.sampled_from(
        [
            "max_calls_per_response",
            "max_items_per_response",
            "max_stream_events",
            "max_call_argument_bytes",
            "max_response_bytes",
        ]
    ),
    st.integers(1, 40),
    st.sampled_from([None, 0, 1]),
)
def test_tight_limits(body: Any, field: str, value: int, choice: int | None) -> None:
    check(body, Limits(**{field: value}), choice)
