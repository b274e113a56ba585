"""Threads: the module shared by many threads, and one assembler misused
from two.

The native ``StreamAssembler.feed`` / ``feed_event``, ``SSEDecoder.feed`` and
``normalize`` run their Rust-only work with the GIL released when the input
is large enough (``RELEASE_AT`` in ``rust/src/py/common.rs``); everything else
runs to its end with the GIL held, or until it calls back into Python
(building the error object, ``json.dumps`` of a dict payload, the snapshot's
partial parser), where the interpreter may switch threads. A second thread
that calls a method of the same native object meanwhile is refused by PyO3's
borrow check (``RuntimeError: Already borrowed``) before it touches
anything: one assembler is never used by two threads at once. The switch
interval is set to a microsecond here so that threads interleave as often as
the interpreter allows.
"""

from __future__ import annotations

import json
import random
import sys
import threading
from contextlib import contextmanager
from functools import partial
from types import ModuleType
from typing import Any, Callable, Iterator

import pytest

from decisions import _payload
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


def _refused(err: BaseException) -> bool:
    """PyO3's borrow check refusing a call on an object another thread is using."""
    return isinstance(err, RuntimeError) and "borrow" in str(err).lower()


def _mixed_chunks(data: bytes, rng: random.Random) -> list[bytes]:
    """Chunks of 1-97 bytes (the GIL is kept) and of 2-16 KiB (released)."""
    out, i = [], 0
    while i < len(data):
        n = rng.randint(1, 97) if rng.random() < 0.5 else rng.randint(2048, 16384)
        out.append(data[i : i + n])
        i += n
    return out


def test_many_streams_while_others_snapshot_and_finish(impl: ModuleType) -> None:
    """Six threads each assemble their own streams, in chunks on both sides
    of the GIL-release size, while three others take snapshots of the
    streams being fed and call ``finish()`` on the ones fed to the end,
    racing their feeder's own ``finish()``. Every response (the feeder's and
    the watchers') is the exact one; every snapshot is a prefix of it; the
    only other outcome allowed is the borrow check's refusal of a call on an
    assembler another thread is in, which changes nothing (the call is retried)."""
    feeders, per_feeder, watchers = 6, 3, 3
    expected = {}
    for tag in range(feeders * per_feeder):
        reference = impl.StreamAssembler("anthropic")
        reference.feed(stream(tag, deltas=300))
        expected[tag] = reference.finish()
    lock = threading.Lock()
    live: list[tuple[int, Any]] = []  # being fed
    fed: list[tuple[int, Any]] = []  # fed to the end
    counts = {"snapshots": 0, "finishes": 0, "refused": 0}
    remaining = [feeders]
    snapped = {tag: threading.Event() for tag in expected}

    def retry(call: Callable[[], Any]) -> Any:
        while True:
            try:
                return call()
            except RuntimeError as err:
                if not _refused(err):
                    raise
                with lock:
                    counts["refused"] += 1

    def check_snapshot(tag: int, snap: Any) -> None:
        final = expected[tag]
        assert snap.response_id in (None, final.response_id)
        assert final.text.startswith(snap.text)
        assert len(snap.calls) <= 1
        for call in snap.calls:
            assert (call.call_id, call.name) == (final.tool_calls[0].call_id, final.tool_calls[0].name)
            assert final.tool_calls[0].arguments.startswith(call.arguments)

    def feeder(index: int) -> None:
        rng = random.Random(index)
        for tag in range(index * per_feeder, (index + 1) * per_feeder):
            assembler = impl.StreamAssembler("anthropic")
            with lock:
                live.append((tag, assembler))
            for number, piece in enumerate(_mixed_chunks(stream(tag, deltas=300), rng)):
                retry(partial(assembler.feed, piece))
                if number == 1:
                    snapped[tag].wait(30)  # a watcher has seen this stream mid-way
            with lock:
                live.remove((tag, assembler))
                fed.append((tag, assembler))
            assert summary(retry(assembler.finish)) == summary(expected[tag])
        with lock:
            remaining[0] -= 1

    def watcher(index: int) -> None:
        rng = random.Random(1000 + index)
        while True:
            with lock:
                done = remaining[0] == 0
                pool = list(fed) if done or rng.random() < 0.3 else list(live)
            if done:
                for tag, assembler in pool:  # a last pass: every fed assembler
                    assert summary(retry(assembler.finish)) == summary(expected[tag])
                    with lock:
                        counts["finishes"] += 1
                return
            if not pool:
                continue
            tag, assembler = rng.choice(pool)
            try:
                if assembler.state == "completed" and (tag, assembler) in fed:
                    assert summary(assembler.finish()) == summary(expected[tag])
                    key = "finishes"
                else:
                    check_snapshot(tag, assembler.snapshot())
                    snapped[tag].set()
                    key = "snapshots"
            except RuntimeError as err:
                if not _refused(err):
                    raise
                key = "refused"
            with lock:
                counts[key] += 1

    def target(index: int) -> None:
        (feeder if index < feeders else watcher)(index % feeders)

    assert run_threads(feeders + watchers, target) == []
    assert len(fed) == feeders * per_feeder and not live
    assert all(event.is_set() for event in snapped.values())
    assert counts["snapshots"] >= len(fed) and counts["finishes"] >= watchers * len(fed)
    for tag, assembler in fed:
        assert assembler.state == "completed"
        assert summary(assembler.finish()) == summary(expected[tag])


