"""Classes of mistakes at the boundary, one section each, on both backends.

1. The Responses output check: what streamed and the final value (a ``.done``
   event, the done output item, the terminal's output) are compared exactly.
   Two texts of one length that a weak 64-bit running hash (FNV-1a) cannot
   tell apart are still two texts: the streamed arguments never run when the
   provider's final arguments differ, and both backends say
   ``OUTPUT_MISMATCH``.
2. ``StreamAssembler()`` (``provider="auto"``) before the provider is told
   keeps the backend's state machine: an error (an undetectable first event,
   bad SSE bytes, a finish with nothing received) fails the stream, so the
   events fed after it never become a decision, and an ``abort()`` that comes
   in while the first event is being read (from another thread) cancels the
   assembler built for the provider.
3. Gemini's streamed ``partialArgs`` are bounded by ``max_call_argument_bytes``
   as they arrive, as a call's deltas are, not only once the call closes.
4. The ``[DONE]`` marker is the raw text ``[DONE]`` only: event data that is
   a JSON string spelling it (``"[DONE]"``, ``"\\u005bDONE]"``) is a
   string, ``MALFORMED_EVENT`` at ``$`` like any other, on both backends.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import decisions
from decisions import StreamAssembler, ToolDecision, _backend, decide
from decisions.errors import OutputError
from decisions.examples import EXAMPLES, load

# ------------------------------------------------------------------ 1. Responses output check

#: Two argument texts of one length with one FNV-1a-64 hash (0x04fff69630a65503):
#: the hex strings collide from the state after ``{"p":"``, so any common suffix keeps them colliding.
FNV_A = '{"p":"8d47caa71ea4e47d"'
FNV_B = '{"p":"2f403b2c243d72c7"'
#: a common suffix long enough to take the texts past a 128-byte block
SUFFIX = ',"q":"' + "s" * 300 + '"}'


def _fnv1a(data: bytes) -> int:
    h = 0xCBF29CE484222325
    for byte in data:
        h = ((h ^ byte) * 0x100000001B3) % 2**64
    return h


def test_the_colliding_texts_collide() -> None:
    """The pair is what the section says: one length, one FNV-1a-64 hash, two texts."""
    for suffix in ("}", SUFFIX):
        a, b = (FNV_A + suffix).encode(), (FNV_B + suffix).encode()
        assert a != b and len(a) == len(b) and _fnv1a(a) == _fnv1a(b)


def _resp(status: str, output: list[Any]) -> dict[str, Any]:
    return {"id": "resp_1", "object": "response", "status": status, "model": "m", "output": output}


def _call_stream(deltas: list[str], done: str, item_done: str, final: str) -> list[dict[str, Any]]:
    """A function call streamed as ``deltas``, with ``done`` in its
    ``arguments.done``, ``item_done`` in its done item, ``final`` in the terminal's output."""
    item = {
        "id": "fc_1",
        "type": "function_call",
        "status": "in_progress",
        "arguments": "",
        "call_id": "call_1",
        "name": "read_file",
    }
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": _resp("in_progress", [])},
        {"type": "response.output_item.added", "output_index": 0, "item": item},
    ]
    events += [
        {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 0, "delta": d}
        for d in deltas
    ]
    events += [
        {"type": "response.function_call_arguments.done", "item_id": "fc_1", "output_index": 0, "arguments": done},
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": dict(item, status="completed", arguments=item_done),
        },
        {
            "type": "response.completed",
            "response": _resp("completed", [dict(item, status="completed", arguments=final)]),
        },
    ]
    return events


def _message_stream(deltas: list[str], done: str, final: str, kind: str = "output_text") -> list[dict[str, Any]]:
    """A message whose one part (``output_text`` or ``refusal``) streams ``deltas``,
    with ``done`` in its part's ``.done`` event and ``final`` in the done item."""
    field = "text" if kind == "output_text" else "refusal"
    event = "response.output_text" if kind == "output_text" else "response.refusal"
    item = {"id": "msg_1", "type": "message", "status": "in_progress", "role": "assistant", "content": []}
    part = {"type": kind, field: ""} | ({"annotations": []} if kind == "output_text" else {})
    ref = {"item_id": "msg_1", "output_index": 0, "content_index": 0}
    final_item = dict(item, status="completed", content=[dict(part, **{field: final})])
    return [
        {"type": "response.created", "response": _resp("in_progress", [])},
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {"type": "response.content_part.added", **ref, "part": part},
        *({"type": f"{event}.delta", **ref, "delta": d} for d in deltas),
        {"type": f"{event}.done", **ref, field: done},
        {"type": "response.content_part.done", **ref, "part": dict(part, **{field: done})},
        {"type": "response.output_item.done", "output_index": 0, "item": final_item},
        {"type": "response.completed", "response": _resp("completed", [final_item])},
    ]


