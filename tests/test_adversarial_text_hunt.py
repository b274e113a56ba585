"""Adversarial hunt of the text fallback, its repair and what decide does with them.

Every case runs on both backends (the ``impl`` fixture points
``decisions._backend.impl`` at the backend under test) and asserts exact codes.

1. Inline raw HTML that hides its content (a comment, a processing
   instruction, a CDATA section) quotes a ``<tool_call>`` block inside it: a
   call the model commented out is not a call.
2. Look-alike tags (another case, a space, an invisible character,
   fullwidth or small-form brackets) are refused where they stand, never
   left as the text of a final answer that drops the call.
3. A reply that is exactly one JSON value holds no calls: a tag inside one
   of its strings is data, not a block to parse.
5. The ``<think> ... </think>`` reasoning a reply opens with is text: a
   call drafted there is not made, and its Markdown does not quote the
   answer after it.
6. The repair prompt for a reply that writes its calls as ``<tool_call>``
   blocks asks for the reply again with the blocks, never for one bare
   JSON value (which would decide as a final answer, the call dropped).
4. A repaired response keeps its fixes through the request-side steps
   (``plan.prepare``, ``tool_calls_response``) and into its parse record,
   so a side-effecting tool still refuses its call; a provisional snapshot
   is refused there as ``decide`` refuses it, not an ``AttributeError``.
"""

from __future__ import annotations

import time
from types import ModuleType

import pytest

import decisions
from decisions import _backend
from decisions.errors import OutputError, ParseError, PolicyError, StreamError
from decisions.request._markdown import QuotedRanges
from decisions.request.textcalls import parse_tool_calls, tool_calls_response
from decisions.types import FixedResponse, NormalizedResponse, ResponseSnapshot, TextItem, ToolCallItem

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


# ================================================================ 2. look-alike tags


@pytest.mark.parametrize(
    ("text", "offset"),
    [
        (CALL.replace("tool_call", "TOOL_CALL"), 0),
        (CALL.replace("<tool_call>", "<tool_call >"), 0),
        (CALL.replace("<tool_call>", "< tool_call>"), 0),
        (CALL.replace("<tool_call>", "<tool\u200b_call>"), 0),
        (CALL.replace("<tool_call>", "<\ufefftool_call>"), 0),
        (CALL.replace("<tool_call>", "\uff1ctool_call\uff1e"), 0),
        (CALL.replace("<tool_call>", "\ufe64tool_call\ufe65"), 0),
        (CALL.replace("<tool_call>", "<\uff54\uff4f\uff4f\uff4c_call>"), 0),  # fullwidth letters
        ("Done.\n" + CALL.replace("</tool_call>", "</Tool_Call>").replace("<tool_call>", "<Tool_Call>"), 6),
    ],
)
def test_a_look_alike_tag_is_refused_where_it_stands(text: str, offset: int) -> None:
    for read in (lambda: parse_tool_calls(text), lambda: tool_calls_response(_reply(text))):
        with pytest.raises(ParseError) as info:
            read()
        assert (info.value.code, info.value.layer, info.value.offset) == ("UNEXPECTED_CHARACTER", "parse", offset)
        assert "exactly <tool_call>" in (info.value.hint or "")


@pytest.mark.parametrize(
    "text",
    [
        "`<TOOL_CALL>` is how some models write it",
        "```\n<tool_call >\n```",
        "> <Tool_Call>",
        "a <b>bold</b> claim, 1 < 2 > 0, <toolcall> and <tool_call/>",
    ],
)
def test_quoted_look_alikes_and_other_tags_are_text(text: str) -> None:
    assert parse_tool_calls(text).calls == ()
    assert tool_calls_response(_reply(text)) == _reply(text)


def test_look_alikes_after_a_call_are_refused_too() -> None:
    text = CALL + "\n" + CALL.replace("tool_call", "tool_call\u200d")
    with pytest.raises(ParseError) as info:
        parse_tool_calls(text)
    assert (info.value.code, info.value.offset) == ("UNEXPECTED_CHARACTER", len(CALL) + 1)


