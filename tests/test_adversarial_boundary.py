"""Hostile provider output at the boundary: deep and repeated object-form
arguments, repeated envelope keys, deep unread fields, deep dict payloads and
raised limits. Every case runs on both backends and must end in the exact
typed error (or the same response), never a crash, a RecursionError or a
call made executable by what the bytes do not support.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import textwrap
from types import ModuleType
from typing import Any, Callable

import pytest

import decisions
from decisions import Tool, ToolRegistry
from decisions.errors import OutputError, ParseError, SchemaError, StreamError
from decisions.types import (
    ItemStarted,
    NormalizedResponse,
    ResponseStarted,
    TextDelta,
    TextItem,
    ToolCallItem,
    UsageReported,
)

ENVELOPE_DEPTH = 100


def _nest(depth: int, leaf: str = "1") -> str:
    return '{"a":' * depth + leaf + "}" * depth


# Each provider's object-form argument field, as a stream of JSON events
# (``%s`` is the arguments object) and as a whole body.
ANTHROPIC_START = json.dumps(
    {"type": "message_start", "message": {"id": "m", "model": "c", "content": [], "usage": {}}}
)
STREAMS: dict[str, Callable[[str], list[str]]] = {
    "anthropic-content_block_start": lambda args: [
        ANTHROPIC_START,
        '{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"f","input":%s}}'
        % args,
        '{"type":"content_block_stop","index":0}',
        '{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{}}',
        '{"type":"message_stop"}',
    ],
    "gemini-args": lambda args: [
        '{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":%s}}]},"finishReason":"STOP"}]}' % args
    ],
}
BODIES: dict[str, tuple[str, Callable[[str], str]]] = {
    "anthropic-body": (
        "anthropic",
        lambda args: (
            '{"type":"message","id":"m","model":"c","content":[{"type":"tool_use","id":"t","name":"f","input":%s}],'
            '"stop_reason":"tool_use","usage":{}}' % args
        ),
    ),
    "gemini-body": (
        "gemini",
        lambda args: (
            '{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":%s}}]},"finishReason":"STOP"}]}'
            % args
        ),
    ),
}
ARGS_PATH = {
    "anthropic-content_block_start": "$.content_block.input",
    "gemini-args": "$.candidates[0].content.parts[0].functionCall.args",
    "anthropic-body": "$.content[0].input",
    "gemini-body": "$.candidates[0].content.parts[0].functionCall.args",
}


def _stream(impl: ModuleType, provider_case: str, args: str, how: str = "feed") -> NormalizedResponse:
    provider = provider_case.split("-")[0]
    asm = impl.StreamAssembler(provider)
    for line in STREAMS[provider_case](args):
        if how == "feed":
            asm.feed(f"data: {line}\n\n".encode())
        elif how == "dict":
            asm.feed_event(json.loads(line))
        else:
            asm.feed_event(line)
    return asm.finish()


def _outcome(call: Callable[[], Any]) -> tuple[Any, ...]:
    try:
        return ("ok", call())
    except OutputError as error:
        return (type(error).__name__, error.code, error.path, error.offset)


# ---------------------------------------------------------------- 1, 2: depth


@pytest.mark.parametrize("case", sorted(STREAMS))
@pytest.mark.parametrize("how", ["feed", "text", "dict"])
@pytest.mark.parametrize("depth", [ENVELOPE_DEPTH, 1_000, 100_000])
def test_deep_object_arguments_are_a_parse_error(impl: ModuleType, case: str, how: str, depth: int) -> None:
    if how == "dict" and depth >= 1_000:
        pytest.skip("json.loads of the test's own input recurses")
    with pytest.raises(ParseError) as caught:
        _stream(impl, case, _nest(depth), how)
    assert caught.value.code == "DEPTH_EXCEEDED"
    assert caught.value.path is not None and caught.value.path.startswith(ARGS_PATH[case] + ".a.a")


@pytest.mark.parametrize("case", sorted(BODIES))
@pytest.mark.parametrize("depth", [ENVELOPE_DEPTH, 100_000])
def test_deep_object_arguments_in_bodies(impl: ModuleType, case: str, depth: int) -> None:
    provider, body = BODIES[case]
    for given in (body(_nest(depth)), body(_nest(depth)).encode()):
        with pytest.raises(ParseError) as caught:
            impl.normalize(given, provider=provider)
        assert caught.value.code == "DEPTH_EXCEEDED"
        assert caught.value.path is not None and caught.value.path.startswith(ARGS_PATH[case])


def test_arguments_just_within_the_envelope_reach_decide(impl: ModuleType) -> None:
    """Arguments that fit the envelope but not ``max_depth`` are refused by
    the strict parse in ``decide``: never executable."""
    response = _stream(impl, "gemini-args", _nest(80))
    with pytest.raises(ParseError) as caught:
        decisions.decide(response)
    assert caught.value.code == "DEPTH_EXCEEDED"


@pytest.mark.parametrize("depth", [1_000, 100_000])
@pytest.mark.parametrize("provider", ["openai-chat", "openai-responses", "anthropic", "gemini"])
def test_deep_unread_envelope_fields_are_malformed(impl: ModuleType, provider: str, depth: int) -> None:
    data = '{"unread":%s,"type":"x"}' % _nest(depth)
    asm = impl.StreamAssembler(provider)
    with pytest.raises(StreamError) as caught:
        asm.feed(f"data: {data}\n\n".encode())
    assert (caught.value.code, caught.value.path) == ("MALFORMED_EVENT", "$.unread" + ".a" * (ENVELOPE_DEPTH - 1))


@pytest.mark.parametrize("depth", [1_000, 100_000])
def test_deep_dict_payloads(impl: ModuleType, depth: int) -> None:
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(depth):
        node["a"] = {}
        node = node["a"]
    body = {
        "candidates": [{"content": {"parts": [{"functionCall": {"name": "f", "args": deep}}]}, "finishReason": "STOP"}]
    }
    with pytest.raises(ParseError) as caught:
        impl.normalize(body, provider="gemini")
    assert caught.value.code == "DEPTH_EXCEEDED"
    asm = impl.StreamAssembler("gemini")
    with pytest.raises(ParseError):
        asm.feed_event(body)
    cyclic: dict[str, Any] = {"type": "x"}
    cyclic["self"] = cyclic
    with pytest.raises(StreamError) as stream_error:
        impl.StreamAssembler("anthropic").feed_event(cyclic)
    assert stream_error.value.code == "MALFORMED_EVENT"


_SUBPROCESS = """
import os, sys, threading
os.environ.setdefault("DECISIONS_PURE", "")
from decisions import _pure
from decisions._backend import native_module
impl = {"native": native_module, "pure": lambda: _pure}[sys.argv[1]]()
depth, stack = int(sys.argv[2]), int(sys.argv[3])
inner = '{"a":' * depth + "1" + "}" * depth
bodies = {
    "anthropic": '{"type":"message","id":"m","model":"c","content":[{"type":"tool_use","id":"t","name":"f","input":%s}],"stop_reason":"tool_use","usage":{}}',
    "gemini": '{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":%s}}]},"finishReason":"STOP"}]}',
}
codes = []
def run():
    for provider, body in bodies.items():
        try:
            impl.normalize(body % inner, provider=provider)
            codes.append("accepted")
        except Exception as e:
            codes.append(getattr(e, "code", type(e).__name__))
