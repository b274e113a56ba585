"""A caller's objects and calling patterns, on both backends: a ``Limits``
whose fields were changed after ``__init__`` checked them, chunks whose
``__len__`` lies, canonical events whose ``to_dict`` is no dict, copies and
pickles of the stateful objects, a snapshot interrupted in its partial
parse, odd dataclasses given to ``Constructor``. Each ends in the same
outcome on both, a typed error or the exact result."""

from __future__ import annotations

import copy
import dataclasses
import gc
import json
import pickle
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import pytest

from decisions import Limits
from decisions.errors import OutputError
from decisions.limits import DEFAULT_LIMITS
from decisions.stream.partial import PartialJSON
from decisions.types import ResponseStarted

_ENTRIES: dict[str, Callable[[ModuleType, Limits], Any]] = {
    "loads": lambda impl, limits: impl.loads("[[1]]", limits=limits),
    "SSEDecoder": lambda impl, limits: impl.SSEDecoder(limits=limits).feed(b"data: x\n\n"),
    "StreamAssembler": lambda impl, limits: impl.StreamAssembler("anthropic", limits=limits).feed(b"data: {}\n\n"),
    "normalize": lambda impl, limits: impl.normalize(b"{}", provider="anthropic", limits=limits),
}


class _Index:
    """Not an int, but usable as one (``__index__``)."""

    def __index__(self) -> int:
        return 10**30


class _Int(int):
    """An int subclass: ``__post_init__`` refuses it (``type(value) is not int``)."""


def _changed(field: str, value: object) -> Limits:
    """Default limits with ``field`` set to ``value`` past the frozen check."""
    limits = Limits()
    object.__setattr__(limits, field, value)
    return limits


@pytest.mark.parametrize(
    ("field", "value", "shown"),
    [
        ("max_depth", float("nan"), "float"),
        ("max_depth", 2.0, "float"),
        ("max_depth", -1, "-1"),
        ("max_depth", 0, "0"),
        ("max_depth", True, "bool"),
        ("max_depth", "3", "str"),
        ("max_depth", _Index(), "_Index"),
        ("max_depth", _Int(3), "_Int"),
        ("max_stream_bytes", -1, "-1"),
        ("max_stream_bytes", float("inf"), "float"),
        ("max_result_bytes", None, "NoneType"),
    ],
)
@pytest.mark.parametrize("entry", list(_ENTRIES))
def test_limits_changed_past_their_check_are_refused(
    impl: ModuleType, entry: str, field: str, value: object, shown: str
) -> None:
    """A field that is not a positive int is refused by every entry, as
    ``Limits()`` refuses it, not read as no bound (native: a negative or
    huge value was ``usize::MAX``) or compared as it is (pure: NaN turned
    the bound off, -1 refused every byte)."""
    with pytest.raises(ValueError, match=f"^Limits.{field} must be a positive int, not {shown}$"):
        _ENTRIES[entry](impl, _changed(field, value))


@pytest.mark.parametrize(("field", "value"), [("max_depth", 10**6), ("max_number_length", 10**5)])
@pytest.mark.parametrize("entry", list(_ENTRIES))
def test_limits_changed_past_their_ceiling_are_refused(impl: ModuleType, entry: str, field: str, value: int) -> None:
    """The ceilings ``Limits()`` enforces hold for a changed object too."""
    with pytest.raises(ValueError, match=f"^Limits.{field} may not exceed"):
        _ENTRIES[entry](impl, _changed(field, value))


