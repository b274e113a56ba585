"""The envelope rule's errors as a caller reads them, on both backends: which
rule was broken (the message names it and its bound), where (the JSON path,
and the offset when the model wrote it inside a tool call's arguments), and
the checks made over the whole event text first (UTF-8, lone surrogates)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from decisions import Limits
from decisions._pure import envelope as _pure_envelope
from decisions.errors import OutputError


@pytest.fixture(autouse=True)
def _fresh_envelope_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with the pure twin's derived-limits cache empty, so the
    derivation runs in it whatever ran before (``make mutation`` runs a test in
    a process where earlier tests filled the cache)."""
    monkeypatch.setattr(_pure_envelope, "_limits", {})
    monkeypatch.setattr(_pure_envelope, "_last", (None, None))
    monkeypatch.setattr(_pure_envelope, "_last_decoder", None)


ANTHROPIC_START = '{"type":"message_start","message":{"id":"m","model":"c","content":[],"usage":{}}}'


def outcome(impl: ModuleType, provider: str, data: str | bytes, limits: Limits | None = None) -> tuple[Any, ...]:
    """What one event's data does to a fresh stream of ``provider``."""
    asm = impl.StreamAssembler(provider, limits=limits) if limits is not None else impl.StreamAssembler(provider)
    if provider == "anthropic":
        asm.feed_event(ANTHROPIC_START)
    raw = data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")
    try:
        asm.feed(b"data: " + raw + b"\n\n")
    except OutputError as error:
        return (type(error).__name__, error.code, error.path, error.offset, error.message)
    return ("ok",)


def body(impl: ModuleType, provider: str, data: str | bytes, limits: Limits | None = None) -> tuple[Any, ...]:
    try:
        impl.normalize(data, provider=provider, limits=limits)
    except OutputError as error:
        return (type(error).__name__, error.code, error.path, error.offset, error.message)
    return ("ok",)


def malformed(message: str, path: str | None = None) -> tuple[Any, ...]:
    return ("StreamError", "MALFORMED_EVENT", path, None, message)


# ---------------------------------------------------------------- the whole text first


@pytest.mark.parametrize("data", [b'{"type":"ping","s":"\xff"}', b"\xc3", b'{"type":"ping"}\xed\xa0\x80'])
def test_bytes_that_are_not_utf8(impl: ModuleType, data: bytes) -> None:
    # a body (the SSE layer checks a stream's bytes before the envelope does)
    assert body(impl, "anthropic", data) == malformed("event data is not valid UTF-8")
    assert body(impl, "anthropic", bytearray(data)) == malformed("event data is not valid UTF-8")


@pytest.mark.parametrize(
    "escape",
    ["\\ud800", "\\uD800", "\\udbff", "\\uDBFF", "\\udc00", "\\uDFFF", "\\ud800\\u0041", "\\udc00\\ud800", "a\\ud83d"],
)
def test_a_lone_surrogate_escape_anywhere(impl: ModuleType, escape: str) -> None:
    for data in (f'{{"type":"ping","s":"{escape}"}}', f'{{"type":"ping","{escape}":1}}'):
        assert outcome(impl, "anthropic", data) == malformed("event data has a lone surrogate escape")


@pytest.mark.parametrize(
    "escape", ["\\ud83d\\ude00", "\\uD83D\\uDE00", "\\\\ud800", "\\\\\\\\ud800", "\\\\uD800\\\\udc00", "\\u00d8"]
)
def test_a_pair_or_an_escaped_backslash_is_not_a_lone_surrogate(impl: ModuleType, escape: str) -> None:
    assert outcome(impl, "anthropic", f'{{"type":"ping","s":"{escape}"}}') == ("ok",)


def test_the_done_marker_passes_and_a_near_miss_does_not(impl: ModuleType) -> None:
    assert outcome(impl, "openai-chat", "[DONE]") == ("ok",)
    assert outcome(impl, "openai-chat", "[DONE] ") == malformed("event data is not valid JSON")
    assert outcome(impl, "openai-chat", "[done]") == malformed("event data is not valid JSON")


@pytest.mark.parametrize("data", ['{"type":"ping"', '{"type":"ping",}', '{"type":"ping"} x', "", "[1,]"])
def test_bad_syntax_is_not_valid_json_with_no_path(impl: ModuleType, data: str) -> None:
    assert outcome(impl, "anthropic", data) == malformed("event data is not valid JSON")


