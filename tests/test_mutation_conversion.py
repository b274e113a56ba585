"""A schema's ``$ref`` converted for a provider, written out in full: what
is sent (kept, inlined, its siblings), what is dropped and why, and the path
and message of every refusal."""

from __future__ import annotations

import json
import warnings
from typing import Any

import pytest

from decisions import SchemaError
from decisions.request.capabilities import capabilities
from decisions.request.conversion import DroppedKeyword, convert_schema

#: a linked list: a definition that reaches itself
_NODE = {
    "type": "object",
    "properties": {"next": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]}},
    "required": ["next"],
    "additionalProperties": False,
}


def _with(prop: dict[str, Any], **defs: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"n": prop},
        "required": ["n"],
        "additionalProperties": False,
        "$defs": defs,
    }


def _refused(schema: dict[str, Any], caps: Any, **options: Any) -> SchemaError:
    with pytest.raises(SchemaError) as caught:
        convert_schema(schema, caps, **options)
    assert caught.value.code == "UNSUPPORTED_SCHEMA"
    return caught.value


def test_a_definition_is_sent_by_reference_where_the_provider_takes_it() -> None:
    sent = convert_schema(_with({"$ref": "#/$defs/Name"}, Name={"type": "string"}), "openai-chat")
    assert sent.schema["properties"]["n"] == {"$ref": "#/$defs/Name"}
    assert sent.schema["$defs"] == {"Name": {"type": "string"}}
    assert sent.dropped == ()


@pytest.mark.parametrize("ref", ["#/other/Name", "#/$defs/Missing", "#/$defs/a/b"])
def test_a_reference_to_no_local_definition_is_refused_at_its_path(ref: str) -> None:
    error = _refused(_with({"$ref": ref}, Name={"type": "string"}), "openai-chat")
    assert (error.path, error.message) == ("#/properties/n", f"$ref {ref!r} is not a local definition")


def test_a_recursive_definition_is_refused_where_the_provider_forbids_it() -> None:
    error = _refused(_with({"$ref": "#/$defs/Node"}, Node=_NODE), "anthropic")
    assert (error.path, error.message) == ("#/properties/n", "anthropic does not accept recursive schemas (Node)")


def test_a_recursive_definition_cannot_be_inlined() -> None:
    error = _refused(_with({"$ref": "#/$defs/Node"}, Node=_NODE), capabilities("gemini", refs=False))
    assert (error.path, error.message) == ("#/properties/n", "gemini cannot take the recursive definition Node")


def test_the_siblings_of_a_recursive_reference_are_dropped_where_a_ref_takes_none() -> None:
    sent = convert_schema(_with({"$ref": "#/$defs/Node", "description": "a list"}, Node=_NODE), "openai-chat")
    assert sent.schema["properties"]["n"] == {"$ref": "#/$defs/Node"}
    assert sent.dropped == (
        DroppedKeyword("#/properties/n", "description", "a list", False, "a $ref may not carry other keywords here"),
    )


def test_the_siblings_of_a_recursive_reference_are_converted_where_a_ref_takes_them() -> None:
    """Each sibling is converted as the keyword it is: one the provider does
    not enforce is dropped and recorded (never sent as a marker), the object
    rules stay the definition's, and a schema-valued one is converted at its
    own path."""
    caps = capabilities("openai-chat", ref_siblings=True)
    prop = {
        "$ref": "#/$defs/Node",
        "description": "a list",
        "format": "bogus",
        "required": ["next"],
        "anyOf": [{"$ref": "#/$defs/Node"}],
    }
    sent = convert_schema(_with(prop, Node=_NODE), caps)
    assert sent.schema["properties"]["n"] == {
        "$ref": "#/$defs/Node",
        "description": "a list",
        "anyOf": [{"$ref": "#/$defs/Node"}],
    }
    json.dumps(sent.schema)  # plain JSON throughout
    assert sent.dropped == (
        DroppedKeyword("#/properties/n", "format", "bogus", True, "format 'bogus' is not enforced by openai-chat"),
        DroppedKeyword("#/properties/n", "required", ["next"], True, "a $ref may not carry other keywords here"),
    )
    error = _refused(_with({**prop, "anyOf": {"a": 1}}, Node=_NODE), caps)
    assert (error.path, error.message) == ("#/properties/n/anyOf", "anyOf must be a list of schemas")
    error = _refused(_with({"$ref": "#/$defs/Node", "format": "bogus"}, Node=_NODE), caps, on_unsupported="reject")
    assert error.path == "#/properties/n"


