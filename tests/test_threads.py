"""Threads: the module shared by eight threads, and one assembler misused
from two.

The native module never releases the GIL (no ``allow_threads`` in
``rust/src/py``): each call runs to its end, or until it calls back into
Python (building the error object, ``json.dumps`` of a dict payload, the
snapshot's partial parser), where the interpreter may switch threads. A second
thread that then calls a ``&mut self`` method of the same native object is
refused by PyO3's borrow check (``RuntimeError: Already borrowed``) before it
touches anything. The switch interval is set to a microsecond here so that
threads interleave as often as the interpreter allows.
"""

from __future__ import annotations

import random
import sys
import threading
from types import ModuleType
from typing import Any, Callable, Iterator

import pytest

from decisions.errors import OutputError, StreamError


@pytest.fixture(autouse=True)
def fast_switching() -> Iterator[None]:
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def stream(tag: int, deltas: int = 40) -> bytes:
    """An Anthropic stream with one text block and one tool call, both naming ``tag``."""
    parts = [
        b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_%d","type":"message",'
        b'"role":"assistant","model":"m","content":[],"stop_reason":null,"usage":{"input_tokens":1,"output_tokens":1}}}\n\n'
        % tag,
        b'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n',
    ]
    parts += [
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"t%d."}}\n\n'
        % tag
    ] * deltas
    parts += [
        b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n',
        b'event: content_block_start\ndata: {"type":"content_block_start","index":1,'
        b'"content_block":{"type":"tool_use","id":"toolu_%d","name":"tool_%d","input":{}}}\n\n' % (tag, tag),
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\\"n\\": ["}}\n\n',
    ]
    parts += [
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"%d, "}}\n\n'
        % tag
    ] * deltas
    parts += [
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"0]}"}}\n\n',
        b'event: content_block_stop\ndata: {"type":"content_block_stop","index":1}\n\n',
        b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":9}}\n\n',
        b'event: message_stop\ndata: {"type":"message_stop"}\n\n',
    ]
    return b"".join(parts)


def chunks(data: bytes, rng: random.Random) -> list[bytes]:
    out, i = [], 0
    while i < len(data):
        n = rng.randint(1, 97)
        out.append(data[i : i + n])
        i += n
    return out


def summary(response: Any) -> tuple[Any, ...]:
    return (
        response.response_id,
        response.text,
        tuple((c.call_id, c.name, c.arguments) for c in response.tool_calls),
        response.finish_reason,
    )


def run_threads(count: int, target: Callable[[int], None]) -> list[BaseException]:
    errors: list[BaseException] = []
    barrier = threading.Barrier(count)

    def body(index: int) -> None:
        try:
            barrier.wait()
            target(index)
        except BaseException as err:  # noqa: BLE001 - reported by the test
            errors.append(err)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    return errors


def test_eight_threads_each_with_its_own_assembler(impl: ModuleType) -> None:
    expected = {}
    for tag in range(8):
        assembler = impl.StreamAssembler("anthropic")
        assembler.feed(stream(tag))
        expected[tag] = summary(assembler.finish())
    documents = {
        tag: b'{"tag": %d, "items": [%s]}' % (tag, b",".join(b'"x%d"' % i for i in range(200))) for tag in range(8)
    }

    def work(tag: int) -> None:
        rng = random.Random(tag)
        for _ in range(15):
            assembler = impl.StreamAssembler("anthropic")
            for piece in chunks(stream(tag), rng):
                assembler.feed(piece)
                if rng.random() < 0.05:
                    assembler.snapshot()
            assert summary(assembler.finish()) == expected[tag]
            value = impl.loads(documents[tag])
            assert value["tag"] == tag and len(value["items"]) == 200
            decoder = impl.SSEDecoder()
            events = [e for piece in chunks(stream(tag), rng) for e in decoder.feed(piece)] + decoder.finish()
            assert len(events) == 89
            with pytest.raises(OutputError):
                impl.loads(b'{"tag": %d, "tag": 0}' % tag)

    assert run_threads(8, work) == []


def _misuse_outcome(impl: ModuleType, assembler: Any, errors: list[BaseException]) -> str:
    """Check the assembler after a misuse; return how it ended."""
    for err in errors:
        # a typed error about the stream, or the borrow check's refusal
        assert isinstance(err, OutputError) or (isinstance(err, RuntimeError) and "borrow" in str(err).lower()), repr(
            err
        )
    typed = [e for e in errors if isinstance(e, OutputError)]
    if typed:
        assert assembler.state == "failed"
        with pytest.raises(StreamError) as info:
            assembler.finish()
        assert info.value.code == "STREAM_FAILED"
        return "failed"
    try:
        assembler.finish()
    except OutputError:
        assert assembler.state == "failed"
        return "failed at finish"
    return "completed"


