"""The OpenAI Responses mapper's decisions written out on both backends (the
mutation run sees the pure backend alone): what a body and a stream of each
item kind give, which finish wins, and every error with its message and path."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from mapper_outcomes import body, stream

P = "openai-responses"
SHAPE = "openai-responses {} does not have the documented shape"


def ev(kind: str, **fields: Any) -> dict[str, Any]:
    """A ``response.*`` event of ``kind``."""
    return {"type": kind, **fields}


def created(**response: Any) -> dict[str, Any]:
    return ev("response.created", response={"id": "resp_1", "model": "gpt-5", "status": "in_progress", **response})


def terminal(output: list[dict[str, Any]], kind: str = "response.completed", **response: Any) -> dict[str, Any]:
    """The terminal event whose ``response`` lists ``output``."""
    fields = {"id": "resp_1", "model": "gpt-5", "status": "completed", "output": output, **response}
    return ev(kind, response=fields)


def fc(
    item_id: str = "fc_1", call_id: str = "call_1", name: str = "f", arguments: str = '{"a":1}', **more: Any
) -> dict[str, Any]:
    """A ``function_call`` item."""
    return {"type": "function_call", "id": item_id, "call_id": call_id, "name": name, "arguments": arguments, **more}


def custom(
    item_id: str = "ct_1", call_id: str = "call_1", name: str = "g", text: str = "x y", **more: Any
) -> dict[str, Any]:
    """A ``custom_tool_call`` item."""
    return {"type": "custom_tool_call", "id": item_id, "call_id": call_id, "name": name, "input": text, **more}


def patch(item_id: str = "ap_1", call_id: str = "call_1", diff: str = "+a\n", **more: Any) -> dict[str, Any]:
    """An ``apply_patch_call`` item."""
    operation = {"type": "update_file", "path": "a.txt", "diff": diff}
    return {"type": "apply_patch_call", "id": item_id, "call_id": call_id, "operation": operation, **more}


def msg(item_id: str = "msg_1", *parts: tuple[str, str], **more: Any) -> dict[str, Any]:
    """A ``message`` item of ``(type, text)`` parts (a refusal part's text is its ``refusal``)."""
    content = [{"type": k, ("refusal" if k == "refusal" else "text"): t} for k, t in parts]
    return {"type": "message", "id": item_id, "role": "assistant", "content": content, **more}


def reasoning(item_id: str = "rs_1", *summary: str, **more: Any) -> dict[str, Any]:
    """A ``reasoning`` item of ``summary`` texts."""
    return {
        "type": "reasoning",
        "id": item_id,
        "summary": [{"type": "summary_text", "text": s} for s in summary],
        **more,
    }


def resp(output: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    """A whole ``response`` body listing ``output``."""
    return {"object": "response", **terminal(output, **fields)["response"]}


def added(item: dict[str, Any]) -> dict[str, Any]:
    return ev("response.output_item.added", item=item)


def done(item: dict[str, Any]) -> dict[str, Any]:
    return ev("response.output_item.done", item=item)


def outcome(
    found: dict[str, Any] | None = None, finish: tuple[str, str] = ("stop", "completed"), **more: Any
) -> dict[str, Any]:
    """A response written out as ``mapper_outcomes.brief`` does, ``resp_1`` of ``gpt-5``."""
    return {
        "id": "resp_1",
        "model": "gpt-5",
        "finish": finish,
        "items": [],
        "usage": None,
        "unknown": {},
        **(found or {}),
        **more,
    }


H = created()
TEXT_DELTA = "response.output_text.delta"
ARGS_DELTA = "response.function_call_arguments.delta"
INPUT_DELTA = "response.custom_tool_call_input.delta"
INPUT_DONE = "response.custom_tool_call_input.done"
DIFF_DELTA = "response.apply_patch_call_operation_diff.delta"
DIFF_DONE = "response.apply_patch_call_operation_diff.done"
PART_ADDED = "response.content_part.added"
PART_DONE = "response.content_part.done"


def text_part(
    item_id: str = "msg_1", index: int = 0, text: str = "", kind: str = "output_text", event: str = PART_ADDED
) -> dict[str, Any]:
    """A content part event of ``kind`` for part ``index`` of ``item_id``."""
    part = {"type": kind, ("refusal" if kind == "refusal" else "text"): text}
    return ev(event, item_id=item_id, content_index=index, part=part)


def message_stream(*parts: tuple[str, str], item_id: str = "msg_1") -> list[dict[str, Any]]:
    """A message streamed part by part (each part's text in one delta), done, and completed."""
    out = [H, added(msg(item_id))]
    for index, (kind, text) in enumerate(parts):
        delta = TEXT_DELTA if kind == "output_text" else "response.refusal.delta"
        out += [
            text_part(item_id, index, kind=kind),
            ev(delta, item_id=item_id, content_index=index, delta=text),
            text_part(item_id, index, text, kind, PART_DONE),
        ]
    item = msg(item_id, *parts, status="completed")
    return [*out, done(item), terminal([item])]


def call_stream(
    item: dict[str, Any],
    delta: str,
    deltas: list[str],
    done_event: dict[str, Any] | None = None,
    final: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """A call ``item`` added with nothing, its text streamed by ``delta`` events, the optional
    ``.done`` event, then the item done and completed as ``final`` (else ``item``)."""
    start = (
        dict(item, arguments="")
        if item["type"] == "function_call"
        else dict(item, input="")
        if item["type"] == "custom_tool_call"
        else item
    )
    out = [H, added(start)]
    out += [ev(delta, item_id=item["id"], delta=d) for d in deltas]
    if done_event is not None:
        out.append(done_event)
    final = final or item
    return [*out, done(final), terminal([final])]


CT = custom(text="x y")
AP = patch(diff="+a\n")
RS = reasoning("rs_1", "a", "b", encrypted_content="sig")

#: streams, each with what it must give
STREAMS = [
    # ---- the envelope of an event
    pytest.param(
        [[1]],
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response event does not have the documented shape",
            "$",
            None,
            False,
        ),
        id="event-not-an-object",
    ),
    pytest.param(
        [{"sequence_number": 1}],
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response event does not have the documented shape",
            "$.type",
            None,
            False,
        ),
        id="event-without-type",
    ),
    pytest.param(
        [dict(H, sequence_number="1")],
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response event does not have the documented shape",
            "$.sequence_number",
            None,
            False,
        ),
        id="sequence-not-a-count",
    ),
    pytest.param(
        [dict(H, sequence_number=2), ev("response.foo", sequence_number=1)],
        ("stream", "SEQUENCE_NOT_MONOTONIC", "sequence_number 1 after 2 (response.foo)", None, None, False),
        id="sequence-backwards",
    ),
    pytest.param(
        [dict(H, sequence_number=2), ev("response.foo", sequence_number=2)],
        ("stream", "SEQUENCE_NOT_MONOTONIC", "sequence_number 2 after 2 (response.foo)", None, None, False),
        id="sequence-repeated",
    ),
    pytest.param(
        [dict(H, sequence_number=2), ev("response.foo"), dict(terminal([]), sequence_number=3)],
        {
            "finish": ("stop", "completed"),
            "id": "resp_1",
            "items": [],
            "model": "gpt-5",
            "unknown": {"response.foo": 1},
            "usage": None,
        },
        id="sequence-gaps-and-unnumbered",
    ),
    pytest.param(
        [H, ev("response.foo"), ev("response.foo"), terminal([])],
        {
            "finish": ("stop", "completed"),
            "id": "resp_1",
            "items": [],
            "model": "gpt-5",
            "unknown": {"response.foo": 2},
            "usage": None,
        },
        id="unknown-events-counted",
    ),
    pytest.param(
        [H, terminal([]), ev("response.foo")],
        ("stream", "EVENT_AFTER_TERMINAL", "response.foo after the response ended", None, None, False),
        id="event-after-completed",
    ),
    pytest.param(
        [H, terminal([]), terminal([], "response.failed")],
        ("stream", "EVENT_AFTER_TERMINAL", "response.failed after the response ended", None, None, False),
        id="failed-after-completed",
    ),
    pytest.param(
        [H],
        ("stream", "NO_TERMINAL_EVENT", "the stream ended without a terminal event", None, None, True),
        id="no-terminal",
    ),
    # ---- error events
    pytest.param(
        [H, ev("error", code="server_error", message="boom")],
        ("transport", "PROVIDER_ERROR", "server_error: boom", None, None, True),
        id="error-fields-at-top",
    ),
    pytest.param(
        [H, ev("error", error={"code": "rate_limit_exceeded", "message": "slow", "type": "tokens"})],
        ("transport", "PROVIDER_ERROR", "rate_limit_exceeded: slow", None, None, True),
        id="error-object",
    ),
    pytest.param(
        [H, ev("error", code=1.5)],
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses error does not have the documented shape",
            "$.code",
            None,
            False,
        ),
        id="error-code-of-another-type",
    ),
    pytest.param(
        [H, ev("error", error={"code": [1]})],
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses error does not have the documented shape",
            "$.error.code",
            None,
            False,
        ),
        id="error-object-code-of-another-type",
    ),
    pytest.param(
        [H, ev("error", error=3)],
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses error does not have the documented shape",
            "$.error",
            None,
            False,
        ),
        id="error-not-an-object",
    ),
    pytest.param(
        [H, ev("error", code="x"), terminal([], "response.failed")],
        ("transport", "PROVIDER_ERROR", "x", None, None, False),
        id="error-then-failed",
    ),
    pytest.param(
        [H, ev("error", code="x"), terminal([], "response.failed"), terminal([], "response.failed")],
        ("stream", "EVENT_AFTER_TERMINAL", "response.failed after the response ended", None, None, False),
        id="error-then-failed-twice",
    ),
    pytest.param(
        [H, ev("error", code="x"), terminal([])],
        ("stream", "EVENT_AFTER_TERMINAL", "response.completed after the response ended", None, None, False),
        id="error-then-completed",
    ),
    pytest.param(
        [H, terminal([], "response.failed", error={"code": "server_error", "message": "m"})],
        ("transport", "PROVIDER_ERROR", "server_error: m", None, None, True),
        id="failed-with-error",
    ),
    pytest.param(
        [H, terminal([], "response.failed", status="completed")],
        ("transport", "PROVIDER_ERROR", "failed", None, None, False),
        id="failed-whatever-its-status",
    ),
    pytest.param(
        [H, terminal([], status="failed")],
        ("transport", "PROVIDER_ERROR", "failed", None, None, False),
        id="completed-with-failed-status",
    ),
    pytest.param(
        [H, terminal([], status="error")],
        ("transport", "PROVIDER_ERROR", "failed", None, None, False),
        id="completed-with-error-status",
    ),
    pytest.param(
        [H, terminal([], error={"code": "server_error"})],
        ("transport", "PROVIDER_ERROR", "server_error", None, None, True),
        id="completed-with-an-error",
    ),
    # ---- the head
    pytest.param(
        [created(id="resp_9", model="o3"), terminal([])],
        {"finish": ("stop", "completed"), "id": "resp_9", "items": [], "model": "o3", "unknown": {}, "usage": None},
        id="head-names-the-response",
    ),
    pytest.param(
        [ev("response.created"), terminal([])],
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response.created does not have the documented shape",
            "$.response",
            None,
            False,
        ),
        id="head-without-response",
    ),
    pytest.param(
        [created(status=1)],
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response.created does not have the documented shape",
            "$.response.status",
            None,
            False,
        ),
        id="head-status-of-another-type",
    ),
    pytest.param(
        [created(status="failed"), terminal([], "response.failed")],
        ("transport", "PROVIDER_ERROR", "failed", None, None, False),
        id="head-failed-then-failed",
    ),
    pytest.param(
        [created(status="error"), ev("response.foo")],
        ("stream", "EVENT_AFTER_TERMINAL", "response.foo after the response ended", None, None, False),
        id="head-error-status-then-more",
    ),
    pytest.param(
        [created(error={"code": "server_error", "message": "m"})],
        ("transport", "PROVIDER_ERROR", "server_error: m", None, None, True),
        id="head-error",
    ),
    pytest.param(
        [created(status="cancelled")],
        {
            "finish": ("cancelled", "cancelled"),
            "id": "resp_1",
            "items": [],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="head-cancelled",
    ),
    pytest.param(
        [created(status="incomplete", incomplete_details={"reason": "max_output_tokens"})],
        {
            "finish": ("length", "max_output_tokens"),
            "id": "resp_1",
            "items": [],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="head-incomplete",
    ),
    pytest.param(
        [created(incomplete_details={"reason": "content_filter"})],
        {
            "finish": ("content_filter", "content_filter"),
            "id": "resp_1",
            "items": [],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="head-incomplete-details",
    ),
    pytest.param(
        [created(status="cancelled"), terminal([])],
        ("stream", "EVENT_AFTER_TERMINAL", "response.completed after the response ended", None, None, False),
        id="head-cancelled-then-completed",
    ),
    pytest.param(
        [H, ev("response.in_progress", response={"status": "failed"})],
        ("transport", "PROVIDER_ERROR", "failed", None, None, False),
        id="in-progress-failed",
    ),
    pytest.param(
        [H, ev("response.queued", response={"status": "cancelled"})],
        {
            "finish": ("cancelled", "cancelled"),
            "id": "resp_1",
            "items": [],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="queued-cancelled",
    ),
    pytest.param(
        [H, ev("response.in_progress", response={"status": "queued"}), terminal([])],
        {"finish": ("stop", "completed"), "id": "resp_1", "items": [], "model": "gpt-5", "unknown": {}, "usage": None},
        id="in-progress-changes-nothing",
    ),
    pytest.param(
        [H, ev("response.in_progress", response={"id": "resp_2"}), terminal([])],
        {"finish": ("stop", "completed"), "id": "resp_1", "items": [], "model": "gpt-5", "unknown": {}, "usage": None},
        id="in-progress-names-nothing",
    ),
    pytest.param(
        [H, ev("response.in_progress")],
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response.in_progress does not have the documented shape",
            "$.response",
            None,
            False,
        ),
        id="in-progress-without-response",
    ),
    # ---- output items added
    pytest.param(
        [H, ev("response.output_item.added", output_index="0", item=fc())],
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response.output_item.added does not have the documented shape",
            "$.output_index",
            None,
            False,
        ),
        id="added-index-of-another-type",
    ),
    pytest.param(
        [H, ev("response.output_item.added")],
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response.output_item.added does not have the documented shape",
            "$.item",
            None,
            False,
        ),
        id="added-without-item",
    ),
    pytest.param(
        [
            H,
            added({"type": "web_search_call", "id": "ws_1"}),
            done({"type": "web_search_call", "id": "ws_1"}),
            terminal([{"type": "web_search_call", "id": "ws_1"}]),
        ],
        {
            "finish": ("stop", "completed"),
            "id": "resp_1",
            "items": [],
            "model": "gpt-5",
            "unknown": {"output_item:web_search_call": 1},
            "usage": None,
        },
        id="builtin-item-counted",
    ),
    pytest.param(
        [H, added(fc()), added(fc())],
        ("stream", "DUPLICATE_ITEM_ID", "output item fc_1 was added twice", None, None, False),
        id="item-added-twice",
    ),
    pytest.param(
        [H, added(msg()), added(fc("msg_1"))],
        ("stream", "DUPLICATE_ITEM_ID", "output item msg_1 was added twice", None, None, False),
        id="item-id-reused-by-another-type",
    ),
    pytest.param(
        [H, added(fc(arguments='{"a":')), ev(ARGS_DELTA, item_id="fc_1", delta="1}"), done(fc()), terminal([fc()])],
        {
            "finish": ("tool_calls", "completed"),
            "id": "resp_1",
            "items": [("call", "fc_1", "call_1", "f", '{"a":1}', True, False, "function")],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="call-arguments-begin-in-added",
    ),
    pytest.param(
        [H, added(patch()), done(patch()), terminal([patch()])],
        {
            "finish": ("tool_calls", "completed"),
            "id": "resp_1",
            "items": [
                (
                    "call",
                    "ap_1",
                    "call_1",
                    "apply_patch",
                    '{"diff":"+a\\n","path":"a.txt","type":"update_file"}',
                    True,
                    False,
                    "apply_patch",
                )
            ],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="client-call-object-read-when-done",
    ),
    pytest.param(
        [H, added(patch(diff="placeholder")), done(patch()), terminal([patch()])],
        {
            "finish": ("tool_calls", "completed"),
            "id": "resp_1",
            "items": [
                (
                    "call",
                    "ap_1",
                    "call_1",
                    "apply_patch",
                    '{"diff":"+a\\n","path":"a.txt","type":"update_file"}',
                    True,
                    False,
                    "apply_patch",
                )
            ],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="client-call-placeholder-not-read",
    ),
    pytest.param(
        [
            H,
            added(fc("fc_1", "call_1")),
            added(fc("fc_2", "call_2", "h")),
            done(fc("fc_1", "call_1")),
            done(fc("fc_2", "call_2", "h")),
            terminal([fc("fc_1", "call_1"), fc("fc_2", "call_2", "h")]),
        ],
        {
            "finish": ("tool_calls", "completed"),
            "id": "resp_1",
            "items": [
                ("call", "fc_1", "call_1", "f", '{"a":1}', True, False, "function"),
                ("call", "fc_2", "call_2", "h", '{"a":1}', True, False, "function"),
            ],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="two-calls",
    ),
    # ---- function call arguments
    pytest.param(
        call_stream(
            fc(),
            ARGS_DELTA,
            ['{"a"', ":1}"],
            ev("response.function_call_arguments.done", item_id="fc_1", arguments='{"a":1}'),
        ),
        {
            "finish": ("tool_calls", "completed"),
            "id": "resp_1",
            "items": [("call", "fc_1", "call_1", "f", '{"a":1}', True, False, "function")],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="arguments-streamed",
    ),
    pytest.param(
        call_stream(
            fc(), ARGS_DELTA, [], ev("response.function_call_arguments.done", item_id="fc_1", arguments='{"a":1}')
        ),
        {
            "finish": ("tool_calls", "completed"),
            "id": "resp_1",
            "items": [("call", "fc_1", "call_1", "f", '{"a":1}', True, False, "function")],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="arguments-only-in-done",
    ),
    pytest.param(
        call_stream(
            fc(), ARGS_DELTA, ['{"a"'], ev("response.function_call_arguments.done", item_id="fc_1", arguments='{"a":1}')
        ),
        (
            "stream",
            "OUTPUT_MISMATCH",
            "response.function_call_arguments.done: the streamed arguments of fc_1 differs from the final value",
            None,
            None,
            False,
        ),
        id="arguments-done-disagrees",
    ),
    pytest.param(
        call_stream(fc(), ARGS_DELTA, ['{"a":2}']),
        (
            "stream",
            "OUTPUT_MISMATCH",
            "response.output_item.done: the streamed arguments of fc_1 differs from the final value",
            None,
            None,
            False,
        ),
        id="arguments-item-done-disagrees",
    ),
    pytest.param(
        [H, added(CT), ev(ARGS_DELTA, item_id="ct_1", delta="x")],
        (
            "stream",
            "UNKNOWN_ITEM",
            "response.function_call_arguments.delta for item ct_1, which is a custom_tool_call",
            None,
            None,
            False,
        ),
        id="arguments-delta-to-a-custom-call",
    ),
    pytest.param(
        [H, added(CT), ev("response.function_call_arguments.done", item_id="ct_1", arguments="x")],
        (
            "stream",
            "UNKNOWN_ITEM",
            "response.function_call_arguments.done for item ct_1, which is a custom_tool_call",
            None,
            None,
            False,
        ),
        id="arguments-done-to-a-custom-call",
    ),
    pytest.param(
        [H, ev(ARGS_DELTA, item_id="fc_9", delta="x")],
        (
            "stream",
            "DELTA_BEFORE_START",
            "response.function_call_arguments.delta for item fc_9, which was never added",
            None,
            None,
            False,
        ),
        id="arguments-delta-to-no-item",
    ),
    pytest.param(
        [H, added(fc(arguments="")), ev(ARGS_DELTA, item_id="fc_1")],
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response.function_call_arguments.delta does not have the documented shape",
            "$.delta",
            None,
            False,
        ),
        id="arguments-delta-without-delta",
    ),
    pytest.param(
        [H, added(fc(arguments="")), ev(ARGS_DELTA, item_id="fc_1", delta="{}", output_index=-1)],
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response.function_call_arguments.delta does not have the documented shape",
            "$.output_index",
            None,
            False,
        ),
        id="arguments-delta-index-negative",
    ),
    pytest.param(
        [H, added(fc(arguments="")), ev(ARGS_DELTA, item_id="fc_1", delta="{}", text=1)],
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response.function_call_arguments.delta does not have the documented shape",
            "$.text",
            None,
            False,
        ),
        id="arguments-delta-other-field-of-another-type",
    ),
    pytest.param(
        [H, added(fc(arguments="")), ev(ARGS_DELTA, delta="{}")],
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response.function_call_arguments.delta does not have the documented shape",
            "$.item_id",
            None,
            False,
        ),
        id="arguments-delta-without-item-id",
    ),
    pytest.param(
        [H, added(fc()), done(fc()), ev(ARGS_DELTA, item_id="fc_1", delta="x")],
        ("stream", "DELTA_AFTER_END", "a delta for fc_1 after it ended", None, None, False),
        id="arguments-delta-after-done",
    ),
    pytest.param(
        [H, added(fc()), done(fc(call_id="call_2")), terminal([fc()])],
        (
            "stream",
            "OUTPUT_MISMATCH",
            "response.output_item.done: the call_id or name of fc_1 changed",
            None,
            None,
            False,
        ),
        id="call-id-changed",
    ),
    pytest.param(
        [H, added(fc()), done(fc(name="h")), terminal([fc()])],
        (
            "stream",
            "OUTPUT_MISMATCH",
            "response.output_item.done: the call_id or name of fc_1 changed",
            None,
            None,
            False,
        ),
        id="call-name-changed",
    ),
    pytest.param(
        [H, added(fc()), done(fc()), terminal([fc(call_id="call_2")])],
        ("stream", "OUTPUT_MISMATCH", "response.completed: the call_id or name of fc_1 changed", None, None, False),
        id="call-id-changed-in-output",
    ),
    pytest.param(
        [H, added(fc()), done(fc(status="in_progress")), terminal([fc()])],
        (
            "stream",
            "ITEM_NOT_ENDED",
            "the response completed, but output item fc_1 was not completed",
            None,
            None,
            True,
        ),
        id="call-done-unfinished",
    ),
    pytest.param(
        [H, added(fc()), done(fc()), terminal([fc(status="incomplete")])],
        (
            "stream",
            "ITEM_NOT_ENDED",
            "the response completed, but output item fc_1 was not completed",
            None,
            None,
            True,
        ),
        id="call-unfinished-in-output",
    ),
    pytest.param(
        [
            H,
            added(fc()),
            done(fc(status="in_progress")),
            terminal(
                [fc()], "response.incomplete", status="incomplete", incomplete_details={"reason": "max_output_tokens"}
            ),
        ],
        {
            "finish": ("length", "max_output_tokens"),
            "id": "resp_1",
            "items": [("call", "fc_1", "call_1", "f", '{"a":1}', False, False, "function")],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="call-unfinished-in-an-incomplete-response",
    ),
    pytest.param(
        [H, added(fc()), terminal([fc()])],
        ("stream", "ITEM_NOT_ENDED", 'item "fc_1" was never ended', None, None, True),
        id="call-never-done",
    ),
    # ---- custom tool calls
    pytest.param(
        call_stream(CT, INPUT_DELTA, ["x ", "y"], ev(INPUT_DONE, item_id="ct_1", input="x y")),
        {
            "finish": ("tool_calls", "completed"),
            "id": "resp_1",
            "items": [("call", "ct_1", "call_1", "g", "x y", True, False, "custom")],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="custom-streamed",
    ),
    pytest.param(
        call_stream(CT, INPUT_DELTA, [], ev(INPUT_DONE, item_id="ct_1", input="x y")),
        {
            "finish": ("tool_calls", "completed"),
            "id": "resp_1",
            "items": [("call", "ct_1", "call_1", "g", "x y", True, False, "custom")],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="custom-only-in-done",
    ),
    pytest.param(
        call_stream(CT, INPUT_DELTA, ["x ", "y"], ev(INPUT_DONE, item_id="ct_1", input="x z")),
        (
            "stream",
            "OUTPUT_MISMATCH",
            "response.custom_tool_call_input.done: the streamed arguments of ct_1 differs from the final value",
            None,
            None,
            False,
        ),
        id="custom-done-disagrees",
    ),
    pytest.param(
        [H, added(fc(arguments="")), ev(INPUT_DELTA, item_id="fc_1", delta="x")],
        (
            "stream",
            "UNKNOWN_ITEM",
            "response.custom_tool_call_input.delta for item fc_1, which is a function_call",
            None,
            None,
            False,
        ),
        id="input-delta-to-a-function-call",
    ),
    pytest.param(
        [H, added(fc(arguments="")), ev(INPUT_DONE, item_id="fc_1", input="x")],
        (
            "stream",
            "UNKNOWN_ITEM",
            "response.custom_tool_call_input.done for item fc_1, which is a function_call",
            None,
            None,
            False,
        ),
        id="input-done-to-a-function-call",
    ),
    pytest.param(
        [H, ev(INPUT_DELTA, item_id="ct_9", delta="x")],
        (
            "stream",
            "DELTA_BEFORE_START",
            "response.custom_tool_call_input.delta for item ct_9, which was never added",
            None,
            None,
            False,
        ),
        id="input-delta-to-no-item",
    ),
    pytest.param(
        [H, ev(INPUT_DONE, item_id="ct_9", input="x")],
        (
            "stream",
            "DELTA_BEFORE_START",
            "response.custom_tool_call_input.done for item ct_9, which was never added",
            None,
            None,
            False,
        ),
        id="input-done-to-no-item",
    ),
    pytest.param(
        [H, added(CT), ev(INPUT_DELTA, item_id="ct_1")],
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response.custom_tool_call_input.delta does not have the documented shape",
            "$.delta",
            None,
            False,
        ),
        id="input-delta-without-delta",
    ),
    pytest.param(
        [H, added(CT), ev(INPUT_DONE, item_id="ct_1", delta="x")],
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response.custom_tool_call_input.done does not have the documented shape",
            "$.input",
            None,
            False,
        ),
        id="input-done-without-input",
    ),
    # ---- apply_patch diffs
    pytest.param(
        call_stream(AP, DIFF_DELTA, ["+a", "\n"], ev(DIFF_DONE, item_id="ap_1", diff="+a\n")),
        {
            "finish": ("tool_calls", "completed"),
            "id": "resp_1",
            "items": [
                (
                    "call",
                    "ap_1",
                    "call_1",
                    "apply_patch",
                    '{"diff":"+a\\n","path":"a.txt","type":"update_file"}',
                    True,
                    False,
                    "apply_patch",
                )
            ],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="diff-streamed",
    ),
    pytest.param(
        call_stream(AP, DIFF_DELTA, ["+a", "\n"]),
        {
            "finish": ("tool_calls", "completed"),
            "id": "resp_1",
            "items": [
                (
                    "call",
                    "ap_1",
                    "call_1",
                    "apply_patch",
                    '{"diff":"+a\\n","path":"a.txt","type":"update_file"}',
                    True,
                    False,
                    "apply_patch",
                )
            ],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="diff-streamed-without-done",
    ),
    pytest.param(
        call_stream(AP, DIFF_DELTA, ["+a"], ev(DIFF_DONE, item_id="ap_1", diff="+a\n")),
        (
            "stream",
            "OUTPUT_MISMATCH",
            "response.apply_patch_call_operation_diff.done: the streamed diff of ap_1 differs from the final value",
            None,
            None,
            False,
        ),
        id="diff-done-disagrees",
    ),
    pytest.param(
        call_stream(AP, DIFF_DELTA, ["+b\n"]),
        (
            "stream",
            "OUTPUT_MISMATCH",
            "response.output_item.done: the streamed diff of ap_1 differs from the final value",
            None,
            None,
            False,
        ),
        id="diff-operation-disagrees",
    ),
    pytest.param(
        call_stream(AP, DIFF_DELTA, ["+a\n"], final=patch(operation={"type": "delete_file", "path": "a.txt"})),
        (
            "stream",
            "OUTPUT_MISMATCH",
            "response.output_item.done: the streamed diff of ap_1 differs from the final value",
            None,
            None,
            False,
        ),
        id="diff-streamed-operation-without-diff",
    ),
    pytest.param(
        call_stream(AP, DIFF_DELTA, [], ev(DIFF_DONE, item_id="ap_1", diff="anything")),
        {
            "finish": ("tool_calls", "completed"),
            "id": "resp_1",
            "items": [
                (
                    "call",
                    "ap_1",
                    "call_1",
                    "apply_patch",
                    '{"diff":"+a\\n","path":"a.txt","type":"update_file"}',
                    True,
                    False,
                    "apply_patch",
                )
            ],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="diff-done-with-nothing-streamed",
    ),
    pytest.param(
        [H, added(AP), done(AP), ev(DIFF_DELTA, item_id="ap_1", delta="x")],
        ("stream", "DELTA_AFTER_END", "a delta for ap_1 after it ended", None, None, False),
        id="diff-delta-after-done",
    ),
    pytest.param(
        [H, added(fc(arguments="")), ev(DIFF_DELTA, item_id="fc_1", delta="x")],
        (
            "stream",
            "UNKNOWN_ITEM",
            "response.apply_patch_call_operation_diff.delta for item fc_1, which is a function_call",
            None,
            None,
            False,
        ),
        id="diff-delta-to-a-function-call",
    ),
    pytest.param(
        [H, added(fc(arguments="")), ev(DIFF_DONE, item_id="fc_1", diff="x")],
        (
            "stream",
            "UNKNOWN_ITEM",
            "response.apply_patch_call_operation_diff.done for item fc_1, which is a function_call",
            None,
            None,
            False,
        ),
        id="diff-done-to-a-function-call",
    ),
    pytest.param(
        [H, ev(DIFF_DELTA, item_id="ap_9", delta="x")],
        (
            "stream",
            "DELTA_BEFORE_START",
            "response.apply_patch_call_operation_diff.delta for item ap_9, which was never added",
            None,
            None,
            False,
        ),
        id="diff-delta-to-no-item",
    ),
    pytest.param(
        [H, added(AP), ev(DIFF_DELTA, item_id="ap_1", diff="x")],
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response.apply_patch_call_operation_diff.delta does not have the documented shape",
            "$.delta",
            None,
            False,
        ),
        id="diff-delta-without-delta",
    ),
    pytest.param(
        [H, added(AP), ev(DIFF_DONE, item_id="ap_1", delta="x")],
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response.apply_patch_call_operation_diff.done does not have the documented shape",
            "$.diff",
            None,
            False,
        ),
        id="diff-done-without-diff",
    ),
    pytest.param(
        [H, added(AP), done({k: v for k, v in AP.items() if k != "operation"})],
        (
            "stream",
            "MALFORMED_EVENT",
            "response.output_item.done: a apply_patch_call item needs its operation object",
            "$.item.operation",
            None,
            False,
        ),
        id="client-call-done-without-its-object",
    ),
    # ---- messages
    pytest.param(
        message_stream(("output_text", "Hi")),
        {
            "finish": ("stop", "completed"),
            "id": "resp_1",
            "items": [("text", "msg_1", "Hi")],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="text",
    ),
    pytest.param(
        message_stream(("output_text", "Hi"), ("refusal", "No")),
        {
            "finish": ("refusal", "completed"),
            "id": "resp_1",
            "items": [("text", "msg_1", "Hi"), ("refusal", "msg_1:1", "No")],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="text-then-refusal",
    ),
    pytest.param(
        message_stream(("refusal", "No")),
        {
            "finish": ("refusal", "completed"),
            "id": "resp_1",
            "items": [("refusal", "msg_1", "No")],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="refusal",
    ),
    pytest.param(
        [
            H,
            added(msg()),
            text_part(text="Hi"),
            done(msg("msg_1", ("output_text", "Hi"))),
            terminal([msg("msg_1", ("output_text", "Hi"))]),
        ],
        {
            "finish": ("stop", "completed"),
            "id": "resp_1",
            "items": [("text", "msg_1", "Hi")],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="text-in-part-added",
    ),
    pytest.param(
        [
            H,
            added(msg()),
            text_part(kind="refusal"),
            ev("response.refusal.done", item_id="msg_1", refusal="No"),
            done(msg("msg_1", ("refusal", "No"))),
            terminal([msg("msg_1", ("refusal", "No"))]),
        ],
        {
            "finish": ("refusal", "completed"),
            "id": "resp_1",
            "items": [("refusal", "msg_1", "No")],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="refusal-only-in-done",
    ),
    pytest.param(
        [
            H,
            added(msg()),
            text_part(kind="refusal"),
            ev("response.refusal.delta", item_id="msg_1", delta="No"),
            ev("response.refusal.done", item_id="msg_1", refusal="Yes"),
        ],
        (
            "stream",
            "OUTPUT_MISMATCH",
            "response.refusal.done: the streamed refusal of msg_1 differs from the final value",
            None,
            None,
            False,
        ),
        id="refusal-done-disagrees",
    ),
    pytest.param(
        [H, added(msg()), text_part(kind="refusal"), ev("response.refusal.done", item_id="msg_1", text="No")],
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response.refusal.done does not have the documented shape",
            "$.refusal",
            None,
            False,
        ),
        id="refusal-done-without-refusal",
    ),
    pytest.param(
        [H, added(msg()), text_part(), ev("response.refusal.delta", item_id="msg_1", delta="No")],
        ("stream", "UNKNOWN_ITEM", "response.refusal.delta for msg_1, which is a text part", None, None, False),
        id="refusal-delta-to-a-text-part",
    ),
    pytest.param(
        [H, added(msg()), text_part(kind="refusal"), ev(TEXT_DELTA, item_id="msg_1", delta="Hi")],
        ("stream", "UNKNOWN_ITEM", "response.output_text.delta for msg_1, which is a refusal part", None, None, False),
        id="text-delta-to-a-refusal-part",
    ),
    pytest.param(
        [H, added(msg()), text_part(), ev(TEXT_DELTA, item_id="msg_1", content_index=1, delta="Hi")],
        (
            "stream",
            "DELTA_BEFORE_START",
            "response.output_text.delta for content part 1 of msg_1, never added",
            None,
            None,
            False,
        ),
        id="text-delta-to-a-part-never-added",
    ),
    pytest.param(
        [H, added(msg()), text_part(), ev("response.output_text.done", item_id="msg_1", content_index=1, text="Hi")],
        (
            "stream",
            "DELTA_BEFORE_START",
            "response.output_text.done for content part 1 of msg_1, never added",
            None,
            None,
            False,
        ),
        id="text-done-to-a-part-never-added",
    ),
    pytest.param(
        [H, added(msg()), text_part(), ev(TEXT_DELTA, item_id="msg_1", content_index="0", delta="Hi")],
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response.output_text.delta does not have the documented shape",
            "$.content_index",
            None,
            False,
        ),
        id="text-delta-index-of-another-type",
    ),
    pytest.param(
        [H, added(fc()), ev(TEXT_DELTA, item_id="fc_1", delta="Hi")],
        (
            "stream",
            "UNKNOWN_ITEM",
            "response.output_text.delta for item fc_1, which is a function_call",
            None,
            None,
            False,
        ),
        id="text-delta-to-a-call",
    ),
    pytest.param(
        [H, added(msg()), text_part(), text_part(index=1), text_part(index=0)],
        ("stream", "DUPLICATE_ITEM_ID", "content part 0 of msg_1 was added twice", None, None, False),
        id="part-added-twice",
    ),
    pytest.param(
        [H, added(msg()), text_part(kind="output_audio")],
        (
            "stream",
            "UNSUPPORTED_ITEM",
            'content part of type "output_audio" in message msg_1 is not one the package can represent; the '
            "answer would be cut, so nothing in the response is decided",
            "$.part",
            None,
            False,
        ),
        id="part-of-another-kind",
    ),
    pytest.param(
        [H, added(msg()), text_part(), text_part(index=1, kind="output_audio", event=PART_DONE)],
        (
            "stream",
            "UNSUPPORTED_ITEM",
            'content part of type "output_audio" in message msg_1 is not one the package can represent; the '
            "answer would be cut, so nothing in the response is decided",
            "$.part",
            None,
            False,
        ),
        id="part-of-another-kind-done",
    ),
    pytest.param(
        [H, added(msg()), text_part(), text_part(index=1, event=PART_DONE)],
        (
            "stream",
            "DELTA_BEFORE_START",
            "response.content_part.done for content part 1 of msg_1, never added",
            None,
            None,
            False,
        ),
        id="part-done-never-added",
    ),
    pytest.param(
        [H, added(msg()), text_part(), ev(PART_DONE, item_id="msg_1", content_index=0, part={"type": "output_text"})],
        (
            "stream",
            "MALFORMED_EVENT",
            "response.content_part.done: a output_text part needs its text",
            "$.part.text",
            None,
            False,
        ),
        id="part-done-without-text",
    ),
    pytest.param(
        [
            H,
            added(msg()),
            text_part(kind="refusal"),
            ev(PART_DONE, item_id="msg_1", content_index=0, part={"type": "refusal", "text": "No"}),
        ],
        (
            "stream",
            "MALFORMED_EVENT",
            "response.content_part.done: a refusal part needs its text",
            "$.part.refusal",
            None,
            False,
        ),
        id="refusal-part-done-without-refusal",
    ),
    pytest.param(
        [H, added(msg()), text_part(), ev(PART_ADDED, item_id="msg_1", content_index=1)],
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response.content_part.added does not have the documented shape",
            "$.part",
            None,
            False,
        ),
        id="part-added-without-part",
    ),
    pytest.param(
        [H, added(msg()), ev(PART_ADDED, content_index=0, part={"type": "output_text", "text": ""})],
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response.content_part.added does not have the documented shape",
            "$.item_id",
            None,
            False,
        ),
        id="part-added-without-item-id",
    ),
    pytest.param(
        [H, added(msg()), ev(PART_ADDED, item_id="msg_1", output_index="0", part={"type": "output_text", "text": ""})],
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response.content_part.added does not have the documented shape",
            "$.output_index",
            None,
            False,
        ),
        id="part-added-output-index-of-another-type",
    ),
    pytest.param(
        [H, added(msg()), text_part(text="Hi"), text_part(text="Ho", event=PART_DONE)],
        (
            "stream",
            "OUTPUT_MISMATCH",
            "response.content_part.done: the streamed text of msg_1 differs from the final value",
            None,
            None,
            False,
        ),
        id="part-done-disagrees",
    ),
    pytest.param(
        [
            H,
            added(msg()),
            text_part(text="Hi"),
            text_part(text="Hi", event=PART_DONE),
            text_part(text="Hi", event=PART_DONE),
            done(msg("msg_1", ("output_text", "Hi"))),
            terminal([msg("msg_1", ("output_text", "Hi"))]),
        ],
        {
            "finish": ("stop", "completed"),
            "id": "resp_1",
            "items": [("text", "msg_1", "Hi")],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="part-done-twice",
    ),
    pytest.param(
        [
            H,
            added(msg()),
            text_part(text="Hi"),
            text_part(text="Hi", event=PART_DONE),
            ev(TEXT_DELTA, item_id="msg_1", delta="!"),
        ],
        ("stream", "DELTA_AFTER_END", "a delta for msg_1 after it ended", None, None, False),
        id="text-delta-after-part-done",
    ),
    pytest.param(
        [
            H,
            added(msg()),
            text_part(),
            ev(TEXT_DELTA, item_id="msg_1", delta="Hi"),
            done(msg("msg_1", ("output_text", "Hi"))),
            ev(TEXT_DELTA, item_id="msg_1", delta="!"),
        ],
        ("stream", "DELTA_AFTER_END", "a delta for msg_1 after it ended", None, None, False),
        id="text-delta-after-item-done",
    ),
    pytest.param(
        [
            H,
            added(msg()),
            text_part(),
            ev(TEXT_DELTA, item_id="msg_1", delta="Hi"),
            done(msg("msg_1", ("output_text", "Ho"))),
            terminal([]),
        ],
        (
            "stream",
            "OUTPUT_MISMATCH",
            "response.output_item.done: the streamed text of msg_1 differs from the final value",
            None,
            None,
            False,
        ),
        id="item-done-text-disagrees",
    ),
    pytest.param(
        [H, added(msg()), text_part(), text_part(index=1), done(msg("msg_1", ("output_text", ""))), terminal([])],
        (
            "stream",
            "OUTPUT_MISMATCH",
            "response.output_item.done: a streamed content part of msg_1 is missing",
            None,
            None,
            False,
        ),
        id="item-done-part-missing",
    ),
    pytest.param(
        [H, added(msg()), done(msg("msg_1", ("output_text", "Hi"))), terminal([])],
        (
            "stream",
            "OUTPUT_MISMATCH",
            "response.output_item.done: content part 0 of msg_1 never streamed",
            None,
            None,
            False,
        ),
        id="item-done-part-never-streamed",
    ),
    pytest.param(
        [
            H,
            added(msg()),
            text_part(text="Hi"),
            done(msg("msg_1", ("output_text", "Hi"), ("output_audio", "x"))),
            terminal([]),
        ],
        (
            "stream",
            "UNSUPPORTED_ITEM",
            'content part of type "output_audio" in message msg_1 is not one the package can represent; the '
            "answer would be cut, so nothing in the response is decided",
            "$.item.content[1]",
            None,
            False,
        ),
        id="item-done-part-of-another-kind",
    ),
    pytest.param(
        [
            H,
            added(msg()),
            text_part(text="Hi"),
            done(msg("msg_1", ("output_text", "Hi"), status="incomplete")),
            terminal([msg("msg_1", ("output_text", "Hi"))]),
        ],
        (
            "stream",
            "ITEM_NOT_ENDED",
            "the response completed, but output item msg_1 was not completed",
            None,
            None,
            True,
        ),
        id="message-done-unfinished",
    ),
    pytest.param(
        [
            H,
            added(msg()),
            text_part(text="Hi"),
            text_part(text="Hi", event=PART_DONE),
            done(msg("msg_1", ("output_text", "Hi"), status="in_progress")),
            terminal([msg("msg_1", ("output_text", "Hi"))]),
        ],
        (
            "stream",
            "ITEM_NOT_ENDED",
            "the response completed, but output item msg_1 was not completed",
            None,
            None,
            True,
        ),
        id="message-done-unfinished-after-part-done",
    ),
    pytest.param(
        [H, added(msg()), text_part(text="Hi"), terminal([msg("msg_1", ("output_text", "Hi"))])],
        ("stream", "ITEM_NOT_ENDED", 'item "msg_1" was never ended', None, None, True),
        id="message-never-done",
    ),
    pytest.param(
        [
            H,
            added(msg()),
            text_part(),
            ev("response.output_text.done", item_id="msg_1", text="Hi"),
            done(msg("msg_1", ("output_text", "Hi"))),
            terminal([msg("msg_1", ("output_text", "Hi"))]),
        ],
        {
            "finish": ("stop", "completed"),
            "id": "resp_1",
            "items": [("text", "msg_1", "Hi")],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="text-only-in-done",
    ),
    pytest.param(
        [
            H,
            added(msg()),
            text_part(),
            text_part(text="Hi", event=PART_DONE),
            done(msg("msg_1", ("output_text", "Hi"))),
            terminal([msg("msg_1", ("output_text", "Hi"))]),
        ],
        {
            "finish": ("stop", "completed"),
            "id": "resp_1",
            "items": [("text", "msg_1", "Hi")],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="text-only-in-part-done",
    ),
    pytest.param(
        [H, added(fc()), text_part("fc_1", event=PART_DONE)],
        (
            "stream",
            "UNKNOWN_ITEM",
            "response.content_part.done for item fc_1, which is a function_call",
            None,
            None,
            False,
        ),
        id="part-done-to-a-call",
    ),
    pytest.param(
        [H, text_part("msg_9", event=PART_DONE)],
        (
            "stream",
            "DELTA_BEFORE_START",
            "response.content_part.done for item msg_9, which was never added",
            None,
            None,
            False,
        ),
        id="part-done-to-no-item",
    ),
    pytest.param(
        [H, added(msg()), text_part(), ev(PART_DONE, item_id="msg_1", content_index=0, part="Hi")],
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response.content_part.done does not have the documented shape",
            "$.part",
            None,
            False,
        ),
        id="part-done-part-not-an-object",
    ),
    pytest.param(
        [H, added(msg()), text_part(), text_part(index=1, kind="reasoning_text", event=PART_DONE)],
        (
            "stream",
            "UNSUPPORTED_ITEM",
            'content part of type "reasoning_text" in message msg_1 is not one the package can represent; the '
            "answer would be cut, so nothing in the response is decided",
            "$.part",
            None,
            False,
        ),
        id="reasoning-part-done-to-a-message",
    ),
    pytest.param(
        [H, added(msg()), ev(PART_ADDED, item_id="msg_1", content_index=-1, part={"type": "output_text", "text": ""})],
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response.content_part.added does not have the documented shape",
            "$.content_index",
            None,
            False,
        ),
        id="part-added-index-negative",
    ),
    pytest.param(
        [H, added(fc(arguments="")), ev("response.function_call_arguments.done", item_id="fc_1")],
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response.function_call_arguments.done does not have the documented shape",
            "$.arguments",
            None,
            False,
        ),
        id="arguments-done-without-arguments",
    ),
    pytest.param(
        [
            H,
            added(msg()),
            text_part(),
            done(msg("msg_1", ("output_text", "Hi"))),
            terminal([msg("msg_1", ("output_text", "Hi"))]),
        ],
        {
            "finish": ("stop", "completed"),
            "id": "resp_1",
            "items": [("text", "msg_1", "Hi")],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="text-only-in-item-done",
    ),
    # ---- reasoning
    pytest.param(
        [
            H,
            added(reasoning()),
            ev("response.reasoning_summary_part.added", item_id="rs_1"),
            ev("response.reasoning_summary_text.delta", item_id="rs_1", delta="a"),
            ev("response.reasoning_summary_text.done", item_id="rs_1", text="a"),
            ev("response.reasoning_summary_part.done", item_id="rs_1"),
            ev("response.reasoning_summary_part.added", item_id="rs_1"),
            ev("response.reasoning_summary_text.delta", item_id="rs_1", delta="b"),
            done(RS),
            terminal([RS]),
        ],
        {
            "finish": ("stop", "completed"),
            "id": "resp_1",
            "items": [("reasoning", "rs_1", "a\n\nb", "sig")],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="reasoning-summary-parts",
    ),
    pytest.param(
        [
            H,
            added(reasoning()),
            ev("response.reasoning_text.delta", item_id="rs_1", delta="t"),
            ev("response.reasoning_text.done", item_id="rs_1", text="t"),
            done(reasoning()),
            terminal([reasoning()]),
        ],
        {
            "finish": ("stop", "completed"),
            "id": "resp_1",
            "items": [("reasoning", "rs_1", "t", None)],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="reasoning-text",
    ),
    pytest.param(
        [
            H,
            added(reasoning()),
            text_part("rs_1", kind="reasoning_text"),
            ev("response.reasoning_text.delta", item_id="rs_1", delta="t"),
            text_part("rs_1", text="t", kind="reasoning_text", event=PART_DONE),
            done(reasoning()),
            terminal([reasoning()]),
        ],
        {
            "finish": ("stop", "completed"),
            "id": "resp_1",
            "items": [("reasoning", "rs_1", "t", None)],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="reasoning-text-parts",
    ),
    pytest.param(
        [H, added(reasoning()), done(RS), terminal([RS])],
        {
            "finish": ("stop", "completed"),
            "id": "resp_1",
            "items": [("reasoning", "rs_1", "a\n\nb", "sig")],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="reasoning-only-in-done",
    ),
    pytest.param(
        [H, added(reasoning()), done(RS), ev("response.reasoning_summary_text.delta", item_id="rs_1", delta="c")],
        ("stream", "DELTA_AFTER_END", "a delta for rs_1 after it ended", None, None, False),
        id="reasoning-delta-after-done",
    ),
    pytest.param(
        [H, added(reasoning()), terminal([RS])],
        ("stream", "ITEM_NOT_ENDED", 'item "rs_1" was never ended', None, None, True),
        id="reasoning-never-done",
    ),
    pytest.param(
        [H, added(fc()), ev("response.reasoning_summary_part.added", item_id="fc_1")],
        (
            "stream",
            "UNKNOWN_ITEM",
            "response.reasoning_summary_part.added for item fc_1, which is a function_call",
            None,
            None,
            False,
        ),
        id="summary-part-to-a-call",
    ),
    pytest.param(
        [H, ev("response.reasoning_summary_text.done", item_id="rs_9", text="")],
        (
            "stream",
            "DELTA_BEFORE_START",
            "response.reasoning_summary_text.done for item rs_9, which was never added",
            None,
            None,
            False,
        ),
        id="reasoning-done-to-no-item",
    ),
    pytest.param(
        [H, added(msg()), ev("response.reasoning_text.delta", item_id="msg_1", delta="t")],
        (
            "stream",
            "UNKNOWN_ITEM",
            "response.reasoning_text.delta for item msg_1, which is a message",
            None,
            None,
            False,
        ),
        id="reasoning-delta-to-a-message",
    ),
    pytest.param(
        [H, added(msg()), text_part(kind="reasoning_text")],
        (
            "stream",
            "UNSUPPORTED_ITEM",
            'content part of type "reasoning_text" in message msg_1 is not one the package can represent; the '
            "answer would be cut, so nothing in the response is decided",
            "$.part",
            None,
            False,
        ),
        id="reasoning-part-to-a-message",
    ),
    pytest.param(
        [H, added(fc()), text_part("fc_1", kind="reasoning_text")],
        (
            "stream",
            "UNKNOWN_ITEM",
            "response.content_part.added for item fc_1, which is a function_call",
            None,
            None,
            False,
        ),
        id="reasoning-part-to-a-call",
    ),
    pytest.param(
        [H, ev("response.reasoning_summary_text.done", text="")],
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response.reasoning_summary_text.done does not have the documented shape",
            "$.item_id",
            None,
            False,
        ),
        id="reasoning-done-without-item-id",
    ),
    pytest.param(
        [H, added(reasoning()), ev("response.reasoning_summary_text.delta", item_id="rs_1")],
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response.reasoning_summary_text.delta does not have the documented shape",
            "$.delta",
            None,
            False,
        ),
        id="reasoning-delta-without-delta",
    ),
    pytest.param(
        [H, added(reasoning()), ev("response.reasoning_summary_part.added", summary_index=0)],
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response.reasoning_summary_part.added does not have the documented shape",
            "$.item_id",
            None,
            False,
        ),
        id="summary-part-without-item-id",
    ),
    # ---- items done and the final output
    pytest.param(
        [H, done(fc())],
        (
            "stream",
            "OUTPUT_MISMATCH",
            "response.output_item.done: function_call fc_1 was never added to the stream",
            None,
            None,
            False,
        ),
        id="done-never-added",
    ),
    pytest.param(
        [H, added(msg("fc_1")), done(fc())],
        (
            "stream",
            "OUTPUT_MISMATCH",
            "response.output_item.done: function_call fc_1 was never added to the stream",
            None,
            None,
            False,
        ),
        id="done-of-another-type",
    ),
    pytest.param(
        [H, ev("response.output_item.done", output_index=-1, item=fc())],
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response.output_item.done does not have the documented shape",
            "$.output_index",
            None,
            False,
        ),
        id="done-index-negative",
    ),
    pytest.param(
        [H, done({"type": "mcp_call", "id": "mc_1"}), terminal([])],
        {"finish": ("stop", "completed"), "id": "resp_1", "items": [], "model": "gpt-5", "unknown": {}, "usage": None},
        id="builtin-done-alone",
    ),
    pytest.param(
        [H, added(fc()), done(fc()), terminal([])],
        ("stream", "OUTPUT_MISMATCH", "response.completed: streamed item fc_1 is not in the output", None, None, False),
        id="streamed-call-not-in-output",
    ),
    pytest.param(
        [H, terminal([fc()])],
        (
            "stream",
            "OUTPUT_MISMATCH",
            "response.completed: the output has function_call fc_1, never streamed",
            None,
            None,
            False,
        ),
        id="output-call-never-streamed",
    ),
    pytest.param(
        [H, added(msg("fc_1")), terminal([fc()])],
        (
            "stream",
            "OUTPUT_MISMATCH",
            "response.completed: the output has function_call fc_1, never streamed",
            None,
            None,
            False,
        ),
        id="output-item-of-another-type",
    ),
    pytest.param(
        [
            H,
            added(fc("fc_1", "call_1")),
            added(fc("fc_2", "call_2")),
            done(fc("fc_1", "call_1")),
            done(fc("fc_2", "call_2")),
            terminal([fc("fc_2", "call_2"), fc("fc_1", "call_1")]),
        ],
        (
            "stream",
            "OUTPUT_MISMATCH",
            "response.completed: the output does not list the streamed items in stream order",
            None,
            None,
            False,
        ),
        id="output-in-another-order",
    ),
    pytest.param(
        [H, added(fc()), done(fc()), terminal([fc(), fc()])],
        (
            "stream",
            "OUTPUT_MISMATCH",
            "response.completed: the output does not list the streamed items in stream order",
            None,
            None,
            False,
        ),
        id="output-lists-a-call-twice",
    ),
    pytest.param(
        [H, added(fc()), done(fc()), terminal([{"type": "web_search_call", "id": "ws_1"}, fc()])],
        {
            "finish": ("tool_calls", "completed"),
            "id": "resp_1",
            "items": [("call", "fc_1", "call_1", "f", '{"a":1}', True, False, "function")],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="output-with-a-builtin-item",
    ),
    pytest.param(
        [
            *message_stream(("output_text", "a"), ("output_text", "b"))[:-1],
            terminal([msg("msg_1", ("output_text", "a"), ("output_text", "b"), status="completed"), RS]),
        ],
        {
            "finish": ("stop", "completed"),
            "id": "resp_1",
            "items": [("text", "msg_1", "a"), ("text", "msg_1:1", "b"), ("reasoning", "rs_1", "a\n\nb", "sig")],
            "model": "gpt-5",
            "unknown": {"completed_only:reasoning": 1},
            "usage": None,
        },
        id="reasoning-only-in-output-after-two-parts",
    ),
    pytest.param(
        [H, added(fc()), done(fc()), terminal([RS, fc(), reasoning("rs_2", "c")])],
        {
            "finish": ("tool_calls", "completed"),
            "id": "resp_1",
            "items": [
                ("reasoning", "rs_1", "a\n\nb", "sig"),
                ("call", "fc_1", "call_1", "f", '{"a":1}', True, False, "function"),
                ("reasoning", "rs_2", "c", None),
            ],
            "model": "gpt-5",
            "unknown": {"completed_only:reasoning": 2},
            "usage": None,
        },
        id="reasoning-only-in-output-around-a-call",
    ),
    pytest.param(
        [H, added(fc()), done(fc()), terminal([fc(), {"type": "reasoning", "id": "rs_1"}])],
        {
            "finish": ("tool_calls", "completed"),
            "id": "resp_1",
            "items": [
                ("call", "fc_1", "call_1", "f", '{"a":1}', True, False, "function"),
                ("reasoning", "rs_1", "", None),
            ],
            "model": "gpt-5",
            "unknown": {"completed_only:reasoning": 1},
            "usage": None,
        },
        id="empty-reasoning-only-in-output",
    ),
    pytest.param(
        [
            H,
            added(fc()),
            added(fc("fc_2", "call_2")),
            done(fc()),
            done(fc("fc_2", "call_2")),
            terminal([fc(), RS, fc("fc_2", "call_2"), reasoning("rs_2", "c")]),
        ],
        {
            "finish": ("tool_calls", "completed"),
            "id": "resp_1",
            "items": [
                ("call", "fc_1", "call_1", "f", '{"a":1}', True, False, "function"),
                ("reasoning", "rs_1", "a\n\nb", "sig"),
                ("call", "fc_2", "call_2", "f", '{"a":1}', True, False, "function"),
                ("reasoning", "rs_2", "c", None),
            ],
            "model": "gpt-5",
            "unknown": {"completed_only:reasoning": 2},
            "usage": None,
        },
        id="reasoning-only-in-output-after-each-call",
    ),
    pytest.param(
        [
            H,
            added(fc()),
            added(msg()),
            text_part(text="Hi"),
            done(fc()),
            done(msg("msg_1", ("output_text", "Hi"))),
            terminal([fc(), RS, msg("msg_1", ("output_text", "Hi"))]),
        ],
        {
            "finish": ("tool_calls", "completed"),
            "id": "resp_1",
            "items": [
                ("call", "fc_1", "call_1", "f", '{"a":1}', True, False, "function"),
                ("reasoning", "rs_1", "a\n\nb", "sig"),
                ("text", "msg_1", "Hi"),
            ],
            "model": "gpt-5",
            "unknown": {"completed_only:reasoning": 1},
            "usage": None,
        },
        id="reasoning-only-in-output-between-a-call-and-a-message",
    ),
    pytest.param(
        [H, terminal([], "response.failed"), ev("response.foo")],
        ("stream", "EVENT_AFTER_TERMINAL", "response.foo after the response ended", None, None, False),
        id="event-after-failed",
    ),
    pytest.param(
        [H, added(fc()), ev("response.output_item.done", item={"type": 1, "id": "fc_1"})],
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response.output_item.done does not have the documented shape",
            "$.item.type",
            None,
            False,
        ),
        id="done-type-of-another-type",
    ),
    pytest.param(
        [H, added(fc()), done({"type": "mcp_approval_request", "id": "fc_1"})],
        (
            "stream",
            "UNSUPPORTED_ITEM",
            'output item of type "mcp_approval_request" is not one the package can represent; it may be a '
            "call the host must handle, so nothing in the response is decided",
            "$.item",
            None,
            False,
        ),
        id="done-of-an-unsupported-type",
    ),
    # ---- terminals
    pytest.param(
        [
            H,
            terminal(
                [],
                usage={
                    "input_tokens": 3,
                    "output_tokens": 4,
                    "input_tokens_details": {"cached_tokens": 1},
                    "output_tokens_details": {"reasoning_tokens": 2},
                },
            ),
        ],
        {
            "finish": ("stop", "completed"),
            "id": "resp_1",
            "items": [],
            "model": "gpt-5",
            "unknown": {},
            "usage": (3, 4, 1, 2),
        },
        id="usage",
    ),
    pytest.param(
        [
            H,
            terminal(
                [], "response.incomplete", status="incomplete", incomplete_details={"reason": "max_output_tokens"}
            ),
        ],
        {
            "finish": ("length", "max_output_tokens"),
            "id": "resp_1",
            "items": [],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="incomplete-max-output-tokens",
    ),
    pytest.param(
        [H, terminal([], "response.incomplete", status="incomplete", incomplete_details={"reason": "content_filter"})],
        {
            "finish": ("content_filter", "content_filter"),
            "id": "resp_1",
            "items": [],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="incomplete-content-filter",
    ),
    pytest.param(
        [H, terminal([], "response.incomplete", status="incomplete", incomplete_details={"reason": "other"})],
        {"finish": ("unknown", "other"), "id": "resp_1", "items": [], "model": "gpt-5", "unknown": {}, "usage": None},
        id="incomplete-other",
    ),
    pytest.param(
        [H, terminal([], "response.incomplete", status="completed")],
        {
            "finish": ("unknown", "incomplete"),
            "id": "resp_1",
            "items": [],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="incomplete-event-completed-status",
    ),
    pytest.param(
        [H, terminal([], status="incomplete")],
        {
            "finish": ("unknown", "incomplete"),
            "id": "resp_1",
            "items": [],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="completed-event-incomplete-status",
    ),
    pytest.param(
        [H, terminal([], incomplete_details={"reason": "max_output_tokens"})],
        {
            "finish": ("length", "max_output_tokens"),
            "id": "resp_1",
            "items": [],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="completed-with-incomplete-details",
    ),
    pytest.param(
        [H, terminal([], incomplete_details={})],
        {
            "finish": ("unknown", "incomplete"),
            "id": "resp_1",
            "items": [],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="completed-with-empty-incomplete-details",
    ),
    pytest.param(
        [H, terminal([], status="cancelled")],
        {
            "finish": ("cancelled", "cancelled"),
            "id": "resp_1",
            "items": [],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="completed-event-cancelled-status",
    ),
    pytest.param(
        [H, terminal([], status="in_progress")],
        {
            "finish": ("unknown", "in_progress"),
            "id": "resp_1",
            "items": [],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="completed-event-in-progress-status",
    ),
    pytest.param(
        [H, terminal([], status="")],
        {"finish": ("unknown", ""), "id": "resp_1", "items": [], "model": "gpt-5", "unknown": {}, "usage": None},
        id="completed-event-empty-status",
    ),
    pytest.param(
        [H, ev("response.completed", response={"output": []})],
        {"finish": ("stop", "completed"), "id": "resp_1", "items": [], "model": "gpt-5", "unknown": {}, "usage": None},
        id="completed-without-status",
    ),
    pytest.param(
        [H, ev("response.completed")],
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response.completed does not have the documented shape",
            "$.response",
            None,
            False,
        ),
        id="completed-without-response",
    ),
    pytest.param(
        [H, ev("response.completed", response={"status": "completed", "output": {}})],
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response.completed does not have the documented shape",
            "$.response.output",
            None,
            False,
        ),
        id="completed-output-not-a-list",
    ),
]

BLOCKED = [{"blocked": True, "source_type": "completion", "content_filter_results": {}}]
FILTERED = [
    {
        "blocked": False,
        "source_type": "prompt",
        "content_filter_results": {"hate": {"filtered": True, "severity": "high"}},
    }
]
CLEAN = [
    {
        "blocked": False,
        "source_type": "prompt",
        "content_filter_results": {"hate": {"filtered": False, "severity": "safe"}},
    }
]
NOT_RUN = [
    {"blocked": False, "content_filter_results": {"error": {"code": "content_filter_error", "message": "timed out"}}}
]

#: Azure OpenAI's filter verdicts on a stream
FILTER_STREAMS = [
    pytest.param(
        [created(content_filters=[1])],
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response.created does not have the documented shape",
            "$.response.content_filters[0]",
            None,
            False,
        ),
        id="filter-entry-not-an-object",
    ),
    pytest.param(
        [created(content_filters=[{"content_filter_results": "x"}])],
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response.created does not have the documented shape",
            "$.response.content_filters[0].content_filter_results",
            None,
            False,
        ),
        id="filter-results-not-an-object",
    ),
    pytest.param(
        [created(content_filters=[{"content_filter_results": {"hate": 1}}])],
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response.created does not have the documented shape",
            "$.response.content_filters[0].content_filter_results.hate",
            None,
            False,
        ),
        id="filter-category-not-an-object",
    ),
    pytest.param(
        [created(content_filters=BLOCKED), terminal([])],
        {
            "finish": ("content_filter", "completed"),
            "id": "resp_1",
            "items": [],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="head-blocked",
    ),
    pytest.param(
        [
            created(content_filters=FILTERED),
            ev("response.in_progress", response={"content_filters": NOT_RUN}),
            terminal([]),
        ],
        {
            "finish": ("content_filter", "completed"),
            "id": "resp_1",
            "items": [],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="head-filtered-then-not-run",
    ),
    pytest.param(
        [created(content_filters=NOT_RUN)],
        (
            "transport",
            "PROVIDER_ERROR",
            "the content filter did not run, so the output was not screened",
            "$.response.content_filters[0].content_filter_results.error",
            None,
            True,
        ),
        id="head-not-run",
    ),
    pytest.param(
        [H, ev("response.queued", response={"content_filters": NOT_RUN})],
        (
            "transport",
            "PROVIDER_ERROR",
            "the content filter did not run, so the output was not screened",
            "$.response.content_filters[0].content_filter_results.error",
            None,
            True,
        ),
        id="queued-not-run",
    ),
    pytest.param(
        [created(content_filters=CLEAN), terminal([])],
        {"finish": ("stop", "completed"), "id": "resp_1", "items": [], "model": "gpt-5", "unknown": {}, "usage": None},
        id="head-clean",
    ),
    pytest.param(
        [H, terminal([], content_filters=BLOCKED)],
        {
            "finish": ("content_filter", "completed"),
            "id": "resp_1",
            "items": [],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="terminal-blocked",
    ),
    pytest.param(
        [H, terminal([], content_filters=NOT_RUN)],
        (
            "transport",
            "PROVIDER_ERROR",
            "the content filter did not run, so the output was not screened",
            "$.response.content_filters[0].content_filter_results.error",
            None,
            True,
        ),
        id="terminal-not-run",
    ),
    pytest.param(
        [H, terminal([], content_filters=NOT_RUN + FILTERED)],
        {
            "finish": ("content_filter", "completed"),
            "id": "resp_1",
            "items": [],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="terminal-not-run-then-filtered",
    ),
    pytest.param(
        [created(content_filters=CLEAN), terminal([], content_filters=FILTERED, status="incomplete")],
        {
            "finish": ("content_filter", "incomplete"),
            "id": "resp_1",
            "items": [],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="terminal-filtered-incomplete",
    ),
    pytest.param(
        [created(content_filters=BLOCKED), terminal([], status="cancelled")],
        {
            "finish": ("content_filter", "cancelled"),
            "id": "resp_1",
            "items": [],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="head-blocked-cancelled",
    ),
    pytest.param(
        [created(content_filters=FILTERED), terminal([], content_filters=NOT_RUN)],
        {
            "finish": ("content_filter", "completed"),
            "id": "resp_1",
            "items": [],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="head-filtered-terminal-not-run",
    ),
    pytest.param(
        [created(content_filters=BLOCKED), added(fc()), done(fc(status="incomplete")), terminal([fc()])],
        {
            "finish": ("content_filter", "completed"),
            "id": "resp_1",
            "items": [("call", "fc_1", "call_1", "f", '{"a":1}', False, False, "function")],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="blocked-with-an-unfinished-call",
    ),
    pytest.param(
        [H, added(fc()), done(fc(status="incomplete")), terminal([fc()], content_filters=BLOCKED)],
        {
            "finish": ("content_filter", "completed"),
            "id": "resp_1",
            "items": [("call", "fc_1", "call_1", "f", '{"a":1}', False, False, "function")],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="terminal-blocked-with-an-unfinished-call",
    ),
    pytest.param(
        [created(content_filters=FILTERED, status="cancelled")],
        {
            "finish": ("content_filter", "cancelled"),
            "id": "resp_1",
            "items": [],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="head-filtered-and-cancelled",
    ),
    pytest.param(
        [created(content_filters={})],
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response.created does not have the documented shape",
            "$.response.content_filters",
            None,
            False,
        ),
        id="filters-not-a-list",
    ),
    pytest.param(
        [created(content_filters=[{"blocked": "yes"}])],
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response.created does not have the documented shape",
            "$.response.content_filters[0].blocked",
            None,
            False,
        ),
        id="blocked-not-a-boolean",
    ),
]

#: whole bodies (``object: "response"`` makes any of them one)
BODIES = [
    pytest.param(
        resp([], incomplete_details="x"),
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response does not have the documented shape",
            "$.incomplete_details",
            None,
            False,
        ),
        id="incomplete-details-of-another-type",
    ),
    pytest.param(
        resp([], incomplete_details={"reason": 1}),
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response does not have the documented shape",
            "$.incomplete_details.reason",
            None,
            False,
        ),
        id="incomplete-reason-of-another-type",
    ),
    pytest.param(
        resp([], error={"code": [1]}),
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response does not have the documented shape",
            "$.error.code",
            None,
            False,
        ),
        id="error-of-another-shape",
    ),
    pytest.param(
        resp([], id=1),
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response does not have the documented shape",
            "$.id",
            None,
            False,
        ),
        id="id-of-another-type",
    ),
    pytest.param(
        resp([], model=1),
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response does not have the documented shape",
            "$.model",
            None,
            False,
        ),
        id="model-of-another-type",
    ),
    pytest.param(
        resp([], status=1),
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response does not have the documented shape",
            "$.status",
            None,
            False,
        ),
        id="status-of-another-type",
    ),
    pytest.param(
        [1],
        ("stream", "MALFORMED_EVENT", "openai-responses response does not have the documented shape", "$", None, False),
        id="not-an-object",
    ),
    pytest.param(
        resp([fc(), fc("fc_2", "call_2", "h")]),
        {
            "finish": ("tool_calls", "completed"),
            "id": "resp_1",
            "items": [
                ("call", "fc_1", "call_1", "f", '{"a":1}', True, False, "function"),
                ("call", "fc_2", "call_2", "h", '{"a":1}', True, False, "function"),
            ],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="two-calls",
    ),
    pytest.param(
        resp([fc(status="in_progress")]),
        ("stream", "ITEM_NOT_ENDED", 'item "fc_1" was never ended', None, None, True),
        id="call-unfinished",
    ),
    pytest.param(
        resp([fc(arguments="")]),
        {
            "finish": ("tool_calls", "completed"),
            "id": "resp_1",
            "items": [("call", "fc_1", "call_1", "f", "", True, False, "function")],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="call-without-arguments",
    ),
    pytest.param(
        resp([CT]),
        {
            "finish": ("tool_calls", "completed"),
            "id": "resp_1",
            "items": [("call", "ct_1", "call_1", "g", "x y", True, False, "custom")],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="custom-call",
    ),
    pytest.param(
        resp([AP]),
        {
            "finish": ("tool_calls", "completed"),
            "id": "resp_1",
            "items": [
                (
                    "call",
                    "ap_1",
                    "call_1",
                    "apply_patch",
                    '{"diff":"+a\\n","path":"a.txt","type":"update_file"}',
                    True,
                    False,
                    "apply_patch",
                )
            ],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="apply-patch-call",
    ),
    pytest.param(
        resp([{k: v for k, v in AP.items() if k != "operation"}]),
        (
            "stream",
            "MALFORMED_EVENT",
            "response: a apply_patch_call item needs its operation object",
            "$.output[0].operation",
            None,
            False,
        ),
        id="apply-patch-without-operation",
    ),
    pytest.param(
        resp([{"type": "computer_call", "id": "cc_1", "call_id": "c", "action": {"y": 1, "x": [2]}}]),
        {
            "finish": ("tool_calls", "completed"),
            "id": "resp_1",
            "items": [("call", "cc_1", "c", "computer", '{"x":[2],"y":1}', True, False, "computer")],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="computer-call",
    ),
    pytest.param(
        resp([{"type": "shell_call", "id": "sh_1", "call_id": "c", "action": {"commands": ["ls"]}}]),
        {
            "finish": ("tool_calls", "completed"),
            "id": "resp_1",
            "items": [("call", "sh_1", "c", "shell", '{"commands":["ls"]}', True, False, "shell")],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="shell-call",
    ),
    pytest.param(
        resp(
            [
                {
                    "type": "shell_call",
                    "id": "sh_1",
                    "call_id": "c",
                    "action": {"commands": ["ls"]},
                    "environment": {"type": "local"},
                }
            ]
        ),
        {
            "finish": ("tool_calls", "completed"),
            "id": "resp_1",
            "items": [("call", "sh_1", "c", "shell", '{"commands":["ls"]}', True, False, "shell")],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="local-shell-call",
    ),
    pytest.param(
        resp(
            [{"type": "shell_call", "id": "sh_1", "call_id": "c", "action": {"commands": ["ls"]}, "environment": "x"}]
        ),
        {
            "finish": ("stop", "completed"),
            "id": "resp_1",
            "items": [],
            "model": "gpt-5",
            "unknown": {"output_item:shell_call": 1},
            "usage": None,
        },
        id="shell-call-elsewhere",
    ),
    pytest.param(
        resp(
            [
                {
                    "type": "shell_call",
                    "id": "sh_1",
                    "call_id": "c",
                    "action": {"commands": ["ls"]},
                    "environment": {"type": "container"},
                }
            ]
        ),
        {
            "finish": ("stop", "completed"),
            "id": "resp_1",
            "items": [],
            "model": "gpt-5",
            "unknown": {"output_item:shell_call": 1},
            "usage": None,
        },
        id="hosted-shell-call",
    ),
    pytest.param(
        resp([msg("msg_1", ("output_text", "Hi"), ("refusal", "No"))]),
        {
            "finish": ("refusal", "completed"),
            "id": "resp_1",
            "items": [("text", "msg_1", "Hi"), ("refusal", "msg_1:1", "No")],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="text-and-refusal",
    ),
    pytest.param(
        resp([msg("msg_1", ("refusal", ""))]),
        {
            "finish": ("refusal", "completed"),
            "id": "resp_1",
            "items": [("refusal", "msg_1", "")],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="empty-refusal",
    ),
    pytest.param(
        resp([msg("msg_1", ("output_text", ""), ("output_text", "b"))]),
        {
            "finish": ("stop", "completed"),
            "id": "resp_1",
            "items": [("text", "msg_1", ""), ("text", "msg_1:1", "b")],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="empty-text-then-text",
    ),
    pytest.param(
        resp([msg("msg_1", ("output_text", "Hi"), status="incomplete")]),
        ("stream", "ITEM_NOT_ENDED", 'item "msg_1" was never ended', None, None, True),
        id="message-unfinished",
    ),
    pytest.param(
        resp([msg("msg_1", ("output_text", "Hi"), ("output_audio", "x"))]),
        (
            "stream",
            "UNSUPPORTED_ITEM",
            'content part of type "output_audio" in message msg_1 is not one the package can represent; the '
            "answer would be cut, so nothing in the response is decided",
            "$.output[0].content[1]",
            None,
            False,
        ),
        id="part-of-another-kind",
    ),
    pytest.param(
        resp([msg("msg_1", ("refusal", "No")), fc()]),
        {
            "finish": ("tool_calls", "completed"),
            "id": "resp_1",
            "items": [("refusal", "msg_1", "No"), ("call", "fc_1", "call_1", "f", '{"a":1}', True, False, "function")],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="refusal-and-call",
    ),
    pytest.param(
        resp([RS, {"type": "reasoning", "id": "rs_2"}]),
        {
            "finish": ("stop", "completed"),
            "id": "resp_1",
            "items": [("reasoning", "rs_1", "a\n\nb", "sig"), ("reasoning", "rs_2", "", None)],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="reasoning",
    ),
    pytest.param(
        resp([{"type": "web_search_call", "id": "ws_1"}, {"type": "web_search_call", "id": "ws_2"}]),
        {
            "finish": ("stop", "completed"),
            "id": "resp_1",
            "items": [],
            "model": "gpt-5",
            "unknown": {"output_item:web_search_call": 2},
            "usage": None,
        },
        id="builtin-items-counted",
    ),
    pytest.param(
        {"error": {"code": "server_error", "message": "boom"}},
        ("transport", "PROVIDER_ERROR", "server_error: boom", None, None, True),
        id="error-only",
    ),
    pytest.param(
        resp([fc()], error={"code": "server_error", "message": "boom"}),
        ("transport", "PROVIDER_ERROR", "server_error: boom", None, None, True),
        id="error-whatever-the-status",
    ),
    pytest.param(
        resp([fc()], status="failed"), ("transport", "PROVIDER_ERROR", "failed", None, None, False), id="failed"
    ),
    pytest.param(
        resp([fc()], status="error"), ("transport", "PROVIDER_ERROR", "failed", None, None, False), id="error-status"
    ),
    pytest.param(
        resp([fc()], status="queued"),
        (
            "stream",
            "RESPONSE_NOT_FINISHED",
            'response "resp_1" is queued, not finished: poll it by its id until it is',
            None,
            None,
            True,
        ),
        id="queued",
    ),
    pytest.param(
        resp([], status="in_progress", id=None),
        (
            "stream",
            "RESPONSE_NOT_FINISHED",
            'response "" is in_progress, not finished: poll it by its id until it is',
            None,
            None,
            True,
        ),
        id="in-progress-without-id",
    ),
    pytest.param(
        resp([fc()], status=None),
        (
            "stream",
            "BODY_NOT_FINISHED",
            "the body is not a finished response: it has no finish signal",
            None,
            None,
            True,
        ),
        id="no-status",
    ),
    pytest.param(
        resp(
            [msg("msg_1", ("output_text", "Hi"))],
            status="incomplete",
            incomplete_details={"reason": "max_output_tokens"},
        ),
        {
            "finish": ("length", "max_output_tokens"),
            "id": "resp_1",
            "items": [("text", "msg_1", "Hi")],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="incomplete",
    ),
    pytest.param(
        resp([], status="incomplete"),
        {
            "finish": ("unknown", "incomplete"),
            "id": "resp_1",
            "items": [],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="incomplete-without-details",
    ),
    pytest.param(
        resp([], status="completed", incomplete_details={"reason": "content_filter"}),
        {
            "finish": ("content_filter", "content_filter"),
            "id": "resp_1",
            "items": [],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="completed-with-incomplete-details",
    ),
    pytest.param(
        resp([], status="cancelled"),
        {
            "finish": ("cancelled", "cancelled"),
            "id": "resp_1",
            "items": [],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="cancelled",
    ),
    pytest.param(
        resp([], status="paused"),
        {"finish": ("unknown", "paused"), "id": "resp_1", "items": [], "model": "gpt-5", "unknown": {}, "usage": None},
        id="unknown-status",
    ),
    pytest.param(
        resp([msg("msg_1", ("output_text", "Hi"))], content_filters=BLOCKED),
        {
            "finish": ("content_filter", "completed"),
            "id": "resp_1",
            "items": [("text", "msg_1", "Hi")],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="blocked",
    ),
    pytest.param(
        resp([msg("msg_1", ("output_text", "Hi"))], content_filters=NOT_RUN),
        (
            "transport",
            "PROVIDER_ERROR",
            "the content filter did not run, so the output was not screened",
            "$.content_filters[0].content_filter_results.error",
            None,
            True,
        ),
        id="filter-not-run",
    ),
    pytest.param(
        resp([fc(status="in_progress")], content_filters=FILTERED),
        {
            "finish": ("content_filter", "completed"),
            "id": "resp_1",
            "items": [("call", "fc_1", "call_1", "f", '{"a":1}', False, False, "function")],
            "model": "gpt-5",
            "unknown": {},
            "usage": None,
        },
        id="filtered-with-an-unfinished-call",
    ),
    pytest.param(
        resp([], usage={"input_tokens": 3, "output_tokens": 4}),
        {
            "finish": ("stop", "completed"),
            "id": "resp_1",
            "items": [],
            "model": "gpt-5",
            "unknown": {},
            "usage": (3, 4, None, None),
        },
        id="usage",
    ),
]


@pytest.mark.parametrize(("sent", "expected"), STREAMS + FILTER_STREAMS)
def test_a_stream_in_full(impl: ModuleType, sent: list[Any], expected: Any) -> None:
    assert stream(impl, P, sent) == expected


@pytest.mark.parametrize(("sent", "expected"), BODIES)
def test_a_body_in_full(impl: ModuleType, sent: Any, expected: Any) -> None:
    assert body(impl, P, sent) == expected


def without(item: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in item.items() if k != key}


#: output items of another shape: (the item, where in it), each as a body's output and as a streamed item
ITEMS = [
    pytest.param(
        {"type": 1, "id": "x"},
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response does not have the documented shape",
            "$.output[0].type",
            None,
            False,
        ),
        id="type",
    ),
    pytest.param(
        dict(fc(), id=1),
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response does not have the documented shape",
            "$.output[0].id",
            None,
            False,
        ),
        id="id",
    ),
    pytest.param(
        without(fc(), "id"),
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response does not have the documented shape",
            "$.output[0].id",
            None,
            False,
        ),
        id="no-id",
    ),
    pytest.param(
        dict(fc(), status=1),
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response does not have the documented shape",
            "$.output[0].status",
            None,
            False,
        ),
        id="status",
    ),
    pytest.param(
        dict(fc(), call_id=1),
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response does not have the documented shape",
            "$.output[0].call_id",
            None,
            False,
        ),
        id="call-id",
    ),
    pytest.param(
        without(fc(), "call_id"),
        (
            "stream",
            "MALFORMED_EVENT",
            "response: a function_call item needs call_id and name",
            "$.output[0].call_id",
            None,
            False,
        ),
        id="no-call-id",
    ),
    pytest.param(
        dict(fc(), call_id=""),
        (
            "stream",
            "MALFORMED_EVENT",
            "response: a function_call item needs call_id and name",
            "$.output[0].call_id",
            None,
            False,
        ),
        id="empty-call-id",
    ),
    pytest.param(
        dict(fc(), name=1),
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response does not have the documented shape",
            "$.output[0].name",
            None,
            False,
        ),
        id="name",
    ),
    pytest.param(
        without(fc(), "name"),
        (
            "stream",
            "MALFORMED_EVENT",
            "response: a function_call item needs call_id and name",
            "$.output[0].name",
            None,
            False,
        ),
        id="no-name",
    ),
    pytest.param(
        dict(fc(), arguments=1),
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response does not have the documented shape",
            "$.output[0].arguments",
            None,
            False,
        ),
        id="arguments",
    ),
    pytest.param(
        dict(CT, input=1),
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response does not have the documented shape",
            "$.output[0].input",
            None,
            False,
        ),
        id="input",
    ),
    pytest.param(
        dict(AP, operation="x"),
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response does not have the documented shape",
            "$.output[0].operation",
            None,
            False,
        ),
        id="operation",
    ),
    pytest.param(
        dict(AP, operation={"type": "update_file", "diff": 1}),
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response does not have the documented shape",
            "$.output[0].operation.diff",
            None,
            False,
        ),
        id="operation-diff",
    ),
    pytest.param(
        dict(RS, encrypted_content=1),
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response does not have the documented shape",
            "$.output[0].encrypted_content",
            None,
            False,
        ),
        id="encrypted-content",
    ),
    pytest.param(
        dict(RS, summary="x"),
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response does not have the documented shape",
            "$.output[0].summary",
            None,
            False,
        ),
        id="summary",
    ),
    pytest.param(
        dict(RS, summary=[1]),
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response does not have the documented shape",
            "$.output[0].summary[0]",
            None,
            False,
        ),
        id="summary-entry",
    ),
    pytest.param(
        dict(RS, summary=[{"type": "summary_text"}]),
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response does not have the documented shape",
            "$.output[0].summary[0].text",
            None,
            False,
        ),
        id="summary-without-text",
    ),
    pytest.param(
        dict(msg(), content="x"),
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response does not have the documented shape",
            "$.output[0].content",
            None,
            False,
        ),
        id="content",
    ),
    pytest.param(
        dict(msg(), content=[1]),
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response does not have the documented shape",
            "$.output[0].content[0]",
            None,
            False,
        ),
        id="content-entry",
    ),
    pytest.param(
        dict(msg(), content=[{"text": "Hi"}]),
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response does not have the documented shape",
            "$.output[0].content[0].type",
            None,
            False,
        ),
        id="content-without-type",
    ),
    pytest.param(
        dict(msg(), content=[{"type": "output_text", "text": 1}]),
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response does not have the documented shape",
            "$.output[0].content[0].text",
            None,
            False,
        ),
        id="content-text",
    ),
    pytest.param(
        dict(msg(), content=[{"type": "output_text"}]),
        (
            "stream",
            "MALFORMED_EVENT",
            "response: a output_text part needs its text",
            "$.output[0].content[0].text",
            None,
            False,
        ),
        id="content-without-text",
    ),
    pytest.param(
        dict(msg(), content=[{"type": "refusal", "refusal": 1}]),
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response does not have the documented shape",
            "$.output[0].content[0].refusal",
            None,
            False,
        ),
        id="content-refusal",
    ),
    pytest.param(
        dict(msg(), content=[{"type": "refusal", "text": "No"}]),
        (
            "stream",
            "MALFORMED_EVENT",
            "response: a refusal part needs its text",
            "$.output[0].content[0].refusal",
            None,
            False,
        ),
        id="content-without-refusal",
    ),
    pytest.param(
        dict(msg(), role="user"),
        (
            "stream",
            "MALFORMED_EVENT",
            'response: a message of role "user" is not the model\'s answer',
            "$.output[0].role",
            None,
            False,
        ),
        id="role",
    ),
]


@pytest.mark.parametrize(("item", "expected"), ITEMS)
def test_an_output_item_of_another_shape(impl: ModuleType, item: dict[str, Any], expected: Any) -> None:
    """The item in a body's output, then added to a stream: the same error at the item's path there."""
    layer, code, message, path, offset, retryable = expected
    assert body(impl, P, resp([item])) == expected
    added_what = "response.output_item.added"
    in_stream = message.replace(" response ", f" {added_what} ").replace("response: ", f"{added_what}: ")
    assert stream(impl, P, [H, added(item)]) == (
        layer,
        code,
        in_stream,
        path.replace("$.output[0]", "$.item"),
        offset,
        retryable,
    )


#: usage of another shape in a body
USAGES = [
    pytest.param(
        1,
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response does not have the documented shape",
            "$.usage",
            None,
            False,
        ),
        id="not-an-object",
    ),
    pytest.param(
        {"input_tokens": -1},
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response does not have the documented shape",
            "$.usage.input_tokens",
            None,
            False,
        ),
        id="input-tokens",
    ),
    pytest.param(
        {"output_tokens": "1"},
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response does not have the documented shape",
            "$.usage.output_tokens",
            None,
            False,
        ),
        id="output-tokens",
    ),
    pytest.param(
        {"input_tokens_details": "x"},
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response does not have the documented shape",
            "$.usage.input_tokens_details",
            None,
            False,
        ),
        id="input-details",
    ),
    pytest.param(
        {"output_tokens_details": "x"},
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response does not have the documented shape",
            "$.usage.output_tokens_details",
            None,
            False,
        ),
        id="output-details",
    ),
    pytest.param(
        {"input_tokens_details": {"cached_tokens": "1"}},
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response does not have the documented shape",
            "$.usage.input_tokens_details.cached_tokens",
            None,
            False,
        ),
        id="cached-tokens",
    ),
    pytest.param(
        {"output_tokens_details": {"reasoning_tokens": 1.5}},
        (
            "stream",
            "MALFORMED_EVENT",
            "openai-responses response does not have the documented shape",
            "$.usage.output_tokens_details.reasoning_tokens",
            None,
            False,
        ),
        id="reasoning-tokens",
    ),
    pytest.param(
        {"input_tokens_details": {}, "output_tokens_details": {}},
        {
            "finish": ("stop", "completed"),
            "id": "resp_1",
            "items": [("text", "msg_1", "Hi")],
            "model": "gpt-5",
            "unknown": {},
            "usage": (None, None, None, None),
        },
        id="empty-details",
    ),
]


@pytest.mark.parametrize(("usage", "expected"), USAGES)
def test_usage_of_another_shape(impl: ModuleType, usage: Any, expected: Any) -> None:
    assert body(impl, P, resp([msg("msg_1", ("output_text", "Hi"))], usage=usage)) == expected
