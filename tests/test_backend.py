"""The backend selector, the version check and the error-code table."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import decisions
from decisions import ERROR_CODES, Limits
from decisions.errors import OutputError, ParseError, error_class, new_error
from decisions.limits import PYTHON_ONLY

ROOT = Path(__file__).resolve().parent.parent


def _run(code: str, **env: str) -> str:
    full_env = {k: v for k, v in os.environ.items() if k != "DECISIONS_PURE"}
    full_env.update(env)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full_env, check=True)
    return out.stdout.strip()


def test_decisions_pure_forces_the_twin() -> None:
    assert _run("import decisions; print(decisions.BACKEND)", DECISIONS_PURE="1") == "pure"


def test_native_is_selected_when_it_imports(native: ModuleType) -> None:
    assert _run("import decisions; print(decisions.BACKEND)") == "native"


def test_a_native_module_that_does_not_import_falls_back_with_a_warning() -> None:
    code = (
        "import importlib.abc, sys, warnings\n"
        "class Broken(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path, target=None):\n"
        "        if name == 'decisions._native':\n"
        "            raise ImportError('dynamic module does not define module export function')\n"
        "sys.meta_path.insert(0, Broken())\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    import decisions\n"
        "print(decisions.BACKEND, [str(w.message).startswith('decisions._native is present') for w in caught])\n"
    )
    assert _run(code) == "pure [True]"


def test_a_missing_native_module_falls_back_silently() -> None:
    code = (
        "import importlib.abc, sys, warnings\n"
        "class Missing(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path, target=None):\n"
        "        if name == 'decisions._native':\n"
        "            raise ModuleNotFoundError(name)\n"
        "sys.meta_path.insert(0, Missing())\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    import decisions\n"
        "print(decisions.BACKEND, len(caught))\n"
    )
    assert _run(code) == "pure 0"


def test_stale_native_build_is_refused(native: ModuleType) -> None:
    code = (
        "import decisions._native as n; n.__version__ = '0.0.0-stale'\n"
        "from decisions import _backend\n"
        "try:\n    _backend.native_module()\nexcept ImportError as e:\n    print('refused', 'stale' in str(e))\n"
    )
    assert _run(code) == "refused True"


def test_versions_agree(native: ModuleType) -> None:
    assert native.__version__ == decisions.__version__
    cargo = (ROOT / "Cargo.toml").read_text()
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert re.search(rf'^version = "{re.escape(decisions.__version__)}"', cargo, re.M)
    assert re.search(rf'^version = "{re.escape(decisions.__version__)}"', pyproject, re.M)


def test_every_native_code_is_in_the_table(native: ModuleType) -> None:
    missing = [(code, layer) for code, layer in native.error_codes() if code not in ERROR_CODES]
    assert not missing, "add to decisions.errors.ERROR_CODES: " + ", ".join(f"{c!r} ({layer})" for c, layer in missing)
    wrong = [(c, layer, ERROR_CODES[c].layer) for c, layer in native.error_codes() if ERROR_CODES[c].layer != layer]
    assert not wrong, f"layer differs between Rust and Python: {wrong}"


def test_every_code_raised_by_the_pure_twin_is_in_the_table() -> None:
    pure_dir = ROOT / "python" / "decisions"
    used: set[str] = set()
    for path in pure_dir.rglob("*.py"):
        used.update(re.findall(r'\b(?:Code|code)\s*[=(]\s*"([A-Z][A-Z0-9_]+)"', path.read_text()))
        used.update(re.findall(r'(?:Error|_error|_fail)\(\s*"([A-Z][A-Z0-9_]+)"', path.read_text()))
    assert sorted(used - set(ERROR_CODES)) == []


def test_native_default_limits_equal_python_defaults(native: ModuleType) -> None:
    python = dataclasses.asdict(Limits())
    assert PYTHON_ONLY <= set(python)
    assert dict(native.default_limits()) == {k: v for k, v in python.items() if k not in PYTHON_ONLY}


def test_limits_are_frozen_keyword_only_and_validated() -> None:
    with pytest.raises(TypeError):
        Limits(1)  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        Limits().max_depth = 3  # type: ignore[misc]
    with pytest.raises(ValueError):
        Limits(max_depth=0)
    with pytest.raises(ValueError):
        Limits(max_depth=True)  # bool is not an int here
    assert dataclasses.replace(Limits(), max_depth=128).max_depth == 128


@pytest.mark.parametrize("code", sorted(ERROR_CODES))
def test_every_code_builds_its_layer_class(code: str) -> None:
    entry = ERROR_CODES[code]
    err = new_error(code, pos=3, doc="abcdef") if entry.layer == "parse" else new_error(code)
    assert isinstance(err, OutputError) and isinstance(err, error_class(code))
    assert err.layer == entry.layer and err.code == code and err.retryable == entry.retryable
    data = err.to_dict()
    assert data["layer"] == entry.layer and data["code"] == code


def test_error_rejects_a_code_of_another_layer() -> None:
    with pytest.raises(ValueError):
        ParseError("UNKNOWN_TOOL")


def test_parse_error_is_a_json_decode_error() -> None:
    import json
    import pickle

    err = ParseError("INVALID_ESCAPE", doc='{"a":\n "\\d"}', pos=9)
    assert isinstance(err, json.JSONDecodeError)
    assert (err.lineno, err.colno, err.pos, err.offset) == (2, 4, 9, 9)
    again = pickle.loads(pickle.dumps(err))
    assert again.code == "INVALID_ESCAPE" and again.pos == 9


def test_one_table_of_provider_ids(impl: ModuleType) -> None:
    """Each backend maps exactly the providers of ``decisions.providers``."""
    from decisions import providers

    assert tuple(impl.PROVIDERS) == providers.PROVIDERS == decisions.PROVIDERS
