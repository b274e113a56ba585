"""The Chat Completions mapper's decisions written out on both backends (the
mutation run sees the pure backend alone): which filter annotation wins, what
follows a finish_reason, legacy function calls, the body's choices, and
every error with its message and path."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from decisions import Limits
from mapper_outcomes import body, events, stream

P = "openai-chat"
SHAPE = "openai-chat chat.completion.chunk does not have the documented shape"
BODY_SHAPE = "openai-chat chat.completion does not have the documented shape"


def chunk(
    delta: dict[str, Any] | None = None, finish: str | None = None, index: int = 0, **fields: Any
) -> dict[str, Any]:
    """A chunk of choice ``index``; ``fields`` go into the choice."""
    return {
        "id": "chatcmpl-1",
        "model": "gpt-4o",
        "choices": [{"index": index, "delta": delta or {}, "finish_reason": finish, **fields}],
    }


def message_body(message: dict[str, Any], finish: str | None = "stop", **top: Any) -> dict[str, Any]:
    """A ``chat.completion`` body of one choice."""
    choice: dict[str, Any] = {"index": 0, "message": {"role": "assistant", **message}}
    if finish is not None:
        choice["finish_reason"] = finish
    return {"id": "chatcmpl-1", "model": "gpt-4o", "choices": [choice], **top}


def prompt_filter(*results: dict[str, Any] | None) -> dict[str, Any]:
    """Azure's first chunk: one ``prompt_filter_results`` entry per prompt."""
    entries = []
    for i, found in enumerate(results):
        entry: dict[str, Any] = {"prompt_index": i}
        if found is not None:
            entry["content_filter_results"] = found
        entries.append(entry)
    return {"id": "", "model": "", "choices": [], "prompt_filter_results": entries}


HIT = {"hate": {"filtered": True, "severity": "high"}}
CLEAN = {"hate": {"filtered": False, "severity": "safe"}}
NOT_RUN = {"error": {"code": "content_filter_error", "message": "the filter timed out"}}
TEXT = [chunk({"role": "assistant", "content": "Hi"}), chunk(finish="stop"), "[DONE]"]
UNSCREENED = "the content filter did not run, so the output was not screened"


def done(text: str = "Hi", raw: str = "stop") -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "model": "gpt-4o",
        "finish": ("stop", raw),
        "items": [("text", "choice0.content", text)],
        "usage": None,
        "unknown": {},
    }


# ---------------------------------------------------------------- filter annotations


@pytest.mark.parametrize(
    ("results", "expected"),
    [
        # a prompt the filter did not screen refuses the response, wherever it stands among the prompts
        (
            [NOT_RUN, None],
            ("transport", "PROVIDER_ERROR", UNSCREENED, "$.prompt_filter_results[0].content_filter_results.error"),
        ),
        (
            [CLEAN, NOT_RUN],
            ("transport", "PROVIDER_ERROR", UNSCREENED, "$.prompt_filter_results[1].content_filter_results.error"),
        ),
        (
            [NOT_RUN, {"error": {"code": "other"}}],
            ("transport", "PROVIDER_ERROR", UNSCREENED, "$.prompt_filter_results[0].content_filter_results.error"),
        ),
        # a filter that withheld output wins over one that did not run, before or after it
        ([NOT_RUN, HIT], ("finish", "content_filter")),
        ([HIT, NOT_RUN], ("finish", "content_filter")),
        ([HIT, None], ("finish", "content_filter")),
        ([None, CLEAN], ("finish", "stop")),
    ],
)
def test_prompt_filter_results_of_several_prompts(impl: ModuleType, results: list[Any], expected: Any) -> None:
    got = stream(impl, P, [prompt_filter(*results), *TEXT])
    if expected[0] == "finish":
        # the response is whole, its finish the filter's (which `decide` refuses)
        assert got == {**done(), "finish": (expected[1], "stop")}
    else:
        assert got == (*expected, None, True)


@pytest.mark.parametrize(
    ("results", "path"),
    [
        ([HIT, HIT], "$.prompt_filter_results[0].content_filter_results.hate"),
        ([CLEAN, HIT], "$.prompt_filter_results[1].content_filter_results.hate"),
        ([HIT, NOT_RUN], "$.prompt_filter_results[0].content_filter_results.hate"),
        ([NOT_RUN, HIT], "$.prompt_filter_results[1].content_filter_results.hate"),
        ([HIT, None], "$.prompt_filter_results[0].content_filter_results.hate"),
    ],
)
def test_a_filter_hit_after_the_finish_names_the_first_hit(impl: ModuleType, results: list[Any], path: str) -> None:
    # annotations arriving after the finish_reason refuse the response at once, at the hit's path
    events = [chunk({"content": "Hi"}), chunk(finish="stop"), prompt_filter(*results), "[DONE]"]
    assert stream(impl, P, events) == (
        "stream",
        "CONTENT_FILTERED",
        "the content filter withheld output after the finish_reason",
        path,
        None,
        False,
    )


