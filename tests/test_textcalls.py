"""The JSON-text fallback and the <tool_call> scanner (public API, so it
runs on the selected backend's strict parser)."""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import decisions
from decisions.errors import ParseError, SchemaError, StreamError
from decisions.limits import DEFAULT_LIMITS
from decisions.request.textcalls import (
    TOOL_CALL_CLOSE,
    TOOL_CALL_OPEN,
    parse_json_text,
    parse_tool_calls,
    tool_calls_response,
)
from decisions.types import NormalizedResponse, TextItem


def _error(call, *args, **kwargs):  # type: ignore[no-untyped-def]
    with pytest.raises((ParseError, SchemaError, StreamError)) as info:
        call(*args, **kwargs)
    return info.value


# ---------------------------------------------------------------- one JSON value


def test_exactly_one_value() -> None:
    assert parse_json_text('  {"a": [1, 2]}\n').value == {"a": [1, 2]}
    assert parse_json_text("[]").repaired == ()
    assert _error(parse_json_text, 'Here it is: {"a": 1}').code == "UNEXPECTED_CHARACTER"
    error = _error(parse_json_text, '{"a": 1} hope this helps')
    assert error.code == "TRAILING_CONTENT" and error.offset == 9
    assert _error(parse_json_text, '{"a": 1}{"b": 2}').code == "TRAILING_CONTENT"
    assert _error(parse_json_text, "   ").code == "EMPTY_INPUT"
    assert _error(parse_json_text, '{"a": "\\d"}').code == "INVALID_ESCAPE"


def test_length_limit() -> None:
    error = _error(parse_json_text, json.dumps({"a": "x" * 100}), max_chars=50)
    assert error.code == "DOCUMENT_TOO_LARGE"
    with pytest.raises(TypeError, match="^max_chars must be an int, not float$"):
        parse_json_text('{"a": 1}', max_chars=50.0)  # type: ignore[arg-type]
    small = dataclasses.replace(DEFAULT_LIMITS, max_document_bytes=10)
    assert _error(parse_json_text, '{"a": "0123456789"}', limits=small).code == "DOCUMENT_TOO_LARGE"


FENCED = 'Sure!\n```json\n{"a": 1}\n```\n'


def test_fences_are_their_own_error_by_default() -> None:
    error = _error(parse_json_text, '```json\n{"a": 1}\n```')
    assert error.code == "MARKDOWN_FENCE" and error.offset == 0
    error = _error(parse_json_text, FENCED)
    assert error.code == "MARKDOWN_FENCE" and error.offset == FENCED.index("```")


def test_one_fenced_block_only_when_asked() -> None:
    result = parse_json_text('```json\n{"a": 1}\n```\n', allow_fence=True)
    assert result.value == {"a": 1} and result.repaired == ("markdown_fence",)
    assert parse_json_text("\n```\n[1]\n```", allow_fence=True).value == [1]
    # text outside the block, or two blocks: still an error
    assert _error(parse_json_text, FENCED, allow_fence=True).code == "MARKDOWN_FENCE"
    two = '```json\n{"a": 1}\n```\n```json\n{"b": 2}\n```'
    assert _error(parse_json_text, two, allow_fence=True).code == "MARKDOWN_FENCE"
    # offsets of errors inside the block point into the whole reply
    text = '```json\n{"a": @}\n```'
    error = _error(parse_json_text, text, allow_fence=True)
    assert isinstance(error, ParseError) and text[error.offset :].startswith("@")


# ---------------------------------------------------------------- <tool_call> blocks


def _block(name: str, arguments: object) -> str:
    return f"{TOOL_CALL_OPEN}\n{json.dumps({'name': name, 'arguments': arguments})}\n{TOOL_CALL_CLOSE}"


def test_several_calls_and_text_outside() -> None:
    text = "I'll look.\n" + _block("grep", {"pattern": "x"}) + "\n" + _block("ls", {"path": "."}) + "\nDone."
    found = parse_tool_calls(text)
    assert [(c.name, c.arguments) for c in found.calls] == [("grep", {"pattern": "x"}), ("ls", {"path": "."})]
    assert found.text == "I'll look.\n\n\nDone."
    assert text[found.calls[0].start : found.calls[0].end].startswith(TOOL_CALL_OPEN)
    assert text[found.calls[1].start : found.calls[1].end].endswith(TOOL_CALL_CLOSE)
    assert json.loads(found.calls[0].arguments_json) == {"pattern": "x"}
    assert parse_tool_calls("no calls here").calls == ()