def test_a_sibling_that_says_a_constraint_otherwise_replaces_the_definitions_when_inlined() -> None:
    sent = convert_schema(
        _with({"$ref": "#/$defs/Least", "minimum": 3}, Least={"type": "integer", "minimum": 5}), "gemini"
    )
    assert sent.schema["properties"]["n"] == {"type": "integer", "minimum": 3}
    assert sent.dropped == (
        DroppedKeyword("#/$defs/Least", "minimum", 5, True, "replaced by the keyword beside its $ref when inlined"),
    )


def _chain(length: int) -> dict[str, Any]:
    """A property that reaches a string through ``length`` references, each
    definition only the reference to the next."""
    defs: dict[str, Any] = {f"D{i}": {"$ref": f"#/$defs/D{i + 1}"} for i in range(length)}
    defs[f"D{length}"] = {"type": "string"}
    return _with({"$ref": "#/$defs/D0"}, **defs)


def test_inlined_references_count_toward_the_nesting_bound() -> None:
    """Each inlined reference is one level: the string at the end of 127
    references is at level 128, the deepest taken."""
    caps = capabilities("gemini", refs=False)
    assert convert_schema(_chain(126), caps).schema["properties"]["n"] == {"type": "string"}
    error = _refused(_chain(127), caps)
    assert (error.path, error.message) == ("#/$defs/D127", "the schema nests deeper than 128 levels")


def test_a_refusal_says_what_to_do() -> None:
    error = _refused(_with([{"type": "string"}]), "openai-chat")
    assert (error.path, error.message, error.hint) == (
        "#/properties/n",
        "a schema must be an object, not array",
        "change the schema, or let the keyword be dropped and checked locally",
    )


def test_an_enum_of_objects_is_kept_only_where_objects_are_enum_values() -> None:
    prop = {"enum": [{"a": 1}]}
    kept = convert_schema(_with(prop), capabilities("openai-chat", enum_value_types=frozenset({"object"})))
    assert (kept.schema["properties"]["n"], kept.dropped) == ({"enum": [{"a": 1}]}, ())
    arrays = convert_schema(_with(prop), capabilities("openai-chat", enum_value_types=frozenset({"array"})))
    assert [d.keyword for d in arrays.dropped] == ["enum"]


def test_an_optional_property_made_nullable_keeps_its_description_outside() -> None:
    """Strict mode makes an optional object property ``anyOf`` it or null,
    the description on the outside where the model reads it."""
    point = {
        "type": "object",
        "description": "where",
        "properties": {"x": {"type": "integer"}},
        "required": ["x"],
        "additionalProperties": False,
    }
    schema = {"type": "object", "properties": {"at": point}, "additionalProperties": False}
    sent = convert_schema(schema, "openai-chat").schema["properties"]["at"]
    inner = {k: v for k, v in point.items() if k != "description"}
    assert sent == {"anyOf": [inner, {"type": "null"}], "description": "where"}


def _objects(depth: int, key: str = "a", typed: bool = True) -> dict[str, Any]:
    """``depth`` objects, each the one property (``key``) of the one outside it."""
    node: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        node = {"properties": {key: node}, "required": [key], "additionalProperties": False}
        if typed:
            node["type"] = "object"
    return node


@pytest.mark.parametrize(
    "build",
    [
        lambda depth: _objects(depth),
        lambda depth: {**_objects(depth, typed=False), "type": "object"},
        lambda depth: _objects(depth, key="properties"),
        lambda depth: {
            "type": "object",
            "properties": {"list": {"type": "array", "items": _objects(depth - 1)}},
            "required": ["list"],
            "additionalProperties": False,
        },
    ],
    ids=["objects", "untyped objects", "a property named properties", "an array of objects"],
)
def test_objects_nest_up_to_the_providers_bound(build: Any) -> None:
    assert convert_schema(build(10), "openai-chat").schema is not None
    error = _refused(build(11), "openai-chat")
    assert (error.path, error.message) == ("#", "objects nest 11 levels; openai-chat accepts 10")


