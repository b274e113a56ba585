"""Work that grows faster than the model's input.

The model (and whatever it read) chooses every byte of a response and
every argument value; the host chooses the schemas, the registry and the
policy. Each test here feeds one of the model's shapes that once cost the
square of its size (a small argument holding the process for seconds or
hours) and checks that the cost now grows with the input: by a
deterministic count where there is one, else by comparing the time of a
size and of eight times that size in one run (best of several; a quadratic
step gives about 64, a linear one about 8, and the bounds sit between).
Each test also checks the answer itself, which the faster way must keep.
"""

from __future__ import annotations

import gc
import json
import os
import time
import tracemalloc
from pathlib import Path
from typing import Any, Callable

import pytest

import decisions
from decide_helpers import call, needs_loads, response
from decisions import Policy, PolicyError, Schema, Tool, ToolRegistry, ToolRule, build_request, capabilities
from decisions._redact import REDACTED, redact_secrets
from decisions.request.definitions import ToolDefinition
from decisions.validate import paths as paths_module
from decisions.validate._shown import ShownDict, shown
from decisions.validate.paths import resolve_path

#: The longest path a policy resolves, in bytes (Linux's ``PATH_MAX``).
MAX_PATH_BYTES = 4096
#: Size ratio of the two runs compared.
FACTOR = 8
#: Time ratio above which a step is taken for quadratic (linear: about 8,
#: quadratic: about 64; a loaded machine adds noise to both).
MAX_RATIO = 24.0


def _best(run: Callable[[], object], repeats: int = 3) -> float:
    """The fastest of ``repeats`` runs, in seconds, with the cyclic collector paused."""
    gc.collect()
    gc.disable()
    try:
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            run()
            times.append(time.perf_counter() - start)
        return min(times)
    finally:
        gc.enable()


def _growth(run: Callable[[int], object], small: int, factor: int = FACTOR) -> float:
    """The time of ``run(small * factor)`` over that of ``run(small)``."""
    run(small)  # warm: compiled schemas, caches
    return _best(lambda: run(small * factor)) / _best(lambda: run(small))


# ================================================================ uniqueItems over objects

UNIQUE = Schema({"type": "array", "uniqueItems": True})


def _objects_with_a_repeat(count: int) -> list[Any]:
    """``count`` distinct objects and a repeat of the first: invalid, so the
    reference validator (which writes the issues) reads all of them."""
    return [{"id": index, "tags": [index, "x"]} for index in range(count)] + [{"tags": [0, "x"], "id": 0}]


def test_unique_items_over_objects_take_linear_time() -> None:
    """Objects cannot be sorted: ``jsonschema`` compared every pair (a
    thousand objects took a second, 8,000 a minute)."""
    issues, _ = UNIQUE.issues(_objects_with_a_repeat(1000))
    assert [(i["path"], i["code"]) for i in issues] == [("$", "invalid")]
    ratio = _growth(lambda n: UNIQUE.issues(_objects_with_a_repeat(n)), 250)
    assert ratio < MAX_RATIO, ratio


@pytest.mark.parametrize(
    ("items", "unique"),
    [
        ([[1], [True], [1]], False),  # sorting put [true] between the two [1] and missed them
        ([1, 1.0], False),
        ([True, 1], True),
        ([False, 0, None, "", [], {}], True),
        ([{"a": [1, {"b": True}]}, {"a": [1.0, {"b": True}]}], False),
        ([{"a": [1, {"b": True}]}, {"a": [1, {"b": 1}]}], True),
        ([{"a": 1, "b": 2}, {"b": 2, "a": 1}], False),
        ([[1, 2], [2, 1]], True),
        (["1", 1], True),
    ],
)
def test_unique_items_keep_json_equality(items: list[Any], unique: bool) -> None:
    """Numbers equal by value (``1`` and ``1.0``), booleans apart from
    numbers, objects whatever their member order, at any depth."""
    issues, _ = UNIQUE.issues(items)
    assert (issues == []) is unique


