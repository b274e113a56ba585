"""Adversarial resource use: snapshots and provider-controlled names.

Section 1, snapshots: the partial parse behind ``StreamAssembler.snapshot()``
applies the same ``Limits`` as ``loads`` applies to the complete text (the
same code at the same offset), and a snapshot after every delta costs the new
text, not what was accumulated (ratios only, never absolute times).

Section 2, unknown names: what a mapper keeps of the event types, item types
and part keys it does not know is bounded (names kept, their length, one
overflow counter), the same on both backends, for every provider.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from dataclasses import replace
from types import ModuleType
from typing import Any, Callable

import pytest

from decisions import DEFAULT_LIMITS, Limits
from decisions._pure.providers._unknown import MAX_NAME_CHARS, MAX_NAMES, MAX_RECORDED_ITEMS, OVERFLOW
from decisions.errors import ParseError, StreamError
from decisions.types import ResponseStarted, ToolArgumentsDelta, ToolCallStarted

# ------------------------------------------------------------------ 1. snapshots


def _assembler(impl: ModuleType, limits: Limits | None = None) -> Any:
    asm = impl.StreamAssembler("canonical", limits=limits)
    asm.feed_event(ResponseStarted(response_id="r", model=None))
    asm.feed_event(ToolCallStarted(item_id="a", call_id="c", name="f"))
    return asm


def _snapshot_error(impl: ModuleType, text: str, limits: Limits, step: int) -> ParseError | None:
    """Feed ``text`` in deltas of ``step`` characters, a snapshot after each;
    the last snapshot error. Once one snapshot raises, every later one raises
    the same error, except that the text growing past ``max_document_bytes``
    turns it into ``DOCUMENT_TOO_LARGE`` (which ``loads`` checks first)."""
    asm = _assembler(impl, limits)
    found: ParseError | None = None
    for i in range(0, len(text), step):
        asm.feed_event(ToolArgumentsDelta(item_id="a", delta=text[i : i + step]))
        try:
            asm.snapshot()
        except ParseError as error:
            if found is not None and error.code != "DOCUMENT_TOO_LARGE":
                assert (error.code, error.offset, error.path) == (found.code, found.offset, found.path)
            found = error
        else:
            assert found is None, "a snapshot after a limit error must raise too"
    assert asm.state == "streaming"  # a snapshot only looks: the stream goes on
    return found


L = DEFAULT_LIMITS
#: (limits, partial arguments that already break them, a valid completion, code, offset)
LIMIT_CASES: list[tuple[Limits, str, str, str, int]] = [
    (replace(L, max_number_length=10), '{"a": 12345678901', "234}", "NUMBER_TOO_LONG", 6),
    (replace(L, max_number_length=10), '{"a": -1.5e+00000', "1}", "NUMBER_TOO_LONG", 6),
    (replace(L, max_number_length=10), "[1, 2, 0.123456789", "01]", "NUMBER_TOO_LONG", 7),
    (L, '{"a": ' + "9" * 101, "}", "NUMBER_TOO_LONG", 6),
    (replace(L, max_string_bytes=8), '{"a": "abcdefghi', '"}', "STRING_TOO_LONG", 6),
    (replace(L, max_string_bytes=8), '{"a": "\u00e9\u00e9\u00e9\u00e9\u00e9', '"}', "STRING_TOO_LONG", 6),
    (replace(L, max_string_bytes=8), '{"a": "\\n\\u00e9\\ud83d\\ude00xx', '"}', "STRING_TOO_LONG", 6),
    (replace(L, max_string_bytes=8), '{"b": 1, "abcdefghi', 'jk": 1}', "STRING_TOO_LONG", 9),
    (replace(L, max_depth=3), '{"a": [[[', "]]]}", "DEPTH_EXCEEDED", 8),
    (replace(L, max_depth=3), "[[[{", "}]]]", "DEPTH_EXCEEDED", 3),
    (L, "[" * 65, "]" * 65, "DEPTH_EXCEEDED", 64),
    (replace(L, max_array_items=3), '{"a": [1, "x", {}, n', "ull]}", "TOO_MANY_ITEMS", 19),
    (replace(L, max_array_items=3), "[[], [], [], [", "]]", "TOO_MANY_ITEMS", 13),
    (replace(L, max_object_members=2), '{"a": 1, "b": {}, "', 'c": 1}', "TOO_MANY_MEMBERS", 18),
    (replace(L, max_values=4), '{"a": [1, 2], "b": t', "rue}", "TOO_MANY_VALUES", 19),
    (replace(L, max_values=4), '[1, [2, "', 'x"]]', "TOO_MANY_VALUES", 8),
    (replace(L, max_document_bytes=16), '{"a": "\u00e9\u00e9\u00e9\u00e9\u00e9', '"}', "DOCUMENT_TOO_LARGE", 0),
    (replace(L, max_document_bytes=16, max_depth=2), '[[[ "xxxxxxxxxxxx', '"]]]', "DOCUMENT_TOO_LARGE", 0),
]


@pytest.mark.parametrize("step", [1, 3, 1000])
@pytest.mark.parametrize("limits, partial, rest, code, offset", LIMIT_CASES)
def test_partial_arguments_obey_every_limit(
    impl: ModuleType, limits: Limits, partial: str, rest: str, code: str, offset: int, step: int
) -> None:
    """The snapshot raises the code and offset ``loads`` gives the complete text."""
    with pytest.raises(ParseError) as complete:
        impl.loads(partial + rest, limits=limits)
    assert (complete.value.code, complete.value.offset) == (code, offset)
    error = _snapshot_error(impl, partial, limits, step)
    assert error is not None
    assert (error.code, error.offset, error.layer, error.path) == (code, offset, "parse", "$.calls[0].arguments")
    assert (error.lineno, error.colno) == (complete.value.lineno, complete.value.colno)


@pytest.mark.parametrize("limits, partial, rest, code, offset", LIMIT_CASES)
def test_just_under_each_limit_the_partial_view_is_shown(
    impl: ModuleType, limits: Limits, partial: str, rest: str, code: str, offset: int
) -> None:
    """One character less (or the limit one higher) is no error."""
    looser = replace(
        limits,
        **{
            name: getattr(limits, name) + 1
            for name in ("max_number_length", "max_depth", "max_array_items", "max_object_members", "max_values")
        },
        max_string_bytes=limits.max_string_bytes + 2,  # one more character of up to two bytes
        max_document_bytes=limits.max_document_bytes + 2,
    )
    assert _snapshot_error(impl, partial[:-1], limits, 1) is None or code == "DOCUMENT_TOO_LARGE"
    assert _snapshot_error(impl, partial, looser, 1) is None


def test_a_limit_error_names_the_call_and_the_stream_goes_on(impl: ModuleType) -> None:
    asm = _assembler(impl, replace(L, max_number_length=5))
    asm.feed_event(ToolCallStarted(item_id="b", call_id="c2", name="g"))
    asm.feed_event(ToolArgumentsDelta(item_id="a", delta='{"ok": 1}'))
    asm.feed_event(ToolArgumentsDelta(item_id="b", delta='{"n": 1234567'))
    with pytest.raises(ParseError) as info:
        asm.snapshot()
    assert (info.value.code, info.value.offset, info.value.path) == ("NUMBER_TOO_LONG", 6, "$.calls[1].arguments")
    asm.feed_event(ToolArgumentsDelta(item_id="b", delta="}"))
    with pytest.raises(ParseError):
        asm.snapshot()
    assert asm.state == "streaming"


def test_a_million_digit_number_is_refused_at_the_limit(impl: ModuleType) -> None:
    """The reported case: one snapshot of an unfinished 10^6-digit number."""
    asm = _assembler(impl)
    asm.feed_event(ToolArgumentsDelta(item_id="a", delta='{"n": ' + "7" * 10**6))
    with pytest.raises(ParseError) as info:
        asm.snapshot()
    assert (info.value.code, info.value.offset) == ("NUMBER_TOO_LONG", 6)


def test_syntax_errors_keep_the_last_good_view(impl: ModuleType) -> None:
    """Only limits raise; text that stops being JSON shows what was good."""
    for text, view in [
        ('{"a": 1, +', {"a": 1}),
        ('{"a": 01', {}),
        ('{"a": 01}', {}),
        ('{"a": 1.5.', {}),
        ('{"a": 1, "b": 1.5.}', {"a": 1}),
        ('{"a": truex', {"a": True}),
        ("[1] 2", [1]),
        ('{"a": 1.', {}),
        ('{"a": -', {}),
        ('{"a": 1e+', {}),
        ('{"a": 1e+5', {"a": 1e5}),
    ]:
        asm = _assembler(impl)
        asm.feed_event(ToolArgumentsDelta(item_id="a", delta=text))
        assert asm.snapshot().calls[0].partial == view, text


def test_an_unchanged_call_gives_the_same_objects(impl: ModuleType) -> None:
    """A snapshot with nothing new for a call reuses its view and its text."""
    asm = _assembler(impl)
    asm.feed_event(ToolArgumentsDelta(item_id="a", delta='{"a": [1, 2], "b": "x'))
    first = asm.snapshot().calls[0]
    second = asm.snapshot().calls[0]
    assert second.partial is first.partial and second.arguments is first.arguments
    assert first.partial == {"a": [1, 2], "b": "x"}
    asm.feed_event(ToolArgumentsDelta(item_id="a", delta="y"))
    third = asm.snapshot().calls[0]
    assert third.partial == {"a": [1, 2], "b": "xy"} and first.partial == {"a": [1, 2], "b": "x"}


WIDE = replace(L, max_depth=10_000, max_values=10**7, max_array_items=10**7, max_number_length=10_000)


def _shapes() -> dict[str, Callable[[int], tuple[str, Limits]]]:
    """Arguments text of about ``n`` characters, and the limits it is fed under."""
    return {
        # within the limits: the view grows with the text
        "long string": lambda n: ('{"content": "' + "abcdef\\n\\u00e9" * (n // 14), L),
        "many keys": lambda n: (
            "{" + ",".join(f'"k{i}":{i}' for i in range(n // 10)),
            replace(L, max_object_members=10**6),
        ),
        "many closed objects": lambda n: ("[" + ",".join(f'{{"k":{i}}}' for i in range(n // 8)), L),
        # past a limit: the view stops growing (the reported cases)
        "long literal": lambda n: ('{"n": ' + "1234567890" * (n // 10), L),
        "long literal, raised limit": lambda n: ('{"n": ' + "1234567890" * (n // 10), WIDE),
        "deep nesting": lambda n: ('{"a":' * (n // 5), L),
        "many members past the limit": lambda n: (
            "{" + ",".join(f'"k{i}":{i}' for i in range(n // 10)),
            replace(L, max_object_members=300),
        ),
    }


#: characters of the smaller text per shape: the reported literal is quadratic
#: from 10^5 on; an open object's or array's entries are copied into each view
#: (C-level, bounded by max_object_members / max_array_items), which stays
#: small next to the per-delta work up to a few thousand entries
_SIZES: dict[str, int] = {
    "long literal": 20_000,
    "long literal, raised limit": 20_000,
    "many keys": 2_000,
    "many closed objects": 2_000,
}


def _stream_time(impl: ModuleType, text: str, limits: Limits, step: int = 16) -> float:
    """CPU time of a snapshot after each ``step``-character delta over ``text``."""
    asm = _assembler(impl, limits)
    deltas = [ToolArgumentsDelta(item_id="a", delta=text[i : i + step]) for i in range(0, len(text), step)]
    start = time.thread_time()
    for delta in deltas:
        asm.feed_event(delta)
        try:
            asm.snapshot()
        except ParseError:
            pass
    return time.thread_time() - start


@pytest.mark.parametrize("shape", list(_shapes()))
def test_snapshot_after_every_delta_is_linear(impl: ModuleType, shape: str) -> None:
    """10x the text within 20x the time (medians of interleaved runs). A
    re-scan, a literal grown a character at a time or an unbounded view would
    make it 100x. The view's own copy (an open string, the open containers'
    entries: bounded by the limits) is C-level and small at these sizes. Not
    here: nesting thousands deep under a raised ``max_depth``, where each
    snapshot must build a new object per open level (each snapshot is its own
    value), so it costs up to ``max_depth`` copies (64 by default)."""
    make = _shapes()[shape]
    size = _SIZES.get(shape, 4_000)
    small_text, limits = make(size)
    large_text, _ = make(10 * size)
    small, large = [], []
    for _ in range(3):
        small.append(_stream_time(impl, small_text, limits))
        large.append(_stream_time(impl, large_text, limits))
    ratio = statistics.median(large) / statistics.median(small)
    assert ratio < 20, f"{shape}: {ratio:.1f}"


def test_views_follow_their_calls_when_the_response_places_an_item(impl: ModuleType) -> None:
    """A reasoning item only in ``response.completed`` is placed before the
    streamed calls: a snapshot after ``finish`` shows each call's own partial
    value (the native view was kept by position, giving one call the other's)."""
    numbers = iter(range(100))

    def event(**fields: Any) -> str:
        return json.dumps({**fields, "sequence_number": next(numbers)})

    calls = [("fc_a", "call_a", '{"path":"a.txt","content":"a longer text"}'), ("fc_b", "call_b", '{"x":1}')]
    events = [event(type="response.created", response={"id": "r", "model": "m", "status": "in_progress", "output": []})]
    done = []
    for index, (item_id, call_id, args) in enumerate(calls):
        item = {"type": "function_call", "id": item_id, "call_id": call_id, "name": "f", "arguments": args}
        events += [
            event(type="response.output_item.added", output_index=index, item={**item, "arguments": ""}),
            event(type="response.function_call_arguments.delta", output_index=index, item_id=item_id, delta=args),
            event(type="response.output_item.done", output_index=index, item={**item, "status": "completed"}),
        ]
        done.append({**item, "status": "completed"})
    reasoning = {"type": "reasoning", "id": "rs", "summary": [{"type": "summary_text", "text": "t"}]}
    response = {"id": "r", "model": "m", "status": "completed", "output": [reasoning, *done]}
    asm = impl.StreamAssembler("openai-responses")
    for data in events:
        asm.feed_event(data)
    expected = [(c.call_id, c.partial) for c in asm.snapshot().calls]
    assert expected == [("call_a", {"path": "a.txt", "content": "a longer text"}), ("call_b", {"x": 1})]
    asm.feed_event(event(type="response.completed", response=response))
    assert [type(item).__name__ for item in asm.finish().items] == ["ReasoningItem", "ToolCallItem", "ToolCallItem"]
    assert [(c.call_id, c.partial) for c in asm.snapshot().calls] == expected


# ------------------------------------------------------------------ 2. unknown names

DISTINCT = 100_000


def _name(i: int) -> str:
    return f"future_{i}"


def _expected(names: list[str]) -> dict[str, int]:
    """The bounded count, computed the slow, obvious way."""
    kept: dict[str, int] = {}
    for name in names:
        if len(name) > MAX_NAME_CHARS:
            name = name[:MAX_NAME_CHARS] + "\u2026"
        if name in kept:
            kept[name] += 1
        elif len([k for k in kept if k != OVERFLOW]) < MAX_NAMES:
            kept[name] = 1
        else:
            kept[OVERFLOW] = kept.get(OVERFLOW, 0) + 1
    return kept


def _names() -> list[str]:
    """Repeats among the kept names, a long name, then many distinct names."""
    long = "x" * 10_000 + "\u00e9"
    head = [_name(0), _name(1), _name(0), long, long + "y", "\u00e9" * (MAX_NAME_CHARS + 1)]
    return head + [_name(i) for i in range(2, DISTINCT)] + [_name(1), long]


def _sse(events: list[tuple[str | None, dict[str, Any]]]) -> bytes:
    return b"".join(
        (b"" if name is None else f"event: {name}\n".encode()) + b"data: " + json.dumps(data).encode() + b"\n\n"
        for name, data in events
    )


def _anthropic(names: list[str]) -> tuple[bytes, dict[str, int]]:
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [],
        "stop_reason": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    events: list[tuple[str | None, dict[str, Any]]] = [("message_start", {"type": "message_start", "message": message})]
    events += [(name, {"type": name}) for name in names]
    events += [
        (
            "message_delta",
            {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 1}},
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return _sse(events), _expected(names)


def _responses(names: list[str]) -> tuple[bytes, dict[str, int]]:
    kinds = ["response." + name for name in names]
    response = {"id": "resp_1", "model": "m", "status": "in_progress", "output": []}
    events = [{"type": "response.created", "response": response}]
    events += [{"type": kind} for kind in kinds]
    events.append(
        {
            "type": "response.completed",
            "response": {**response, "status": "completed", "usage": {"input_tokens": 1, "output_tokens": 1}},
        }
    )
    numbered = [(None, {**event, "sequence_number": i}) for i, event in enumerate(events)]
    return _sse(numbered), _expected(kinds)


def _canonical(names: list[str]) -> tuple[bytes, dict[str, int]]:
    events = [(None, {"type": "response_started"})] + [(None, {"type": name}) for name in names]
    events.append((None, {"type": "response_finished", "finish_reason": "stop"}))
    return _sse(events), _expected(names)


STREAMS: dict[str, Callable[[list[str]], tuple[bytes, dict[str, int]]]] = {
    "anthropic": _anthropic,
    "openai-responses": _responses,
    "canonical": _canonical,
}


@pytest.mark.parametrize("provider", list(STREAMS))
def test_unknown_names_are_bounded(impl: ModuleType, provider: str) -> None:
    """~10^5 distinct unknown names: at most MAX_NAMES kept, each cut to
    MAX_NAME_CHARS characters, the rest counted under OVERFLOW; both backends
    give exactly the dict computed here."""
    data, expected = STREAMS[provider](_names())
    asm = impl.StreamAssembler(provider)
    asm.feed(data)
    unknown = dict(asm.finish().unknown_events)
    assert len(unknown) == MAX_NAMES + 1
    assert unknown == expected
    assert unknown[OVERFLOW] == DISTINCT + 2 - MAX_NAMES  # 4 distinct names first, 2 of them long
    assert all(len(name) <= MAX_NAME_CHARS + 1 for name in unknown)
    assert sum(unknown.values()) == len(_names())


def test_the_bounded_dict_is_the_same_on_both_backends(both: tuple[ModuleType, ModuleType]) -> None:
    native, pure = both
    for provider, build in STREAMS.items():
        data, _ = build(_names()[:5_000])
        results = []
        for impl in (native, pure):
            asm = impl.StreamAssembler(provider)
            asm.feed(data)
            results.append(dict(asm.finish().unknown_events))
        assert results[0] == results[1], provider


def test_whole_bodies_are_bounded_too(impl: ModuleType) -> None:
    names = [_name(i) for i in range(1_000)]
    body = [
        {"type": "response_started"},
        *({"type": n} for n in names),
        {"type": "response_finished", "finish_reason": "stop"},
    ]
    assert dict(impl.normalize(json.dumps(body), provider="canonical").unknown_events) == _expected(names)


def test_unknown_anthropic_blocks_are_bounded(impl: ModuleType) -> None:
    """Blocks of a server-run tool keep state (to pair start and stop): past
    MAX_RECORDED_ITEMS of them the stream is refused, like too many items."""
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [],
        "stop_reason": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    events: list[tuple[str | None, dict[str, Any]]] = [("message_start", {"type": "message_start", "message": message})]
    for index in range(MAX_RECORDED_ITEMS):
        events.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": {"type": "server_tool_use"}},
            )
        )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    asm = impl.StreamAssembler("anthropic")
    asm.feed(_sse(events))
    extra = (
        "content_block_start",
        {"type": "content_block_start", "index": MAX_RECORDED_ITEMS, "content_block": {"type": "server_tool_use"}},
    )
    with pytest.raises(StreamError) as info:
        asm.feed(_sse([extra]))
    assert info.value.code == "TOO_MANY_ITEMS_IN_RESPONSE"


