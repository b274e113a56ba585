"""One suite, two backends.

``impl`` is the backend module under test: ``decisions._native`` and
``decisions._pure`` both expose the same names. With ``DECISIONS_PURE=1`` only
the pure twin runs (the public API is then pure too); otherwise both run, and
``DECISIONS_REQUIRE_NATIVE=1`` (set by ``make test``) turns a missing native
build into a failure instead of a skip.
"""

from __future__ import annotations

import gc
import os
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import HealthCheck, settings

from decisions import Ledger, _pure, open_ledger
from decisions._backend import native_module
from decisions.validate import decide as decide_module
from ledger_helpers import BACKENDS as BACKENDS_OF_LEDGER
from ledger_helpers import url_for

FIXTURES = Path(__file__).parent / "fixtures"

settings.register_profile("fast", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("long", max_examples=20_000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# `make mutation` (scripts/mutation.py) runs each surviving mutant through the module's properties:
# few examples, the same ones every run (mutmut's baseline and each mutant see the same inputs).
settings.register_profile(
    "mutation",
    max_examples=12,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "fast"))

_PURE_ONLY = os.environ.get("DECISIONS_PURE", "").strip().lower() not in ("", "0", "false", "no")
_NATIVE = None if _PURE_ONLY else native_module()
if _NATIVE is None and not _PURE_ONLY and os.environ.get("DECISIONS_REQUIRE_NATIVE") == "1":
    raise RuntimeError("DECISIONS_REQUIRE_NATIVE=1 but decisions._native does not import: run `make build`")

BACKENDS: dict[str, ModuleType] = {"pure": _pure}
if _NATIVE is not None:
    BACKENDS = {"native": _NATIVE, "pure": _pure}


@pytest.fixture(params=list(BACKENDS), scope="session")
def impl(request: pytest.FixtureRequest) -> ModuleType:
    """Each backend module in turn (ids ``native`` and ``pure``)."""
    return BACKENDS[request.param]


@pytest.fixture(params=["plain path first", "general path only"])
def decide_paths(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs a test twice: with ``decide`` as it is (a plain response is
    answered by ``_plain_decision``), then with that path declining every
    response, so the general path decides each input alone. Every assertion
    then holds of both paths (``decide_helpers.both_paths`` asks for it)."""
    if request.param == "general path only":
        monkeypatch.setattr(decide_module, "_plain_decision", lambda *args: None)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """An empty workspace directory (the ledger's tools write in it); a module
    that needs files in it from the start defines its own."""
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture(params=BACKENDS_OF_LEDGER)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh ledger database on each store in turn (ids ``sqlite`` and ``postgres``)."""
    return url_for(request.param, tmp_path)


@pytest.fixture
def ledger(url: str) -> Iterator[Ledger]:
    """The ledger at :func:`url`, open for the test."""
    with open_ledger(url) as opened:
        yield opened


@pytest.fixture(scope="session")
def native() -> ModuleType:
    """The native module; tests that need it are skipped on a pure-only run."""
    if _NATIVE is None:
        pytest.skip("native backend not under test")
    return _NATIVE


@pytest.fixture(scope="session")
def both() -> tuple[ModuleType, ModuleType]:
    """``(native, pure)`` for differential tests; skipped on a pure-only run."""
    if _NATIVE is None:
        pytest.skip("differential tests need the native backend")
    return _NATIVE, _pure


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test that uses ``both`` as ``differential`` (``make test-long``
    selects them), and skip ``slow`` tests unless a ``-m`` expression asks for them."""
    wants_slow = "slow" in (config.option.markexpr or "")
    skip_slow = pytest.mark.skip(reason="slow: run with -m slow")
    for item in items:
        if "both" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.differential)
        if not wants_slow and item.get_closest_marker("slow") is not None:
            item.add_marker(skip_slow)


def peak_bytes(call: Callable[[], object]) -> int:
    """The most memory Python held at once while ``call`` ran (tracemalloc)."""
    gc.collect()
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
