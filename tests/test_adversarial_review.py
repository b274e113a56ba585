"""Classes of mistakes at the boundary, one section each, on both backends.

1. Azure OpenAI's filter verdicts on a Responses response: an entry of its
   ``content_filters`` with ``blocked: true`` (the prompt's or the
   completion's) is a content filter whatever ``status`` says, as Azure's
   ``filtered: true`` is for Chat Completions. The verdict was read nowhere,
   so a blocked response's function call ran.
2. Azure's filter results under the other names Azure has sent them by: the
   top-level ``prompt_annotations`` (API versions before 2023-10-01, as
   recorded from ``2023-07-01-preview``) and a choice's singular
   ``content_filter_result`` (a stream chunk saying the filter did not run)
   are read as ``prompt_filter_results`` and ``content_filter_results`` are:
   a filter hit is ``CONTENT_FILTERED``, a filter that did not run
   ``PROVIDER_ERROR`` at its path. Both were ignored, and the call ran.
3. A payload handed over as Python objects (``feed_event(dict)``,
   ``normalize(dict or list)``, a canonical event object) is refused for
   ``max_sse_event_bytes`` before its JSON text is written: both backends
   wrote the whole text first (a text of 128 MiB against a limit of 1 MiB
   grew the peak RSS by 128 to 322 MiB). A lower bound of the text's length
   is walked instead, stopping at the limit, and a payload past it gets the
   error its text gets.
4. ``SSEDecoder`` after ``finish()``: the stream has ended, so bytes fed
   after it are ``EVENT_AFTER_TERMINAL`` (and the decoder fails), as an
   assembler's are; they were decoded into events as if the stream went on.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from decisions import Limits, OutputError, decide
from decisions.types import NormalizedResponse, TextDelta
from stream_events import fed_events

FIXTURES = Path(__file__).parent / "fixtures"
AZURE = FIXTURES / "vercel-ai" / "packages" / "azure" / "src" / "__fixtures__"


def _decided_code(response: NormalizedResponse) -> str:
    """The code ``decide`` refuses ``response`` with, or ``EXECUTABLE``."""
    try:
        decision = decide(response)
    except OutputError as error:
        return error.code
    assert decision.kind == "tool" and decision.executable_calls
    return "EXECUTABLE"


# ------------------------------------------------------------------ 1. Azure content_filters on Responses

#: a recorded Azure OpenAI Responses stream of one function call, and its body
AZURE_EVENTS = [json.loads(line) for line in (AZURE / "azure-tool-call.1.chunks.txt").read_text().splitlines() if line]
AZURE_BODY = json.loads((AZURE / "azure-tool-call.1.json").read_text())


def _filters(response: dict[str, Any]) -> list[dict[str, Any]]:
    filters: list[dict[str, Any]] = response["content_filters"]
    assert [f["source_type"] for f in filters] == ["prompt", "completion"]
    return filters


@pytest.mark.parametrize("source", [0, 1], ids=["prompt", "completion"])
@pytest.mark.parametrize("blocked", [True, False])
def test_a_blocked_streamed_response_is_filtered(impl: ModuleType, source: int, blocked: bool) -> None:
    events = copy.deepcopy(AZURE_EVENTS)
    assert events[-1]["type"] == "response.completed" and events[-1]["response"]["status"] == "completed"
    _filters(events[-1]["response"])[source]["blocked"] = blocked
    response = fed_events(impl, "openai-responses", events)
    assert (response.finish_reason, response.raw_finish_reason) == (
        "content_filter" if blocked else "tool_calls",
        "completed",
    )
    assert _decided_code(response) == ("CONTENT_FILTERED" if blocked else "EXECUTABLE")


@pytest.mark.parametrize("source", [0, 1], ids=["prompt", "completion"])
@pytest.mark.parametrize("blocked", [True, False])
def test_a_blocked_body_is_filtered(impl: ModuleType, source: int, blocked: bool) -> None:
    body = copy.deepcopy(AZURE_BODY)
    _filters(body)[source]["blocked"] = blocked
    response = impl.normalize(json.dumps(body), provider="openai-responses")
    assert response.finish_reason == ("content_filter" if blocked else "tool_calls")
    assert _decided_code(response) == ("CONTENT_FILTERED" if blocked else "EXECUTABLE")


@pytest.mark.parametrize("head", ["response.created", "response.in_progress"])
def test_a_verdict_on_a_head_event_is_kept_for_the_finish(impl: ModuleType, head: str) -> None:
    """A verdict that came early still holds when the terminal's list says nothing."""
    events = copy.deepcopy(AZURE_EVENTS)
    [event] = [e for e in events if e["type"] == head]
    event["response"]["content_filters"] = [{"blocked": True, "source_type": "prompt"}]
    events[-1]["response"]["content_filters"] = None
    response = fed_events(impl, "openai-responses", events)
    assert response.finish_reason == "content_filter"
    assert _decided_code(response) == "CONTENT_FILTERED"


