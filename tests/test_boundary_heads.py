"""What a stream's head says about its response, on both backends.

1. Anthropic: ``message_start.message.type``, when present, is
   ``"message"``; any other value (or a non-string) is ``MALFORMED_EVENT``
   at ``$.message.type``, as a body's ``$.type`` is. It was not read, so a
   ``message_start`` announcing something else was taken as a message.
   Absent, it is accepted: the event's own ``type`` (``message_start``) names
   the object, where a body has no other marker.
2. OpenAI Responses: the ``response`` of a head event (``response.created``
   / ``in_progress`` / ``queued``) is shape-checked as a terminal's is
   (``status``, ``output``, ``error``, ``usage``, ``incomplete_details``: a
   wrong type is ``MALFORMED_EVENT`` at its path), and a head that already
   says the response is over decides it, whatever later events say: an
   ``error`` or a ``failed`` status fails it (``PROVIDER_ERROR``; a
   ``response.failed`` that follows confirms it), ``cancelled`` finishes it
   cancelled and ``incomplete`` (or an ``incomplete_details`` object)
   incomplete. Only ``id``, ``model`` and ``content_filters`` were read, so
   a head that said failed followed by a completed call was executable.
3. Anthropic: a complete ``tool_use`` block under ``end_turn`` /
   ``stop_sequence`` (both the canonical ``stop``) is decided as calls, as a
   Chat ``finish_reason: "stop"`` with whole calls is (Anthropic-compatible
   servers say so; the API itself says ``tool_use``), and arguments that do
   not parse under them are ``FINISH_REASON_MISMATCH``, as under Chat's
   ``stop``: these tests pin that choice on both backends, body and stream.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from conftest import FIXTURES
from decisions import OutputError, decide
from decisions.types import NormalizedResponse

ANTHROPIC = FIXTURES / "vercel-ai" / "packages" / "anthropic" / "src" / "__fixtures__"
AZURE = FIXTURES / "vercel-ai" / "packages" / "azure" / "src" / "__fixtures__"


def _events(path: Path) -> list[dict[str, Any]]:
    """The recorded stream at ``path``, one JSON event a line."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _outcome(impl: ModuleType, provider: str, events: list[dict[str, Any]]) -> tuple[str, str | None]:
    """``events`` fed one by one, finished and decided: the refusal's code and
    path, or ``("EXECUTABLE", None)`` / ``("FINAL", None)``."""
    try:
        assembler = impl.StreamAssembler(provider)
        for event in events:
            assembler.feed_event(json.dumps(event))
        response: NormalizedResponse = assembler.finish()
        decision = decide(response)
    except OutputError as error:
        return error.code, error.path
    return ("EXECUTABLE" if decision.kind == "tool" else "FINAL"), None


# ------------------------------------------------------------------ 1. Anthropic message_start.message.type

#: a recorded stream of one tool_use block
TOOL_USE = _events(ANTHROPIC / "anthropic-json-tool.1.chunks.txt")


def _start_typed(value: Any) -> list[dict[str, Any]]:
    """The recorded stream with ``message_start.message.type`` set to ``value`` (removed for ``...``)."""
    events = json.loads(json.dumps(TOOL_USE))
    assert events[0]["type"] == "message_start" and events[0]["message"]["type"] == "message"
    if value is ...:
        del events[0]["message"]["type"]
    else:
        events[0]["message"]["type"] = value
    return events


@pytest.mark.parametrize("value", ["error", "completion", "", "Message", None, 1, {"type": "message"}])
def test_a_message_start_of_another_type_is_malformed(impl: ModuleType, value: Any) -> None:
    outcome = _outcome(impl, "anthropic", _start_typed(value))
    expected = ("EXECUTABLE", None) if value is None else ("MALFORMED_EVENT", "$.message.type")
    assert outcome == expected


