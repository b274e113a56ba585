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


_STR_SCRIPT = r"""
import json, resource, sys
from decisions import Limits, _pure
from decisions._backend import native_module
from decisions.errors import ParseError
impl = _pure if sys.argv[1] == "pure" else native_module()
text = "\u20ac" * (30 << 20)  # 60 MiB of characters, 90 MiB of UTF-8
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    impl.loads(text, limits=Limits(max_document_bytes=32 << 20))
    code = None
except ParseError as error:
    code = [error.code, error.offset]
print(json.dumps([code, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before]))
"""


def test_a_str_too_large_as_utf8_is_refused_before_its_utf8_is_built(impl: ModuleType) -> None:
    """Fewer characters than max_document_bytes but more UTF-8 bytes: refused
    at offset 0 without building the str's UTF-8 form (90 MiB here)."""
    name = "pure" if impl.__name__.endswith("_pure") else "native"
    out = subprocess.run([sys.executable, "-c", _STR_SCRIPT, name], capture_output=True, text=True, check=True)
    code, growth_kib = json.loads(out.stdout)
    assert code == ["DOCUMENT_TOO_LARGE", 0]
    assert growth_kib < 16 * 1024


@pytest.mark.parametrize(
    "text", ['"' + "\u00e9" * 600 + '"', '"' + "\u20ac" * 400 + '"', '"\ud800' + "\U0001f600" * 300 + '"']
)
def test_str_sizes_agree(both: tuple[ModuleType, ModuleType], text: str) -> None:
    """Around the limit, with 2-, 3- and 4-byte characters and a lone
    surrogate: the same value or the same code at the same offset."""
    outcomes = []
    for impl in both:
        for limit in (len(text), len(text.encode("utf-8", "surrogatepass")), 4 * len(text)):
            try:
                outcomes.append(impl.loads(text, limits=Limits(max_document_bytes=limit)))
            except OutputError as error:
                outcomes.append((error.code, error.offset))
    assert outcomes[:3] == outcomes[3:]


@pytest.mark.parametrize("wide", ["\u00e9", "\u20ac", "\U0001f600"])
def test_str_bound_is_its_utf8_bytes_not_its_widest_encoding(impl: ModuleType, wide: str) -> None:
    """A mostly ASCII str of a wide kind: its characters times the widest
    encoding pass the bound, its real UTF-8 does not, so it parses; one byte
    more than the bound is refused at offset 0."""
    text = '"' + "a" * 100 + wide + '"'
    size = len(text.encode())
    assert len(text) * 4 > size + 1  # the widest encoding would be refused
    assert impl.loads(text, limits=Limits(max_document_bytes=size)) == "a" * 100 + wide
    with pytest.raises(OutputError) as caught:
        impl.loads(text, limits=Limits(max_document_bytes=size - 1))
    assert (caught.value.code, caught.value.offset) == ("DOCUMENT_TOO_LARGE", 0)


_EVENT_STR_SCRIPT = r"""
import json, resource, sys
from decisions import Limits, _pure
from decisions._backend import native_module
from decisions.errors import OutputError
impl = _pure if sys.argv[1] == "pure" else native_module()
text = '{"a": "' + "\u20ac" * (30 << 20) + '"}'  # 60 MiB of characters, 90 MiB of UTF-8
limits = Limits(max_sse_event_bytes=32 << 20)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    if sys.argv[2] == "normalize":
        impl.normalize(text, provider="anthropic", limits=limits)
    else:
        impl.StreamAssembler("anthropic", limits=limits).feed_event(text)
    code = None
except OutputError as error:
    code = [error.code, error.path, error.message]
print(json.dumps([code, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before]))
"""


@pytest.mark.parametrize("entry", ["normalize", "feed_event"])
def test_an_event_str_too_large_as_utf8_is_refused_before_its_utf8_is_built(impl: ModuleType, entry: str) -> None:
    """``normalize(str)`` and ``feed_event(str)`` with fewer characters than
    max_sse_event_bytes but more UTF-8 bytes: refused as the envelope rule
    refuses it, without building (and caching on the str) its UTF-8 form."""
    name = "pure" if impl.__name__.endswith("_pure") else "native"
    out = subprocess.run(
        [sys.executable, "-c", _EVENT_STR_SCRIPT, name, entry], capture_output=True, text=True, check=True
    )
    code, growth_kib = json.loads(out.stdout)
    assert code == ["MALFORMED_EVENT", "$", f"event data has more than {32 << 20} bytes"]
    assert growth_kib < 16 * 1024


def _event_str_outcomes(impl: ModuleType, text: str, limit: int) -> list[object]:
    """What normalize and feed_event (then a second feed_event) say of ``text``."""
    limits = Limits(max_sse_event_bytes=limit)
    outcomes: list[object] = []
    for step in ("normalize", "feed_event"):
        assembler = impl.StreamAssembler("openai-chat", limits=limits)
        for _ in range(2):
            try:
                if step == "normalize":
                    impl.normalize(text, provider="openai-chat", limits=limits)
                else:
                    assembler.feed_event(text)
                outcomes.append("ok")
            except OutputError as error:
                outcomes.append((error.code, error.offset, error.path, error.message))
    return outcomes


@pytest.mark.parametrize(
    "text",
    [
        '{"id": "' + "\u00e9" * 600 + '"}',
        '{"id": "' + "\u20ac" * 400 + '"}',
        '{"id": "' + "\U0001f600" * 300 + '"}',
        '{"id": "\ud800' + "\U0001f600" * 300 + '"}',
        '{"id": "' + "\u00e9" * 300 + "\ud800" + '"}',
    ],
)
def test_event_str_sizes_agree(both: tuple[ModuleType, ModuleType], text: str) -> None:
    """Around max_sse_event_bytes, with 2-, 3- and 4-byte characters and a
    lone surrogate (not UTF-8: refused as such first, whatever its size):
    the same outcome from normalize and feed_event on both backends."""
    for limit in (len(text), len(text.encode("utf-8", "surrogatepass")) - 1, 4 * len(text)):
        native, pure = (_event_str_outcomes(impl, text, limit) for impl in both)
        assert native == pure, limit