def test_a_blocked_response_with_an_unfinished_call_is_filtered(impl: ModuleType) -> None:
    """The filter's verdict is the refusal, not the call it left unfinished."""
    body = copy.deepcopy(AZURE_BODY)
    [call] = [item for item in body["output"] if item["type"] == "function_call"]
    call["status"] = "incomplete"
    assert _decided_code_of_body(impl, body) == "ITEM_NOT_ENDED"
    _filters(body)[1]["blocked"] = True
    assert _decided_code_of_body(impl, body) == "CONTENT_FILTERED"


def _decided_code_of_body(impl: ModuleType, body: dict[str, Any]) -> str:
    try:
        response = impl.normalize(json.dumps(body), provider="openai-responses")
    except OutputError as error:
        return error.code
    return _decided_code(response)


@pytest.mark.parametrize(
    ("filters", "path"),
    [
        ({}, "$.content_filters"),
        ("blocked", "$.content_filters"),
        ([None], "$.content_filters[0]"),
        ([{"blocked": False}, 1], "$.content_filters[1]"),
        ([{"blocked": "true"}], "$.content_filters[0].blocked"),
        ([{"blocked": True}, {"blocked": 1}], "$.content_filters[1].blocked"),
    ],
)
def test_content_filters_of_another_shape_are_malformed(impl: ModuleType, filters: Any, path: str) -> None:
    body = dict(copy.deepcopy(AZURE_BODY), content_filters=filters)
    with pytest.raises(OutputError) as caught:
        impl.normalize(json.dumps(body), provider="openai-responses")
    assert (caught.value.code, caught.value.path) == ("MALFORMED_EVENT", path)
    events = copy.deepcopy(AZURE_EVENTS)
    events[-1]["response"]["content_filters"] = filters
    with pytest.raises(OutputError) as caught:
        fed_events(impl, "openai-responses", events)
    assert (caught.value.code, caught.value.path) == ("MALFORMED_EVENT", "$.response" + path[1:])


@pytest.mark.parametrize("filters", [None, [], [{}], [{"blocked": None}], [{"blocked": False, "source_type": "x"}]])
def test_content_filters_that_block_nothing_change_nothing(impl: ModuleType, filters: Any) -> None:
    body = dict(copy.deepcopy(AZURE_BODY), content_filters=filters)
    assert _decided_code_of_body(impl, body) == "EXECUTABLE"


# ------------------------------------------------------------------ 2. Azure's other names for filter results

HIT = {"hate": {"filtered": False, "severity": "safe"}, "violence": {"filtered": True, "severity": "medium"}}
CLEAN = {"hate": {"filtered": False, "severity": "safe"}, "violence": {"filtered": False, "severity": "safe"}}
NOT_RUN = {"error": {"code": "content_filter_error", "message": "The contents are not filtered"}}


