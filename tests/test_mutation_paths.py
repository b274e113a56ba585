"""Path selectors of more than one step that end on an array: every item is
a path argument, checked and named by its own index."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from decisions import Policy, PolicyError, ToolCall, ToolRule
from decisions.validate import paths as paths_module
from decisions.validate.policy import apply_policy


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    return root


def test_a_nested_selector_ending_on_an_array_checks_every_item(ws: Path) -> None:
    policy = Policy(workspace=ws, tools={"cat": ToolRule(paths={"spec.files": "read"})})
    call = ToolCall(call_id="c", name="cat", arguments={"spec": {"files": ["src/a.py", "src/b.py"]}})
    (verdict,) = apply_policy([call], policy)
    assert dict(verdict.paths) == {
        "$.calls[0].arguments.spec.files[0]": str(ws / "src" / "a.py"),
        "$.calls[0].arguments.spec.files[1]": str(ws / "src" / "b.py"),
    }
    outside = ToolCall(call_id="c", name="cat", arguments={"spec": {"files": ["src/a.py", "../x"]}})
    with pytest.raises(PolicyError) as info:
        apply_policy([outside], policy)
    assert (info.value.code, info.value.path) == ("PATH_OUTSIDE_WORKSPACE", "$.calls[0].arguments.spec.files[1]")


@pytest.mark.parametrize("join_realpath", ["CPython's", "none (another Python or OS)"])
def test_a_path_through_a_symlink_resolves_as_realpath_does(
    ws: Path, monkeypatch: pytest.MonkeyPatch, join_realpath: str
) -> None:
    """Where CPython's realpath step is missing, the whole joined path is
    resolved by ``os.path.realpath``: the same answers either way."""
    if join_realpath != "CPython's":
        monkeypatch.setattr(paths_module, "_JOIN_REALPATH", None)
    (ws / "src" / "real.py").write_text("x\n")
    (ws / "src" / "link.py").symlink_to(ws / "src" / "real.py")
    (ws / "escape").symlink_to(ws.parent)
    policy = Policy(workspace=ws, tools={"cat": ToolRule(paths={"path": "read"})})
    for raw in ("src/link.py", "./src/../src/link.py", "src/link.py/../real.py"):
        (verdict,) = apply_policy([ToolCall(call_id="c", name="cat", arguments={"path": raw})], policy)
        assert dict(verdict.paths) == {"$.calls[0].arguments.path": os.path.realpath(ws / raw)}, raw
    with pytest.raises(PolicyError) as info:
        apply_policy([ToolCall(call_id="c", name="cat", arguments={"path": "escape/x"})], policy)
    assert info.value.code == "PATH_OUTSIDE_WORKSPACE"


@pytest.mark.parametrize("arguments", [["src/a.py"], "src/a.py", 7])
def test_arguments_that_are_not_an_object_are_named_where_the_field_is_missing(ws: Path, arguments: object) -> None:
    """A hand-built call whose arguments are no object: the one-field
    selector's shortcut gives the same error as the walk."""
    policy = Policy(workspace=ws, tools={"cat": ToolRule(paths={"path": "read"})})
    with pytest.raises(PolicyError) as info:
        apply_policy([ToolCall(call_id="c", name="cat", arguments=arguments)], policy)  # type: ignore[arg-type]
    assert (info.value.code, info.value.path, info.value.message) == (
        "PATH_INVALID",
        "$.calls[0].arguments",
        "expected an object holding 'path'",
    )