def test_a_limits_subclass_is_read_once(impl: ModuleType) -> None:
    """A subclass whose field is a property is read once: the bound it gave
    then holds for the whole stream, and the snapshot's parser holds it too."""
    reads: list[int] = []

    class Shifting(Limits):
        @property  # type: ignore[misc]
        def max_depth(self) -> int:
            reads.append(1)
            return 2 if len(reads) == 1 else 10_000

    limits = object.__new__(Shifting)  # its __init__ cannot set the property
    for name in Limits.__slots__:
        if name != "max_depth":
            object.__setattr__(limits, name, getattr(DEFAULT_LIMITS, name))
    assembler = impl.StreamAssembler("anthropic", limits=limits)
    start = (
        b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
        b'"content_block":{"type":"tool_use","id":"t","name":"f","input":{}}}\n\n'
    )
    head = (
        b'event: message_start\ndata: {"type":"message_start","message":{"id":"m","type":"message",'
        b'"role":"assistant","model":"m","content":[],"stop_reason":null}}\n\n'
    )
    delta = (
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
        b'"delta":{"type":"input_json_delta","partial_json":"{\\"a\\": [[1]]"}}\n\n'
    )
    assembler.feed(head + start + delta)
    with pytest.raises(OutputError) as info:
        assembler.snapshot()
    assert info.value.code == "DEPTH_EXCEEDED"
    assert len(reads) == 1


class _LongBytes(bytes):
    """Bytes that say they are a GiB long."""

    def __len__(self) -> int:
        return 1 << 30


class _LongBytearray(bytearray):
    """A bytearray that says it is a GiB long."""

    def __len__(self) -> int:
        return 1 << 30


_CHUNK = b'data: {"type":"ping"}\n\n'


@pytest.mark.parametrize("kind", [_LongBytes, _LongBytearray])
def test_a_chunk_is_measured_by_the_bytes_it_holds(impl: ModuleType, kind: type) -> None:
    """``SSEDecoder.feed`` and ``StreamAssembler.feed`` measure a chunk of a
    bytes or bytearray subclass by its buffer, as they read it (the pure twin
    took its ``__len__``, and refused it as past ``max_stream_bytes``)."""
    assert [e.data for e in impl.SSEDecoder().feed(kind(_CHUNK))] == ['{"type":"ping"}']
    assembler = impl.StreamAssembler("anthropic")
    assembler.feed(kind(_CHUNK))
    assert assembler.state == "init"


def _started_giving(value: object) -> Any:
    """A ``response_started`` event of a subclass whose ``to_dict`` gives ``value``."""

    @dataclass(frozen=True, slots=True, kw_only=True)
    class Started(ResponseStarted):
        def to_dict(self) -> Any:
            return value

    return Started(response_id="r")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ('{"type":"response_started","response_id":"r"}', "a canonical event must be a JSON object"),
        (b'{"type":"response_started","response_id":"r"}', "event payload is not JSON-serialisable"),
        ([{"type": "response_started"}], "a canonical event must be a JSON object"),
        (None, "a canonical event must be a JSON object"),
        (7, "a canonical event must be a JSON object"),
    ],
)
def test_a_canonical_event_whose_to_dict_is_no_dict_fails_the_stream(
    impl: ModuleType, value: object, message: str
) -> None:
    """What an event's ``to_dict`` gives is written as JSON: anything but an
    object is ``MALFORMED_EVENT``, and the stream is failed (the pure twin
    fed a str or bytes as the event's text, and raised the memoryview's
    TypeError for a list, None or an int, leaving the stream as it was)."""
    assembler = impl.StreamAssembler("canonical")
    with pytest.raises(OutputError, match=message) as info:
        assembler.feed_event(_started_giving(value))
    assert info.value.code == "MALFORMED_EVENT"
    assert assembler.state == "failed"
    with pytest.raises(OutputError) as again:
        assembler.finish()
    assert again.value.code == "STREAM_FAILED"


_STATEFUL: dict[str, Callable[[ModuleType], Any]] = {
    "SSEDecoder": lambda impl: impl.SSEDecoder(),
    "StreamAssembler": lambda impl: impl.StreamAssembler("anthropic"),
    "Constructor": lambda impl: impl.Constructor(ResponseStarted),
}


@pytest.mark.parametrize(
    "how",
    [copy.copy, copy.deepcopy, pickle.dumps, lambda obj: obj.__reduce_ex__(2)],
    ids=["copy", "deepcopy", "pickle", "reduce_ex"],
)
@pytest.mark.parametrize("name", list(_STATEFUL))
def test_a_stateful_object_is_neither_copied_nor_pickled(impl: ModuleType, name: str, how: Any) -> None:
    """Each is a ``TypeError`` (the pure twin's ``copy.copy`` made a second
    object sharing the first one's decoder, pipeline and lock: feeding one
    advanced the other)."""
    with pytest.raises(TypeError, match=f"^cannot pickle '[a-z_.]+{name}' object$"):
        how(_STATEFUL[name](impl))