@pytest.mark.parametrize("seed", range(6))
def test_one_assembler_fed_from_two_threads(impl: ModuleType, seed: int) -> None:
    """Two threads feed one assembler the two halves of one stream's chunks,
    racing. The stream then arrives in some interleaving: the result is a
    typed error, a refusal of the second caller, or, when the halves happen
    to arrive in order, the correct response. Never another exception."""
    data = stream(seed)
    pieces = chunks(data, random.Random(seed))
    assembler = impl.StreamAssembler("anthropic")
    halves = [pieces[0::2], pieces[1::2]]
    errors: list[BaseException] = []

    def feed(index: int) -> None:
        for piece in halves[index]:
            try:
                assembler.feed(piece)
            except (OutputError, RuntimeError) as err:
                errors.append(err)
                if isinstance(err, OutputError):
                    return

    assert run_threads(2, feed) == []
    outcome = _misuse_outcome(impl, assembler, errors)
    if outcome == "completed":
        reference = impl.StreamAssembler("anthropic")
        reference.feed(data)
        assert summary(assembler.finish()) == summary(reference.finish())


@pytest.mark.parametrize("seed", range(4))
def test_snapshots_from_a_second_thread(impl: ModuleType, seed: int) -> None:
    """One thread feeds, another takes snapshots: the feeder's response is
    exact (a feed refused by the borrow check is retried), and every snapshot
    is a prefix of it."""
    data = stream(seed, deltas=80)
    reference = impl.StreamAssembler("anthropic")
    reference.feed(data)
    final = reference.finish()
    assembler = impl.StreamAssembler("anthropic")
    done = threading.Event()
    seen = threading.Event()
    snapshots: list[Any] = []

    def feeder() -> None:
        for number, piece in enumerate(chunks(data, random.Random(seed))):
            if number == 1:
                seen.wait(10)  # the watcher has taken its first snapshot
            while True:
                try:
                    assembler.feed(piece)
                    break
                except RuntimeError as err:  # the snapshot holds the object: retry
                    assert "borrow" in str(err).lower()
        done.set()

    def watcher() -> None:
        while not done.is_set():
            try:
                snapshots.append(assembler.snapshot())
                seen.set()
            except RuntimeError as err:
                assert "borrow" in str(err).lower()

    def target(index: int) -> None:
        (feeder if index == 0 else watcher)()

    assert run_threads(2, target) == []
    assert summary(assembler.finish()) == summary(final)
    assert snapshots
    for snap in snapshots:
        assert final.text.startswith(snap.text)
        for call in snap.calls:
            assert final.tool_calls[0].arguments.startswith(call.arguments)


def test_abort_from_another_thread(impl: ModuleType) -> None:
    """``abort()`` from a second thread stops the feeder with ``STREAM_CANCELLED``."""
    assembler = impl.StreamAssembler("anthropic")
    data = stream(1, deltas=2000)
    pieces = chunks(data, random.Random(1))
    started = threading.Event()
    outcome: list[BaseException] = []

    def target(index: int) -> None:
        if index == 0:
            try:
                for piece in pieces:
                    started.set()
                    assembler.feed(piece)
            except (OutputError, RuntimeError) as err:
                outcome.append(err)
        else:
            started.wait()
            assembler.abort()

    assert run_threads(2, target) == []
    with pytest.raises(StreamError) as info:
        assembler.finish()
    assert info.value.code == "STREAM_CANCELLED"
    assert assembler.state == "failed"
    for err in outcome:
        assert (isinstance(err, StreamError) and err.code == "STREAM_CANCELLED") or "borrow" in str(err).lower(), repr(
            err
        )


def test_counters_stay_exact_under_two_feeders(impl: ModuleType) -> None:
    """Two threads append to two items of one assembler (a call refused by
    the borrow check is retried): the texts are exact, and the limits are
    reached at exactly the right event, so no count was lost or doubled."""
    from dataclasses import replace

    from decisions import DEFAULT_LIMITS
    from decisions.types import ItemStarted, ResponseStarted, TextDelta

    n = 2000
    limits = replace(DEFAULT_LIMITS, max_response_bytes=2 * n, max_stream_events=3 + 2 * n + 1)
    assembler = impl.StreamAssembler("canonical", limits=limits)
    assembler.feed_event(ResponseStarted(response_id="r"))
    assembler.feed_event(ItemStarted(item_id="a", kind="text"))
    assembler.feed_event(ItemStarted(item_id="b", kind="text"))

    def work(index: int) -> None:
        event = TextDelta(item_id="ab"[index], delta="xy"[index])
        for _ in range(n):
            while True:
                try:
                    assembler.feed_event(event)
                    break
                except RuntimeError as err:
                    assert "borrow" in str(err).lower()

    assert run_threads(2, work) == []
    snap = assembler.snapshot()
    assert sorted(snap.text) == sorted("x" * n + "y" * n)
    with pytest.raises(StreamError) as info:  # one byte over max_response_bytes
        assembler.feed_event(TextDelta(item_id="a", delta="z"))
    assert info.value.code == "RESPONSE_TOO_LARGE"