def _linked(depth: int) -> dict[str, Any]:
    """``depth`` objects, each a definition whose one property refers to the next."""
    defs: dict[str, Any] = {f"L{depth}": {"type": "string"}}
    for i in range(depth - 1, 0, -1):
        defs[f"L{i}"] = {
            "type": "object",
            "properties": {"a": {"$ref": f"#/$defs/L{i + 1}"}},
            "required": ["a"],
            "additionalProperties": False,
        }
    root = {"type": "object", "properties": {"a": {"$ref": "#/$defs/L1"}}, "required": ["a"]}
    return {**root, "additionalProperties": False, "$defs": defs}


def test_objects_nest_through_references_too() -> None:
    sent = convert_schema(_linked(10), "openai-chat")
    assert sent.schema["properties"]["a"] == {"$ref": "#/$defs/L1"}
    error = _refused(_linked(11), "openai-chat")
    assert error.message == "objects nest 11 levels; openai-chat accepts 10"


def test_a_recursive_definition_counts_once_toward_the_bound() -> None:
    sent = convert_schema(_with({"$ref": "#/$defs/Node"}, Node=_NODE), "openai-chat")
    assert sent.schema["properties"]["n"] == {"$ref": "#/$defs/Node"}


def test_a_refused_keyword_and_an_open_map_say_why() -> None:
    error = _refused(_with({"type": "string", "format": "bogus"}), "openai-chat", on_unsupported="reject")
    assert (error.path, error.message) == (
        "#/properties/n",
        "openai-chat does not enforce 'format' (format 'bogus' is not enforced by openai-chat)",
    )
    error = _refused(_with({"type": "object", "additionalProperties": {"type": "string"}}), "openai-chat")
    assert (error.path, error.message) == (
        "#/properties/n/additionalProperties",
        "an object with open or free-form keys (a map) cannot be closed in strict mode; "
        "use a list of key/value objects or strict=False",
    )


# ------------------------------------------------------------ objects


@pytest.mark.parametrize(
    "schema",
    [{"properties": {"a": {"type": "string"}}, "required": ["a"]}, {"type": ["object", "null"], "required": ["a"]}],
    ids=["properties-without-type", "type-list"],
)
def test_an_object_is_known_by_its_properties_or_a_type_list_naming_it(schema: dict[str, Any]) -> None:
    assert convert_schema(schema, "gemini").schema == schema  # its required is written by the object rules


def _nested(levels: int, leaf: dict[str, Any]) -> dict[str, Any]:
    """``levels`` closed objects, each the one property of the one before, around ``leaf``."""
    schema = leaf
    for _ in range(levels):
        schema = {"type": "object", "properties": {"a": schema}, "required": ["a"], "additionalProperties": False}
    return schema


def test_an_object_without_properties_counts_toward_the_nesting_bound() -> None:
    empty = {"type": "object", "additionalProperties": False}
    assert convert_schema(_nested(9, empty), "openai-chat").schema == _nested(9, empty)
    error = _refused(_nested(10, empty), "openai-chat")
    assert (error.path, error.message) == ("#", "objects nest 11 levels; openai-chat accepts 10")


def test_properties_merged_from_a_lone_allof_are_made_nullable_once() -> None:
    caps = capabilities("openai-chat", strict_requires_closed_objects=False)
    sent = convert_schema({"type": "object", "allOf": [{"properties": {"a": {"type": "string"}}}]}, caps)
    assert sent.schema == {"type": "object", "properties": {"a": {"type": ["string", "null"]}}, "required": ["a"]}
    assert sent.nullable_added == frozenset({"#/allOf/0/properties/a"})


def test_strict_mode_drops_the_default_of_an_optional_property_that_takes_null() -> None:
    caps = capabilities("openai-chat", supported_schema_keywords={"default", "type", "properties", "required"})
    schema = {"type": "object", "properties": {"a": {"type": ["string", "null"], "default": None}}}
    sent = convert_schema({**schema, "additionalProperties": False}, caps)
    assert sent.schema["properties"] == {"a": {"type": ["string", "null"]}}
    assert (sent.schema["required"], sent.nullable_added) == (["a"], frozenset())


