"""The pure twin of ``decisions._native.Constructor``: instances of a frozen,
slotted dataclass built from positional field values, as its ``__init__``
sets them (each slot through ``object.__setattr__``), without running
``__post_init__``: for values whose invariants the caller has established."""

from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ["Constructor"]

_new = object.__new__
_set = object.__setattr__


class Constructor:
    """Builds instances of one dataclass from its field values, in field order."""

    __slots__ = ("_cls", "_fields")

    def __init__(self, cls: type, /) -> None:
        if not dataclasses.is_dataclass(cls):
            raise TypeError(f"Constructor takes a dataclass, not {cls.__name__}")
        names = [f.name for f in dataclasses.fields(cls)]
        slots = list(getattr(cls, "__slots__", ()))
        if slots != names:
            raise ValueError(f"Constructor needs a dataclass whose slots are its fields, which {cls.__name__} is not")
        self._cls = cls
        self._fields = tuple(names)

    @property
    def cls(self) -> type:
        """The class this constructor builds."""
        return self._cls

    def __call__(self, *values: Any) -> Any:
        """An instance with each field set to the value at its position."""
        if len(values) != len(self._fields):
            raise TypeError(f"{self._cls.__name__} takes {len(self._fields)} field values, not {len(values)}")
        instance = _new(self._cls)
        for name, value in zip(self._fields, values):
            _set(instance, name, value)
        return instance