if stack:
    threading.stack_size(stack)
    t = threading.Thread(target=run)
    t.start()
    t.join()
else:
    run()
print(",".join(codes))
"""


@pytest.mark.parametrize("depth, stack", [(100_000, 0), (10_000, 256 * 1024)])
def test_deep_arguments_in_a_subprocess(impl: ModuleType, depth: int, stack: int) -> None:
    """The review's crash: a 52,000-deep ``tool_use.input`` killed the native
    process (SIGSEGV in a recursive drop). Run where a crash shows as a signal."""
    name = "native" if impl is not decisions._pure else "pure"
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_SUBPROCESS), name, str(depth), str(stack)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "DEPTH_EXCEEDED,DEPTH_EXCEEDED"


def test_raised_max_depth_never_raises_recursion_error(impl: ModuleType) -> None:
    """At the highest allowed ``max_depth`` every public step gives a typed
    error for deep values: the strict parse accepts them, validation does not
    follow them, the text fallback and the canonical writer do not recurse."""
    limits = dataclasses.replace(decisions.DEFAULT_LIMITS, max_depth=10_000)
    schema = {
        "$defs": {
            "n": {"type": "object", "properties": {"a": {"anyOf": [{"$ref": "#/$defs/n"}, {"type": "integer"}]}}}
        },
        "$ref": "#/$defs/n",
    }
    tools = ToolRegistry([Tool(name="f", parameters=schema, side_effects=False)])
    for depth in (150, 5_000, 9_999):
        call = NormalizedResponse(
            provider="openai-chat",
            response_id="r",
            model="m",
            finish_reason="tool_calls",
            items=(ToolCallItem(item_id="i", call_id="c", name="f", arguments=_nest(depth)),),
        )
        with pytest.raises(SchemaError) as caught:
            decisions.decide(call, tools=tools, limits=limits)
        assert caught.value.code == "SCHEMA_MISMATCH"
        assert [i["code"] for i in caught.value.issues] == ["too_deep"]
        final = NormalizedResponse(
            provider="openai-chat",
            response_id="r",
            model="m",
            finish_reason="stop",
            items=(TextItem(item_id="t", text=_nest(depth)),),
        )
        with pytest.raises(SchemaError):
            decisions.decide(final, output=schema, limits=limits)
        text = NormalizedResponse(
            provider="openai-chat",
            response_id="r",
            model="m",
            finish_reason="stop",
            items=(TextItem(item_id="t", text='<tool_call>{"name":"f","arguments":%s}</tool_call>' % _nest(depth)),),
        )
        with pytest.raises(SchemaError):
            decisions.decide(decisions.tool_calls_response(text, limits=limits), tools=tools, limits=limits)


# ---------------------------------------------------------------- 7, 8: repeated keys


@pytest.mark.parametrize(
    "provider, line, path",
    [
        (
            "openai-chat",
            '{"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{},'
            '"finish_reason":"length","finish_reason":"tool_calls"}]}',
            "$.choices[0].finish_reason",
        ),
        (
            "anthropic",
            '{"type":"content_block_start","index":0,"content_block":{"type":"text","type":"tool_use","id":"t","name":"f","input":{}}}',
            "$.content_block.type",
        ),
        ("anthropic", '{"type":"ping","unread":{"x":1,"x":2}}', "$.unread.x"),
        (
            "openai-responses",
            '{"type":"response.completed","response":{"id":"r","status":"incomplete","status":"completed","output":[]}}',
            "$.response.status",
        ),
        (
            "gemini",
            '{"candidates":[{"content":{"parts":[{"text":"a"}]},"finishReason":"MAX_TOKENS","finishReason":"STOP"}]}',
            "$.candidates[0].finishReason",
        ),
        ("gemini", '{"candidates":[],"candidates":[]}', "$.candidates"),
    ],
)
def test_repeated_envelope_keys_are_malformed(impl: ModuleType, provider: str, line: str, path: str) -> None:
    for feed in ("bytes", "text"):
        asm = impl.StreamAssembler(provider)
        if provider == "anthropic":
            asm.feed_event(ANTHROPIC_START)
        with pytest.raises(StreamError) as caught:
            if feed == "bytes":
                asm.feed(f"data: {line}\n\n".encode())
            else:
                asm.feed_event(line)
        assert (caught.value.code, caught.value.path) == ("MALFORMED_EVENT", path)
        assert caught.value.message == "event data has a repeated key"


@pytest.mark.parametrize("case", sorted(STREAMS))
@pytest.mark.parametrize(
    "args, inner",
    [
        ('{"path":"/etc/shadow","path":"notes.txt"}', ".path"),
        ('{"a":{"b":[{"c":1},{"c":1,"c":2}]}}', ".a.b[1].c"),
        ('{"x":1,"y":{"z":[[{"k":0,"k":0}]]}}', ".y.z[0][0].k"),
        ('{"' + "k" * 30 + '":1,"' + "k" * 30 + '":2}', "." + "k" * 30),
    ],
)
def test_repeated_keys_in_object_arguments(impl: ModuleType, case: str, args: str, inner: str) -> None:
    with pytest.raises(ParseError) as caught:
        _stream(impl, case, args, "text")
    assert (caught.value.code, caught.value.path) == ("DUPLICATE_KEY", ARGS_PATH[case] + inner)


def test_repeated_keys_in_wide_object_arguments(impl: ModuleType) -> None:
    members = [f'"k{i}":{i}' for i in range(500)] + ['"k250":0']
    with pytest.raises(ParseError) as caught:
        _stream(impl, "gemini-args", "{" + ",".join(members) + "}", "text")
    assert (caught.value.code, caught.value.path) == ("DUPLICATE_KEY", ARGS_PATH["gemini-args"] + ".k250")


@pytest.mark.parametrize("case", sorted(BODIES))
def test_repeated_keys_in_body_arguments(impl: ModuleType, case: str) -> None:
    provider, body = BODIES[case]
    with pytest.raises(ParseError) as caught:
        impl.normalize(body('{"path":"/etc/shadow","path":"notes.txt"}'), provider=provider)
    assert (caught.value.code, caught.value.path) == ("DUPLICATE_KEY", ARGS_PATH[case] + ".path")


# ---------------------------------------------------------------- 11: twin differences


@pytest.mark.parametrize("choice", [2**70, 2**64, 2**32, -1, True, 1.5])
def test_out_of_range_choice_is_refused_alike(impl: ModuleType, choice: Any) -> None:
    with pytest.raises(ValueError, match=r"choice must be an int from 0 to 2\*\*32 - 1"):
        impl.StreamAssembler("openai-chat", choice=choice)
    with pytest.raises(ValueError, match=r"choice must be an int from 0 to 2\*\*32 - 1"):
        impl.normalize(b"{}", provider="gemini", choice=choice)


def _nested(depth: int) -> list[Any]:
    outer: list[Any] = []
    inner = outer
    for _ in range(depth):
        inner.append([])
        inner = inner[0]
    return outer


@pytest.mark.parametrize(
    ("choice", "shown"),
    [(2**32, str(2**32)), (-1, "-1"), (True, "bool"), (1.5, "float"), ("0", "str"), (_nested(100_000), "list")],
    ids=["too-large", "negative", "bool", "float", "str", "deep-list"],
)
def test_a_refused_choice_is_named_alike(both: tuple[ModuleType, ModuleType], choice: Any, shown: str) -> None:
    """The ValueError shows an int, and names the type of anything else (a
    deeply nested value's repr would raise RecursionError), on both backends."""
    for impl in both:
        for make in (impl.StreamAssembler, impl.normalize):
            with pytest.raises(ValueError) as caught:
                if make is impl.normalize:
                    make(b"{}", provider="gemini", choice=choice)
                else:
                    make("openai-chat", choice=choice)
            assert str(caught.value) == f"choice must be an int from 0 to 2**32 - 1, or None, not {shown}"


@pytest.mark.parametrize(
    "tail",
    [b"garbage\n\n", b"data: garbage\n\n", b"data: {}\n\n", b"data: [DONE]\n\n", b"garbage", b"data: [DONE]x\n\n"],
)
def test_after_done_both_backends_agree(both: tuple[ModuleType, ModuleType], tail: bytes) -> None:
    chunks = [
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "model": "m",
            "choices": [{"index": 0, "delta": {"content": "hi"}}],
        },
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "model": "m",
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        },
    ]
    sse = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n" + tail

    def run(impl: ModuleType) -> Callable[[], Any]:
        def go() -> Any:
            asm = impl.StreamAssembler("openai-chat")
            asm.feed(sse)
            return asm.finish()

        return go

    native, pure = both
    assert _outcome(run(native)) == _outcome(run(pure))


