"""The pure twin of ``decisions._native.Constructor``: instances of a frozen,
slotted dataclass built from positional field values, as its ``__init__``
sets them (each slot through its own descriptor, as ``object.__setattr__``
does), without running ``__post_init__``: for values whose invariants the
caller has established.

Each constructor is an instance of a subclass made for its dataclass, whose
``__call__`` is a function written for that class's fields (the way
``dataclasses`` writes ``__init__``): one frame, no loop and no keyword
matching. For a class of the plain metaclass whose only base is ``object``
(every class the package builds), the instance is made as one of a class with
the same slots that is not frozen, its fields stored by plain attribute
assignment, and then given its own class (``__class__`` assignment, which
CPython allows between classes of the same layout): the same object, without
a call through each slot's setter. Any other class has each slot set through
its own setter, on an instance of the class itself.

The pure pipeline builds a response's objects (``new_usage``,
``new_text_item``, ``new_tool_call_item``, ``new_response``: the fields in
their classes' order) the same way without counting the values
(:func:`_slot_builder`). None of these classes has a ``__post_init__``, so
what they build is what their ``__init__`` builds.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

from ..types import NormalizedResponse, TextItem, ToolCallItem, Usage
from .sse import no_copy

__all__ = ["Constructor", "new_response", "new_text_item", "new_tool_call_item", "new_usage"]

#: The value of a field value not given (never a field's value).
_MISSING: Any = object()


def _slots(cls: type) -> tuple[Any, ...]:
    """The names ``cls.__slots__`` declares, as the class statement reads
    them: a str is one name, any other iterable (a tuple, a list, a dict's
    keys) its items."""
    slots = getattr(cls, "__slots__", ())
    return (slots,) if isinstance(slots, str) else tuple(slots)


def _twin(cls: type, names: tuple[str, ...]) -> type | None:
    """An unfrozen class with the slots ``names`` whose instances may take
    ``cls`` as their class (``__class__`` assignment, which CPython allows
    between classes of the same layout), or None where ``cls`` is not a
    class of the plain metaclass whose only base is ``object``."""
    if type(cls) is not type or cls.__bases__ != (object,):
        return None
    twin = type(f"_Unfrozen{cls.__name__}", (), {"__slots__": names})
    probe: Any = object.__new__(twin)
    try:
        probe.__class__ = cls
    except TypeError:
        return None
    return twin


def _builder(cls: type, names: tuple[str, ...]) -> Callable[..., Any]:
    """A function of one positional parameter per field that builds an
    instance of ``cls``; any other number of values is a TypeError that
    counts them. Each field is stored into an instance of :func:`_twin`'s
    class, which then takes ``cls`` as its class; where there is no twin,
    through the slot's own setter on an instance of ``cls``, as
    ``object.__setattr__`` stores it."""

    def wrong_count(values: tuple[Any, ...], extra: tuple[Any, ...]) -> TypeError:
        given = sum(value is not _MISSING for value in values) + len(extra)
        return TypeError(f"{cls.__name__} takes {len(names)} field values, not {given}")

    twin = _twin(cls, names)
    space: dict[str, Any] = {"_new": object.__new__, "_cls": cls, "_twin": twin, "_MISSING": _MISSING}
    space["_wrong_count"] = wrong_count
    params = [f"v{i}" for i in range(len(names))]
    listed = "".join(f"{p}, " for p in params)
    positional = f"{''.join(f'{p}=_MISSING, ' for p in params)}/, " if params else ""  # as natively: no keywords
    lines = [
        f"def build({positional}*extra):",
        f"    if {params[-1] + ' is _MISSING or ' if params else ''}extra:",
        f"        raise _wrong_count(({listed}), extra)",
    ]
    if twin is None:
        lines.append("    o = _new(_cls)")
        for i, name in enumerate(names):
            space[f"s{i}"] = cls.__dict__[name].__set__  # the slot's own setter, as object.__setattr__ finds it
            lines.append(f"    s{i}(o, v{i})")
    else:
        lines.append("    o = _twin()")  # a twin has no __init__ of its own: calling it is cheaper than object.__new__
        lines += [f"    o.{name} = v{i}" for i, name in enumerate(names)]
        lines.append("    o.__class__ = _cls")
    lines.append("    return o")
    # the source names only indexes and fields; the classes and the rest come in through `space`
    exec("\n".join(lines), space)
    build: Callable[..., Any] = space["build"]
    return build


class Constructor:
    """Builds instances of one dataclass from its field values, in field order."""

    __slots__ = ("_cls",)
    __reduce_ex__ = no_copy
    _cls: type

    def __new__(cls, target: type, /) -> Constructor:
        if not isinstance(target, type):  # a dataclass's instance is no class
            raise TypeError(f"argument 'cls': '{type(target).__name__}' object cannot be converted to 'PyType'")
        if not dataclasses.is_dataclass(target):
            raise TypeError(f"Constructor takes a dataclass, not {target.__name__}")
        names = tuple(f.name for f in dataclasses.fields(target))
        slots = _slots(target)
        if slots != names:
            raise ValueError(
                f"Constructor needs a dataclass whose slots are its fields, which {target.__name__} is not"
            )
        made: type[Constructor] = type(
            cls.__name__, (cls,), {"__slots__": (), "__call__": staticmethod(_builder(target, names))}
        )
        instance = object.__new__(made)
        instance._cls = target
        return instance

    @property
    def cls(self) -> type:
        """The class this constructor builds."""
        return self._cls

    def __call__(self, *values: Any) -> Any:
        """An instance with each field set to the value at its position."""
        raise NotImplementedError  # each constructor's own class defines it


def _slot_builder(cls: type) -> Callable[..., Any]:
    """A function of exactly one positional parameter per field of ``cls``
    (a frozen dataclass of the plain metaclass whose only base is
    ``object``, its slots its fields, without ``__post_init__``) that builds
    an instance as its ``__init__`` does: the fields stored into an instance
    of :func:`_twin`'s class, which then takes ``cls`` as its class."""
    names = tuple(f.name for f in dataclasses.fields(cls))
    twin = None
    if _slots(cls) == names and not hasattr(cls, "__post_init__"):
        twin = _twin(cls, names)
    if twin is None:
        raise TypeError(f"{cls.__name__} is not a plain slotted dataclass")
    params = ", ".join(f"v{i}" for i in range(len(names)))
    lines = [f"def build({params}):", "    o = _twin()"]
    lines += [f"    o.{name} = v{i}" for i, name in enumerate(names)]
    lines += ["    o.__class__ = _cls", "    return o"]
    space: dict[str, Any] = {"_twin": twin, "_cls": cls}
    # the source names only the fields; the classes come in through `space`
    exec("\n".join(lines), space)
    build: Callable[..., Any] = space["build"]
    return build


new_usage: Callable[..., Usage] = _slot_builder(Usage)
new_text_item: Callable[..., TextItem] = _slot_builder(TextItem)
new_tool_call_item: Callable[..., ToolCallItem] = _slot_builder(ToolCallItem)
new_response: Callable[..., NormalizedResponse] = _slot_builder(NormalizedResponse)
