"""Policy: paths checked after resolution, scopes, approvals, cancellation,
replay, state checks and batches."""

from __future__ import annotations

import itertools
import json
import os
import threading
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

from decide_helpers import both_paths, call, needs_loads, response, text
from decisions import (
    PathArg,
    Policy,
    PolicyError,
    Run,
    Tool,
    ToolCall,
    ToolDecision,
    ToolRegistry,
    ToolRule,
    apply_policy,
    decide,
    resolve_path,
)
from decisions.validate import policy as policy_module

pytestmark = both_paths


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "src" / "main.py").write_text("print(1)\n")
    (tmp_path / "secret.txt").write_text("key")
    (tmp_path / "ws-evil").mkdir()
    (tmp_path / "ws-evil" / "x.txt").write_text("x")
    return root


def _root(workspace: Path) -> str:
    return os.path.realpath(workspace)


# ---------------------------------------------------------------- resolve_path


@pytest.mark.parametrize(
    "raw",
    [
        "../secret.txt",
        "a/../../secret.txt",
        "src/../../secret.txt",
        "/etc/passwd",
        "../ws-evil/x.txt",
        "..",
    ],
)
def test_paths_that_leave_the_workspace(workspace: Path, raw: str) -> None:
    with pytest.raises(PolicyError) as info:
        resolve_path(_root(workspace), raw, path="$.calls[0].arguments.path")
    assert info.value.code == "PATH_OUTSIDE_WORKSPACE"
    assert info.value.path == "$.calls[0].arguments.path"


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "   ",
        "a\x00b",
        "~/.ssh/id_rsa",
        "~root/x",
        "C:\\Windows\\x",
        "c:/x",
        "\\\\server\\share\\x",
        "//server/share/x",
        "src\\..\\..\\secret.txt",
        3,
        None,
        ["a"],
        {"p": "a"},
    ],
)
def test_malformed_paths(workspace: Path, raw: object) -> None:
    with pytest.raises(PolicyError) as info:
        resolve_path(_root(workspace), raw)
    assert info.value.code == "PATH_INVALID"


@pytest.mark.parametrize("raw", ["src/main.py", "./src/main.py", "src/../docs/new.md", "docs/not/yet/there.md", "."])
def test_paths_inside_resolve(workspace: Path, raw: str) -> None:
    resolved = resolve_path(_root(workspace), raw)
    assert resolved == os.path.realpath(workspace / raw)


def test_an_absolute_path_inside_the_workspace_is_accepted(workspace: Path) -> None:
    inside = str(workspace / "src" / "main.py")
    assert resolve_path(_root(workspace), inside) == os.path.realpath(inside)


def test_the_lexical_check_that_is_relative_to_gets_wrong(workspace: Path) -> None:
    raw = f"{workspace}/../secret.txt"
    assert PurePosixPath(raw).is_relative_to(workspace)  # the lexical check is fooled
    with pytest.raises(PolicyError) as info:
        resolve_path(_root(workspace), raw)
    assert info.value.code == "PATH_OUTSIDE_WORKSPACE"


def test_a_sibling_sharing_the_roots_prefix_is_outside(workspace: Path) -> None:
    sibling = str(workspace) + "-evil/x.txt"
    assert sibling.startswith(str(workspace))  # a string prefix check is fooled
    with pytest.raises(PolicyError) as info:
        resolve_path(_root(workspace), sibling)
    assert info.value.code == "PATH_OUTSIDE_WORKSPACE"


def test_symlinks_leading_out_are_refused(workspace: Path) -> None:
    outside = workspace.parent
    (workspace / "link_file").symlink_to(outside / "secret.txt")
    (workspace / "link_dir").symlink_to(outside, target_is_directory=True)
    (workspace / "dangling").symlink_to(outside / "does-not-exist")
    (workspace / "src" / "up").symlink_to("../..", target_is_directory=True)
    for raw in ("link_file", "link_dir/secret.txt", "dangling", "src/up/secret.txt", "src/up/ws-evil/x.txt"):
        with pytest.raises(PolicyError) as info:
            resolve_path(_root(workspace), raw)
        assert info.value.code == "PATH_OUTSIDE_WORKSPACE", raw
    # judged by where it lands: out through a link and back in is inside
    assert resolve_path(_root(workspace), "link_dir/ws/src/main.py") == os.path.realpath(workspace / "src/main.py")


