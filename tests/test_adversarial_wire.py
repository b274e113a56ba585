"""Adversarial inputs at the canonical event boundary: partial views of
streaming arguments, the wire reader and the round trips of its shapes."""

from __future__ import annotations

import dataclasses
import json
from types import ModuleType
from typing import Any

import pytest

import decisions
from decisions import wire
from decisions.ledger import from_dict, to_dict
from decisions.types import ItemStarted, ResponseStarted, TextDelta, ToolCallStarted, UsageReported
from decisions.validate.decision import CallVerdict, ToolCall, ToolDecision

_START = {"type": "response_started"}
_CALL = {"type": "tool_call_started", "item_id": "i1", "call_id": "c1", "name": "f"}


def _partial(impl: ModuleType, arguments: str) -> Any:
    """The snapshot's partial view of a call whose arguments so far are ``arguments``,
    fed whole and one character at a time (the two must agree)."""
    views = []
    for pieces in ([arguments], list(arguments)):
        assembler = impl.StreamAssembler("canonical")  # type: ignore[attr-defined]
        assembler.feed_event(_START)
        assembler.feed_event(_CALL)
        for piece in pieces:
            assembler.feed_event({"type": "tool_arguments_delta", "item_id": "i1", "delta": piece})
            views.append(assembler.snapshot().calls[0].partial)
    assert views[0] == views[-1], arguments
    return views[-1]


#: Arguments text that ``loads`` refuses, and the view of the last good value before the fault.
_REFUSED_BY_LOADS = [
    ('{"a": "\\u-123"}', {}),  # int("-123", 16) is a number: chr() of it raised ValueError
    ('{"a": "\\u 041"}', {}),  # int(" 041", 16) == 0x41: the view showed "A"
    ('{"a": "\\u0_41"}', {}),  # int("0_41", 16) == 0x41
    ('{"a": "\\u+041", "b": 1}', {}),
    ('{"a": 1, "b": "\\ud800x"}', {"a": 1}),  # a lone surrogate the view kept
    ('{"a": "\\udc00"}', {}),
    ('{"a": "\\ud800\\ud800"}', {}),
    ('{"a": "\\ud800"}', {}),
    ('{"a": "x\ny"}', {}),  # a raw control character in a string
    ('["ok", "\t"]', ["ok"]),
    ('{"a": 1, "a": 2}', {"a": 1}),  # a repeated key: the view showed the last one
    ('{"a": 1, "b": {"a": 2}, "a": 3', {"a": 1, "b": {"a": 2}}),
    ('{"a": 1e400}', {}),  # overflows: the view showed inf
    ('{"a": 1e400', {}),
    ("[1.5e308, -2e308]", [1.5e308]),
    ('{"n": 18446744073709551615, "m": 18446744073709551616}', {"n": 18446744073709551615}),
    ('{"n": -9223372036854775809}', {}),
]


@pytest.mark.parametrize(("arguments", "view"), _REFUSED_BY_LOADS)
def test_a_partial_view_stops_at_what_loads_refuses(impl: ModuleType, arguments: str, view: Any) -> None:
    """The view never holds a value the strict parser refuses (a guessed
    escape, a lone surrogate, a control character, the second of two
    repeated keys, an overflowing number), and never crashes: it stops at
    the last good value."""
    with pytest.raises(decisions.ParseError):
        decisions.loads(arguments)
    shown = _partial(impl, arguments)
    assert shown == view
    json.dumps(shown, allow_nan=False).encode("utf-8")  # a UI can always write it


#: Wire objects the reader crashed on (a TypeError from an unhashable or
#: unsortable value, a ValueError from a repr) or accepted while the
#: ``"canonical"`` provider refuses them.
_REFUSED_EVENTS: list[dict[Any, Any]] = [
    {"type": "item_started", "item_id": "a", "kind": []},  # TypeError: unhashable type
    {"type": "item_started", "item_id": "a", "kind": {}},
    {"type": "item_ended", "item_id": "a", 1: 2, "z": 3},  # TypeError: '<' between str and int
    {"type": "usage", "input_tokens": -1},  # accepted by the reader
    {"type": "usage", "output_tokens": 2**64},
    {"type": "usage", "cached_tokens": 10**5000},  # past the digit limit: no repr
    {"type": "item_ended", "item_id": "a\ud800"},  # a lone surrogate: encode_sse raised UnicodeEncodeError
    {"type": "text_delta", "item_id": "a", "delta": "\udc00"},
    {"type": "response_started", "model": "m\ud800"},
]