@pytest.mark.parametrize(
    ("results", "path"),
    [
        ({"error": "timed out"}, ".error"),
        ({"hate": 1}, ".hate"),
        ({"hate": {"filtered": True, "details": {}}}, ".hate.details"),
        ({"hate": {"details": [3]}}, ".hate.details[0]"),
        ({"custom_blocklists": [3]}, ".custom_blocklists[0]"),
        ({"hate": {"filtered": "yes"}}, ".hate.filtered"),
        ({"custom_blocklists": [{"filtered": 1}]}, ".custom_blocklists[0].filtered"),
    ],
)
def test_content_filter_results_of_another_shape(impl: ModuleType, results: dict[str, Any], path: str) -> None:
    events = [chunk({"content": "Hi"}), chunk(finish="stop", content_filter_results=results), "[DONE]"]
    at = "$.choices[0].content_filter_results" + path
    assert stream(impl, P, events) == ("stream", "MALFORMED_EVENT", SHAPE, at, None, False)
    value = message_body({"content": "Hi"})
    value["choices"][0]["content_filter_results"] = results
    found = body(impl, P, value)
    assert found == ("stream", "MALFORMED_EVENT", BODY_SHAPE, at, None, False)


# ---------------------------------------------------------------- after the finish_reason


@pytest.mark.parametrize(
    "delta",
    [
        {"content": "more"},
        {"content": [{"type": "text", "text": "more"}]},
        {"refusal": "no"},
        {"reasoning_content": "hm"},
        {"reasoning": "hm"},
        {"tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "f", "arguments": "{}"}}]},
        {"function_call": {"name": "f", "arguments": "{}"}},
    ],
)
def test_content_after_the_finish_reason(impl: ModuleType, delta: dict[str, Any]) -> None:
    events = [chunk({"content": "Hi"}), chunk(finish="stop"), chunk(delta)]
    assert stream(impl, P, events) == (
        "stream",
        "EVENT_AFTER_TERMINAL",
        "content arrived after the choice's finish_reason",
        None,
        None,
        False,
    )


@pytest.mark.parametrize("delta", [{}, {"role": "assistant"}, {"content": ""}, {"refusal": None, "tool_calls": []}])
def test_an_empty_delta_after_the_finish_reason_is_nothing(impl: ModuleType, delta: dict[str, Any]) -> None:
    events = [chunk({"content": "Hi"}), chunk(finish="stop"), chunk(delta), "[DONE]"]
    assert stream(impl, P, events) == done()


# ---------------------------------------------------------------- legacy function calls


def test_a_legacy_function_call_keeps_its_name(impl: ModuleType) -> None:
    events = [
        chunk({"function_call": {"name": "get_weather", "arguments": '{"city": '}}),
        chunk({"function_call": {"name": "get_weather", "arguments": '"Oslo"}'}}),
        chunk({"function_call": {"arguments": ""}}),
        chunk(finish="function_call"),
        "[DONE]",
    ]
    assert stream(impl, P, events) == {
        "id": "chatcmpl-1",
        "model": "gpt-4o",
        "finish": ("tool_calls", "function_call"),
        "items": [
            (
                "call",
                "choice0.tool_calls[0]",
                "chatcmpl-1.call_0",
                "get_weather",
                '{"city": "Oslo"}',
                True,
                True,
                "function",
            )
        ],
        "usage": None,
        "unknown": {},
    }


def test_a_legacy_function_call_renamed(impl: ModuleType) -> None:
    events = [
        chunk({"function_call": {"name": "get_weather", "arguments": "{"}}),
        chunk({"function_call": {"name": "delete_all", "arguments": "}"}}),
        chunk(finish="function_call"),
    ]
    assert stream(impl, P, events) == (
        "stream",
        "CALL_NAME_CHANGED",
        'function call chatcmpl-1.call_0 was named "get_weather", then "delete_all"',
        None,
        None,
        False,
    )


def test_a_legacy_function_call_without_a_name(impl: ModuleType) -> None:
    events = [chunk({"function_call": {"arguments": "{}"}}), chunk(finish="function_call")]
    assert stream(impl, P, events) == (
        "stream",
        "MALFORMED_EVENT",
        "chat.completion.chunk: a tool call starts without a function name",
        "$.choices[0].delta.function_call.name",
        None,
        False,
    )


# ---------------------------------------------------------------- choices


def test_a_chunk_with_one_choice_twice(impl: ModuleType) -> None:
    twice = chunk({"content": "a"})
    twice["choices"] *= 2
    assert stream(impl, P, [twice]) == (
        "stream",
        "MULTIPLE_CHOICES",
        "the chunk has choice 0 more than once",
        None,
        None,
        False,
    )


def _choices(*choices: dict[str, Any]) -> dict[str, Any]:
    return {"id": "chatcmpl-1", "model": "gpt-4o", "choices": list(choices)}


def _choice(text: str, **fields: Any) -> dict[str, Any]:
    return {"message": {"role": "assistant", "content": text}, "finish_reason": "stop", **fields}


def test_body_choices_without_an_index_are_numbered_by_position(impl: ModuleType) -> None:
    found = body(impl, P, _choices(_choice("first"), _choice("second")), choice=1)
    assert found == {**done("second"), "items": [("text", "choice1.content", "second")]}
    assert body(impl, P, _choices(_choice("first"), _choice("second"))) == (
        "stream",
        "MULTIPLE_CHOICES",
        "the body has 2 choices; pass choice= to select one",
        None,
        None,
        False,
    )


def test_body_choices_in_another_order(impl: ModuleType) -> None:
    found = body(impl, P, _choices(_choice("b", index=1), _choice("a", index=0)), choice=0)
    assert found == {**done("a")}


def test_a_body_with_the_selected_choice_twice(impl: ModuleType) -> None:
    found = body(impl, P, _choices(_choice("a", index=0), _choice("b", index=1), _choice("c", index=0)), choice=0)
    assert found == ("stream", "MULTIPLE_CHOICES", "the body has choice 0 more than once", None, None, False)
    # another choice given twice is no matter for the one selected
    found = body(impl, P, _choices(_choice("a", index=1), _choice("b", index=0), _choice("c", index=1)), choice=0)
    assert found == done("b")


def test_a_body_without_the_selected_choice(impl: ModuleType) -> None:
    found = body(impl, P, _choices(_choice("a", index=0)), choice=1)
    assert found == ("stream", "MULTIPLE_CHOICES", "choice 1 is not among the choices [0]", None, None, False)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"choices": []}, ("MALFORMED_EVENT", "chat.completion: the body has no choices", "$.choices")),
        ({"choices": 3}, ("MALFORMED_EVENT", BODY_SHAPE, "$.choices")),
        ({"choices": [3]}, ("MALFORMED_EVENT", BODY_SHAPE, "$.choices[0]")),
        (
            message_body({"content": "Hi"}, finish=None),
            (
                "MALFORMED_EVENT",
                "chat.completion: the selected choice has no finish_reason",
                "$.choices[0].finish_reason",
            ),
        ),
        (
            message_body({"tool_calls": [{"id": "call_1", "function": {"arguments": "{}"}}]}, "tool_calls"),
            (
                "MALFORMED_EVENT",
                "chat.completion.chunk: a tool call starts without a function name",
                "$.choices[0].message.tool_calls[0].function.name",
            ),
        ),
        (
            message_body({"function_call": {"arguments": "{}"}}, "function_call"),
            (
                "MALFORMED_EVENT",
                "chat.completion.chunk: a tool call starts without a function name",
                "$.choices[0].message.function_call.name",
            ),
        ),
    ],
)
def test_body_errors(impl: ModuleType, value: dict[str, Any], expected: tuple[str, str, str]) -> None:
    assert body(impl, P, value) == ("stream", *expected, None, False)