# ---------------------------------------------------------------- each rule, named with its bound


def test_each_rule_outside_the_arguments(impl: ModuleType) -> None:
    deep = '{"type":"ping","a":' + "[" * 100 + "]" * 100 + "}"
    assert outcome(impl, "anthropic", deep)[1] == "MALFORMED_EVENT"
    assert outcome(impl, "anthropic", deep.replace("[", "[[", 1).replace("]", "]]", 1)) == malformed(
        "event data has nesting deeper than 100 levels", "$.a" + "[0]" * 99
    )
    assert outcome(impl, "anthropic", '{"type":"ping","n":1.%s}' % ("1" * 98)) == ("ok",)
    assert outcome(impl, "anthropic", '{"type":"ping","n":[1.%s]}' % ("1" * 99)) == malformed(
        "event data has a number longer than 100 characters", "$.n[0]"
    )
    assert outcome(impl, "anthropic", '{"type":"ping","n":{"m":%d}}' % 2**64) == malformed(
        "event data has a number beyond 64 bits or a float that overflows", "$.n.m"
    )
    assert outcome(impl, "anthropic", '{"type":"ping","n":1e999}') == malformed(
        "event data has a number beyond 64 bits or a float that overflows", "$.n"
    )


def test_a_number_bound_above_the_envelope_minimum_is_the_callers(impl: ModuleType) -> None:
    limits = Limits(max_number_length=150)
    assert outcome(impl, "anthropic", '{"type":"ping","n":1.%s}' % ("1" * 148), limits) == ("ok",)
    assert outcome(impl, "anthropic", '{"type":"ping","n":1.%s}' % ("1" * 149), limits) == malformed(
        "event data has a number longer than 150 characters", "$.n"
    )
    # below the minimum, the envelope's 100 characters hold
    small = Limits(max_number_length=5)
    assert outcome(impl, "anthropic", '{"type":"ping","n":1.%s}' % ("1" * 98), small) == ("ok",)


def test_a_body_larger_than_one_event(impl: ModuleType) -> None:
    text = '{"type":"message","id":"m","model":"c","content":[{"type":"text","text":"%s"}],"stop_reason":"end_turn","usage":{}}'
    limits = Limits(max_sse_event_bytes=150)
    assert body(impl, "anthropic", text % ("x" * 30), limits) == ("ok",)
    assert body(impl, "anthropic", text % ("x" * 60), limits) == malformed("event data has more than 150 bytes", "$")


@pytest.mark.parametrize("as_bytes", [False, True])
def test_a_chat_body_larger_than_one_event(impl: ModuleType, as_bytes: bool) -> None:
    """The same for a Chat body, whose reader takes it parsed without the
    repeated-key check: the bound holds there too, for str and bytes."""
    text = '{"id":"c","choices":[{"index":0,"message":{"content":"%s"},"finish_reason":"stop"}]}'
    limits = Limits(max_sse_event_bytes=150)
    at_bound = text % ("x" * (150 - len(text % "")))
    for data, expected in (
        (at_bound, ("ok",)),
        (text % ("x" * 100), malformed("event data has more than 150 bytes", "$")),
    ):
        assert body(impl, "openai-chat", data.encode() if as_bytes else data, limits) == expected


# ---------------------------------------------------------------- where: the path


@pytest.mark.parametrize(
    ("data", "path"),
    [
        ('{"type":"ping","type":"x"}', "$.type"),
        ('{"type":"ping","a":[1,{"b":[0,0,{"c":1,"c":2}]}]}', "$.a[1].b[2].c"),
        ('{"type":"ping","s":"a\\"{[,","a":[{"k":1},{"k":{"z":1,"z":1}}]}', "$.a[1].k.z"),
        ('{"type":"ping","a":[[],[{}],[1,2,{"x":[]}]],"b":{"c":{},"d":1,"d":2}}', "$.b.d"),
        ('{"type":"ping","a\\"b":{"k\\\\":1,"k\\\\":2}}', '$["a\\"b"]["k\\\\"]'),
        ('{"type":"ping","a":{"}":{"]":1,"]":1}}}', '$.a["}"]["]"]'),
        ('{"type":"ping","a":[{"x":"],[{"},{"y":1,"y":1}]}', "$.a[1].y"),
        ('{"type":"ping","a":["x",{"b":1,"b":2}]}', "$.a[1].b"),
        ('{"type":"ping","a":[["k","v"],"w",{"b":[],"b":2}]}', "$.a[2].b"),
    ],
)
def test_the_path_of_a_repeated_key(impl: ModuleType, data: str, path: str) -> None:
    assert outcome(impl, "anthropic", data) == malformed("event data has a repeated key", path)