def _anthropic_body(size: int) -> bytes:
    message = {
        "id": "msg_big",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [{"type": "text", "text": "x" * size}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    return json.dumps(message).encode()


def _large_calls(native: ModuleType) -> dict[str, Callable[[], Any]]:
    """Each native call that releases the GIL, on an input of some MB; each
    returns something to check."""
    data = stream(7, deltas=20_000)
    event = json.dumps(
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "y" * 12_000_000}}
    )

    def feed() -> Any:
        assembler = native.StreamAssembler("anthropic")
        assembler.feed(data)
        return summary(assembler.finish())[1][:10]

    def feed_event() -> Any:
        assembler = native.StreamAssembler("anthropic")
        assembler.feed(stream(7, deltas=0).split(b"event: content_block_stop")[0])
        assembler.feed_event(event, "content_block_delta")
        return len(assembler.snapshot().text)

    def decode() -> Any:
        return len(native.SSEDecoder().feed(data))

    def normalize() -> Any:
        return len(native.normalize(_anthropic_body(3_000_000), provider="anthropic").text)

    return {"feed": feed, "feed_event": feed_event, "decode": decode, "normalize": normalize}


def _observe(go: threading.Event, state: list[str], seen: list[str]) -> None:
    """Once woken, note where the other thread is."""
    go.wait()
    seen.append(state[0])


@pytest.mark.parametrize("call", ["feed", "feed_event", "decode", "normalize"])
def test_a_large_call_lets_other_threads_run(native: ModuleType, call: str) -> None:
    """While one thread is inside a native call on a large input, another
    thread runs Python code. Made deterministic with a long switch interval:
    the second thread, woken just before the call, can only get the GIL while
    the first gives it up; a call that keeps the GIL lets it run only once the
    caller blocks (in ``join``), after the flag says the call has returned."""
    work = _large_calls(native)[call]
    expected = work()
    before = sys.getswitchinterval()
    seen: list[str] = []
    try:
        sys.setswitchinterval(30.0)
        for _ in range(40):  # the caller may win the GIL back first (a busy machine): try again
            state = ["before"]
            go = threading.Event()
            other = threading.Thread(target=_observe, args=(go, state, seen))
            other.start()
            state[0] = "inside"
            go.set()
            assert work() == expected
            state[0] = "after"
            other.join()
            if seen[-1] == "inside":
                break
    finally:
        sys.setswitchinterval(before)
    assert "inside" in seen, seen


@contextmanager
def _inside_payload_writing(hook: Callable[[], None]) -> Iterator[None]:
    """Run ``hook`` once, in this thread, when ``feed_event`` writes its dict
    payload as JSON text (``decisions._payload.payload_text``, which both
    backends call): Python code running inside the call, with the
    assembler held."""
    code = _payload.payload_text.__code__

    def trace(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code is code:
            sys.settrace(None)
            hook()

    sys.settrace(trace)
    try:
        yield
    finally:
        sys.settrace(None)


def test_a_call_while_another_thread_is_inside_is_refused(impl: ModuleType) -> None:
    """Deterministic: ``feed_event`` of a dict payload writes it as JSON text;
    from there another thread (and this one, re-entering) calls into the
    same assembler. Each call is refused with the borrow check's
    ``RuntimeError`` before it touches anything: the stream then completes
    exactly, as if the refused calls had never been made (the one extra
    delta is the probe's own)."""
    data = stream(3)
    head, tail = data.split(b"event: content_block_stop", 1)
    tail = b"event: content_block_stop" + tail
    reference = impl.StreamAssembler("anthropic")
    reference.feed(data)
    expected = summary(reference.finish())
    assembler = impl.StreamAssembler("anthropic")
    assembler.feed(head)
    calls: dict[str, Callable[[], Any]] = {
        "feed": lambda: assembler.feed(tail),
        "feed_event": lambda: assembler.feed_event('{"type":"message_stop"}'),
        "snapshot": assembler.snapshot,
        "finish": assembler.finish,
        "take_events": assembler.take_events,
    }
    outcomes: dict[str, str] = {}

    def attempt(where: str) -> None:
        for name, call in calls.items():
            try:
                call()
                outcomes[f"{where} {name}"] = "ran"
            except RuntimeError as err:
                outcomes[f"{where} {name}"] = "refused" if _refused(err) else repr(err)
            except BaseException as err:  # noqa: BLE001 - reported below
                outcomes[f"{where} {name}"] = repr(err)

    def probe() -> None:
        other = threading.Thread(target=attempt, args=("other thread",))
        other.start()
        other.join()
        attempt("same thread")

    delta = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "t3."}}
    with _inside_payload_writing(probe):
        assembler.feed_event(delta, "content_block_delta")
    assert outcomes == {f"{where} {name}": "refused" for where in ("other thread", "same thread") for name in calls}
    assembler.feed(tail)
    assert summary(assembler.finish()) == (expected[0], expected[1] + "t3.", *expected[2:])