def _chat_chunk(choices: list[dict[str, Any]], **top: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-4",
        "choices": choices,
        **top,
    }


def _azure_chat_stream(prompt: Any = None, choice: Any = None) -> list[Any]:
    """An Azure OpenAI Chat stream of one call, as ``2023-07-01-preview`` sends
    it: ``prompt_annotations`` (``prompt``) first in a chunk of its own, and
    ``choice`` as the first choice's ``content_filter_result``."""
    first: dict[str, Any] = {"index": 0, "finish_reason": None, "delta": {"role": "assistant"}}
    if choice is not None:
        first["content_filter_result"] = choice
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
    events: list[Any] = []
    if prompt is not None:
        events.append(
            {
                "id": "",
                "object": "",
                "created": 0,
                "model": "",
                "prompt_annotations": [{"prompt_index": 0, "content_filter_results": prompt}],
                "choices": [],
                "usage": None,
            }
        )
    events += [
        _chat_chunk([first]),
        _chat_chunk([{"index": 0, "finish_reason": None, "delta": {"tool_calls": [call]}}]),
        _chat_chunk([{"index": 0, "finish_reason": "tool_calls", "delta": {}}]),
        "[DONE]",
    ]
    return events


def _outcome(impl: ModuleType, events: list[Any], form: str) -> tuple[str, str | None]:
    """The code (and path) the stream is refused with, or ``EXECUTABLE``."""
    try:
        if form == "events":
            response = _stream_text(impl, events)
        else:
            assembler = impl.StreamAssembler("openai-chat")
            for event in events:
                data = event if isinstance(event, str) else json.dumps(event)
                assembler.feed(f"data: {data}\n\n".encode())
            response = assembler.finish()
    except OutputError as error:
        return error.code, error.path
    return _decided_code(response), None


def _stream_text(impl: ModuleType, events: list[Any]) -> NormalizedResponse:
    assembler = impl.StreamAssembler("openai-chat")
    for event in events:
        assembler.feed_event(event if isinstance(event, str) else json.dumps(event))
    response: NormalizedResponse = assembler.finish()
    return response


@pytest.mark.parametrize("form", ["events", "sse"])
@pytest.mark.parametrize(
    ("prompt", "choice", "outcome"),
    [
        (CLEAN, None, ("EXECUTABLE", None)),
        (HIT, None, ("CONTENT_FILTERED", None)),
        (None, CLEAN, ("EXECUTABLE", None)),
        (None, {}, ("EXECUTABLE", None)),
        (None, HIT, ("CONTENT_FILTERED", None)),
        (None, NOT_RUN, ("PROVIDER_ERROR", "$.choices[0].content_filter_result.error")),
        (HIT, NOT_RUN, ("CONTENT_FILTERED", None)),  # a filter that withheld output wins
    ],
)
def test_azure_filter_results_under_their_other_names(
    impl: ModuleType, form: str, prompt: Any, choice: Any, outcome: tuple[str, str | None]
) -> None:
    assert _outcome(impl, _azure_chat_stream(prompt, choice), form) == outcome


@pytest.mark.parametrize(
    ("member", "results", "code"),
    [
        ("prompt_annotations", CLEAN, "EXECUTABLE"),
        ("prompt_annotations", HIT, "CONTENT_FILTERED"),
        ("prompt_filter_results", HIT, "CONTENT_FILTERED"),
    ],
)
def test_a_body_with_prompt_annotations(impl: ModuleType, member: str, results: Any, code: str) -> None:
    call = {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4",
        member: [{"prompt_index": 0, "content_filter_results": results}],
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {"role": "assistant", "content": None, "tool_calls": [call]},
            }
        ],
    }
    assert _decided_code(impl.normalize(json.dumps(body), provider="openai-chat")) == code