# ================================================================ many unexpected members


@pytest.mark.parametrize(
    "spec",
    [
        {"type": "object", "properties": {"a": {"type": "string"}}},  # closed with additionalProperties
        {"type": "object", "properties": {"a": {"type": "string"}}, "allOf": [{"type": "object"}]},  # unevaluated
    ],
    ids=["additional", "unevaluated"],
)
def test_each_unexpected_member_is_named_in_linear_time(spec: dict[str, Any]) -> None:
    """Each unexpected member was looked for in a list of all the issues so
    far (and, unevaluated, in a message naming them all): 10,000 members,
    a second and more per call."""
    schema = Schema(spec)
    issues, _ = schema.issues({f"k{index}": 1 for index in range(1000)})
    assert [i["path"] for i in issues] == [f"$.k{index}" for index in range(1000)]
    assert {i["code"] for i in issues} == {"unexpected"}
    ratio = _growth(lambda n: schema.issues({f"k{index}": 1 for index in range(n)}), 1000)
    assert ratio < MAX_RATIO, ratio


def test_an_unevaluated_member_is_named_exactly() -> None:
    """A member is named because it is unexpected, not because its quoted
    name appears inside another's (``a`` is declared; ``b'a'c`` is not)."""
    schema = Schema({"type": "object", "properties": {"a": {}}, "allOf": [{"type": "object"}]})
    issues, _ = schema.issues({"a": 1, "b'a'c": 2})
    assert [i["path"] for i in issues] == ["$[\"b'a'c\"]"]


# ================================================================ credentials in a long run of letters


def test_a_run_of_jwt_openings_is_redacted_in_linear_time() -> None:
    """``eyJ`` opens a JWT: the pattern read to the end of the run of
    base64url characters from every ``eyJ`` in it, to find no dot there
    (120 KB took five seconds; an 8 MiB argument echoed in an error, hours)."""
    assert redact_secrets("eyJ" * 1000) == "eyJ" * 1000
    ratio = _growth(lambda n: redact_secrets("eyJ" * n), 5000)
    assert ratio < MAX_RATIO, ratio


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln", "Bearer " + REDACTED),
        ("id=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0 next", "id=" + REDACTED + " next"),
        ("xyeyJhbGciOiJIUzI1NiJ9.eyJz.sig", REDACTED),  # glued to the letters before it: masked whole
        ("eyJhbGciOiJIUzI1NiJ9 without a dot", "eyJhbGciOiJIUzI1NiJ9 without a dot"),
        ("eyJabc.d", "eyJabc.d"),  # too short after eyJ
    ],
)
def test_jwts_are_still_masked(text: str, shown: str) -> None:
    assert redact_secrets(text) == shown


# ================================================================ long paths


@pytest.fixture
def workspace_root(tmp_path: Path) -> str:
    root = tmp_path / "ws"
    (root / "a").mkdir(parents=True)
    return os.path.realpath(root)


