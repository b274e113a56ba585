"""The JSON-text fallback's errors as the caller and the repair prompt read
them (code, message, offset into the whole reply, path, hint, issues), each
bound at its edge, and the items a text call becomes."""

from __future__ import annotations

from typing import Any, Callable

import pytest

from decide_helpers import call, needs_loads, response, text
from decisions import Limits, OutputError
from decisions.errors import ParseError
from decisions.request.textcalls import parse_json_text, parse_tool_calls, tool_calls_response
from decisions.types import ReasoningItem, TextItem, ToolCallItem

pytestmark = needs_loads

ENVELOPE_HINT = 'write {"name": "...", "arguments": {...}}'
OPEN_HINT = "finish the JSON object and close the block with </tool_call>"


def failure(fn: Callable[[], Any]) -> OutputError:
    with pytest.raises(OutputError) as info:
        fn()
    return info.value


def shape(error: OutputError) -> tuple[Any, ...]:
    return (error.code, error.message, error.offset, error.path, error.hint)


def block(body: str) -> str:
    return f"<tool_call>{body}</tool_call>"


# ---------------------------------------------------------------- parse_json_text


def test_max_chars_at_its_edge() -> None:
    assert parse_json_text("[1]", max_chars=3).value == [1]
    error = failure(lambda: parse_json_text("[1] ", max_chars=3))
    assert shape(error) == (
        "DOCUMENT_TOO_LARGE",
        "the reply is longer than 3 characters",
        3,
        None,
        "answer with a shorter value",
    )


def test_the_document_bound_counts_characters_and_bytes() -> None:
    assert parse_json_text('"é"', limits=Limits(max_document_bytes=4)).value == "é"
    for doc, bound in [("[1, 2]", 5), ('"é"', 3)]:
        error = failure(lambda d=doc, b=bound: parse_json_text(d, limits=Limits(max_document_bytes=b)))
        assert (error.code, error.offset) == ("DOCUMENT_TOO_LARGE", 0)


@pytest.mark.parametrize(
    ("reply", "offset"),
    [("```json\n{}\n```", 0), ("here:\n  ```\n{}\n```", 8), ('{"a":\n```\n1}', 6)],
)
def test_a_fence_is_refused_at_its_backtick(reply: str, offset: int) -> None:
    error = failure(lambda: parse_json_text(reply))
    assert shape(error) == (
        "MARKDOWN_FENCE",
        error.message,
        offset,
        None,
        "send the bare JSON value, without ``` fences",
    )


def test_one_fence_alone_is_accepted_only_when_asked() -> None:
    reply = '```json\n{"a": 1}\n```'
    result = parse_json_text(reply, allow_fence=True)
    assert (result.value, result.repaired) == ({"a": 1}, ("markdown_fence",))
    assert parse_json_text('{"a": 1}', allow_fence=True).repaired == ()
    for bad in ["see:\n" + reply, "```\n```\n{}\n```\n```", reply + "\nmore"]:
        assert failure(lambda b=bad: parse_json_text(b, allow_fence=True)).code == "MARKDOWN_FENCE"


def test_a_parse_error_names_the_offset_in_the_whole_reply() -> None:
    error = failure(lambda: parse_json_text('```\n{"a": }\n```', allow_fence=True))
    assert isinstance(error, ParseError)
    assert (error.code, error.offset, error.doc) == ("UNEXPECTED_CHARACTER", 10, '```\n{"a": }\n```')
    assert error.hint is not None and error.hint.startswith("unexpected")
    error = failure(lambda: parse_json_text('{"a": }'))
    assert (error.code, error.offset) == ("UNEXPECTED_CHARACTER", 6)


# ---------------------------------------------------------------- parse_tool_calls


def test_calls_spans_and_the_text_outside() -> None:
    reply = 'a <tool_call>\n {"name": "f", "arguments": {"y": 2, "x": "</tool_call>"}} \n</tool_call> b'
    found = parse_tool_calls(reply)
    (only,) = found.calls
    assert (only.name, only.arguments) == ("f", {"y": 2, "x": "</tool_call>"})
    assert only.arguments_json == '{"x":"</tool_call>","y":2}'
    assert (only.start, only.end) == (2, len(reply) - 2)
    assert found.text == "a  b"
    one = block('{"name": "f", "arguments": {}}')
    two = parse_tool_calls(one * 2)
    assert [(c.start, c.end) for c in two.calls] == [(0, len(one)), (len(one), 2 * len(one))]
    assert two.text == ""