@pytest.mark.parametrize("data", _REFUSED_EVENTS, ids=range(len(_REFUSED_EVENTS)))
def test_the_reader_refuses_what_the_canonical_provider_refuses(impl: ModuleType, data: dict[Any, Any]) -> None:
    """``event_from_dict`` gives a typed ``MALFORMED_EVENT`` for every wire
    object the canonical assembler refuses, never a crash or an event the
    front end's assembler then refuses."""
    with pytest.raises(decisions.StreamError) as read:
        wire.event_from_dict(data)
    assert (read.value.layer, read.value.code) == ("stream", "MALFORMED_EVENT")
    if all(isinstance(key, str) for key in data):
        assembler = impl.StreamAssembler("canonical")  # type: ignore[attr-defined]
        with pytest.raises(decisions.StreamError) as fed:
            assembler.feed_event(_START)
            assembler.feed_event(data)
        assert (fed.value.layer, fed.value.code) == ("stream", "MALFORMED_EVENT")


#: Event objects built with values the reader refuses: writing them crashed
#: or wrote what does not read back.
_UNWRITABLE = [
    UsageReported(input_tokens=True),  # written as true, refused on reading
    UsageReported(input_tokens=1.0),  # type: ignore[arg-type]
    UsageReported(input_tokens=float("nan")),  # type: ignore[arg-type]  # ValueError
    ToolCallStarted(item_id="a", call_id="c", name="n", call_id_generated=1),  # type: ignore[arg-type]
    TextDelta(item_id="a", delta="\ud800"),  # UnicodeEncodeError in encode_sse
    ItemStarted(item_id="a", kind="tool"),  # type: ignore[arg-type]
]


@pytest.mark.parametrize("event", _UNWRITABLE, ids=range(len(_UNWRITABLE)))
@pytest.mark.parametrize("encode", [wire.encode_json, wire.encode_sse])
def test_writing_refuses_what_reading_refuses(encode: Any, event: Any) -> None:
    """What the wire writes reads back equal: an event it could not is refused
    with the reader's ``MALFORMED_EVENT`` before anything is written."""
    with pytest.raises(decisions.StreamError) as caught:
        encode(event)
    assert caught.value.code == "MALFORMED_EVENT"


@pytest.mark.parametrize("line", ["\x0b", "\x0c", "\u2028", "\xa0", "\x1c", b"\x0b", b"\x0c"])
def test_a_line_of_non_json_space_is_not_blank(line: str | bytes) -> None:
    """Only JSON whitespace makes a blank line: the reader skipped a line
    holding another space (``str.strip`` strips them) as if it were empty."""
    lines = [wire.encode_json(ResponseStarted()), line]
    with pytest.raises(decisions.ParseError) as caught:
        list(wire.read_json_lines(lines))
    assert caught.value.lineno == 2


@pytest.mark.parametrize("generated", [False, True])
def test_a_canonical_call_with_an_empty_call_id_is_refused(impl: ModuleType, generated: bool) -> None:
    """An empty call id pairs with no result: Anthropic's and Responses'
    mappers refuse one, the canonical provider made it an executable call."""
    started = {**_CALL, "call_id": "", "call_id_generated": generated}
    events = [_START, started, {"type": "tool_arguments_delta", "item_id": "i1", "delta": "{}"}]
    events += [{"type": "item_ended", "item_id": "i1"}, {"type": "response_finished", "finish_reason": "tool_calls"}]
    assembler = impl.StreamAssembler("canonical")  # type: ignore[attr-defined]
    assembler.feed_event(_START)
    with pytest.raises(decisions.StreamError) as fed:
        assembler.feed_event(started)
    assert (fed.value.layer, fed.value.code) == ("stream", "MALFORMED_EVENT")
    with pytest.raises(decisions.StreamError) as body:
        impl.normalize(json.dumps(events), provider="canonical")  # type: ignore[attr-defined]
    assert body.value.code == "MALFORMED_EVENT"
    with pytest.raises(decisions.StreamError) as read:
        wire.event_from_dict(started)
    assert read.value.code == "MALFORMED_EVENT"


