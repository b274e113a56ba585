"""Many streams at once: N threads each assemble their own streams, N = 1, 2, 4.

The stream is an OpenAI Chat Completions stream of about 730 KB (three
``write_file`` calls, 8-byte argument deltas, as ``test_bench_stream.py``
builds it), fed in chunks of 256 B, 4 KiB or 64 KiB. Every thread feeds its
own assembler ``STREAMS`` streams one after the other and checks each
response; a round is timed on the wall clock from the moment all threads are
started until the last one ends. The figure that matters is throughput (bytes
assembled per second of wall time) relative to one thread with the same
backend and chunk size: 2.0 with 2 threads is perfect scaling on 2 cores,
1.0 means the threads only took turns.

Two ways to run it:

- ``python benches/test_bench_threads.py [rounds]`` runs the configurations
  interleaved round by round in a shuffled order (so a change in the
  machine's load hits all of them alike), one stream per thread and round,
  and prints the table of median throughput ratios, with a ``ceiling`` row:
  the same for SHA-256 of the stream, which runs without the GIL, to show
  what the machine allowed during the run (other jobs share its cores);
- ``benches/report.py -k threads`` runs them as pytest-benchmark groups (one
  group per backend and chunk size, one thread as the baseline) and prints the
  same ratios from the medians.

Wall-clock time, not the process CPU time of the other benchmarks: CPU time
adds up the threads' time and cannot show them overlapping.
"""

from __future__ import annotations

import hashlib
import random
import statistics
import sys
import threading
import time
from functools import lru_cache
from types import ModuleType
from typing import Any, Callable

import pytest

from decisions import _pure
from decisions._backend import native_module
from test_bench_stream import _arguments
from test_bench_stream import stream as _stream

KiB = 1024
PER_CALL = 6 * KiB + 512
CHUNKS = (256, 4 * KiB, 64 * KiB)
THREADS = (1, 2, 4)
#: Streams each thread assembles per round: enough that thread start-up is a small part.
STREAMS = {"native": 8, "pure": 1}

_NATIVE = native_module()
BACKENDS: dict[str, ModuleType] = {"pure": _pure} if _NATIVE is None else {"native": _NATIVE, "pure": _pure}


@lru_cache(maxsize=None)
def chunked(size: int) -> list[bytes]:
    data = b"".join(_stream(PER_CALL, "openai-chat")[0])
    return [data[i : i + size] for i in range(0, len(data), size)]


def stream_bytes() -> int:
    return sum(len(c) for c in chunked(CHUNKS[0]))


@lru_cache(maxsize=None)
def expected_arguments() -> list[str]:
    return [_arguments(i, PER_CALL) for i in range(3)]


def ceiling(chunks: list[bytes], streams: int) -> None:
    """The machine's own limit: SHA-256 of the stream, which runs without the GIL
    (``hashlib`` releases it for each chunk of 2 KiB or more), a few passes per
    stream (about a native stream's time)."""
    for _ in range(streams * 3):
        digest = hashlib.sha256()
        for chunk in chunks:
            digest.update(chunk)


def assemble(impl: ModuleType | None, chunks: list[bytes], streams: int) -> None:
    """Assemble the stream ``streams`` times, each with a new assembler, and check each response
    (``impl`` None: the :func:`ceiling` instead)."""
    if impl is None:
        ceiling(chunks, streams)
        return
    for _ in range(streams):
        assembler = impl.StreamAssembler("openai-chat")
        for chunk in chunks:
            assembler.feed(chunk)
        response = assembler.finish()
        if [c.arguments for c in response.tool_calls] != expected_arguments():
            raise AssertionError("wrong arguments")


def round_time(impl: ModuleType | None, chunk: int, threads: int, streams: int) -> float:
    """Wall-clock seconds for ``threads`` threads to assemble ``streams`` streams each."""
    chunks = chunked(chunk)
    barrier = threading.Barrier(threads + 1)
    errors: list[BaseException] = []

    def work() -> None:
        barrier.wait()
        try:
            assemble(impl, chunks, streams)
        except BaseException as err:  # noqa: BLE001 - re-raised below
            errors.append(err)

    pool = [threading.Thread(target=work) for _ in range(threads)]
    for t in pool:
        t.start()
    barrier.wait()
    start = time.perf_counter()
    for t in pool:
        t.join()
    elapsed = time.perf_counter() - start
    if errors:
        raise errors[0]
    return elapsed


def throughput(threads: int, streams: int, seconds: float) -> float:
    """Bytes assembled per second of wall time."""
    return threads * streams * stream_bytes() / seconds


@pytest.mark.benchmark(timer=time.perf_counter, min_rounds=5, warmup=False)
@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("chunk", CHUNKS)
@pytest.mark.parametrize("name", list(BACKENDS))
def test_threads(benchmark: Any, name: str, chunk: int, threads: int) -> None:
    impl, streams = BACKENDS[name], STREAMS[name]
    benchmark.group = f"threads [{name}, {chunk} B chunks]: N threads x {streams} streams each, ~730 KB per stream"
    # report.py prints throughput relative to the baseline (one thread) from `streams`
    benchmark.extra_info.update(baseline=threads == 1, streams=threads * streams)
    run: Callable[[], float] = lambda: round_time(impl, chunk, threads, streams)  # noqa: E731
    benchmark.pedantic(run, rounds=5 if name == "native" else 3, iterations=1)


def table(rounds: int, streams: int = 1) -> str:
    """All configurations, interleaved round by round in a shuffled order (so a
    change in the machine's load hits them alike), each thread assembling
    ``streams`` streams; median throughput relative to one thread."""
    configs = [(name, chunk, n) for name in BACKENDS for chunk in CHUNKS for n in THREADS]
    configs += [("ceiling", CHUNKS[-1], n) for n in THREADS]
    times: dict[tuple[str, int, int], list[float]] = {config: [] for config in configs}
    order = random.Random(0)
    for _ in range(rounds):
        order.shuffle(configs)
        for name, chunk, n in configs:
            times[(name, chunk, n)].append(round_time(BACKENDS.get(name), chunk, n, streams))
    lines = [f"throughput relative to 1 thread (median of {rounds} rounds, ~{stream_bytes() // 1000} KB per stream)"]
    lines.append(f"  {'backend':<8} {'chunk':>7}  " + "  ".join(f"{n} thr" for n in THREADS) + "   1-thread MB/s")
    for name, chunk in [(name, chunk) for name in BACKENDS for chunk in CHUNKS] + [("ceiling", CHUNKS[-1])]:
        rates = {n: throughput(n, streams, statistics.median(times[(name, chunk, n)])) for n in THREADS}
        ratios = "  ".join(f"{rates[n] / rates[1]:5.2f}" for n in THREADS)
        lines.append(f"  {name:<8} {chunk:>7}  {ratios}   {rates[1] / 1e6:10.1f}")
    lines.append("  (ceiling: SHA-256 of the stream, which runs without the GIL: what the machine allowed meanwhile)")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table(int(sys.argv[1]) if len(sys.argv) > 1 else 31))
