"""Classes of mistakes in provider streams and in the host's use of an
assembler, one section each, on both backends.

1. Anthropic: a delta of a known type in a content block that does not take
   it is ``MALFORMED_EVENT`` at ``$.delta.type``. A ``redacted_thinking``
   block took ``thinking_delta`` / ``signature_delta`` (its opaque data then
   carried text it never had), and a block the provider runs
   (``server_tool_use``, ``web_search_tool_result``) took any delta, a
   ``text_delta`` of the answer included, which was dropped.
2. Anthropic: a ``message_start`` whose message carries a done stop reason
   speaks of the content it carries. Blocks streamed after it need the
   ``message_delta``'s stop reason; a stream that never sent one (the event
   was lost, and with it maybe ``max_tokens``) was decided with the stale
   ``end_turn`` / ``tool_use``. It now ends with no stop reason
   (``UNKNOWN_FINISH_REASON``), as a stream whose ``message_start`` said
   null does; a not-done stop reason there still wins.
3. ``abort()`` once ``finish()`` has given the stream's outcome (its
   response, the provider's failure, or an error) changes nothing: it failed
   the assembler, so a second ``finish()`` of a delivered response raised
   ``STREAM_CANCELLED`` and ``state`` said ``failed``. Before the outcome is
   given, ``abort()`` cancels as before. ``StreamAssembler("auto")`` that
   failed before it told the provider likewise keeps its failure
   (``STREAM_FAILED``), where ``abort()`` turned it into
   ``STREAM_CANCELLED``.
4. Azure OpenAI's filter verdicts on a Responses response: each entry of
   ``content_filters`` carries ``content_filter_results`` of Chat's shape,
   and a ``filtered: true`` there (a category, a list entry, a ``details``
   entry) withholds the response as ``blocked: true`` does, on the prompt or
   the completion, whatever ``blocked`` says: only ``blocked`` was read, so a
   filtered response's call ran. An ``error`` there says the filter did not
   run: unless a verdict withheld the response, it is refused with
   ``PROVIDER_ERROR`` (retryable) at the error's path, as Chat's is; it was
   ignored. Results of another shape are ``MALFORMED_EVENT`` at their path,
   with the Responses mapper's message.
5. Gemini: an empty ``functionCall.id`` is no id. Gemini's ids are optional
   (most responses carry none), so it is treated as absent and a call id is
   generated (``call_id_generated``), as Chat's empty or absent id is; the
   providers whose ids are required (Anthropic's ``tool_use.id``, a
   Responses ``call_id``) refuse an empty one. This pins both backends, body
   and stream, to that choice.
6. OpenAI Responses: an event's ``output_index`` is a count when present on
   every event that carries one. Only ``response.output_item.added`` /
   ``done`` checked it; a ``*.delta`` / ``*.done`` event or a content or
   summary part event with ``"output_index": "0"`` (or ``true``, ``-1``, a
   list) was taken as if it were well formed, while the same event's
   ``content_index`` was refused.
7. Gemini: a streamed string whose ``partialArgs`` entry says
   ``willContinue: true`` goes on in the next entry of the same path (the
   recordings end it with an entry of ``stringValue: ""``). A part that
   closed the call while the string waited (the chunk ending it was lost)
   was decided with the string cut short (``"Boston"`` for whatever it was
   to become); it is ``MALFORMED_EVENT`` at the closing ``functionCall``.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import decisions
from conftest import FIXTURES
from decisions import OutputError, decide
from decisions.types import NormalizedResponse
from stream_events import fed_events

ANTHROPIC = FIXTURES / "vercel-ai" / "packages" / "anthropic" / "src" / "__fixtures__"
AZURE = FIXTURES / "vercel-ai" / "packages" / "azure" / "src" / "__fixtures__"
GOOGLE = FIXTURES / "vercel-ai" / "packages" / "google" / "src" / "__fixtures__"


def _events(path: Path) -> list[dict[str, Any]]:
    """The recorded stream at ``path``, one JSON event a line."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _decided_code(response: NormalizedResponse) -> str:
    """The code ``decide`` refuses ``response`` with, or ``EXECUTABLE`` / ``FINAL``."""
    try:
        decision = decide(response)
    except OutputError as error:
        return error.code
    return "EXECUTABLE" if decision.kind == "tool" else "FINAL"


