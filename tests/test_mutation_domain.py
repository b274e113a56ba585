"""The registry as a caller reads it: each refusal in full (code, message,
path, hint, issue), suggestions (nearest first, exact spellings first, the
limit and the length bounds), names that differ only in spelling, and what a
Tool refuses when it is declared."""

from __future__ import annotations

from typing import Any

import pytest

from decisions import DomainError, Schema, Tool, ToolRegistry
from decisions.validate.domain import ToolNames, _distance, check_tool_name, fold, tool_key

NAMES = ["read_file", "list_directory", "write_file", "search_code", "run_tests"]


@pytest.fixture
def registry() -> ToolRegistry:
    return ToolRegistry(Tool(name=n) for n in NAMES)


def refusal(registry: ToolRegistry, name: Any, path: str = "$.name") -> tuple[Any, ...]:
    with pytest.raises(DomainError) as info:
        registry.resolve(name, path=path)
    e = info.value
    return (e.code, e.message, e.path, e.hint, list(e.issues))


def test_an_unknown_tool_with_and_without_suggestions(registry: ToolRegistry) -> None:
    assert refusal(registry, "read_fil", "$.calls[0].name") == (
        "UNKNOWN_TOOL",
        "the model called 'read_fil', which is not a registered tool",
        "$.calls[0].name",
        "there is no tool 'read_fil'; did you mean 'read_file'?",
        [{"path": "$.calls[0].name", "code": "unknown_tool", "expected": "one of 'read_file'"}],
    )
    assert refusal(registry, "zzzz") == (
        "UNKNOWN_TOOL",
        "the model called 'zzzz', which is not a registered tool",
        "$.name",
        "there is no tool 'zzzz'; call only the tools you were given",
        [{"path": "$.name", "code": "unknown_tool", "expected": "a registered tool name"}],
    )


def test_a_long_unknown_name_is_shown_cut() -> None:
    registry = ToolRegistry([Tool(name="a")])
    for length, shown in [(128, "x" * 128), (129, "x" * 128 + "…")]:
        _, message, _, hint, _ = refusal(registry, "x" * length)
        assert message == f"the model called {shown!r}, which is not a registered tool"
        assert hint == f"there is no tool {shown!r}; call only the tools you were given"


@pytest.mark.parametrize("name", ["Read_File", "r\u0435ad_file", "functions.read_file", "default_api:read_file"])
def test_a_name_spelt_otherwise_is_ambiguous(registry: ToolRegistry, name: str) -> None:
    assert refusal(registry, name, "$.n") == (
        "AMBIGUOUS_TOOL_NAME",
        f"the model called {name!r}, which differs from the tool 'read_file' only in spelling",
        "$.n",
        "call the tool by its exact name, 'read_file'",
        [{"path": "$.n", "code": "ambiguous_tool_name", "expected": "'read_file'"}],
    )


def test_an_invalid_name_in_full(registry: ToolRegistry) -> None:
    assert refusal(registry, "read file", "$.n") == (
        "INVALID_TOOL_NAME",
        "the tool name 'read file' holds the character U+0020 (Zs: whitespace, control or invisible)",
        "$.n",
        "call a tool by its exact name, with no spaces or invisible characters",
        [
            {
                "path": "$.n",
                "code": "invalid_tool_name",
                "expected": "a tool name without whitespace, control or invisible characters",
            }
        ],
    )
    with pytest.raises(DomainError) as info:
        check_tool_name(5, path="$.x")  # type: ignore[arg-type]
    assert (info.value.message, info.value.path) == ("the tool name '5' is not a string", "$.x")
    with pytest.raises(DomainError) as info:
        check_tool_name("a\u200b" + "b" * 200)
    shown = "a\u200b" + "b" * 126
    assert info.value.message.startswith(f"the tool name {shown!r} holds the character U+200B (Cf")
    with pytest.raises(DomainError) as info:
        check_tool_name("")
    assert info.value.message == "the tool name '' is empty"
    check_tool_name("fine_name")


