"""The Gemini mapper's decisions written out on both backends (the mutation
run sees the pure backend alone): the error object in full, and every error
with its message and path."""

from __future__ import annotations

import copy
from types import ModuleType
from typing import Any

import pytest

from decisions import Limits
from mapper_outcomes import body, events, stream

P = "gemini"
HI = {"candidates": [{"content": {"role": "model", "parts": [{"text": "Hi"}]}}]}


@pytest.mark.parametrize(
    ("error", "code", "message", "retryable", "status"),
    [
        (
            {"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED"},
            "RESOURCE_EXHAUSTED",
            "quota",
            True,
            "RESOURCE_EXHAUSTED",
        ),
        (
            {"code": 400, "message": "bad", "status": "INVALID_ARGUMENT"},
            "INVALID_ARGUMENT",
            "bad",
            False,
            "INVALID_ARGUMENT",
        ),
        # without a status the code names the failure, and says whether it is retryable
        ({"code": 503, "message": "busy"}, "503", "busy", True, None),
        ({"code": 500}, "500", "", True, None),
        ({"code": 0}, "0", "", False, None),
        ({"code": 2**64 - 1}, "18446744073709551615", "", False, None),
        ({"code": 500, "status": "INTERNAL"}, "INTERNAL", "", True, "INTERNAL"),
        ({"code": 400, "status": "UNAVAILABLE"}, "UNAVAILABLE", "", True, "UNAVAILABLE"),
        ({"code": 400, "status": ""}, "400", "", False, ""),
        ({"message": "gone"}, "UNKNOWN", "gone", False, None),
    ],
)
def test_an_error_in_full(
    impl: ModuleType, error: dict[str, Any], code: str, message: str, retryable: bool, status: str | None
) -> None:
    shown = f"{code}: {message}" if message else code
    assert body(impl, P, {"error": error}) == ("transport", "PROVIDER_ERROR", shown, None, None, retryable)
    assert events(impl, P, [HI, {"error": error}])[-1] == {
        "type": "response_failed",
        "code": code,
        "message": message,
        "retryable": retryable,
        "error_type": status,
    }


@pytest.mark.parametrize(
    ("error", "path"),
    [
        ({"code": -1}, "$.error.code"),
        ({"code": "429"}, "$.error.code"),
        ({"code": 429.0}, "$.error.code"),
        ({"status": 1}, "$.error.status"),
        ({"message": 1}, "$.error.message"),
    ],
)
def test_an_error_of_another_shape(impl: ModuleType, error: dict[str, Any], path: str) -> None:
    assert body(impl, P, {"error": error}) == (
        "stream",
        "MALFORMED_EVENT",
        "gemini error does not have the documented shape",
        path,
        None,
        False,
    )


# ---------------------------------------------------------------- streamed arguments


def chunk(parts: list[dict[str, Any]], finish: str | None = None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}}
    if finish is not None:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], "responseId": "r1", "modelVersion": "gemini-2.5-pro"}