def test_additional_properties_a_provider_does_not_take_are_dropped_and_recorded() -> None:
    keywords = capabilities("gemini").supported_schema_keywords - {"additionalProperties"}
    schema = {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "string"}}
    sent = convert_schema(schema, capabilities("gemini", supported_schema_keywords=keywords))
    assert sent.schema == {"type": "object", "properties": {"a": {"type": "string"}}}
    assert sent.dropped == (
        DroppedKeyword("#", "additionalProperties", {"type": "string"}, True, "not supported by gemini"),
    )


def _maps(levels: int) -> dict[str, Any]:
    """``levels`` objects, each the additionalProperties schema of the one before, around a string."""
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "additionalProperties": schema}
    return schema


def test_an_additional_properties_schema_is_converted_at_its_own_path_and_depth() -> None:
    sent = convert_schema({"type": "object", "additionalProperties": {"type": "string", "pattern": "^a"}}, "gemini")
    assert sent.schema == {"type": "object", "additionalProperties": {"type": "string"}}
    assert sent.dropped == (DroppedKeyword("#/additionalProperties", "pattern", "^a", True, "not supported by gemini"),)
    assert convert_schema(_maps(128), "gemini").schema == _maps(128)
    error = _refused(_maps(129), "gemini")
    assert (error.path, error.message) == (
        "#" + "/additionalProperties" * 129,
        "the schema nests deeper than 128 levels",
    )


# ------------------------------------------------------------ a root reference


@pytest.mark.parametrize("ref", ["#/other/Root", "#/$defs/Missing"])
def test_a_root_reference_to_no_local_definition_is_refused_at_the_root(ref: str) -> None:
    error = _refused({"$ref": ref, "$defs": {"Root": {"type": "string"}}}, "gemini")
    assert (error.path, error.message) == ("#", f"$ref {ref!r} is not a local definition")


def test_a_root_reference_is_inlined_at_the_definition_s_path() -> None:
    root = {"type": "object", "properties": {"a": {"type": "string", "pattern": "^a"}}}
    sent = convert_schema({"$ref": "#/definitions/Root", "definitions": {"Root": root}}, "gemini")
    assert sent.schema == {"type": "object", "properties": {"a": {"type": "string"}}}
    assert sent.dropped == (
        DroppedKeyword("#/definitions/Root/properties/a", "pattern", "^a", True, "not supported by gemini"),
    )
    sent = convert_schema(
        {"$ref": "#/$defs/R", "maxItems": 3, "$defs": {"R": {"type": "array", "maxItems": 5}}}, "gemini"
    )
    assert sent.schema == {"type": "array", "maxItems": 3}
    assert sent.dropped == (
        DroppedKeyword("#/$defs/R", "maxItems", 5, True, "replaced by the keyword beside its $ref when inlined"),
    )


def test_a_definition_nests_from_depth_zero_inlined_at_the_root_or_sent_by_reference() -> None:
    assert convert_schema({"$ref": "#/$defs/M", "$defs": {"M": _maps(128)}}, "gemini").schema == _maps(128)
    kept = {"type": "object", "properties": {"m": {"$ref": "#/$defs/M"}}, "$defs": {"M": _maps(128)}}
    assert convert_schema(kept, "gemini").schema == kept
    error = _refused({"$ref": "#/$defs/M", "$defs": {"M": _maps(129)}}, "gemini")
    assert error.path == "#/$defs/M" + "/additionalProperties" * 129
    error = _refused({**kept, "$defs": {"M": _maps(129)}}, "gemini")
    assert error.path == "#/$defs/M" + "/additionalProperties" * 129


# ------------------------------------------------------------ recursion