@pytest.mark.parametrize("unit", ["<b>x</b> ", "<tool_cal> ", "a<b ", "<\uff41\u200b> "])
def test_tag_like_text_scans_in_linear_time(unit: str) -> None:
    text = unit * (400_000 // len(unit)) + CALL
    start = time.perf_counter()
    assert len(parse_tool_calls(text).calls) == 1
    assert time.perf_counter() - start < 2.0


# ================================================================ 3. one JSON value


@pytest.mark.parametrize(
    "text",
    [
        '{"summary": "the model answers with <tool_call> blocks"}',
        '{"example": "<tool_call>{\\"name\\": \\"write_file\\", \\"arguments\\": {}}</tool_call>"}',
        '  ["<tool_call>", "</tool_call>"]\n',
        '"<tool_call>{}</tool_call>"',
        '{"note": "<TOOL_CALL>"}',
    ],
)
def test_a_json_answer_with_a_tag_in_a_string_is_the_answer(text: str) -> None:
    assert parse_tool_calls(text).calls == ()
    assert tool_calls_response(_reply(text)) == _reply(text)
    decision = decisions.decide(tool_calls_response(_reply(text)), output={"type": ["object", "array", "string"]})
    assert isinstance(decision, decisions.FinalDecision)


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ('{"a": 1} ' + CALL, None),  # a value and a call: the call is read
        ('{"a": "<tool_call>"', "UNEXPECTED_CHARACTER"),  # not one value: scanned, and the tag is refused
    ],
)
def test_text_that_is_not_one_json_value_is_scanned(text: str, code: str | None) -> None:
    if code is None:
        assert [call.name for call in parse_tool_calls(text).calls] == ["write_file"]
        return
    with pytest.raises(ParseError) as info:
        parse_tool_calls(text)
    assert info.value.code == code


# ================================================================ 4. repaired responses


WRITE = decisions.Tool(
    name="write_file",
    parameters={
        "type": "object",
        "properties": {"path": {"type": "string"}, "mode": {"type": "string"}},
        "required": ["path"],
    },
    side_effects=True,
)


def _repaired_call() -> FixedResponse:
    """A native call whose arguments only parse after the ``invalid_escapes`` fix."""
    call = ToolCallItem(item_id="c", call_id="call_1", name="write_file", arguments='{"path": "a\\d", "mode": null}')
    response = NormalizedResponse(
        provider="openai-chat", response_id="r", model="m", items=(call,), finish_reason="tool_calls"
    )
    fixed = decisions.fix_response(response, ["invalid_escapes"])
    assert fixed.applied == ("invalid_escapes",)
    return fixed


def test_a_prepared_repaired_response_is_still_repaired() -> None:
    plan = decisions.build_request("openai-chat", tools=[WRITE])
    assert plan.record("write_file").nullable_added  # prepare rewrites the arguments
    prepared = plan.prepare(_repaired_call())
    assert isinstance(prepared, FixedResponse) and prepared.applied == ("invalid_escapes",)
    assert prepared.response.tool_calls[0].arguments == '{"path":"a\\\\d"}'
    with pytest.raises(PolicyError) as info:
        decisions.decide(prepared, tools=[WRITE])
    assert (info.value.code, info.value.layer) == ("REPAIRED_CALL_REFUSED", "policy")


def test_text_calls_of_a_fixed_response_stay_repaired() -> None:
    fixed = FixedResponse(_reply(CALL), ("invalid_escapes",))
    read = tool_calls_response(fixed)
    assert isinstance(read, FixedResponse) and read.applied == ("invalid_escapes",)
    assert [call.name for call in read.response.tool_calls] == ["write_file"]
    with pytest.raises(PolicyError) as info:
        decisions.decide(read, tools=[WRITE])
    assert info.value.code == "REPAIRED_CALL_REFUSED"


def test_the_parse_record_of_a_fixed_response_names_its_fixes() -> None:
    record = decisions.parse_record(response=_repaired_call())
    assert (record["response_id"], record["provider"], record["finish_reason"], record["repaired"]) == (
        "r",
        "openai-chat",
        "tool_calls",
        "invalid_escapes",
    )


