"""Build the pure-Python wheel (``py3-none-any``) of ``decisions``.

maturin always builds the Rust extension, so the wheel without it has its own
small build: this script stages ``python/decisions`` (minus any compiled
extension and the native stub) with a ``pyproject.toml`` whose ``[project]``
table is copied from the main one, then asks pip to build the stage with
hatchling. Where a binary wheel fits, pip prefers it; everywhere else (other
platforms, other interpreters, free-threaded CPython) this wheel installs and
``decisions.BACKEND`` is ``"pure"``.

Usage: ``python packaging/pure/build.py [--out DIR]`` (default ``dist/``).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "python" / "decisions"
#: Never shipped in the pure wheel: compiled extensions and their stub.
EXCLUDED_SUFFIXES = (".so", ".pyd", ".dylib", ".dll")
EXCLUDED_NAMES = ("_native.pyi", "__pycache__")
BUILD_SYSTEM = '[build-system]\nrequires = ["hatchling>=1.21"]\nbuild-backend = "hatchling.build"\n'
HATCH_TARGETS = '[tool.hatch.build.targets.wheel]\npackages = ["decisions"]\n'


def _toml_value(value: Any) -> str:
    """TOML for the plain values a ``[project]`` table holds (strings, lists, tables)."""
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a valid TOML basic string
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"unsupported value in [project]: {value!r}")


def pure_pyproject() -> str:
    """The stage's ``pyproject.toml``: the main ``[project]`` table with hatchling as backend."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    project = dict(project)
    project["classifiers"] = [c for c in project.get("classifiers", []) if "Rust" not in c]
    lines = [BUILD_SYSTEM, "[project]"]
    subtables = {k: v for k, v in project.items() if isinstance(v, dict) and k not in ("license", "readme")}
    for key, value in project.items():
        if key not in subtables:
            lines.append(f"{key} = {_toml_value(value)}")
    for key, table in subtables.items():
        lines.append(f"\n[project.{key}]")
        lines.extend(f"{json.dumps(k)} = {_toml_value(v)}" for k, v in table.items())
    lines.append("\n" + HATCH_TARGETS)
    return "\n".join(lines)


def _ignore(directory: str, names: list[str]) -> list[str]:
    return [n for n in names if n in EXCLUDED_NAMES or n.endswith(EXCLUDED_SUFFIXES)]


def stage(into: Path) -> Path:
    """Lay out the pure project in ``into`` and return it."""
    shutil.copytree(PACKAGE, into / "decisions", ignore=_ignore)
    shutil.copy2(ROOT / "README.md", into / "README.md")
    (into / "pyproject.toml").write_text(pure_pyproject(), encoding="utf-8")
    return into


def build(out: Path) -> Path:
    """Build the wheel into ``out`` and return its path."""
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="decisions-pure-") as tmp:
        project = stage(Path(tmp))
        before = set(out.glob("decisions-*-py3-none-any.whl"))
        for old in before:
            old.unlink()
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(out), str(project)],
            check=True,
        )
    wheels = sorted(out.glob("decisions-*-py3-none-any.whl"))
    if len(wheels) != 1:
        raise SystemExit(f"expected one pure wheel in {out}, found {[w.name for w in wheels]}")
    return wheels[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "dist", help="directory for the wheel")
    print(build(parser.parse_args().out))


if __name__ == "__main__":
    main()
