"""Ways an unsafe call could become executable past the policy, one section per
class of mistake. Every case runs ``decide`` with ``decisions._backend.impl``
pointed at each backend in turn (the layers here are Python, the parsing under
them is not) and asserts the exact code and path.

1. The policy checks what the executor receives: the validated arguments,
   whatever alias carried them, defaults and validators applied.
2. A tool name spelt otherwise (case, whitespace, ``functions.``, look-alike
   characters) never slips past the rules written for the real name.
3. Tool arguments are closed by default: an undeclared field is refused.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path, PurePosixPath
from types import ModuleType
from typing import Annotated, Any, Optional

import pytest
from pydantic import (
    AfterValidator,
    AliasChoices,
    AliasPath,
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_serializer,
)
from typing_extensions import TypedDict

from decide_helpers import both_paths, call, needs_loads, plain_id, response
from decisions import (
    DomainError,
    PathArg,
    Policy,
    PolicyError,
    Schema,
    SchemaError,
    Tool,
    ToolCall,
    ToolDecision,
    ToolRegistry,
    ToolRule,
    _backend,
    decide,
    resolve_path,
)
from decisions.validate.policy import apply_policy, parse_selector

pytestmark = [needs_loads, both_paths]


@pytest.fixture(autouse=True)
def backend(impl: ModuleType, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """Every test runs on both backends."""
    monkeypatch.setattr(_backend, "impl", impl)
    return impl


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "src" / "a.txt").write_text("a")
    (tmp_path / "secret.txt").write_text("key")
    return root


def _args(value: dict[str, Any]) -> str:
    return json.dumps(value)


def _refused(error_type: type[Exception], code: str, path: str | None, /, *args: Any, **kwargs: Any) -> Any:
    with pytest.raises(error_type) as info:
        decide(*args, **kwargs)
    error: Any = info.value
    assert error.code == code, str(error)
    if path is not None:
        assert error.path == path, str(error)
    return error


def _decided(*args: Any, **kwargs: Any) -> ToolDecision:
    decision = decide(*args, **kwargs)
    assert isinstance(decision, ToolDecision)
    return decision


# ================================================================ 1. the validated arguments


class AliasedRead(BaseModel):
    path: str = Field(validation_alias=AliasChoices("path", "file_path"))


class PopulatedRead(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    path: str = Field(alias="file_path")


class NestedAliasRead(BaseModel):
    path: str = Field(validation_alias=AliasPath("target", "path"))


class PrefixedRead(BaseModel):
    path: Annotated[str, AfterValidator(lambda v: v.removeprefix("safe:"))]


class DefaultRead(BaseModel):
    path: str = "/etc"


class PathTypedRead(BaseModel):
    path: PurePosixPath


def _read_policy(ws: Path, **kwargs: Any) -> Policy:
    return Policy(workspace=ws, tools={"read_file": ToolRule(paths={"path": "read"})}, **kwargs)


def _read_tool(model: Any) -> ToolRegistry:
    return ToolRegistry([Tool(name="read_file", parameters=model, side_effects=False)])


@pytest.mark.parametrize(
    ("model", "arguments"),
    [
        (AliasedRead, {"file_path": "../secret.txt"}),
        (PopulatedRead, {"file_path": "../secret.txt"}),
        (PopulatedRead, {"path": "../secret.txt"}),
        (NestedAliasRead, {"target": {"path": "../secret.txt"}}),
        (PrefixedRead, {"path": "safe:../secret.txt"}),  # the raw value stays inside; the validated one does not
        (DefaultRead, {}),  # the default the executor would use
        (PathTypedRead, {"path": "../secret.txt"}),  # a path object, not a string
    ],
    ids=["alias-choices", "alias-by-alias", "alias-by-name", "alias-path", "validator", "default", "path-object"],
)
def test_the_policy_checks_the_value_the_executor_gets(ws: Path, model: Any, arguments: dict[str, Any]) -> None:
    _refused(
        PolicyError,
        "PATH_OUTSIDE_WORKSPACE",
        "$.calls[0].arguments.path",
        response(call(arguments=_args(arguments))),
        tools=_read_tool(model),
        policy=_read_policy(ws),
    )


@pytest.mark.parametrize("model", [AliasedRead, PopulatedRead, NestedAliasRead, PrefixedRead, PathTypedRead])
def test_the_executor_gets_exactly_what_was_checked(ws: Path, model: Any) -> None:
    raw = {
        PathTypedRead: {"path": "src/a.txt"},
        AliasedRead: {"file_path": "src/a.txt"},
        PopulatedRead: {"file_path": "src/a.txt"},
        NestedAliasRead: {"target": {"path": "src/a.txt"}},
        PrefixedRead: {"path": "safe:src/a.txt"},
    }[model]
    decision = _decided(response(call(arguments=_args(raw))), tools=_read_tool(model), policy=_read_policy(ws))
    only = decision.calls[0]
    assert only.arguments == {"path": "src/a.txt"} == only.validated.model_dump(mode="json")
    assert dict(decision.verdicts[0].paths) == {"$.calls[0].arguments.path": os.path.realpath(ws / "src/a.txt")}


class OptionalRead(BaseModel):
    path: Optional[str] = None
    limit: int = 1


@pytest.mark.parametrize("arguments", [{}, {"path": None}])
def test_an_empty_optional_path_is_skipped_and_said_so(ws: Path, arguments: dict[str, Any]) -> None:
    decision = _decided(
        response(call(arguments=_args(arguments))), tools=_read_tool(OptionalRead), policy=_read_policy(ws)
    )
    verdict = decision.verdicts[0]
    assert decision.executable and dict(verdict.paths) == {}
    assert verdict.empty_paths == ("$.calls[0].arguments.path",)


def test_an_empty_raw_path_is_skipped_and_said_so(ws: Path) -> None:
    decision = _decided(response(call(arguments='{"limit": 3}')), policy=_read_policy(ws))
    assert decision.verdicts[0].empty_paths == ("$.calls[0].arguments.path",)


class FileItem(BaseModel):
    path: str = Field(validation_alias=AliasChoices("path", "filename"))


class ReadMany(BaseModel):
    files: list[FileItem]


EDIT_SCHEMA = {
    "type": "object",
    "properties": {
        "edits": {"type": "array", "items": {"$ref": "#/$defs/edit"}},
    },
    "required": ["edits"],
    "$defs": {
        "edit": {
            "type": "object",
            "properties": {"file": {"type": "string"}, "text": {"type": "string"}},
            "required": ["file"],
        }
    },
}


def test_nested_selectors_over_a_model(ws: Path) -> None:
    policy = Policy(workspace=ws, tools={"read_many": ToolRule(paths={"files[*].path": "read"})})
    registry = ToolRegistry([Tool(name="read_many", parameters=ReadMany)])
    ok = _decided(
        response(call(name="read_many", arguments='{"files": [{"path": "src/a.txt"}, {"filename": "docs"}]}')),
        tools=registry,
        policy=policy,
    )
    assert sorted(ok.verdicts[0].paths) == ["$.calls[0].arguments.files[0].path", "$.calls[0].arguments.files[1].path"]
    _refused(
        PolicyError,
        "PATH_OUTSIDE_WORKSPACE",
        "$.calls[0].arguments.files[1].path",
        response(call(name="read_many", arguments='{"files": [{"path": "src/a.txt"}, {"filename": "../secret.txt"}]}')),
        tools=registry,
        policy=policy,
    )


@pytest.mark.parametrize("with_registry", [True, False], ids=["json-schema", "no-schema"])
def test_nested_selectors_over_json(ws: Path, with_registry: bool) -> None:
    policy = Policy(workspace=ws, write_scopes=("docs",), tools={"edit": ToolRule(paths={"edits[*].file": "write"})})
    tools = ToolRegistry([Tool(name="edit", parameters=EDIT_SCHEMA)]) if with_registry else None
    ok = _decided(
        response(call(name="edit", arguments='{"edits": [{"file": "docs/a.md"}, {"file": "docs/b.md", "text": "x"}]}')),
        tools=tools,
        policy=policy,
    )
    assert len(ok.verdicts[0].paths) == 2
    _refused(
        PolicyError,
        "SCOPE_DENIED",
        "$.calls[0].arguments.edits[1].file",
        response(call(name="edit", arguments='{"edits": [{"file": "docs/a.md"}, {"file": "src/a.txt"}]}')),
        tools=tools,
        policy=policy,
    )


@pytest.mark.parametrize(
    ("arguments", "code", "path"),
    [
        # an object where the array belongs: its members are no items, whatever they hold
        ('{"edits": {"file": "../x"}}', "PATH_INVALID", "$.calls[0].arguments.edits"),
        ('{"edits": {"file": "docs/a.md"}}', "PATH_INVALID", "$.calls[0].arguments.edits"),
        ('{"edits": {"0": {"file": "../../etc/passwd"}}}', "PATH_INVALID", "$.calls[0].arguments.edits"),
        ('{"edits": [{"file": "docs/a.md"}, {"0": {"file": "../x"}}, {"x": [1]}]}', None, None),
        ('{"edits": ["../x"]}', "PATH_INVALID", "$.calls[0].arguments.edits[0]"),  # strings where objects belong
        ('{"edits": [{"file": 7}]}', "PATH_INVALID", "$.calls[0].arguments.edits[0].file"),
    ],
)
@pytest.mark.parametrize(
    "schema",
    [None, {"type": "object", "properties": {"edits": {}}}, {"type": "object", "properties": {"edits": True}}],
    ids=["no-registry", "untyped", "true"],
)
def test_a_schemaless_tool_cannot_reshape_its_way_past_a_selector(
    ws: Path, arguments: str, code: str | None, path: str | None, schema: dict[str, Any] | None
) -> None:
    policy = Policy(workspace=ws, write_scopes=("docs",), tools={"edit": ToolRule(paths={"edits[*].file": "write"})})
    tools = None if schema is None else ToolRegistry([Tool(name="edit", parameters=schema, extra="allow")])
    if code is None:  # items of the array without the field: left empty, and said so
        decision = _decided(response(call(name="edit", arguments=arguments)), tools=tools, policy=policy)
        assert decision.verdicts[0].empty_paths == (
            "$.calls[0].arguments.edits[1].file",
            "$.calls[0].arguments.edits[2].file",
        )
        assert list(decision.verdicts[0].paths) == ["$.calls[0].arguments.edits[0].file"]
        return
    _refused(PolicyError, code, path, response(call(name="edit", arguments=arguments)), tools=tools, policy=policy)


@pytest.mark.parametrize(
    ("tools", "rules"),
    [
        (
            [Tool(name="read_file", parameters=AliasedRead)],
            {"read_file": ToolRule(paths={"file_path": "read"})},
        ),  # an alias, not a field
        ([Tool(name="read_file", parameters=AliasedRead)], {"read_file": ToolRule(paths={"pth": "read"})}),
        (
            [Tool(name="read_many", parameters=ReadMany)],
            {"read_many": ToolRule(paths={"files.path": "read"})},
        ),  # [*] missing
        ([Tool(name="read_many", parameters=ReadMany)], {"read_many": ToolRule(paths={"files[*].file": "read"})}),
        ([Tool(name="edit", parameters=EDIT_SCHEMA)], {"edit": ToolRule(paths={"edits[*].path": "write"})}),
        ([Tool(name="edit", parameters=EDIT_SCHEMA)], {"edit": ToolRule(paths={"file": "write"})}),
    ],
    ids=["alias", "typo", "missing-star", "nested-typo", "json-nested", "json-top"],
)
def test_a_rule_naming_an_undefined_field_is_a_configuration_error(
    ws: Path, tools: list[Tool], rules: dict[str, ToolRule]
) -> None:
    policy = Policy(workspace=ws, tools=rules, write_scopes=("",))
    registry = ToolRegistry(tools)
    with pytest.raises(ValueError, match="does not fit the tool"):
        policy.plan(registry)
    with pytest.raises(ValueError):  # raised when the policy first meets the registry, before any call runs
        decide(response(call(name=tools[0].name, arguments="{}")), tools=registry, policy=policy)


@pytest.mark.parametrize("selector", ["", "a.", ".a", "a..b", "a[0]", "a[*", "a b", "[*]", "a[*]b"])
def test_malformed_selectors_are_refused_when_the_policy_is_built(ws: Path, selector: str) -> None:
    with pytest.raises(ValueError, match="malformed"):
        Policy(workspace=ws, tools={"t": ToolRule(paths={selector: "read"})})


def test_selector_steps() -> None:
    assert parse_selector("files[*].path") == ("files", None, "path")
    assert parse_selector("a[*][*].b-c") == ("a", None, None, "b-c")


def test_a_missing_path_does_not_stop_the_other_checks(ws: Path) -> None:
    rules = {"copy": ToolRule(paths={"source": "read", "target": "write", "backup": "write"})}
    policy = Policy(workspace=ws, tools=rules, write_scopes=("docs",))
    _refused(
        PolicyError,
        "PATH_OUTSIDE_WORKSPACE",
        "$.calls[0].arguments.target",
        response(call(name="copy", arguments='{"target": "../secret.txt"}')),
        policy=policy,
    )
    _refused(
        PolicyError,
        "SCOPE_DENIED",
        "$.calls[0].arguments.backup",
        response(call(name="copy", arguments='{"source": null, "backup": "src/a.txt"}')),
        policy=policy,
    )


CONTROL_PATHS = {
    "src/a.txt\n": "U+000A",  # a trailing newline, the commonest
    "src/a.txt\r": "U+000D",
    "src/\ta.txt": "U+0009",
    "src/\x1b[31ma.txt": "U+001B",  # an escape sequence
    "src/a\x7f.txt": "U+007F",
    "src/a\x85.txt": "U+0085",  # a C1 control (next line)
    "src/a.txt\x00": None,
}


@pytest.mark.parametrize("schema", [False, True], ids=["no schema", "pydantic"])
@pytest.mark.parametrize("raw", list(CONTROL_PATHS), ids=plain_id)
def test_a_path_holding_a_control_character_is_invalid(ws: Path, raw: str, schema: bool) -> None:
    """A path the model wrote with a newline or another control character in
    it names no file the model means: refused (repairable), never written as
    a file named ``a.txt\\n``."""
    error = _refused(
        PolicyError,
        "PATH_INVALID",
        "$.calls[0].arguments.path",
        response(call(arguments=_args({"path": raw}))),
        tools=_read_tool(PathRead) if schema else None,
        policy=_read_policy(ws),
    )
    code = CONTROL_PATHS[raw]
    expected = "a NUL character" if code is None else f"a control character ({code})"
    assert error.message == f"the path holds {expected}" and error.retryable
    assert _decided(response(call(arguments=_args({"path": "src/a.txt"}))), policy=_read_policy(ws)).executable


class PathRead(BaseModel):
    path: str


def test_write_arguments_are_checked_against_write_scopes(ws: Path) -> None:
    rules = {"copy": ToolRule(paths={"source": "read", "target": "write"})}
    reads_anywhere = Policy(workspace=ws, tools=rules, read_scopes=("",), write_scopes=("docs",))
    _refused(
        PolicyError,
        "SCOPE_DENIED",
        "$.calls[0].arguments.target",
        response(call(name="copy", arguments='{"source": "src/a.txt", "target": "src/b.txt"}')),
        policy=reads_anywhere,
    )
    writes_anywhere = Policy(workspace=ws, tools=rules, read_scopes=("src",), write_scopes=("",))
    _refused(
        PolicyError,
        "SCOPE_DENIED",
        "$.calls[0].arguments.source",
        response(call(name="copy", arguments='{"source": "docs/x", "target": "docs/y"}')),
        policy=writes_anywhere,
    )
    assert _decided(
        response(call(name="copy", arguments='{"source": "src/a.txt", "target": "src/b.txt"}')), policy=writes_anywhere
    ).executable
    per_argument = Policy(
        workspace=ws, tools={"copy": ToolRule(paths={"target": PathArg("write", scopes=("docs",))})}, write_scopes=("",)
    )
    _refused(
        PolicyError,
        "SCOPE_DENIED",
        "$.calls[0].arguments.target",
        response(call(name="copy", arguments='{"target": "src/b.txt"}')),
        policy=per_argument,
    )


def test_a_root_whose_name_ends_in_a_space_is_not_its_siblings_parent(tmp_path: Path) -> None:
    root = tmp_path / "ws "
    root.mkdir()
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "secret.txt").write_text("key")
    _refused(
        PolicyError,
        "PATH_OUTSIDE_WORKSPACE",
        "$.calls[0].arguments.path",
        response(call(arguments='{"path": "../ws/secret.txt"}')),
        policy=_read_policy(root),
    )
    with pytest.raises(PolicyError):
        resolve_path(os.path.realpath(root), str(tmp_path / "ws" / "secret.txt"))


def test_the_file_system_root_as_workspace() -> None:
    assert resolve_path("/", "etc") == os.path.realpath("/etc")
    decision = _decided(response(call(arguments='{"path": "etc"}')), policy=_read_policy(Path("/")))
    assert decision.executable


# ================================================================ 2. tool-name spellings

RULED = {"read_file": ToolRule(paths={"path": "read"})}

AMBIGUOUS = [
    "READ_FILE",
    "Read_File",
    "functions.read_file",
    "tools.read_file",
    "default_api:read_file",
    "functions.tools.read_file",
    "\uff52\uff45\uff41\uff44_\uff46\uff49\uff4c\uff45",  # fullwidth
    "r\u0435ad_file",  # Cyrillic e
    "re\u0430d_file",  # Cyrillic a
    "rea\u0301d_file",  # a combining accent
    "\U0001d42b\U0001d41e\U0001d41a\U0001d41d_file",  # mathematical bold
    "READ_FİLE",  # dotted capital I
]
INVALID = [
    "read_file ",
    " read_file",
    "read_file\n",
    "read\tfile",
    "read\u00a0file",  # no-break space
    "read\u200b_file",  # zero-width space
    "read\u00ad_file",  # soft hyphen
    "\u202eread_file",  # right-to-left override
    "read_file\u3164",  # Hangul filler: a letter that renders as nothing
    "\uffa0read_file",  # halfwidth Hangul filler
    "read\u115f_file",  # Hangul choseong filler
    "read_file\u1160",  # Hangul jungseong filler
    "read\u2800file",  # blank Braille pattern
    # default-ignorable marks: invisible, though their category is Mn
    "read_file\ufe0f",  # variation selector-16
    "read\ufe00_file",  # variation selector-1
    "read_file\U000e0100",  # variation selector-17
    "read\u034f_file",  # combining grapheme joiner
    "read\u17b4_file",  # Khmer vowel inherent aq
    "read_file\u17b5",  # Khmer vowel inherent aa
    "read\u180b_file",  # Mongolian free variation selector one
    "read_file\u180f",  # Mongolian free variation selector four
    "read\x00file",
    "read\x1bfile",
    "",
]


@pytest.mark.parametrize("name", AMBIGUOUS)
def test_a_look_alike_of_a_ruled_name_is_refused(ws: Path, name: str) -> None:
    # tools=None and default="allow": without the check, no rule would apply and the path would go unchecked
    _refused(
        DomainError,
        "AMBIGUOUS_TOOL_NAME",
        "$.calls[0].name",
        response(call(name=name, arguments='{"path": "../secret.txt"}')),
        policy=Policy(workspace=ws, tools=RULED),
    )


@pytest.mark.parametrize("name", AMBIGUOUS)
def test_a_look_alike_of_a_registered_name_is_refused(name: str) -> None:
    _refused(
        DomainError,
        "AMBIGUOUS_TOOL_NAME",
        "$.calls[1].name",
        response(call(call_id="a"), call(name=name, call_id="b")),
        tools=_read_tool(None),
    )


@pytest.mark.parametrize("name", INVALID)
@pytest.mark.parametrize("known", ["rules", "registry", "nothing"])
def test_names_with_whitespace_or_control_characters_are_refused(ws: Path, name: str, known: str) -> None:
    kwargs: dict[str, Any] = {
        "rules": {"policy": Policy(workspace=ws, tools=RULED)},
        "registry": {"tools": _read_tool(None)},
        "nothing": {},
    }[known]
    _refused(DomainError, "INVALID_TOOL_NAME", "$.calls[0].name", response(call(name=name)), **kwargs)


def test_per_call_batches_do_not_let_a_look_alike_through(ws: Path) -> None:
    policy = Policy(workspace=ws, tools=RULED, batch="per_call")
    _refused(
        DomainError,
        "AMBIGUOUS_TOOL_NAME",
        "$.calls[1].name",
        response(call(call_id="a"), call(name="READ_FILE", call_id="b", arguments='{"path": "../secret.txt"}')),
        policy=policy,
    )


def test_apply_policy_checks_names_too(ws: Path) -> None:
    calls = [ToolCall(call_id="c", name="functions.read_file", arguments={"path": "../secret.txt"})]
    with pytest.raises(DomainError) as info:
        apply_policy(calls, Policy(workspace=ws, tools=RULED))
    assert (info.value.code, info.value.path) == ("AMBIGUOUS_TOOL_NAME", "$.calls[0].name")


def test_exact_and_unrelated_names_still_pass(ws: Path) -> None:
    policy = Policy(workspace=ws, tools=RULED)
    assert _decided(response(call(arguments='{"path": "src/a.txt"}')), policy=policy).executable
    # default="allow" without a registry lets a name that resembles no ruled one through, unchecked
    assert _decided(response(call(name="read-file", arguments='{"path": "../secret.txt"}')), policy=policy).executable
    _refused(
        PolicyError,
        "TOOL_DENIED",
        "$.calls[0].name",
        response(call(name="read-file")),
        policy=Policy(workspace=ws, tools=RULED, default="deny"),
    )


def test_look_alike_names_in_the_configuration_are_refused(ws: Path) -> None:
    with pytest.raises(ValueError):
        Policy(workspace=ws, tools={"read_file": ToolRule(), "READ_FILE": ToolRule()})
    with pytest.raises(ValueError):
        Policy(tools={"read file": ToolRule()})
    with pytest.raises(ValueError):
        ToolRegistry([Tool(name="read_file"), Tool(name="functions.read_file")])
    with pytest.raises(ValueError):
        Tool(name="read_file\u200b")
    policy = Policy(workspace=ws, tools={"Read_File": ToolRule(paths={"path": "read"})})
    with pytest.raises(ValueError, match="registered as 'read_file'"):
        decide(response(call()), tools=_read_tool(None), policy=policy)


# ================================================================ 3. closed by default


class Plain(BaseModel):  # the Pydantic default: extra="ignore"
    path: str


class Inner(BaseModel):
    path: str


class Outer(BaseModel):
    files: list[Inner]


class PlainDict(TypedDict):
    path: str


@dataclasses.dataclass
class PlainData:
    path: str


PLAIN_SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
COMPOSED_SCHEMA = {
    "allOf": [
        {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        {"properties": {"limit": {"type": "integer"}}},
    ]
}
NESTED_SCHEMA = {
    "type": "object",
    "properties": {"files": {"type": "array", "items": {"$ref": "#/$defs/file"}}},
    "$defs": {"file": {"type": "object", "properties": {"path": {"type": "string"}}}},
}


@pytest.mark.parametrize(
    ("spec", "arguments", "where"),
    [
        (Plain, {"path": "a", "toolNmae": "x"}, "$.calls[0].arguments.toolNmae"),
        (PlainDict, {"path": "a", "toolNmae": "x"}, "$.calls[0].arguments.toolNmae"),
        (PlainData, {"path": "a", "toolNmae": "x"}, "$.calls[0].arguments.toolNmae"),
        (Outer, {"files": [{"path": "a"}, {"path": "b", "toolNmae": "x"}]}, "$.calls[0].arguments.files[1].toolNmae"),
        (PLAIN_SCHEMA, {"path": "a", "toolNmae": "x"}, "$.calls[0].arguments.toolNmae"),
        (COMPOSED_SCHEMA, {"path": "a", "limit": 1, "toolNmae": "x"}, "$.calls[0].arguments.toolNmae"),
        (NESTED_SCHEMA, {"files": [{"path": "a", "toolNmae": "x"}]}, "$.calls[0].arguments.files[0].toolNmae"),
    ],
    ids=["model", "typed-dict", "dataclass", "nested-model", "json-schema", "json-allOf", "json-ref"],
)
def test_an_undeclared_field_is_a_schema_mismatch(spec: Any, arguments: dict[str, Any], where: str) -> None:
    error = _refused(
        SchemaError, "SCHEMA_MISMATCH", where, response(call(arguments=_args(arguments))), tools=_read_tool(spec)
    )
    assert [(i["path"], i["code"]) for i in error.issues] == [(where, "unexpected")]


@pytest.mark.parametrize("spec", [Plain, PLAIN_SCHEMA, COMPOSED_SCHEMA, NESTED_SCHEMA, Outer])
def test_closed_schemas_still_accept_what_they_declare(spec: Any) -> None:
    arguments = {"files": [{"path": "a"}]} if spec in (Outer, NESTED_SCHEMA) else {"path": "a"}
    if spec is COMPOSED_SCHEMA:
        arguments["limit"] = 2
    assert _decided(response(call(arguments=_args(arguments))), tools=_read_tool(spec)).executable


class Open(BaseModel):
    model_config = ConfigDict(extra="allow")
    path: str


def test_the_explicit_opt_outs() -> None:
    raw = '{"path": "a", "toolNmae": "x"}'
    opted = ToolRegistry([Tool(name="read_file", parameters=Open, extra="allow")])
    assert _decided(response(call(arguments=raw)), tools=opted).calls[0].arguments == {"path": "a", "toolNmae": "x"}
    ignored = ToolRegistry([Tool(name="read_file", parameters=Plain, extra="allow")])
    decision = _decided(response(call(arguments=raw)), tools=ignored)
    assert decision.calls[0].arguments == {"path": "a"}  # Pydantic ignored it, so the executor never sees it
    open_schema = ToolRegistry([Tool(name="read_file", parameters={**PLAIN_SCHEMA, "additionalProperties": True})])
    assert _decided(response(call(arguments=raw)), tools=open_schema).calls[0].arguments == {
        "path": "a",
        "toolNmae": "x",
    }


def test_closing_is_not_undone_by_a_prebuilt_schema() -> None:
    registry = ToolRegistry([Tool(name="read_file", parameters=Schema(Plain, closed=False))])
    _refused(
        SchemaError,
        "SCHEMA_MISMATCH",
        "$.calls[0].arguments.toolNmae",
        response(call(arguments='{"path": "a", "toolNmae": "x"}')),
        tools=registry,
    )


def test_an_open_model_in_a_closed_tool_is_a_configuration_error() -> None:
    with pytest.raises(ValueError, match="extra"):
        Tool(name="read_file", parameters=Open)

    class Holder(BaseModel):
        inner: Open

    with pytest.raises(ValueError, match="Open"):
        Tool(name="read_file", parameters=Holder)
    with pytest.raises(ValueError):
        Tool(name="read_file", extra="sometimes")  # type: ignore[arg-type]


def test_an_old_draft_cannot_close_a_composed_object() -> None:
    with pytest.raises(ValueError, match="unevaluatedProperties"):
        Tool(name="read_file", parameters={"$schema": "http://json-schema.org/draft-07/schema#", **COMPOSED_SCHEMA})
    Tool(name="read_file", parameters={"$schema": "http://json-schema.org/draft-07/schema#", **PLAIN_SCHEMA})


# ================================================================ a host's check fails closed, answer included


class _Unprintable:
    """An answer whose text cannot be read."""

    def __str__(self) -> str:
        raise RuntimeError("no text")


class _Undecidable:
    """An answer that cannot say whether it is true."""

    def __bool__(self) -> bool:
        raise RuntimeError("no truth")


class _LoudReason(str):
    """A reason whose overrides raise: only its text counts."""

    def __str__(self) -> str:
        raise RuntimeError("no text")

    def __format__(self, spec: str) -> str:
        raise RuntimeError("no format")


@pytest.mark.parametrize("answer", [_Unprintable(), _Undecidable(), _LoudReason("locked")], ids=type)
def test_an_approval_answer_that_cannot_be_read_asks_for_a_human(answer: object) -> None:
    decision = _decided(response(call()), policy=Policy(approval=lambda c: answer))  # type: ignore[arg-type,return-value]
    assert not decision.executable and decision.needs_approval
    reasons = decision.verdicts[0].reasons
    assert reasons == (("locked",) if isinstance(answer, str) else ("the approval check raised RuntimeError",))
    assert all(type(r) is str for r in reasons)


def test_a_state_check_reason_is_read_as_its_text() -> None:
    error = _refused(
        PolicyError,
        "STATE_CHECK_FAILED",
        "$.calls[0]",
        response(call()),
        policy=Policy(state_check=lambda c: _LoudReason("locked")),
    )
    assert error.message == "locked" and type(error.message) is str
    assert error.to_dict()["message"] == "locked"


class _BrokenValidator(BaseModel):
    path: str

    @field_validator("path")
    @classmethod
    def _boom(cls, value: str) -> str:
        raise RuntimeError("boom")


def test_a_validator_that_raises_is_a_schema_mismatch() -> None:
    """A tool model's validator raising anything but a validation error
    does not accept the value: a typed refusal, never the bare exception."""
    error = _refused(
        SchemaError,
        "SCHEMA_MISMATCH",
        "$.calls[0].arguments",
        response(call()),
        tools=_read_tool(_BrokenValidator),
    )
    assert error.issues[0]["code"] == "invalid" and "RuntimeError" in error.issues[0]["expected"]


class _BrokenSerializer(BaseModel):
    path: str

    @model_serializer
    def _boom(self) -> dict[str, Any]:
        raise RuntimeError("boom")


def test_a_serializer_that_raises_is_a_schema_mismatch() -> None:
    """The executor's arguments are the model dumped: a serializer that
    raises leaves nothing to run, refused with the call named."""
    error = _refused(
        SchemaError,
        "SCHEMA_MISMATCH",
        "$.calls[0].arguments",
        response(call()),
        tools=_read_tool(_BrokenSerializer),
    )
    assert error.issues[0]["code"] == "invalid" and "serializer" in error.issues[0]["expected"]