def test_a_body_over_the_event_limit(impl: ModuleType) -> None:
    # started, item started, text, item ended, finished: five events
    one_text = message_body({"content": "Hi"})
    assert body(impl, P, one_text, limits=Limits(max_stream_events=5)) == done()
    assert body(impl, P, one_text, limits=Limits(max_stream_events=4)) == (
        "stream",
        "TOO_MANY_EVENTS",
        "the response has more events than max_stream_events (4)",
        None,
        None,
        False,
    )


def test_a_second_finish_reason(impl: ModuleType) -> None:
    events = [chunk({"content": "Hi"}), chunk(finish="length"), chunk(finish="stop")]
    assert stream(impl, P, events) == (
        "stream",
        "EVENT_AFTER_TERMINAL",
        "a second finish_reason for the same choice",
        None,
        None,
        False,
    )


# ---------------------------------------------------------------- chunks of their own kind


def test_a_chunk_of_prompt_filter_results_alone(impl: ModuleType) -> None:
    # Azure's first chunk may carry no choices member at all
    first = {"id": "", "model": "", "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": CLEAN}]}
    assert stream(impl, P, [first, *TEXT]) == done()


def test_a_chunk_of_no_known_kind(impl: ModuleType) -> None:
    assert stream(impl, P, [{"object": "error", "message": "busy"}]) == (
        "stream",
        "MALFORMED_EVENT",
        "chat.completion.chunk: the chunk has no choices, usage or error",
        "$.choices",
        None,
        False,
    )


