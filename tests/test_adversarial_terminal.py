"""Terminal signals: whatever in a provider's envelope says "not finished",
"failed", "blocked" or "ambiguous" wins over whatever says "done".

Each case is one envelope, fed as a raw SSE stream (event by event) or as a
whole body, on both backends, then through ``decide``. The expected outcome is
the exact error code of the first stage that refuses it, or ``EXECUTABLE`` for
the control cases: the same envelope without the veto, which must give a tool
decision (so every veto case is shown to be the only thing standing between
the input and an executed call).

Covered, per provider: the terminal event or finish field with each vetoing
value (error, failure, filter, refusal, truncation, cancelled, unknown and
empty strings), two signals in one envelope that disagree (the vetoing one
wins), a later terminal signal that contradicts an earlier one, events after
the terminal, a finish on one choice or candidate while the selected one is
unfinished, and choices or candidates that share an index.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Callable

import pytest

from conftest import FIXTURES
from decisions import Tool, ToolDecision, _backend, decide
from decisions.errors import ERROR_CODES, OutputError

EXECUTABLE = "EXECUTABLE"
ARGS = '{"path": "a.txt"}'
TOOLS = [
    Tool(
        name="read_file", parameters={"type": "object", "properties": {"path": {"type": "string"}}}, side_effects=False
    )
]


@dataclass(frozen=True)
class Case:
    name: str
    provider: str
    form: str  # "stream" | "body"
    payload: Any  # stream: a list of events; body: one body
    expect: str  # an error code, or EXECUTABLE
    options: dict[str, Any] = field(default_factory=dict)


CASES: list[Case] = []


def both(
    name: str,
    provider: str,
    stream: list[Any] | None,
    body: Any,
    expect: str,
    body_expect: str | None = None,
    **options: Any,
) -> None:
    """The case as a stream and as a whole body (either may be None;
    ``body_expect`` when the body's outcome differs)."""
    if stream is not None:
        CASES.append(Case(f"{provider} stream: {name}", provider, "stream", stream, expect, options))
    if body is not None:
        CASES.append(Case(f"{provider} body: {name}", provider, "body", body, body_expect or expect, options))


def frame(provider: str, event: Any) -> bytes:
    """One event as SSE bytes (Anthropic names its events)."""
    data = event if isinstance(event, str) else json.dumps(event)
    if provider == "anthropic":
        return f"event: {event['type']}\ndata: {data}\n\n".encode()
    return f"data: {data}\n\n".encode()


def run(impl: ModuleType, case: Case) -> Any:
    """The decision, or the code of the first error; nothing else escapes."""
    try:
        if case.form == "stream":
            assembler = impl.StreamAssembler(case.provider, **case.options)
            for event in case.payload:
                assembler.feed(frame(case.provider, event))
            response = assembler.finish()
        else:
            response = impl.normalize(json.dumps(case.payload), provider=case.provider, **case.options)
        return decide(response, tools=TOOLS)
    except OutputError as error:
        return error.code


def edit(value: Any, change: Callable[[Any], None]) -> Any:
    copied = copy.deepcopy(value)
    change(copied)
    return copied


# ---------------------------------------------------------------- OpenAI Chat

CHAT = "openai-chat"


def chat_chunk(choices: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m", "choices": choices, **extra}


CHAT_CALL = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": ""}}
CHAT_ARGS = {"index": 0, "function": {"arguments": ARGS}}


def chat_stream(
    finish: Any = "tool_calls", last: dict[str, Any] | None = None, after: list[Any] | None = None
) -> list[Any]:
    chunks: list[Any] = [
        chat_chunk([{"index": 0, "delta": {"role": "assistant", "tool_calls": [CHAT_CALL]}, "finish_reason": None}]),
        chat_chunk([{"index": 0, "delta": {"tool_calls": [CHAT_ARGS]}, "finish_reason": None}]),
        chat_chunk([{"index": 0, "delta": {}, "finish_reason": finish}], **(last or {})),
    ]
    return chunks + (after or []) + ["[DONE]"]


def chat_body(finish: Any = "tool_calls", **extra: Any) -> dict[str, Any]:
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": ARGS}}],
    }
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        **extra,
    }


CHAT_ERROR = {"message": "The server had an error", "type": "server_error", "code": None}

both("control", CHAT, chat_stream(), chat_body(), EXECUTABLE)
both(
    "error beside finish_reason tool_calls",
    CHAT,
    chat_stream(last={"error": CHAT_ERROR}),
    chat_body(error=CHAT_ERROR),
    "PROVIDER_ERROR",
)
both(
    "error beside finish_reason stop",
    CHAT,
    chat_stream("stop", last={"error": CHAT_ERROR}),
    chat_body("stop", error=CHAT_ERROR),
    "PROVIDER_ERROR",
)
CHAT_ERRORED = chat_chunk([{"index": 0, "delta": {"tool_calls": [CHAT_ARGS]}, "finish_reason": None}], error=CHAT_ERROR)
both(
    "error in a chunk that continues the call", CHAT, [chat_stream()[0], CHAT_ERRORED, "[DONE]"], None, "PROVIDER_ERROR"
)
both(
    "error in a chunk that continues the call, the finish after it",
    CHAT,
    [chat_stream()[0], CHAT_ERRORED, *chat_stream()[2:]],
    None,
    "EVENT_AFTER_TERMINAL",
)
both(
    "error chunk after the finish_reason",
    CHAT,
    chat_stream(after=[{"error": CHAT_ERROR}]),
    None,
    "EVENT_AFTER_TERMINAL",
)
both(
    "content after the finish_reason",
    CHAT,
    chat_stream(after=[chat_chunk([{"index": 0, "delta": {"content": "more"}, "finish_reason": None}])]),
    None,
    "EVENT_AFTER_TERMINAL",
)
both(
    "a second finish_reason that contradicts the first",
    CHAT,
    chat_stream(after=[chat_chunk([{"index": 0, "delta": {}, "finish_reason": "length"}])]),
    None,
    "EVENT_AFTER_TERMINAL",
)
# a body's selected choice must carry a finish_reason
both(
    "a chunk after [DONE]",
    CHAT,
    [*chat_stream(), chat_chunk([{"index": 0, "delta": {}, "finish_reason": "stop"}])],
    None,
    "EVENT_AFTER_TERMINAL",
)
both("no finish_reason (only [DONE])", CHAT, chat_stream(None), chat_body(None), "NO_TERMINAL_EVENT", "MALFORMED_EVENT")
for raw, code in [
    ("length", "INCOMPLETE_RESPONSE"),
    ("content_filter", "CONTENT_FILTERED"),
    # an unknown finish ends the choice and is refused by its name
    ("eos", "UNKNOWN_FINISH_REASON"),
    ("error", "UNKNOWN_FINISH_REASON"),
    ("in_progress", "UNKNOWN_FINISH_REASON"),
    ("", "UNKNOWN_FINISH_REASON"),
    ("TOOL_CALLS", "UNKNOWN_FINISH_REASON"),
]:
    both(f"finish_reason {raw!r}", CHAT, chat_stream(raw), chat_body(raw), code)
both(
    "two entries for choice 0 in one chunk",
    CHAT,
    [
        *chat_stream()[:2],
        chat_chunk(
            [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}, {"index": 0, "delta": {}, "finish_reason": None}]
        ),
        "[DONE]",
    ],
    None,
    "MULTIPLE_CHOICES",
)
both(
    "two entries for choice 0 in one chunk (choice=0)",
    CHAT,
    [
        *chat_stream()[:2],
        chat_chunk(
            [{"index": 0, "delta": {}, "finish_reason": None}, {"index": 0, "delta": {}, "finish_reason": "tool_calls"}]
        ),
        "[DONE]",
    ],
    None,
    "MULTIPLE_CHOICES",
    choice=0,
)
both(
    "two choices with index 0 (choice=0), the first done",
    CHAT,
    None,
    edit(
        chat_body(),
        lambda b: b["choices"].append(
            {"index": 0, "message": {"role": "assistant", "content": "cut"}, "finish_reason": "length"}
        ),
    ),
    "MULTIPLE_CHOICES",
    choice=0,
)
both(
    "choice 1 finishes while the selected choice 0 is unfinished",
    CHAT,
    [*chat_stream()[:2], chat_chunk([{"index": 1, "delta": {}, "finish_reason": "stop"}]), "[DONE]"],
    edit(
        chat_body(None),
        lambda b: b["choices"].append(
            {"index": 1, "message": {"role": "assistant", "content": "x"}, "finish_reason": "stop"}
        ),
    ),
    "NO_TERMINAL_EVENT",
    "MALFORMED_EVENT",
    choice=0,
)


# a Chat tool call of another type than "function" (a custom tool's call, a
# type the package does not know) may be a call the host must handle: the
# response is refused, whatever function object it also carries
for kind in ("custom", "file_search"):
    typed = {**CHAT_CALL, "type": kind, "function": {"name": "read_file", "arguments": ARGS}}
    both(
        f"a tool call of type {kind}",
        CHAT,
        [chat_chunk([{"index": 0, "delta": {"tool_calls": [typed]}}]), *chat_stream()[2:]],
        edit(chat_body(), lambda b, kind=kind: b["choices"][0]["message"]["tool_calls"][0].update(type=kind)),
        "UNSUPPORTED_ITEM",
    )
CUSTOM_CALL = {"id": "call_1", "type": "custom", "custom": {"name": "read_file", "input": "a.txt"}}
both(
    "a custom tool call",
    CHAT,
    [chat_chunk([{"index": 0, "delta": {"tool_calls": [{"index": 0, **CUSTOM_CALL}]}}]), *chat_stream()[2:]],
    edit(chat_body(), lambda b: b["choices"][0]["message"].update(tool_calls=[CUSTOM_CALL])),
    "UNSUPPORTED_ITEM",
)
both(
    "a continuation chunk that says type function",
    CHAT,
    [
        chat_stream()[0],
        chat_chunk([{"index": 0, "delta": {"tool_calls": [{**CHAT_ARGS, "type": "function"}]}}]),
        *chat_stream()[2:],
    ],
    None,
    EXECUTABLE,
)


