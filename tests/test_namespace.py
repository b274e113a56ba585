"""The public namespace: every public module has an ``__all__`` that names
only the package's own objects, nothing else leaks from ``decisions`` or the
modules users import from, and no public name is reachable only through an
internal module."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import types

import pytest

import decisions

#: The modules users are told to import from.
NAMESPACES = (
    "decisions",
    "decisions.errors",
    "decisions.types",
    "decisions.limits",
    "decisions.providers",
    "decisions.integrations",
    "decisions.detect",
    "decisions.stream.wire",
    "decisions.ledger",
    "decisions.examples",
    "decisions.cli",
)
#: Of those, the ones whose every public attribute must be in ``__all__``.
EXACT = ("decisions", "decisions.integrations", "decisions.detect")


def _public_modules() -> list[str]:
    names = ["decisions"]
    for info in pkgutil.walk_packages(decisions.__path__, "decisions."):
        if not any(part.startswith("_") for part in info.name.split(".")[1:]):
            names.append(info.name)
    return names


@pytest.mark.parametrize("name", _public_modules())
def test_every_public_module_has_an_all_of_its_own_objects(name: str) -> None:
    module = importlib.import_module(name)
    exported = getattr(module, "__all__", None)
    assert isinstance(exported, list), f"{name} has no __all__"
    assert len(exported) == len(set(exported)), f"{name}.__all__ repeats a name"
    for attr in exported:
        assert not attr.startswith("_") or attr == "__version__", f"{name}.__all__ names the private {attr}"
        obj = getattr(module, attr)  # AttributeError: listed but missing
        if isinstance(obj, types.ModuleType):
            assert obj.__name__.startswith("decisions."), f"{name}.__all__ re-exports the module {obj.__name__}"
        elif inspect.isclass(obj) or inspect.isroutine(obj):
            assert obj.__module__.startswith("decisions"), f"{name}.{attr} is {obj.__module__}'s, not the package's"


@pytest.mark.parametrize("name", EXACT)
def test_nothing_else_leaks(name: str) -> None:
    module = importlib.import_module(name)
    public = {attr for attr in dir(module) if not attr.startswith("_")}
    submodules = {
        attr
        for attr in public
        if isinstance(getattr(module, attr), types.ModuleType) and getattr(module, attr).__name__.startswith(f"{name}.")
    }
    assert sorted(public - set(module.__all__) - submodules) == []


def test_no_public_name_is_reachable_only_through_an_internal_module() -> None:
    reachable = set()
    for name in NAMESPACES:
        reachable |= set(importlib.import_module(name).__all__)
    hidden = {}
    for name in _public_modules():
        module = importlib.import_module(name)
        if name in NAMESPACES or hasattr(module, "__path__"):
            continue
        missing = [attr for attr in module.__all__ if attr not in reachable]
        if missing:
            hidden[name] = missing
    assert hidden == {}


def test_the_base_error_has_no_layer_and_provider_ids_include_canonical() -> None:
    assert not hasattr(decisions.OutputError, "layer")
    with pytest.raises(TypeError, match="base class"):
        decisions.OutputError("CONNECTION_CLOSED")
    assert {cls.layer for cls in map(decisions.error_class, decisions.ERROR_CODES)} == {
        entry.layer for entry in decisions.ERROR_CODES.values()
    }
    assert decisions.PROVIDER_IDS == (*decisions.PROVIDERS, "canonical")
    assert "annotations" not in dir(decisions)