@pytest.mark.parametrize(
    ("first", "second", "selected", "expected"),
    [
        # a choice without an index is choice 0: beside an index 0 it is the same choice twice
        ({}, {"index": 0}, None, ("MULTIPLE_CHOICES", "the chunk has choice 0 more than once")),
        ({"index": 0}, {}, 1, ("MULTIPLE_CHOICES", "the chunk has choice 0 more than once")),
        # else the selected choice is read wherever it stands: its text is "a" first, "b" second
        ({}, {"index": 1}, 1, "b"),
        ({"index": 0}, {"index": 1}, 1, "b"),
        ({"index": 1}, {"index": 0}, 0, "b"),
        ({}, {"index": 1}, 0, "a"),
    ],
)
def test_two_choices_in_a_chunk(
    impl: ModuleType, first: dict[str, Any], second: dict[str, Any], selected: int | None, expected: Any
) -> None:
    def both(finish: str | None, a: str, b: str) -> dict[str, Any]:
        return {
            "id": "chatcmpl-1",
            "model": "gpt-4o",
            "choices": [
                {**first, "delta": {"content": a}, "finish_reason": finish},
                {**second, "delta": {"content": b}, "finish_reason": finish},
            ],
        }

    options = {} if selected is None else {"choice": selected}
    got = stream(impl, P, [both(None, "a", "b"), both("stop", "", ""), "[DONE]"], **options)
    if type(expected) is tuple:
        assert got == ("stream", *expected, None, None, False)
    else:
        assert got == {**done(expected), "items": [("text", f"choice{selected}.content", expected)]}


# ---------------------------------------------------------------- calls


def tool_call(index: int, call_id: str | None, name: str | None, arguments: str) -> dict[str, Any]:
    fn: dict[str, Any] = {"arguments": arguments}
    if name is not None:
        fn["name"] = name
    out: dict[str, Any] = {"index": index, "type": "function", "function": fn}
    if call_id is not None:
        out["id"] = call_id
    return out


def test_three_calls_get_three_items(impl: ModuleType) -> None:
    events = [chunk({"tool_calls": [tool_call(i, f"call_{i}", "read", "")]}) for i in range(3)]
    events += [chunk({"tool_calls": [tool_call(i, None, None, "{}")]}) for i in range(3)]
    events += [chunk(finish="tool_calls"), "[DONE]"]
    assert stream(impl, P, events)["items"] == [
        ("call", f"choice0.tool_calls[{i}]", f"call_{i}", "read", "{}", True, False, "function") for i in range(3)
    ]


def test_a_call_without_a_name(impl: ModuleType) -> None:
    events = [chunk({"tool_calls": [tool_call(0, "call_1", None, "{}")]}), chunk(finish="tool_calls")]
    assert stream(impl, P, events) == (
        "stream",
        "MALFORMED_EVENT",
        "chat.completion.chunk: a tool call starts without a function name",
        "$.choices[0].delta.tool_calls[0].function.name",
        None,
        False,
    )


@pytest.mark.parametrize("again", ["call_1", None], ids=["with-its-id", "without-its-id"])
def test_a_call_renamed(impl: ModuleType, again: str | None) -> None:
    # a continuation may name the call's index alone: another name there is still a renaming
    events = [
        chunk({"tool_calls": [tool_call(0, "call_1", "read", "{")]}),
        chunk({"tool_calls": [tool_call(0, again, "delete", "}")]}),
        chunk(finish="tool_calls"),
    ]
    assert stream(impl, P, events) == (
        "stream",
        "CALL_NAME_CHANGED",
        'tool call call_1 was named "read", then "delete"',
        None,
        None,
        False,
    )


def test_text_after_done(impl: ModuleType) -> None:
    # deltas of one shape are read by their text alone: one after [DONE] is still refused
    events = [chunk({"content": t}) for t in ("a", "b", "c")] + ["[DONE]", chunk({"content": "d"})]
    assert stream(impl, P, events) == (
        "stream",
        "EVENT_AFTER_TERMINAL",
        "an event arrived after data: [DONE]",
        None,
        None,
        False,
    )


# ---------------------------------------------------------------- usage


@pytest.mark.parametrize(
    ("usage", "path"),
    [
        (3, "$.usage"),
        ({"prompt_tokens": -1}, "$.usage.prompt_tokens"),
        ({"completion_tokens": "3"}, "$.usage.completion_tokens"),
        ({"prompt_tokens_details": []}, "$.usage.prompt_tokens_details"),
        ({"completion_tokens_details": 1}, "$.usage.completion_tokens_details"),
        ({"prompt_tokens_details": {"cached_tokens": 1.5}}, "$.usage.prompt_tokens_details.cached_tokens"),
        ({"completion_tokens_details": {"reasoning_tokens": -2}}, "$.usage.completion_tokens_details.reasoning_tokens"),
    ],
)
def test_usage_of_another_shape(impl: ModuleType, usage: Any, path: str) -> None:
    events = [chunk({"content": "Hi"}), chunk(finish="stop"), {"id": "chatcmpl-1", "choices": [], "usage": usage}]
    assert stream(impl, P, events) == ("stream", "MALFORMED_EVENT", SHAPE, path, None, False)
    assert body(impl, P, message_body({"content": "Hi"}, usage=usage)) == (
        "stream",
        "MALFORMED_EVENT",
        BODY_SHAPE,
        path,
        None,
        False,
    )