# Azure OpenAI annotates each choice (and the prompt) with its content filter's
# results; ``filtered: true`` is a veto whatever ``finish_reason`` says.
SAFE = {
    "hate": {"filtered": False, "severity": "safe"},
    "self_harm": {"filtered": False, "severity": "safe"},
    "protected_material_code": {"filtered": False, "detected": False},
}
HIT = {**SAFE, "violence": {"filtered": True, "severity": "high"}}


def azure_stream(results: Any, finish: Any = "tool_calls", where: int = 2) -> list[Any]:
    """The Chat stream with ``content_filter_results`` on chunk ``where``."""
    chunks = chat_stream(finish)
    chunks[where]["choices"][0]["content_filter_results"] = results
    return chunks


def azure_body(results: Any, finish: Any = "tool_calls", **extra: Any) -> dict[str, Any]:
    return edit(chat_body(finish, **extra), lambda b: b["choices"][0].update(content_filter_results=results))


def prompt_results(results: Any) -> list[Any]:
    return [{"prompt_index": 0, "content_filter_results": results}]


AZURE_PROMPT_FIRST = chat_chunk([], prompt_filter_results=prompt_results(HIT))
for finish in ("tool_calls", "stop"):
    both(
        f"content_filter_results all unfiltered beside {finish}",
        CHAT,
        azure_stream(SAFE, finish),
        azure_body(SAFE, finish),
        EXECUTABLE,
    )
    both(
        f"content_filter_results filtered beside {finish}",
        CHAT,
        azure_stream(HIT, finish),
        azure_body(HIT, finish),
        "CONTENT_FILTERED",
    )
    both(
        f"prompt_filter_results filtered beside {finish}",
        CHAT,
        [AZURE_PROMPT_FIRST, *chat_stream(finish)],
        chat_body(finish, prompt_filter_results=prompt_results(HIT)),
        "CONTENT_FILTERED",
    )
both(
    "prompt_filter_results all unfiltered",
    CHAT,
    [chat_chunk([], prompt_filter_results=prompt_results(SAFE)), *chat_stream()],
    chat_body(prompt_filter_results=prompt_results(SAFE)),
    EXECUTABLE,
)
both("content_filter_results filtered in an earlier chunk", CHAT, azure_stream(HIT, where=1), None, "CONTENT_FILTERED")
both(
    "content_filter_results filtered after the finish_reason",
    CHAT,
    chat_stream(after=[chat_chunk([{"index": 0, "delta": {}, "content_filter_results": HIT}])]),
    None,
    "CONTENT_FILTERED",
)
both(
    "content_filter_results unfiltered after the finish_reason",
    CHAT,
    chat_stream(after=[chat_chunk([{"index": 0, "delta": {}, "content_filter_results": SAFE}])]),
    None,
    EXECUTABLE,
)
BLOCKLIST = {"filtered": False, "details": [{"filtered": True, "id": "my-list"}]}
both(
    "a custom blocklist entry filtered",
    CHAT,
    azure_stream({**SAFE, "custom_blocklists": BLOCKLIST}),
    azure_body({**SAFE, "custom_blocklists": BLOCKLIST}),
    "CONTENT_FILTERED",
)
both(
    "a custom blocklist list entry filtered",
    CHAT,
    azure_stream({**SAFE, "custom_blocklists": [{"filtered": True, "id": "my-list"}]}),
    azure_body({**SAFE, "custom_blocklists": [{"filtered": True, "id": "my-list"}]}),
    "CONTENT_FILTERED",
)
# Azure's ``error`` in the results: the filter did not run, so the output (or
# the prompt) was not screened; a filter that withheld output still wins.
NOT_RUN = {"code": "content_filter_error", "message": "The contents are not filtered"}
for label, results, expect in [
    ("a content filter error", {"error": NOT_RUN}, "PROVIDER_ERROR"),
    ("a content filter error beside unfiltered categories", {**SAFE, "error": NOT_RUN}, "PROVIDER_ERROR"),
    ("a category's error", {**SAFE, "hate": {"filtered": False, "error": NOT_RUN}}, "PROVIDER_ERROR"),
    ("a blocklist entry's error", {"custom_blocklists": [{"filtered": False, "error": NOT_RUN}]}, "PROVIDER_ERROR"),
    (
        "a details entry's error",
        {"custom_blocklists": {"filtered": False, "details": [{"error": NOT_RUN}]}},
        "PROVIDER_ERROR",
    ),
    ("a content filter error beside a filtered category", {**HIT, "error": NOT_RUN}, "CONTENT_FILTERED"),
    ("a null content filter error", {**SAFE, "error": None}, EXECUTABLE),
    ("a null category error", {"hate": {"filtered": False, "error": None}}, EXECUTABLE),
    ("a content filter error not an object", {"error": "failed"}, "MALFORMED_EVENT"),
]:
    both(label, CHAT, azure_stream(results), azure_body(results), expect)
both(
    "a prompt content filter error",
    CHAT,
    [chat_chunk([], prompt_filter_results=prompt_results({"error": NOT_RUN})), *chat_stream()],
    chat_body(prompt_filter_results=prompt_results({"error": NOT_RUN})),
    "PROVIDER_ERROR",
)
both(
    "a content filter error after the finish_reason",
    CHAT,
    chat_stream(after=[chat_chunk([{"index": 0, "delta": {}, "content_filter_results": {"error": NOT_RUN}}])]),
    None,
    "PROVIDER_ERROR",
)
both(
    "a content filter error after a filtered chunk",
    CHAT,
    [*azure_stream(HIT, where=1)[:2], *azure_stream({"error": NOT_RUN})[2:]],
    None,
    "CONTENT_FILTERED",
)
both(
    "a content filter error on a choice not selected",
    CHAT,
    [
        chat_chunk([{"index": 1, "delta": {}, "content_filter_results": {"error": NOT_RUN}}]),
        *chat_stream(),
    ],
    None,
    EXECUTABLE,
    choice=0,
)
for label, results in [
    ("filtered not a boolean", {"hate": {"filtered": "true"}}),
    ("a category not an object", {"hate": True}),
    ("the results not an object", [HIT]),
    ("details not a list", {"custom_blocklists": {"filtered": False, "details": {"filtered": True}}}),
]:
    both(f"content_filter_results: {label}", CHAT, azure_stream(results), azure_body(results), "MALFORMED_EVENT")
both(
    "prompt_filter_results not a list",
    CHAT,
    [chat_chunk([], prompt_filter_results={"content_filter_results": HIT}), *chat_stream()],
    chat_body(prompt_filter_results={"content_filter_results": HIT}),
    "MALFORMED_EVENT",
)


# ---------------------------------------------------------------- OpenAI Responses

RESP = "openai-responses"


def call_item(status: Any = "completed") -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "read_file",
        "arguments": ARGS,
        "status": status,
    }


def resp_object(status: Any = "completed", item_status: Any = "completed", **extra: Any) -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "model": "m",
        "status": status,
        "output": [call_item(item_status)],
        "error": None,
        "incomplete_details": None,
        "usage": {"input_tokens": 3, "output_tokens": 4},
        **extra,
    }


def resp_stream(
    kind: str = "response.completed",
    status: Any = "completed",
    done_status: Any = "completed",
    final_status: Any = "completed",
    after: list[Any] | None = None,
    **extra: Any,
) -> list[Any]:
    events: list[Any] = [
        {"type": "response.created", "response": {"id": "resp_1", "model": "m", "status": "in_progress", "output": []}},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {**call_item("in_progress"), "arguments": ""},
        },
        {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 0, "delta": ARGS},
        {"type": "response.function_call_arguments.done", "item_id": "fc_1", "output_index": 0, "arguments": ARGS},
        {"type": "response.output_item.done", "output_index": 0, "item": call_item(done_status)},
        {"type": kind, "response": resp_object(status, final_status, **extra)},
        *(after or []),
    ]
    for number, event in enumerate(events):
        event["sequence_number"] = number
    return events


RESP_ERROR = {"code": "server_error", "message": "The model failed"}


def resp_text_then_call(final_output: list[Any]) -> list[Any]:
    """A text message streamed at output 0, the call at output 1, then
    ``response.completed`` with ``final_output``."""
    message = {"type": "message", "id": "msg_1", "role": "assistant", "status": "in_progress", "content": []}
    part = {"type": "output_text", "text": "", "annotations": []}
    events: list[Any] = [
        {"type": "response.created", "response": {"id": "resp_1", "model": "m", "status": "in_progress", "output": []}},
        {"type": "response.output_item.added", "output_index": 0, "item": message},
        {
            "type": "response.content_part.added",
            "item_id": "msg_1",
            "output_index": 0,
            "content_index": 0,
            "part": part,
        },
        {
            "type": "response.output_text.delta",
            "item_id": "msg_1",
            "output_index": 0,
            "content_index": 0,
            "delta": "ok",
        },
        {"type": "response.output_item.done", "output_index": 0, "item": RESP_TEXT_DONE},
        *resp_stream()[1:5],
        {"type": "response.completed", "response": {**resp_object(), "output": final_output}},
    ]
    for event in events[5:9]:
        event["output_index"] = 1
    for number, event in enumerate(events):
        event["sequence_number"] = number
    return events


RESP_TEXT_DONE = {
    "type": "message",
    "id": "msg_1",
    "role": "assistant",
    "status": "completed",
    "content": [{"type": "output_text", "text": "ok", "annotations": []}],
}
# the final output lists what was streamed, in the order it was streamed: the
# calls run in the order the response gives them
both(
    "text then call, listed in stream order", RESP, resp_text_then_call([RESP_TEXT_DONE, call_item()]), None, EXECUTABLE
)
both(
    "text then call, listed in another order",
    RESP,
    resp_text_then_call([call_item(), RESP_TEXT_DONE]),
    None,
    "OUTPUT_MISMATCH",
)
both(
    "text then call, the call listed twice",
    RESP,
    resp_text_then_call([RESP_TEXT_DONE, call_item(), call_item()]),
    None,
    "OUTPUT_MISMATCH",
)