def _custom_stream(deltas: list[str], done: str) -> list[dict[str, Any]]:
    """A custom tool call whose input streams as ``deltas`` and is ``done`` at the end."""
    item = {"id": "ct_1", "type": "custom_tool_call", "status": "in_progress", "call_id": "call_1", "name": "patch"}
    final_item = dict(item, status="completed", input=done)
    ref = {"item_id": "ct_1", "output_index": 0}
    return [
        {"type": "response.created", "response": _resp("in_progress", [])},
        {"type": "response.output_item.added", "output_index": 0, "item": dict(item, input="")},
        *({"type": "response.custom_tool_call_input.delta", **ref, "delta": d} for d in deltas),
        {"type": "response.custom_tool_call_input.done", **ref, "input": done},
        {"type": "response.output_item.done", "output_index": 0, "item": final_item},
        {"type": "response.completed", "response": _resp("completed", [final_item])},
    ]


def _sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(f"data: {json.dumps(dict(e, sequence_number=n))}\n\n".encode() for n, e in enumerate(events))


def _outcome(impl: ModuleType, provider: str, data: bytes) -> Any:
    """The decision's ``(kind, calls)`` or its final text, or the code of the first error."""
    assembler = impl.StreamAssembler(provider)
    try:
        assembler.feed(data)
        decision = decide(assembler.finish())
    except OutputError as error:
        return error.code
    if isinstance(decision, ToolDecision):
        return ("tool", [(c.call_id, c.name, c.arguments) for c in decision.executable_calls])
    return ("final", decision.value)


A, B = FNV_A + "}", FNV_B + "}"
COLLISIONS = {
    "arguments.done": _call_stream([A], B, B, B),
    "arguments.done, split deltas": _call_stream([A[:3], A[3:17], A[17:]], B, B, B),
    "arguments.done, long": _call_stream([FNV_A, SUFFIX], FNV_B + SUFFIX, FNV_B + SUFFIX, FNV_B + SUFFIX),
    "output_item.done": _call_stream([A], A, B, B),
    "terminal output": _call_stream([A], A, A, B),
    "output_text.done": _message_stream([A], B, B),
    "output item's text": _message_stream([A[:9], A[9:]], A, B),
    "refusal.done": _message_stream([A], B, B, kind="refusal"),
    "custom_tool_call_input.done": _custom_stream([A], B),
}


@pytest.mark.parametrize("events", list(COLLISIONS.values()), ids=list(COLLISIONS))
def test_a_final_value_that_only_shares_a_weak_hash_is_a_mismatch(
    impl: ModuleType, monkeypatch: pytest.MonkeyPatch, events: list[dict[str, Any]]
) -> None:
    monkeypatch.setattr(_backend, "impl", impl)
    assert _outcome(impl, "openai-responses", _sse(events)) == "OUTPUT_MISMATCH"