@pytest.mark.parametrize(
    "data",
    [
        '{"type":"x","n":123456789012345678901234567890}',
        '{"type":"x","n":1e400}',
        '{"type":"x","n":%s}' % ("1" * 101),
        '{"type":"x","s":"\\ud800"}',
        '{"type":"x","a":' + "[" * 101 + "]" * 101 + "}",
        '{"type":"x"} {"type":"y"}',
        "\ufeff{}",
    ],
)
@pytest.mark.parametrize("provider", ["openai-chat", "openai-responses", "anthropic", "gemini", "canonical"])
def test_unread_envelope_rules_agree(both: tuple[ModuleType, ModuleType], provider: str, data: str) -> None:
    native, pure = both

    def run(impl: ModuleType) -> Callable[[], Any]:
        def go() -> Any:
            impl.StreamAssembler(provider).feed(f"data: {data}\n\n".encode())

        return go

    got = _outcome(run(native))
    assert got[:2] == ("StreamError", "MALFORMED_EVENT")
    assert got == _outcome(run(pure))


@pytest.mark.parametrize(
    "provider, body",
    [
        (
            "anthropic",
            '{"type":"message","id":"m","model":"c","content":[{"type":"text","text":"hi"}],'
            '"stop_reason":"end_turn","usage":{"input_tokens":%s,"output_tokens":1}}',
        ),
        (
            "gemini",
            '{"candidates":[{"content":{"parts":[{"text":"hi"}]},"finishReason":"STOP"}],'
            '"usageMetadata":{"promptTokenCount":%s,"candidatesTokenCount":1}}',
        ),
        (
            "openai-chat",
            '{"id":"c","object":"chat.completion","model":"m","choices":[{"index":%s,"message":{"role":"assistant",'
            '"content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}',
        ),
    ],
)
def test_minus_zero_counts_are_zero(impl: ModuleType, provider: str, body: str) -> None:
    """``-0`` is the integer 0 in JSON (``json.loads`` reads it so): a count
    or index written ``-0`` reads as 0 on both backends, ``-0.0`` is refused."""
    assert impl.normalize(body % "-0", provider=provider) == impl.normalize(body % "0", provider=provider)
    with pytest.raises(StreamError) as caught:
        impl.normalize(body % "-0.0", provider=provider)
    assert caught.value.code == "MALFORMED_EVENT"


