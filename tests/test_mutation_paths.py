"""Path selectors of more than one step that end on an array: every item is
a path argument, checked and named by its own index."""

from __future__ import annotations

from pathlib import Path

import pytest

from decisions import Policy, PolicyError, ToolCall, ToolRule
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