class _Stop(BaseException):
    """What a signal handler raises (a ``KeyboardInterrupt``, say)."""


def _at_call(call: int, action: Callable[[], None]) -> Callable[..., Any]:
    """A trace function that runs ``action`` in the ``call``-th Python frame
    it sees, once, then stops tracing. Native calls run no Python frame of
    their own, so the action lands between their Python steps."""
    seen = 0

    def trace(frame: Any, event: str, arg: Any) -> None:
        nonlocal seen
        if event == "call":
            seen += 1
            if seen == call:
                sys.settrace(None)
                action()

    return trace


def _stop() -> None:
    raise _Stop


def _stopping_at(call: int) -> Callable[..., Any]:
    """A signal landing ``call`` Python frames into a call: :class:`_Stop` raised there."""
    return _at_call(call, _stop)


def _interrupted(call: int, work: Callable[[], Any]) -> bool:
    """Run ``work`` with a :class:`_Stop` landing in its ``call``-th frame;
    whether it landed."""
    sys.settrace(_stopping_at(call))
    try:
        work()
    except _Stop:
        return True
    finally:
        sys.settrace(None)
    return False


_DELTA = b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"0123456789abcdef"}}]}\n\n'
_END = b'data: {"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'


@pytest.mark.parametrize("call", range(1, 160, 6))
def test_an_interrupted_feed_took_nothing_or_fails_the_stream(impl: ModuleType, call: int) -> None:
    """An exception landing part way through ``feed`` (a ``KeyboardInterrupt``
    the host catches) either took nothing of the chunk, which the host may
    feed again, or fails the stream with ``STREAM_FAILED`` (natively a feed
    runs to its end first): never a response that lost the chunk's events
    (the pure twin went on without them)."""
    assembler = impl.StreamAssembler("openai-chat")
    chunk = _DELTA * 20
    try:
        if _interrupted(call, lambda: assembler.feed(chunk)):
            assembler.feed(chunk)
        assembler.feed(chunk + _END)
        text = assembler.finish().text
    except OutputError as err:
        assert err.code == "STREAM_FAILED"
        assert assembler.state == "failed"
    else:
        assert text == "0123456789abcdef" * 40


_TWO_PARTS = (
    '{"id":"c","choices":[{"index":0,"delta":{"content":"hi","tool_calls":[{"index":0,"id":"call_1",'
    '"type":"function","function":{"name":"f","arguments":"{}"}}]}}]}'
)


@pytest.mark.parametrize("call", range(1, 120, 4))
def test_an_interrupted_feed_event_took_nothing_or_fails_the_stream(impl: ModuleType, call: int) -> None:
    """As for ``feed``: an event that maps to several canonical events (text,
    then a tool call), interrupted part way, took nothing (fed again, the
    response is exact) or fails the stream with ``STREAM_FAILED`` (the pure
    twin kept the text it had applied, and the event fed again repeated it)."""
    assembler = impl.StreamAssembler("openai-chat")
    try:
        if _interrupted(call, lambda: assembler.feed_event(_TWO_PARTS)):
            assembler.feed_event(_TWO_PARTS)
        assembler.feed(_END)
        response = assembler.finish()
    except OutputError as err:
        assert err.code == "STREAM_FAILED"
        assert assembler.state == "failed"
    else:
        assert (response.text, [c.call_id for c in response.tool_calls]) == ("hi", ["call_1"])


@pytest.mark.parametrize("call", [1, 2, 3, 5, 8, 13, 21])
def test_an_interrupted_decoder_feed_took_nothing_or_fails(impl: ModuleType, call: int) -> None:
    """As for the assembler: ``SSEDecoder.feed`` interrupted part way took
    nothing (fed again, every event comes) or fails with ``STREAM_FAILED``."""
    decoder = impl.SSEDecoder()
    chunk = _DELTA * 5
    events: list[Any] = []
    try:
        if _interrupted(call, lambda: events.extend(decoder.feed(chunk))):
            events += decoder.feed(chunk)
        events += decoder.feed(chunk)
        decoder.finish()
    except OutputError as err:
        assert err.code == "STREAM_FAILED"
    else:
        assert len(events) == 10


