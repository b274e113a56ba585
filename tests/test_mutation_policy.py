"""Policy errors as the caller and the repair prompt read them: the code, the
message, the JSON path, the hint and each issue's ``expected``, for every
refusal; and the rules a broken guard would get wrong (write scopes, values
the executor receives, plans compiled once)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any, Callable

import pytest
from pydantic import BaseModel, ConfigDict, create_model

from decide_helpers import both_paths, plain_id
from decisions import PathArg, Policy, PolicyError, Run, Tool, ToolCall, ToolRegistry, ToolRule
from decisions.errors import DomainError
from decisions.validate import paths as paths_module
from decisions.validate import policy as policy_module
from decisions.validate.policy import apply_policy, resolve_path

pytestmark = both_paths

EXPECTED_PATH = "a relative path inside the workspace"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "src" / "main.py").write_text("print(1)\n")
    return root


def refusal(fn: Callable[[], Any]) -> PolicyError:
    with pytest.raises(PolicyError) as info:
        fn()
    return info.value


def shape(error: PolicyError) -> tuple[Any, ...]:
    return (error.code, error.message, error.path, error.hint, error.issues)


def rejected(code: str, message: str, path: str, expected: str, hint: str) -> tuple[Any, ...]:
    return (code, message, path, hint, ({"path": path, "code": code.lower(), "expected": expected},))


def tc(name: str = "read_file", call_id: str = "c1", validated: Any = None, **arguments: Any) -> ToolCall:
    return ToolCall(call_id=call_id, name=name, arguments=arguments, validated=validated)


# ---------------------------------------------------------------- resolve_path


@pytest.mark.parametrize(
    ("raw", "message", "hint"),
    [
        (123, "a path must be a non-empty string", "give a relative path such as 'src/main.py'"),
        ("  ", "a path must be a non-empty string", "give a relative path such as 'src/main.py'"),
        ("a\x00b", "the path holds a NUL character", "use '/' between path components and no control characters"),
        ("a\\b", "the path holds a backslash", "use '/' between path components and no control characters"),
        ("~/x", "home-directory paths ('~') are not expanded", "give a path relative to the workspace"),
        ("C:/x", "drive and UNC paths are not accepted", "give a path relative to the workspace"),
        ("//host/x", "drive and UNC paths are not accepted", "give a path relative to the workspace"),
    ],
)
def test_invalid_path_errors_in_full(ws: Path, raw: Any, message: str, hint: str) -> None:
    error = refusal(lambda: resolve_path(os.path.realpath(ws), raw, path="$.a.path"))
    assert shape(error) == rejected("PATH_INVALID", message, "$.a.path", EXPECTED_PATH, hint)


def test_outside_workspace_error_in_full(ws: Path) -> None:
    error = refusal(lambda: resolve_path(os.path.realpath(ws), "../x", path="$.p"))
    hint = "give a path inside the workspace; '..' and symlinks that leave it are refused"
    assert shape(error) == rejected(
        "PATH_OUTSIDE_WORKSPACE", "the path resolves outside the workspace", "$.p", EXPECTED_PATH, hint
    )


def test_a_path_that_cannot_be_resolved_is_refused_with_its_cause(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = os.path.realpath(ws)

    def broken(root: str, raw: str) -> str:
        raise OSError("too many levels")

    monkeypatch.setattr(paths_module, "_resolve_under", broken)
    error = refusal(lambda: resolve_path(root, "src/a", path="$.p"))
    assert shape(error) == rejected(
        "PATH_INVALID",
        "the path cannot be resolved (OSError)",
        "$.p",
        EXPECTED_PATH,
        "give a path relative to the workspace",
    )
    assert isinstance(error.__cause__, OSError)
    policy = Policy(workspace=ws, tools={"read_file": ToolRule(paths={"path": "read"})})
    error = refusal(lambda: apply_policy([tc(path="src/a")], policy))
    assert shape(error)[:2] == ("PATH_INVALID", "the path cannot be resolved (OSError)")
    assert isinstance(error.__cause__, OSError)


#: Path arguments of every kind resolve_path tells apart: the policy's own
#: way to them (plain relative paths checked at once) gives the same answer.
RAW_PATHS: list[Any] = [
    "src/main.py",
    "src",
    ".",
    "./src/../src/x",
    "",
    " ",
    "\u2003",
    "\x1c",
    "\x85",
    " src",
    "src/\x00x",
    "src\\x",
    "~",
    "~user/x",
    "a~",
    "C:x",
    "z:/x",
    "1:x",
    "//host/x",
    "/",
    "///x",
    "../x",
    "src/../../x",
    "up/x",
    "up",
    "loop/x",
    "in/x",
    123,
    b"src",
    {"p": "src"},
    Path("src/main.py"),
    Path("../x"),
    ["src/a", "../b"],
]


def _expected(root: str, raw: Any) -> Any:
    """What resolve_path says of each path of ``raw`` (a list: item by
    item, up to the first refusal), as the policy reports it."""
    out: list[tuple[str, str]] = []
    for i, value in enumerate(raw if isinstance(raw, list) else [raw]):
        where = "$.calls[0].arguments.path" + (f"[{i}]" if isinstance(raw, list) else "")
        try:
            out.append((where, resolve_path(root, value, path=where)))
        except PolicyError as error:
            return shape(error)
    return out


@pytest.mark.parametrize("raw", RAW_PATHS, ids=plain_id)
def test_the_policy_resolves_like_resolve_path(ws: Path, raw: Any) -> None:
    (ws / "up").symlink_to("..")
    (ws / "in").symlink_to("src")
    (ws / "loop").symlink_to("loop")
    root = os.path.realpath(ws)
    policy = Policy(workspace=ws, tools={"read_file": ToolRule(paths={"path": "read"})})
    variants = [raw]
    if isinstance(raw, str) and not raw.startswith(("/", "~")):
        variants.append(os.path.join(root, raw))  # the same path, absolute
        variants.append("/" + os.path.join(root, raw))  # and in the UNC form
    for value in variants:
        try:
            (verdict,) = apply_policy([tc(path=value)], policy)
        except PolicyError as error:
            assert shape(error) == _expected(root, value)
        else:
            assert list(verdict.paths.items()) == _expected(root, value)


# ---------------------------------------------------------------- each refusal in full


def test_tool_denied_in_full(ws: Path) -> None:
    policy = Policy(default="deny")
    error = refusal(lambda: apply_policy([tc("rm")], policy))
    assert shape(error) == rejected(
        "TOOL_DENIED",
        "policy does not allow the tool 'rm'",
        "$.calls[0].name",
        "an allowed tool",
        "this tool is not allowed here",
    )


def test_repaired_side_effecting_call_in_full() -> None:
    registry = ToolRegistry([Tool(name="write_file"), Tool(name="read_file", side_effects=False)])
    error = refusal(lambda: apply_policy([tc("write_file")], Policy(), registry=registry, repaired=True))
    assert shape(error) == rejected(
        "REPAIRED_CALL_REFUSED",
        "a repaired call may not run the side-effecting tool 'write_file'",
        "$.calls[0].name",
        "a read-only tool",
        "send the call again without repair",
    )
    # a read-only tool may run repaired, but only when the registry says it is read-only
    (verdict,) = apply_policy([tc("read_file")], Policy(), registry=registry, repaired=True)
    assert verdict.status == "allowed"
    assert refusal(lambda: apply_policy([tc("read_file")], Policy(), repaired=True)).code == "REPAIRED_CALL_REFUSED"
    # not repaired (the default): the side-effecting tool is allowed
    (verdict,) = apply_policy([tc("write_file")], Policy(), registry=registry)
    assert verdict.status == "allowed"


def test_already_decided_call_in_full() -> None:
    run = Run("r1")
    apply_policy([tc()], Policy(), run=run)
    error = refusal(lambda: apply_policy([tc()], Policy(), run=run))
    assert shape(error) == rejected(
        "CALL_ALREADY_DECIDED",
        "call 'c1' was already decided",
        "$.calls[0].call_id",
        "a new call id",
        "this call was already handled; do not repeat it",
    )


def test_repeated_ids_in_one_response_in_full() -> None:
    error = refusal(lambda: apply_policy([tc(call_id="a"), tc(call_id="a"), tc(call_id="b")], Policy()))
    assert shape(error) == rejected(
        "CALL_ALREADY_DECIDED",
        "call ids repeat within one response: ['a']",
        "$.calls",
        "one call per call id",
        "give every call its own id",
    )


class _RacingRun(Run):
    """A run another worker claims between the per-call check and the claim."""

    def decided(self, call_id: str) -> bool:
        return False


def test_a_call_claimed_meanwhile_is_refused_in_full() -> None:
    run = _RacingRun()
    assert run.claim(["c1"]) == ()
    error = refusal(lambda: apply_policy([tc()], Policy(), run=run))
    assert shape(error) == rejected(
        "CALL_ALREADY_DECIDED",
        "call ids already decided: ['c1']",
        "$.calls",
        "new call ids",
        "these calls were already handled; do not repeat them",
    )


def test_cancelled_run_in_full() -> None:
    run = Run("r1")
    assert run.run_id == "r1"
    assert run.cancelled is False
    run.cancel()
    assert run.cancelled is True
    error = refusal(lambda: apply_policy([tc()], Policy(), run=run))
    assert shape(error) == ("RUN_CANCELLED", error.message, "$", "the run was cancelled; nothing may execute", ())
    assert refusal(lambda: run.claim(["x"])).code == "RUN_CANCELLED"


def test_claim_reports_the_replayed_ids_and_records_nothing_then() -> None:
    run = Run()
    assert run.claim(["a", "b"]) == ()
    assert run.claim(["c", "a"]) == ("a",)
    assert not run.decided("c")


def test_state_check_refusal_per_call_in_full() -> None:
    for check, message in [
        (lambda call: 1 / 0, "the state check raised ZeroDivisionError"),
        (lambda call: False, "the state check refused the call"),
        (lambda call: "the file is locked", "the file is locked"),
    ]:
        verdicts = apply_policy([tc(), tc(call_id="c2")], Policy(state_check=check, batch="per_call"))
        for index, verdict in enumerate(verdicts):
            assert verdict.status == "denied"
            assert verdict.error is not None
            assert shape(verdict.error) == rejected(
                "STATE_CHECK_FAILED",
                message,
                f"$.calls[{index}]",
                "a call the current state allows",
                "this action is not possible in the current state",
            )


def test_approval_reasons() -> None:
    policy = Policy(tools={"read_file": ToolRule(approval=True), "grep": ToolRule(approval="reads secrets")})
    verdicts = apply_policy([tc(), tc("grep", call_id="c2")], policy)
    assert [(v.status, v.reasons) for v in verdicts] == [
        ("needs_approval", ("'read_file' requires approval",)),
        ("needs_approval", ("reads secrets",)),
    ]


class _Reason:
    """An approval answer that is not a str but reads as one."""

    def __str__(self) -> str:
        return "a reason object"


class _ReasonText(str):
    def __str__(self) -> str:
        return "not this"


class _Answer:
    """A truthy answer whose ``str`` is a str subclass with its own ``__str__``."""

    def __str__(self) -> str:
        return _ReasonText("the reason itself")


def test_approval_reasons_from_a_callback() -> None:
    """A callback's truthy answer that is not a str gives its ``str`` as the
    reason, as plain text (a str subclass's own ``__str__`` is not asked)."""
    for answer, reason in ((_Reason(), "a reason object"), (_Answer(), "the reason itself")):
        verdicts = apply_policy([tc()], Policy(approval=lambda call, answer=answer: answer))
        assert [(v.status, v.reasons) for v in verdicts] == [("needs_approval", (reason,))]
        assert type(verdicts[0].reasons[0]) is str


def test_batch_rejected_in_full(ws: Path) -> None:
    """A refused call in a batch raises its own error, naming the call; the
    batch lists every call, the others ``not_run`` with ``BATCH_REJECTED``."""
    policy = Policy(tools={"rm": ToolRule(allowed=False)})
    calls = [tc(call_id="a"), tc("rm", call_id="b"), tc(call_id="c")]
    error = refusal(lambda: apply_policy(calls, policy))
    assert (error.code, error.message) == ("TOOL_DENIED", "policy does not allow the tool 'rm'")
    assert error.path == "$.calls[1].name"
    assert error.hint == "this tool is not allowed here"
    assert error.issues == ({"path": "$.calls[1].name", "code": "tool_denied", "expected": "an allowed tool"},)
    assert (error.call_index, error.call_id, error.tool) == (1, "b", "rm")
    assert error.batch == (
        {"index": 0, "call_id": "a", "tool": "read_file", "status": "not_run", "code": "BATCH_REJECTED"},
        {"index": 1, "call_id": "b", "tool": "rm", "status": "denied", "code": "TOOL_DENIED"},
        {"index": 2, "call_id": "c", "tool": "read_file", "status": "not_run", "code": "BATCH_REJECTED"},
    )


# ---------------------------------------------------------------- scopes


def test_a_write_argument_is_held_to_the_tools_write_scopes(ws: Path) -> None:
    policy = Policy(
        workspace=ws,
        tools={"edit": ToolRule(paths={"path": "write"}, read_scopes=("",), write_scopes=("docs",))},
    )
    error = refusal(lambda: apply_policy([tc("edit", path="src/main.py")], policy))
    assert shape(error) == rejected(
        "SCOPE_DENIED",
        "'edit' may not write 'src/main.py'",
        "$.calls[0].arguments.path",
        "a path this tool may write",
        "this tool may not write there",
    )
    (verdict,) = apply_policy([tc("edit", path="docs/a.md")], policy)
    assert verdict.paths == {"$.calls[0].arguments.path": os.path.join(os.path.realpath(ws), "docs", "a.md")}


def test_a_read_argument_is_held_to_the_tools_read_scopes(ws: Path) -> None:
    policy = Policy(
        workspace=ws,
        write_scopes=("",),
        tools={"cat": ToolRule(paths={"path": PathArg("read")}, read_scopes=("docs",), write_scopes=("",))},
    )
    error = refusal(lambda: apply_policy([tc("cat", path="src/main.py")], policy))
    assert (error.code, error.message) == ("SCOPE_DENIED", "'cat' may not read 'src/main.py'")


@pytest.mark.parametrize(
    "policy",
    [
        lambda ws: Policy(workspace=ws, write_scopes=("../out",), tools={"t": ToolRule(read_scopes=("",))}),
        lambda ws: Policy(workspace=ws, read_scopes=("../out",), tools={"t": ToolRule()}),
        lambda ws: Policy(workspace=ws, tools={"t": ToolRule(write_scopes=("../out",), paths={"p": PathArg("read")})}),
    ],
)
def test_every_scope_is_checked_when_the_policy_is_built(ws: Path, policy: Callable[[Path], Policy]) -> None:
    with pytest.raises(ValueError, match=r"^scope '\.\./out' is outside the workspace '.*ws'$"):
        policy(ws)


def test_policy_configuration_errors_say_what_is_wrong(ws: Path) -> None:
    with pytest.raises(ValueError, match=r"^Policy.default must be 'allow' or 'deny'$"):
        Policy(default="maybe")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^Policy.batch must be 'all_or_nothing' or 'per_call'$"):
        Policy(batch="some")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^workspace '.*nowhere' is not a directory$"):
        Policy(workspace=ws / "nowhere")
    with pytest.raises(ValueError, match=r"^a Policy with path arguments needs a workspace$"):
        Policy(tools={"t": ToolRule(paths={"p": "read"})})
    with pytest.raises(ValueError, match=r"^the access of 't' 'p' must be 'read' or 'write'$"):
        Policy(workspace=ws, tools={"t": ToolRule(paths={"p": "exec"})})  # type: ignore[dict-item]


# ---------------------------------------------------------------- the values the executor receives


def test_the_validated_value_is_checked_not_the_raw_arguments(ws: Path) -> None:
    policy = Policy(workspace=ws, tools={"cat": ToolRule(paths={"path": "read"})})
    error = refusal(lambda: apply_policy([tc("cat", validated={"path": "../x"}, path="src/main.py")], policy))
    assert (error.code, error.path) == ("PATH_OUTSIDE_WORKSPACE", "$.calls[0].arguments.path")
    error = refusal(lambda: apply_policy([tc("cat", path="../x")], policy))
    assert (error.code, error.path) == ("PATH_OUTSIDE_WORKSPACE", "$.calls[0].arguments.path")


class _Extra(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str = "x"


@dataclasses.dataclass
class _Args:
    path: str


@pytest.mark.parametrize(
    "validated",
    [_Extra.model_validate({"path": "../x"}), _Args("../x"), {"path": "../x"}],
    ids=["model-extra", "dataclass", "mapping"],
)
def test_every_kind_of_validated_object_is_read(ws: Path, validated: Any) -> None:
    policy = Policy(workspace=ws, tools={"cat": ToolRule(paths={"path": "read"})})
    error = refusal(lambda: apply_policy([tc("cat", validated=validated)], policy))
    assert (error.code, error.path) == ("PATH_OUTSIDE_WORKSPACE", "$.calls[0].arguments.path")


@pytest.mark.parametrize(
    "validated",
    [_Extra(), {"other": 1}, {"path": None}, _Args.__new__(_Args)],
    ids=["model", "mapping", "null", "dataclass"],
)
def test_an_absent_path_is_listed_empty(ws: Path, validated: Any) -> None:
    policy = Policy(workspace=ws, tools={"cat": ToolRule(paths={"path": "read"})})
    (verdict,) = apply_policy([tc("cat", validated=validated)], policy)
    assert (verdict.status, verdict.empty_paths, dict(verdict.paths)) == (
        "allowed",
        ("$.calls[0].arguments.path",),
        {},
    )


def test_array_items_left_empty_are_listed(ws: Path) -> None:
    policy = Policy(workspace=ws, tools={"cat": ToolRule(paths={"files[*].path": "read"})})
    (verdict,) = apply_policy([tc("cat", files=[{"path": None}, {"path": "src/main.py"}])], policy)
    assert verdict.empty_paths == ("$.calls[0].arguments.files[0].path",)
    assert list(verdict.paths) == ["$.calls[0].arguments.files[1].path"]
    # one object where an array was expected: its members are no items
    for files in ({"path": None}, {"path": "src/main.py"}, {"0": {"path": "/etc/passwd"}}):
        error = refusal(lambda files=files: apply_policy([tc("cat", files=files)], policy))
        assert shape(error) == rejected(
            "PATH_INVALID",
            "expected an array",
            "$.calls[0].arguments.files",
            "an array",
            "give the arguments the shape the tool declares",
        )
    # a selector that ends at the array: an object there is no path either
    policy = Policy(workspace=ws, tools={"cat": ToolRule(paths={"paths[*]": "read"})})
    error = refusal(lambda: apply_policy([tc("cat", paths={"0": "/etc/passwd"})], policy))
    assert (error.code, error.path) == ("PATH_INVALID", "$.calls[0].arguments.paths")


def test_a_value_that_is_not_an_object_in_full(ws: Path) -> None:
    policy = Policy(workspace=ws, tools={"cat": ToolRule(paths={"files[*].path": "read"})})
    for files, where in [("x", "$.calls[0].arguments.files"), (["x"], "$.calls[0].arguments.files[0]")]:
        error = refusal(lambda files=files: apply_policy([tc("cat", files=files)], policy))
        assert shape(error) == rejected(
            "PATH_INVALID",
            "expected an object holding 'path'",
            where,
            "an object with 'path'",
            "give the arguments the shape the tool declares",
        )


# ---------------------------------------------------------------- plans


def _schema_tool(name: str) -> Tool:
    return Tool(name=name, parameters={"type": "object", "properties": {"path": {"type": "string"}}})


def test_a_plan_is_compiled_once_per_registry_version(ws: Path) -> None:
    registry = ToolRegistry([_schema_tool("cat")])
    policy = Policy(workspace=ws, tools={"cat": ToolRule(paths={"path": "read"})})
    first = policy.plan(registry)
    assert policy.plan(registry) is first
    registry.register(Tool(name="other"))
    second = policy.plan(registry)
    assert second is not first
    assert policy.plan(registry) is second


def test_a_look_alike_of_a_ruled_but_unregistered_tool_is_ambiguous() -> None:
    registry = ToolRegistry([Tool(name="other")])
    policy = Policy(tools={"write_file": ToolRule(allowed=False)})
    with pytest.raises(DomainError) as info:
        apply_policy([tc("Write_File")], policy, registry=registry)
    assert info.value.code == "AMBIGUOUS_TOOL_NAME"


def test_every_ruled_tool_is_fitted_to_its_schema(ws: Path) -> None:
    registry = ToolRegistry([Tool(name="loose"), _schema_tool("strict")])
    policy = Policy(
        workspace=ws,
        tools={
            "unregistered": ToolRule(paths={"path": "read"}),
            "loose": ToolRule(paths={"path": "read"}),
            "strict": ToolRule(paths={"nope": "read"}),
        },
    )
    with pytest.raises(ValueError, match=r"^the policy's path rule 'nope' for 'strict' does not fit the tool: "):
        policy.plan(registry)


def test_apply_policy_checks_names_against_the_registry() -> None:
    registry = ToolRegistry([Tool(name="read_file")])
    with pytest.raises(DomainError) as info:
        apply_policy([tc("READ_FILE")], Policy(), registry=registry)
    assert (info.value.code, info.value.path) == ("AMBIGUOUS_TOOL_NAME", "$.calls[0].name")


# ---------------------------------------------------------------- what a verdict and a batch hold


def test_a_denial_among_two_calls_lists_both(ws: Path) -> None:
    policy = Policy(workspace=ws, tools={"read_file": ToolRule(paths={"path": "read"})})
    calls = [tc(call_id="c1", path="src/main.py"), tc(call_id="c2", path="../outside")]
    error = refusal(lambda: apply_policy(calls, policy))
    assert (error.code, error.call_index, error.call_id) == ("PATH_OUTSIDE_WORKSPACE", 1, "c2")
    assert error.batch == (
        {"index": 0, "call_id": "c1", "tool": "read_file", "status": "not_run", "code": "BATCH_REJECTED"},
        {"index": 1, "call_id": "c2", "tool": "read_file", "status": "denied", "code": "PATH_OUTSIDE_WORKSPACE"},
    )


def test_an_allowed_verdict_holds_its_resolved_and_its_empty_paths(ws: Path) -> None:
    policy = Policy(workspace=ws, tools={"read_file": ToolRule(paths={"path": "read", "also": "read"})})
    (verdict,) = apply_policy([tc(path="src/main.py")], policy)
    assert verdict.status == "allowed"
    assert dict(verdict.paths) == {"$.calls[0].arguments.path": str(ws / "src" / "main.py")}
    assert verdict.empty_paths == ("$.calls[0].arguments.also",)


# ---------------------------------------------------------------- compiled once per registry


def _registry(field: str) -> ToolRegistry:
    class Args(BaseModel):
        model_config = ConfigDict(extra="forbid")

    fields = {field: (str, ...)}
    model = create_model("Args", __base__=Args, **fields)  # type: ignore[call-overload]
    return ToolRegistry([Tool(name="read_file", parameters=model, side_effects=False)])


def test_a_policy_is_compiled_once_per_registry(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    compiled: list[object] = []
    original = policy_module._Plan

    def counting(*args: Any) -> Any:
        compiled.append(args)
        return original(*args)

    monkeypatch.setattr(policy_module, "_Plan", counting)
    policy = Policy(workspace=ws, tools={"read_file": ToolRule(paths={"path": "read"})})
    first, second = _registry("path"), _registry("path")
    assert first.version == second.version
    compiled.clear()  # the rules alone were compiled with the policy
    plans = [policy.plan(r) for r in (first, first, second, first, second, first)]
    assert len(compiled) == 2
    assert plans[0] is plans[1] is plans[3] is plans[5] and plans[2] is plans[4] and plans[0] is not plans[2]


def test_a_registry_a_rule_does_not_fit_is_refused_after_one_it_fits(ws: Path) -> None:
    """A second registry of the same version is compiled on its own, not
    handed the first one's plan."""
    policy = Policy(workspace=ws, tools={"read_file": ToolRule(paths={"path": "read"})})
    policy.plan(_registry("path"))
    with pytest.raises(ValueError, match=r"^the policy's path rule 'path' for 'read_file' does not fit the tool"):
        policy.plan(_registry("file"))


def test_a_rule_for_a_look_alike_of_a_registered_tool_is_named() -> None:
    policy = Policy(tools={"Read_File": ToolRule()})
    with pytest.raises(ValueError) as info:
        policy.plan(_registry("path"))
    assert str(info.value) == "the policy has a rule for 'Read_File', but the tool is registered as 'read_file'"


def test_a_two_step_selector_reads_the_inner_field(ws: Path) -> None:
    policy = Policy(workspace=ws, tools={"cat": ToolRule(paths={"spec.file": "read"})})
    call = ToolCall(call_id="c", name="cat", arguments={"spec": {"file": "src/main.py"}})
    (verdict,) = apply_policy([call], policy)
    assert dict(verdict.paths) == {"$.calls[0].arguments.spec.file": str(ws / "src" / "main.py")}


def test_a_verdict_that_needs_approval_holds_its_paths_too(ws: Path) -> None:
    policy = Policy(
        workspace=ws, tools={"read_file": ToolRule(paths={"path": "read", "also": "read"}, approval="a person looks")}
    )
    (verdict,) = apply_policy([tc(path="src/main.py")], policy)
    assert (verdict.status, verdict.reasons) == ("needs_approval", ("a person looks",))
    assert dict(verdict.paths) == {"$.calls[0].arguments.path": str(ws / "src" / "main.py")}
    assert verdict.empty_paths == ("$.calls[0].arguments.also",)


def test_path_rules_for_a_custom_tool_are_refused_by_name(ws: Path) -> None:
    policy = Policy(workspace=ws, tools={"apply_patch": ToolRule(paths={"path": "write"})})
    registry = ToolRegistry([Tool(name="apply_patch", kind="custom")])
    with pytest.raises(ValueError) as info:
        policy.plan(registry)
    assert str(info.value) == "the policy has path rules for 'apply_patch', a custom tool whose input is text"