# ---------------------------------------------------------------- inside the arguments: the model's error


GEMINI = '{"candidates":[{"content":{"parts":[{"text":"a"},%s]},"finishReason":"STOP"}]}'
GEMINI_ARGS = "$.candidates[0].content.parts[1].functionCall"


def test_a_rule_broken_inside_arguments_is_the_parsers_error_with_its_offset(impl: ModuleType) -> None:
    part = '{"functionCall":{"name":"f","args":{"a":{"b":1,"b":2}}}}'
    data = GEMINI % part
    assert outcome(impl, "gemini", data) == (
        "ParseError",
        "DUPLICATE_KEY",
        GEMINI_ARGS + ".args.a.b",
        data.index('"b":2'),
        "tool arguments sent as a JSON object have a repeated key",
    )
    deep = '{"functionCall":{"name":"f","args":' + '{"a":' * 101 + "1" + "}" * 101 + "}}"
    data = GEMINI % deep
    # the event's own seven levels count: the 94th object of the arguments is the 101st level
    assert outcome(impl, "gemini", data) == (
        "ParseError",
        "DEPTH_EXCEEDED",
        GEMINI_ARGS + ".args" + ".a" * 93,
        data.index('{"a":') + 5 * 93,
        "tool arguments sent as a JSON object have nesting deeper than 100 levels",
    )
    big = '{"functionCall":{"name":"f","args":{"n":9.%s}}}' % ("9" * 99)
    got = outcome(impl, "gemini", GEMINI % big)
    assert got[:3] == ("ParseError", "NUMBER_TOO_LONG", GEMINI_ARGS + ".args.n")
    assert got[4] == "tool arguments sent as a JSON object have a number longer than 100 characters"


def test_the_argument_field_itself_repeated_is_inside(impl: ModuleType) -> None:
    part = '{"functionCall":{"name":"f","args":{},"args":{"x":1}}}'
    got = outcome(impl, "gemini", GEMINI % part)
    assert got[:3] == ("ParseError", "DUPLICATE_KEY", GEMINI_ARGS + ".args")


@pytest.mark.parametrize(
    ("part", "path"),
    [
        # beside the arguments, in the same call: the provider's
        ('{"functionCall":{"name":"f","args":{},"x":{"b":1,"b":2}}}', GEMINI_ARGS + ".x.b"),
        ('{"functionCall":{"name":"f","name":"g","args":{}}}', GEMINI_ARGS + ".name"),
        # a field named like the arguments one level off
        ('{"args":{"b":1,"b":2}}', "$.candidates[0].content.parts[1].args.b"),
    ],
)
def test_a_rule_broken_beside_the_arguments_is_the_providers(impl: ModuleType, part: str, path: str) -> None:
    assert outcome(impl, "gemini", GEMINI % part) == malformed("event data has a repeated key", path)


def test_an_object_where_the_field_wants_an_array_index_is_not_inside(impl: ModuleType) -> None:
    # "parts": {"0": ...} is a key, not an index: the step does not match the field's array
    data = '{"candidates":[{"content":{"parts":{"0":{"functionCall":{"name":"f","args":{"b":1,"b":2}}}}}}]}'
    assert outcome(impl, "gemini", data) == malformed(
        "event data has a repeated key", '$.candidates[0].content.parts["0"].functionCall.args.b'
    )
    # and "candidates": [..] as an object key named like a step is not the field either
    data = '{"candidates":{"content":{"parts":[{"functionCall":{"name":"f","args":{"b":1,"b":2}}}]}}}'
    assert outcome(impl, "gemini", data)[:2] == ("StreamError", "MALFORMED_EVENT")