_RSS_SCRIPT = r"""
import json, resource, sys
from decisions import _pure
from decisions._backend import native_module
impl = _pure if sys.argv[1] == "pure" else native_module()
count = int(sys.argv[2])
asm = impl.StreamAssembler("canonical")
asm.feed(b'data: {"type":"response_started"}\n\n')
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
batch = 10_000
for start in range(0, count, batch):
    asm.feed(b"".join(b'data: {"type":"n%d_%s"}\n\n' % (i, b"x" * 40) for i in range(start, start + batch)))
asm.feed(b'data: {"type":"response_finished","finish_reason":"stop"}\n\n')
kept = len(asm.finish().unknown_events)
print(json.dumps([kept, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before]))
"""


@pytest.mark.slow
@pytest.mark.parametrize("count", [1_500_000])
def test_memory_stays_flat_under_millions_of_names(impl: ModuleType, count: int) -> None:
    """~90 MiB of distinct unknown names (under max_stream_events): the peak
    RSS grows by a few MiB, not by what was fed."""
    name = "pure" if impl.__name__.endswith("_pure") else "native"
    out = subprocess.run(
        [sys.executable, "-c", _RSS_SCRIPT, name, str(count)], capture_output=True, text=True, check=True
    )
    kept, growth_kib = json.loads(out.stdout)
    assert kept == MAX_NAMES + 1
    assert growth_kib < 32 * 1024
