"""The tool registry: known tools, versions, and bounded suggestions."""

from __future__ import annotations

import pytest

from decide_helpers import READ_FILE_SCHEMA, call, needs_loads, response
from decisions import DomainError, Schema, Tool, ToolDecision, ToolRegistry, decide
from decisions.validate.domain import MAX_SUGGESTIONS, ToolNames, fold, tool_key

NAMES = ["read_file", "list_directory", "write_file", "search_code", "run_tests"]


@pytest.fixture
def registry() -> ToolRegistry:
    return ToolRegistry(Tool(name=n, description=f"internal: {n} talks to host-7") for n in NAMES)


def test_registration(registry: ToolRegistry) -> None:
    assert len(registry) == 5 and "read_file" in registry and "Read_File" not in registry
    assert registry.names == tuple(NAMES)
    assert [t.name for t in registry] == NAMES
    with pytest.raises(ValueError):
        registry.register(Tool(name="read_file"))
    with pytest.raises(ValueError):
        Tool(name="")
    with pytest.raises(TypeError):
        registry.register("read_file")  # type: ignore[arg-type]


def test_a_tool_compiles_its_schema_once() -> None:
    tool = Tool(name="read_file", parameters=READ_FILE_SCHEMA, version="3.1", side_effects=False)
    assert isinstance(tool.schema, Schema) and tool.version == "3.1" and not tool.side_effects
    assert Tool(name="x").schema is None and Tool(name="x").side_effects


@pytest.mark.parametrize(
    ("wrong", "first"),
    [
        ("read_flie", "read_file"),
        ("functions.read_file", "read_file"),
        ("ReadFile", "read_file"),
        ("READ-FILE", "read_file"),
        ("list directory", "list_directory"),
        ("default_api:run_tests", "run_tests"),
        ("serach_code", "search_code"),
    ],
)
def test_near_misses_are_suggested(registry: ToolRegistry, wrong: str, first: str) -> None:
    suggestions = registry.suggest(wrong)
    assert suggestions[0] == first
    assert len(suggestions) <= MAX_SUGGESTIONS


@pytest.mark.parametrize("wrong", ["delete_everything", "x", "", "q" * 10_000])
def test_far_names_get_no_suggestion(registry: ToolRegistry, wrong: str) -> None:
    assert registry.suggest(wrong) == ()


def test_never_the_whole_registry() -> None:
    big = ToolRegistry(Tool(name=f"tool_{i}") for i in range(200))
    suggestions = big.suggest("tool_1x")
    assert 0 < len(suggestions) <= MAX_SUGGESTIONS
    with pytest.raises(DomainError) as info:
        big.resolve("tool_1x")
    assert info.value.hint is not None and info.value.hint.count("'tool_") <= MAX_SUGGESTIONS + 1  # + the name itself


def test_fold() -> None:
    assert fold("functions.Read-File") == fold("read_file") == fold(" READ FILE ") == "readfile"


def test_resolve_names_and_never_corrects(registry: ToolRegistry) -> None:
    assert registry.resolve("read_file").name == "read_file"
    with pytest.raises(DomainError) as info:
        registry.resolve("raed_file", path="$.calls[2].name")
    error = info.value
    assert error.code == "UNKNOWN_TOOL" and error.layer == "domain" and error.retryable
    assert error.path == "$.calls[2].name"
    assert "'read_file'" in (error.hint or "")
    assert "host-7" not in str(error.to_dict())  # nothing but names
    assert error.issues == ({"path": "$.calls[2].name", "code": "unknown_tool", "expected": "one of 'read_file'"},)
    with pytest.raises(DomainError) as info:
        registry.resolve("Read_File", path="$.calls[2].name")  # the same name spelt otherwise: never matched
    assert (info.value.code, info.value.path) == ("AMBIGUOUS_TOOL_NAME", "$.calls[2].name")
    assert info.value.issues == ({"path": "$.calls[2].name", "code": "ambiguous_tool_name", "expected": "'read_file'"},)


@needs_loads
def test_decide_names_the_unknown_call(registry: ToolRegistry) -> None:
    items = (call(call_id="a"), call(name="write_flie", call_id="b"))
    with pytest.raises(DomainError) as info:
        decide(response(*items), tools=registry)
    assert (info.value.code, info.value.path) == ("UNKNOWN_TOOL", "$.calls[1].name")
    assert "'write_file'" in (info.value.hint or "")


@needs_loads
def test_decide_accepts_a_mapping_of_schemas() -> None:
    decision = decide(response(call()), tools={"read_file": READ_FILE_SCHEMA})
    assert isinstance(decision, ToolDecision) and decision.calls[0].tool_version == "1"
    with pytest.raises(DomainError):
        decide(response(call(name="grep")), tools={"read_file": READ_FILE_SCHEMA})
    # a mapping of Tool objects is a misuse named as one (it would be taken for argument schemas)
    with pytest.raises(TypeError, match="pass Tool objects as a list"):
        decide(response(call()), tools={"read_file": Tool(name="read_file", side_effects=False)})


def test_tool_key_is_blind_to_spelling_only() -> None:
    assert tool_key("Functions.Tools.READ_FILE") == tool_key("ｒｅａｄ_file") == tool_key("réad_file") == "read_file"
    assert tool_key("read-file") != tool_key("read_file")  # a different name, not a spelling of it
    assert tool_key("functions.") == "functions."  # a prefix alone is a name


def test_tool_names_know_exact_names_and_refuse_look_alikes() -> None:
    names = ToolNames(["read_file", "grep"])
    assert "read_file" in names and "READ_FILE" not in names
    assert names.look_alike("r\u0435ad_file") == "read_file" and names.look_alike("gr\u0435p") == "grep"
    assert names.look_alike("read_file") is None and names.look_alike("list_dir") is None
    for name in ("read_file", "list_dir", "функция"):
        names.check(name)  # known, or resembling nothing known
    with pytest.raises(ValueError):
        names.add("GREP")
    with pytest.raises(ValueError):
        names.add("list dir")


def test_a_checked_name_is_checked_again_once_a_name_is_added() -> None:
    """``check`` remembers names that passed; a name added later can make one
    of them a look-alike, and then it must be refused."""
    names = ToolNames(["read_file"])
    names.check("write_file")
    names.check("write_file")
    names.add("Write_File")
    with pytest.raises(DomainError) as caught:
        names.check("write_file", path="$.calls[3].name")
    assert (caught.value.code, caught.value.path) == ("AMBIGUOUS_TOOL_NAME", "$.calls[3].name")
    assert names.look_alike("write_file") == "Write_File"


def test_remembered_names_are_bounded() -> None:
    names = ToolNames(["read_file"])
    for i in range(3000):
        names.check(f"tool_{i}")
        assert len(names._passed) <= 1024
    with pytest.raises(DomainError, match="AMBIGUOUS_TOOL_NAME|only in spelling"):
        names.check("READ_FILE")
    with pytest.raises(DomainError) as caught:
        names.check("bad name")
    assert caught.value.code == "INVALID_TOOL_NAME"
