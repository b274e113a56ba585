"""Adversarial review of the text paths: one section per class of mistake.

Every case runs on both backends (the ``impl`` fixture points
``decisions._backend.impl`` at the backend under test, so the strict parser
inside the text fallback is that backend's) and asserts exact codes.

1. Quoted ``<tool_call>`` blocks: a block inside a Markdown code span, fenced
   or indented code block, block quote or verbatim HTML block is text, never
   a call (CommonMark's rules, checked against cmark's answers).
2. Secrets: no credential survives, whole or as a fragment of 8 characters,
   in anything an error or a record carries.
"""

from __future__ import annotations

import json
import pickle
import re
import time
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Iterator

import pytest

import decisions
from decisions import _backend
from decisions._markdown import QuotedRanges
from decisions.errors import OutputError, ParseError, PolicyError, SchemaError, StreamError, new_error
from decisions.repair import repair_prompt
from decisions.textcalls import parse_tool_calls, tool_calls_response
from decisions.trace import Redactor, parse_record
from decisions.types import NormalizedResponse, TextItem, ToolCallItem

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(autouse=True)
def _backend_under_test(impl: ModuleType, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.setattr(_backend, "impl", impl)
    return impl


# ================================================================ 1. quoted <tool_call> blocks

CALL = '<tool_call>{"name": "delete_file", "arguments": {"path": "/etc/passwd"}}</tool_call>'
OTHER = '<tool_call>{"name": "read_file", "arguments": {"path": "a.txt"}}</tool_call>'

#: (label, text): the CALL in each is quoted, so the reply holds no call.
QUOTED: list[tuple[str, str]] = [
    ("code span", f"Write `{CALL}` to delete."),
    ("code span of two backticks around one", f"Write ``x ` {CALL}`` to delete."),
    ("code span of five backticks", f"`````{CALL}`````"),
    ("code span over two lines", f"Write `the block\n{CALL}\nlike that` to call."),
    ("code span after an escaped backtick", f"\\` then `{CALL}`"),
    ("code span opened after a literal run", f"`` alone, then `{CALL}`"),
    ("fence", f"```\n{CALL}\n```"),
    ("fence with an info string", f"```json title=example\n{CALL}\n```\nDone."),
    ("tilde fence", f"~~~\n{CALL}\n~~~"),
    ("tilde fence with backticks in its info", f"~~~ `x`\n{CALL}\n~~~"),
    ("long fence closed only by a long enough one", f"````\n```\n{CALL}\n````"),
    ("fence indented three spaces", f"   ```\n{CALL}\n   ```"),
    ("unclosed fence runs to the end", f"Example:\n```\n{CALL}"),
    ("fence interrupting a paragraph", f"See:\n```\n{CALL}\n```"),
    ("fence in a list item", f"1. Example:\n   ```\n   {CALL}\n   ```"),
    ("fence on the marker line of a list item", f"10. ```\n    {CALL}\n    ```"),
    ("indented code block", f"Example:\n\n    {CALL}"),
    ("tab-indented code block", f"Example:\n\n\t{CALL}"),
    ("block quote", f"> {CALL}"),
    ("block quote without a space", f">{CALL}"),
    ("nested block quote", f"> > {CALL}"),
    ("lazy continuation of a quoted paragraph", f"> The page said:\n{CALL}"),
    ("block quote in a list item", f"- > {CALL}"),
    ("fence in a block quote", f"> ```\n> {CALL}\n> ```"),
    ("pre block", f"<pre>\n{CALL}\n</pre>"),
    ("HTML comment block", f"<!--\n{CALL}\n-->"),
    ("script block", f"<script>\n{CALL}\n</script>"),
]

#: (label, text, names): a call that stands on its own, with quoted text around it.
STANDING: list[tuple[str, str, list[str]]] = [
    ("plain", CALL, ["delete_file"]),
    ("after a closed code span", f"Use `x` like this: {CALL}", ["delete_file"]),
    ("after an unmatched backtick", f"It costs 5` so: {CALL}", ["delete_file"]),
    ("after an escaped backtick pair", f"\\`x\\` {CALL}", ["delete_file"]),
    ("after a closed fence", f"```\n{OTHER}\n```\n{CALL}", ["delete_file"]),
    ("after a block quote and a blank line", f"> {OTHER}\n\n{CALL}", ["delete_file"]),
    ("indented continuation of a paragraph", f"Calling:\n    {CALL}", ["delete_file"]),
    ("in a list item paragraph", f"1.  Step:\n\n    {CALL}", ["delete_file"]),
    ("in a heading", f"# {CALL}", ["delete_file"]),
    ("code span across a paragraph break is no span", f"a `b\n\n{CALL}\n\nc` d", ["delete_file"]),
    ("after a reasoning block", f"<think>\nplan\n</think>\n{CALL}", ["delete_file"]),
    # the JSON of a call is never read as Markdown: its backtick opens no span
    ("backtick inside a call's argument", '<tool_call>{"name": "sh", "arguments": {"cmd": "echo `date"}}</tool_call>\n'
     + CALL + " and a ` later", ["sh", "delete_file"]),
    ("blank line and indentation inside a call's JSON",
     '<tool_call>\n{"name": "sh",\n\n    "arguments": {}}\n    </tool_call>\n    ' + CALL, ["sh", "delete_file"]),
    ("quoted and standing in one reply", f"Format: `{OTHER}`\n\n{CALL}", ["delete_file"]),
]


def _stop(text: str, *extra: Any) -> NormalizedResponse:
    return NormalizedResponse(provider="openai-chat", response_id="r", model="m", finish_reason="stop",
                              items=(TextItem(item_id="t", text=text), *extra))


@pytest.mark.parametrize(("label", "text"), QUOTED, ids=[c[0] for c in QUOTED])
def test_quoted_block_is_text(label: str, text: str) -> None:
    found = parse_tool_calls(text)
    assert found.calls == () and found.text == text
    response = _stop(text)
    assert tool_calls_response(response) is response
    decision = decisions.decide(response)
    assert isinstance(decision, decisions.FinalDecision) and decision.value == text


@pytest.mark.parametrize(("label", "text", "names"), STANDING, ids=[c[0] for c in STANDING])
def test_standing_block_is_a_call(label: str, text: str, names: list[str]) -> None:
    found = parse_tool_calls(text)
    assert [call.name for call in found.calls] == names
    for call in found.calls:
        assert text[call.start:call.end].startswith("<tool_call>") and text[call.start:call.end].endswith("</tool_call>")
    response = tool_calls_response(_stop(text))
    assert [call.name for call in response.tool_calls] == names


def test_quoted_text_is_kept_whole() -> None:
    text = f"Format: `{OTHER}`\n\n{CALL}\n> {OTHER}"
    found = parse_tool_calls(text)
    assert [call.name for call in found.calls] == ["delete_file"]
    assert found.text == f"Format: `{OTHER}`\n\n\n> {OTHER}"


@pytest.mark.parametrize(("text", "code", "offset"), [
    ("a stray </tool_call> here", "UNEXPECTED_CHARACTER", 8),
    (f"`</tool_call>` then {CALL} then </tool_call>", "UNEXPECTED_CHARACTER", len(f"`</tool_call>` then {CALL} then ")),
    (f"> {CALL}\n\n<tool_call>", "UNEXPECTED_END", len(f"> {CALL}\n\n<tool_call>")),
    ("`x` <tool_call>{\"name\": \"a\"}</tool_call>", "SCHEMA_MISMATCH", 15),
    ("`x` <tool_call>{\"name\": \"a\", \"arguments\": {\"p\": \"\\d\"}}</tool_call>", "INVALID_ESCAPE", 49),
])
def test_standing_blocks_are_still_strict(text: str, code: str, offset: int) -> None:
    with pytest.raises(OutputError) as info:
        parse_tool_calls(text)
    assert (info.value.code, info.value.offset) == (code, offset), str(info.value)


def test_quoted_stray_close_tag_is_text() -> None:
    for text in ("`</tool_call>`", "```\n</tool_call>\n```", "> </tool_call>"):
        assert parse_tool_calls(text).calls == ()


def test_cmark_reference_answers() -> None:
    """400 random Markdown shapes around a tag, with cmark's answer to
    "is the tag inside a code span, code block, block quote or verbatim
    HTML block" (generated with the reference implementation)."""
    data = json.loads((FIXTURES / "markdown_quoting.json").read_text())
    wrong = [case["text"] for case in data["cases"]
             if QuotedRanges(case["text"]).quoted(case["text"].index("<tool_call>")) != case["quoted"]]
    assert len(data["cases"]) == 400 and wrong == []


def test_native_and_text_calls_together_is_ambiguous() -> None:
    native = ToolCallItem(item_id="c", call_id="call_1", name="read_file", arguments='{"path": "a.txt"}')
    with pytest.raises(SchemaError) as info:
        tool_calls_response(_stop(f"Also: {CALL}", native))
    assert (info.value.code, info.value.path, info.value.offset) == ("AMBIGUOUS_DECISION", "$", 6)
    # a quoted block beside native calls is text: nothing is ambiguous
    response = _stop(f"Also: `{CALL}`", native)
    assert tool_calls_response(response) is response


def test_quoting_scan_is_linear() -> None:
    """Markdown-heavy text around many calls: 10x the input costs about 10x."""
    unit = "> quoted `span` text\n\n```\ncode\n```\n- item `a` b\n" + CALL + "\n\n"

    def run(times: int) -> float:
        text = unit * times
        limits = decisions.Limits(max_calls_per_response=10 * times)
        start = time.perf_counter()
        assert len(parse_tool_calls(text, limits=limits).calls) == times
        return time.perf_counter() - start

    ratio = _ratio(run, 100, 1000)
    assert ratio < 40, ratio  # quadratic would be about 100
    # backticks around every call in one long paragraph (every other call quoted)
    para = "x ` " + CALL + " "

    def run_paragraph(times: int) -> float:
        text = para * times
        limits = decisions.Limits(max_calls_per_response=10 * times)
        start = time.perf_counter()
        parse_tool_calls(text, limits=limits)
        return time.perf_counter() - start

    ratio = _ratio(run_paragraph, 100, 1000)
    assert ratio < 40, ratio


def _ratio(run: Callable[[int], float], small: int, large: int) -> float:
    """Best-of-three time of ``run(large)`` over ``run(small)``."""
    run(small)
    return min(run(large) for _ in range(3)) / min(run(small) for _ in range(3))