_KINDS_OF_CALLS = [
    ("custom", "edit", "*** Begin Patch\n*** End Patch"),  # text arguments: refused on reading back
    ("shell", "shell", {"commands": ["ls"]}),  # came back a function call named "shell"
    ("local_shell", "local_shell", {"command": ["ls"]}),
    ("apply_patch", "apply_patch", {"type": "create_file", "path": "a"}),
    ("function", "shell", {"commands": ["ls"]}),
]


@pytest.mark.parametrize(("kind", "name", "arguments"), _KINDS_OF_CALLS)
def test_a_stored_decision_keeps_its_call_kinds(kind: str, name: str, arguments: Any) -> None:
    """A decision written and read back is the same decision: the call's kind
    (what the executor runs) is kept, and a custom call's text arguments read back."""
    call = ToolCall(call_id="c1", name=name, arguments=arguments, call_kind=kind, call_id_generated=True)  # type: ignore[arg-type]
    decision = ToolDecision(calls=(call,), verdicts=(CallVerdict(call_id="c1", status="needs_approval"),))
    for obj in (call, decision):
        back = from_dict(json.loads(json.dumps(to_dict(obj))))
        assert back == obj
    assert not from_dict(to_dict(decision)).executable


def test_a_version_1_call_reads_as_a_function_call() -> None:
    """A tool call stored before its kind was (version 1) still reads, as the
    function call it was read as then; a version 2 call without a kind does not."""
    stored = {"shape": "tool_call", "version": 1, "call_id": "c", "name": "f", "arguments": {}, "index": 0}
    stored |= {"item_id": None, "call_id_generated": False, "tool_version": None}
    assert from_dict(stored) == ToolCall(call_id="c", name="f", arguments={})
    with pytest.raises(decisions.SchemaError) as caught:
        from_dict({**stored, "version": 2})
    assert (caught.value.code, caught.value.path) == ("SCHEMA_MISMATCH", "$.call_kind")
    with pytest.raises(decisions.SchemaError) as caught:
        from_dict({**stored, "version": 2, "call_kind": "function", "arguments": "text"})
    assert caught.value.path == "$.arguments"


_FINISHED = '{"type":"response_finished","finish_reason":"stop"}'
_DELTA = '{"type":"text_delta","item_id":"t","delta":"x"}'
_HEAD = ['{"type":"response_started"}', '{"type":"item_started","item_id":"t","kind":"text"}']


def _feed(assembler: Any, how: str, name: str, data: str) -> None:
    """The head events, then ``data`` named ``name``, by ``feed`` (SSE bytes) or ``feed_event``."""
    for event, text in [(None, head) for head in _HEAD] + [(name, data)]:
        if how == "feed":
            assembler.feed((f"event: {event}\n" if event else "").encode() + f"data: {text}\n\n".encode())
        else:
            assembler.feed_event(text, event=event)


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("response_failed", _FINISHED),  # a failure framed as a success was taken as the success
        ("item_ended", _DELTA),  # the delta's fast path read the data alone
        ("refusal_delta", _DELTA),
    ],
)
@pytest.mark.parametrize("how", ["feed", "feed_event"])
def test_a_canonical_sse_event_named_as_another_type_is_refused(
    impl: ModuleType, name: str, data: str, how: str
) -> None:
    """An SSE event whose name is another type frames two events in one:
    neither is taken (``MALFORMED_EVENT`` at ``$.type``), as the wire reader,
    Anthropic's and Responses' mappers refuse it; the canonical provider
    took the data alone."""
    assembler = impl.StreamAssembler("canonical")  # type: ignore[attr-defined]
    with pytest.raises(decisions.StreamError) as caught:
        _feed(assembler, how, name, data)
    assert (caught.value.code, caught.value.path) == ("MALFORMED_EVENT", "$.type")
    with pytest.raises(decisions.StreamError, match="does not match"):
        list(wire.read_sse([f"event: {name}\ndata: {data}\n\n".encode()]))


