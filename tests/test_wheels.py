"""Both wheels, each installed into its own fresh virtual environment.

``maturin build --release`` gives the binary wheel, ``packaging/pure/build.py``
the ``py3-none-any`` one. Each is installed with ``--no-deps`` into a new venv
whose runtime dependencies come from the test environment (a ``.pth`` line, so
nothing is downloaded), then imported and smoke-tested there. Marked ``wheels``
(deselect with ``-m "not wheels"``); it runs once, in the native pass of
``make test``.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

import decisions

ROOT = Path(__file__).resolve().parent.parent
PURE_RUN = os.environ.get("DECISIONS_PURE", "").strip().lower() not in ("", "0", "false", "no")

pytestmark = [
    pytest.mark.wheels,
    pytest.mark.skipif(PURE_RUN, reason="built and checked once, in the native pass"),
]

#: Run inside each fresh venv: which backend, from where, and a real job.
SMOKE = r"""
import json, sys, decisions, decisions.cli
from decisions import loads, ParseError
assert decisions.__file__.startswith(sys.prefix), decisions.__file__
assert loads('{"path": "a.txt", "n": [1, 2.5, null]}') == {"path": "a.txt", "n": [1, 2.5, None]}
try:
    loads('{"pattern": "\\d+"}')
except ParseError as error:
    code = error.code
else:
    raise AssertionError("invalid escape accepted")