def test_suggestions_nearest_first_exact_spellings_first_and_bounded() -> None:
    registry = ToolRegistry(Tool(name=n) for n in ["read_file", "ReadFile", "read_files", "head_file", "bread_film"])
    assert registry.suggest("READ-FILE") == ("ReadFile", "read_file", "head_file")
    # one edit before two, then by name
    assert registry.suggest("READ-FILE", limit=5) == ("ReadFile", "read_file", "head_file", "read_files", "bread_film")
    assert registry.suggest("READ-FILE", limit=1) == ("ReadFile",)
    assert registry.suggest("READ-FILE", limit=-1) == ()
    assert registry.suggest(5) == ()  # type: ignore[arg-type]
    # the distance allowed grows with the name: one edit for a short name
    short = ToolRegistry(Tool(name=n) for n in ["ab", "abcd", "ls"])
    assert short.suggest("ab_") == ("ab",)
    assert short.suggest("lx") == ("ls",)
    assert short.suggest("xy") == ()
    assert ToolRegistry([Tool(name="abcdefghi")]).suggest("abcxxxghi") == ("abcdefghi",)
    assert ToolRegistry([Tool(name="abcdefghi")]).suggest("abxxxxghi") == ()
    # at most three edits however long the name
    twelve = ToolRegistry([Tool(name="abcdefghijkl")])
    assert twelve.suggest("abcxyzghijkl") == ("abcdefghijkl",)
    assert twelve.suggest("abcwxyzhijkl") == ()


def test_suggestions_skip_names_past_the_length_bound() -> None:
    long = "a" * 128
    registry = ToolRegistry([Tool(name=long), Tool(name="b" * 129)])
    assert registry.suggest(long[:-1]) == (long,)
    assert registry.suggest(long[:-1] + "c") == (long,)  # a name of 128 characters still gets them
    assert registry.suggest("a" * 129) == ()
    assert registry.suggest("b" * 128) == ()


def test_the_edit_distance() -> None:
    assert _distance("abcd", "abdc", 2) == 1  # one transposition
    assert _distance("kitten", "sitting", 3) == 3
    assert _distance("kitten", "sitting", 2) == 3  # past the bound: bound + 1
    assert _distance("ab", "abcdef", 2) == 3
    assert _distance("", "ab", 2) == 2
    assert _distance("abc", "abc", 1) == 0
    assert _distance("ca", "abc", 3) == 3


def _osa(a: str, b: str) -> int:
    """Optimal string alignment distance, the whole table (the reference)."""
    d = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) + 1):
        d[i][0] = i
    for j in range(len(b) + 1):
        d[0][j] = j
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[len(a)][len(b)]


def test_the_edit_distance_is_the_reference_one_within_the_bound() -> None:
    words = [""] + [w for n in range(1, 5) for w in product_words("abc", n)]
    for a in words:
        for b in words:
            for bound in (1, 2, 3):
                found, exact = _distance(a, b, bound), _osa(a, b)
                assert found == exact if exact <= bound else found > bound, (a, b, bound)
    assert _distance("aaaa", "bbbb", 1) == 2  # the row minimum passes the bound: stopped early


def product_words(alphabet: str, length: int) -> list[str]:
    words = [""]
    for _ in range(length):
        words = [w + c for w in words for c in alphabet]
    return words


def test_name_forms() -> None:
    assert tool_key("functions.tools.default_api:Read_File") == "read_file"
    assert tool_key("functions.") == "functions."
    assert tool_key("Cafe\u0301") == "cafe"
    assert tool_key("\uff32ead") == "read"  # NFKC: a fullwidth letter
    assert fold(" functions.Read-File ") == "readfile"
    assert fold("tool/a.b:c") == "abc"