def beside_call(item: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    """(stream, body): the function call, then ``item`` at output index 1."""
    body = edit(resp_object(), lambda b: b["output"].append(item))
    stream = resp_stream()
    stream[-1:] = [
        {"type": "response.output_item.added", "output_index": 1, "item": item},
        {"type": "response.output_item.done", "output_index": 1, "item": item},
        {"type": "response.completed", "response": body},
    ]
    for number, event in enumerate(stream):
        event["sequence_number"] = number
    return stream, body


# An output item the host must act on, or one of a type the mapper does not
# know, beside a function call: the call must not run as if it were alone.
for label, item, expect in [
    (
        "mcp_approval_request",
        {"type": "mcp_approval_request", "id": "mcpr_1", "server_label": "s", "name": "rm", "arguments": "{}"},
        "UNSUPPORTED_ITEM",
    ),
    (
        "client tool_search_call",
        {
            "type": "tool_search_call",
            "id": "ts_1",
            "call_id": "c2",
            "execution": "client",
            "arguments": {},
            "status": "completed",
        },
        "UNSUPPORTED_ITEM",
    ),
    (
        "an unknown *_call",
        {"type": "future_tool_call", "id": "x_1", "call_id": "c3", "status": "completed"},
        "UNSUPPORTED_ITEM",
    ),
    ("an unknown item type", {"type": "hologram", "id": "h_1"}, "UNSUPPORTED_ITEM"),
    (
        "server tool_search_call",
        {"type": "tool_search_call", "id": "ts_1", "execution": "server", "status": "completed"},
        EXECUTABLE,
    ),
    (
        "web_search_call",
        {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search", "query": "q"}},
        EXECUTABLE,
    ),
    (
        "mcp_call",
        {"type": "mcp_call", "id": "mcp_1", "server_label": "s", "name": "n", "arguments": "{}", "output": "ok"},
        EXECUTABLE,
    ),
    ("mcp_list_tools", {"type": "mcp_list_tools", "id": "mcpl_1", "server_label": "s", "tools": []}, EXECUTABLE),
]:
    both(f"{label} beside a function_call", RESP, *beside_call(item), expect)

both("control", RESP, resp_stream(), resp_object(), EXECUTABLE)
for status in ("in_progress", "queued"):
    both(
        f"response.completed whose status is {status}", RESP, resp_stream(status=status), None, "UNKNOWN_FINISH_REASON"
    )
    both(f"status {status}", RESP, None, resp_object(status), "RESPONSE_NOT_FINISHED")
for status in ("done", "COMPLETED", "", "succeeded"):
    both(f"unknown status {status!r}", RESP, resp_stream(status=status), resp_object(status), "UNKNOWN_FINISH_REASON")
both("no status", RESP, None, resp_object(None), "BODY_NOT_FINISHED")
both("status failed", RESP, resp_stream(status="failed"), resp_object("failed"), "PROVIDER_ERROR")
both(
    "response.completed whose status is incomplete, without details",
    RESP,
    resp_stream(status="incomplete"),
    None,
    "UNKNOWN_FINISH_REASON",
)
both("status cancelled", RESP, resp_stream(status="cancelled"), resp_object("cancelled"), "RESPONSE_CANCELLED")
both(
    "status completed with an error object",
    RESP,
    resp_stream(error=RESP_ERROR),
    resp_object(error=RESP_ERROR),
    "PROVIDER_ERROR",
)
both(
    "response.incomplete whose status is completed",
    RESP,
    resp_stream("response.incomplete", incomplete_details={"reason": "max_output_tokens"}),
    None,
    "INCOMPLETE_RESPONSE",
)
both(
    "response.incomplete with an error object",
    RESP,
    resp_stream("response.incomplete", "incomplete", error=RESP_ERROR),
    None,
    "PROVIDER_ERROR",
)
both("response.failed whose status is completed", RESP, resp_stream("response.failed"), None, "PROVIDER_ERROR")
for reason, code in [
    ("max_output_tokens", "INCOMPLETE_RESPONSE"),
    ("content_filter", "CONTENT_FILTERED"),
    ("other", "UNKNOWN_FINISH_REASON"),
]:
    both(
        f"status completed with incomplete_details {reason}",
        RESP,
        resp_stream(incomplete_details={"reason": reason}),
        resp_object(incomplete_details={"reason": reason}),
        code,
    )
both(
    "status completed with empty incomplete_details",
    RESP,
    resp_stream(incomplete_details={}),
    resp_object(incomplete_details={}),
    "UNKNOWN_FINISH_REASON",
)
for item_status in ("incomplete", "in_progress", "unknown_status", ""):
    both(
        f"a call item whose status is {item_status!r}",
        RESP,
        resp_stream(done_status=item_status, final_status=item_status),
        resp_object(item_status=item_status),
        "ITEM_NOT_ENDED",
    )
both(
    "output_item.done says completed, the final output says incomplete",
    RESP,
    resp_stream(final_status="incomplete"),
    None,
    "ITEM_NOT_ENDED",
)
both(
    "output_item.done says incomplete, the final output says completed",
    RESP,
    resp_stream(done_status="incomplete"),
    None,
    "ITEM_NOT_ENDED",
)
both(
    "error event after response.completed",
    RESP,
    resp_stream(after=[{"type": "error", **RESP_ERROR}]),
    None,
    "EVENT_AFTER_TERMINAL",
)
both(
    "response.failed after response.completed",
    RESP,
    resp_stream(after=[{"type": "response.failed", "response": resp_object("failed")}]),
    None,
    "EVENT_AFTER_TERMINAL",
)
both(
    "response.completed after an error event",
    RESP,
    [
        *resp_stream()[:5],
        {"type": "error", **RESP_ERROR, "sequence_number": 5},
        {**resp_stream()[5], "sequence_number": 6},
    ],
    None,
    "EVENT_AFTER_TERMINAL",
)
both(
    "an unknown event after response.completed",
    RESP,
    resp_stream(after=[{"type": "response.audit.done"}]),
    None,
    "EVENT_AFTER_TERMINAL",
)


def resp_message(item_status: Any, final_status: Any) -> list[Any]:
    """A final answer as a message whose item status is given."""
    message = {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": item_status,
        "content": [{"type": "output_text", "text": "done", "annotations": []}],
    }
    events: list[Any] = [
        {"type": "response.created", "response": {"id": "resp_1", "model": "m", "status": "in_progress"}},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {**message, "status": "in_progress", "content": []},
        },
        {
            "type": "response.content_part.added",
            "item_id": "msg_1",
            "output_index": 0,
            "content_index": 0,
            "part": {"type": "output_text", "text": ""},
        },
        {
            "type": "response.output_text.delta",
            "item_id": "msg_1",
            "output_index": 0,
            "content_index": 0,
            "delta": "done",
        },
        {
            "type": "response.output_text.done",
            "item_id": "msg_1",
            "output_index": 0,
            "content_index": 0,
            "text": "done",
        },
        {
            "type": "response.content_part.done",
            "item_id": "msg_1",
            "output_index": 0,
            "content_index": 0,
            "part": {"type": "output_text", "text": "done"},
        },
        {"type": "response.output_item.done", "output_index": 0, "item": message},
        {
            "type": "response.completed",
            "response": {
                "id": "resp_1",
                "model": "m",
                "status": "completed",
                "output": [{**message, "status": final_status}],
            },
        },
    ]
    return events


def run_final(impl: ModuleType, events: list[Any]) -> Any:
    try:
        assembler = impl.StreamAssembler(RESP)
        for event in events:
            assembler.feed(frame(RESP, event))
        return decide(assembler.finish())
    except OutputError as error:
        return error.code


@pytest.mark.parametrize(
    "item_status, final_status",
    [("incomplete", "incomplete"), ("completed", "incomplete"), ("incomplete", "completed")],
)
def test_responses_final_answer_in_an_incomplete_message(
    impl: ModuleType, item_status: str, final_status: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A text answer whose message is incomplete is no final answer (content
    parts end before the item does, so only the item's status can say so)."""
    monkeypatch.setattr(_backend, "impl", impl)
    assert run_final(impl, resp_message(item_status, final_status)) == "ITEM_NOT_ENDED"
    assert run_final(impl, resp_message("completed", "completed")).value == "done"
    for status in (item_status, final_status):
        body = {
            "id": "resp_1",
            "model": "m",
            "status": "completed",
            "output": [
                {
                    "type": "message",
                    "id": "msg_1",
                    "status": status,
                    "content": [{"type": "output_text", "text": "done"}],
                }
            ],
        }
        if status == "completed":
            assert decide(impl.normalize(json.dumps(body), provider=RESP)).value == "done"
        else:
            with pytest.raises(OutputError) as caught:
                impl.normalize(json.dumps(body), provider=RESP)
            assert caught.value.code == "ITEM_NOT_ENDED"


# ---------------------------------------------------------------- Anthropic

ANTHROPIC = "anthropic"


def anthropic_start(stop_reason: Any = None) -> dict[str, Any]:
    return {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude",
            "content": [],
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {"input_tokens": 3, "output_tokens": 1},
        },
    }


def message_delta(stop_reason: Any) -> dict[str, Any]:
    return {
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason, "stop_sequence": None},
        "usage": {"output_tokens": 5},
    }


A_BLOCK_START = {
    "type": "content_block_start",
    "index": 0,
    "content_block": {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {}},
}
A_BLOCK_DELTA = {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": ARGS}}
A_BLOCK_STOP = {"type": "content_block_stop", "index": 0}
A_STOP = {"type": "message_stop"}
A_ERROR = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}


def anthropic_stream(*stop_reasons: Any, start: Any = None, after: list[Any] | None = None) -> list[Any]:
    deltas = [message_delta(r) for r in (stop_reasons or ("tool_use",))]
    return [anthropic_start(start), A_BLOCK_START, A_BLOCK_DELTA, A_BLOCK_STOP, *deltas, A_STOP, *(after or [])]


def anthropic_body(stop_reason: Any = "tool_use") -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude",
        "stop_sequence": None,
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.txt"}}],
        "stop_reason": stop_reason,
        "usage": {"input_tokens": 3, "output_tokens": 5},
    }