def test_usage_in_full(impl: ModuleType) -> None:
    usage = {
        "prompt_tokens": 10,
        "completion_tokens": 2**64 - 1,
        "prompt_tokens_details": {"cached_tokens": 4},
        "completion_tokens_details": {"reasoning_tokens": 5},
    }
    expected = {**done(), "usage": (10, 2**64 - 1, 4, 5)}
    assert body(impl, P, message_body({"content": "Hi"}, usage=usage)) == expected
    events = [chunk({"content": "Hi"}), chunk(finish="stop"), {"id": "chatcmpl-1", "choices": [], "usage": usage}]
    assert stream(impl, P, events) == expected


# ---------------------------------------------------------------- the common body, read at once


def _repeated(finish: str, message: str, usage: str = "") -> str:
    """A body whose choice gives ``finish_reason`` twice: ``length``, then ``finish``."""
    return (
        '{"id": "chatcmpl-1", "model": "gpt-4o", "choices": [{"index": 0, "message": '
        + message
        + ', "finish_reason": "length", "finish_reason": "'
        + finish
        + '"}]'
        + usage
        + "}"
    )


@pytest.mark.parametrize(
    "text",
    [
        # a repeated key is refused, never read as its last value: a call without arguments,
        _repeated(
            "tool_calls",
            '{"tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "f", "arguments": ""}}]}',
        ),
        _repeated("tool_calls", '{"tool_calls": [{"id": "call_1", "function": {"name": "f"}}]}'),
        # a body without usage, or with usage whose details are empty
        _repeated("stop", '{"content": "Hi"}'),
        _repeated("stop", '{"content": "Hi"}', ', "usage": {"prompt_tokens_details": {}}'),
    ],
)
def test_a_repeated_finish_reason_in_a_body(impl: ModuleType, text: str) -> None:
    assert body(impl, P, text) == (
        "stream",
        "MALFORMED_EVENT",
        "event data has a repeated key",
        "$.choices[0].finish_reason",
        None,
        False,
    )


def _call_body(**call: Any) -> dict[str, Any]:
    fields = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}, **call}
    return message_body({"tool_calls": [fields]}, "tool_calls")


@pytest.mark.parametrize(
    ("value", "path", "options"),
    [
        (_call_body(index="0"), "$.choices[0].message.tool_calls[0].index", {}),
        (_call_body(index=1.0), "$.choices[0].message.tool_calls[0].index", {}),
        (_call_body(id=5), "$.choices[0].message.tool_calls[0].id", {}),
        ({**_call_body(), "model": 5}, "$.model", {}),
        ({**_call_body(), "id": ["chatcmpl-1"]}, "$.id", {}),
        (
            {**_call_body(), "choices": [{**_call_body()["choices"][0], "index": 0.0}]},
            "$.choices[0].index",
            {},
        ),
        (
            {**_call_body(), "choices": [{**_call_body()["choices"][0], "index": True}]},
            "$.choices[0].index",
            {"choice": 1},
        ),
    ],
)
def test_body_fields_of_another_type(impl: ModuleType, value: Any, path: str, options: dict[str, Any]) -> None:
    assert body(impl, P, value, **options) == ("stream", "MALFORMED_EVENT", BODY_SHAPE, path, None, False)


def test_a_body_choice_without_an_index_is_choice_0(impl: ModuleType) -> None:
    value = message_body({"content": "Hi"})
    del value["choices"][0]["index"]
    assert body(impl, P, value) == done()
    assert body(impl, P, value, choice=1) == (
        "stream",
        "MULTIPLE_CHOICES",
        "choice 1 is not among the choices [0]",
        None,
        None,
        False,
    )