def test_a_string_with_escapes_and_tags_does_not_end_the_block() -> None:
    reply = block('{"name": "f", "arguments": {"s": "a\\"}</tool_call>"}}')
    (only,) = parse_tool_calls(reply).calls
    assert only.arguments == {"s": 'a"}</tool_call>'}


def test_a_stray_closing_tag_in_full() -> None:
    error = failure(lambda: parse_tool_calls("ok </tool_call>"))
    assert shape(error) == (
        "UNEXPECTED_CHARACTER",
        "a </tool_call> without its <tool_call>",
        3,
        None,
        "wrap each call in <tool_call> ... </tool_call>",
    )


def test_the_call_bound_at_its_edge() -> None:
    one = block('{"name": "f", "arguments": {}}')
    assert len(parse_tool_calls(one, limits=Limits(max_calls_per_response=1)).calls) == 1
    error = failure(lambda: parse_tool_calls(one + " " + one, limits=Limits(max_calls_per_response=1)))
    assert (error.code, error.offset) == ("TOO_MANY_CALLS", len(one) + 1)


def test_the_response_bound_counts_characters_and_bytes() -> None:
    assert parse_tool_calls("éé", limits=Limits(max_response_bytes=4)).text == "éé"
    for reply, bound in [("abcdef", 5), ("ééé", 5)]:
        error = failure(lambda r=reply, b=bound: parse_tool_calls(r, limits=Limits(max_response_bytes=b)))
        assert error.code == "RESPONSE_TOO_LARGE"


@pytest.mark.parametrize(
    ("reply", "code", "message", "offset", "hint"),
    [
        ("<tool_call> \n", "UNEXPECTED_END", "the <tool_call> block is not closed", 13, OPEN_HINT),
        (
            "<tool_call> ```json",
            "MARKDOWN_FENCE",
            None,
            12,
            "put the JSON object directly inside <tool_call>, without ``` fences",
        ),
        (block("[1]"), "UNEXPECTED_CHARACTER", "a <tool_call> block holds one JSON object", 11, ENVELOPE_HINT),
        (
            '<tool_call>{"name": "f", "a": [1}',
            "UNEXPECTED_END",
            "the <tool_call> block ends before its JSON object closes",
            33,
            OPEN_HINT,
        ),
        (
            '<tool_call>{"name": "f',
            "UNEXPECTED_END",
            "the <tool_call> block ends before its JSON object closes",
            22,
            OPEN_HINT,
        ),
        (
            '<tool_call>{"name": "f", "arguments": {}}  ',
            "UNEXPECTED_END",
            "the <tool_call> block is not closed",
            43,
            "close the block with </tool_call>",
        ),
        (
            '<tool_call>{"name": "f", "arguments": {}} {}</tool_call>',
            "TRAILING_CONTENT",
            "a <tool_call> block holds exactly one JSON object",
            42,
            "put each call in its own <tool_call> ... </tool_call> block",
        ),
    ],
)
def test_each_malformed_block_in_full(reply: str, code: str, message: str | None, offset: int, hint: str) -> None:
    error = failure(lambda: parse_tool_calls(reply))
    assert isinstance(error, ParseError)
    assert shape(error) == (code, message or error.message, offset, None, hint)


def test_a_block_that_is_not_an_object_gets_the_parsers_error_at_its_place() -> None:
    reply = '<tool_call>{"name": "f", "arguments": {"a": tru}}</tool_call>'
    error = failure(lambda: parse_tool_calls(reply))
    assert (error.code, error.offset) == ("UNEXPECTED_CHARACTER", reply.index("tru}") + 3)
    unclosed = '<tool_call>{"name": "f", </tool_call>'
    error = failure(lambda: parse_tool_calls(unclosed))
    assert error.offset == unclosed.index("</tool_call>")


