"""The shape of a schema as a caller meets it: which objects a closed JSON
Schema closes (and with which keyword, and where it refuses), which Pydantic
models are refused for setting ``extra`` themselves, and where a field selector
(``files[*].path``) may point in either kind of schema."""

from __future__ import annotations

from dataclasses import dataclass as std_dataclass
from typing import Annotated, Any, Literal, Optional, Union

import pytest
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, WrapValidator
from pydantic.dataclasses import dataclass
from typing_extensions import TypedDict

from decisions import Schema
from decisions.validate._shapes import close_json_schema
from decisions.validate.paths import parse_selector

OBJ = {"properties": {"a": {"type": "string"}}}
CLOSED = {**OBJ, "additionalProperties": False}
COMPOSED_REFUSED = (
    "this JSON Schema draft has no unevaluatedProperties, so a composed object cannot be "
    "closed: give it additionalProperties explicitly, or pass closed=False"
)

# ---------------------------------------------------------------- closing JSON Schema objects


@pytest.mark.parametrize(
    ("schema", "closed"),
    [
        (OBJ, CLOSED),
        ({"patternProperties": {"^x": {}}}, {"patternProperties": {"^x": {}}, "additionalProperties": False}),
        ({**OBJ, "additionalProperties": True}, {**OBJ, "additionalProperties": True}),
        ({**OBJ, "unevaluatedProperties": True}, {**OBJ, "unevaluatedProperties": True}),
        ({"type": "object"}, {"type": "object"}),  # a free-form map
        ({"not": OBJ}, {"not": OBJ}),  # closing under not would loosen it
        ({"if": OBJ, "then": {}}, {"if": OBJ, "then": {}}),
        ({"properties": {"a": OBJ}}, {"properties": {"a": CLOSED}, "additionalProperties": False}),
        ({"patternProperties": {"^x": OBJ}}, {"patternProperties": {"^x": CLOSED}, "additionalProperties": False}),
        ({"additionalProperties": OBJ}, {"additionalProperties": CLOSED}),
        ({"unevaluatedProperties": OBJ}, {"unevaluatedProperties": CLOSED}),
        ({"items": OBJ}, {"items": CLOSED}),
        ({"items": [OBJ, OBJ]}, {"items": [CLOSED, CLOSED]}),
        ({"prefixItems": [OBJ]}, {"prefixItems": [CLOSED]}),
        ({"contains": OBJ}, {"contains": CLOSED}),
        ({"additionalItems": OBJ}, {"additionalItems": CLOSED}),
        ({"unevaluatedItems": OBJ}, {"unevaluatedItems": CLOSED}),
    ],
)
def test_what_a_closed_schema_closes(schema: dict[str, Any], closed: dict[str, Any]) -> None:
    assert close_json_schema(schema, True) == closed
    assert close_json_schema(schema, False) == closed  # none of these is composed


@pytest.mark.parametrize(
    "schema",
    [
        {"allOf": [OBJ]},
        {"anyOf": [OBJ, {"type": "string"}]},
        {"oneOf": [OBJ]},
        {"$ref": "#/$defs/o", "$defs": {"o": OBJ}},
        {"$ref": "#/definitions/o", "definitions": {"o": OBJ}},
        {"$ref": "#/$defs/a~1b~0c", "$defs": {"a/b~c": OBJ}},
        {"$ref": "#/allOf/0", "allOf": [OBJ]},
        {"$ref": "https://example.com/remote.json"},  # a remote part is taken as one with fields
        {"if": {"type": "object"}, "then": OBJ},
        {"if": {"type": "object"}, "else": OBJ},
        {"type": "object", "dependentSchemas": {"a": OBJ}},
        {"type": "object", "allOf": [{"allOf": [OBJ]}]},
        {**OBJ, "allOf": [{"required": ["a"]}]},  # its own fields, composed
    ],
)
def test_a_composed_object_is_closed_with_unevaluated_properties(schema: dict[str, Any]) -> None:
    closed = close_json_schema(schema, True)
    assert closed["unevaluatedProperties"] is False and "additionalProperties" not in closed
    # its parts are left open: their fields count for the whole
    assert {k: v for k, v in closed.items() if k != "unevaluatedProperties"} == schema
    with pytest.raises(ValueError) as info:
        close_json_schema(schema, False)
    assert str(info.value) == COMPOSED_REFUSED


@pytest.mark.parametrize(
    "schema",
    [
        {"allOf": [{"type": "object"}]},  # no part declares fields
        {"allOf": [CLOSED]},  # the part closes itself
        {"$ref": "#/$defs/missing"},  # a local reference to nothing
        {"$ref": "#/$defs/o/properties/a/9", "$defs": {"o": OBJ}},
        {"$ref": "#/$defs/l/5", "$defs": {"l": [OBJ]}},
        {"$ref": "#/$defs/l/x", "$defs": {"l": [OBJ]}},
        {"type": "object", "dependentSchemas": {"a": True}},
        {"allOf": [True, 1]},
    ],
)
def test_a_composed_object_without_open_fields_is_left_as_it_is(schema: dict[str, Any]) -> None:
    assert close_json_schema(schema, True) == schema
    assert close_json_schema(schema, False) == schema