@pytest.mark.parametrize(
    ("top", "choice", "path"),
    [
        ({"prompt_annotations": {}}, {}, "$.prompt_annotations"),
        ({"prompt_annotations": [1]}, {}, "$.prompt_annotations[0]"),
        (
            {"prompt_annotations": [{"content_filter_results": []}]},
            {},
            "$.prompt_annotations[0].content_filter_results",
        ),
        ({}, {"content_filter_result": []}, "$.choices[0].content_filter_result"),
        (
            {},
            {"content_filter_result": {"hate": {"filtered": "yes"}}},
            "$.choices[0].content_filter_result.hate.filtered",
        ),
    ],
)
def test_other_names_of_another_shape_are_malformed(
    impl: ModuleType, top: dict[str, Any], choice: dict[str, Any], path: str
) -> None:
    chunk = _chat_chunk([{"index": 0, "finish_reason": None, "delta": {"role": "assistant"}, **choice}], **top)
    with pytest.raises(OutputError) as caught:
        impl.StreamAssembler("openai-chat").feed_event(json.dumps(chunk))
    assert (caught.value.code, caught.value.path) == ("MALFORMED_EVENT", path)


# ------------------------------------------------------------------ 3. object payloads bounded before they are written

_PAYLOAD_RSS = r"""
import json, resource, sys
from decisions import Limits, _pure
from decisions._backend import native_module
from decisions.errors import OutputError
from decisions.types import TextDelta
impl = _pure if sys.argv[1] == "pure" else native_module()
entry, shape = sys.argv[2], sys.argv[3]
limits = Limits(max_sse_event_bytes=1 << 20)
if shape == "string":  # 64 Mi characters, 128 MiB of UTF-8
    inner = "\u00e9" * (64 << 20)
elif shape == "shared":  # one 1 MiB list met 128 times: 128 MiB of text, 1 MiB of objects
    inner = [["x" * 1000] * 1000] * 128
else:  # the same, 300 levels down (past the recursive writer's depth)
    inner = [["x" * 1000] * 1000] * 128
    for _ in range(300):
        inner = [inner]
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    if entry == "feed_event":
        impl.StreamAssembler("anthropic", limits=limits).feed_event({"type": "ping", "x": inner}, "ping")
    elif entry == "canonical":
        text = inner if isinstance(inner, str) else json.dumps(inner[0][0])[:10]
        impl.StreamAssembler("canonical", limits=limits).feed_event(TextDelta(item_id="t", delta=text))
    else:
        impl.normalize([{"x": inner}], provider="anthropic", limits=limits)
    code = None
except OutputError as error:
    code = error.code
print(json.dumps([code, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before]))
"""


@pytest.mark.parametrize(
    ("entry", "shape"),
    [
        ("feed_event", "string"),
        ("feed_event", "shared"),
        ("feed_event", "deep"),
        ("normalize", "string"),
        ("normalize", "shared"),
        ("normalize", "deep"),
        ("canonical", "string"),
    ],
)
def test_an_object_payload_past_the_limit_is_refused_before_it_is_written(
    impl: ModuleType, entry: str, shape: str
) -> None:
    """128 MiB of text against a limit of 1 MiB: refused, with the peak RSS
    grown by a few MiB (writing the text grew it by 128 to 322)."""
    name = "pure" if impl.__name__.endswith("_pure") else "native"
    out = subprocess.run(
        [sys.executable, "-c", _PAYLOAD_RSS, name, entry, shape], capture_output=True, text=True, check=True
    )
    code, growth_kib = json.loads(out.stdout)
    assert code == "MALFORMED_EVENT"
    assert growth_kib < 16 * 1024


def _deep(value: Any, levels: int) -> Any:
    for _ in range(levels):
        value = [value]
    return value


def _fed(impl: ModuleType, payload: Any, limits: Limits) -> tuple[Any, ...]:
    """What feeding ``payload`` does, and what the stream says after."""
    assembler = impl.StreamAssembler("anthropic", limits=limits)
    try:
        assembler.feed_event(payload, "ping")
        outcome: tuple[Any, ...] = ("fed",)
    except OutputError as error:
        outcome = (error.code, str(error), error.path)
    try:
        assembler.feed_event('{"type": "ping"}', "ping")
    except OutputError as error:
        return (*outcome, assembler.state, error.code)
    return (*outcome, assembler.state)