# ------------------------------------------------------------------ 1. Anthropic delta in a block of another type

#: a recorded thinking-then-text stream: its message_start, message_delta and message_stop frame each case
THINKING = _events(ANTHROPIC / "anthropic-clear-thinking.1.chunks.txt")

#: each block type, as content_block_start carries it
BLOCKS: dict[str, dict[str, Any]] = {
    "text": {"type": "text", "text": ""},
    "tool_use": {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {}},
    "thinking": {"type": "thinking", "thinking": "", "signature": ""},
    "redacted_thinking": {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"},
    "server_tool_use": {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
    "web_search_tool_result": {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
}

#: each known delta type, as content_block_delta carries it
DELTAS: dict[str, dict[str, Any]] = {
    "text_delta": {"type": "text_delta", "text": "185"},
    "input_json_delta": {"type": "input_json_delta", "partial_json": '{"q": 1}'},
    "thinking_delta": {"type": "thinking_delta", "thinking": "925 / 5"},
    "signature_delta": {"type": "signature_delta", "signature": "EvQBCkYICxgC"},
    "citations_delta": {
        "type": "citations_delta",
        "citation": {"type": "web_search_result_location", "url": "https://example.com", "cited_text": "185"},
    },
}

#: the delta types each block takes (Anthropic's streaming reference); a
#: block the provider runs takes its input's ``input_json_delta``
TAKES: dict[str, set[str]] = {
    "text": {"text_delta", "citations_delta"},
    "tool_use": {"input_json_delta"},
    "thinking": {"thinking_delta", "signature_delta"},
    "redacted_thinking": set(),
    "server_tool_use": {"input_json_delta"},
    "web_search_tool_result": {"input_json_delta"},
}


def _one_block(block: dict[str, Any], delta: dict[str, Any]) -> list[dict[str, Any]]:
    """The recorded stream's frame around one block of ``block`` with one ``delta``."""
    start, stop = THINKING[0], THINKING[-2:]
    assert start["type"] == "message_start" and [e["type"] for e in stop] == ["message_delta", "message_stop"]
    return [
        start,
        {"type": "content_block_start", "index": 0, "content_block": block},
        {"type": "content_block_delta", "index": 0, "delta": delta},
        {"type": "content_block_stop", "index": 0},
        *stop,
    ]


@pytest.mark.parametrize("delta_type", list(DELTAS))
@pytest.mark.parametrize("block_type", list(BLOCKS))
def test_a_delta_in_a_block_that_does_not_take_it_is_malformed(
    impl: ModuleType, block_type: str, delta_type: str
) -> None:
    events = _one_block(BLOCKS[block_type], DELTAS[delta_type])
    if delta_type in TAKES[block_type]:
        fed_events(impl, "anthropic", events)
        return
    assembler = impl.StreamAssembler("anthropic")
    for event in events[:2]:
        assembler.feed_event(json.dumps(event))
    with pytest.raises(OutputError) as caught:
        assembler.feed_event(json.dumps(events[2]))
    assert (caught.value.code, caught.value.path) == ("MALFORMED_EVENT", "$.delta.type")
    assert assembler.state == "failed"


def test_a_redacted_thinking_block_keeps_its_data_as_the_signature(impl: ModuleType) -> None:
    """The control: without a delta, the block's data is the reasoning item's signature, and nothing else."""
    block = BLOCKS["redacted_thinking"]
    events = _one_block(block, DELTAS["thinking_delta"])
    del events[2]
    response = fed_events(impl, "anthropic", events)
    (item,) = response.items
    assert (item.kind, item.text, item.signature) == ("reasoning", "", block["data"])


# ------------------------------------------------------------------ 2. Anthropic stop reason only in message_start


def _start_says(stop_reason: str | None) -> list[dict[str, Any]]:
    """The recorded stream with ``stop_reason`` in its message_start and no message_delta."""
    events = [dict(event) for event in THINKING]
    events[0] = {**events[0], "message": {**events[0]["message"], "stop_reason": stop_reason}}
    return [event for event in events if event["type"] != "message_delta"]


@pytest.mark.parametrize("stop_reason", ["end_turn", "stop_sequence", "tool_use", None])
def test_streamed_blocks_without_a_message_delta_have_no_stop_reason(impl: ModuleType, stop_reason: str | None) -> None:
    response = fed_events(impl, "anthropic", _start_says(stop_reason))
    assert (response.finish_reason, response.raw_finish_reason) == ("unknown", None)
    assert _decided_code(response) == "UNKNOWN_FINISH_REASON"


@pytest.mark.parametrize("stop_reason", ["max_tokens", "refusal"])
def test_a_not_done_stop_reason_in_message_start_still_wins(impl: ModuleType, stop_reason: str) -> None:
    response = fed_events(impl, "anthropic", _start_says(stop_reason))
    assert response.raw_finish_reason == stop_reason
    assert response.finish_reason in ("length", "refusal")


def test_a_whole_message_in_message_start_keeps_its_stop_reason(impl: ModuleType) -> None:
    """The control, as recorded: a programmatic tool call's turn is a message_start holding the
    whole message (its tool_use block and ``stop_reason: tool_use``) and a message_stop."""
    events = _events(ANTHROPIC / "anthropic-programmatic-tool-calling.1.chunks.txt")
    turn = events[167:169]
    assert [e["type"] for e in turn] == ["message_start", "message_stop"]
    assert turn[0]["message"]["stop_reason"] == "tool_use" and turn[0]["message"]["content"]
    response = fed_events(impl, "anthropic", turn)
    assert (response.finish_reason, response.raw_finish_reason) == ("tool_calls", "tool_use")
    assert _decided_code(response) == "EXECUTABLE"


def test_a_message_delta_after_message_start_gives_the_stop_reason(impl: ModuleType) -> None:
    """The control: the same stream with its message_delta is decided."""
    events = _start_says("end_turn")
    events.insert(-1, THINKING[-2])
    response = fed_events(impl, "anthropic", events)
    assert (response.finish_reason, response.raw_finish_reason) == ("stop", "end_turn")
    assert _decided_code(response) == "FINAL"


# ------------------------------------------------------------------ 3. abort() after the outcome was given


def _fed(impl: ModuleType, events: list[dict[str, Any]]) -> Any:
    assembler = impl.StreamAssembler("anthropic")
    for event in events:
        assembler.feed_event(json.dumps(event))
    return assembler


def test_abort_after_finish_changes_nothing(impl: ModuleType) -> None:
    assembler = _fed(impl, THINKING)
    response = assembler.finish()
    assembler.abort()
    assembler.abort()
    assert assembler.state == "completed"
    assert assembler.finish() == response
    assert assembler.snapshot().state == "completed"


def test_abort_after_a_provider_failure_was_given_changes_nothing(impl: ModuleType) -> None:
    failure = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    assembler = _fed(impl, [THINKING[0], failure])
    for _ in range(2):
        with pytest.raises(OutputError) as caught:
            assembler.finish()
        assert caught.value.code == "PROVIDER_ERROR"
        assembler.abort()


def test_abort_after_an_error_keeps_the_error(impl: ModuleType) -> None:
    assembler = _fed(impl, THINKING[:1])
    with pytest.raises(OutputError) as caught:
        assembler.feed_event(json.dumps({"type": "content_block_stop", "index": 7}))
    assert caught.value.code == "UNKNOWN_ITEM"
    assembler.abort()
    with pytest.raises(OutputError) as caught:
        assembler.finish()
    assert caught.value.code == "STREAM_FAILED"


def test_abort_after_an_auto_assembler_failed_before_detection_keeps_the_error() -> None:
    """``StreamAssembler("auto")`` (over the backend the suite selects) that failed before it told
    the provider (here: a stream with no event) keeps that failure: later calls are
    ``STREAM_FAILED``, not ``STREAM_CANCELLED``."""
    assembler = decisions.StreamAssembler("auto")
    with pytest.raises(OutputError) as caught:
        assembler.finish()
    assert caught.value.code == "NO_TERMINAL_EVENT"
    assembler.abort()
    with pytest.raises(OutputError) as caught:
        assembler.finish()
    assert caught.value.code == "STREAM_FAILED"


def test_abort_after_an_auto_assembler_finished_changes_nothing() -> None:
    assembler = decisions.StreamAssembler("auto")
    for event in THINKING:
        assembler.feed_event(json.dumps(event))
    response = assembler.finish()
    assembler.abort()
    assert (assembler.state, assembler.finish()) == ("completed", response)


@pytest.mark.parametrize("fed", [0, 1, len(THINKING)], ids=["nothing", "message_start", "every event"])
def test_abort_before_finish_cancels(impl: ModuleType, fed: int) -> None:
    """The control: before ``finish()`` gave the outcome, abort() cancels (the terminal event seen or not)."""
    assembler = _fed(impl, THINKING[:fed])
    assembler.abort()
    assert assembler.state == "failed"
    for call in (assembler.finish, assembler.snapshot, lambda: assembler.feed_event(json.dumps(THINKING[0]))):
        with pytest.raises(OutputError) as caught:
            call()
        assert caught.value.code == "STREAM_CANCELLED"


# ------------------------------------------------------------------ 4. Azure Responses filter results

#: a recorded Azure OpenAI Responses stream of one function call, and its body
AZURE_EVENTS = _events(AZURE / "azure-tool-call.1.chunks.txt")
AZURE_BODY = json.loads((AZURE / "azure-tool-call.1.json").read_text())

#: where a ``filtered: true`` may sit in an entry's results
FILTERED = [
    ["hate", "filtered"],
    ["violence", "filtered"],
    ["protected_material_code", "filtered"],
    ["custom_blocklists"],
    ["profanity", "details"],
]
FILTERED_IDS = ["hate", "violence", "protected_material_code", "custom_blocklists", "details"]


def _filter_hit(response: dict[str, Any], source: int, where: list[str]) -> None:
    """``response``'s filter entry ``source`` made to say ``filtered: true`` at ``where``."""
    entry = response["content_filters"][source]
    assert entry["blocked"] is False
    results = entry["content_filter_results"]
    if where == ["custom_blocklists"]:
        results["custom_blocklists"] = [{"filtered": False, "id": "a"}, {"filtered": True, "id": "b"}][1:]
    elif where[-1] == "details":
        results[where[0]] = {"filtered": False, "details": [{"filtered": True, "id": "c"}]}
    else:
        results.setdefault(where[0], {"severity": "high"})["filtered"] = True


@pytest.mark.parametrize("where", FILTERED, ids=FILTERED_IDS)
@pytest.mark.parametrize("source", [0, 1], ids=["prompt", "completion"])
def test_a_filtered_streamed_response_is_filtered(impl: ModuleType, source: int, where: list[str]) -> None:
    events = [dict(event) for event in AZURE_EVENTS]
    final = json.loads(json.dumps(events[-1]))
    assert final["type"] == "response.completed"
    _filter_hit(final["response"], source, where)
    response = fed_events(impl, "openai-responses", [*events[:-1], final])
    assert (response.finish_reason, response.raw_finish_reason) == ("content_filter", "completed")
    assert _decided_code(response) == "CONTENT_FILTERED"


@pytest.mark.parametrize("where", FILTERED, ids=FILTERED_IDS)
@pytest.mark.parametrize("source", [0, 1], ids=["prompt", "completion"])
def test_a_filtered_body_is_filtered(impl: ModuleType, source: int, where: list[str]) -> None:
    body = json.loads(json.dumps(AZURE_BODY))
    _filter_hit(body, source, where)
    response = impl.normalize(json.dumps(body), provider="openai-responses")
    assert response.finish_reason == "content_filter"
    assert _decided_code(response) == "CONTENT_FILTERED"


def test_a_filter_result_on_a_head_event_is_kept_for_the_finish(impl: ModuleType) -> None:
    events = json.loads(json.dumps(AZURE_EVENTS))
    [head] = [e for e in events if e["type"] == "response.created"]
    head["response"]["content_filters"] = [{"blocked": False, "content_filter_results": {"hate": {"filtered": True}}}]
    events[-1]["response"]["content_filters"] = None
    response = fed_events(impl, "openai-responses", events)
    assert response.finish_reason == "content_filter"


def test_the_recorded_filter_results_change_nothing(impl: ModuleType) -> None:
    """The control: the recordings (every category ``filtered: false``) are decided."""
    assert _decided_code(fed_events(impl, "openai-responses", AZURE_EVENTS)) == "EXECUTABLE"
    assert _decided_code(impl.normalize(json.dumps(AZURE_BODY), provider="openai-responses")) == "EXECUTABLE"


#: Azure's answer when a filter could not screen the output
NOT_RUN = {"code": "content_filter_error", "message": "The contents are not filtered"}


@pytest.mark.parametrize(
    ("results", "where"),
    [
        ({"error": NOT_RUN}, "error"),
        ({"hate": {"filtered": False, "error": NOT_RUN}}, "hate.error"),
        ({"custom_blocklists": [{"filtered": False, "error": NOT_RUN}]}, "custom_blocklists[0].error"),
    ],
)
@pytest.mark.parametrize("how", ["body", "stream"])
def test_a_filter_that_did_not_run_is_a_provider_error(impl: ModuleType, how: str, results: Any, where: str) -> None:
    body = json.loads(json.dumps(AZURE_BODY))
    body["content_filters"][1]["content_filter_results"] = results
    base = "$" if how == "body" else "$.response"
    with pytest.raises(OutputError) as caught:
        if how == "body":
            impl.normalize(json.dumps(body), provider="openai-responses")
        else:
            events = json.loads(json.dumps(AZURE_EVENTS))
            events[-1]["response"]["content_filters"] = body["content_filters"]
            fed_events(impl, "openai-responses", events)
    error = caught.value
    assert (error.code, error.path, error.retryable) == (
        "PROVIDER_ERROR",
        f"{base}.content_filters[1].content_filter_results.{where}",
        True,
    )


def test_a_filter_that_did_not_run_on_a_head_event_is_refused_at_once(impl: ModuleType) -> None:
    events = json.loads(json.dumps(AZURE_EVENTS))
    assert events[0]["type"] == "response.created"
    events[0]["response"]["content_filters"] = [{"blocked": False, "content_filter_results": {"error": NOT_RUN}}]
    assembler = impl.StreamAssembler("openai-responses")
    with pytest.raises(OutputError) as caught:
        assembler.feed_event(json.dumps(events[0]))
    assert (caught.value.code, caught.value.path) == (
        "PROVIDER_ERROR",
        "$.response.content_filters[0].content_filter_results.error",
    )


def test_a_verdict_that_withheld_the_response_wins_over_a_filter_that_did_not_run(impl: ModuleType) -> None:
    body = json.loads(json.dumps(AZURE_BODY))
    body["content_filters"][0]["content_filter_results"] = {"error": NOT_RUN}
    body["content_filters"][1]["blocked"] = True
    response = impl.normalize(json.dumps(body), provider="openai-responses")
    assert response.finish_reason == "content_filter"


@pytest.mark.parametrize(
    ("results", "path"),
    [
        ([], "$.content_filters[1].content_filter_results"),
        ({"hate": 1}, "$.content_filters[1].content_filter_results.hate"),
        ({"hate": {"filtered": "true"}}, "$.content_filters[1].content_filter_results.hate.filtered"),
        ({"custom_blocklists": [None]}, "$.content_filters[1].content_filter_results.custom_blocklists[0]"),
        ({"hate": {"details": {}}}, "$.content_filters[1].content_filter_results.hate.details"),
    ],
)
def test_filter_results_of_another_shape_are_malformed(impl: ModuleType, results: Any, path: str) -> None:
    body = json.loads(json.dumps(AZURE_BODY))
    body["content_filters"][1]["content_filter_results"] = results
    with pytest.raises(OutputError) as caught:
        impl.normalize(json.dumps(body), provider="openai-responses")
    assert (caught.value.code, caught.value.path) == ("MALFORMED_EVENT", path)
    assert "openai-responses" in str(caught.value)


# ------------------------------------------------------------------ 5. Gemini empty functionCall.id

GEMINI_BODY = {
    "candidates": [
        {
            "content": {"role": "model", "parts": [{"functionCall": {"id": "", "name": "lookup", "args": {"q": 1}}}]},
            "finishReason": "STOP",
        }
    ],
    "responseId": "resp_1",
}


@pytest.mark.parametrize("how", ["body", "stream"])
@pytest.mark.parametrize("given", ["", None])
def test_an_empty_gemini_call_id_is_no_id(impl: ModuleType, how: str, given: str | None) -> None:
    body = json.loads(json.dumps(GEMINI_BODY))
    call = body["candidates"][0]["content"]["parts"][0]["functionCall"]
    if given is None:
        del call["id"]
    if how == "body":
        response = impl.normalize(json.dumps(body), provider="gemini")
    else:
        response = fed_events(impl, "gemini", [body])
    (item,) = response.items
    assert (item.call_id, item.call_id_generated) == ("resp_1:call_0", True)


# ------------------------------------------------------------------ 6. Responses output_index on every event


def _first_response(name: str) -> list[dict[str, Any]]:
    """The recorded stream ``name`` up to its first terminal (a recording may hold several turns)."""
    events = _events(AZURE / f"{name}.chunks.txt")
    end = next(i for i, event in enumerate(events) if event["type"] == "response.completed")
    return events[: end + 1]


#: every recorded event that carries an ``output_index``, by fixture and line
OUTPUT_INDEXED = [
    (name, line)
    for name in ("azure-tool-call.1", "azure-text.1", "azure-reasoning-encrypted-content.1")
    for line, event in enumerate(_first_response(name))
    if "output_index" in event
]


@pytest.mark.parametrize("value", ["0", True, -1, [0]], ids=["string", "bool", "negative", "list"])
@pytest.mark.parametrize(("name", "line"), OUTPUT_INDEXED, ids=[f"{n}:{i}" for n, i in OUTPUT_INDEXED])
def test_an_output_index_that_is_not_a_count_is_malformed(impl: ModuleType, name: str, line: int, value: Any) -> None:
    events = _first_response(name)
    events[line]["output_index"] = value
    assembler = impl.StreamAssembler("openai-responses")
    for event in events[:line]:
        assembler.feed_event(json.dumps(event))
    with pytest.raises(OutputError) as caught:
        assembler.feed_event(json.dumps(events[line]))
    assert (caught.value.code, caught.value.path) == ("MALFORMED_EVENT", "$.output_index")


# ------------------------------------------------------------------ 7. Gemini string cut by the call's close

#: a recorded Gemini stream of one call whose arguments stream as partialArgs
GEMINI_PARTIAL = _events(GOOGLE / "google-stream-tool-call-arguments.chunks.txt")


def _function_call(chunk: dict[str, Any]) -> dict[str, Any]:
    call: dict[str, Any] = chunk["candidates"][0]["content"]["parts"][0]["functionCall"]
    return call


def test_a_call_closed_while_its_string_continues_is_malformed(impl: ModuleType) -> None:
    events = json.loads(json.dumps(GEMINI_PARTIAL))
    # the chunk that ends the string "Boston" (an empty piece without willContinue) is lost
    assert _function_call(events[2])["partialArgs"] == [{"jsonPath": "$.location", "stringValue": ""}]
    assert _function_call(events[3]) == {}
    del events[2]
    assembler = impl.StreamAssembler("gemini")
    for event in events[:2]:
        assembler.feed_event(json.dumps(event))
    with pytest.raises(OutputError) as caught:
        assembler.feed_event(json.dumps(events[2]))
    path = "$.candidates[0].content.parts[0].functionCall"
    assert (caught.value.code, caught.value.path) == ("MALFORMED_EVENT", path)
    assert "$.location" in str(caught.value)


def test_a_closing_part_that_continues_its_own_string_is_malformed(impl: ModuleType) -> None:
    events = json.loads(json.dumps(GEMINI_PARTIAL))
    closing = _function_call(events[1])
    del closing["willContinue"]  # the part says the string goes on, and closes the call
    with pytest.raises(OutputError) as caught:
        fed_events(impl, "gemini", events[:2])
    assert (caught.value.code, caught.value.path) == (
        "MALFORMED_EVENT",
        "$.candidates[0].content.parts[0].functionCall",
    )


def test_a_string_ended_before_the_call_closes_is_decided(impl: ModuleType) -> None:
    """The control: the recording, each string ended by its empty piece, is the call."""
    response = fed_events(impl, "gemini", GEMINI_PARTIAL)
    assert [json.loads(call.arguments) for call in response.tool_calls][0]["location"] == "Boston"