# ---------------------------------------------------------------- 12: str that is not UTF-8, limits beyond 64 bits

LONE = "\ud800"


def _feed(impl: ModuleType, provider: str, payload: Any, event: str | None = None) -> Any:
    asm = impl.StreamAssembler(provider)
    asm.feed_event(payload, event)
    return asm


@pytest.mark.parametrize(
    "run, message",
    [
        (lambda impl: impl.normalize('{"id":"' + LONE + '"}', provider="openai-chat"), "event data is not valid UTF-8"),
        (lambda impl: impl.normalize(LONE, provider="anthropic"), "event data is not valid UTF-8"),
        (lambda impl: impl.normalize({"id": LONE}, provider="gemini"), "event data is not valid UTF-8"),
        (lambda impl: impl.normalize([{LONE: 1}], provider="gemini"), "event data is not valid UTF-8"),
        (lambda impl: _feed(impl, "openai-chat", '{,"' + LONE + '"}'), "event data is not valid UTF-8"),
        (lambda impl: _feed(impl, "openai-responses", {"type": LONE}), "event data is not valid UTF-8"),
        (lambda impl: _feed(impl, "anthropic", '{"type":"ping"}', LONE), "event name is not valid UTF-8"),
        (lambda impl: _feed(impl, "openai-chat", "{}", "message" + LONE), "event name is not valid UTF-8"),
        (lambda impl: _feed(impl, "canonical", {}, LONE), "event name is not valid UTF-8"),
    ],
)
def test_lone_surrogates_in_str_input_are_malformed(
    impl: ModuleType, run: Callable[[ModuleType], Any], message: str
) -> None:
    """A Python str holding a lone surrogate is no UTF-8 text: as a body, as
    event data (str or dict) or as an event name it is ``MALFORMED_EVENT``
    like bytes that are not UTF-8, never a ``UnicodeEncodeError`` (native)
    or a message quoting the surrogate (pure)."""
    with pytest.raises(StreamError) as caught:
        run(impl)
    assert (caught.value.code, caught.value.message) == ("MALFORMED_EVENT", message)