both("control", ANTHROPIC, anthropic_stream(), anthropic_body(), EXECUTABLE)
for raw, code in [
    ("refusal", "REFUSAL"),
    ("pause_turn", "UNKNOWN_FINISH_REASON"),
    ("max_tokens", "INCOMPLETE_RESPONSE"),
    ("model_context_window_exceeded", "INCOMPLETE_RESPONSE"),
    ("compaction", "UNKNOWN_FINISH_REASON"),
    ("", "UNKNOWN_FINISH_REASON"),
    (None, "UNKNOWN_FINISH_REASON"),
]:
    both(f"stop_reason {raw!r}", ANTHROPIC, anthropic_stream(raw), anthropic_body(raw), code)


def a_block(index: int, call_id: str) -> list[dict[str, Any]]:
    """A tool_use block at ``index``: start, its arguments, stop."""
    start = {**A_BLOCK_START, "index": index, "content_block": {**A_BLOCK_START["content_block"], "id": call_id}}  # type: ignore[dict-item]
    return [start, {**A_BLOCK_DELTA, "index": index}, {**A_BLOCK_STOP, "index": index}]


A_THINKING = {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}
# content blocks are the message's content in order: a missing index is a lost
# block (a call, maybe), whatever else the message holds
for label, blocks in [
    ("the first block at index 1", a_block(1, "toolu_1")),
    ("a block at index 2 after block 0", [*a_block(0, "toolu_1"), *a_block(2, "toolu_2")]),
    (
        "a call at index 2 after a thinking block",
        [A_THINKING, {"type": "content_block_stop", "index": 0}, *a_block(2, "toolu_2")],
    ),
]:
    both(label, ANTHROPIC, [anthropic_start(), *blocks, message_delta("tool_use"), A_STOP], None, "MALFORMED_EVENT")
both(
    "a call at index 1 after a thinking block",
    ANTHROPIC,
    [
        anthropic_start(),
        A_THINKING,
        {"type": "content_block_stop", "index": 0},
        *a_block(1, "toolu_1"),
        message_delta("tool_use"),
        A_STOP,
    ],
    None,
    EXECUTABLE,
)
both(
    "message_stop without a message_delta",
    ANTHROPIC,
    [anthropic_start(), A_BLOCK_START, A_BLOCK_DELTA, A_BLOCK_STOP, A_STOP],
    None,
    "UNKNOWN_FINISH_REASON",
)
both(
    "message_start says max_tokens, message_delta says tool_use",
    ANTHROPIC,
    anthropic_stream("tool_use", start="max_tokens"),
    None,
    "INCOMPLETE_RESPONSE",
)
both(
    "message_start says refusal, message_delta says tool_use",
    ANTHROPIC,
    anthropic_stream("tool_use", start="refusal"),
    None,
    "REFUSAL",
)
both(
    "message_delta max_tokens, then tool_use",
    ANTHROPIC,
    anthropic_stream("max_tokens", "tool_use"),
    None,
    "INCOMPLETE_RESPONSE",
)
both(
    "message_delta tool_use, then max_tokens",
    ANTHROPIC,
    anthropic_stream("tool_use", "max_tokens"),
    None,
    "INCOMPLETE_RESPONSE",
)
both("message_delta refusal, then end_turn", ANTHROPIC, anthropic_stream("refusal", "end_turn"), None, "REFUSAL")
both(
    "message_delta pause_turn, then tool_use",
    ANTHROPIC,
    anthropic_stream("pause_turn", "tool_use"),
    None,
    "UNKNOWN_FINISH_REASON",
)
both(
    "message_delta end_turn, then tool_use (ambiguous)",
    ANTHROPIC,
    anthropic_stream("end_turn", "tool_use"),
    None,
    "UNKNOWN_FINISH_REASON",
)
both(
    "message_delta tool_use, then end_turn, then tool_use",
    ANTHROPIC,
    anthropic_stream("tool_use", "end_turn", "tool_use"),
    None,
    "UNKNOWN_FINISH_REASON",
)
both("message_delta tool_use twice", ANTHROPIC, anthropic_stream("tool_use", "tool_use"), None, EXECUTABLE)
both("message_delta tool_use, then a null stop_reason", ANTHROPIC, anthropic_stream("tool_use", None), None, EXECUTABLE)
both(
    "error event, then message_stop",
    ANTHROPIC,
    [*anthropic_stream()[:-1], A_ERROR, A_STOP],
    None,
    "EVENT_AFTER_TERMINAL",
)
both("error event between the blocks", ANTHROPIC, [*anthropic_stream()[:3], A_ERROR], None, "PROVIDER_ERROR")
both(
    "error event after message_delta, nothing after it",
    ANTHROPIC,
    [*anthropic_stream()[:-1], A_ERROR],
    None,
    "PROVIDER_ERROR",
)
both("error event after message_stop", ANTHROPIC, anthropic_stream(after=[A_ERROR]), None, "EVENT_AFTER_TERMINAL")
both("ping after message_stop", ANTHROPIC, anthropic_stream(after=[{"type": "ping"}]), None, "EVENT_AFTER_TERMINAL")
both(
    "a new block after the message_delta stop_reason",
    ANTHROPIC,
    [
        *anthropic_stream()[:-1],
        {**A_BLOCK_START, "index": 1, "content_block": {**A_BLOCK_START["content_block"], "id": "toolu_2"}},
        {**A_BLOCK_DELTA, "index": 1},
        {**A_BLOCK_STOP, "index": 1},
        A_STOP,
    ],
    None,
    "EVENT_AFTER_TERMINAL",
)
both(
    "a delta after the message_delta stop_reason",
    ANTHROPIC,
    [anthropic_start(), A_BLOCK_START, message_delta("tool_use"), A_BLOCK_DELTA, A_BLOCK_STOP, A_STOP],
    None,
    "EVENT_AFTER_TERMINAL",
)
both("no message_stop", ANTHROPIC, anthropic_stream()[:-1], None, "NO_TERMINAL_EVENT")
# ``stop_details`` explains a stop: one of type ``refusal`` says the model
# refused, whatever ``stop_reason`` beside it says.
A_REFUSED = {"type": "refusal", "category": "cyber", "explanation": "declined"}


def a_details(stop_reason: Any, details: Any) -> tuple[list[Any], dict[str, Any]]:
    """(stream, body): the call with ``stop_details`` beside ``stop_reason``."""
    stream = anthropic_stream(stop_reason)
    stream[4] = edit(stream[4], lambda d: d["delta"].update(stop_details=details))
    return stream, {**anthropic_body(stop_reason), "stop_details": details}


for reason in ("tool_use", "end_turn", "stop_sequence", None):
    both(f"stop_details refusal beside stop_reason {reason!r}", ANTHROPIC, *a_details(reason, A_REFUSED), "REFUSAL")
both("stop_details null beside tool_use", ANTHROPIC, *a_details("tool_use", None), EXECUTABLE)
both(
    "stop_details of another type beside tool_use",
    ANTHROPIC,
    *a_details("tool_use", {"type": "other", "explanation": "x"}),
    EXECUTABLE,
)
both(
    "stop_details refusal beside max_tokens",
    ANTHROPIC,
    *a_details("max_tokens", A_REFUSED),
    "INCOMPLETE_RESPONSE",
)
for label, details in [("not an object", "refusal"), ("a type not a string", {"type": 1})]:
    both(f"stop_details {label}", ANTHROPIC, *a_details("tool_use", details), "MALFORMED_EVENT")
both(
    "stop_details refusal in message_start, message_delta tool_use",
    ANTHROPIC,
    edit(anthropic_stream(), lambda s: s[0]["message"].update(stop_details=A_REFUSED)),
    None,
    "REFUSAL",
)
both(
    "message_delta tool_use, then one with refusal stop_details",
    ANTHROPIC,
    [
        *anthropic_stream()[:-1],
        {**message_delta(None), "delta": {"stop_reason": None, "stop_details": A_REFUSED}},
        A_STOP,
    ],
    None,
    "REFUSAL",
)


# ---------------------------------------------------------------- Gemini

GEMINI = "gemini"
G_CALL = {"functionCall": {"name": "read_file", "args": {"path": "a.txt"}}}


def candidate(finish: Any = None, parts: list[Any] | None = None, index: Any = 0, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"content": {"role": "model", "parts": parts if parts is not None else [G_CALL]}, **extra}
    if index is not None:
        out["index"] = index
    if finish is not None:
        out["finishReason"] = finish
    return out


def g_chunk(*candidates: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"candidates": list(candidates), "responseId": "r1", "modelVersion": "gemini-test", **extra}


def gemini(finish: Any = "STOP", first: dict[str, Any] | None = None, **last: Any) -> tuple[list[Any], dict[str, Any]]:
    """(stream, body): the call in one chunk and the finish in the next; the
    body holds both in one chunk."""
    stream = [first or g_chunk(candidate()), g_chunk(candidate(finish, parts=[{"text": ""}]), **last)]
    body = g_chunk(candidate(finish), **last)
    return stream, body


BLOCKED_RATING = {"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": True}

both("control", GEMINI, *gemini(), EXECUTABLE)
both(
    "promptFeedback.blockReason beside finishReason STOP",
    GEMINI,
    *gemini(promptFeedback={"blockReason": "SAFETY"}),
    "CONTENT_FILTERED",
)
both(
    "promptFeedback.blockReason OTHER beside finishReason STOP",
    GEMINI,
    *gemini(promptFeedback={"blockReason": "OTHER"}),
    "CONTENT_FILTERED",
)
both(
    "promptFeedback.blockReason BLOCK_REASON_UNSPECIFIED beside STOP",
    GEMINI,
    *gemini(promptFeedback={"blockReason": "BLOCK_REASON_UNSPECIFIED"}),
    "CONTENT_FILTERED",
)
both(
    "blockReason in the first chunk, STOP after it",
    GEMINI,
    gemini(first=g_chunk(candidate(), promptFeedback={"blockReason": "PROHIBITED_CONTENT"}))[0],
    None,
    "CONTENT_FILTERED",
)
for raw, code in [
    ("SAFETY", "CONTENT_FILTERED"),
    ("RECITATION", "CONTENT_FILTERED"),
    ("BLOCKLIST", "CONTENT_FILTERED"),
    ("PROHIBITED_CONTENT", "CONTENT_FILTERED"),
    ("SPII", "CONTENT_FILTERED"),
    ("LANGUAGE", "CONTENT_FILTERED"),
    ("IMAGE_SAFETY", "CONTENT_FILTERED"),
    ("MODEL_ARMOR", "CONTENT_FILTERED"),  # Vertex AI: blocked by Model Armor
    ("MALFORMED_FUNCTION_CALL", "RESPONSE_ERROR"),
    ("MALFORMED_RESPONSE", "RESPONSE_ERROR"),
    ("UNEXPECTED_TOOL_CALL", "RESPONSE_ERROR"),
    ("TOO_MANY_TOOL_CALLS", "RESPONSE_ERROR"),
    ("MAX_TOKENS", "INCOMPLETE_RESPONSE"),
    ("OTHER", "UNKNOWN_FINISH_REASON"),
    ("IMAGE_OTHER", "UNKNOWN_FINISH_REASON"),
    ("NO_IMAGE", "UNKNOWN_FINISH_REASON"),
    ("FINISH_REASON_UNSPECIFIED", "UNKNOWN_FINISH_REASON"),
    ("stop", "UNKNOWN_FINISH_REASON"),
    ("", "UNKNOWN_FINISH_REASON"),
]:
    both(f"finishReason {raw!r}", GEMINI, *gemini(raw), code)
