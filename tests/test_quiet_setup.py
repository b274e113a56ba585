"""``make demo`` and ``make test`` show progress, not pip's chatter: every pip
the set-up runs is quiet, including the one ``maturin develop`` runs."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def _commands(*targets: str) -> list[str]:
    """The shell commands ``make`` would run for ``targets`` from scratch (nothing is run)."""
    out = subprocess.run(["make", "-n", "-B", *targets], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [line.strip() for line in out.replace("\\\n", " ").splitlines() if line.strip()]


def test_every_pip_of_the_setup_is_quiet() -> None:
    commands = _commands("venv", "build", "demo")
    pips = [c for c in commands if " pip install" in c or c.startswith("pip install")]
    assert pips and all("--quiet" in c or "-q " in c for c in pips), pips
    develop = [c for c in commands if "maturin develop" in c]
    assert develop and all("PIP_QUIET=1" in c and "--quiet" in c for c in develop), develop


def test_the_setup_says_what_it_is_doing() -> None:
    commands = _commands("venv", "build")
    assert any(c.startswith("echo ") and "setting up" in c for c in commands)
    assert any(c.startswith("echo ") and "building the extension" in c for c in commands)