@pytest.mark.parametrize(
    ("message", "finish", "events"),
    [
        # started, item started, text, item ended, finished
        ({"content": "Hi"}, "stop", 5),
        # started, call started, arguments, call ended, finished
        ({"tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": "{}"}}]}, "tool_calls", 5),
        # a call without arguments has no arguments event
        ({"tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": ""}}]}, "tool_calls", 4),
        # two items, neither ended by a length finish
        (
            {"content": "Hi", "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": "{"}}]},
            "length",
            6,
        ),
    ],
)
def test_a_body_at_its_event_limit(impl: ModuleType, message: dict[str, Any], finish: str, events: int) -> None:
    value = message_body(message, finish)
    for usage in (None, {"prompt_tokens": 1}):
        value["usage"] = usage
        count = events + (usage is not None)
        assert type(body(impl, P, value, limits=Limits(max_stream_events=count))) is dict
        assert body(impl, P, value, limits=Limits(max_stream_events=count - 1)) == (
            "stream",
            "TOO_MANY_EVENTS",
            f"the response has more events than max_stream_events ({count - 1})",
            None,
            None,
            False,
        )


# ---------------------------------------------------------------- the common chunks, read at once


def unnumbered(delta: dict[str, Any] | None = None, finish: str | None = None) -> dict[str, Any]:
    """A chunk whose one choice has no ``index`` (choice 0, as some servers send it)."""
    return {"id": "chatcmpl-1", "model": "gpt-4o", "choices": [{"delta": delta or {}, "finish_reason": finish}]}


def test_chunks_without_an_index_are_choice_0(impl: ModuleType) -> None:
    sent = [unnumbered({"content": "a"}), unnumbered({"content": "b"}), unnumbered(finish="stop"), "[DONE]"]
    assert stream(impl, P, sent) == done("ab")
    # choice 1 selected: choice 0's chunks are passed over, and choice 1 never finishes
    assert stream(impl, P, sent, choice=1) == (
        "stream",
        "NO_TERMINAL_EVENT",
        "the stream ended without a terminal event",
        None,
        None,
        True,
    )


@pytest.mark.parametrize(("index", "options"), [(0.0, {}), (True, {"choice": 1}), ("0", {})])
def test_a_chunk_index_of_another_type(impl: ModuleType, index: Any, options: dict[str, Any]) -> None:
    odd = {"id": "chatcmpl-1", "choices": [{"index": index, "delta": {"content": "b"}, "finish_reason": None}]}
    assert stream(impl, P, [chunk({"content": "a"}), odd], **options) == (
        "stream",
        "MALFORMED_EVENT",
        SHAPE,
        "$.choices[0].index",
        None,
        False,
    )


def test_another_choice_without_choice_given(impl: ModuleType) -> None:
    assert stream(impl, P, [chunk({"content": "a"}), chunk({"content": "b"}, index=1)]) == (
        "stream",
        "MULTIPLE_CHOICES",
        "the stream has choice 1, where only choice 0 is read without choice=; pass choice= to select one",
        None,
        None,
        False,
    )


def test_a_prompt_filter_hit_beside_text(impl: ModuleType) -> None:
    flagged = {**chunk({"content": "b"}), "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": HIT}]}
    sent = [chunk({"content": "a"}), flagged, chunk(finish="stop"), "[DONE]"]
    assert stream(impl, P, sent) == {**done("ab"), "finish": ("content_filter", "stop")}


# ---------------------------------------------------------------- every field's shape


def _top_chunk(choice: Any = None, **top: Any) -> dict[str, Any]:
    return {"id": "chatcmpl-1", "model": "gpt-4o", "choices": [] if choice is None else [choice], **top}


@pytest.mark.parametrize(
    ("sent", "path"),
    [
        ([1], "$"),
        (_top_chunk(id=1), "$.id"),
        (_top_chunk(model=1), "$.model"),
        ({"id": "chatcmpl-1", "choices": {}}, "$.choices"),
        ({"id": "chatcmpl-1", "error": 3}, "$.error"),
        ({"id": "chatcmpl-1", "error": {"code": 1.5}}, "$.error.code"),
        ({"id": "chatcmpl-1", "error": {"message": 1}}, "$.error.message"),
        ({"id": "chatcmpl-1", "error": {"type": 1}}, "$.error.type"),
        ({"id": "chatcmpl-1", "error": "boom", "error_type": 1}, "$.error_type"),
        (_top_chunk(prompt_filter_results={}), "$.prompt_filter_results"),
        (_top_chunk(prompt_filter_results=[3]), "$.prompt_filter_results[0]"),
        (
            _top_chunk(prompt_filter_results=[{"content_filter_results": 3}]),
            "$.prompt_filter_results[0].content_filter_results",
        ),
        (_top_chunk(3), "$.choices[0]"),
        (_top_chunk({"index": -1}), "$.choices[0].index"),
        (_top_chunk({"index": 0, "delta": 3}), "$.choices[0].delta"),
        (_top_chunk({"index": 0, "delta": {}, "finish_reason": 3}), "$.choices[0].finish_reason"),
        (_top_chunk({"index": 0, "delta": {}, "content_filter_results": 3}), "$.choices[0].content_filter_results"),
    ],
)
def test_chunks_of_another_shape(impl: ModuleType, sent: Any, path: str) -> None:
    assert stream(impl, P, [sent]) == ("stream", "MALFORMED_EVENT", SHAPE, path, None, False)