def test_the_parts_of_a_composed_object_have_their_own_members_closed() -> None:
    for key, parts in [("allOf", [{"properties": {"a": OBJ}}]), ("then", {"properties": {"a": OBJ}})]:
        closed = close_json_schema({"if": {}, key: parts} if key == "then" else {key: parts}, True)
        part = closed[key][0] if key == "allOf" else closed[key]
        assert part == {"properties": {"a": CLOSED}}  # the part itself stays open, its member is closed
    closed = close_json_schema({"$defs": {"x": {"properties": {"a": OBJ}}}}, True)
    assert closed["$defs"]["x"] == {"properties": {"a": CLOSED}}


def test_a_reference_into_a_list() -> None:
    assert close_json_schema({"$ref": "#/$defs/l/0", "$defs": {"l": [OBJ]}}, True)["unevaluatedProperties"] is False
    past = {"$ref": "#/allOf/1", "allOf": [{"type": "object"}]}
    assert close_json_schema(past, True) == past


def test_closing_ends_on_a_reference_cycle_without_fields() -> None:
    looped = {"$ref": "#", "allOf": [{"type": "object"}]}
    assert close_json_schema(looped, True) == looped


def test_closing_copies_and_follows_cycles() -> None:
    schema: dict[str, Any] = {
        "$defs": {"node": {"properties": {"next": {"$ref": "#/$defs/node"}}}},
        "$ref": "#/$defs/node",
    }
    closed = close_json_schema(schema, True)
    assert closed["unevaluatedProperties"] is False
    assert closed["$defs"]["node"]["properties"]["next"] == {"$ref": "#/$defs/node", "unevaluatedProperties": False}
    assert "unevaluatedProperties" not in schema  # the caller's schema is not touched
    # a cycle in the parts (a reference to itself) ends
    looped = {"$ref": "#", "properties": {"a": {}}}
    assert close_json_schema(looped, True) == {**looped, "unevaluatedProperties": False}


def test_closing_through_the_schema_rejects_the_extra_field() -> None:
    spec = {"$defs": {"o": OBJ}, "$ref": "#/$defs/o"}
    with pytest.raises(Exception) as info:
        Schema(spec).validate({"a": "x", "b": 1})
    assert [i["path"] for i in info.value.issues] == ["$.b"]  # type: ignore[attr-defined]
    assert Schema(spec, closed=False).validate({"a": "x", "b": 1}) == {"a": "x", "b": 1}


# ---------------------------------------------------------------- Pydantic types that open themselves


class Allow(BaseModel):
    model_config = ConfigDict(extra="allow")
    a: int


class Ignore(BaseModel):
    model_config = ConfigDict(extra="ignore")
    a: int


class Forbid(BaseModel):
    model_config = ConfigDict(extra="forbid")
    a: int


class Holder(BaseModel):
    first: list[Allow]
    again: Optional[Allow] = None
    other: dict[str, Ignore] = {}
    fine: Forbid | None = None


def test_the_models_that_open_themselves_are_named_once_each_in_order() -> None:
    with pytest.raises(ValueError) as info:
        Schema(Holder)
    assert str(info.value).startswith("Allow (extra='allow'), Ignore (extra='ignore') set extra themselves")
    assert Schema(Holder, closed=False).kind == "pydantic"
    Schema(Forbid)
    Schema(list[Forbid])


def test_a_model_held_in_metadata_only_is_not_walked() -> None:
    # a plain class is not a model: nothing is walked into it
    @std_dataclass
    class Plain:
        a: int

    Schema(Plain)


# ---------------------------------------------------------------- selectors


def refused(schema: Schema, selector: str) -> str | None:
    try:
        schema.check_selector(parse_selector(selector))
    except ValueError as error:
        return str(error)
    return None


class F(BaseModel):
    path: str


class TA(BaseModel):
    kind: Literal["a"]
    path: str


class TB(BaseModel):
    kind: Literal["b"]
    dest: str


class TreeNode(BaseModel):
    name: str
    children: list[TreeNode] = []


@dataclass
class DC:
    target: str


class TD(TypedDict):
    where: str


@dataclass
class DCOuter:
    inner: F


class Args(BaseModel):
    files: list[F]
    bag: set[str] = set()
    frozen: frozenset[str] = frozenset()
    one: Optional[F] = None
    m: dict[str, F] = {}
    tup: tuple[F, int] = (F(path="x"), 1)
    u: Union[F, int] = 1
    tagged: Annotated[Union[TA, TB], Field(discriminator="kind")] = TA(kind="a", path="p")
    tree: TreeNode = TreeNode(name="n")
    d: DC = DC(target="t")
    t: TD = {"where": "w"}
    anything: Any = None
    after: Annotated[F, AfterValidator(lambda v: v)] = F(path="p")
    before: Annotated[F, BeforeValidator(lambda v: v)] = F(path="p")
    wrap: Annotated[F, WrapValidator(lambda v, h: h(v))] = F(path="p")
    text: str = ""
    outer: DCOuter = DCOuter(inner=F(path="p"))