def test_close_tag_inside_a_json_string_does_not_end_the_block() -> None:
    tricky = {"content": 'print("</tool_call>")\n<tool_call>{"name": "rm"}', "brace": "}]{[", "q": 'a\\"b'}
    found = parse_tool_calls(_block("write_file", tricky) + " tail")
    assert len(found.calls) == 1 and found.calls[0].arguments == tricky
    assert found.text == " tail"


def test_unclosed_and_malformed_blocks() -> None:
    unclosed = f'{TOOL_CALL_OPEN}{{"name": "x", "arguments": {{}}}}'
    error = _error(parse_tool_calls, unclosed)
    assert error.code == "UNEXPECTED_END" and error.offset == len(unclosed)
    error = _error(parse_tool_calls, f'{TOOL_CALL_OPEN}{{"name": "x", "arguments": {{"a": 1}}')
    assert error.code == "UNEXPECTED_END"
    # a missing brace before the close tag: the strict parser names the place
    text = f'{TOOL_CALL_OPEN}{{"name": "x", "arguments": {{"a": 1}}{TOOL_CALL_CLOSE}'
    error = _error(parse_tool_calls, text)
    assert isinstance(error, ParseError) and error.offset is not None and error.offset >= len(TOOL_CALL_OPEN)
    two_values = (
        f'{TOOL_CALL_OPEN}{{"name": "a", "arguments": {{}}}} {{"name": "b", "arguments": {{}}}}{TOOL_CALL_CLOSE}'
    )
    assert _error(parse_tool_calls, two_values).code == "TRAILING_CONTENT"
    nested = f"{TOOL_CALL_OPEN}{_block('x', {})}{TOOL_CALL_CLOSE}"
    assert _error(parse_tool_calls, nested).code == "UNEXPECTED_CHARACTER"
    stray = "text " + TOOL_CALL_CLOSE
    error = _error(parse_tool_calls, stray)
    assert error.code == "UNEXPECTED_CHARACTER" and error.offset == 5
    fenced = f'{TOOL_CALL_OPEN}\n```json\n{{"name": "x", "arguments": {{}}}}\n```\n{TOOL_CALL_CLOSE}'
    assert _error(parse_tool_calls, fenced).code == "MARKDOWN_FENCE"


def test_strict_parse_inside_blocks_with_offsets_into_the_reply() -> None:
    prefix = "Running it.\n"
    text = prefix + f'{TOOL_CALL_OPEN}{{"name": "grep", "arguments": {{"pattern": "\\d+"}}}}{TOOL_CALL_CLOSE}'
    error = _error(parse_tool_calls, text)
    assert error.code == "INVALID_ESCAPE"
    assert text[error.offset :].startswith("\\d")
    trailing_comma = f'{TOOL_CALL_OPEN}{{"name": "x", "arguments": {{"a": 1,}}}}{TOOL_CALL_CLOSE}'
    assert _error(parse_tool_calls, trailing_comma).code == "TRAILING_COMMA"


def test_envelope_is_checked_never_guessed() -> None:
    missing = _error(parse_tool_calls, f'{TOOL_CALL_OPEN}{{"name": "x"}}{TOOL_CALL_CLOSE}')
    assert missing.code == "SCHEMA_MISMATCH" and missing.path == "$.arguments"
    extra = _error(parse_tool_calls, f'{TOOL_CALL_OPEN}{{"name": "x", "arguments": {{}}, "id": 1}}{TOOL_CALL_CLOSE}')
    assert extra.code == "SCHEMA_MISMATCH" and extra.issues[0]["path"] == "$.id"
    encoded = _error(parse_tool_calls, f'{TOOL_CALL_OPEN}{{"name": "x", "arguments": "{{}}"}}{TOOL_CALL_CLOSE}')
    assert encoded.code == "DOUBLE_ENCODED_JSON"
    listed = _error(parse_tool_calls, f'{TOOL_CALL_OPEN}{{"name": "x", "arguments": []}}{TOOL_CALL_CLOSE}')
    assert listed.code == "ARGUMENTS_NOT_OBJECT"
    nameless = _error(parse_tool_calls, f'{TOOL_CALL_OPEN}{{"name": "", "arguments": {{}}}}{TOOL_CALL_CLOSE}')
    assert nameless.code == "SCHEMA_MISMATCH" and nameless.path == "$.name"


def test_call_count_limit() -> None:
    limits = dataclasses.replace(DEFAULT_LIMITS, max_calls_per_response=2)
    text = _block("a", {}) * 3
    assert _error(parse_tool_calls, text, limits=limits).code == "TOO_MANY_CALLS"
    assert len(parse_tool_calls(_block("a", {}) * 2, limits=limits).calls) == 2