@pytest.mark.parametrize(
    ("body", "issues"),
    [
        ('{"arguments": {}}', [("$.name", "required", "the tool name as a non-empty string")]),
        ('{"name": 1, "arguments": {}}', [("$.name", "type", "the tool name as a non-empty string")]),
        ('{"name": "", "arguments": {}}', [("$.name", "type", "the tool name as a non-empty string")]),
        ('{"name": "f"}', [("$.arguments", "required", "an object")]),
        (
            '{"name": "f", "arguments": {}, "z": 1, "b": 2}',
            [("$.b", "unknown_field", "only name and arguments"), ("$.z", "unknown_field", "only name and arguments")],
        ),
        (
            '{"id": 1}',
            [
                ("$.name", "required", "the tool name as a non-empty string"),
                ("$.arguments", "required", "an object"),
                ("$.id", "unknown_field", "only name and arguments"),
            ],
        ),
    ],
)
def test_an_envelope_that_is_not_name_and_arguments_in_full(body: str, issues: list[tuple[str, str, str]]) -> None:
    error = failure(lambda: parse_tool_calls("x " + block(body)))
    assert shape(error) == (
        "SCHEMA_MISMATCH",
        'a <tool_call> block must be {"name": ..., "arguments": {...}}',
        13,
        issues[0][0],
        ENVELOPE_HINT,
    )
    assert [(i["path"], i["code"], i["expected"]) for i in error.issues] == issues


@pytest.mark.parametrize(
    ("arguments", "code", "hint"),
    [
        ('"{}"', "DOUBLE_ENCODED_JSON", "send the arguments object itself, not a string containing it"),
        ("[]", "ARGUMENTS_NOT_OBJECT", 'arguments must be a JSON object such as {"path": "a.txt"}'),
        ("null", "ARGUMENTS_NOT_OBJECT", 'arguments must be a JSON object such as {"path": "a.txt"}'),
    ],
)
def test_arguments_that_are_not_an_object_in_full(arguments: str, code: str, hint: str) -> None:
    error = failure(lambda: parse_tool_calls("x " + block(f'{{"name": "f", "arguments": {arguments}}}')))
    assert (error.code, error.offset, error.path, error.hint) == (code, 13, "$.arguments", hint)


def test_quoted_blocks_are_text() -> None:
    quoted = "`" + block('{"name": "f", "arguments": {}}') + "`"
    found = parse_tool_calls(quoted + "\n\n" + block('{"name": "g", "arguments": {}}'))
    assert [c.name for c in found.calls] == ["g"]
    assert found.text == quoted + "\n\n"


# ---------------------------------------------------------------- tool_calls_response


def test_text_calls_become_generated_call_items() -> None:
    reply = " before " + block('{"name": "f", "arguments": {"b": 1, "a": 2}}') + block('{"name": "g", "arguments": {}}')
    reasoning = ReasoningItem(item_id="r", text="thinking")
    out = tool_calls_response(response(reasoning, text(reply), finish="stop"))
    assert out.finish_reason == "tool_calls"
    assert out.items == (
        reasoning,
        TextItem(item_id="text_0", text="before"),
        ToolCallItem(
            item_id="text_call_0",
            call_id="resp_1:text_call_0",
            name="f",
            arguments='{"a":2,"b":1}',
            call_id_generated=True,
        ),
        ToolCallItem(
            item_id="text_call_1", call_id="resp_1:text_call_1", name="g", arguments="{}", call_id_generated=True
        ),
    )
    alone = tool_calls_response(response(text(block('{"name": "f", "arguments": {}}')), finish="stop"))
    assert [type(item).__name__ for item in alone.items] == ["ToolCallItem"]


def test_responses_left_unchanged() -> None:
    cut = response(text(block('{"name": "f", "arguments": {}')), finish="length")
    assert tool_calls_response(cut) is cut
    plain = response(text("no calls here"), finish="stop")
    assert tool_calls_response(plain) is plain
    quoted = response(text("`" + block('{"name": "f", "arguments": {}}') + "`"), finish="stop")
    assert tool_calls_response(quoted) is quoted


def test_native_and_text_calls_together_are_ambiguous_in_full() -> None:
    both = response(text("ok " + block('{"name": "f", "arguments": {}}')), call(), finish="stop")
    error = failure(lambda: tool_calls_response(both))
    assert shape(error) == (
        "AMBIGUOUS_DECISION",
        "the response has native tool calls and <tool_call> blocks in its text",
        3,
        "$",
        "make tool calls either natively or as <tool_call> blocks, not both",
    )


def test_the_callers_limits_reach_the_blocks() -> None:
    reply = block('{"name": "f", "arguments": {"a": [[1]]}}')
    error = failure(lambda: tool_calls_response(response(text(reply), finish="stop"), limits=Limits(max_depth=2)))
    assert error.code == "DEPTH_EXCEEDED"