@pytest.mark.parametrize("value", ["message", ...], ids=["message", "absent"])
def test_a_message_start_of_type_message_or_none_is_taken(impl: ModuleType, value: Any) -> None:
    assert _outcome(impl, "anthropic", _start_typed(value)) == ("EXECUTABLE", None)


def test_a_body_of_another_type_is_malformed_at_its_type(impl: ModuleType) -> None:
    """The body path, for comparison: the same field, the same code."""
    body = {"type": "completion", "id": "m", "model": "c", "role": "assistant", "content": []}
    with pytest.raises(OutputError) as caught:
        impl.normalize(json.dumps(body), provider="anthropic")
    assert (caught.value.code, caught.value.path) == ("MALFORMED_EVENT", "$.type")


# ------------------------------------------------------------------ 2. OpenAI Responses head events

#: a recorded Azure OpenAI Responses stream of one function call: created, in_progress, ..., completed
CALL = _events(AZURE / "azure-tool-call.1.chunks.txt")
HEADS = {"response.created": 0, "response.in_progress": 1}


def _head_says(kind: str, **fields: Any) -> list[dict[str, Any]]:
    """The recorded stream with the ``response`` of its ``kind`` head event updated with ``fields``."""
    events = json.loads(json.dumps(CALL))
    head = events[HEADS[kind]]
    assert head["type"] == kind and head["response"]["status"] == "in_progress"
    head["response"].update(fields)
    return events


def test_the_recorded_call_is_executable(impl: ModuleType) -> None:
    assert _outcome(impl, "openai-responses", CALL) == ("EXECUTABLE", None)


@pytest.mark.parametrize("kind", list(HEADS))
@pytest.mark.parametrize(
    "fields",
    [
        {"status": "failed"},
        {"status": "error"},
        {"error": {"code": "server_error", "message": "The server had an error."}},
        {"status": "in_progress", "error": {"code": "server_error", "message": "boom"}},
        {"error": "The server had an error."},
    ],
    ids=["failed", "error status", "error", "error beside in_progress", "error message"],
)
def test_a_head_that_says_failed_is_never_executable(impl: ModuleType, kind: str, fields: dict[str, Any]) -> None:
    """Later events that look fine change nothing: the first after the head is after the terminal."""
    code, _ = _outcome(impl, "openai-responses", _head_says(kind, **fields))
    assert code in ("PROVIDER_ERROR", "EVENT_AFTER_TERMINAL")
    events = _head_says(kind, **fields)[: HEADS[kind] + 1]
    assert _outcome(impl, "openai-responses", events) == ("PROVIDER_ERROR", None)


@pytest.mark.parametrize("kind", list(HEADS))
def test_a_failed_head_confirmed_by_response_failed_is_the_provider_error(impl: ModuleType, kind: str) -> None:
    events = _head_says(kind, status="failed", error={"code": "server_error", "message": "boom"})[: HEADS[kind] + 1]
    failed = {"type": "response.failed", "response": dict(events[HEADS[kind]]["response"])}
    assert _outcome(impl, "openai-responses", [*events, failed]) == ("PROVIDER_ERROR", None)