def streamed(*entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A call named ``f`` whose arguments come as ``partialArgs``, one chunk per list of entries."""
    out = [chunk([{"functionCall": {"name": "f", "willContinue": True}}])]
    for i, given in enumerate(entries):
        call: dict[str, Any] = {"partialArgs": given}
        if i < len(entries) - 1:
            call["willContinue"] = True
        out.append(chunk([{"functionCall": call}]))
    return [*out, chunk([], "STOP")]


def entry(path: str, **value: Any) -> dict[str, Any]:
    return {"jsonPath": path, **(value or {"stringValue": "x"})}


@pytest.mark.parametrize(
    ("entries", "arguments"),
    [
        ([[entry("$.a")]], '{"a":"x"}'),
        ([[entry("$.a.b"), entry("$.a.c", numberValue=2)]], '{"a":{"b":"x","c":2}}'),
        ([[entry("$['a b']"), entry('$["c.d"]', boolValue=True)]], '{"a b":"x","c.d":true}'),
        (
            [[entry("$.a[0]"), entry("$.a[1]", nullValue=None), entry("$.a[2].b", numberValue=1.5)]],
            '{"a":["x",null,{"b":1.5}]}',
        ),
        ([[entry("$.a[0][0]"), entry("$.a[0][1]")]], '{"a":[["x","x"]]}'),
        ([[entry("$.a", nullValue="NULL_VALUE")]], '{"a":null}'),
        # 128 levels are the most a path may have
        ([[entry("$" + ".a" * 128)]], '{"a":' * 128 + '"x"' + "}" * 128),
        # a string whose entry says willContinue goes on in the next entry of the same path
        (
            [
                [{"jsonPath": "$.a", "stringValue": "he", "willContinue": True}],
                [{"jsonPath": "$.a", "stringValue": "llo"}],
            ],
            '{"a":"hello"}',
        ),
        (
            [
                [{"jsonPath": "$.a[0]", "stringValue": "he", "willContinue": True}],
                [{"jsonPath": "$.a[0]", "stringValue": "llo"}, entry("$.b")],
            ],
            '{"a":["hello"],"b":"x"}',
        ),
    ],
)
def test_streamed_arguments_assembled(impl: ModuleType, entries: list[Any], arguments: str) -> None:
    found = stream(impl, P, streamed(*entries))
    assert found["items"] == [("call", "item_0", "r1:call_0", "f", arguments, True, True, "function")]
    assert found["finish"] == ("tool_calls", "STOP")


UNSUPPORTED = "gemini partialArgs jsonPath {} is not a supported path"
CONFLICT = "gemini partialArgs assign a path that conflicts with an earlier one"
ENTRY = "gemini partialArgs entry does not have the documented shape"


@pytest.mark.parametrize(
    ("entries", "message", "at"),
    [
        ([[entry("a")]], UNSUPPORTED.format("a"), "[0].jsonPath"),
        ([[entry("$")]], UNSUPPORTED.format("$"), "[0].jsonPath"),
        ([[entry("$.")]], UNSUPPORTED.format("$."), "[0].jsonPath"),
        ([[entry("$..a")]], UNSUPPORTED.format("$..a"), "[0].jsonPath"),
        ([[entry("$.a[")]], UNSUPPORTED.format("$.a["), "[0].jsonPath"),
        ([[entry("$.a[x]")]], UNSUPPORTED.format("$.a[x]"), "[0].jsonPath"),
        ([[entry("$.a[]")]], UNSUPPORTED.format("$.a[]"), "[0].jsonPath"),
        ([[entry("$.a[1234567890]")]], UNSUPPORTED.format("$.a[1234567890]"), "[0].jsonPath"),
        ([[entry("$[0]")]], UNSUPPORTED.format("$[0]"), "[0].jsonPath"),
        ([[entry("$['a")]], UNSUPPORTED.format("$['a"), "[0].jsonPath"),
        ([[entry("$a")]], UNSUPPORTED.format("$a"), "[0].jsonPath"),
        ([[entry("$" + ".a" * 129)]], "gemini partialArgs jsonPath is deeper than 128 levels", "[0].jsonPath"),
        # an index is the array's next slot, never past it
        ([[entry("$.a[123456789]")]], CONFLICT, "[0].jsonPath"),
        ([[entry("$.a[0]"), entry("$.a[2]")]], CONFLICT, "[1].jsonPath"),
        ([[entry("$.a[1].b")]], CONFLICT, "[0].jsonPath"),
        ([[entry("$.a.b"), entry("$.a[0]")]], CONFLICT, "[1].jsonPath"),
        ([[entry("$.a[0]"), entry("$.a.b")]], CONFLICT, "[1].jsonPath"),
        ([[entry("$.a"), entry("$.a")]], CONFLICT, "[1].jsonPath"),
        ([[entry("$.a[0]"), entry("$.a[0]")]], CONFLICT, "[1].jsonPath"),
        ([[entry("$.a"), entry("$.a.b")]], CONFLICT, "[1].jsonPath"),
        ([[entry("$.a"), entry("$.a[0]")]], CONFLICT, "[1].jsonPath"),
        (
            [[{"jsonPath": "$.a", "stringValue": "he", "willContinue": True}], [{"jsonPath": "$.a", "numberValue": 1}]],
            ENTRY,
            "[0].numberValue",
        ),
        ([[{"stringValue": "x"}]], ENTRY, "[0].jsonPath"),
        ([[{"jsonPath": "$.a", "stringValue": "x", "numberValue": 1}]], ENTRY, "[0]"),
        ([[{"jsonPath": "$.a", "stringValue": 1}]], ENTRY, "[0].stringValue"),
        ([[{"jsonPath": "$.a", "numberValue": "1"}]], ENTRY, "[0].numberValue"),
        ([[{"jsonPath": "$.a", "numberValue": True}]], ENTRY, "[0].numberValue"),
        ([[{"jsonPath": "$.a", "boolValue": 1}]], ENTRY, "[0].boolValue"),
        ([[{"jsonPath": "$.a", "nullValue": 0}]], ENTRY, "[0].nullValue"),
        ([[{"jsonPath": "$.a", "stringValue": "x", "willContinue": 1}]], ENTRY, "[0].willContinue"),
    ],
)
def test_streamed_arguments_refused(impl: ModuleType, entries: list[Any], message: str, at: str) -> None:
    path = "$.candidates[0].content.parts[0].functionCall.partialArgs" + at
    assert stream(impl, P, streamed(*entries)) == ("stream", "MALFORMED_EVENT", message, path, None, False)


def _open_call(*entries: dict[str, Any]) -> list[dict[str, Any]]:
    """A streamed call that never closes: each entry in a chunk of its own."""
    first = chunk([{"functionCall": {"name": "f", "willContinue": True}}])
    return [first, *(chunk([{"functionCall": {"partialArgs": [e], "willContinue": True}}]) for e in entries)]


@pytest.mark.parametrize(
    ("entries", "bound"),
    [
        # the key's byte and the string's eight (four two-byte characters)
        ([{"jsonPath": "$.a", "stringValue": "éééé", "willContinue": True}], 9),
        # each key's bytes and one byte for each other value
        ([{"jsonPath": "$.a", "numberValue": 1}, {"jsonPath": "$.bb", "boolValue": True}], 5),
    ],
)
def test_streamed_arguments_are_bounded_as_they_come(impl: ModuleType, entries: list[Any], bound: int) -> None:
    sent = _open_call(*entries)
    assert stream(impl, P, sent, limits=Limits(max_call_argument_bytes=bound - 1)) == (
        "stream",
        "ARGUMENTS_TOO_LARGE",
        f'the arguments of tool call "r1:call_0" exceed max_call_argument_bytes ({bound - 1})',
        None,
        None,
        False,
    )
    # within the bound the call is held, and the stream that ends with it open is refused for that
    assert stream(impl, P, sent, limits=Limits(max_call_argument_bytes=bound)) == (
        "stream",
        "ITEM_NOT_ENDED",
        'item "item_0" was never ended',
        None,
        None,
        True,
    )


@pytest.mark.parametrize(
    ("sent", "items"),
    [
        ([chunk([{"text": "Hel"}, {"text": "lo"}]), chunk([{"text": "!"}], "STOP")], [("text", "item_0", "Hello!")]),
        (
            [chunk([{"text": "a"}, {"text": "hm", "thought": True}, {"text": "b"}], "STOP")],
            [("text", "item_0", "a"), ("reasoning", "item_1", "hm", None), ("text", "item_2", "b")],
        ),
        (
            [chunk([{"text": "hm", "thought": True}]), chunk([{"text": "b"}], "STOP")],
            [("reasoning", "item_0", "hm", None), ("text", "item_1", "b")],
        ),
    ],
)
def test_consecutive_parts_of_a_kind_are_one_item(impl: ModuleType, sent: list[Any], items: list[Any]) -> None:
    found = stream(impl, P, sent)
    assert (found["items"], found["finish"]) == (items, ("stop", "STOP"))


def call_chunk(call: dict[str, Any]) -> dict[str, Any]:
    return chunk([{"functionCall": call}])


STREAMING = call_chunk({"name": "f", "willContinue": True})
FUNCTION_CALL = "$.candidates[0].content.parts[0].functionCall"


@pytest.mark.parametrize(
    ("sent", "message", "at"),
    [
        ([call_chunk({"name": 1})], "gemini functionCall does not have the documented shape", ".name"),
        ([call_chunk({"name": "f", "args": []})], "gemini functionCall does not have the documented shape", ".args"),
        (
            [call_chunk({"name": "f", "partialArgs": {}})],
            "gemini functionCall does not have the documented shape",
            ".partialArgs",
        ),
        (
            [call_chunk({"name": "f", "willContinue": "yes"})],
            "gemini functionCall does not have the documented shape",
            ".willContinue",
        ),
        ([call_chunk({"args": {}})], "gemini functionCall without a name starts no call", ".name"),
        (
            [STREAMING, call_chunk({"partialArgs": [3], "willContinue": True})],
            "gemini partialArgs entry does not have the documented shape",
            ".partialArgs[0]",
        ),
        # while a call streams, a part that names a call or gives whole arguments starts another: refused
        (
            [STREAMING, call_chunk({"name": "g"})],
            "gemini functionCall starts a new call while another is streaming",
            "",
        ),
        (
            [STREAMING, call_chunk({"args": {"a": 1}})],
            "gemini functionCall starts a new call while another is streaming",
            "",
        ),
    ],
)
def test_function_calls_refused(impl: ModuleType, sent: list[Any], message: str, at: str) -> None:
    assert stream(impl, P, sent) == ("stream", "MALFORMED_EVENT", message, FUNCTION_CALL + at, None, False)


@pytest.mark.parametrize(
    "field", ["promptTokenCount", "candidatesTokenCount", "thoughtsTokenCount", "cachedContentTokenCount"]
)
def test_usage_of_another_shape(impl: ModuleType, field: str) -> None:
    assert stream(impl, P, [{"candidates": [], "usageMetadata": {field: -1}}]) == (
        "stream",
        "MALFORMED_EVENT",
        "gemini usageMetadata does not have the documented shape",
        f"$.usageMetadata.{field}",
        None,
        False,
    )


def test_usage_in_full(impl: ModuleType) -> None:
    # output counts the thoughts' tokens beside the candidates'
    usage = {"promptTokenCount": 10, "candidatesTokenCount": 3, "thoughtsTokenCount": 2, "cachedContentTokenCount": 4}
    found = stream(impl, P, [{**chunk([{"text": "Hi"}], "STOP"), "usageMetadata": usage}])
    assert (found["items"], found["usage"]) == ([("text", "item_0", "Hi")], (10, 5, 4, 2))


PART = "$.candidates[0].content.parts[0]"
INTERRUPTS = "gemini part interrupts a function call whose arguments are still streaming"


@pytest.mark.parametrize(
    ("sent", "message", "path"),
    [
        ([chunk([{"text": 1}])], "gemini part does not have the documented shape", PART + ".text"),
        ([chunk([{"text": "x", "thought": "y"}])], "gemini part does not have the documented shape", PART + ".thought"),
        (
            [chunk([{"text": "x", "thoughtSignature": 1}])],
            "gemini part does not have the documented shape",
            PART + ".thoughtSignature",
        ),
        ([chunk([{"functionCall": 1}])], "gemini part does not have the documented shape", PART + ".functionCall"),
        # while a call's arguments stream, no other part may come between
        ([STREAMING, chunk([{"text": "x"}])], INTERRUPTS, PART),
        ([STREAMING, chunk([{"thought": True}])], INTERRUPTS, PART),
        ([STREAMING, chunk([{"thoughtSignature": "EiYKJGUyNjE"}])], INTERRUPTS, PART),
        (
            [{"candidates": [{"content": {"parts": [{"text": "Hi"}]}, "safetyRatings": [{"blocked": False}, 3]}]}],
            "gemini safetyRating does not have the documented shape",
            "$.candidates[0].safetyRatings[1]",
        ),
        (
            [{"candidates": [{"content": {"parts": [{"text": "Hi"}]}, "safetyRatings": [{"blocked": "no"}]}]}],
            "gemini safetyRating does not have the documented shape",
            "$.candidates[0].safetyRatings[0].blocked",
        ),
        (
            [{"candidates": [{"content": {"parts": [{"text": "Hi"}]}, "safetyRatings": {}}]}],
            "gemini candidate does not have the documented shape",
            "$.candidates[0].safetyRatings",
        ),
    ],
)
def test_parts_and_ratings_refused(impl: ModuleType, sent: list[Any], message: str, path: str) -> None:
    assert stream(impl, P, sent) == ("stream", "MALFORMED_EVENT", message, path, None, False)


@pytest.mark.parametrize(
    ("parts", "items", "finish"),
    [
        # a thought's signature is its own; on any other part it is a reasoning item of its own before the part
        (
            [{"text": "hm", "thought": True, "thoughtSignature": "s1"}, {"text": "Hi", "thoughtSignature": "s2"}],
            [("reasoning", "item_0", "hm", "s1"), ("reasoning", "item_1", "", "s2"), ("text", "item_2", "Hi")],
            ("stop", "STOP"),
        ),
        (
            [{"functionCall": {"name": "f", "args": {}}, "thoughtSignature": "s3"}],
            [("reasoning", "item_0", "", "s3"), ("call", "item_1", "r1:call_0", "f", "{}", True, True, "function")],
            ("tool_calls", "STOP"),
        ),
    ],
)
def test_thought_signatures(impl: ModuleType, parts: list[Any], items: list[Any], finish: Any) -> None:
    found = stream(impl, P, [chunk(parts, "STOP")])
    assert (found["items"], found["finish"]) == (items, finish)


def test_one_blocked_rating_among_others_filters(impl: ModuleType) -> None:
    ratings = [{"category": "HARM_CATEGORY_HATE_SPEECH", "blocked": True}, {"category": "HARM_CATEGORY_HARASSMENT"}]
    sent = [
        {"candidates": [{"content": {"parts": [{"text": "Hi"}]}, "finishReason": "STOP", "safetyRatings": ratings}]}
    ]
    found = stream(impl, P, sent)
    assert (found["items"], found["finish"]) == ([("text", "item_0", "Hi")], ("content_filter", "SAFETY"))


def test_a_stream_without_a_finish_reason(impl: ModuleType) -> None:
    found = stream(impl, P, [chunk([{"text": "Hi"}])])
    assert (found["items"], found["finish"]) == ([("text", "item_0", "Hi")], ("unknown", None))


@pytest.mark.parametrize(
    ("path", "arguments"),
    [
        # a quoted key may be empty, and is read from just past its opening quote
        ("$['']", '{"":"x"}'),
        # a quoted key ends at its own closing quote, and the path goes on after it
        ("$['a']['b']", '{"a":{"b":"x"}}'),
        ("$['a'].b", '{"a":{"b":"x"}}'),
        ('$["a"][0]', '{"a":["x"]}'),
    ],
)
def test_quoted_keys_in_a_path(impl: ModuleType, path: str, arguments: str) -> None:
    found = stream(impl, P, streamed([entry(path)]))
    assert found["items"] == [("call", "item_0", "r1:call_0", "f", arguments, True, True, "function")]


@pytest.mark.parametrize(
    "path",
    [
        # an empty path is no path (nor the continuation of one)
        "",
        # an index that is never closed, at the deepest level a path may have
        "$" + ".a" * 127 + "[12",
    ],
)
def test_paths_refused(impl: ModuleType, path: str) -> None:
    at = "$.candidates[0].content.parts[0].functionCall.partialArgs[0].jsonPath"
    assert stream(impl, P, streamed([entry(path)])) == (
        "stream",
        "MALFORMED_EVENT",
        UNSUPPORTED.format(path),
        at,
        None,
        False,
    )


def _shape(what: str) -> str:
    return f"gemini {what} does not have the documented shape"


@pytest.mark.parametrize(
    ("sent", "what", "path"),
    [
        ({"error": 3}, "error", "$.error"),
        ({"candidates": {}}, "chunk", "$.candidates"),
        ({"candidates": [], "responseId": 1}, "chunk", "$.responseId"),
        ({"candidates": [], "modelVersion": 1}, "chunk", "$.modelVersion"),
        ({"candidates": [], "usageMetadata": 3}, "usageMetadata", "$.usageMetadata"),
        ({"candidates": [], "promptFeedback": 3}, "promptFeedback", "$.promptFeedback"),
        ({"promptFeedback": {"blockReason": 1}}, "promptFeedback", "$.promptFeedback.blockReason"),
        ({"promptFeedback": {"safetyRatings": {}}}, "promptFeedback", "$.promptFeedback.safetyRatings"),
        ({"candidates": [3]}, "candidate", "$.candidates[0]"),
        ({"candidates": [{"index": -1}]}, "candidate", "$.candidates[0].index"),
        ({"candidates": [{"content": 3}]}, "candidate", "$.candidates[0].content"),
        ({"candidates": [{"finishReason": 1}]}, "candidate", "$.candidates[0].finishReason"),
        ({"candidates": [{"content": {"parts": {}}}]}, "content", "$.candidates[0].content.parts"),
        ({"candidates": [{"content": {"parts": [3]}}]}, "part", "$.candidates[0].content.parts[0]"),
        (call_chunk({"name": "f", "id": 1}), "functionCall", FUNCTION_CALL + ".id"),
    ],
)
def test_chunks_of_another_shape(impl: ModuleType, sent: dict[str, Any], what: str, path: str) -> None:
    assert stream(impl, P, [sent]) == ("stream", "MALFORMED_EVENT", _shape(what), path, None, False)


def test_a_body_whose_chunk_is_no_object(impl: ModuleType) -> None:
    assert body(impl, P, [HI, 3]) == ("stream", "MALFORMED_EVENT", _shape("chunk"), "$", None, False)


@pytest.mark.parametrize(
    ("sent", "code", "message", "path", "choice"),
    [
        (
            [chunk([{"text": "a"}]), {"candidates": [], "responseId": "r2"}],
            "DUPLICATE_START",
            "gemini chunk of response r2 inside response r1",
            None,
            None,
        ),
        (
            [{"error": {"code": 500}}, HI],
            "EVENT_AFTER_TERMINAL",
            "gemini chunk after the error that ended the response",
            None,
            None,
        ),
        (
            [{"candidates": [{"index": 0}, {"index": 0}]}],
            "MULTIPLE_CHOICES",
            "gemini response has candidate 0 more than once",
            None,
            0,
        ),
        (
            [{"candidates": [{}, {}]}],
            "MULTIPLE_CHOICES",
            "gemini response has several candidates; select one with choice=",
            None,
            None,
        ),
        (
            [chunk([{"text": "a"}], "STOP"), chunk([{"text": "b"}])],
            "EVENT_AFTER_TERMINAL",
            "gemini content arrived in a chunk without a finishReason after the chunk that gave one",
            PART,
            None,
        ),
        (
            [chunk([{"text": "a", "functionCall": {"name": "f"}}])],
            "MALFORMED_EVENT",
            "gemini part holds both a functionCall and text",
            PART,
            None,
        ),
    ],
)
def test_stream_refusals_in_full(
    impl: ModuleType, sent: list[Any], code: str, message: str, path: str | None, choice: int | None
) -> None:
    assert stream(impl, P, sent, choice=choice) == ("stream", code, message, path, None, False)


@pytest.mark.parametrize(
    ("usage", "counts"),
    [
        # no output count without the candidates' or the thoughts' tokens
        ({"promptTokenCount": 10}, (10, None, None, None)),
        ({"thoughtsTokenCount": 2}, (None, 2, None, 2)),
        ({"candidatesTokenCount": 0, "thoughtsTokenCount": 2}, (None, 2, None, 2)),
    ],
)
def test_usage_with_counts_missing(impl: ModuleType, usage: dict[str, int], counts: tuple[Any, ...]) -> None:
    found = stream(impl, P, [{**chunk([{"text": "Hi"}], "STOP"), "usageMetadata": usage}])
    assert found["usage"] == counts


def test_text_then_a_call_in_one_chunk(impl: ModuleType) -> None:
    found = stream(impl, P, [chunk([{"text": "a"}, {"functionCall": {"name": "f", "args": {}}}], "STOP")])
    assert found["items"] == [
        ("text", "item_0", "a"),
        ("call", "item_1", "r1:call_0", "f", "{}", True, True, "function"),
    ]


def test_a_candidate_without_content(impl: ModuleType) -> None:
    found = stream(impl, P, [{"candidates": [{"finishReason": "STOP"}]}])
    assert (found["items"], found["finish"]) == ([], ("stop", "STOP"))


def test_streamed_arguments_leave_the_callers_payload_alone(impl: ModuleType) -> None:
    first = call_chunk({"name": "f", "args": {"a": {"b": "x"}}, "willContinue": True})
    sent = [first, chunk([{"functionCall": {"partialArgs": [entry("$.a.c")]}}], "STOP")]
    before = copy.deepcopy(sent)
    assembler = impl.StreamAssembler(P)
    for payload in sent:
        assembler.feed_event(payload)
    assert assembler.finish().items[0].arguments == '{"a":{"b":"x","c":"x"}}'
    assert sent == before


@pytest.mark.parametrize(
    ("role", "detail"),
    [
        ("user", 'a message of role "user" is not the model\'s answer'),
        (1, "a message whose role is not a string is not the model's answer"),
    ],
)
def test_content_of_another_role(impl: ModuleType, role: Any, detail: str) -> None:
    sent = {"candidates": [{"content": {"role": role, "parts": [{"text": "Hi"}]}}]}
    assert stream(impl, P, [sent]) == (
        "stream",
        "MALFORMED_EVENT",
        f"gemini content: {detail}",
        "$.candidates[0].content.role",
        None,
        False,
    )