print(json.dumps({"backend": decisions.BACKEND, "escape": code, "version": decisions.__version__}))
"""


def _build_wheels(out: Path) -> dict[str, Path]:
    env = dict(
        os.environ, VIRTUAL_ENV=sys.prefix, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    )
    maturin = shutil.which("maturin", path=env["PATH"])
    assert maturin, "maturin is not installed in the test environment"
    subprocess.run(
        [maturin, "build", "--release", "--quiet", "--interpreter", sys.executable, "--out", str(out)],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
    )
    subprocess.run([sys.executable, str(ROOT / "packaging" / "pure" / "build.py"), "--out", str(out)], check=True)
    binary = [w for w in out.glob("decisions-*.whl") if not w.name.endswith("-py3-none-any.whl")]
    pure = list(out.glob("decisions-*-py3-none-any.whl"))
    assert len(binary) == 1 and len(pure) == 1, sorted(w.name for w in out.iterdir())
    return {"native": binary[0], "pure": pure[0]}


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return _build_wheels(tmp_path_factory.mktemp("wheels"))


def _fresh_venv(where: Path, wheel: Path) -> Path:
    """A new venv holding only ``wheel``; runtime deps resolve from this environment."""
    venv.EnvBuilder(with_pip=False).create(where)
    python = where / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    # Dependencies (pydantic, jsonschema, ...) from the test venv, after the venv's own packages.
    (site / "zz_test_deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--quiet",
            "--no-deps",
            "--no-index",
            "--force-reinstall",  # the .pth makes the test env's own (editable) decisions look installed
            str(wheel),
        ],
        check=True,
    )
    return python


def _names(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        return archive.namelist()


def test_binary_wheel_holds_the_extension_and_its_stub(wheels: dict[str, Path]) -> None:
    names = _names(wheels["native"])
    assert any(n.startswith("decisions/_native.") and n.endswith(".so") for n in names)
    assert "decisions/_native.pyi" in names and "decisions/py.typed" in names
    assert any(n.startswith("decisions/examples/") for n in names), "bundled examples missing"


def test_pure_wheel_has_no_extension(wheels: dict[str, Path]) -> None:
    names = _names(wheels["pure"])
    assert wheels["pure"].name == f"decisions-{decisions.__version__}-py3-none-any.whl"
    assert not [n for n in names if n.endswith((".so", ".pyd", ".dylib", ".pyi"))]
    assert "decisions/py.typed" in names and "decisions/_pure/__init__.py" in names
    assert any(n.startswith("decisions/examples/") for n in names), "bundled examples missing"
    with zipfile.ZipFile(wheels["pure"]) as archive:
        meta = archive.read(f"decisions-{decisions.__version__}.dist-info/METADATA").decode()
        entry_points = archive.read(f"decisions-{decisions.__version__}.dist-info/entry_points.txt").decode()
    assert "Requires-Python: >=3.11" in meta
    assert "decisions = decisions.cli:main" in entry_points


@pytest.mark.parametrize("kind", ["native", "pure"])
def test_wheel_installs_and_runs_in_a_fresh_venv(kind: str, wheels: dict[str, Path], tmp_path: Path) -> None:
    python = _fresh_venv(tmp_path / "venv", wheels[kind])
    env = {k: v for k, v in os.environ.items() if k not in ("DECISIONS_PURE", "PYTHONPATH", "VIRTUAL_ENV")}
    out = subprocess.run([str(python), "-I", "-c", SMOKE], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report == {"backend": kind, "escape": "INVALID_ESCAPE", "version": decisions.__version__}
    # The console script runs the main job over the bundled examples.
    script = tmp_path / "venv" / "bin" / "decisions"
    inspect = subprocess.run([str(script), "inspect", "--json"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert inspect.returncode == 0, inspect.stderr  # 0: each example gave the outcome it shows
    results = json.loads(inspect.stdout)
    assert results["backend"] == kind and len(results["examples"]) == 6 and results["all_as_expected"]


def test_free_threaded_cpython_selects_the_pure_twin() -> None:
    """No free-threaded interpreter on this machine: the selector's check is
    exercised by reporting a ``Py_GIL_DISABLED`` build to it."""
    code = (
        "import sysconfig\n"
        "real = sysconfig.get_config_var\n"
        "sysconfig.get_config_var = lambda name: 1 if name == 'Py_GIL_DISABLED' else real(name)\n"
        "import decisions\nprint(decisions.BACKEND)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "DECISIONS_PURE"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "pure"


def test_pip_prefers_the_binary_wheel_where_it_fits(wheels: dict[str, Path], tmp_path: Path) -> None:
    """Both wheels side by side: pip installs the binary one here."""
    (tmp_path / "venv").mkdir()
    venv.EnvBuilder(with_pip=False).create(tmp_path / "venv")
    python = tmp_path / "venv" / "bin" / "python"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--quiet",
            "--no-deps",
            "--no-index",
            "--find-links",
            str(wheels["native"].parent),
            "decisions",
        ],
        check=True,
    )
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert list(Path(site).glob("decisions/_native*.so"))


@pytest.mark.parametrize(
    "platform, version",
    [("macosx_11_0_arm64", "3.12"), ("win_amd64", "3.11"), ("manylinux2014_aarch64", "3.13")],
)
def test_pip_falls_back_to_the_pure_wheel_elsewhere(
    wheels: dict[str, Path], tmp_path: Path, platform: str, version: str
) -> None:
    """Where the binary wheel's tags do not fit, pip's resolver picks the pure one."""
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--no-index",
            "--only-binary=:all:",
            "--platform",
            platform,
            "--python-version",
            version,
            "--find-links",
            str(wheels["native"].parent),
            "--dest",
            str(tmp_path),
            "decisions",
        ],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert [p.name for p in tmp_path.glob("*.whl")] == [wheels["pure"].name]


def _readme_install_lines() -> list[list[str]]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("## Install", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    lines = [line.split("  #")[0].strip() for line in block.splitlines()]
    return [shlex.split(line) for line in lines if line.startswith("pip install")]


@pytest.fixture(scope="module")
def dist(wheels: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What `make wheels` leaves in dist/: both wheels and the runtime dependencies' wheels."""
    sys.path.insert(0, str(ROOT / "packaging"))
    import deps  # packaging/deps.py, as the Makefile runs it

    folder = wheels["native"].parent
    deps.download(folder)
    return folder


@pytest.mark.parametrize("line", _readme_install_lines(), ids=lambda argv: " ".join(argv[2:]))
def test_readme_install_lines_work_as_written_in_a_fresh_venv(line: list[str], dist: Path, tmp_path: Path) -> None:
    assert len(_readme_install_lines()) == 2
    work = tmp_path / "work"
    work.mkdir()
    (work / "dist").symlink_to(dist, target_is_directory=True)
    venv.EnvBuilder(with_pip=True).create(tmp_path / "venv")  # ensurepip: offline
    bindir = tmp_path / "venv" / "bin"
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DECISIONS_PURE", "PYTHONPATH", "VIRTUAL_ENV", "PIP_FIND_LINKS")
    }
    env["PATH"] = f"{bindir}{os.pathsep}{env['PATH']}"
    assert line[0] == "pip"
    out = subprocess.run([str(bindir / "pip"), *line[1:]], cwd=work, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    smoke = subprocess.run(
        [str(bindir / "python"), "-I", "-c", SMOKE], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert smoke.returncode == 0, smoke.stderr
    wanted = "pure" if line[-1].endswith("-py3-none-any.whl") else "native"
    assert json.loads(smoke.stdout)["backend"] == wanted