def test_symlinks_staying_inside_resolve_to_their_target(workspace: Path) -> None:
    (workspace / "alias").symlink_to(workspace / "src", target_is_directory=True)
    assert resolve_path(_root(workspace), "alias/main.py") == os.path.realpath(workspace / "src" / "main.py")


def test_a_workspace_reached_through_a_symlink(tmp_path: Path, workspace: Path) -> None:
    link = tmp_path / "ws-link"
    link.symlink_to(workspace, target_is_directory=True)
    policy = Policy(workspace=link, tools={"read_file": ToolRule(paths={"path": "read"})})
    assert policy.root == os.path.realpath(workspace)


# ---------------------------------------------------------------- Policy construction


def test_a_policy_with_path_rules_needs_a_workspace(tmp_path: Path, workspace: Path) -> None:
    with pytest.raises(ValueError):
        Policy(tools={"read_file": ToolRule(paths={"path": "read"})})
    with pytest.raises(ValueError):
        Policy(workspace=tmp_path / "missing")
    with pytest.raises(ValueError):
        Policy(workspace=workspace, write_scopes=("../elsewhere",))
    with pytest.raises(ValueError):
        Policy(batch="some")  # type: ignore[arg-type]


# ---------------------------------------------------------------- through decide

WRITE = ToolRule(paths={"path": "write"})


def _policy(workspace: Path, **kwargs: object) -> Policy:
    tools = kwargs.pop("tools", {"read_file": ToolRule(paths={"path": "read"}), "write_file": WRITE})
    return Policy(workspace=workspace, tools=tools, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"write_scopes": "src"},
        {"read_scopes": "src"},
        {"tools": {"w": ToolRule(write_scopes="src")}},  # type: ignore[arg-type]
        {"tools": {"w": ToolRule(paths={"path": PathArg("write", scopes="src")})}},  # type: ignore[arg-type]
        {"write_scopes": (1,)},
    ],
)
def test_scopes_given_as_a_string_are_refused(workspace: Path, kwargs: dict[str, Any]) -> None:
    """``"src"`` would be the scopes ``s``, ``r`` and ``c``."""
    with pytest.raises(ValueError, match="scopes must be a tuple of paths"):
        Policy(workspace=workspace, **kwargs)


@needs_loads
def test_decide_checks_paths_after_resolution(workspace: Path) -> None:
    policy = _policy(workspace)
    bad = call(arguments=json.dumps({"path": "src/../../secret.txt"}))
    with pytest.raises(PolicyError) as info:
        decide(response(bad), policy=policy)
    assert info.value.code == "PATH_OUTSIDE_WORKSPACE"
    assert info.value.path == "$.calls[0].arguments.path"
    good = decide(response(call(arguments='{"path": "src/../src/main.py"}')), policy=policy)
    assert isinstance(good, ToolDecision) and good.executable
    assert dict(good.verdicts[0].paths) == {"$.calls[0].arguments.path": os.path.realpath(workspace / "src/main.py")}


@needs_loads
def test_read_and_write_scopes(workspace: Path) -> None:
    policy = _policy(workspace, write_scopes=("docs",))
    write_src = call(name="write_file", arguments='{"path": "src/main.py", "content": "x"}')
    with pytest.raises(PolicyError) as info:
        decide(response(write_src), policy=policy)
    assert info.value.code == "SCOPE_DENIED"
    write_docs = call(name="write_file", arguments='{"path": "docs/new.md", "content": "x"}')
    assert decide(response(write_docs), policy=policy).executable  # type: ignore[union-attr]
    assert decide(response(call(arguments='{"path": "src/main.py"}')), policy=policy).executable  # type: ignore[union-attr]
    # a scope that shares a prefix with the target is not a parent of it
    policy_doc = _policy(workspace, write_scopes=("doc",))
    with pytest.raises(PolicyError):
        decide(response(write_docs), policy=policy_doc)


@needs_loads
def test_no_write_scope_by_default(workspace: Path) -> None:
    write_docs = call(name="write_file", arguments='{"path": "docs/new.md"}')
    with pytest.raises(PolicyError) as info:
        decide(response(write_docs), policy=_policy(workspace))
    assert info.value.code == "SCOPE_DENIED"