def test_anthropic_argument_fields(impl: ModuleType) -> None:
    start = (
        '{"type":"content_block_start","index":0,'
        '"content_block":{"type":"tool_use","id":"t","name":"f","input":{"p":1,"p":2}}}'
    )
    got = outcome(impl, "anthropic", start)
    assert got[:4] == ("ParseError", "DUPLICATE_KEY", "$.content_block.input.p", start.index('"p":2'))
    message = (
        '{"type":"message","id":"m","model":"c","content":[{"type":"text","text":"a"},'
        '{"type":"tool_use","id":"t","name":"f","input":{"p":1,"p":2}}],"stop_reason":"tool_use","usage":{}}'
    )
    got = body(impl, "anthropic", message)
    assert got[:4] == ("ParseError", "DUPLICATE_KEY", "$.content[1].input.p", message.index('"p":2'))


def test_the_callers_argument_bounds_do_not_bound_the_envelope(impl: ModuleType) -> None:
    # bounds meant for arguments (small strings, few items, shallow nesting) must not refuse
    # a provider's event: its data is bounded by the event size, 100 levels and 64-bit numbers
    small = Limits(
        max_document_bytes=16,
        max_string_bytes=4,
        max_array_items=2,
        max_object_members=2,
        max_values=4,
        max_depth=2,
        max_number_length=3,
    )
    data = '{"type":"ping","s":"%s","a":[1,2,3,4,5],"o":{"a":1,"b":2,"c":3},"d":%s,"n":123456}' % (
        "x" * 40,
        "[" * 50 + "]" * 50,
    )
    assert outcome(impl, "anthropic", data, small) == ("ok",)
    assert body(impl, "anthropic", _message(data), small) == ("ok",)
    # and the event size bounds each of them (an event is refused before its data is read)
    tight = Limits(max_sse_event_bytes=100)
    assert outcome(impl, "anthropic", '{"type":"ping","s":"%s"}' % ("x" * 100), tight)[1] == "SSE_EVENT_TOO_LARGE"
    assert body(impl, "anthropic", _message('{"s":"%s"}' % ("x" * 100)), tight) == malformed(
        "event data has more than 100 bytes", "$"
    )


def _message(extra: str) -> str:
    return (
        '{"type":"message","id":"m","model":"c","content":[{"type":"text","text":"hi"}],'
        '"stop_reason":"end_turn","usage":{},"extra":%s}' % extra
    )


class _Text(str):
    """A str subclass, read by its characters."""


@pytest.mark.parametrize(("content", "expected"), [("é 渡", "é 渡"), ("\ud800", None)])
def test_event_data_as_a_str_subclass(impl: ModuleType, content: str, expected: str | None) -> None:
    """Event data given as a ``str`` subclass is checked as the exact ``str``
    would be: non-ASCII text is read, a lone surrogate is not UTF-8."""
    asm = impl.StreamAssembler("openai-chat")
    data = _Text('{"id":"c","choices":[{"index":0,"delta":{"content":"%s"}}]}' % content)
    if expected is None:
        with pytest.raises(OutputError) as caught:
            asm.feed_event(data)
        assert (caught.value.code, caught.value.path, caught.value.message) == (
            "MALFORMED_EVENT",
            None,
            "event data is not valid UTF-8",
        )
    else:
        asm.feed_event(data)
        assert asm.snapshot().text == expected


def test_limits_asked_for_one_after_the_other(impl: ModuleType) -> None:
    """Streams and bodies under different limits, one after the other in one
    process, each read under its own: a number of 150 characters in a chunk
    passes a length bound of 200 and not the default one (100 for event
    data), and a body passes an event bound of 300 bytes and not one of 150."""
    number = "0." + "0" * 147 + "1"
    chunk = '{"id":"c","choices":[{"index":0,"delta":{"content":"a"}}],"x":%s}' % number
    long_numbers = Limits(max_number_length=200)
    for limits, ok in ((long_numbers, True), (None, False), (long_numbers, True)):
        found = outcome(impl, "openai-chat", chunk, limits)
        assert (found == ("ok",)) == ok, found
    text = '{"type":"message","id":"m","model":"c","content":[{"type":"text","text":"%s"}],"stop_reason":"end_turn","usage":{}}'
    data = text % ("x" * 100)
    wide, narrow = Limits(max_sse_event_bytes=300), Limits(max_sse_event_bytes=150)
    for limits, ok in ((wide, True), (narrow, False), (wide, True), (narrow, False)):
        found = body(impl, "anthropic", data, limits)
        assert (found == ("ok",)) == ok, found
