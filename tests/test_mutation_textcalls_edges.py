"""The JSON-text fallback at its edges: the offset of an error at the very
start of a value, the text each error carries (``doc``, so a repair prompt can
quote the place), the caller's limits on every path, the precise error of a
block that neither parses nor closes, and a later block's error its own."""

from __future__ import annotations

from typing import Any, Callable

import pytest

from decide_helpers import needs_loads
from decisions import Limits, OutputError
from decisions.request.textcalls import parse_json_text, parse_tool_calls

pytestmark = needs_loads

GOOD = '<tool_call>{"name": "f", "arguments": {}}</tool_call>'


def failure(fn: Callable[[], Any]) -> OutputError:
    with pytest.raises(OutputError) as info:
        fn()
    return info.value


def located(error: OutputError) -> tuple[Any, ...]:
    return (error.code, error.offset, error.doc, error.lineno, error.colno)  # type: ignore[attr-defined]


# ---------------------------------------------------------------- parse_json_text


@pytest.mark.parametrize(
    ("reply", "allow_fence", "offset"),
    [("x", False, 0), ("]", False, 0), ("```\nx\n```", True, 4), ("```json\r\n}\r\n```", True, 9)],
)
def test_an_error_at_the_first_character_of_the_value(reply: str, allow_fence: bool, offset: int) -> None:
    error = failure(lambda: parse_json_text(reply, allow_fence=allow_fence))
    assert error.code == "UNEXPECTED_CHARACTER" and error.offset == offset
    assert error.doc == reply  # type: ignore[attr-defined]


@pytest.mark.parametrize("allow_fence", [False, True])
def test_the_callers_limits_reach_a_reply_and_a_fenced_one(allow_fence: bool) -> None:
    limits = Limits(max_depth=2)
    reply = "```\n[[[1]]]\n```" if allow_fence else "[[[1]]]"
    error = failure(lambda: parse_json_text(reply, limits=limits, allow_fence=allow_fence))
    assert (error.code, error.offset) == ("DEPTH_EXCEEDED", reply.index("[[[") + 2)
    assert parse_json_text(reply, allow_fence=allow_fence).value == [[[1]]]


def test_a_fence_error_carries_the_reply() -> None:
    reply = '{"a":\n  ```\n1}'
    assert located(failure(lambda: parse_json_text(reply))) == ("MARKDOWN_FENCE", 8, reply, 2, 3)


def test_the_document_bound_at_its_edge_in_full() -> None:
    assert parse_json_text("[1]", limits=Limits(max_document_bytes=3)).value == [1]
    # over by characters or by bytes: the same error, which does not carry the reply
    for reply in ("[1] ", '"é"'):
        error = failure(lambda r=reply: parse_json_text(r, limits=Limits(max_document_bytes=3)))
        assert located(error) == ("DOCUMENT_TOO_LARGE", 0, "", 1, 1)
        assert error.hint == "the document is larger than 3 bytes: send a smaller one"
    error = failure(lambda: parse_json_text("[1] ", max_chars=3))
    assert located(error) == ("DOCUMENT_TOO_LARGE", 3, "", 1, 4)
    # a fenced reply over the bound by bytes only is refused before its fence is looked at
    fenced = '```\n"é"\n```'
    limits = Limits(max_document_bytes=len(fenced))
    for allow_fence in (False, True):
        error = failure(lambda a=allow_fence: parse_json_text(fenced, limits=limits, allow_fence=a))
        assert (error.code, error.offset) == ("DOCUMENT_TOO_LARGE", 0)


# ---------------------------------------------------------------- parse_tool_calls


