"""What a type checker sees: the README's typed block passes ``mypy --strict``
(typed re-exports, the ``Decision`` union narrowed by ``kind``), and a
mistake the types should catch is caught."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import decisions

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
TYPED = [b for b in re.findall(r"^```python\n(.*?)^```$", README, re.M | re.S) if "assert_type" in b]

pytest.importorskip("mypy")


def _mypy(tmp_path: Path, source: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "typed_example.py"
    path.write_text(source, encoding="utf-8")
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-incremental",
            "--cache-dir",
            str(tmp_path / "cache"),
            str(path),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_readme_typed_block_passes_mypy_strict(tmp_path: Path) -> None:
    assert len(TYPED) == 1
    out = _mypy(tmp_path, TYPED[0])
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_public_names_are_not_any(tmp_path: Path) -> None:
    probe = """
import decisions
reveal_type(decisions.loads)
reveal_type(decisions.StreamAssembler)
reveal_type(decisions.normalize)
reveal_type(decisions.SSEDecoder)
def f(d: decisions.Decision) -> None:
    if d.kind == "final":
        d.calls  # a FinalDecision has no calls: mypy must say so
"""
    out = _mypy(tmp_path, probe)
    text = out.stdout
    revealed = [line for line in text.splitlines() if "Revealed type" in line]
    assert len(revealed) == 4 and all('"def (' in line for line in revealed), text  # signatures, not Any
    assert (
        "-> decisions.detect.StreamAssembler" in revealed[1] and "-> decisions.types.NormalizedResponse" in revealed[2]
    )
    assert '"FinalDecision" has no attribute "calls"' in text


def test_help_of_decision_is_its_own() -> None:
    import pydoc

    page = pydoc.render_doc(decisions.Decision)
    assert "ToolDecision | FinalDecision" in page and "Union[X, Y] means either X or Y" not in page