def _object(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


def test_a_reference_to_no_definition_inside_a_definition_is_refused_at_its_path() -> None:
    schema = {**_object(n={"$ref": "#/$defs/A"}), "$defs": {"A": _object(x={"$ref": "#/$defs/Missing"})}}
    error = _refused(schema, "gemini")
    assert (error.path, error.message) == ("#/$defs/A/properties/x", "$ref '#/$defs/Missing' is not a local definition")


def test_definitions_that_reach_each_other_are_recursive() -> None:
    defs = {"A": _object(b={"$ref": "#/$defs/B"}), "B": _object(a={"anyOf": [{"$ref": "#/$defs/A"}, {"type": "null"}]})}
    error = _refused({**_object(n={"$ref": "#/$defs/A"}), "$defs": defs}, "anthropic")
    assert (error.path, error.message) == ("#/properties/n", "anthropic does not accept recursive schemas (A)")


def test_a_definition_that_reaches_a_cycle_without_itself_is_not_recursive() -> None:
    defs = {
        "A": _object(b={"$ref": "#/$defs/B"}),
        "B": _object(c={"anyOf": [{"$ref": "#/$defs/C"}, {"type": "null"}]}),
        "C": _object(b={"anyOf": [{"$ref": "#/$defs/B"}, {"type": "null"}]}),
    }
    error = _refused({**_object(n={"$ref": "#/$defs/A"}), "$defs": defs}, "anthropic")  # A is sent, B is not
    assert (error.path, error.message) == ("#/$defs/A/properties/b", "anthropic does not accept recursive schemas (B)")


# ------------------------------------------------------------ what a node becomes


def test_an_unconstrained_value_is_refused_in_strict_mode_and_sent_as_it_is_otherwise() -> None:
    error = _refused(_object(n={}), "openai-chat")
    assert (error.path, error.message) == (
        "#/properties/n",
        "an unconstrained value (any JSON) cannot be sent in strict mode",
    )
    loose = {"type": "object", "properties": {"n": True, "m": {}}}
    assert convert_schema(loose, "gemini").schema == {"type": "object", "properties": {"n": {}, "m": {}}}
    error = _refused({"type": "object", "properties": {"n": False}}, "gemini")
    assert (error.path, error.message) == ("#/properties/n", "a schema must be an object, not boolean")


def test_definitions_inside_a_subschema_are_skipped_and_the_rest_is_converted() -> None:
    schema = {"type": "object", "properties": {"n": {"$defs": {"X": {}}, "type": "string", "maxItems": 1}}}
    sent = convert_schema(schema, "gemini")
    assert sent.schema == {"type": "object", "properties": {"n": {"type": "string", "maxItems": 1}}}


def test_const_and_one_of_are_kept_where_the_provider_takes_them() -> None:
    const = _object(n={"const": "x"})
    assert convert_schema(const, "openai-chat").schema == const
    one_of = {"type": "object", "properties": {"n": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}}
    assert convert_schema(one_of, "gemini") == convert_schema(one_of, "gemini", strict=False)
    assert (convert_schema(one_of, "gemini").schema, convert_schema(one_of, "gemini").dropped) == (one_of, ())
    all_of = _object(n={"allOf": [{"type": "string"}]})
    assert convert_schema(all_of, "anthropic").schema == all_of


def test_one_of_is_sent_as_any_of_where_only_that_is_taken() -> None:
    sent = convert_schema(_object(n={"oneOf": [{"type": "string"}, {"type": "integer"}]}), "openai-chat")
    assert sent.schema == _object(n={"anyOf": [{"type": "string"}, {"type": "integer"}]})
    assert sent.dropped == (
        DroppedKeyword("#/properties/n", "oneOf", "exactly one", True, "sent as anyOf; exclusivity is checked locally"),
    )


def _all_ofs(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {"allOf": [schema]}
    return schema


def test_a_lone_all_of_merged_into_its_parent_nests_a_level() -> None:
    assert convert_schema(_all_ofs(128), "openai-chat", strict=False).schema["properties"]["value"] == {
        "type": "string"
    }
    error = _refused(_all_ofs(129), "openai-chat", strict=False)
    assert (error.path, error.message) == ("#" + "/allOf/0" * 129, "the schema nests deeper than 128 levels")


@pytest.mark.parametrize("tag", range(24))
def test_a_definition_is_recursive_whichever_way_the_search_goes_first(tag: int) -> None:
    """B refers to itself and to D, D to A: whichever of B's references the
    search follows first (set order, which the names decide), A is found to
    reach itself; a search that stops at the first definition it has seen
    misses it about half the time, so the names vary."""
    b, d = f"B{tag}", f"D{tag}"
    defs = {
        "A": _object(b={"$ref": f"#/$defs/{b}"}),
        b: _object(b={"anyOf": [{"$ref": f"#/$defs/{b}"}, {"type": "null"}]}, d={"$ref": f"#/$defs/{d}"}),
        d: _object(a={"anyOf": [{"$ref": "#/$defs/A"}, {"type": "null"}]}),
    }
    error = _refused({**_object(n={"$ref": "#/$defs/A"}), "$defs": defs}, "anthropic")
    assert (error.path, error.message) == ("#/properties/n", "anthropic does not accept recursive schemas (A)")


# ------------------------------------------------------------ keywords dropped or rewritten


def test_an_enum_is_kept_when_each_value_s_type_is_taken_and_an_integer_passes_as_a_number() -> None:
    numbers = capabilities("gemini", enum_value_types={"string", "number"})
    schema = {"type": "object", "properties": {"n": {"enum": [1, 2.5, "x"]}}}
    assert (convert_schema(schema, numbers).schema, convert_schema(schema, numbers).dropped) == (schema, ())
    sent = convert_schema({"type": "object", "properties": {"n": {"enum": [1, True]}}}, "gemini")
    assert sent.schema == {"type": "object", "properties": {"n": {}}}
    reason = "gemini takes enum values of types ['integer', 'number', 'string'] only"
    assert sent.dropped == (DroppedKeyword("#/properties/n", "enum", [1, True], True, reason),)


def test_a_pattern_beyond_the_provider_s_subset_is_dropped_and_recorded() -> None:
    sent = convert_schema(_object(n={"type": "string", "pattern": "(?=a)"}), "anthropic")
    assert sent.schema == _object(n={"type": "string"})
    reason = "anthropic takes regular expressions without backreferences, lookaround or word boundaries"
    assert sent.dropped == (DroppedKeyword("#/properties/n", "pattern", "(?=a)", True, reason),)


def test_a_lone_all_of_is_merged_with_the_keywords_after_it_unless_they_overlap() -> None:
    merged = {"type": "object", "properties": {"n": {"allOf": [{"type": "string"}], "description": "d"}}}
    sent = convert_schema(merged, "openai-chat", strict=False)
    assert sent.schema["properties"]["n"] == {"type": "string", "description": "d"}
    for n in ({"allOf": [{"type": "string"}], "type": "string"}, {"type": "string", "allOf": [{"type": "string"}]}):
        error = _refused({"type": "object", "properties": {"n": n}}, "openai-chat", strict=False)
        assert (error.path, error.message) == ("#/properties/n/allOf", "allOf member overlaps its parent")


def test_the_keywords_after_additional_properties_a_provider_does_not_take_are_still_converted() -> None:
    keywords = capabilities("gemini").supported_schema_keywords - {"additionalProperties"}
    schema = {"type": "object", "additionalProperties": False, "properties": {"a": {"type": "string"}}}
    sent = convert_schema(schema, capabilities("gemini", supported_schema_keywords=keywords))
    assert sent.schema == {"type": "object", "properties": {"a": {"type": "string"}}}


def test_a_schema_under_a_draft_jsonschema_does_not_know_is_read_as_2020_12_without_a_warning() -> None:
    schema = {"$schema": "https://example.com/own-draft", "type": "object", "properties": {"a": {"type": "string"}}}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sent = convert_schema(schema, "openai-chat")
    assert [str(w.message) for w in caught] == []
    assert sent.schema["properties"] == {"a": {"type": ["string", "null"]}}
    assert sent.nullable_added == frozenset({"#/properties/a"})


def test_an_unknown_on_unsupported_is_a_value_error() -> None:
    with pytest.raises(ValueError) as caught:
        convert_schema({"type": "object"}, "gemini", on_unsupported="ignore")  # type: ignore[arg-type]
    assert str(caught.value) == "on_unsupported must be 'drop' or 'reject', not 'ignore'"


def test_min_items_up_to_the_provider_s_bound_is_kept_and_above_it_dropped() -> None:
    sent = convert_schema(_object(n={"type": "array", "minItems": 1}, m={"type": "array", "minItems": 2}), "anthropic")
    assert sent.schema == _object(n={"type": "array", "minItems": 1}, m={"type": "array"})
    assert sent.dropped == (
        DroppedKeyword("#/properties/m", "minItems", 2, True, "anthropic enforces minItems up to 1"),
    )


def test_properties_that_are_no_mapping_are_refused_at_their_path() -> None:
    error = _refused({"type": "object", "properties": [1]}, "gemini")
    assert (error.path, error.message) == ("#/properties", "properties must map names to schemas")


def _subschemas(keyword: str, levels: int, listed: bool) -> dict[str, Any]:
    """``levels`` schemas, each the ``keyword`` of the one before (in a list when ``listed``), around a string."""
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {keyword: [schema] if listed else schema}
    return schema


@pytest.mark.parametrize(
    ("keyword", "listed", "step"),
    [("anyOf", True, "/anyOf/0"), ("items", True, "/items/0"), ("items", False, "/items")],
    ids=["a-list-of-schemas", "items-as-a-list", "items-as-a-schema"],
)
def test_each_subschema_is_converted_at_its_own_path_one_level_deeper(keyword: str, listed: bool, step: str) -> None:
    assert convert_schema(_subschemas(keyword, 128, listed), "gemini").schema == _subschemas(keyword, 128, listed)
    error = _refused(_subschemas(keyword, 129, listed), "gemini")
    assert (error.path, error.message) == ("#" + step * 129, "the schema nests deeper than 128 levels")
    sent = convert_schema({keyword: [{"type": "string", "pattern": "^a"}] if listed else {"pattern": "^a"}}, "gemini")
    assert sent.dropped == (DroppedKeyword("#" + step, "pattern", "^a", True, "not supported by gemini"),)


def test_a_definition_inlined_twice_shares_no_part_between_its_copies() -> None:
    const = {"$ref": "#/$defs/C", "description": "inlined: a $ref here takes no siblings"}
    schema = {**_object(a=const, b=const), "$defs": {"C": {"const": {"k": ["v"]}}}}
    sent = convert_schema(schema, "openai-chat").schema
    a, b = sent["properties"]["a"]["const"], sent["properties"]["b"]["const"]
    assert a == b == {"k": ["v"]}
    a["k"].append("changed")
    assert b == {"k": ["v"]}


# ------------------------------------------------------------ the root


def _wrapped(value: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"value": value}, "required": ["value"], "additionalProperties": False}


def test_a_root_that_is_no_plain_object_is_wrapped_with_its_definitions_outside() -> None:
    sent = convert_schema({"type": "string"}, "openai-chat")
    assert (sent.schema, sent.root_key) == (_wrapped({"type": "string"}), "value")
    union = {
        "type": "object",
        "properties": {},
        "additionalProperties": False,
        "anyOf": [_object(a={"type": "string"})],
    }
    assert convert_schema(union, "openai-chat").schema == _wrapped(union)
    nullable = {"anyOf": [{"$ref": "#/$defs/A"}, {"type": "null"}]}
    sent = convert_schema({**nullable, "$defs": {"A": {"type": "string"}}}, "openai-chat")
    assert sent.schema == {**_wrapped(nullable), "$defs": {"A": {"type": "string"}}}


def test_tool_arguments_that_are_no_object_are_refused_at_the_root() -> None:
    error = _refused({"type": "string"}, "gemini", object_root=True)
    assert (error.path, error.message) == ("#", "tool arguments must be described by an object schema")


def test_a_root_wrapped_outside_strict_mode_is_left_open() -> None:
    sent = convert_schema({"type": "string"}, "openai-chat", strict=False)
    assert sent.schema == {"type": "object", "properties": {"value": {"type": "string"}}, "required": ["value"]}


def test_a_value_that_only_looks_like_a_reference_is_no_reference_to_the_nesting_bound() -> None:
    looks = _object(n={"const": {"$ref": "#/$defs/X"}})
    assert convert_schema(looks, "openai-chat").schema == looks
