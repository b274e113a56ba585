"""A model's value as the reference validator's messages show it: bounded.

``jsonschema`` writes each error's message with ``repr`` of the value that
failed, when the error is made, whether or not the message is read. A
value nested ``d`` levels deep against a recursive schema fails at every
level, so one large string inside it is written out ``d`` times (a 4 MiB
string 60 levels deep: seconds and hundreds of megabytes), and a schema
with many keywords on one large value writes it once per keyword.

:func:`shown` copies a JSON value into twins of its strings, lists and
dicts (subclasses: every ``isinstance`` check, comparison and hash is the
same) whose ``repr`` is :data:`SHOWN`'s: at most :data:`MAX_SHOWN_CHARACTERS`
characters of a string, :data:`MAX_SHOWN_ITEMS` items or members of a
container and :data:`MAX_SHOWN_LEVELS` levels, each container read in its
own order. Only failing values are copied (see
:meth:`~decisions.validate.schema.Schema.issues`).
"""

from __future__ import annotations

import reprlib
from itertools import islice
from typing import Any, Final

__all__ = ["MAX_SHOWN_CHARACTERS", "MAX_SHOWN_ITEMS", "MAX_SHOWN_LEVELS", "shown"]

#: The most characters of one string a message shows (its middle elided).
MAX_SHOWN_CHARACTERS: Final = 60
#: The most items of an array (members of an object) a message shows.
MAX_SHOWN_ITEMS: Final = 8
#: The most levels of nesting a message shows.
MAX_SHOWN_LEVELS: Final = 4


class _Shown(reprlib.Repr):
    """``reprlib``'s bounds, read by the twin types (which ``reprlib`` finds
    by type name), and objects in insertion order (``reprlib`` sorts the
    keys: a cost that grows with the object, and another order than ``repr``)."""

    def repr1(self, x: Any, level: int) -> str:
        kind = type(x)
        if kind is ShownStr:
            return self.repr_str(x, level)
        if kind is ShownList:
            return self.repr_list(x, level)
        if kind is ShownDict:
            return self.repr_dict(x, level)
        return super().repr1(x, level)

    def repr_dict(self, x: Any, level: int) -> str:
        if not x:
            return "{}"
        if level <= 0:
            return "{...}"
        pieces = [f"{self.repr1(key, level - 1)}: {self.repr1(x[key], level - 1)}" for key in islice(x, self.maxdict)]
        if len(x) > self.maxdict:
            pieces.append("...")
        return "{" + ", ".join(pieces) + "}"


#: The bounded ``repr`` of the twin types.
SHOWN: Final = _Shown()
SHOWN.maxstring = MAX_SHOWN_CHARACTERS
SHOWN.maxlist = SHOWN.maxdict = MAX_SHOWN_ITEMS
SHOWN.maxlevel = MAX_SHOWN_LEVELS
SHOWN.maxlong = MAX_SHOWN_CHARACTERS
SHOWN.maxother = MAX_SHOWN_CHARACTERS


class ShownStr(str):
    """A string whose ``repr`` is bounded."""

    __slots__ = ()

    def __repr__(self) -> str:
        return SHOWN.repr(self)


class ShownList(list[Any]):
    """An array whose ``repr`` is bounded."""

    __slots__ = ()

    def __repr__(self) -> str:
        return SHOWN.repr(self)


class ShownDict(dict[Any, Any]):
    """An object whose ``repr`` is bounded."""

    __slots__ = ()

    def __repr__(self) -> str:
        return SHOWN.repr(self)


def _twin(item: Any, known: dict[int, tuple[Any, Any]] | None) -> tuple[Any, bool]:
    """``item``'s twin, and whether its members are still to be copied into it."""
    kind = type(item)
    if kind is not str and kind is not list and kind is not dict:
        return item, False
    if known is not None:
        found = known.get(id(item))
        if found is not None and found[0] is item:
            return found[1], False
    twin = ShownStr(item) if kind is str else ShownList() if kind is list else ShownDict()
    if known is not None:
        known[id(item)] = (item, twin)  # the item held: its id is not reused meanwhile
    return twin, kind is not str


def shown(value: Any, known: dict[int, tuple[Any, Any]] | None = None) -> Any:
    """A copy of the JSON value ``value`` made of the twin types (numbers,
    booleans and null as they are). Iterative: no recursion, whatever the
    depth. With ``known`` (``id`` of a value -> the value, its twin), a
    part copied before is its earlier twin, so verdicts kept for it hold
    (see :func:`~decisions.validate._engines.verdicts_kept`)."""
    top, fill = _twin(value, known)
    stack: list[tuple[Any, Any]] = [(value, top)] if fill else []
    while stack:
        source, target = stack.pop()
        if type(target) is ShownList:
            for item in source:
                twin, fill = _twin(item, known)
                target.append(twin)
                if fill:
                    stack.append((item, twin))
        else:
            for key, item in source.items():
                twin, fill = _twin(item, known)
                target[_twin(key, None)[0]] = twin
                if fill:
                    stack.append((item, twin))
    return top