def _normalized(impl: ModuleType, body: Any, limits: Limits) -> tuple[Any, ...]:
    try:
        impl.normalize(body, provider="anthropic", limits=limits)
    except OutputError as error:
        return error.code, str(error), error.path
    return ("normalized",)


#: payloads (an Anthropic ping with a member ``x``) whose text is about 1 KiB:
#: flat, with a shared list, nested past the recursive writer's depth, and
#: with a lone surrogate last (not UTF-8 whatever its size: that comes first)
PAYLOADS = {
    "flat": {"type": "ping", "x": "y" * 1000},
    "shared": {"type": "ping", "x": [["z" * 10] * 8] * 8},
    "deep": {"type": "ping", "x": _deep("w" * 1000, 250)},
    "surrogate": {"type": "ping", "x": "v" * 1000, "z": ["\ud800"]},
}


@pytest.mark.parametrize("name", list(PAYLOADS))
def test_an_object_payload_gets_what_its_text_gets_at_and_past_the_limit(impl: ModuleType, name: str) -> None:
    """The error (code, message, path) and the failed stream of the payload's
    own text, at every limit from one byte under its size to one over."""
    payload = PAYLOADS[name]
    text = json.dumps(payload, ensure_ascii=False)
    size = len(text.encode("utf-8", "surrogatepass"))
    refused = 0
    for limit in range(size - 40, size + 2):
        limits = Limits(max_sse_event_bytes=limit)
        assert _fed(impl, payload, limits) == _fed(impl, text, limits), limit
        body = {"content": [], "x": payload}
        assert _normalized(impl, body, limits) == _normalized(impl, json.dumps(body, ensure_ascii=False), limits), limit
        refused += "more than" in str(_fed(impl, payload, limits)[1])
    # for its size: refused under it, not from it on (the deep one for its depth then)
    assert refused == (0 if name == "surrogate" else 40)


def test_a_canonical_event_object_is_bounded_as_its_wire_format(impl: ModuleType) -> None:
    event = TextDelta(item_id="t", delta="d" * 500)
    text = json.dumps(event.to_dict())
    limits = Limits(max_sse_event_bytes=len(text) - 1)
    assembler = impl.StreamAssembler("canonical", limits=limits)
    with pytest.raises(OutputError) as caught:
        assembler.feed_event(event)
    assert (caught.value.code, caught.value.path) == ("MALFORMED_EVENT", "$")
    assert assembler.state == "failed"


# ------------------------------------------------------------------ 4. an SSE decoder after finish()


@pytest.mark.parametrize("after", [b"data: b\n\n", b"x", b"\n"])
def test_bytes_fed_to_a_finished_decoder_are_after_the_end(impl: ModuleType, after: bytes) -> None:
    decoder = impl.SSEDecoder()
    assert [e.data for e in decoder.feed(b"data: a\n\n")] == ["a"]
    assert decoder.finish() == []
    with pytest.raises(OutputError) as caught:
        decoder.feed(after)
    assert (caught.value.code, caught.value.offset) == ("EVENT_AFTER_TERMINAL", 9)
    for call in (lambda: decoder.feed(b"data: c\n\n"), decoder.finish):
        with pytest.raises(OutputError) as caught:
            call()
        assert caught.value.code == "STREAM_FAILED"


def test_a_finished_decoder_takes_nothing_and_finishes_again(impl: ModuleType) -> None:
    decoder = impl.SSEDecoder()
    decoder.feed(b"data: a\n\n")
    assert decoder.finish() == []
    assert decoder.feed(b"") == []
    assert decoder.feed(memoryview(b"")) == []
    assert decoder.finish() == []
