"""Adversarial hunt of the text fallback, its repair and what decide does with them.

Every case runs on both backends (the ``impl`` fixture points
``decisions._backend.impl`` at the backend under test) and asserts exact codes.

1. Inline raw HTML that hides its content (a comment, a processing
   instruction, a CDATA section) quotes a ``<tool_call>`` block inside it: a
   call the model commented out is not a call.
"""

from __future__ import annotations

import time
from types import ModuleType

import pytest

import decisions
from decisions import _backend
from decisions.request._markdown import QuotedRanges
from decisions.request.textcalls import parse_tool_calls, tool_calls_response
from decisions.types import NormalizedResponse, TextItem

CALL = '<tool_call>{"name": "write_file", "arguments": {"path": "a.txt"}}</tool_call>'


@pytest.fixture(autouse=True)
def _backend_under_test(impl: ModuleType, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.setattr(_backend, "impl", impl)
    return impl


def _reply(text: str) -> NormalizedResponse:
    return NormalizedResponse(
        provider="openai-chat",
        response_id="r",
        model="m",
        items=(TextItem(item_id="t", text=text),),
        finish_reason="stop",
    )


# ================================================================ 1. inline raw HTML


@pytest.mark.parametrize(
    "text",
    [
        f"I would run <!-- {CALL} --> but will not.",
        f"x <!--{CALL}-->",
        f"x <!-- a\nb {CALL}\nc -->",  # a comment across the lines of one paragraph
        f"x <? {CALL} ?>",
        f"x <![CDATA[ {CALL} ]]>",
        f"- item <!-- {CALL} -->",
    ],
)
def test_a_call_in_inline_hidden_html_is_text(text: str) -> None:
    assert parse_tool_calls(text).calls == ()
    assert tool_calls_response(_reply(text)) == _reply(text)
    decision = decisions.decide(tool_calls_response(_reply(text)))
    assert isinstance(decision, decisions.FinalDecision)


@pytest.mark.parametrize(
    "text",
    [
        f"x <!-- {CALL}",  # never closed in its paragraph: literal text
        f"x <!-- a\n\n{CALL} -->",  # the blank line ends the paragraph first
        f"x <!-- done --> {CALL}",
        f"x <!--> {CALL}",  # <!--> is a whole comment
        f"x <!---> {CALL}",  # and so is <!--->
        f"x \\<!-- {CALL} -->",  # an escaped < opens nothing
        f"x `<!--` {CALL} -->",  # the opener is inside a code span
        f"x <? {CALL}",
    ],
)
def test_a_call_beside_inline_html_still_stands(text: str) -> None:
    assert [call.name for call in parse_tool_calls(text).calls] == ["write_file"]


def test_a_comment_ends_at_its_first_closer() -> None:
    text = f"x <!-- a --> b {CALL} c -->"
    assert QuotedRanges(text).quoted(text.index("<tool_call>")) is False
    text = f"x <!-- a -- b {CALL} c -->"
    assert QuotedRanges(text).quoted(text.index("<tool_call>")) is True


@pytest.mark.parametrize(
    "text",
    [
        "x " + "<!--" * 100_000 + CALL,
        "x " + (CALL + "<!--") * 5000,
        "x " + ("<?" + CALL) * 5000,
        "x " + ("<!-- " + CALL) * 5000 + "-->",
    ],
)
def test_unclosed_openers_scan_in_linear_time(text: str) -> None:
    limits = decisions.Limits(max_calls_per_response=10_000)
    start = time.perf_counter()
    parse_tool_calls(text, limits=limits)
    assert time.perf_counter() - start < 1.0