def _chat_stream(deltas: int) -> bytes:
    """An OpenAI Chat stream of ``deltas`` text deltas, then its finish."""
    delta = b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"xxxxxxxxxxxxxxxx"}}]}\n\n'
    end = b'data: {"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
    return delta * deltas + end


def _refusals_and_abort(assembler: Any, provider: str) -> list[str]:
    """From a second thread, while the first is inside a feed: ``state`` and
    ``provider`` answer, every other call is refused, ``abort()`` works."""
    seen = [assembler.state]
    assert assembler.provider == provider
    for call in (
        assembler.snapshot,
        assembler.finish,
        assembler.take_events,
        partial(assembler.feed, b": x\n\n"),
        partial(assembler.feed_event, "{}"),
    ):
        with pytest.raises(RuntimeError, match="borrowed"):
            call()
    assembler.abort()
    seen.append(assembler.state)
    return seen


def test_state_and_abort_while_a_call_runs_python_code(impl: ModuleType) -> None:
    """Python code runs inside ``feed_event`` (a dict payload's JSON text is
    written then): there, another thread reads ``state`` and ``provider``, is
    refused every other call, and ``abort()`` cancels the feed, which then
    raises ``STREAM_CANCELLED``."""
    inside, checked = threading.Event(), threading.Event()

    def wait_for_the_checks() -> None:
        inside.set()
        assert checked.wait(30)

    assembler = impl.StreamAssembler("openai-chat")
    assembler.feed(_chat_stream(1)[:90])
    seen: list[str] = []
    outcome: list[BaseException] = []

    def target(index: int) -> None:
        if index == 0:
            try:
                with _inside_payload_writing(wait_for_the_checks):
                    assembler.feed_event({"id": "c", "choices": [{"index": 0, "delta": {"content": "y"}}]})
            except StreamError as err:
                outcome.append(err)
        else:
            assert inside.wait(30)
            seen.extend(_refusals_and_abort(assembler, "openai-chat"))
            checked.set()

    assert run_threads(2, target) == []
    assert seen == ["streaming", "failed"]
    assert [e.code for e in outcome] == ["STREAM_CANCELLED"]  # type: ignore[attr-defined]
    assert assembler.state == "failed"
    with pytest.raises(StreamError) as info:
        assembler.finish()
    assert info.value.code == "STREAM_CANCELLED"


def test_abort_lands_in_a_large_feed(impl: ModuleType) -> None:
    """One feed of a large stream (natively run with the GIL released): a
    second thread sees it streaming, reads ``state`` and ``provider``, is
    refused every other call, and its ``abort()`` stops the feed with
    ``STREAM_CANCELLED`` before the stream's finish: no response."""
    data = _chat_stream(100_000)  # 8 MB
    assembler = impl.StreamAssembler("openai-chat", keep_events=True)
    started = threading.Event()
    seen: list[str] = []
    outcome: list[BaseException] = []

    def target(index: int) -> None:
        if index == 0:
            started.set()
            try:
                assembler.feed(data)
            except StreamError as err:
                outcome.append(err)
        else:
            assert started.wait(30)
            while assembler.state != "streaming":  # the feed has applied an event
                pass
            seen.extend(_refusals_and_abort(assembler, "openai-chat"))

    assert run_threads(2, target) == []
    assert seen == ["streaming", "failed"]
    assert [e.code for e in outcome] == ["STREAM_CANCELLED"]  # type: ignore[attr-defined]
    assert assembler.state == "failed"
    for call in (assembler.finish, assembler.snapshot, partial(assembler.feed, b"\n")):
        with pytest.raises(StreamError) as info:
            call()
        assert info.value.code == "STREAM_CANCELLED"