def test_tool_names_refuse_look_alikes_and_malformed_names() -> None:
    names = ToolNames(["read_file"])
    names.add("read_file")  # again: nothing
    assert "read_file" in names and "Read_File" not in names
    with pytest.raises(ValueError) as info:
        names.add("READ_FILE")
    assert str(info.value) == (
        "tool names 'read_file' and 'READ_FILE' differ only in spelling; one of them would shadow the other"
    )
    with pytest.raises(ValueError) as info:
        names.add("a b")
    assert str(info.value) == "tool name 'a b' holds the character U+0020 (Zs: whitespace, control or invisible)"
    assert names.look_alike("read_file") is None
    assert names.look_alike("r\u0435ad_fil\u0435") == "read_file"  # two Cyrillic letters
    assert names.look_alike("r\u0435ad_fila") is None  # and an ASCII difference
    assert names.look_alike("reaf_file") is None  # ASCII only: a different name
    # a known name with a non-ASCII letter is shadowed by its ASCII spelling too
    assert ToolNames(["r\u0435ad"]).look_alike("read") == "r\u0435ad"
    names.add("reaf_file")
    names.check("reaf_file")
    names.check("other")


def test_what_a_tool_refuses_when_declared() -> None:
    for kwargs, message in [
        ({"name": ""}, "a tool needs a non-empty name"),
        ({"name": "a\tb"}, "tool name 'a\\tb' holds the character U+0009 (Cc: whitespace, control or invisible)"),
        ({"name": "a", "extra": "ignore"}, "Tool.extra must be 'forbid' or 'allow'"),
        ({"name": "a", "kind": "shell"}, "a shell tool is registered under the name 'shell'"),
        (
            {"name": "a", "kind": "custom", "parameters": {"type": "object"}},
            "a custom tool's input is text: its parameters must describe a string",
        ),
        ({"name": "a", "effects": 5}, "Tool.effects must be a callable effect check"),
    ]:
        with pytest.raises(ValueError) as info:
            Tool(**kwargs)
        assert str(info.value) == message
    with pytest.raises(ValueError) as info:
        Tool(name="a", kind="nope")  # type: ignore[arg-type]
    assert str(info.value).startswith("Tool.kind must be one of function, custom")
    assert Tool(name="shell", kind="shell").name == "shell"
    assert Tool(name="t", kind="custom", parameters={"type": "string"}).schema is not None


def test_a_tools_schemas() -> None:
    open_schema = Schema({"properties": {"a": {}}}, closed=False)
    closed_schema = Schema({"properties": {"a": {}}})
    assert Tool(name="t", parameters=closed_schema).schema is closed_schema
    rebuilt = Tool(name="t", parameters=open_schema).schema
    assert rebuilt is not None and rebuilt.closed is True and rebuilt.spec == open_schema.spec
    reopened = Tool(name="t", parameters=closed_schema, extra="allow").schema
    assert reopened is not None and reopened.closed is False and reopened.spec == closed_schema.spec
    assert Tool(name="t", parameters=open_schema, extra="allow").schema is open_schema
    assert Tool(name="t", parameters={"properties": {"a": {}}}, extra="allow").schema.closed is False  # type: ignore[union-attr]
    assert Tool(name="t").schema is None and Tool(name="t").result_schema is None
    returns = Tool(name="t", returns={"properties": {"a": {}}}).result_schema
    assert returns is not None and returns.closed is True and returns.spec == {"properties": {"a": {}}}
    assert Tool(name="t", effects=lambda arguments, result: []).effects is not None
    assert Tool(name="t", returns=open_schema).result_schema is open_schema


def test_registry_of_each_form(registry: ToolRegistry) -> None:
    assert ToolRegistry.of(registry) is registry
    built = ToolRegistry.of({"a": {"type": "object"}, "b": None})
    assert built.names == ("a", "b") and built.get("a").schema is not None  # type: ignore[union-attr]
    assert ToolRegistry.of([Tool(name="c")]).names == ("c",)
    assert registry.get("nope") is None and registry.resolve("read_file").name == "read_file"
    assert registry.version == 5
    with pytest.raises(ValueError) as info:
        registry.register(Tool(name="read_file"))
    assert str(info.value) == "tool 'read_file' is already registered"
    with pytest.raises(TypeError) as type_info:
        registry.register("x")  # type: ignore[arg-type]
    assert str(type_info.value) == "expected a Tool, not str"
