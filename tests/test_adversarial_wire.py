"""Adversarial inputs at the canonical event boundary: partial views of
streaming arguments, the wire reader and the round trips of its shapes."""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import pytest

import decisions

_START = {"type": "response_started"}
_CALL = {"type": "tool_call_started", "item_id": "i1", "call_id": "c1", "name": "f"}


def _partial(impl: ModuleType, arguments: str) -> Any:
    """The snapshot's partial view of a call whose arguments so far are ``arguments``,
    fed whole and one character at a time (the two must agree)."""
    views = []
    for pieces in ([arguments], list(arguments)):
        assembler = impl.StreamAssembler("canonical")  # type: ignore[attr-defined]
        assembler.feed_event(_START)
        assembler.feed_event(_CALL)
        for piece in pieces:
            assembler.feed_event({"type": "tool_arguments_delta", "item_id": "i1", "delta": piece})
            views.append(assembler.snapshot().calls[0].partial)
    assert views[0] == views[-1], arguments
    return views[-1]


#: Arguments text that ``loads`` refuses, and the view of the last good value before the fault.
_REFUSED_BY_LOADS = [
    ('{"a": "\\u-123"}', {}),  # int("-123", 16) is a number: chr() of it raised ValueError
    ('{"a": "\\u 041"}', {}),  # int(" 041", 16) == 0x41: the view showed "A"
    ('{"a": "\\u0_41"}', {}),  # int("0_41", 16) == 0x41
    ('{"a": "\\u+041", "b": 1}', {}),
    ('{"a": 1, "b": "\\ud800x"}', {"a": 1}),  # a lone surrogate the view kept
    ('{"a": "\\udc00"}', {}),
    ('{"a": "\\ud800\\ud800"}', {}),
    ('{"a": "\\ud800"}', {}),
    ('{"a": "x\ny"}', {}),  # a raw control character in a string
    ('["ok", "\t"]', ["ok"]),
    ('{"a": 1, "a": 2}', {"a": 1}),  # a repeated key: the view showed the last one
    ('{"a": 1, "b": {"a": 2}, "a": 3', {"a": 1, "b": {"a": 2}}),
    ('{"a": 1e400}', {}),  # overflows: the view showed inf
    ('{"a": 1e400', {}),
    ("[1.5e308, -2e308]", [1.5e308]),
    ('{"n": 18446744073709551615, "m": 18446744073709551616}', {"n": 18446744073709551615}),
    ('{"n": -9223372036854775809}', {}),
]


@pytest.mark.parametrize(("arguments", "view"), _REFUSED_BY_LOADS)
def test_a_partial_view_stops_at_what_loads_refuses(impl: ModuleType, arguments: str, view: Any) -> None:
    """The view never holds a value the strict parser refuses (a guessed
    escape, a lone surrogate, a control character, the second of two
    repeated keys, an overflowing number), and never crashes: it stops at
    the last good value."""
    with pytest.raises(decisions.ParseError):
        decisions.loads(arguments)
    shown = _partial(impl, arguments)
    assert shown == view
    json.dumps(shown, allow_nan=False).encode("utf-8")  # a UI can always write it