@pytest.mark.parametrize("name", ["message", "text_delta"])
@pytest.mark.parametrize("how", ["feed", "feed_event"])
def test_a_canonical_sse_event_named_as_its_type_is_read(impl: ModuleType, name: str, how: str) -> None:
    """``message`` or the data's own type: the data is read as it says."""
    assembler = impl.StreamAssembler("canonical")  # type: ignore[attr-defined]
    _feed(assembler, how, name, _DELTA)
    assert assembler.snapshot().text == "x"


@pytest.mark.parametrize(
    "layout",
    [["rs", "fc"], ["fc", "rs"], ["rs", "fc", "rs2"], ["rs2", "fc", "rs"]],
    ids=lambda layout: "-".join(layout),
)
@pytest.mark.parametrize("read_as", ["sse", "json_lines", "objects"])
def test_forwarded_events_keep_a_placed_item_in_its_place(impl: ModuleType, layout: list[str], read_as: str) -> None:
    """A Responses reasoning item only ``response.completed`` carries is placed
    at its output position; its forwarded events said nothing of that, so the
    front end rebuilt it after the call it preceded."""
    from test_fidelity_responses import _about, events_of

    events = [e for e in events_of("openai-reasoning-encrypted-content.1") if not _about(e, "reasoning")]
    completed = events[-1]
    (rs,) = [i for i in completed["response"]["output"] if i["type"] == "reasoning"]
    (fc,) = [i for i in completed["response"]["output"] if i["type"] == "function_call"]
    by_name = {"rs": rs, "fc": fc, "rs2": {**rs, "id": rs["id"] + "_2"}}
    events[-1] = {**completed, "response": {**completed["response"], "output": [by_name[n] for n in layout]}}
    backend = impl.StreamAssembler("openai-responses", keep_events=True)  # type: ignore[attr-defined]
    backend.feed(b"".join(f"data: {json.dumps(e)}\n\n".encode() for e in events))
    response = backend.finish()
    kept = backend.take_events()
    assert [i.item_id for i in response.items] == [by_name[n]["id"] for n in layout]
    if read_as == "sse":
        forwarded = list(wire.read_sse([b"".join(wire.encode_sse(e) for e in kept)]))
    elif read_as == "json_lines":
        forwarded = list(wire.read_json_lines([wire.encode_json(e) for e in kept]))
    else:
        forwarded = kept
    front_end = impl.StreamAssembler("canonical")  # type: ignore[attr-defined]
    for event in forwarded:
        front_end.feed_event(event)
    rebuilt = front_end.finish()
    assert (rebuilt.items, rebuilt.finish_reason, rebuilt.usage) == (
        response.items,
        response.finish_reason,
        response.usage,
    )


def test_an_unplaced_item_start_is_written_as_before() -> None:
    """``position`` is written only when set: the wire of every other item is unchanged."""
    assert (
        wire.encode_json(ItemStarted(item_id="a", kind="text")) == '{"type":"item_started","item_id":"a","kind":"text"}'
    )
    placed = ItemStarted(item_id="a", kind="reasoning", position=0)
    assert wire.decode_json(wire.encode_json(placed)) == placed


@pytest.mark.parametrize("position", [-1, 1.0, True, "0", 2**64])
def test_a_position_that_is_not_a_count_is_malformed(impl: ModuleType, position: Any) -> None:
    assembler = impl.StreamAssembler("canonical")  # type: ignore[attr-defined]
    assembler.feed_event(_START)
    with pytest.raises(decisions.StreamError) as caught:
        assembler.feed_event({"type": "item_started", "item_id": "a", "kind": "text", "position": position})
    assert caught.value.code == "MALFORMED_EVENT"


