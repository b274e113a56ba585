"""Download the runtime dependencies' wheels (``[project].dependencies`` of
pyproject.toml) into a directory beside the package's own wheels, so that
``pip install --no-index --find-links dist decisions`` works in a fresh
virtual environment. Used by ``make wheels`` and tests/test_wheels.py."""

from __future__ import annotations

import argparse
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def dependencies() -> list[str]:
    """The runtime requirements, as pyproject.toml states them."""
    with (ROOT / "pyproject.toml").open("rb") as handle:
        requirements: list[str] = tomllib.load(handle)["project"]["dependencies"]
    return requirements


def download(out: Path) -> None:
    """Their wheels (and their own dependencies') for this interpreter, into ``out``."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--only-binary",
            ":all:",
            "--dest",
            str(out),
            *dependencies(),
        ],
        check=True,
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=ROOT / "dist")
    download(parser.parse_args().out)