@pytest.mark.parametrize("kind", list(HEADS))
@pytest.mark.parametrize(
    ("fields", "code"),
    [
        ({"status": "cancelled"}, "RESPONSE_CANCELLED"),
        ({"status": "incomplete"}, "UNKNOWN_FINISH_REASON"),
        ({"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}}, "INCOMPLETE_RESPONSE"),
        ({"incomplete_details": {"reason": "content_filter"}}, "CONTENT_FILTERED"),
    ],
    ids=["cancelled", "incomplete", "max_output_tokens", "content_filter"],
)
def test_a_head_that_says_over_decides_the_response(
    impl: ModuleType, kind: str, fields: dict[str, Any], code: str
) -> None:
    events = _head_says(kind, **fields)
    assert _outcome(impl, "openai-responses", events[: HEADS[kind] + 1]) == (code, None)
    assert _outcome(impl, "openai-responses", events)[0] in (code, "EVENT_AFTER_TERMINAL")


@pytest.mark.parametrize("kind", list(HEADS))
@pytest.mark.parametrize(
    ("fields", "path"),
    [
        ({"status": 1}, "$.response.status"),
        ({"status": ["failed"]}, "$.response.status"),
        ({"error": 5}, "$.response.error"),
        ({"error": {"code": 1.5, "message": "m"}}, "$.response.error.code"),
        ({"output": {}}, "$.response.output"),
        ({"output": [1]}, "$.response.output[0]"),
        ({"usage": []}, "$.response.usage"),
        ({"incomplete_details": "max_output_tokens"}, "$.response.incomplete_details"),
        ({"id": 7}, "$.response.id"),
    ],
    ids=[
        "status int",
        "status list",
        "error number",
        "error code",
        "output object",
        "output item",
        "usage",
        "details",
        "id",
    ],
)
def test_a_wrongly_typed_head_field_is_malformed_at_its_path(
    impl: ModuleType, kind: str, fields: dict[str, Any], path: str
) -> None:
    assert _outcome(impl, "openai-responses", _head_says(kind, **fields)) == ("MALFORMED_EVENT", path)


@pytest.mark.parametrize("kind", list(HEADS))
@pytest.mark.parametrize("status", ["queued", "in_progress", "completed", None])
def test_a_head_that_says_not_over_changes_nothing(impl: ModuleType, kind: str, status: str | None) -> None:
    assert _outcome(impl, "openai-responses", _head_says(kind, status=status)) == ("EXECUTABLE", None)


# ------------------------------------------------------------------ 3. Anthropic tool_use under a stop reason of stop


def _stopped_with(stop_reason: str, *, cut: bool = False) -> list[dict[str, Any]]:
    """The recorded tool_use stream with ``stop_reason`` in its message_delta (its last
    arguments delta, the closing brace, dropped when ``cut``)."""
    events = json.loads(json.dumps(TOOL_USE))
    assert events[5]["delta"] == {"type": "input_json_delta", "partial_json": "}"}
    assert events[7]["type"] == "message_delta" and events[7]["delta"]["stop_reason"] == "tool_use"
    events[7]["delta"]["stop_reason"] = stop_reason
    return [*events[:5], *events[6:]] if cut else events


@pytest.mark.parametrize("stop_reason", ["end_turn", "stop_sequence", "tool_use"])
def test_a_complete_tool_use_under_a_done_stop_reason_is_executable(impl: ModuleType, stop_reason: str) -> None:
    """As a Chat ``finish_reason: "stop"`` with whole calls is: the finish reason is canonical
    (``end_turn`` / ``stop_sequence`` are ``stop``), and Anthropic-compatible servers say so."""
    assert _outcome(impl, "anthropic", _stopped_with(stop_reason)) == ("EXECUTABLE", None)
    body = {
        "type": "message",
        "id": "m",
        "model": "c",
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "json", "input": {"a": 1}}],
        "stop_reason": stop_reason,
    }
    decision = decide(impl.normalize(json.dumps(body), provider="anthropic"))
    assert decision.kind == "tool"


@pytest.mark.parametrize("stop_reason", ["end_turn", "stop_sequence"])
def test_cut_tool_use_arguments_under_a_stop_stop_reason_are_a_finish_mismatch(
    impl: ModuleType, stop_reason: str
) -> None:
    """A stop reason of stop is not trusted to say the call was finished: arguments that do not
    parse are ``FINISH_REASON_MISMATCH`` at the call's arguments, as under Chat's ``stop``."""
    code, path = _outcome(impl, "anthropic", _stopped_with(stop_reason, cut=True))
    assert (code, path) == ("FINISH_REASON_MISMATCH", "$.calls[0].arguments")
    code, path = _outcome(impl, "anthropic", _stopped_with("tool_use", cut=True))
    assert code != "FINISH_REASON_MISMATCH" and path == "$.calls[0].arguments"