@pytest.mark.parametrize(
    "arguments",
    [
        '{"a": 1, "a": "123456789"}',  # the repeat's own value breaks the limit first
        '{"a": 1, "a": 2, "b": "123456789"}',
        '{"a": 1, "a": {"b": "123456789"}}',
        '[{"a": 1, "a": 2}, "123456789"]',  # the object closes first: DUPLICATE_KEY, no limit error
    ],
)
def test_a_repeated_key_keeps_the_limit_errors_loads_gives(impl: ModuleType, arguments: str) -> None:
    """``loads`` compares keys when their object closes: a limit broken
    before that comes first, and the snapshot raises it as for any text,
    while the view stays where it was before the repeat."""
    limits = dataclasses.replace(decisions.DEFAULT_LIMITS, max_string_bytes=8)
    with pytest.raises(decisions.ParseError) as strict:
        decisions.loads(arguments, limits=limits)
    assembler = impl.StreamAssembler("canonical", limits=limits)  # type: ignore[attr-defined]
    assembler.feed_event(_START)
    assembler.feed_event(_CALL)
    assembler.feed_event({"type": "tool_arguments_delta", "item_id": "i1", "delta": arguments})
    if strict.value.code == "DUPLICATE_KEY":
        assert assembler.snapshot().calls[0].partial in ({"a": 1}, [{"a": 1}])
        return
    with pytest.raises(decisions.ParseError) as shown:
        assembler.snapshot()
    assert (shown.value.code, shown.value.pos) == (strict.value.code, strict.value.pos)


@pytest.mark.parametrize("position", [0, 1, 2, 2**63 - 1, 2**63, 2**64 - 1])
@pytest.mark.parametrize("as_body", [False, True])
def test_a_position_past_the_end_puts_the_item_last(impl: ModuleType, position: int, as_body: bool) -> None:
    """Any count is a position: past the end is last (the pure twin's
    ``list.insert`` raised OverflowError beyond ``sys.maxsize``)."""
    events: list[dict[str, Any]] = [_START]
    for item_id, at in (("a", None), ("b", None), ("c", position)):
        start = {"type": "item_started", "item_id": item_id, "kind": "text"}
        events += [start if at is None else {**start, "position": at}, {"type": "item_ended", "item_id": item_id}]
    events.append({"type": "response_finished", "finish_reason": "stop"})
    if as_body:
        response = impl.normalize(json.dumps(events), provider="canonical")  # type: ignore[attr-defined]
    else:
        assembler = impl.StreamAssembler("canonical")  # type: ignore[attr-defined]
        for event in events:
            assembler.feed_event(event)
        response = assembler.finish()
    order = ["a", "b"]
    order.insert(min(position, 2), "c")
    assert [item.item_id for item in response.items] == order


_LINES = '{"type":"response_started"}\r\n\n{"type":"text_delta","item_id":"t","delta":"a\u2028b"}\n'


@pytest.mark.parametrize("text", [_LINES, _LINES.encode()])
def test_json_lines_read_from_the_whole_text(text: str | bytes) -> None:
    """The whole text is split at each newline, never at U+2028: bytes raised
    AttributeError ('int' object has no attribute 'strip'), a str was read a
    character at a time (``UNEXPECTED_END`` at line 1)."""
    assert list(wire.read_json_lines(text)) == [ResponseStarted(), TextDelta(item_id="t", delta="a\u2028b")]


def test_a_json_line_of_another_type_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="line 2"):
        list(wire.read_json_lines(['{"type":"response_started"}', 3]))  # type: ignore[list-item]


def test_sse_read_from_all_the_bytes_at_once() -> None:
    """One ``bytes`` is the whole stream (it was iterated as ints: TypeError)."""
    frames = b"".join(wire.encode_sse(e) for e in (ResponseStarted(), ItemStarted(item_id="t", kind="text")))
    assert list(wire.read_sse(frames)) == list(wire.read_sse([frames]))