def test_a_lone_surrogate_fails_the_stream(impl: ModuleType) -> None:
    asm = impl.StreamAssembler("openai-chat")
    with pytest.raises(StreamError):
        asm.feed_event(LONE)
    assert asm.state == "failed"
    with pytest.raises(StreamError) as caught:
        asm.feed_event("{}")
    assert caught.value.code == "STREAM_FAILED"


def test_a_lone_surrogate_names_no_provider(impl: ModuleType) -> None:
    with pytest.raises(ValueError, match="unknown provider '\\\\ud800'"):
        impl.StreamAssembler(LONE)
    with pytest.raises(ValueError, match="unknown provider '\\\\ud800'"):
        impl.normalize(b"{}", provider=LONE)


class _Raising(dict[str, Any]):
    def items(self) -> Any:
        raise ZeroDivisionError("from the payload's own code")


def test_a_dict_payload_is_read_without_its_own_code(impl: ModuleType) -> None:
    """A dict is read as the members it holds: its class's ``items()`` (which
    ``json`` would call) is never run, so it can neither raise nor show
    other members."""
    asm = impl.StreamAssembler("openai-chat")
    with pytest.raises(StreamError) as caught:
        asm.feed_event(_Raising(a=1))
    assert (caught.value.code, caught.value.path) == ("MALFORMED_EVENT", "$.choices")  # {"a": 1}
    with pytest.raises(StreamError) as caught:
        impl.normalize(_Raising(a=1), provider="openai-chat")
    assert caught.value.code == "MALFORMED_EVENT"


