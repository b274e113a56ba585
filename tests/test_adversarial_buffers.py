"""Adversarial buffers: a ``bytearray`` or ``memoryview`` past its limit is
refused before it is copied (``SSEDecoder.feed``, ``StreamAssembler.feed``
and ``feed_event``, ``normalize``), the same on both backends; the peak
memory grows by a small multiple of the limit, not of the buffer."""

from __future__ import annotations

import json
import subprocess
import sys
from types import ModuleType

import pytest

from decisions import Limits
from decisions.errors import OutputError

_LIMITS = Limits(max_stream_bytes=1 << 20, max_sse_event_bytes=1 << 20)

_ENTRIES = ("sse_feed", "assembler_feed", "feed_event", "normalize")

_RSS_SCRIPT = r"""
import json, resource, sys
from decisions import Limits, _pure
from decisions._backend import native_module
from decisions.errors import OutputError
impl = _pure if sys.argv[1] == "pure" else native_module()
entry, kind = sys.argv[2], sys.argv[3]
limits = Limits(max_stream_bytes=1 << 20, max_sse_event_bytes=1 << 20)
buffer = bytearray(128 << 20)
buffer[:: 1 << 12] = b"a" * (1 << 15)  # every page touched, no temporary copy
data = buffer if kind == "bytearray" else memoryview(buffer)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    if entry == "sse_feed":
        impl.SSEDecoder(limits=limits).feed(data)
    elif entry == "assembler_feed":
        impl.StreamAssembler("anthropic", limits=limits).feed(data)
    elif entry == "feed_event":
        impl.StreamAssembler("anthropic", limits=limits).feed_event(data)
    else:
        impl.normalize(data, provider="anthropic", limits=limits)
    code = None
except OutputError as error:
    code = error.code
print(json.dumps([code, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before]))
"""


@pytest.mark.parametrize("kind", ["bytearray", "memoryview"])
@pytest.mark.parametrize("entry", _ENTRIES)
def test_a_huge_buffer_is_refused_before_it_is_copied(impl: ModuleType, entry: str, kind: str) -> None:
    """128 MiB against limits of 1 MiB: refused, with the peak RSS grown by
    a few MiB (a copy would add 128)."""
    name = "pure" if impl.__name__.endswith("_pure") else "native"
    out = subprocess.run(
        [sys.executable, "-c", _RSS_SCRIPT, name, entry, kind], capture_output=True, text=True, check=True
    )
    code, growth_kib = json.loads(out.stdout)
    assert code is not None
    assert growth_kib < 16 * 1024


def _outcome(impl: ModuleType, entry: str, data: bytes | bytearray | memoryview) -> tuple[str | None, str | None]:
    try:
        if entry == "sse_feed":
            impl.SSEDecoder(limits=_LIMITS).feed(data)
        elif entry == "assembler_feed":
            impl.StreamAssembler("anthropic", limits=_LIMITS).feed(data)
        elif entry == "feed_event":
            impl.StreamAssembler("anthropic", limits=_LIMITS).feed_event(data)
        else:
            impl.normalize(data, provider="anthropic", limits=_LIMITS)
    except OutputError as error:
        return error.code, str(error)
    return None, None


@pytest.mark.parametrize("size", [(1 << 20) + 1, 4096, 100])
@pytest.mark.parametrize("entry", _ENTRIES)
def test_buffers_give_what_bytes_give(both: tuple[ModuleType, ModuleType], entry: str, size: int) -> None:
    """Over, within and under the in-place threshold: a bytearray and a
    memoryview give what the same bytes give, on both backends."""
    data = b"\xff" + b"a" * (size - 1)
    expected = _outcome(both[0], entry, data)
    for impl in both:
        assert _outcome(impl, entry, bytearray(data)) == expected
        assert _outcome(impl, entry, memoryview(data)) == expected
        assert _outcome(impl, entry, memoryview(bytearray(data))[::1]) == expected