def test_the_same_streams_agreeing_run(impl: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    """Controls: the final value equal to what streamed gives the decision."""
    monkeypatch.setattr(_backend, "impl", impl)
    call = _outcome(impl, "openai-responses", _sse(_call_stream([A[:5], A[5:]], A, A, A)))
    assert call == ("tool", [("call_1", "read_file", json.loads(A))])
    assert _outcome(impl, "openai-responses", _sse(_message_stream([A], A, A))) == ("final", A)


@given(cuts=st.lists(st.integers(min_value=0, max_value=len(FNV_A + SUFFIX)), max_size=8), agree=st.booleans())
def test_streamed_arguments_are_compared_whole_however_split(impl: ModuleType, cuts: list[int], agree: bool) -> None:
    """However the arguments are split into deltas (across hash blocks too),
    a colliding final value is a mismatch and an equal one runs."""
    text = FNV_A + SUFFIX
    bounds = sorted({0, len(text), *cuts})
    deltas = [text[i:j] for i, j in zip(bounds, bounds[1:])]
    final = text if agree else FNV_B + SUFFIX
    expected = ("tool", [("call_1", "read_file", json.loads(text))]) if agree else "OUTPUT_MISMATCH"
    previous, _backend.impl = _backend.impl, impl
    try:
        assert _outcome(impl, "openai-responses", _sse(_call_stream(deltas, final, final, final))) == expected
    finally:
        _backend.impl = previous


# ------------------------------------------------------------------ 2. auto detection keeps the state machine

HEALTHY = load(next(e for e in EXAMPLES if e.name == "healthy"))
HEALTHY_EVENTS = [line[6:] for line in HEALTHY.decode().splitlines() if line.startswith("data: ")]


def _steps(assembler: Any, steps: list[Callable[[Any], Any]]) -> list[Any]:
    """Each step's outcome: ``"ok"``, the error's code, or the decision's executable calls."""
    out: list[Any] = []
    for step in steps:
        try:
            result = step(assembler)
        except OutputError as error:
            out.append(error.code)
        else:
            out.append([c.name for c in decide(result).executable_calls] if result is not None else "ok")
    return out + [assembler.state]


#: first bytes that fail the stream before any provider is told
BAD_FIRST = {
    "two providers' keys": b'data: {"choices": [], "candidates": []}\n\n',
    "chat chunk with a Gemini key": b'data: {"id": "c", "object": "chat.completion.chunk", "choices": [], "modelVersion": "m"}\n\n',
    "DONE first": b"data: [DONE]\n\n",
    "not JSON": b"data: {nope\n\n",
    "invalid UTF-8": b"data: \xff\n\n",
}


@pytest.mark.parametrize("first", list(BAD_FIRST.values()), ids=list(BAD_FIRST))
def test_bytes_fed_after_a_failed_first_event_never_decide(
    impl: ModuleType, monkeypatch: pytest.MonkeyPatch, first: bytes
) -> None:
    monkeypatch.setattr(_backend, "impl", impl)
    outcome = _steps(StreamAssembler(), [lambda a: a.feed(first), lambda a: a.feed(HEALTHY), lambda a: a.finish()])
    assert outcome[1:] == ["STREAM_FAILED", "STREAM_FAILED", "failed"], outcome
    assert outcome[0] in ("AMBIGUOUS_PROVIDER", "SSE_INVALID_UTF8")


@pytest.mark.parametrize(
    "first",
    [{"choices": [], "candidates": []}, {"detail": "upstream timeout"}, "[DONE]"],
    ids=["two providers' keys", "no provider's shape", "DONE"],
)
def test_events_fed_after_a_failed_first_event_never_decide(
    impl: ModuleType, monkeypatch: pytest.MonkeyPatch, first: Any
) -> None:
    monkeypatch.setattr(_backend, "impl", impl)
    steps: list[Callable[[Any], Any]] = [lambda a: a.feed_event(first)]
    steps += [lambda a, e=event: a.feed_event(e) for event in HEALTHY_EVENTS]
    outcome = _steps(StreamAssembler(), [*steps, lambda a: a.finish()])
    assert outcome == ["AMBIGUOUS_PROVIDER"] + ["STREAM_FAILED"] * (len(HEALTHY_EVENTS) + 1) + ["failed"]


@pytest.mark.parametrize("cut", [b"", b'data: {"choi'], ids=["nothing", "a cut first event"])
def test_an_auto_finish_before_the_first_event_fails_as_a_named_one_does(
    impl: ModuleType, monkeypatch: pytest.MonkeyPatch, cut: bytes
) -> None:
    monkeypatch.setattr(_backend, "impl", impl)
    steps: list[Callable[[Any], Any]] = [lambda a: a.feed(cut), lambda a: a.finish(), lambda a: a.finish()]
    steps += [lambda a: a.feed(HEALTHY)]
    auto, named = _steps(StreamAssembler(), steps), _steps(impl.StreamAssembler("openai-chat"), steps)
    assert auto == named
    assert auto[2:] == ["STREAM_FAILED", "STREAM_FAILED", "failed"]


def test_an_abort_while_the_first_event_is_read_cancels(impl: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    """``abort()`` lands while the provider is told from the first bytes (the
    detection step calls it, as a second thread would): the feed and the
    finish are cancelled, nothing is decided."""
    monkeypatch.setattr(_backend, "impl", impl)
    assembler = StreamAssembler()
    told = decisions.detect.detect

    def detect_and_abort(payload: object, *, stream: bool = True) -> str:
        provider = told(payload, stream=stream)
        assembler.abort()
        return provider

    monkeypatch.setattr(decisions.detect, "detect", detect_and_abort)
    outcome = _steps(assembler, [lambda a: a.feed(HEALTHY), lambda a: a.finish(), lambda a: a.snapshot()])
    assert outcome == ["STREAM_CANCELLED", "STREAM_CANCELLED", "STREAM_CANCELLED", "failed"]


def test_an_abort_from_another_thread_while_the_first_event_is_read(
    impl: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first event whose dict runs code while the provider is told from it:
    there a second thread aborts; the event, every later one and the finish are cancelled."""
    monkeypatch.setattr(_backend, "impl", impl)
    inside, aborted = threading.Event(), threading.Event()

    class Payload(dict[str, Any]):
        def get(self, key: str, default: Any = None) -> Any:
            if not inside.is_set():
                inside.set()
                assert aborted.wait(30)
            return super().get(key, default)

    assembler = StreamAssembler()

    def abort() -> None:
        assert inside.wait(30)
        assembler.abort()
        aborted.set()

    other = threading.Thread(target=abort)
    other.start()
    steps: list[Callable[[Any], Any]] = [lambda a: a.feed_event(Payload(json.loads(HEALTHY_EVENTS[0])))]
    steps += [lambda a, e=event: a.feed_event(e) for event in HEALTHY_EVENTS[1:]]
    outcome = _steps(assembler, [*steps, lambda a: a.finish()])
    other.join()
    assert outcome == ["STREAM_CANCELLED"] * (len(HEALTHY_EVENTS) + 1) + ["failed"]


# ------------------------------------------------------------------ 3. Gemini streamed arguments are bounded as they come


def _gemini(function_call: dict[str, Any], finish: str | None = None) -> bytes:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": [{"functionCall": function_call}]}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    chunk = {"candidates": [candidate], "responseId": "r", "modelVersion": "m"}
    return f"data: {json.dumps(chunk)}\n\n".encode()


def _partial_stream(entries: list[list[dict[str, Any]]]) -> list[bytes]:
    """A call named ``write_file`` streamed as one chunk per list of
    ``partialArgs`` entries, closed by an empty part, with its finish."""
    chunks = [_gemini({"name": "write_file", "willContinue": True})]
    chunks += [_gemini({"partialArgs": part, "willContinue": True}) for part in entries]
    return [*chunks, _gemini({}, finish="STOP")]


def _feed_until_refused(impl: ModuleType, chunks: list[bytes], limits: decisions.Limits) -> tuple[int, Any]:
    """How many chunks were fed when the stream was refused (``len(chunks)``
    for a refusal at ``finish``), and the error's code and message or the response."""
    assembler = impl.StreamAssembler("gemini", limits=limits)
    fed = 0
    try:
        for fed, chunk in enumerate(chunks):  # noqa: B007 (the count is the result)
            assembler.feed(chunk)
        fed = len(chunks)
        return fed, assembler.finish()
    except OutputError as error:
        return fed, (error.code, str(error))


LIMIT = decisions.Limits(max_call_argument_bytes=64)
TOO_LARGE = (
    "ARGUMENTS_TOO_LARGE",
    'ARGUMENTS_TOO_LARGE: the arguments of tool call "r:call_0" exceed max_call_argument_bytes (64)',
)
GROWING = {
    "one string in pieces": [[{"jsonPath": "$.text", "stringValue": "x" * 20, "willContinue": True}]] * 8,
    "many keys": [[{"jsonPath": f"$.k{i}", "numberValue": i}] for i in range(40)],
    "many array items": [[{"jsonPath": f"$.items[{i}]", "boolValue": True}] for i in range(80)],
    "many entries in one chunk": [[{"jsonPath": f"$.s{i}", "stringValue": "abc"} for i in range(30)]],
    "multi-byte text": [[{"jsonPath": "$.t", "stringValue": "é" * 20, "willContinue": True}]] * 4,
}


@pytest.mark.parametrize("entries", list(GROWING.values()), ids=list(GROWING))
def test_streamed_arguments_past_the_call_bound_are_refused_as_they_come(
    impl: ModuleType, entries: list[list[dict[str, Any]]]
) -> None:
    """The chunk that takes the call past ``max_call_argument_bytes`` is
    refused (the rest of the value is never held), with the error a call's
    deltas past the bound give."""
    chunks = _partial_stream(entries)
    fed, outcome = _feed_until_refused(impl, chunks, LIMIT)
    assert outcome == TOO_LARGE
    assert fed < len(chunks) - 1


def test_a_streamed_call_that_never_closes_is_refused_at_its_bound(impl: ModuleType) -> None:
    """A call left open (the stream never closes it) is refused once it passes
    the bound, not held until the stream ends."""
    piece = [{"jsonPath": "$.text", "stringValue": "x" * 1000, "willContinue": True}]
    chunks = _partial_stream([piece] * 20)[:-1]
    assert _feed_until_refused(impl, chunks, decisions.Limits(max_call_argument_bytes=4096))[0] == 5


def test_streamed_arguments_within_the_bound_run(impl: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    """Control: the same call within the bound is the call."""
    monkeypatch.setattr(_backend, "impl", impl)
    entries = [[{"jsonPath": "$.text", "stringValue": "x" * 20, "willContinue": True}]] * 2
    entries.append([{"jsonPath": "$.text", "stringValue": ""}])  # the string's end, as recorded streams send it
    fed, response = _feed_until_refused(impl, _partial_stream(entries), LIMIT)
    calls = decide(response).executable_calls
    assert [(c.name, c.arguments) for c in calls] == [("write_file", {"text": "x" * 40})]


_PATHS = st.sampled_from(["$.a", "$.b", "$.a.b", "$['c d']", "$.é", "$.list[0]", "$.list[1]", "$.n[0].m"])
_ENTRY = st.builds(
    lambda path, kind, text, more: (
        {"jsonPath": path, kind: text if kind == "stringValue" else 1} | ({"willContinue": True} if more else {})
    ),
    _PATHS,
    st.sampled_from(["stringValue", "stringValue", "numberValue"]),
    st.text(alphabet='xé\n"\\', max_size=12),
    st.booleans(),
)


@given(entries=st.lists(st.lists(_ENTRY, min_size=1, max_size=3), max_size=8), bound=st.integers(1, 80))
def test_streamed_arguments_are_refused_early_only_when_they_would_be_refused_whole(
    impl: ModuleType, entries: list[list[dict[str, Any]]], bound: int
) -> None:
    """An early refusal is never wrong: whenever the bound refuses a streamed
    call before it closes, the whole call read without that bound is larger
    than the bound as JSON text (and so would be refused at its close)."""
    chunks = _partial_stream(entries)
    fed, outcome = _feed_until_refused(impl, chunks, decisions.Limits(max_call_argument_bytes=bound))
    if fed < len(chunks) - 1 and outcome[0] == "ARGUMENTS_TOO_LARGE":
        whole = _feed_until_refused(impl, chunks, decisions.Limits())[1]
        if not isinstance(whole, tuple):  # (else the stream is refused for another reason too)
            assert len(whole.tool_calls[0].arguments.encode()) > bound


# ------------------------------------------------------------------ 4. the [DONE] marker is raw text only

CHAT_EVENTS = [e for e in HEALTHY_EVENTS if e != "[DONE]"]
SPELLINGS = ['"[DONE]"', '"\\u005bDONE]"', '"[DON\\u0045]"', '  "[DONE]"  ']


def _chat_outcome(impl: ModuleType, events: list[str | bytes], form: str) -> Any:
    assembler = impl.StreamAssembler("openai-chat")
    try:
        for event in events:
            if form == "feed":
                text = event if isinstance(event, str) else event.decode()
                assembler.feed(f"data: {text}\n\n".encode())
            else:
                assembler.feed_event(event)
        return ("ok", assembler.finish().finish_reason)
    except OutputError as error:
        return (error.code, error.path)


@pytest.mark.parametrize("form", ["feed", "feed_event"])
@pytest.mark.parametrize("spelling", SPELLINGS)
@pytest.mark.parametrize("where", ["after the finish", "first", "in the middle"])
def test_a_json_string_spelling_the_marker_is_no_marker(impl: ModuleType, form: str, spelling: str, where: str) -> None:
    at = {"after the finish": len(CHAT_EVENTS), "first": 0, "in the middle": 2}[where]
    events: list[str | bytes] = [*CHAT_EVENTS[:at], spelling, *CHAT_EVENTS[at:], "[DONE]"]
    assert _chat_outcome(impl, events, form) == ("MALFORMED_EVENT", "$")
    assert _chat_outcome(impl, [*events[:at], spelling.encode(), *events[at + 1 :]], "feed_event") == (
        "MALFORMED_EVENT",
        "$",
    )


def test_the_raw_marker_still_ends_the_framing(impl: ModuleType) -> None:
    """Controls: the raw ``[DONE]`` after the finish, as text or bytes, ends the stream."""
    for form in ("feed", "feed_event"):
        assert _chat_outcome(impl, [*CHAT_EVENTS, "[DONE]"], form) == ("ok", "tool_calls")
    assert _chat_outcome(impl, [*CHAT_EVENTS, b"[DONE]"], "feed_event") == ("ok", "tool_calls")


@given(text=st.text(max_size=8) | st.just("[DONE]"), ascii_only=st.booleans())
def test_any_json_string_event_is_malformed(impl: ModuleType, text: str, ascii_only: bool) -> None:
    """Whatever a JSON string event says, the twins read it as a string."""
    event = json.dumps(text, ensure_ascii=ascii_only)
    assert _chat_outcome(impl, [*CHAT_EVENTS, event, "[DONE]"], "feed") == ("MALFORMED_EVENT", "$")