@pytest.mark.parametrize("value", [2**64 - 1, 2**64, 2**200])
def test_limits_beyond_64_bits_bound_nothing(impl: ModuleType, value: int) -> None:
    """``Limits`` takes any positive int: one past the address space is no
    bound on either backend (native raised ``OverflowError``)."""
    big = {f.name: value for f in dataclasses.fields(decisions.Limits)}
    limits = decisions.Limits(**{**big, "max_depth": 64, "max_number_length": 100})
    assert impl.loads(b'{"a":[1,"x"]}', limits=limits) == {"a": [1, "x"]}
    assert [e.data for e in impl.SSEDecoder(limits=limits).feed(b"data: x\n\n")] == ["x"]
    asm = impl.StreamAssembler("openai-chat", limits=limits)
    asm.feed(
        b'data: {"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"k",'
        b'"function":{"name":"f","arguments":"{\\"a\\":"}}]}}]}\n\n'
    )
    assert asm.snapshot().calls[0].arguments == '{"a":'
    body = (
        '{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant",'
        '"content":"hi"},"finish_reason":"stop"}]}'
    )
    assert impl.normalize(body, provider="openai-chat", limits=limits).items == (
        TextItem(item_id="choice0.content", text="hi"),
    )


@pytest.mark.parametrize("keep", [1, 0, "yes", None, [True]])
def test_keep_events_must_be_a_bool(impl: ModuleType, keep: Any) -> None:
    """``keep_events`` is a bool on both backends (the pure twin took any
    value, by its truth), checked before the other arguments."""
    kind = type(keep).__name__
    with pytest.raises(TypeError) as caught:
        impl.StreamAssembler("no-such-provider", keep_events=keep)
    assert str(caught.value) == f"argument 'keep_events': '{kind}' object cannot be converted to 'PyBool'"


def _unchecked(cls: type, **fields: Any) -> Any:
    """An event object with ``fields`` set as given, past any constructor check."""
    event = object.__new__(cls)
    for name, value in fields.items():
        object.__setattr__(event, name, value)
    return event