def _chat_call(arguments: str) -> bytes:
    """An OpenAI Chat chunk carrying ``arguments`` of the first tool call."""
    delta = {"index": 0, "function": {"arguments": arguments}}
    chunk = {"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": [delta]}}]}
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


_CALL_START = (
    b'data: {"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1",'
    b'"type":"function","function":{"name":"f","arguments":""}}]}}]}\n\n'
)


def test_a_snapshot_interrupted_in_its_partial_parse_starts_afresh(
    impl: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An exception landing in the partial parser's ``feed`` (after it read
    half the new text) does not leave the parser half-fed: the next snapshot
    parses the arguments afresh and shows what a fresh assembler shows
    (both backends fed the whole text again after the half, and showed ``{}``)."""
    feed = PartialJSON.feed
    armed = [False]

    def half_then_stop(self: PartialJSON, text: str) -> None:
        if armed[0]:
            armed[0] = False
            feed(self, text[: len(text) // 2])
            raise _Stop
        feed(self, text)

    monkeypatch.setattr(PartialJSON, "feed", half_then_stop)
    assembler = impl.StreamAssembler("openai-chat")
    assembler.feed(_CALL_START + _chat_call('{"path": "abc'))
    armed[0] = True
    with pytest.raises(_Stop):
        assembler.snapshot()
    assembler.feed(_chat_call('def", "n": [1, 2'))
    assert assembler.snapshot().calls[0].partial == {"path": "abcdef", "n": [1, 2]}


@dataclass(frozen=True, slots=True)
class _Pair:
    x: int
    y: int


@pytest.mark.parametrize("target", [_Pair(1, 2), 5, None, "_Pair"], ids=["instance", "int", "None", "str"])
def test_a_constructor_of_no_class_is_a_type_error(impl: ModuleType, target: object) -> None:
    """``Constructor`` takes a class: a dataclass's instance (which
    ``dataclasses.is_dataclass`` accepts) or any other object is the
    ``TypeError`` of a wrong argument (the pure twin raised AttributeError)."""
    with pytest.raises(TypeError, match="^argument 'cls': '[A-Za-z_]+' object cannot be converted to 'PyType'$"):
        impl.Constructor(target)


@dataclass(frozen=True)
class _OneSlotStr:
    __slots__ = "value"
    value: int


@dataclass(frozen=True)
class _OneSlotDict:
    __slots__ = {"value": "the value"}  # noqa: RUF023 - a dict is what is tested
    value: int


@dataclass(frozen=True)
class _LongSlotStr:
    __slots__ = "xy"
    xy: int


@pytest.mark.parametrize("cls", [_OneSlotStr, _OneSlotDict, _LongSlotStr])
def test_slots_declared_as_a_str_or_a_dict_are_read_as_the_class_reads_them(impl: ModuleType, cls: type) -> None:
    """``__slots__`` may be a str (one name) or a dict (its keys name the
    slots): both backends build such a dataclass (natively it was a
    ``TypeError`` from reading a list of strs; the pure twin spelled a str
    into one slot per character, refusing ``"xy"``)."""
    built = impl.Constructor(cls)(7)
    assert type(built) is cls
    assert dataclasses.astuple(built) == (7,)


def test_slots_that_are_not_the_fields_are_refused(impl: ModuleType) -> None:
    """A class whose ``__slots__`` was changed after it was made (to a list of
    other names, to an int) is refused as the pure twin refuses it."""

    @dataclass(frozen=True, slots=True)
    class Changed:
        value: int

    Changed.__slots__ = ("other",)  # type: ignore[misc]
    with pytest.raises(ValueError, match="whose slots are its fields"):
        impl.Constructor(Changed)
    Changed.__slots__ = 3  # type: ignore[misc]
    with pytest.raises(TypeError, match="'int' object is not iterable"):
        impl.Constructor(Changed)


def test_field_values_are_positional_only(impl: ModuleType) -> None:
    """A constructor takes the values by position only (the pure twin took
    its parameters' names, ``v0``, ``v1``, as keywords)."""
    build = impl.Constructor(_Pair)
    assert build(1, 2) == _Pair(1, 2)
    with pytest.raises(TypeError, match="keyword argument"):
        build(v0=1, v1=2)


def _outcome(call: Callable[[], Any]) -> Any:
    """A call's value, or the code of the ``OutputError`` it raised."""
    try:
        return call()
    except OutputError as err:
        return err.code


def _break_utf8(buffer: bytearray) -> None:
    """Each two-byte character in the second half of ``buffer`` made a
    four-byte lead byte and an ASCII letter: no longer UTF-8."""
    for at in range(len(buffer) // 2, len(buffer) - 1):
        if buffer[at] == 0xC3 and buffer[at + 1] == 0xA9:
            buffer[at : at + 2] = b"\xf4A"


def _exported(buffer: bytearray) -> bool:
    """Whether something holds a view of ``buffer`` (it cannot be resized)."""
    try:
        buffer.append(0)
    except BufferError:
        return True
    del buffer[-1]
    return False


@pytest.mark.parametrize("kind", ["bytearray", "memoryview"])
def test_a_buffer_changed_by_a_gc_hook_during_loads_is_read_as_it_was(impl: ModuleType, kind: str) -> None:
    """``loads`` of a mutable buffer builds Python objects as it parses; a
    collection they trigger runs a ``gc.callbacks`` hook, which here breaks
    the UTF-8 of the strings not yet read, once it finds the buffer held by
    a view (being read). The value is that of the buffer before the change or
    after it (its ``INVALID_UTF8``), never strings made of bytes the parser
    had checked as UTF-8 before they changed (natively they were:
    characters nobody wrote, NULs from memory left unwritten)."""
    document = ("[" + ",".join(['[{"k": "ééééééé"}]'] * 2000) + "]").encode()
    changed = bytearray(document)
    _break_utf8(changed)
    expected = [_outcome(lambda: impl.loads(document)), _outcome(lambda: impl.loads(bytes(changed)))]
    buffer = bytearray(document)
    fired: list[bool] = []

    def hook(phase: str, info: dict[str, Any]) -> None:
        if phase == "start" and not fired and _exported(buffer):
            fired.append(True)
            _break_utf8(buffer)

    threshold = gc.get_threshold()
    gc.set_threshold(50)
    gc.callbacks.append(hook)
    try:
        found = _outcome(lambda: impl.loads(buffer if kind == "bytearray" else memoryview(buffer)))
    finally:
        gc.callbacks.remove(hook)
        gc.set_threshold(*threshold)
    assert found in expected


def test_calling_init_again_changes_nothing(impl: ModuleType) -> None:
    """A live assembler or decoder is made once: ``__init__`` called again
    (with other arguments, from any thread) leaves its provider, stream and
    lock as they were (the pure twin made them in ``__init__``, so a second
    call dropped the stream read so far and the lock a feed held)."""
    assembler = impl.StreamAssembler("openai-chat")
    assembler.feed(_DELTA)
    assembler.__init__("gemini")  # type: ignore[misc]
    assembler.feed(_END)
    assert (assembler.provider, assembler.finish().text) == ("openai-chat", "0123456789abcdef")
    decoder = impl.SSEDecoder()
    assert decoder.feed(b"data: x") == []
    decoder.__init__()  # type: ignore[misc]
    assert [event.data for event in decoder.feed(b"y\n\n")] == ["xy"]


def test_a_bare_new_is_a_whole_object_or_a_type_error(impl: ModuleType) -> None:
    """``cls.__new__(cls)`` makes what ``cls()`` makes, or is the
    ``TypeError`` of its missing arguments (the pure twin made an empty
    object whose every method raised ``AttributeError``)."""
    decoder = impl.SSEDecoder.__new__(impl.SSEDecoder)
    assert [event.data for event in decoder.feed(b"data: x\n\n")] == ["x"]
    with pytest.raises(TypeError, match="provider"):
        impl.StreamAssembler.__new__(impl.StreamAssembler)


_FIRST_CALL_SCRIPT = r"""
import gc, json, sys
from decisions import _pure
from decisions._backend import native_module
from decisions.errors import OutputError
impl = _pure if sys.argv[1] == "pure" else native_module()
calls = [{"id": f"call_{i}", "type": "function", "function": {"name": "f", "arguments": "{}"}} for i in range(8)]
message = {"role": "assistant", "content": "\u00e9" * 100, "tool_calls": calls}
body = {"id": "c", "object": "chat.completion", "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}]}
buffer = bytearray(json.dumps(body, ensure_ascii=False).encode())
def exported():
    try:
        buffer.append(0)
    except BufferError:
        return True
    del buffer[-1]
    return False
def hook(phase, info):
    if phase == "start" and exported():
        buffer[:] = buffer.replace(b"\xc3\xa9", b"\xf4A")
gc.set_threshold(5)
gc.callbacks.append(hook)
try:
    outcome = impl.normalize(buffer, provider="openai-chat").text == "\u00e9" * 100
except OutputError as error:
    outcome = error.code
print(json.dumps(outcome))
"""


def test_a_small_buffer_changed_during_the_first_normalize_is_read_as_it_was(impl: ModuleType) -> None:
    """In a fresh interpreter, the first ``normalize`` runs Python code (the
    package's classes are looked up) while it holds a small ``bytearray``
    body, and a ``gc.callbacks`` hook breaks the body's UTF-8 then: the
    response is that of the body as it was (natively, read in place, its
    text was made of the changed bytes, which had been checked as UTF-8
    before they changed: characters nobody wrote)."""
    name = "pure" if impl.__name__.endswith("_pure") else "native"
    out = subprocess.run(
        [sys.executable, "-c", _FIRST_CALL_SCRIPT, name], capture_output=True, text=True, check=True, timeout=120
    )
    assert json.loads(out.stdout) is True


def _growing(buffer: bytearray, more: bytes, call: int) -> Callable[..., Any]:
    """A trace function that appends ``more`` to ``buffer`` at the
    ``call``-th Python call it sees, if no view holds the buffer then:
    another thread resizing the caller's bytearray at that moment."""

    def grow() -> None:
        if not _exported(buffer):
            buffer.extend(more)

    return _at_call(call, grow)


_LIMITED = Limits(max_stream_bytes=1 << 12, max_document_bytes=1 << 12)


@pytest.mark.parametrize("call", range(1, 10))
@pytest.mark.parametrize(
    ("entry", "small", "more"),
    [
        ("sse", b"data: x\n\n" * 10, b"data: x\n\n" * 1000),
        ("loads", b"[" + b"1," * 10, b"1," * 5000 + b"1]"),
    ],
    ids=["sse", "loads"],
)
def test_a_buffer_grown_during_a_call_is_read_at_the_size_measured(
    impl: ModuleType, entry: str, small: bytes, more: bytes, call: int
) -> None:
    """A bytearray another thread grows past the limit while it is read is
    read at one size: the one its limit was checked against (refused, or
    read whole at that size), never copied at a size it was not checked at
    (the pure twin measured a first view, let it go, and copied through a
    second: a chunk past ``max_stream_bytes`` was decoded)."""
    buffer = bytearray(small)
    decoder = impl.SSEDecoder(limits=_LIMITED)
    sys.settrace(_growing(buffer, more, call))
    try:
        if entry == "sse":
            found: Any = len(decoder.feed(buffer))
        else:
            found = _outcome(lambda: impl.loads(buffer, limits=_LIMITED))
    except OutputError as err:
        found = err.code
    finally:
        sys.settrace(None)
    if entry == "sse":
        # grown first: the events within the bound, the error at the next call
        assert found in (10, _LIMITED.max_stream_bytes // len(b"data: x\n\n"))
        if found != 10:
            with pytest.raises(OutputError) as caught:
                decoder.finish()
            assert caught.value.code == "SSE_STREAM_TOO_LARGE"
    else:
        assert found in ("UNEXPECTED_END", "DOCUMENT_TOO_LARGE", [1] * 5011)
