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
from pathlib import Path
from typing import Any, Callable

import pytest

import decisions
from decide_helpers import call, needs_loads, response
from decisions import Policy, PolicyError, Schema, Tool, ToolRegistry, ToolRule
from decisions._redact import REDACTED, redact_secrets
from decisions.validate import paths as paths_module
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