@needs_loads
def test_per_tool_and_per_argument_scopes(workspace: Path) -> None:
    rules = {
        "copy": ToolRule(
            paths={"source": "read", "target": PathArg("write", scopes=("docs/out",))}, read_scopes=("src",)
        ),
    }
    policy = Policy(workspace=workspace, tools=rules, write_scopes=("",))
    ok = call(name="copy", arguments='{"source": "src/main.py", "target": "docs/out/main.py"}')
    assert decide(response(ok), policy=policy).executable  # type: ignore[union-attr]
    for args, where in (
        ('{"source": "docs/a.md", "target": "docs/out/a.md"}', "$.calls[0].arguments.source"),
        ('{"source": "src/main.py", "target": "docs/a.md"}', "$.calls[0].arguments.target"),
    ):
        with pytest.raises(PolicyError) as info:
            decide(response(call(name="copy", arguments=args)), policy=policy)
        assert (info.value.code, info.value.path) == ("SCOPE_DENIED", where)


@needs_loads
def test_an_array_of_paths_is_checked_item_by_item(workspace: Path) -> None:
    policy = Policy(workspace=workspace, tools={"read_many": ToolRule(paths={"paths": "read"})})
    ok = decide(response(call(name="read_many", arguments='{"paths": ["src/main.py", "docs"]}')), policy=policy)
    assert len(ok.verdicts[0].paths) == 2  # type: ignore[union-attr]
    with pytest.raises(PolicyError) as info:
        decide(response(call(name="read_many", arguments='{"paths": ["src/main.py", "../secret.txt"]}')), policy=policy)
    assert info.value.path == "$.calls[0].arguments.paths[1]"


@needs_loads
def test_approval_marks_the_decision_not_executable(workspace: Path) -> None:
    tools = {"write_file": ToolRule(paths={"path": "write"}, approval="writes need a human"), "read_file": ToolRule()}
    policy = Policy(workspace=workspace, tools=tools, write_scopes=("docs",))
    items = (
        call(name="read_file", call_id="r"),
        call(name="write_file", arguments='{"path": "docs/a.md"}', call_id="w"),
    )
    decision = decide(response(*items), policy=policy)
    assert isinstance(decision, ToolDecision)
    assert not decision.executable and decision.needs_approval
    assert decision.executable_calls == ()
    assert [c.call_id for c in decision.pending_approval] == ["w"]
    assert decision.verdict("w").reasons == ("writes need a human",)
    approved = decision.approve("w", approver="alice")
    assert approved.executable and approved.verdict("w").approved_by == "alice"
    assert not decision.executable  # the original is unchanged
    with pytest.raises(ValueError):
        approved.approve("r")
    with pytest.raises(KeyError):
        decision.approve("nope")


@needs_loads
def test_an_approval_callback(workspace: Path) -> None:
    policy = Policy(approval=lambda c: "large write" if len(c.arguments.get("content", "")) > 10 else None)
    small = decide(response(call(name="write_file", arguments='{"content": "hi"}')), policy=policy)
    large = decide(response(call(name="write_file", arguments='{"content": "' + "x" * 20 + '"}')), policy=policy)
    assert small.executable and not large.executable  # type: ignore[union-attr]
    assert large.approve().executable  # type: ignore[union-attr]


@needs_loads
def test_a_failing_approval_callback_asks_for_approval() -> None:
    def broken(c: ToolCall) -> str | None:
        raise KeyError("content")

    decision = decide(response(call()), policy=Policy(approval=broken))
    assert isinstance(decision, ToolDecision) and decision.needs_approval
    assert decision.verdicts[0].reasons == ("the approval check raised KeyError",)


@needs_loads
def test_a_cancelled_run_executes_nothing() -> None:
    run = Run("run_42")
    run.cancel()
    with pytest.raises(PolicyError) as info:
        decide(response(call()), run=run)
    assert info.value.code == "RUN_CANCELLED"


@needs_loads
def test_a_replayed_call_id_is_decided_once() -> None:
    run = Run()
    first = decide(response(call(call_id="call_7")), run=run)
    assert isinstance(first, ToolDecision) and run.decided("call_7")
    with pytest.raises(PolicyError) as info:
        decide(response(call(call_id="call_7")), run=run)
    assert info.value.code == "CALL_ALREADY_DECIDED"
    assert decide(response(call(call_id="call_8")), run=Run()).executable  # type: ignore[union-attr]


@needs_loads
def test_a_failed_decision_claims_no_call_id(workspace: Path) -> None:
    run = Run()
    with pytest.raises(PolicyError):
        decide(response(call(arguments='{"path": "../x"}', call_id="c")), run=run, policy=_policy(workspace))
    assert not run.decided("c")