_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30) | st.sampled_from(
    ["</tool_call>", "<tool_call>", '{"a": "}"', "\\", '\\"', "]}", "```"]
)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | _TEXT,
    lambda c: st.lists(c, max_size=3) | st.dictionaries(_TEXT, c, max_size=3),
    max_leaves=8,
)


@settings(max_examples=min(100, settings.default.max_examples))  # fewer under `make mutation`
@given(
    st.lists(
        st.tuples(
            st.text(st.characters(blacklist_categories=("Cs",)), max_size=20), st.dictionaries(_TEXT, _JSON, max_size=4)
        ),
        max_size=4,
    )
)
def test_scanner_round_trip(parts: list[tuple[str, dict[str, object]]]) -> None:
    # Any text (that neither contains the tags nor quotes them in Markdown:
    # no backticks, tildes, quote or list markers, HTML or indentation) with
    # any arguments (strings may contain the tags, braces and quotes) reads
    # back exactly.
    text, expected_outside, expected = "", "", []
    for index, (outside, arguments) in enumerate(parts):
        outside = "".join(c for c in outside if c.isalnum() or c in " \n,;:!?()\"'{}[]/\\").replace(")", "")
        outside = "\n".join(line.lstrip(" ") for line in outside.split("\n"))
        text += outside + _block(f"tool_{index}", arguments)
        expected_outside += outside
        expected.append((f"tool_{index}", arguments))
    found = parse_tool_calls(text)
    assert [(c.name, c.arguments) for c in found.calls] == expected
    assert found.text == expected_outside


# ---------------------------------------------------------------- responses


def _text_response(text: str, finish: str = "stop") -> NormalizedResponse:
    return NormalizedResponse(
        provider="openai-chat",
        response_id="r1",
        model="qwen",
        finish_reason=finish,  # type: ignore[arg-type]
        items=(TextItem(item_id="m", text=text),),
    )


def test_response_with_text_calls_becomes_tool_call_items() -> None:
    response = _text_response("Let me read it.\n" + _block("read_file", {"path": "a.py"}))
    converted = tool_calls_response(response)
    assert converted.finish_reason == "tool_calls"
    (call,) = converted.tool_calls
    assert call.name == "read_file" and json.loads(call.arguments) == {"path": "a.py"}
    assert call.call_id_generated and call.complete
    assert converted.text == "Let me read it."
    plain = _text_response("just an answer")
    assert tool_calls_response(plain) is plain


@pytest.mark.parametrize(("response_id", "prefix"), [("r1", "r1:"), (None, ""), ("", "")])
def test_generated_call_ids_carry_the_response_id_when_there_is_one(response_id: str | None, prefix: str) -> None:
    response = dataclasses.replace(_text_response(_block("a", {}) + _block("b", {})), response_id=response_id)
    converted = tool_calls_response(response)
    assert [call.call_id for call in converted.tool_calls] == [f"{prefix}text_call_0", f"{prefix}text_call_1"]


def test_cut_off_response_is_left_for_the_completeness_gate() -> None:
    cut = _text_response(f'{TOOL_CALL_OPEN}{{"name": "write_file", "arguments": {{"content": "hal', "length")
    assert tool_calls_response(cut) is cut


def test_public_names() -> None:
    for name in ("parse_json_text", "parse_tool_calls", "tool_calls_response"):
        assert name in decisions.__all__


def test_text_calls_go_through_decide_like_native_ones() -> None:
    from decisions import Tool, ToolRegistry, decide

    registry = ToolRegistry(
        [
            Tool(
                name="read_file",
                parameters={
                    "type": "object",
                    "properties": {"path": {"type": "string"}},
                    "required": ["path"],
                    "additionalProperties": False,
                },
                side_effects=False,
            )
        ]
    )
    response = tool_calls_response(_text_response("Reading.\n" + _block("read_file", {"path": "a.py"})))
    decision = decide(response, tools=registry)
    assert decision.kind == "tool" and decision.executable
    assert decision.calls[0].arguments == {"path": "a.py"} and decision.calls[0].call_id_generated
    unknown = tool_calls_response(_text_response(_block("raed_file", {"path": "a.py"})))
    with pytest.raises(decisions.DomainError) as info:
        decide(unknown, tools=registry)
    assert info.value.code == "UNKNOWN_TOOL"
    bad = tool_calls_response(_text_response(_block("read_file", {"path": 3})))
    with pytest.raises(SchemaError):
        decide(bad, tools=registry)