@pytest.mark.parametrize(
    "event, message",
    [
        (TextDelta(item_id="t", delta=LONE), "event data is not valid UTF-8"),
        (
            _unchecked(UsageReported, input_tokens=1, output_tokens=2**70, cached_tokens=None, reasoning_tokens=None),
            "event data has a number beyond 64 bits or a float that overflows",
        ),
        (
            _unchecked(
                UsageReported, input_tokens=float("nan"), output_tokens=1, cached_tokens=None, reasoning_tokens=None
            ),
            "event payload is not JSON-serialisable",
        ),
    ],
)
def test_canonical_event_objects_are_checked_as_their_text(impl: ModuleType, event: Any, message: str) -> None:
    """A canonical event object is read from its wire format on both backends
    (the pure twin took its fields as they were: a text item with a lone
    surrogate, a count past 64 bits, where the native backend refused them)."""
    asm = impl.StreamAssembler("canonical")
    asm.feed_event(ResponseStarted(response_id="r", model="m"))
    asm.feed_event(ItemStarted(item_id="t", kind="text"))
    with pytest.raises(StreamError) as caught:
        asm.feed_event(event)
    assert (caught.value.code, caught.value.message) == ("MALFORMED_EVENT", message)
    assert asm.state == "failed"


def _hostile(*args: Any, **kwargs: Any) -> Any:
    raise ZeroDivisionError("a subclass method ran")


_METHODS = ("__eq__", "__ne__", "__hash__", "__getitem__", "__len__", "__iter__", "__contains__", "find", "index")
_HostileStr = type("_HostileStr", (str,), {name: _hostile for name in (*_METHODS, "encode", "isascii", "lstrip")})
_HostileBytes = type("_HostileBytes", (bytes,), {"__bytes__": lambda self: b"[2]", "decode": _hostile})
_BODY = '{"candidates":[{"content":{"parts":[{"text":"hi \u00e9"}]},"finishReason":"STOP"}]}'


@pytest.mark.parametrize(
    "run",
    [
        lambda impl: impl.loads(_HostileStr('{"a":[1,"\u00e9"]}')) == {"a": [1, "\u00e9"]},
        lambda impl: impl.loads(_HostileBytes(b"[1]")) == [1],
        lambda impl: [e.data for e in impl.SSEDecoder().feed(_HostileBytes(b"data: x\n\n"))] == ["x"],
        lambda impl: impl.normalize(_HostileStr(_BODY), provider=_HostileStr("gemini")).items[0].text == "hi \u00e9",
        lambda impl: impl.normalize(_HostileBytes(_BODY.encode()), provider="gemini").items[0].text == "hi \u00e9",
        lambda impl: type(impl.StreamAssembler(_HostileStr("gemini")).provider) is str,
        lambda impl: (
            impl.StreamAssembler("anthropic").feed_event(_HostileStr('{"type":"ping"}'), _HostileStr("ping")) is None
        ),
    ],
)
def test_str_and_bytes_subclasses_are_read_as_their_content(impl: ModuleType, run: Callable[[ModuleType], Any]) -> None:
    """A str or bytes subclass is read as the characters or bytes it holds on
    both backends: the pure twin ran the subclass's methods (an exception, or
    other content from ``__bytes__``) where the native backend reads the data."""
    assert run(impl)


class _Name(bytes):
    """A bytes subclass passed where a provider name belongs."""


@pytest.mark.parametrize(
    "provider",
    [b"openai-chat", _Name(b"anthropic"), bytearray(b"gemini"), memoryview(b"openai-chat"), 1, None, ["openai-chat"]],
    ids=["bytes", "bytes-subclass", "bytearray", "memoryview", "int", "none", "list"],
)
def test_a_provider_that_is_not_a_str_is_named_alike(both: tuple[ModuleType, ModuleType], provider: Any) -> None:
    """The TypeError names the type given, on both backends (the pure twin
    once named every bytes-like one ``bytes``)."""
    messages = []
    for impl in both:
        with pytest.raises(TypeError) as caught:
            impl.normalize("{}", provider=provider)
        messages.append(str(caught.value))
        with pytest.raises(TypeError) as caught:
            impl.StreamAssembler(provider)
        messages.append(str(caught.value))
    assert messages[:2] == messages[2:] and messages[0] == f"provider must be a str, not {type(provider).__name__}"