THINKING = {"type": "thinking", "thinking": [{"text": "hm"}]}


@pytest.mark.parametrize(
    ("delta", "path"),
    [
        ({"content": 3}, ".content"),
        ({"content": [3]}, ".content[0]"),
        ({"content": [{"text": "x"}]}, ".content[0].type"),
        ({"content": [{"type": "text", "text": 3}]}, ".content[0].text"),
        ({"content": [{"type": "text"}]}, ".content[0].text"),
        ({"content": [{"type": "thinking", "thinking": 3}]}, ".content[0].thinking"),
        ({"content": [THINKING, {"type": "thinking", "thinking": [3]}]}, ".content[1].thinking[0]"),
        ({"content": [{"type": "thinking", "thinking": [{"text": "a"}, {"text": 3}]}]}, ".content[0].thinking[1].text"),
        ({"refusal": 3}, ".refusal"),
        ({"reasoning_content": 3}, ".reasoning_content"),
        ({"reasoning": 3}, ".reasoning"),
        ({"tool_calls": {}}, ".tool_calls"),
        ({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "f"}}, 3]}, ".tool_calls[1]"),
        ({"tool_calls": [{"index": "0"}]}, ".tool_calls[0].index"),
        ({"tool_calls": [{"index": 0, "function": 3}]}, ".tool_calls[0].function"),
        ({"tool_calls": [{"index": 0, "id": 3}]}, ".tool_calls[0].id"),
        ({"tool_calls": [{"index": 0, "type": 3}]}, ".tool_calls[0].type"),
        ({"tool_calls": [{"index": 0, "function": {"name": 3}}]}, ".tool_calls[0].function.name"),
        (
            {"tool_calls": [{"index": 0, "function": {"name": "f", "arguments": {}}}]},
            ".tool_calls[0].function.arguments",
        ),
        ({"function_call": 3}, ".function_call"),
        ({"function_call": {"name": 3}}, ".function_call.name"),
        ({"function_call": {"name": "f", "arguments": 3}}, ".function_call.arguments"),
    ],
)
def test_deltas_and_messages_of_another_shape(impl: ModuleType, delta: dict[str, Any], path: str) -> None:
    sent = _top_chunk({"index": 0, "delta": delta, "finish_reason": None})
    assert stream(impl, P, [sent]) == ("stream", "MALFORMED_EVENT", SHAPE, "$.choices[0].delta" + path, None, False)
    found = body(impl, P, message_body(delta, "stop"))
    assert found == ("stream", "MALFORMED_EVENT", BODY_SHAPE, "$.choices[0].message" + path, None, False)


@pytest.mark.parametrize(
    ("delta", "expected"),
    [
        (
            {"content": [THINKING, {"type": "image_url"}]},
            ("MALFORMED_EVENT", 'content part type "image_url" is not known', ".content[1].type"),
        ),
        (
            {"reasoning": "a", "reasoning_content": "b"},
            ("MALFORMED_EVENT", "reasoning and reasoning_content disagree", ".reasoning"),
        ),
        (
            {
                "tool_calls": [
                    {"index": 0, "id": "c", "type": "function", "function": {"name": "f"}},
                    {"type": "custom"},
                ]
            },
            (
                "UNSUPPORTED_ITEM",
                'a tool call of type "custom" is not one the package can represent; '
                "it may be a call the host must handle, so nothing in the response is decided",
                ".tool_calls[1]",
            ),
        ),
        (
            {"content": "Hi", "audio": {"id": "audio_1"}},
            (
                "UNSUPPORTED_ITEM",
                "an audio answer is not one the package can represent; "
                "the answer would be cut, so nothing in the response is decided",
                ".audio",
            ),
        ),
    ],
)
def test_deltas_and_messages_refused(impl: ModuleType, delta: dict[str, Any], expected: tuple[str, str, str]) -> None:
    code, text, path = expected
    sent = _top_chunk({"index": 0, "delta": delta, "finish_reason": None})
    assert stream(impl, P, [sent]) == (
        "stream",
        code,
        f"chat.completion.chunk: {text}",
        "$.choices[0].delta" + path,
        None,
        False,
    )
    assert body(impl, P, message_body(delta, "stop")) == (
        "stream",
        code,
        f"chat.completion: {text}",
        "$.choices[0].message" + path,
        None,
        False,
    )


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        ({"error": "boom", "error_type": "overloaded"}, ("error: boom", True)),
        ({"error": "boom", "error_type": "validation"}, ("error: boom", False)),
        ({"error": "boom"}, ("error: boom", False)),
        ({"error": {"code": 429, "message": "slow down"}}, ("429: slow down", True)),
        ({"error": {"code": "invalid_prompt", "message": "no", "type": "server_error"}}, ("invalid_prompt: no", True)),
        ({"error": {"message": "no", "type": "invalid_request_error"}}, ("invalid_request_error: no", False)),
        ({"error": {"message": "no"}}, ("error: no", False)),
    ],
)
def test_errors_in_a_stream_and_a_body(impl: ModuleType, error: dict[str, Any], expected: tuple[str, bool]) -> None:
    text, retryable = expected
    failed = ("transport", "PROVIDER_ERROR", text, None, None, retryable)
    assert stream(impl, P, [chunk({"content": "Hi"}), {"id": "chatcmpl-1", **error}]) == failed
    assert body(impl, P, {"id": "chatcmpl-1", "model": "gpt-4o", **error}) == failed


