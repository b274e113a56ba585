"""A body larger than one event's bound is refused as too large without
being decoded whole, but its UTF-8 is checked first, a piece at a time: an
invalid sequence anywhere (the first byte, across the boundary of two
pieces, cut off at the very end) is "not valid UTF-8", and a valid
character split across two pieces is not. Read where it lies, for bytes, a
bytearray, a memoryview and a memoryview that is not contiguous, on both
backends."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

from decisions import Limits
from decisions._pure.envelope import _PIECE
from decisions.errors import OutputError

LIMITS = Limits(max_sse_event_bytes=_PIECE + 4096)
BODY = b'{"id": "' + b"a" * (_PIECE + 8192) + b'"}'
TOO_LARGE = ("StreamError", "MALFORMED_EVENT", "$", f"event data has more than {_PIECE + 4096} bytes")
NOT_UTF8 = ("StreamError", "MALFORMED_EVENT", None, "event data is not valid UTF-8")


def _spread(data: bytes) -> memoryview:
    """``data`` as a memoryview that is not contiguous (every other byte)."""
    doubled = bytearray(len(data) * 2)
    doubled[::2] = data
    return memoryview(bytes(doubled))[::2]


KINDS: dict[str, Callable[[bytes], Any]] = {
    "bytes": bytes,
    "bytearray": bytearray,
    "memoryview": memoryview,
    "spread": _spread,
}
AT_THE_BOUND = b'{"id": "' + b"a" * (_PIECE + 4096 - 10) + b'"}'  # exactly max_sse_event_bytes
CASES = {
    "valid": (BODY, TOO_LARGE),
    "at the bound": (AT_THE_BOUND, None),
    "first byte": (b"\xff" + BODY, NOT_UTF8),
    "split across pieces": (BODY[: _PIECE - 1] + "é".encode() + BODY[_PIECE + 1 :], TOO_LARGE),
    "cut across pieces": (BODY[: _PIECE - 1] + "€".encode()[:2] + BODY[_PIECE + 1 :], NOT_UTF8),
    "cut at the end": (BODY + "€".encode()[:2], NOT_UTF8),
    "bad at the end": (BODY + b"\xff", NOT_UTF8),
}


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("case", list(CASES))
def test_a_body_too_large_is_checked_a_piece_at_a_time(impl: ModuleType, kind: str, case: str) -> None:
    data, expected = CASES[case]
    try:
        impl.normalize(KINDS[kind](data), provider="openai-chat", limits=LIMITS)
        found: Any = "ok"
    except OutputError as error:
        found = (type(error).__name__, error.code, error.path, error.message)
    if expected is None:  # read (and refused for what it holds), not refused as too large
        assert found == ("StreamError", "MALFORMED_EVENT", "$.choices", "chat.completion: the body has no choices")
    else:
        assert found == expected