ARGS = Schema(Args)


@pytest.mark.parametrize(
    "selector",
    [
        "files[*].path",
        "bag[*]",
        "frozen[*]",
        "one.path",
        "m.key.path",
        "tup[*].path",
        "u.path",
        "tagged.path",
        "tagged.dest",
        "tree.children[*].children[*].name",
        "d.target",
        "t.where",
        "anything.x[*].y",
        "after.path",
        "before.path",
        "wrap.path",
        "text",
        "outer.inner.path",
    ],
)
def test_a_pydantic_selector_that_names_a_field(selector: str) -> None:
    assert refused(ARGS, selector) is None


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        ("files[*].nope", "the schema defines no field 'nope' under files[*]"),
        ("files.path", "the schema defines no field 'path' under files"),
        ("nope", "the schema defines no field 'nope' under the arguments"),
        ("one[*]", "the schema defines no array items ([*]) under one"),
        ("tagged.zz", "the schema defines no field 'zz' under tagged"),
        ("d.zz", "the schema defines no field 'zz' under d"),
        ("t.zz", "the schema defines no field 'zz' under t"),
        ("text.a", "the schema defines no field 'a' under text"),
        ("tree.children[*].nope", "the schema defines no field 'nope' under tree.children[*]"),
        ("tup[*].zzz", "the schema defines no field 'zzz' under tup[*]"),
        ("outer.inner.zzz", "the schema defines no field 'zzz' under outer.inner"),
    ],
)
def test_a_pydantic_selector_that_names_nothing(selector: str, message: str) -> None:
    assert refused(ARGS, selector) == message


JS = Schema(
    {
        "$defs": {"f": {"type": "object", "properties": {"path": {"type": "string"}}}},
        "type": "object",
        "properties": {
            "files": {"type": "array", "items": {"$ref": "#/$defs/f"}},
            "pair": {"type": "array", "prefixItems": [{"$ref": "#/$defs/f"}], "items": {"type": "integer"}},
            "map": {"type": "object", "additionalProperties": {"$ref": "#/$defs/f"}},
            "pat": {"type": "object", "patternProperties": {"^x_": {"$ref": "#/$defs/f"}}},
            "all": {"allOf": [{"type": "object"}, {"properties": {"where": {"type": "string"}}}]},
            "cond": {
                "if": {"type": "object"},
                "then": {"properties": {"then_f": {}}},
                "else": {"properties": {"else_f": {}}},
            },
            "dep": {"dependentSchemas": {"a": {"properties": {"dep_f": {}}}}},
            "free": True,
            "empty": {},
            "text": {"type": "string"},
        },
    }
)


@pytest.mark.parametrize(
    "selector",
    [
        "files[*].path",
        "pair[*].path",
        "map.anything.path",
        "pat.x_1.path",
        "all.where",
        "cond.then_f",
        "cond.else_f",
        "dep.dep_f",
        "free.a[*].b",
        "empty.a",
    ],
)
def test_a_json_schema_selector_that_names_a_field(selector: str) -> None:
    assert refused(JS, selector) is None


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        ("files[*].nope", "the schema defines no field 'nope' under files[*]"),
        ("pat.y_1", "the schema defines no field 'y_1' under pat"),
        ("text[*]", "the schema defines no array items ([*]) under text"),
        ("text.a", "the schema defines no field 'a' under text"),
        ("all.nope", "the schema defines no field 'nope' under all"),
        ("nope", "the schema defines no field 'nope' under the arguments"),
    ],
)
def test_a_json_schema_selector_that_names_nothing(selector: str, message: str) -> None:
    assert refused(JS, selector) == message


def test_a_false_part_or_a_reference_cycle_does_not_end_the_search() -> None:
    schema = Schema({"allOf": [{"properties": {"a": {}}}, False]}, closed=False)
    assert refused(schema, "a") is None
    looped = Schema({"$ref": "#", "properties": {"a": {}}}, closed=False)
    assert refused(looped, "a") is None
    assert refused(looped, "b") == "the schema defines no field 'b' under the arguments"


def test_a_map_with_declared_properties_takes_no_other_name() -> None:
    schema = Schema({"properties": {"a": {}}, "additionalProperties": {"type": "object", "properties": {"b": {}}}})
    assert refused(schema, "zz.b") == "the schema defines no field 'zz' under the arguments"
    assert refused(schema, "a") is None


def test_a_draft_7_item_list_is_followed() -> None:
    schema = Schema(
        {
            "$schema": "http://json-schema.org/draft-07/schema#",
            "properties": {"old": {"items": [{"properties": {"path": {}}}, {"type": "integer"}]}},
        }
    )
    assert refused(schema, "old[*].path") is None
    assert refused(schema, "old[*].nope") == "the schema defines no field 'nope' under old[*]"