def test_a_snapshot_is_refused_by_the_request_side_steps_as_by_decide() -> None:
    snapshot = ResponseSnapshot(
        provider="openai-chat", response_id="r", model="m", text=CALL, calls=(), state="streaming"
    )
    plan = decisions.build_request("openai-chat", tools=[WRITE])
    for step in (
        lambda: tool_calls_response(snapshot),  # type: ignore[call-overload]
        lambda: plan.prepare(snapshot),  # type: ignore[call-overload]
        lambda: decisions.fix_response(snapshot, ["invalid_escapes"]),  # type: ignore[arg-type]
        lambda: decisions.decide(snapshot),
    ):
        with pytest.raises(StreamError) as info:
            step()
        assert (info.value.code, info.value.layer) == ("SNAPSHOT_NOT_DECIDABLE", "stream")


# ================================================================ 5. reasoning


@pytest.mark.parametrize(
    ("text", "made"),
    [
        (f"<think>\nI could write it: {CALL}\n</think>\n\nNo change is needed.", False),
        (f"<think>first draft {CALL}</think>\n{CALL}", True),
        (f"<think>still thinking {CALL}", False),  # never closed: reasoning to the end
        (f"<think>\n```\n</think>\n{CALL}", True),  # its unclosed fence does not quote the answer
        (f"\ufeff <think>x</think>{CALL}", True),
        (f"Answer: <think>{CALL}</think>", True),  # only a reply that opens with <think> has reasoning
    ],
)
def test_calls_drafted_in_the_reasoning_are_not_made(text: str, made: bool) -> None:
    found = parse_tool_calls(text)
    assert [call.start for call in found.calls] == ([text.rindex("<tool_call>")] if made else [])
    assert len(found.text) == len(text) - len(CALL) * made  # the reasoning is kept as text


def test_reasoning_with_a_call_only_in_it_decides_as_text() -> None:
    text = f"<think>{CALL}</think>The file is fine as it is."
    assert tool_calls_response(_reply(text)) == _reply(text)
    assert isinstance(decisions.decide(tool_calls_response(_reply(text))), decisions.FinalDecision)


def test_a_json_answer_after_the_reasoning_holds_no_calls() -> None:
    text = '<think>ok</think>{"note": "<tool_call> is the format"}'
    assert parse_tool_calls(text).calls == ()


# ================================================================ 6. repair prompts


BLOCKS = "Send the reply again with each tool call in its own"
VALUE = "Return exactly one corrected JSON value"


@pytest.mark.parametrize(
    "reply",
    [
        CALL.replace("</tool_call>", ""),  # unclosed
        CALL.replace('"a.txt"', '"a\\d"'),  # an invalid escape in a block
        CALL.replace("arguments", "args"),  # not an envelope
        CALL.replace("tool_call", "TOOL_CALL"),  # a look-alike tag
        CALL + "\n" + CALL.replace("{", "[", 1),  # the second block is broken
    ],
)
def test_a_broken_text_call_is_asked_for_again_as_a_block(reply: str) -> None:
    with pytest.raises(OutputError) as info:
        parse_tool_calls(reply)
    prompt = decisions.repair_prompt(info.value, text=reply)
    assert BLOCKS in prompt.splitlines()[-1] and VALUE not in prompt
    if isinstance(info.value, ParseError):  # a parse error carries the reply itself
        assert BLOCKS in decisions.repair_prompt(info.value).splitlines()[-1]


def test_an_answer_that_only_mentions_the_tag_is_asked_for_as_a_value() -> None:
    schema = decisions.Schema({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
    for reply in ('{"note": "<tool_call> is the format"}', "The format is `<tool_call>` blocks."):
        with pytest.raises(OutputError) as info:
            decisions.decide(tool_calls_response(_reply(reply)), output=schema)
        prompt = decisions.repair_prompt(info.value, text=reply)
        assert VALUE in prompt.splitlines()[-1] and BLOCKS not in prompt


def test_an_explicit_target_still_wins() -> None:
    with pytest.raises(OutputError) as info:
        parse_tool_calls(CALL.replace("</tool_call>", ""))
    assert VALUE in decisions.repair_prompt(info.value, target="value").splitlines()[-1]