@pytest.mark.parametrize(
    ("sent", "path"),
    [
        # a repeated key is refused in a first chunk and in a finish chunk whose delta is null
        (
            [
                '{"id":"chatcmpl-1","model":"gpt-4o","model":"gpt-4o",'
                '"choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}]}',
                chunk({"content": "Hi"}),
                chunk(finish="stop"),
                "[DONE]",
            ],
            "$.model",
        ),
        (
            [
                chunk({"content": "Hi"}),
                '{"id":"chatcmpl-1","id":"chatcmpl-1","choices":[{"index":0,"delta":null,"finish_reason":"stop"}]}',
                "[DONE]",
            ],
            "$.id",
        ),
    ],
)
def test_a_repeated_key_in_a_chunk(impl: ModuleType, sent: list[Any], path: str) -> None:
    assert stream(impl, P, sent) == ("stream", "MALFORMED_EVENT", "event data has a repeated key", path, None, False)


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (
            {"index": 0, "id": "call_1", "type": "custom", "function": {"name": "f", "arguments": "{}"}},
            (
                "UNSUPPORTED_ITEM",
                'chat.completion.chunk: a tool call of type "custom" is not one the package can represent; '
                "it may be a call the host must handle, so nothing in the response is decided",
            ),
        ),
        (3, ("MALFORMED_EVENT", SHAPE)),
    ],
)
def test_a_chunk_of_one_call_of_another_kind(impl: ModuleType, call: Any, expected: tuple[str, str]) -> None:
    sent = [chunk({"content": "Hi"}), chunk({"tool_calls": [call]})]
    assert stream(impl, P, sent) == ("stream", *expected, "$.choices[0].delta.tool_calls[0]", None, False)


def test_empty_text_chunks_add_no_events(impl: ModuleType) -> None:
    # five chunks, five events (started, item started, text, item ended, finished): the empty ones add none
    sent = [chunk({"content": "Hi"}), *[chunk({"content": ""})] * 3, chunk(finish="stop")]
    assert stream(impl, P, sent, limits=Limits(max_stream_events=5)) == done()


def test_a_string_error_names_its_type(impl: ModuleType) -> None:
    sent = [chunk({"content": "Hi"}), {"id": "chatcmpl-1", "error": "boom", "error_type": "overloaded"}]
    assert events(impl, P, sent)[-1] == {
        "type": "response_failed",
        "code": "error",
        "message": "boom",
        "retryable": True,
        "error_type": "overloaded",
    }


def test_prompt_filter_results_of_another_shape(impl: ModuleType) -> None:
    assert stream(impl, P, [prompt_filter({"hate": 1}), chunk({"content": "Hi"})]) == (
        "stream",
        "MALFORMED_EVENT",
        SHAPE,
        "$.prompt_filter_results[0].content_filter_results.hate",
        None,
        False,
    )


def test_content_parts_after_an_empty_one(impl: ModuleType) -> None:
    # an empty part adds nothing, and the parts after it are read
    parts = [
        {"type": "text", "text": ""},
        {"type": "thinking", "thinking": [{"text": ""}, {"text": "hm"}]},
        {"type": "text", "text": "Hi"},
    ]
    assert stream(impl, P, [chunk({"content": parts}), chunk(finish="stop")]) == {
        **done(),
        "items": [("reasoning", "choice0.reasoning", "hm", None), ("text", "choice0.content", "Hi")],
    }


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "chat.completion.chunk: a tool call starts without a function name"),
        (5, SHAPE),
    ],
)
def test_a_call_without_an_id_must_have_a_name(impl: ModuleType, name: Any, message: str) -> None:
    first = {"index": 0, "type": "function", "function": {"name": name, "arguments": "{}"}}
    sent = [chunk({"role": "assistant"}), chunk({"tool_calls": [first]}), chunk(finish="tool_calls")]
    assert stream(impl, P, sent) == (
        "stream",
        "MALFORMED_EVENT",
        message,
        "$.choices[0].delta.tool_calls[0].function.name",
        None,
        False,
    )
