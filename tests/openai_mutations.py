"""Hypothesis strategies that damage one value of a recorded event stream,
for native-vs-pure differential tests of the OpenAI mappers."""

from __future__ import annotations

import copy
import json
from types import ModuleType
from typing import Any

from hypothesis import strategies as st

from decisions.errors import OutputError

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside ``value`` (not the root)."""
    out: list[tuple[Any, ...]] = []
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        out.append(prefix + (key,))
        out.extend(paths(child, prefix + (key,)))
    return out


@st.composite
def damaged(draw: st.DrawFn, events: list[Any], *, reorder: bool = True) -> list[Any]:
    """``events`` with one value replaced, one key removed, or (with
    ``reorder``) one event dropped or repeated."""
    events = copy.deepcopy(events)
    index = draw(st.integers(0, len(events) - 1))
    actions = ["replace", "replace", "replace", "delete"] + (["drop", "repeat"] if reorder else [])
    action = draw(st.sampled_from(actions))
    if action == "drop":
        del events[index]
        return events
    if action == "repeat":
        events.insert(index, copy.deepcopy(events[index]))
        return events
    event = events[index]
    where = paths(event)
    if not where:
        return events
    path = draw(st.sampled_from(where))
    parent = event
    for key in path[:-1]:
        parent = parent[key]
    if action == "delete" and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = draw(JSON_VALUES)
    return events


def outcome(impl: ModuleType, provider: str, events: list[Any]) -> Any:
    """The response, or ``(error class name, code)``."""
    try:
        assembler = impl.StreamAssembler(provider)
        for event in events:
            assembler.feed_event(event if isinstance(event, str) else json.dumps(event))
        return assembler.finish()
    except OutputError as err:
        return (type(err).__name__, err.code)
