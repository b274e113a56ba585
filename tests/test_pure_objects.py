"""The pure pipeline's response builders (``objects.new_*``) build what each
class's ``__init__`` builds from the same field values: the same class,
equal, every slot set, still frozen; a class they cannot build so is
refused when the builder is made."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from decisions._pure import objects
from decisions.types import NormalizedResponse, TextItem, ToolCallItem, Usage

BUILDERS: list[tuple[Callable[..., Any], type]] = [
    (objects.new_usage, Usage),
    (objects.new_text_item, TextItem),
    (objects.new_tool_call_item, ToolCallItem),
    (objects.new_response, NormalizedResponse),
]
_VALUES = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=5), st.tuples(st.integers()))


@pytest.mark.parametrize(("build", "cls"), BUILDERS, ids=[cls.__name__ for _, cls in BUILDERS])
@given(data=st.data())
def test_builds_what_init_builds(build: Callable[..., Any], cls: type, data: st.DataObject) -> None:
    fields = dataclasses.fields(cls)
    values = [data.draw(_VALUES) for _ in fields]
    built = build(*values)
    assert type(built) is cls
    assert built == cls(**{f.name: v for f, v in zip(fields, values)})
    assert [getattr(built, f.name) for f in fields] == values
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(built, fields[0].name, 1)


@dataclasses.dataclass(frozen=True, slots=True)
class _Base:
    left: Any


@dataclasses.dataclass(frozen=True, slots=True)
class _Derived(_Base):
    right: Any


@dataclasses.dataclass(frozen=True)
class _Unslotted:
    left: Any


@dataclasses.dataclass(frozen=True, slots=True)
class _Checked:
    left: Any

    def __post_init__(self) -> None:
        """An invariant the builder would skip."""


@pytest.mark.parametrize("cls", [_Derived, _Unslotted, _Checked])
def test_refuses_other_classes(cls: type) -> None:
    with pytest.raises(TypeError):
        objects._slot_builder(cls)