@needs_loads
def test_concurrent_replays_give_one_decision() -> None:
    run = Run()
    outcomes: list[str] = []
    barrier = threading.Barrier(8)

    def attempt() -> None:
        barrier.wait()
        try:
            decide(response(call(call_id="same")), run=run)
            outcomes.append("decided")
        except PolicyError as error:
            outcomes.append(error.code)

    threads = [threading.Thread(target=attempt) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["CALL_ALREADY_DECIDED"] * 7 + ["decided"]


@needs_loads
def test_repeated_call_ids_in_one_response() -> None:
    with pytest.raises(PolicyError) as info:
        decide(response(call(call_id="x"), call(call_id="x")))
    assert info.value.code == "CALL_ALREADY_DECIDED"


@needs_loads
@pytest.mark.parametrize("outcome", [False, "the branch is locked", RuntimeError("boom")])
def test_the_state_check_refuses(outcome: object) -> None:
    seen: list[ToolCall] = []

    def check(c: ToolCall) -> bool | str | None:
        seen.append(c)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome  # type: ignore[return-value]

    with pytest.raises(PolicyError) as info:
        decide(response(call()), policy=Policy(state_check=check))
    assert info.value.code == "STATE_CHECK_FAILED"
    assert seen and seen[0].arguments == {"path": "a.txt"}
    if isinstance(outcome, str):
        assert outcome in info.value.message


class _FalseFlag:
    """A falsy result that is not ``False`` (numpy's ``bool_``, say)."""

    def __bool__(self) -> bool:
        return False


@needs_loads
@pytest.mark.parametrize("outcome", [0, 1, [], _FalseFlag(), PolicyError("STATE_CHECK_FAILED")])
def test_a_state_check_that_returns_something_else_refuses(outcome: object) -> None:
    """Only None and True allow: a result of any other kind is not read as
    a yes (fail closed), and the refusal names its type."""
    with pytest.raises(PolicyError) as info:
        decide(response(call()), policy=Policy(state_check=lambda c: outcome))  # type: ignore[arg-type,return-value]
    assert info.value.code == "STATE_CHECK_FAILED"
    assert type(outcome).__name__ in info.value.message


@needs_loads
@pytest.mark.parametrize("outcome", [None, True])
def test_the_state_check_allows(outcome: object) -> None:
    assert decide(response(call()), policy=Policy(state_check=lambda c: outcome)).executable  # type: ignore[arg-type,return-value,union-attr]


@needs_loads
def test_tools_denied_by_policy() -> None:
    with pytest.raises(PolicyError) as info:
        decide(response(call(name="shell")), policy=Policy(default="deny", tools={"read_file": ToolRule()}))
    assert (info.value.code, info.value.path) == ("TOOL_DENIED", "$.calls[0].name")
    with pytest.raises(PolicyError):
        decide(response(call()), policy=Policy(tools={"read_file": ToolRule(allowed=False)}))


@needs_loads
def test_a_repaired_call_may_not_have_side_effects() -> None:
    registry = ToolRegistry([Tool(name="read_file", side_effects=False), Tool(name="write_file")])
    assert decide(response(call()), tools=registry, repaired=True).executable  # type: ignore[union-attr]
    with pytest.raises(PolicyError) as info:
        decide(response(call(name="write_file")), tools=registry, repaired=True)
    assert info.value.code == "REPAIRED_CALL_REFUSED"
    with pytest.raises(PolicyError):  # without a registry nothing is known to be read-only
        decide(response(call()), repaired=True)


#: One bad call of each policy code, and the path its error names (relative to the call).
BAD_CALLS = [
    ("read_file", '{"path": "../secret.txt"}', "PATH_OUTSIDE_WORKSPACE", ".arguments.path"),
    ("read_file", '{"path": "~/x"}', "PATH_INVALID", ".arguments.path"),
    ("write_file", '{"path": "src/x.py"}', "SCOPE_DENIED", ".arguments.path"),
    ("delete_all", "{}", "TOOL_DENIED", ".name"),
]


@needs_loads
@pytest.mark.parametrize("size", [1, 2, 3, 5])
@pytest.mark.parametrize("bad", BAD_CALLS, ids=[b[2] for b in BAD_CALLS])
def test_a_refused_call_raises_its_own_code_whatever_the_batch_size(
    workspace: Path, size: int, bad: tuple[str, str, str, str]
) -> None:
    name, arguments, code, where = bad
    for position in range(size):
        items = [call(arguments='{"path": "src/main.py"}', call_id=f"c{i}") for i in range(size)]
        items[position] = call(name=name, arguments=arguments, call_id=f"c{position}")
        with pytest.raises(PolicyError) as info:
            decide(response(*items), policy=_policy(workspace, default="deny"))
        error = info.value
        assert error.code == code, (size, position)
        assert error.path == f"$.calls[{position}]{where}"
        assert (error.call_index, error.call_id, error.tool) == (position, f"c{position}", name)
        assert error.__cause__ is None and all(issue["code"] != "batch_rejected" for issue in error.issues)
        if size == 1:
            assert error.batch == ()
        else:
            assert [(e["index"], e["call_id"], e["status"], e["code"]) for e in error.batch] == [
                (i, f"c{i}", "denied", code) if i == position else (i, f"c{i}", "not_run", "BATCH_REJECTED")
                for i in range(size)
            ]


@needs_loads
def test_a_batch_lists_every_denied_call_and_raises_the_first(workspace: Path) -> None:
    items = (
        call(arguments='{"path": "src/main.py"}', call_id="a"),
        call(arguments='{"path": "../secret.txt"}', call_id="b"),
        call(arguments='{"path": "~/x"}', call_id="c"),
    )
    with pytest.raises(PolicyError) as info:
        decide(response(*items), policy=_policy(workspace))
    error = info.value
    assert (error.code, error.call_id, error.path) == ("PATH_OUTSIDE_WORKSPACE", "b", "$.calls[1].arguments.path")
    assert [(e["call_id"], e["tool"], e["status"], e["code"]) for e in error.batch] == [
        ("a", "read_file", "not_run", "BATCH_REJECTED"),
        ("b", "read_file", "denied", "PATH_OUTSIDE_WORKSPACE"),
        ("c", "read_file", "denied", "PATH_INVALID"),
    ]
    per_call = decide(response(*items), policy=_policy(workspace, batch="per_call"))
    assert isinstance(per_call, ToolDecision)
    denied = [v.error for v in per_call.verdicts if v.error is not None]
    assert [(e.code, e.call_index, e.call_id, e.tool) for e in denied] == [
        ("PATH_OUTSIDE_WORKSPACE", 1, "b", "read_file"),
        ("PATH_INVALID", 2, "c", "read_file"),
    ]


@needs_loads
def test_per_call_batches_keep_the_good_calls(workspace: Path) -> None:
    items = (call(arguments='{"path": "src/main.py"}', call_id="a"), call(arguments='{"path": "~/x"}', call_id="b"))
    decision = decide(response(text("reading"), *items), policy=_policy(workspace, batch="per_call"))
    assert isinstance(decision, ToolDecision)
    assert not decision.executable
    assert [c.call_id for c in decision.executable_calls] == ["a"]
    verdict = decision.verdict("b")
    assert verdict.status == "denied" and verdict.error is not None and verdict.error.code == "PATH_INVALID"


@needs_loads
def test_per_call_replays_are_denied_individually() -> None:
    run = Run()
    decide(response(call(call_id="old")), run=run)
    decision = decide(response(call(call_id="old"), call(call_id="new")), run=run, policy=Policy(batch="per_call"))
    assert [v.status for v in decision.verdicts] == ["denied", "allowed"]  # type: ignore[union-attr]
    assert run.decided("new")


def test_resolving_under_the_workspace_equals_realpath(tmp_path: Path) -> None:
    """The policy resolves only the argument's own components from the
    resolved workspace; every symlink is still followed, as realpath does."""
    from decisions.validate.paths import _resolve_under

    root = tmp_path / "ws"
    outside = tmp_path / "outside"
    (root / "src" / "deep").mkdir(parents=True)
    outside.mkdir()
    (root / "up").symlink_to("..")
    (root / "abs").symlink_to(outside)
    (root / "src" / "rel").symlink_to("deep/../..")
    (root / "loop").symlink_to("loop2")
    (root / "loop2").symlink_to("loop")
    (root / "chain").symlink_to("src/rel/abs")
    real = os.path.realpath(root)
    for raw in [
        "src/main.py",
        "./src/../src/deep/x",
        "up/outside/secret",
        "abs/secret",
        "src/rel/src",
        "loop/x",
        "chain/y",
        "missing/../../x",
        "src/deep/../../..",
        "",
        ".",
    ]:
        assert _resolve_under(real, raw) == os.path.realpath(os.path.join(real, raw)), raw
    (root / "src" / "file").write_text("x")
    (root / "dangling").symlink_to("nowhere/at/all")
    (root / "src" / "deep" / "back").symlink_to("../../src")
    # every path of up to three components from these names, with and
    # without a trailing slash: symlinks before, after and under missing,
    # file and '..' components
    names = ["src", "deep", "file", "missing", "..", ".", "", "up", "abs", "rel", "back", "dangling", "loop"]
    for a, b, c in itertools.product(names, repeat=3):
        for raw in (f"{a}/{b}/{c}", f"{a}/{b}/{c}/", f"{a}//{b}"):
            assert _resolve_under(real, raw) == os.path.realpath(os.path.join(real, raw)), raw
    assert _resolve_under("/", "tmp/../..") == os.path.realpath("/tmp/../..")


@pytest.mark.parametrize("raw", ["loop/../../x", "loop/../../ws-old/x", "src/../loop/.."])
def test_a_symlink_loop_does_not_hide_a_way_out(tmp_path: Path, raw: str) -> None:
    """realpath leaves the rest of a path after a symlink loop as written;
    its last step normalises it, so '..' after the loop counts: the path is
    judged where it points, not where it is spelt."""
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "loop").symlink_to("loop")
    real = os.path.realpath(root)
    expected = os.path.realpath(os.path.join(real, raw))
    if expected == real or expected.startswith(real + os.sep):
        assert resolve_path(real, raw) == expected
    else:
        with pytest.raises(PolicyError) as info:
            resolve_path(real, raw)
        assert info.value.code == "PATH_OUTSIDE_WORKSPACE"


