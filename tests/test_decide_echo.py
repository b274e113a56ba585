"""A closed model whose dump of a validated input is the input itself (same
keys in the same order, same values of the same types) lets ``decide`` keep
the parsed arguments instead of dumping the model (``Schema._echo``, from
``echoed_fields``). The arguments must be exactly what the dump gives, for
every model: the echoing ones on any valid input (a property), and each
kind of model that must not echo on an input whose dump differs from it."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    computed_field,
    field_serializer,
    field_validator,
    model_validator,
)

from decide_helpers import call, needs_loads, response
from decisions import Tool, ToolDecision, ToolRegistry, decide
from decisions.validate._shapes import echoed_fields
from decisions.validate.schema import Schema

pytestmark = needs_loads


class Grep(BaseModel):
    model_config = ConfigDict(extra="forbid", title="grep")
    pattern: Annotated[str, StringConstraints(min_length=1, max_length=200)]
    path: str
    context: Annotated[int, Field(ge=0, le=100)]
    ignore_case: bool
    mode: Literal["files", "lines"]
    glob: Optional[str]
    exclude: list[str] = Field(default_factory=list)
    limit: Optional[int] = None


class Plain(BaseModel):
    path: str


ECHOING: list[type[BaseModel]] = [Grep, Plain]


def _decided(model: type[BaseModel], arguments: str) -> tuple[Any, Any]:
    """The one call's arguments ``decide`` gives, and the dump of its validated value."""
    registry = ToolRegistry([Tool(name="tool", parameters=model, side_effects=False)])
    decision = decide(response(call("tool", arguments)), tools=registry)
    assert isinstance(decision, ToolDecision)
    (decided,) = decision.calls
    return decided.arguments, registry.get("tool").schema.dump(decided.validated)  # type: ignore[union-attr]


@pytest.mark.parametrize("model", ECHOING, ids=lambda m: m.__name__)
def test_a_plain_model_echoes_its_fields_in_order(model: type[BaseModel]) -> None:
    assert Schema.of(model)._echo == tuple(model.model_fields)
    assert Schema.of(model, closed=False)._echo is None  # extra fields could be kept


_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
GREP_VALUES = st.fixed_dictionaries(
    {
        "pattern": _TEXT.filter(bool),
        "path": _TEXT,
        "context": st.integers(0, 100),
        "ignore_case": st.booleans(),
        "mode": st.sampled_from(["files", "lines"]),
        "glob": st.none() | _TEXT,
        "exclude": st.lists(_TEXT, max_size=3),
        "limit": st.none() | st.integers(-(2**63), 2**63 - 1),
    }
)


@settings(max_examples=150, deadline=None)
@given(value=GREP_VALUES, drop=st.sets(st.sampled_from(["exclude", "limit"])), shuffle=st.randoms())
def test_the_arguments_are_the_dump_of_any_input(value: dict[str, Any], drop: set[str], shuffle: Any) -> None:
    """In field order, in another order, with defaulted fields left out: the
    arguments are the dump, key for key, type for type (JSON text equal)."""
    for key in drop:
        del value[key]
    orders = [list(value)]
    keys = list(value)
    shuffle.shuffle(keys)
    orders.append(keys)
    for order in orders:
        text = json.dumps({key: value[key] for key in order})
        arguments, dumped = _decided(Grep, text)
        assert json.dumps(arguments) == json.dumps(dumped)


class Stripped(BaseModel):
    model_config = ConfigDict(str_strip_whitespace=True)
    path: str


class Lowered(BaseModel):
    path: Annotated[str, StringConstraints(to_lower=True)]


class Number(BaseModel):
    size: float


class Upper(BaseModel):
    path: str

    @field_validator("path")
    @classmethod
    def _upper(cls, value: str) -> str:
        return value.upper()


class Checked(BaseModel):
    path: Annotated[str, AfterValidator(lambda value: value + "/")]


class Serialized(BaseModel):
    path: str

    @field_serializer("path")
    def _dump(self, value: str) -> str:
        return value.strip("/")


class Completed(BaseModel):
    path: str

    @model_validator(mode="after")
    def _complete(self) -> Completed:
        self.path = self.path or "."
        return self


class Computed(BaseModel):
    path: str

    @computed_field  # type: ignore[prop-decorator]
    @property
    def depth(self) -> int:
        return self.path.count("/")


class Excluded(BaseModel):
    path: str
    token: str = Field(exclude=True)


class Renamed(BaseModel):
    model_config = ConfigDict(validate_by_name=True, validate_by_alias=True)
    path: str = Field(alias="file")


class Nested(BaseModel):
    target: Plain
    note: str


class Forgiving(BaseModel):
    count: int = Field(default=0, json_schema_extra={"x": 1})
    path: Annotated[str, Field(description="where")] = "."


# Each: a model that must not echo, and an input (keys in field order) whose
# dump differs from it, or that it does not take as it is.
NOT_ECHOING: list[tuple[type[BaseModel], str]] = [
    (Stripped, '{"path": " a "}'),
    (Lowered, '{"path": "A"}'),
    (Number, '{"size": 1}'),
    (Upper, '{"path": "a"}'),
    (Checked, '{"path": "a"}'),
    (Serialized, '{"path": "/a/"}'),
    (Completed, '{"path": ""}'),
    (Computed, '{"path": "a/b"}'),
    (Excluded, '{"path": "a", "token": "t"}'),
    (Renamed, '{"file": "a"}'),
]


@pytest.mark.parametrize(("model", "text"), NOT_ECHOING, ids=[m.__name__ for m, _ in NOT_ECHOING])
def test_a_model_that_changes_its_input_is_dumped(model: type[BaseModel], text: str) -> None:
    assert Schema.of(model)._echo is None
    arguments, dumped = _decided(model, text)
    assert json.dumps(arguments) == json.dumps(dumped)
    assert json.dumps(arguments) != text  # the dump differs: echoing would have been wrong


def test_models_it_does_not_read_are_dumped() -> None:
    """Nested models are dumped, echo or not: what ``echoed_fields`` does not
    know, it leaves to the dump."""
    assert Schema.of(Nested)._echo is None
    arguments, dumped = _decided(Nested, '{"target": {"path": "a"}, "note": "n"}')
    assert arguments == dumped == {"target": {"path": "a"}, "note": "n"}


def test_only_known_schema_keys_echo() -> None:
    core = Schema.of(Plain)._applied
    assert echoed_fields(core) == ("path",)
    field = core["schema"]["fields"]["path"]
    for extra in [
        {"serialization": {"type": "to-string"}},
        {"validation_alias": "p"},
        {"serialization_exclude": True},
    ]:
        assert echoed_fields({**core, "schema": {**core["schema"], "fields": {"path": {**field, **extra}}}}) is None
    for leaf in [
        {"type": "str", "strip_whitespace": True},
        {"type": "str", "strict": False},
        {"type": "float"},
        {"type": "literal", "expected": [1]},
        {"type": "default", "schema": {"type": "str"}, "default": "", "on_error": "default"},
    ]:
        changed = {**core, "schema": {**core["schema"], "fields": {"path": {**field, "schema": leaf}}}}
        assert echoed_fields(changed) is None, leaf
    assert echoed_fields({**core, "post_init": "model_post_init"}) is None
    assert echoed_fields({**core, "config": {"extra_fields_behavior": "allow"}}) is None
    assert echoed_fields({**core, "config": {"coerce_numbers_to_str": True}}) is None
    assert Schema.of(Forgiving)._echo == ("count", "path")