def test_an_unclosed_block_and_a_second_value_carry_the_reply() -> None:
    reply = 'say\n<tool_call>{"name": "f", "arguments": {}}'
    assert located(failure(lambda: parse_tool_calls(reply))) == ("UNEXPECTED_END", len(reply), reply, 2, 42)
    reply = 'say\n<tool_call>{"name": "f", "arguments": {}} {}</tool_call>'
    assert located(failure(lambda: parse_tool_calls(reply))) == ("TRAILING_CONTENT", 46, reply, 2, 43)
    reply = '<tool_call>{"name": "f", "arguments": {"a": [1}'
    assert located(failure(lambda: parse_tool_calls(reply)))[:3] == ("UNEXPECTED_END", len(reply), reply)


@pytest.mark.parametrize(
    ("arguments", "code"),
    [('"{}"', "DOUBLE_ENCODED_JSON"), ("[]", "ARGUMENTS_NOT_OBJECT"), ("1", "ARGUMENTS_NOT_OBJECT")],
)
def test_arguments_that_are_not_an_object_carry_the_reply(arguments: str, code: str) -> None:
    reply = f'ok\n<tool_call>{{"name": "f", "arguments": {arguments}}}</tool_call>'
    assert located(failure(lambda: parse_tool_calls(reply))) == (code, 14, reply, 2, 12)


def test_a_block_that_neither_parses_nor_closes_gets_the_error_at_its_place() -> None:
    # the object does not close before the </tool_call>, nor after it: the text up to the tag is parsed
    # for its own error (here: it ends where the tag begins), not the text after the tag
    reply = '<tool_call>{"name": "f", "arguments": {}</tool_call> and </tool_call>'
    error = failure(lambda: parse_tool_calls(reply))
    assert (error.code, error.offset) == ("UNEXPECTED_END", reply.index("</tool_call>"))
    # a later block's error is its own, at its own place (not the first block's tag)
    bad = '<tool_call>{"name": x, "arguments": {</tool_call>'
    error = failure(lambda: parse_tool_calls(GOOD + " " + bad))
    assert (error.code, error.offset) == ("UNEXPECTED_CHARACTER", len(GOOD) + 1 + bad.index("x"))
    # the caller's limits hold on that path too
    deep = '<tool_call>{"name": "f", "arguments": {"a": [[[1]]]}</tool_call>'
    error = failure(lambda: parse_tool_calls(deep, limits=Limits(max_depth=3)))
    assert (error.code, error.offset) == ("DEPTH_EXCEEDED", deep.index("[[[") + 1)


def test_blocks_after_the_first_are_read_from_their_own_place() -> None:
    second = '<tool_call>{"name": "g", "arguments": {"s": "</tool_call>"}}</tool_call>'
    found = parse_tool_calls(GOOD + "\n" + second + "\n" + GOOD)
    assert [(c.name, c.arguments) for c in found.calls] == [("f", {}), ("g", {"s": "</tool_call>"}), ("f", {})]
    assert found.text == "\n\n"


@pytest.mark.parametrize(
    ("reply", "code", "offset"),
    [
        ("ok\n</tool_call>", "UNEXPECTED_CHARACTER", 3),
        ("ok\n<tool_call> \n", "UNEXPECTED_END", 16),
        ("ok\n<tool_call>\n```json\n{}\n```</tool_call>", "MARKDOWN_FENCE", 15),
        ("ok\n<tool_call> [1]</tool_call>", "UNEXPECTED_CHARACTER", 15),
    ],
)
def test_each_block_error_carries_the_reply(reply: str, code: str, offset: int) -> None:
    error = failure(lambda: parse_tool_calls(reply))
    assert located(error)[:3] == (code, offset, reply)
    assert error.lineno == reply.count("\n", 0, offset) + 1  # type: ignore[attr-defined]


def test_the_response_bound_at_its_edge() -> None:
    assert parse_tool_calls("abcde", limits=Limits(max_response_bytes=5)).text == "abcde"
    assert parse_tool_calls("é" * 2 + "a", limits=Limits(max_response_bytes=5)).text == "ééa"
    with pytest.raises(OutputError) as info:
        parse_tool_calls("abcdef", limits=Limits(max_response_bytes=5))
    assert info.value.code == "RESPONSE_TOO_LARGE"