def test_a_path_past_path_max_is_refused_before_it_is_walked(
    workspace_root: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Resolving walks a path one component at a time, building the path so
    far at each: ``a/`` 160,000 times took two seconds, a 4 MiB argument
    minutes. A path no system call would take is refused unwalked."""
    looked_up: list[str] = []
    real_lstat = os.lstat

    def lstat(path: Any, *args: Any, **kwargs: Any) -> Any:
        looked_up.append(path)
        return real_lstat(path, *args, **kwargs)

    monkeypatch.setattr(paths_module.os, "lstat", lstat)
    for raw in ("a/" * 100_000, "a/" * (MAX_PATH_BYTES // 2) + "b", "é" * (MAX_PATH_BYTES // 2 + 1)):
        with pytest.raises(PolicyError) as info:
            resolve_path(workspace_root, raw, path="$.path")
        assert (info.value.code, info.value.path) == ("PATH_INVALID", "$.path")
        assert str(MAX_PATH_BYTES) in info.value.message
    assert looked_up == []
    at_the_bound = "a/" * (MAX_PATH_BYTES // 2 - 1) + "bb"
    assert len(at_the_bound) == MAX_PATH_BYTES
    assert resolve_path(workspace_root, at_the_bound).endswith("/a/bb")


@needs_loads
@pytest.mark.parametrize("raw", ["a/" * 100_000, "é" * (MAX_PATH_BYTES // 2 + 1)], ids=["components", "bytes"])
def test_the_policy_refuses_a_path_past_path_max(workspace_root: str, raw: str) -> None:
    """The policy's own way for a plain relative path refuses it too."""
    schema = {"type": "object", "properties": {"path": {"type": "string"}}}
    tools = ToolRegistry([Tool(name="read_file", parameters=schema, side_effects=False)])
    policy = Policy(workspace=workspace_root, tools={"read_file": ToolRule(paths={"path": "read"})})
    with pytest.raises(PolicyError) as info:
        decisions.decide(response(call(arguments=json.dumps({"path": raw}))), tools=tools, policy=policy)
    assert (info.value.code, info.value.path) == ("PATH_INVALID", "$.calls[0].arguments.path")


# ================================================================ suggestions for an unknown tool


def _registry(length: int, count: int = 300) -> ToolRegistry:
    """``count`` tools whose names of ``length`` characters share all but their ends."""
    middle = "x" * (length - 10)
    return ToolRegistry(
        Tool(name=f"{chr(97 + index % 26)}{middle}{index:08d}z", parameters={"type": "object"})
        for index in range(count)
    )


def test_suggestions_cost_linear_time_in_the_name() -> None:
    """An unknown name close to every registered one but at its ends: the
    edit distance filled the whole table of both names (6 ms per name of
    120 characters; 4,000 such tools, 24 seconds per unknown call)."""
    short, long = _registry(16), _registry(128)
    first = "a" + "x" * 118 + "00000000z"
    assert long.suggest(first[:-2] + "z")[0] == first  # a zero left out: one edit from the first tool
    assert long.suggest("q" + first[1:])[:2] == (first, "b" + "x" * 118 + "00000001z")
    ratio = _best(lambda: long.suggest("Q" + "x" * 118 + "qqqqqqqqZ")) / _best(
        lambda: short.suggest("Q" + "x" * 6 + "qqqqqqqqZ")
    )
    assert ratio < MAX_RATIO, ratio


# ================================================================ a failing value written out per level


#: The model's string nested in the tests below: one MiB.
BIG = 1 << 20


def _nested(levels: int, leaf: Any) -> Any:
    for _ in range(levels):
        leaf = [leaf]
    return leaf


#: Schemas that fail a value at every level it nests (each level's message
#: was ``repr`` of the whole subtree below it), or once per keyword.
WRITTEN_PER_LEVEL: dict[str, tuple[dict[str, Any], Callable[[int, str], Any]]] = {
    "maxItems at each level": (
        {"type": "array", "maxItems": 0, "items": {"$ref": "#"}},
        lambda levels, leaf: _nested(levels, leaf),
    ),
    "not at each level": (
        {
            "anyOf": [
                {"type": "string", "maxLength": 1},
                {"type": "array", "not": {"minItems": 1}, "items": {"$ref": "#"}},
            ]
        },
        lambda levels, leaf: _nested(levels, leaf),
    ),
    "enum at each level": (
        {"type": "array", "enum": [[]], "items": {"$ref": "#"}},
        lambda levels, leaf: _nested(levels, leaf),
    ),
    "members at each level": (
        {"type": "object", "maxProperties": 0, "additionalProperties": {"$ref": "#"}},
        lambda levels, leaf: json.loads('{"a":' * levels + json.dumps(leaf) + "}" * levels),
    ),
    "a hundred keywords on one string": (
        {"allOf": [{"maxLength": 1}, {"not": {"type": "string"}}] * 50},
        lambda levels, leaf: leaf,
    ),
}


def _peak(run: Callable[[], object]) -> int:
    """The most memory traced while ``run`` runs, in bytes."""
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("case", list(WRITTEN_PER_LEVEL))
def test_a_failing_value_is_written_out_once_not_per_level(case: str) -> None:
    """A 1 MiB string 48 levels deep: each failing level's message held the
    whole subtree (48 MiB of messages, 6 s and 290 MB at 4 MiB and 60
    levels); now each message shows a bounded part, and the memory spent is
    a few copies of the value, whatever the depth."""
    spec, build = WRITTEN_PER_LEVEL[case]
    value = build(48, "x" * BIG)
    schema = Schema(spec)
    issues, validated = schema.issues(value)
    assert issues and validated is None
    assert all(len(found["expected"]) < 200 for found in issues), issues
    assert _peak(lambda: schema.issues(value)) < 6 * BIG


def test_a_message_shows_the_value_bounded() -> None:
    """What the model is told of its value: its ends, elided in the middle."""
    value = ["a" * 100 + "b" * 100, *range(20)]
    (found,) = Schema({"not": {"type": "array"}}).issues(value)[0]
    assert found == {
        "path": "$",
        "code": "invalid",
        "expected": f"['{'a' * 27}...{'b' * 28}', 0, 1, 2, 3, 4, 5, 6, ...] should not be valid under {{'type': 'array'}}",
    }
    nested = {"z": 1, "a": [1, [2, [3, [4, [5]]]]], "m": {}, "e": [], "k": {"b": {"c": {"d": {"e": 1}}}}}
    (found,) = Schema({"not": {"type": "object"}}).issues(nested)[0]
    assert found["expected"] == (
        "{'z': 1, 'a': [1, [2, [3, [...]]]], 'm': {}, 'e': [], 'k': {'b': {'c': {'d': {...}}}}}"
        " should not be valid under {'type': 'object'}"
    )
    members = {str(i): 10**100 if i == 2 else i for i in range(12)}
    (found,) = Schema({"not": {"type": "object"}}).issues(members)[0]
    assert found["expected"] == (
        f"{{'0': 0, '1': 1, '2': {'1' + '0' * 27}...{'0' * 29}, '3': 3, '4': 4, '5': 5, '6': 6, '7': 7, ...}}"
        " should not be valid under {'type': 'object'}"
    )
    small = {"k": [1, "two", None, True, 2.5]}
    (found,) = Schema({"not": {"type": "object"}}).issues(small)[0]
    assert found["expected"] == f"{small!r} should not be valid under {{'type': 'object'}}"


def test_a_string_and_an_object_of_eight_are_shown_whole() -> None:
    (found,) = Schema({"not": {"type": "string"}}).issues("abc")[0]
    assert found["expected"] == "'abc' should not be valid under {'type': 'string'}"
    eight = {str(i): i for i in range(8)}
    (found,) = Schema({"not": {"type": "object"}}).issues(eight)[0]
    assert found["expected"] == f"{eight!r} should not be valid under {{'type': 'object'}}"


def test_a_part_shown_before_is_its_earlier_copy() -> None:
    """With ``known``, each part is copied once: the parts of a value asked
    again (a union's branches on a restored value) are the same objects, so
    the verdicts kept for them hold."""
    value = {"a": {"b": ["x", {"c": 1}]}, "d": [{"e": "y"}]}
    known: dict[int, tuple[Any, Any]] = {}
    whole = shown(value, known)
    assert whole == value and type(whole) is ShownDict
    assert shown(value, known) is whole
    assert shown(value["a"], known) is whole["a"]
    assert shown(value["a"]["b"], known) is whole["a"]["b"]
    assert shown(value["d"][0], known) is whole["d"][0]
    assert shown(value) is not whole and shown(value) == value


@pytest.mark.parametrize("case", ["maxItems at each level", "not at each level"])
def test_a_decision_on_a_deep_failing_argument_is_bounded(case: str) -> None:
    """Through ``decide``: the call refused, its issues and hint (what the
    repair prompt sends back) bounded, the memory spent a few copies of the
    argument at any depth."""
    spec, build = WRITTEN_PER_LEVEL[case]
    spec_at_x = json.loads(json.dumps(spec).replace('"#"', '"#/$defs/x"'))
    tools = ToolRegistry(
        [
            Tool(
                name="t",
                parameters={"type": "object", "properties": {"x": {"$ref": "#/$defs/x"}}, "$defs": {"x": spec_at_x}},
            )
        ]
    )
    arguments = json.dumps({"x": build(40, "x" * BIG)})
    refused = response(call(name="t", arguments=arguments))

    def decide() -> None:
        with pytest.raises(decisions.SchemaError) as info:
            decisions.decide(refused, tools=tools)
        assert info.value.code == "SCHEMA_MISMATCH"
        assert all(len(found["expected"]) < 200 for found in info.value.issues)
        assert len(info.value.hint or "") < 1000

    decide()
    assert _peak(decide) < 8 * BIG


# ================================================================ restoring a strict-mode answer


#: A recursive union: an array of one item, itself such an array or a leaf object.
_NESTING_UNION = {
    "type": "object",
    "properties": {"x": {"anyOf": [{"$ref": "#/$defs/N"}, {"type": "integer"}]}},
    "required": ["x"],
    "$defs": {
        "N": {
            "type": "array",
            "maxItems": 1,
            "items": {
                "anyOf": [
                    {"$ref": "#/$defs/N"},
                    {
                        "type": "object",
                        "properties": {"s": {"type": "string", "maxLength": 1}, "o": {"type": "string"}},
                        "required": ["s"],
                    },
                ]
            },
        }
    },
}


def _nested_answer(levels: int, text: str) -> Any:
    return response(call(name="t", arguments=json.dumps({"x": _nested(levels, {"s": text, "o": None})})))


def test_restoring_a_nested_union_takes_linear_time_in_its_depth() -> None:
    """Each union level of the strict-mode answer validated the whole value
    below it afresh, each branch writing its failure out in full: a
    60-level argument of a few hundred bytes took 12 s in ``prepare``
    (a 1 MiB leaf 40 levels deep: 73 s). Now the parts are copied once and
    the branches' verdicts kept across the levels."""
    plan = build_request(capabilities("openai-chat"), tools=[ToolDefinition("t", _NESTING_UNION)])
    answers = {levels: _nested_answer(levels, "xx") for levels in (7, 7 * FACTOR)}
    ratio = _growth(lambda levels: plan.prepare(answers[levels]), 7)
    assert ratio < MAX_RATIO, ratio
    deep = plan.prepare(_nested_answer(40, "x" * BIG))
    assert _peak(lambda: plan.prepare(_nested_answer(40, "x" * BIG))) < 8 * BIG
    # a leaf that fits no branch (too long) is left as written, for the decision to refuse
    leaf = json.loads(deep.items[0].arguments)["x"]
    for _ in range(40):
        (leaf,) = leaf
    assert leaf == {"s": "x" * BIG, "o": None}


def test_a_restored_nested_answer_is_still_refused_where_it_fails() -> None:
    """The kept verdicts change no answer: a leaf that fits is restored (its
    optional member's null removed), one that does not is refused."""
    plan = build_request(capabilities("openai-chat"), tools=[ToolDefinition("t", _NESTING_UNION)])
    tools = ToolRegistry([Tool(name="t", parameters=_NESTING_UNION, side_effects=False)])
    with pytest.raises(decisions.SchemaError) as info:
        decisions.decide(plan.prepare(_nested_answer(30, "xx")), tools=tools)
    assert info.value.code == "SCHEMA_MISMATCH"
    ok = decisions.decide(plan.prepare(_nested_answer(30, "x")), tools=tools)
    leaf = ok.calls[0].arguments["x"]
    for _ in range(30):
        (leaf,) = leaf
    assert leaf == {"s": "x"}