both(
    "a blocked safety rating beside finishReason STOP",
    GEMINI,
    [g_chunk(candidate()), g_chunk(candidate("STOP", parts=[{"text": ""}], safetyRatings=[BLOCKED_RATING]))],
    g_chunk(candidate("STOP", safetyRatings=[BLOCKED_RATING])),
    "CONTENT_FILTERED",
)
both(
    "a blocked safety rating in an earlier chunk, STOP later",
    GEMINI,
    gemini(first=g_chunk(candidate(safetyRatings=[BLOCKED_RATING])))[0],
    None,
    "CONTENT_FILTERED",
)
both(
    "an unblocked safety rating beside STOP",
    GEMINI,
    *gemini(first=g_chunk(candidate(safetyRatings=[{**BLOCKED_RATING, "blocked": False}]))),
    EXECUTABLE,
)
both(
    "a blocked prompt safety rating without blockReason beside STOP",
    GEMINI,
    *gemini(promptFeedback={"safetyRatings": [BLOCKED_RATING]}),
    "CONTENT_FILTERED",
)
both(
    "a blocked prompt safety rating in the first chunk, STOP later",
    GEMINI,
    gemini(first=g_chunk(candidate(), promptFeedback={"safetyRatings": [BLOCKED_RATING]}))[0],
    None,
    "CONTENT_FILTERED",
)
both(
    "an unblocked prompt safety rating beside STOP",
    GEMINI,
    *gemini(promptFeedback={"safetyRatings": [{**BLOCKED_RATING, "blocked": False}]}),
    EXECUTABLE,
)
both(
    "a prompt safety rating whose blocked is not a boolean",
    GEMINI,
    *gemini(promptFeedback={"safetyRatings": [{**BLOCKED_RATING, "blocked": "true"}]}),
    "MALFORMED_EVENT",
)
both(
    "a blocked safety rating beside MAX_TOKENS",
    GEMINI,
    gemini("MAX_TOKENS", first=g_chunk(candidate(safetyRatings=[BLOCKED_RATING])))[0],
    g_chunk(candidate("MAX_TOKENS", safetyRatings=[BLOCKED_RATING])),
    "INCOMPLETE_RESPONSE",
)
both(
    "error beside finishReason STOP",
    GEMINI,
    *gemini(error={"code": 500, "status": "INTERNAL", "message": "boom"}),
    "PROVIDER_ERROR",
)
# Gemini has no terminal event: the end of the stream is the terminal, and
# the last finishReason seen then is the finish (a veto is kept). After a
# chunk that gave a finishReason, a chunk without one may bring usage,
# citations or empty text, not content: that came after the end.
for label, parts in [
    ("text", [{"text": "more"}]),
    ("a call", [{"functionCall": {"name": "read_file", "args": {"path": "b.txt"}}}]),
    ("a thought", [{"text": "hmm", "thought": True}]),
    ("empty text, then a call", [{"text": ""}, {"functionCall": {"name": "read_file", "args": {}}}]),
]:
    both(
        f"{label} in a chunk without a finishReason after the finishReason",
        GEMINI,
        [*gemini()[0], g_chunk(candidate(parts=parts))],
        [gemini()[1], g_chunk(candidate(parts=parts))],
        "EVENT_AFTER_TERMINAL",
    )