# ---------------------------------------------------------------- open calls


def _open_cases(workspace: Path) -> list[tuple[Policy, list[ToolCall]]]:
    """Policies and batches that leave every call as it is (no rule for any of its tools)."""
    ruled = Policy(workspace=workspace, tools={"write_file": ToolRule(paths={"path": "write"}, approval=True)})
    calls = [
        ToolCall(call_id="c1", name="read_file", arguments={"path": "../x"}),
        ToolCall(call_id="c2", name="grep", arguments={}, index=1, validated={"path": "/etc"}),
    ]
    return [
        (Policy(), calls[:1]),
        (Policy(), calls),
        (Policy(batch="per_call"), calls),
        (Policy(workspace=workspace, read_scopes=("src",)), calls),
        (ruled, calls),
    ]


def test_open_calls_get_the_verdicts_the_checks_give(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch no rule applies to skips the per-call checks (``_open``): each
    verdict is the one :func:`_check_call` gives the same call."""
    cases = _open_cases(workspace)
    assert all(policy_module._open(calls, policy, None, False) for policy, calls in cases)
    fast = [apply_policy(calls, policy) for policy, calls in cases]
    monkeypatch.setattr(policy_module, "_open", lambda *args: False)
    general = [apply_policy(calls, policy) for policy, calls in cases]
    assert fast == general
    for fast_verdicts, general_verdicts in zip(fast, general):
        for one, other in zip(fast_verdicts, general_verdicts):
            assert type(one.paths) is type(other.paths) and type(one.reasons) is type(other.reasons)


def test_open_calls_still_refuse_a_repeated_call_id() -> None:
    calls = [ToolCall(call_id="c1", name="grep", arguments={}), ToolCall(call_id="c1", name="grep", arguments={})]
    with pytest.raises(PolicyError) as caught:
        apply_policy(calls, Policy())
    assert caught.value.code == "CALL_ALREADY_DECIDED" and caught.value.path == "$.calls"


@pytest.mark.parametrize(
    "policy, run, repaired",
    [
        (Policy(default="deny"), None, False),
        (Policy(tools={"grep": ToolRule(allowed=False)}), None, False),
        (Policy(tools={"grep": ToolRule(approval=True)}), None, False),
        (Policy(approval=lambda call: "ask"), None, False),
        (Policy(state_check=lambda call: False), None, False),
        (Policy(), Run(), False),
        (Policy(), None, True),
    ],
)
def test_calls_with_something_to_check_are_checked(policy: Policy, run: Run | None, repaired: bool) -> None:
    calls = [ToolCall(call_id="c1", name="grep", arguments={})]
    assert not policy_module._open(calls, policy, run, repaired)