for label, chunk in [
    ("usage", {"responseId": "r1", "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 4}}),
    ("empty text", g_chunk(candidate(parts=[{"text": ""}]))),
    ("text beside STOP again (every chunk says STOP)", g_chunk(candidate("STOP", parts=[{"text": "more"}]))),
]:
    both(f"{label} in a chunk after the finishReason", GEMINI, [*gemini()[0], chunk], [gemini()[1], chunk], EXECUTABLE)
both(
    "a chunk after a SAFETY finishReason",
    GEMINI,
    [*gemini("SAFETY")[0], g_chunk(candidate(parts=[{"text": "more"}]))],
    None,
    "CONTENT_FILTERED",
)
for options in ({}, {"choice": 0}):
    label = " (choice=0)" if options else ""
    both(
        f"two candidates with index 0, the first done{label}",
        GEMINI,
        [g_chunk(candidate()), g_chunk(candidate("STOP", parts=[]), candidate("SAFETY", parts=[]))],
        g_chunk(candidate("STOP"), candidate("SAFETY", parts=[])),
        "MULTIPLE_CHOICES",
        **options,
    )
    both(
        f"two candidates with index 0, both STOP{label}",
        GEMINI,
        [g_chunk(candidate()), g_chunk(candidate("STOP", parts=[]), candidate("STOP", parts=[]))],
        g_chunk(candidate("STOP"), candidate("STOP")),
        "MULTIPLE_CHOICES",
        **options,
    )
    both(
        f"a candidate without index after candidate 0{label}",
        GEMINI,
        [g_chunk(candidate()), g_chunk(candidate("STOP", parts=[], index=None), candidate("STOP", parts=[]))],
        g_chunk(candidate("STOP", index=None), candidate("STOP", index=0)),
        "MULTIPLE_CHOICES",
        **options,
    )
both(
    "candidate 1 finishes while the selected candidate 0 is unfinished",
    GEMINI,
    [
        g_chunk(candidate(), candidate(index=1, parts=[{"text": "x"}])),
        g_chunk(candidate(index=1, finish="STOP", parts=[])),
    ],
    g_chunk(candidate(), candidate("STOP", index=1, parts=[{"text": "x"}])),
    "UNKNOWN_FINISH_REASON",
    choice=0,
)
both("no finishReason at all", GEMINI, [g_chunk(candidate())], g_chunk(candidate()), "UNKNOWN_FINISH_REASON")


# ------------------------------------- blocks and parts beside the call

A_AUDIO = {"type": "audio", "data": "UklGRg=="}


def a_beside_call(block: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    """(stream, body): the tool_use block, then ``block`` as content block 1."""
    stream = anthropic_stream()
    start = {"type": "content_block_start", "index": 1, "content_block": block}
    stream[4:4] = [start, {"type": "content_block_stop", "index": 1}]
    body = edit(anthropic_body(), lambda b: b["content"].append(block))
    return stream, body


# A content block Anthropic does not run itself, or of a type the mapper does
# not know, beside a tool_use block: the call must not run as if it were alone.
for label, block, expect in [
    ("an unknown block type", {"type": "hologram", "id": "h_1"}, "UNSUPPORTED_ITEM"),
    ("an audio block", A_AUDIO, "UNSUPPORTED_ITEM"),
    ("a tool_result block", {"type": "tool_result", "tool_use_id": "toolu_0", "content": "x"}, "UNSUPPORTED_ITEM"),
    (
        "server_tool_use",
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "q"}},
        EXECUTABLE,
    ),
    (
        "web_search_tool_result",
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
        EXECUTABLE,
    ),
    (
        "mcp_tool_use",
        {"type": "mcp_tool_use", "id": "mcptoolu_1", "name": "n", "server_name": "s", "input": {}},
        EXECUTABLE,
    ),
    ("container_upload", {"type": "container_upload", "file_id": "file_1"}, EXECUTABLE),
]:
    both(f"a {label} beside the tool_use", ANTHROPIC, *a_beside_call(block), expect)


def g_beside_call(part: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    """(stream, body): the function call, then ``part`` in the same content."""
    stream = [g_chunk(candidate(parts=[G_CALL, part])), g_chunk(candidate("STOP", parts=[{"text": ""}]))]
    return stream, g_chunk(candidate("STOP", parts=[G_CALL, part]))


G_IMAGE = {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}}

# A part Gemini does not run itself (content the decision would lose, a
# function response, a key the mapper does not know) beside a function call.
for label, part, expect in [
    ("inlineData", G_IMAGE, "UNSUPPORTED_ITEM"),
    ("fileData", {"fileData": {"mimeType": "image/png", "fileUri": "gs://b/f.png"}}, "UNSUPPORTED_ITEM"),
    ("functionResponse", {"functionResponse": {"name": "rm", "response": {}}}, "UNSUPPORTED_ITEM"),
    ("an unknown key", {"hologram": {}}, "UNSUPPORTED_ITEM"),
    ("executableCode", {"executableCode": {"language": "PYTHON", "code": "print(1)"}}, EXECUTABLE),
    ("codeExecutionResult", {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1"}}, EXECUTABLE),
]:
    both(f"a part with {label} beside the call", GEMINI, *g_beside_call(part), expect)


CHAT_AUDIO = {"id": "audio_1", "data": "UklGRg==", "transcript": "and then delete it", "expires_at": 1}


def chat_beside_call(**members: Any) -> tuple[list[Any], dict[str, Any]]:
    """(stream, body): the tool call, with ``members`` in a delta of its own
    and in the message."""
    stream = chat_stream()
    stream[2:2] = [chat_chunk([{"index": 0, "delta": members, "finish_reason": None}])]
    body = edit(chat_body(), lambda b: b["choices"][0]["message"].update(members))
    return stream, body


# An audio answer beside the tool call is part of the answer the package
# cannot represent; documented metadata (annotations) and a null audio are not.
both("audio beside the tool call", CHAT, *chat_beside_call(audio=CHAT_AUDIO), "UNSUPPORTED_ITEM")
both("a null audio beside the tool call", CHAT, *chat_beside_call(audio=None), EXECUTABLE)
both("annotations beside the tool call", CHAT, None, chat_beside_call(annotations=[])[1], EXECUTABLE)


# ---------------------------------------------------------------- the runner


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_terminal_signal(impl: ModuleType, case: Case, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_backend, "impl", impl)
    result = run(impl, case)
    if case.expect == EXECUTABLE:
        assert isinstance(result, ToolDecision), result
        assert [(c.name, c.arguments) for c in result.calls] == [("read_file", {"path": "a.txt"})]
    else:
        assert result == case.expect


@pytest.mark.parametrize(
    ("results", "path"),
    [
        ({"hate": {"filtered": 1}}, "$.choices[0].content_filter_results.hate.filtered"),
        ({"a": {}, "b": [{"filtered": None}, 3]}, "$.choices[0].content_filter_results.b[1]"),
        ({"x": {"details": [{"filtered": "no"}]}}, "$.choices[0].content_filter_results.x.details[0].filtered"),
    ],
)
def test_malformed_filter_results_name_the_field(impl: ModuleType, results: Any, path: str) -> None:
    for form in ("stream", "body"):
        payload = azure_stream(results) if form == "stream" else azure_body(results)
        with pytest.raises(OutputError) as caught:
            if form == "stream":
                assembler = impl.StreamAssembler(CHAT)
                for event in payload:
                    assembler.feed(frame(CHAT, event))
                assembler.finish()
            else:
                impl.normalize(json.dumps(payload), provider=CHAT)
        assert (caught.value.code, caught.value.path) == ("MALFORMED_EVENT", path)


@pytest.mark.parametrize(
    ("results", "path"),
    [
        ({**SAFE, "error": NOT_RUN}, "$.choices[0].content_filter_results.error"),
        ({"hate": {"error": NOT_RUN}, "z": {"error": NOT_RUN}}, "$.choices[0].content_filter_results.hate.error"),
        ({"b": [{}, {"error": 0}]}, "$.choices[0].content_filter_results.b[1].error"),
    ],
)
def test_a_filter_that_did_not_run_is_a_retryable_provider_error_at_its_path(
    impl: ModuleType, results: Any, path: str
) -> None:
    """The output was not screened: nothing of it runs, the request may be sent again."""
    for form in ("stream", "body"):
        with pytest.raises(OutputError) as caught:
            if form == "stream":
                assembler = impl.StreamAssembler(CHAT)
                for event in azure_stream(results):
                    assembler.feed(frame(CHAT, event))
                assembler.finish()
            else:
                impl.normalize(json.dumps(azure_body(results)), provider=CHAT)
        error = caught.value
        assert (error.code, error.path, error.retryable, error.layer) == ("PROVIDER_ERROR", path, True, "transport")
        assert "not screened" in error.message


@pytest.mark.parametrize(
    ("error", "retryable"),
    [
        ({"code": 502, "message": "Upstream error"}, True),  # OpenRouter's mid-stream error
        ({"code": 429, "message": "Rate limited"}, True),
        ({"code": "429", "message": "exceeded call rate limit"}, True),  # Azure OpenAI
        ({"code": "503", "message": "unavailable", "type": "InternalServerError"}, True),
        ({"code": "vector_store_timeout", "message": "timed out"}, True),
        ({"code": "server_error", "message": "boom"}, True),
        ({"code": 400, "message": "bad request"}, False),
        ({"code": "invalid_prompt", "message": "no"}, False),
        ({"code": "insufficient_quota", "message": "quota", "type": "insufficient_quota"}, False),
    ],
)
def test_an_openai_error_object_is_retryable_by_its_code(impl: ModuleType, error: Any, retryable: bool) -> None:
    """An error object's code that is a rate limit, a timeout or a server's
    HTTP status says the request may be sent again; one about the request does not."""
    sources = [
        (CHAT, "stream", [chat_stream()[0], {"error": error}]),
        (CHAT, "body", chat_body(error=error)),
        (RESP, "stream", resp_stream("response.failed", "failed", error=error)),
        (RESP, "body", resp_object("failed", error=error)),
    ]
    for provider, form, payload in sources:
        with pytest.raises(OutputError) as caught:
            if form == "stream":
                assembler = impl.StreamAssembler(provider)
                for event in payload:
                    assembler.feed(frame(provider, event))
                assembler.finish()
            else:
                impl.normalize(json.dumps(payload), provider=provider)
        assert (caught.value.code, caught.value.retryable) == ("PROVIDER_ERROR", retryable), (provider, form)


@pytest.mark.parametrize(
    ("case", "retryable"),
    [
        (Case("gemini stream cut before any finishReason", GEMINI, "stream", [g_chunk(candidate())], ""), True),
        (Case("gemini body without finishReason", GEMINI, "body", g_chunk(candidate()), ""), True),
        (
            Case(
                "anthropic message_stop without a stop_reason",
                ANTHROPIC,
                "stream",
                [anthropic_start(), A_BLOCK_START, A_BLOCK_DELTA, A_BLOCK_STOP, A_STOP],
                "",
            ),
            True,
        ),
        (Case("gemini finishReason OTHER", GEMINI, "body", gemini("OTHER")[1], ""), False),
        (Case("anthropic stop_reason pause_turn", ANTHROPIC, "body", anthropic_body("pause_turn"), ""), False),
    ],
    ids=lambda value: value.name if isinstance(value, Case) else str(value),
)
def test_no_finish_reason_at_all_is_retryable(
    impl: ModuleType, case: Case, retryable: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing ended the response (a Gemini stream ends with no finishReason,
    an Anthropic message_stop follows no stop_reason): it may have been cut, as
    a stream without its terminal event, so it may be asked for again; a
    finish reason the package does not know is not retried blindly."""
    monkeypatch.setattr(_backend, "impl", impl)
    with pytest.raises(OutputError) as caught:
        if case.form == "stream":
            assembler = impl.StreamAssembler(case.provider)
            for event in case.payload:
                assembler.feed(frame(case.provider, event))
            response = assembler.finish()
        else:
            response = impl.normalize(json.dumps(case.payload), provider=case.provider)
        decide(response, tools=TOOLS)
    assert (caught.value.code, caught.value.retryable) == ("UNKNOWN_FINISH_REASON", retryable)


def test_a_paused_turn_says_how_to_continue(impl: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    """Anthropic's documented ``pause_turn`` (a server-side turn paused, to be
    continued by sending it back) was refused with the hint for a value the
    package does not know; it is still refused, with what to do."""
    monkeypatch.setattr(_backend, "impl", impl)
    response = impl.normalize(json.dumps(anthropic_body("pause_turn")), provider="anthropic")
    with pytest.raises(OutputError) as caught:
        decide(response, tools=TOOLS)
    assert (caught.value.code, caught.value.retryable) == ("UNKNOWN_FINISH_REASON", False)
    assert "send the response back" in (caught.value.hint or "")
    unknown = impl.normalize(json.dumps(anthropic_body("some_new_reason")), provider="anthropic")
    with pytest.raises(OutputError) as caught:
        decide(unknown, tools=TOOLS)
    assert "send the response back" not in (caught.value.hint or "")


@pytest.mark.parametrize(
    ("extra", "expect"),
    [
        ({"error_type": "overloaded"}, True),
        ({"error_type": "validation"}, False),
        ({"error_type": "generation"}, False),
        ({}, False),
        ({"error_type": None}, False),
    ],
)
def test_a_tgi_string_error_is_typed_by_its_error_type(impl: ModuleType, extra: dict[str, Any], expect: bool) -> None:
    """Hugging Face TGI streams ``{"error": "...", "error_type": "..."}``: an
    overloaded server may be asked again, a request it found invalid not."""
    for form in ("stream", "body"):
        chunk = {"error": "Model is overloaded", **extra}
        response = None
        with pytest.raises(OutputError) as caught:
            if form == "stream":
                assembler = impl.StreamAssembler(CHAT)
                assembler.feed(frame(CHAT, chunk))
                response = assembler.finish()
            else:
                response = impl.normalize(json.dumps(chunk), provider=CHAT)
        assert response is None
        assert (caught.value.code, caught.value.retryable) == ("PROVIDER_ERROR", expect), form


def test_a_tgi_error_type_not_a_string_is_malformed(impl: ModuleType) -> None:
    assembler = impl.StreamAssembler(CHAT)
    with pytest.raises(OutputError) as caught:
        assembler.feed(frame(CHAT, {"error": "boom", "error_type": 3}))
        assembler.finish()
    assert (caught.value.code, caught.value.path) == ("MALFORMED_EVENT", "$.error_type")


def test_a_filter_after_the_finish_names_its_category(impl: ModuleType) -> None:
    assembler = impl.StreamAssembler(CHAT)
    with pytest.raises(OutputError) as caught:
        for event in chat_stream(after=[chat_chunk([{"index": 0, "delta": {}, "content_filter_results": HIT}])]):
            assembler.feed(frame(CHAT, event))
    assert (caught.value.code, caught.value.path) == (
        "CONTENT_FILTERED",
        "$.choices[0].content_filter_results.violence",
    )


def test_an_unsupported_item_names_its_type_and_path(impl: ModuleType) -> None:
    stream, body = beside_call({"type": "mcp_approval_request", "id": "mcpr_1"})
    with pytest.raises(OutputError) as caught:
        impl.normalize(json.dumps(body), provider=RESP)
    assert (caught.value.code, caught.value.path) == ("UNSUPPORTED_ITEM", "$.output[1]")
    assert '"mcp_approval_request"' in str(caught.value)
    assembler = impl.StreamAssembler(RESP)
    with pytest.raises(OutputError) as caught:
        for event in stream:
            assembler.feed(frame(RESP, event))
    assert (caught.value.code, caught.value.path) == ("UNSUPPORTED_ITEM", "$.item")


AUDIO = {"type": "output_audio", "data": "UklGRg==", "transcript": "and then delete it"}


def message_with(part: dict[str, Any]) -> list[Any]:
    """The final-answer stream with ``part`` as content part 1 of the message."""
    events = resp_message("completed", "completed")
    message = events[-2]["item"]
    message["content"] = [*message["content"], part]
    events[-1]["response"]["output"] = [message]
    added = {"type": "response.content_part.added", "item_id": "msg_1", "output_index": 0, "content_index": 1}
    events[-2:-2] = [{**added, "part": part}, {**added, "type": "response.content_part.done", "part": part}]
    for number, event in enumerate(events):
        event["sequence_number"] = number
    return events


def test_a_message_part_of_unknown_type_is_no_half_answer(impl: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    """The text parts of a message beside a part the mapper cannot represent
    are not the whole answer: ``UNSUPPORTED_ITEM``, never a cut final answer."""
    monkeypatch.setattr(_backend, "impl", impl)
    text = {"type": "output_text", "text": "!", "annotations": []}
    assert run_final(impl, message_with(text)).value == "done!"
    assert run_final(impl, message_with(AUDIO)) == "UNSUPPORTED_ITEM"
    body = message_with(AUDIO)[-1]["response"]
    with pytest.raises(OutputError) as caught:
        impl.normalize(json.dumps(body), provider=RESP)
    assert (caught.value.code, caught.value.path) == ("UNSUPPORTED_ITEM", "$.output[0].content[1]")
    assembler = impl.StreamAssembler(RESP)
    with pytest.raises(OutputError) as caught:
        for event in message_with(AUDIO):
            assembler.feed(frame(RESP, event))
    assert (caught.value.code, caught.value.path) == ("UNSUPPORTED_ITEM", "$.part")
    assert '"output_audio"' in str(caught.value)


def refusal(impl: ModuleType, provider: str, stream: list[Any], body: Any) -> list[tuple[str, str | None, str]]:
    """(code, path, message) of the stream's error and of the body's, in that order."""
    errors = []
    for form in ("stream", "body"):
        with pytest.raises(OutputError) as caught:
            if form == "stream":
                assembler = impl.StreamAssembler(provider)
                for event in stream:
                    assembler.feed(frame(provider, event))
                assembler.finish()
            else:
                impl.normalize(json.dumps(body), provider=provider)
        errors.append((caught.value.code, caught.value.path, str(caught.value)))
    return errors


def final(impl: ModuleType, provider: str, stream: list[Any], body: Any) -> list[Any]:
    """The final answers of the stream and of the body."""
    assembler = impl.StreamAssembler(provider)
    for event in stream:
        assembler.feed(frame(provider, event))
    return [decide(assembler.finish()).value, decide(impl.normalize(json.dumps(body), provider=provider)).value]


def a_answer(block: dict[str, Any] | None) -> tuple[list[Any], dict[str, Any]]:
    """(stream, body): the text answer "done", then ``block`` as content block 1."""
    text = {"type": "text", "text": ""}
    stream = [
        anthropic_start(),
        {"type": "content_block_start", "index": 0, "content_block": text},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "done"}},
        {"type": "content_block_stop", "index": 0},
    ]
    content = [{**text, "text": "done"}]
    if block is not None:
        stream += [
            {"type": "content_block_start", "index": 1, "content_block": block},
            {"type": "content_block_stop", "index": 1},
        ]
        content.append(block)
    stream += [message_delta("end_turn"), A_STOP]
    return stream, {**anthropic_body("end_turn"), "content": content}


def test_an_anthropic_block_of_unknown_type_is_no_half_answer(
    impl: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The text beside a block the mapper cannot represent is not the whole
    answer: ``UNSUPPORTED_ITEM`` at the block's path, never a cut final answer."""
    monkeypatch.setattr(_backend, "impl", impl)
    assert final(impl, ANTHROPIC, *a_answer(None)) == ["done", "done"]
    assert final(impl, ANTHROPIC, *a_answer({"type": "container_upload", "file_id": "f"})) == ["done", "done"]
    errors = refusal(impl, ANTHROPIC, *a_answer(A_AUDIO))
    assert [error[:2] for error in errors] == [
        ("UNSUPPORTED_ITEM", "$.content_block"),
        ("UNSUPPORTED_ITEM", "$.content[1]"),
    ]
    assert all('"audio"' in error[2] for error in errors)
    stream, body = a_answer(A_AUDIO)
    start = anthropic_start("end_turn")
    start["message"]["content"] = body["content"]
    with pytest.raises(OutputError) as caught:
        impl.StreamAssembler(ANTHROPIC).feed(frame(ANTHROPIC, start))
    assert (caught.value.code, caught.value.path) == ("UNSUPPORTED_ITEM", "$.message.content[1]")


def g_answer(part: dict[str, Any] | None) -> tuple[list[Any], dict[str, Any]]:
    """(stream, body): the text answer "done", then ``part``."""
    parts = [{"text": "done"}, *([] if part is None else [part])]
    return [g_chunk(candidate(parts=parts)), g_chunk(candidate("STOP", parts=[]))], g_chunk(candidate("STOP", parts))


def test_a_gemini_image_is_no_half_answer(impl: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    """An image (or another part the mapper cannot represent) beside the text
    is part of the answer: ``UNSUPPORTED_ITEM`` at its part, never the text alone."""
    monkeypatch.setattr(_backend, "impl", impl)
    assert final(impl, GEMINI, *g_answer(None)) == ["done", "done"]
    assert final(impl, GEMINI, *g_answer({"executableCode": {"code": "1"}})) == ["done", "done"]
    path = "$.candidates[0].content.parts[1]"
    errors = refusal(impl, GEMINI, *g_answer(G_IMAGE))
    assert [error[:2] for error in errors] == [("UNSUPPORTED_ITEM", path)] * 2
    both_keys = {**G_IMAGE, "fileData": {"fileUri": "gs://b/f.png"}, "videoMetadata": {}}
    assert all('"fileData"' in error[2] for error in refusal(impl, GEMINI, *g_answer(both_keys)))


def chat_answer(**members: Any) -> tuple[list[Any], dict[str, Any]]:
    """(stream, body): the text answer "done", with ``members`` beside its
    second delta (a text delta the assembler's fast path would take)."""
    stream = [
        chat_chunk([{"index": 0, "delta": {"role": "assistant", "content": "do"}, "finish_reason": None}]),
        chat_chunk([{"index": 0, "delta": {"content": "ne", **members}, "finish_reason": None}]),
        chat_chunk([{"index": 0, "delta": {}, "finish_reason": "stop"}]),
        "[DONE]",
    ]
    message = {"role": "assistant", "content": "done", **members}
    body = edit(chat_body("stop"), lambda b: b["choices"][0].update(message=message))
    return stream, body


def test_a_chat_audio_answer_is_no_half_answer(impl: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    """Audio beside the text is part of the answer the package cannot
    represent: ``UNSUPPORTED_ITEM`` at ``audio``, never the text alone."""
    monkeypatch.setattr(_backend, "impl", impl)
    assert final(impl, CHAT, *chat_answer()) == ["done", "done"]
    assert final(impl, CHAT, *chat_answer(audio=None, annotations=[])) == ["done", "done"]
    errors = refusal(impl, CHAT, *chat_answer(audio=CHAT_AUDIO))
    assert [error[:2] for error in errors] == [
        ("UNSUPPORTED_ITEM", "$.choices[0].delta.audio"),
        ("UNSUPPORTED_ITEM", "$.choices[0].message.audio"),
    ]


def test_expected_codes_are_in_the_table() -> None:
    assert {case.expect for case in CASES} - {EXECUTABLE} <= set(ERROR_CODES)


def test_every_provider_has_both_forms() -> None:
    forms = {(case.provider, case.form) for case in CASES}
    assert forms == {(p, f) for p in (CHAT, RESP, ANTHROPIC, GEMINI) for f in ("stream", "body")}


# ------------------------------------- OpenAI Responses: computer_call safety checks

COMPUTER = [Tool(name="computer", kind="computer", parameters={"type": "object"}, side_effects=True)]
CLICK = {"type": "click", "x": 10, "y": 20, "button": "left"}
PENDING = [{"id": "cu_sc_1", "code": "malicious_instructions", "message": "We've detected instructions that may..."}]


def computer_call(status: str = "completed", **members: Any) -> dict[str, Any]:
    return {"type": "computer_call", "id": "cu_1", "call_id": "call_9", "status": status, "action": CLICK, **members}


def computer_stream(**members: Any) -> list[Any]:
    """A computer_call streamed: added (without its members), done and in the final output with ``members``."""
    events: list[Any] = [
        {"type": "response.created", "response": {"id": "resp_1", "model": "m", "status": "in_progress", "output": []}},
        {"type": "response.output_item.added", "output_index": 0, "item": computer_call("in_progress")},
        {"type": "response.output_item.done", "output_index": 0, "item": computer_call(**members)},
        {"type": "response.completed", "response": {**resp_object(), "output": [computer_call(**members)]}},
    ]
    for number, event in enumerate(events):
        event["sequence_number"] = number
    return events


def computer_outcome(impl: ModuleType, form: str, **members: Any) -> Any:
    """The decision of the computer_call (with ``members``), or the error's (code, path, message)."""
    try:
        if form == "stream":
            assembler = impl.StreamAssembler(RESP)
            for event in computer_stream(**members):
                assembler.feed(frame(RESP, event))
            response = assembler.finish()
        else:
            body = {**resp_object(), "output": [computer_call(**members)]}
            response = impl.normalize(json.dumps(body), provider=RESP)
        return decide(response, tools=COMPUTER)
    except OutputError as error:
        return error.code, error.path, error.message


@pytest.mark.parametrize("form", ["stream", "body"])
def test_a_computer_call_with_pending_safety_checks_never_runs(
    impl: ModuleType, form: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """OpenAI's safety checks on a computer_call (``pending_safety_checks``:
    malicious instructions, an irrelevant or sensitive domain) ask the host to
    have a person confirm the action and to acknowledge each check in the next
    request. The call was made executable with the action alone, the checks
    dropped; it is now ``UNSUPPORTED_ITEM`` at the checks, on both backends.
    No checks (absent, null, empty) change nothing."""
    monkeypatch.setattr(_backend, "impl", impl)
    for members in ({}, {"pending_safety_checks": None}, {"pending_safety_checks": []}):
        decision = computer_outcome(impl, form, **members)
        assert isinstance(decision, ToolDecision), decision
        assert [(c.name, c.arguments) for c in decision.calls] == [("computer", CLICK)]
    code, path, message = computer_outcome(impl, form, pending_safety_checks=PENDING)
    at = "$.item" if form == "stream" else "$.output[0]"
    assert (code, path) == ("UNSUPPORTED_ITEM", f"{at}.pending_safety_checks")
    assert "computer_call cu_1 has pending safety checks" in message
    assert computer_outcome(impl, form, pending_safety_checks={"id": "x"})[:2] == (
        "MALFORMED_EVENT",
        f"{at}.pending_safety_checks",
    )


def test_pending_safety_checks_only_in_the_final_output_still_refuse(impl: ModuleType) -> None:
    """The checks may be on the done item or only on the terminal's output: either refuses."""
    events = computer_stream()
    events[-1]["response"]["output"] = [computer_call(pending_safety_checks=PENDING)]
    assembler = impl.StreamAssembler(RESP)
    with pytest.raises(OutputError) as caught:
        for event in events:
            assembler.feed(frame(RESP, event))
    assert (caught.value.code, caught.value.path) == ("UNSUPPORTED_ITEM", "$.response.output[0].pending_safety_checks")


# ------------------------------------- OpenAI Responses: the SSE event's name


def named(events: list[Any], names: list[str | None]) -> list[bytes]:
    """Each event framed with its ``event:`` line (none where the name is None)."""
    frames = []
    for event, name in zip(events, names):
        head = "" if name is None else f"event: {name}\n"
        frames.append(f"{head}data: {json.dumps(event)}\n\n".encode())
    return frames


@pytest.mark.parametrize(
    ("last", "expect"),
    [
        ("response.completed", EXECUTABLE),
        ("message", EXECUTABLE),
        (None, EXECUTABLE),
        ("response.failed", "MALFORMED_EVENT"),
        ("error", "MALFORMED_EVENT"),
        ("response.incomplete", "MALFORMED_EVENT"),
    ],
)
def test_a_responses_event_named_for_another_type_is_refused(
    impl: ModuleType, last: str | None, expect: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """OpenAI names each Responses SSE event by its type (``event:
    response.failed`` over ``{"type": "response.failed", ...}``). A
    ``response.completed`` framed as ``response.failed`` or ``error`` says two
    things: the name was ignored, so it was executable; it is now
    ``MALFORMED_EVENT`` at ``$.type``, as an Anthropic event's is."""
    monkeypatch.setattr(_backend, "impl", impl)
    events = resp_stream()
    names: list[str | None] = [event["type"] for event in events[:-1]] + [last]
    assembler = impl.StreamAssembler(RESP)
    try:
        for chunk in named(events, names):
            assembler.feed(chunk)
        result: Any = decide(assembler.finish(), tools=TOOLS)
    except OutputError as error:
        result = error
    if expect == EXECUTABLE:
        assert isinstance(result, ToolDecision), result
        return
    assert (result.code, result.path) == (expect, "$.type")
    assert result.message == f"responses SSE event {last} carries data of type response.completed"


def test_a_responses_delta_named_for_another_delta_is_refused(impl: ModuleType) -> None:
    events = resp_stream()
    names: list[str | None] = [event["type"] for event in events]
    names[2] = "response.output_text.delta"  # over a function_call_arguments.delta
    assembler = impl.StreamAssembler(RESP)
    with pytest.raises(OutputError) as caught:
        for chunk in named(events, names):
            assembler.feed(chunk)
    assert (caught.value.code, caught.value.path) == ("MALFORMED_EVENT", "$.type")


# ------------------------------------- OpenAI Responses: a failure before response.created

SERVER_ERROR = {"type": "server_error", "code": "server_error", "message": "The model failed"}


@pytest.mark.parametrize(
    "first",
    [
        {"type": "error", "error": SERVER_ERROR},
        {"type": "error", "code": "rate_limit_exceeded", "message": "Rate limited"},
        {"type": "response.failed", "response": resp_object("failed", error=SERVER_ERROR)},
        {"type": "response.in_progress", "response": {"id": "resp_1", "status": "failed", "error": SERVER_ERROR}},
    ],
    ids=["error event", "flat error event", "response.failed", "a head that says failed"],
)
def test_a_responses_failure_before_the_start_is_the_providers_error(impl: ModuleType, first: dict[str, Any]) -> None:
    """A Responses stream whose first event is the provider's failure (an
    ``error`` event sent before ``response.created``) was refused as
    ``EVENT_BEFORE_START``, a stream fault nobody retries; it is the
    provider's error (``PROVIDER_ERROR``, retryable as its code says), as a
    failure before the start is for Chat, Anthropic and Gemini."""
    for follow in ([], [{"type": "response.failed", "response": resp_object("failed", error=SERVER_ERROR)}]):
        events = [first, *follow] if first["type"] == "error" else [first]
        assembler = impl.StreamAssembler(RESP)
        with pytest.raises(OutputError) as caught:
            for number, event in enumerate(events):
                assembler.feed(frame(RESP, {**event, "sequence_number": number}))
            assembler.finish()
        assert (caught.value.code, caught.value.retryable, caught.value.layer) == ("PROVIDER_ERROR", True, "transport")


# ------------------------------------- Gemini: a part with no member


@pytest.mark.parametrize("empty", [{}, {"text": None}, {"text": None, "thoughtSignature": None}])
@pytest.mark.parametrize("beside", ["text", "call"])
def test_a_gemini_part_with_no_member_is_no_half_answer(
    impl: ModuleType, empty: dict[str, Any], beside: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A part is one of its kinds (text, a function call, inline data...); one
    with no member, or only null ones, says nothing of what it carried. The
    google-genai SDK drops the fields it does not know, so a part of a kind
    newer than the SDK (an image, a call of another sort) reaches the package
    as ``{}``: the text or call beside it was decided as the whole answer. It
    is now ``UNSUPPORTED_ITEM`` at the part, as the part with its unknown key is."""
    monkeypatch.setattr(_backend, "impl", impl)
    first = {"text": "Here is the chart:"} if beside == "text" else G_CALL
    stream = [g_chunk(candidate(parts=[first, empty])), g_chunk(candidate("STOP", parts=[]))]
    body = g_chunk(candidate("STOP", parts=[first, empty]))
    path = "$.candidates[0].content.parts[1]"
    errors = refusal(impl, GEMINI, stream, body)
    assert [error[:2] for error in errors] == [("UNSUPPORTED_ITEM", path)] * 2
    assert all("gemini part has no member" in error[2] for error in errors)
    control = [g_chunk(candidate(parts=[first])), g_chunk(candidate("STOP", parts=[]))]
    outcome = run(impl, Case("control", GEMINI, "stream", control, EXECUTABLE))
    assert not isinstance(outcome, str), outcome


# ------------------------------------- Anthropic: a provider-run block never stopped


@pytest.mark.parametrize(
    "block",
    [
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
        {"type": "mcp_tool_use", "id": "mcptoolu_1", "name": "n", "server_name": "s", "input": {}},
    ],
    ids=lambda block: block["type"],
)
def test_an_anthropic_block_never_stopped_is_not_ended(
    impl: ModuleType, block: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A block of a tool Anthropic runs, started and never stopped before
    ``message_stop`` (its ``content_block_stop`` lost), was accepted beside the
    call, where an open text, thinking or tool_use block is ``ITEM_NOT_ENDED``;
    it is ``ITEM_NOT_ENDED`` too (retryable: an event was lost)."""
    monkeypatch.setattr(_backend, "impl", impl)
    start = {"type": "content_block_start", "index": 1, "content_block": block}
    stopped = [*anthropic_stream()[:4], start, {"type": "content_block_stop", "index": 1}, *anthropic_stream()[4:]]
    assert isinstance(run(impl, Case("stopped", ANTHROPIC, "stream", stopped, EXECUTABLE)), ToolDecision)
    open_block = [*anthropic_stream()[:4], start, *anthropic_stream()[4:]]
    assembler = impl.StreamAssembler(ANTHROPIC)
    with pytest.raises(OutputError) as caught:
        for event in open_block:
            assembler.feed(frame(ANTHROPIC, event))
        assembler.finish()
    assert (caught.value.code, caught.value.retryable) == ("ITEM_NOT_ENDED", True)
    assert caught.value.message == "anthropic content block 1 was never stopped before message_stop"


_IMAGE_RECORDINGS = [
    (f"{vendor}/src/{where}__fixtures__/{vendor}-image-generation-tool.1.{kind}", at)
    for vendor, where, at in (
        ("openai", "responses/", "$.output[1]"),
        ("azure", "", "$.output[0]"),
        ("xai", "responses/", "$.output[0]"),
    )
    for kind in ("json", "chunks.txt")
]


@pytest.mark.parametrize(
    ("path", "at"), _IMAGE_RECORDINGS, ids=[p.split("/")[0] + p[-5:] for p, _ in _IMAGE_RECORDINGS]
)
def test_a_generated_image_is_no_half_answer(impl: ModuleType, path: str, at: str) -> None:
    """A Responses ``image_generation_call`` holds the image the answer is
    made of (its ``result``): as with a Gemini image part or a message's
    ``output_audio`` part, the text beside it alone was the final answer.
    Recorded from OpenAI, Azure and xAI: ``UNSUPPORTED_ITEM`` at the item,
    body and stream."""
    source = FIXTURES / "vercel-ai" / "packages" / path
    with pytest.raises(OutputError) as info:
        if path.endswith(".json"):
            impl.normalize(source.read_bytes(), provider="openai-responses")
        else:
            assembler = impl.StreamAssembler("openai-responses")
            for line in source.read_text().splitlines():
                if line.strip():
                    assembler.feed_event(line)
            assembler.finish()
    assert (info.value.code, info.value.path) == ("UNSUPPORTED_ITEM", at if path.endswith(".json") else "$.item")
    assert 'output item of type "image_generation_call"' in info.value.message
