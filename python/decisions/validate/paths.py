"""Path arguments for the policy layer: where a selector points in a call's
arguments, and where a path argument resolves under the workspace.

See :mod:`decisions.validate.policy` for the rules. A path is resolved from
the already resolved workspace root, walking only the argument's own
components (each symlink still followed), and is then compared with the
root and the scopes component-wise. Roots and scopes are resolved once, when
the policy is built; the prefixes they are compared with are kept beside
them (:class:`Scopes`).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import posixpath
import re
from stat import S_ISLNK
from typing import Any, Final, Literal, Mapping

from pydantic import BaseModel

from ..errors import PolicyError, json_path

__all__ = ["Access", "resolve_path"]

Access = Literal["read", "write"]
_DRIVE = re.compile(r"^[A-Za-z]:")
#: A control character (C0, DEL, C1): never part of a path a model means (a
#: trailing newline, an escape sequence), so refused rather than written.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_NAME = r"[^.\[\]\s]+"
_SELECTOR = re.compile(rf"{_NAME}(?:\[\*\])*(?:\.{_NAME}(?:\[\*\])*)*\Z")
_STEP = re.compile(rf"\[\*\]|{_NAME}")
#: A selector step: a field name, or None for ``[*]``.
Step = str | None
_ARRAYS: Final = (list, tuple, set, frozenset)
#: The longest path argument resolved, in bytes of UTF-8: Linux's ``PATH_MAX``,
#: past which no system call takes a path. Resolving walks the path one
#: component at a time, each step building the path so far: a longer one
#: (``a/`` a million times) would cost the square of its length.
MAX_PATH_BYTES: Final = 4096


def _reject(code: str, message: str, *, path: str, expected: str, hint: str) -> PolicyError:
    return PolicyError(
        code, message, path=path, issues=({"path": path, "code": code.lower(), "expected": expected},), hint=hint
    )


def _too_long(raw: str) -> bool:
    """Whether ``raw`` is longer than :data:`MAX_PATH_BYTES` bytes of UTF-8."""
    return len(raw) > MAX_PATH_BYTES or (
        not raw.isascii() and len(raw.encode("utf-8", "surrogatepass")) > MAX_PATH_BYTES
    )


def _inside(root: str, target: str) -> bool:
    return target == root or target.startswith(root.rstrip(os.sep) + os.sep)


class Scopes:
    """Resolved directories, each with the prefix a path under it starts
    with: :meth:`holds` is :func:`_inside` for any of them, without building
    a prefix per question."""

    __slots__ = ("dirs", "_prefixes")

    def __init__(self, dirs: tuple[str, ...]) -> None:
        self.dirs = dirs
        self._prefixes = tuple(d.rstrip(os.sep) + os.sep for d in dirs)

    def holds(self, target: str) -> bool:
        """Whether ``target`` is one of the directories or lies under one."""
        return target in self.dirs or target.startswith(self._prefixes)

    def __repr__(self) -> str:
        return f"Scopes({self.dirs!r})"


#: CPython's realpath step (3.11, 3.12): resolve ``rest`` from an already
#: resolved ``path``, following every symlink, without walking ``path``'s own
#: components again. Elsewhere the whole joined path is resolved.
_JOIN_REALPATH: Final = getattr(posixpath, "_joinrealpath", None) if os.path is posixpath else None


def _resolve_under(root: str, raw: str) -> str:
    """``os.path.realpath(os.path.join(root, raw))`` for a resolved ``root``:
    only ``raw``'s components are looked up (each symlink still followed).

    The components are walked as realpath walks them (``.`` and empty ones
    skipped, ``..`` drops the last one, a component that cannot be looked up
    is not a link); the first symlink met hands the whole path to realpath's
    own walk, which follows it."""
    if os.path is not posixpath or raw.startswith("/"):
        return os.path.realpath(os.path.join(root, raw))
    path = root
    for name in raw.split("/"):
        if not name or name == ".":
            continue
        if name == "..":
            path = path[: path.rindex("/")] or "/"
            continue
        step = path + name if path == "/" else f"{path}/{name}"
        try:
            mode = os.lstat(step).st_mode
        except OSError:
            mode = 0
        if S_ISLNK(mode):
            if _JOIN_REALPATH is None:
                return os.path.realpath(os.path.join(root, raw))
            target, _ = _JOIN_REALPATH(root, raw, False, {})
            return posixpath.normpath(str(target))  # realpath's last step (a loop leaves the rest as written)
        path = step
    return path


def resolve_path(root: str | os.PathLike[str], raw: Any, *, path: str = "$") -> str:
    """The resolved absolute path of ``raw`` (a string, or a path object a
    model field produced) under the (already resolved) workspace ``root``, or
    :class:`PolicyError` ``PATH_INVALID`` / ``PATH_OUTSIDE_WORKSPACE``.
    ``path`` is the JSON path named in the error."""
    root = os.fspath(root)
    if isinstance(raw, os.PathLike):
        raw = os.fspath(raw)
    expected = "a relative path inside the workspace"
    if not isinstance(raw, str) or not raw.strip():
        raise _reject(
            "PATH_INVALID",
            "a path must be a non-empty string",
            path=path,
            expected=expected,
            hint="give a relative path such as 'src/main.py'",
        )
    if _too_long(raw):
        raise _reject(
            "PATH_INVALID",
            f"the path is longer than {MAX_PATH_BYTES} bytes",
            path=path,
            expected=expected,
            hint="give a shorter path",
        )
    control = _CONTROL.search(raw)
    if control is not None or "\\" in raw:
        if control is None:
            what = "a backslash"
        elif control[0] == "\x00":
            what = "a NUL character"
        else:
            what = f"a control character (U+{ord(control[0]):04X})"
        raise _reject(
            "PATH_INVALID",
            f"the path holds {what}",
            path=path,
            expected=expected,
            hint="use '/' between path components and no control characters",
        )
    if raw.startswith("~"):
        raise _reject(
            "PATH_INVALID",
            "home-directory paths ('~') are not expanded",
            path=path,
            expected=expected,
            hint="give a path relative to the workspace",
        )
    if _DRIVE.match(raw) or raw.startswith("//"):
        raise _reject(
            "PATH_INVALID",
            "drive and UNC paths are not accepted",
            path=path,
            expected=expected,
            hint="give a path relative to the workspace",
        )
    try:
        target = _resolve_under(root, raw)
    except (OSError, ValueError, RuntimeError) as error:
        raise _reject(
            "PATH_INVALID",
            f"the path cannot be resolved ({type(error).__name__})",
            path=path,
            expected=expected,
            hint="give a path relative to the workspace",
        ) from error
    if not _inside(root, target):
        raise _reject(
            "PATH_OUTSIDE_WORKSPACE",
            "the path resolves outside the workspace",
            path=path,
            expected=expected,
            hint="give a path inside the workspace; '..' and symlinks that leave it are refused",
        )
    return target


def resolve_in(root: Scopes, raw: Any, path: str) -> str:
    """:func:`resolve_path` under ``root`` (one resolved workspace): the
    same result and the same errors, with the checks of a plain relative
    path made at once (any other value takes :func:`resolve_path`'s way)."""
    if (
        type(raw) is str
        and raw
        and not raw.isspace()  # str.strip() strips exactly the isspace() characters
        and not _too_long(raw)
        and _CONTROL.search(raw) is None
        and "\\" not in raw
        and not raw.startswith(("~", "//"))
        and not _DRIVE.match(raw)
    ):
        try:
            target = _resolve_under(root.dirs[0], raw)
        except (OSError, ValueError, RuntimeError):
            pass  # resolve_path names the error
        else:
            if root.holds(target):
                return target
    return resolve_path(root.dirs[0], raw, path=path)


def resolve_scope(root: str, scope: str) -> str:
    """A scope resolved under ``root``; ValueError when it leaves it."""
    target = os.path.realpath(os.path.join(root, scope))
    if not _inside(root, target):
        raise ValueError(f"scope {scope!r} is outside the workspace {root!r}")
    return target


def parse_selector(selector: str) -> tuple[Step, ...]:
    """The steps of a field selector (``files[*].path`` gives ``("files",
    None, "path")``), or ValueError when it is malformed."""
    if not isinstance(selector, str) or not _SELECTOR.match(selector):
        raise ValueError(
            f"path selector {selector!r} is malformed: use field names joined by '.', "
            "with '[*]' for every item of an array (files[*].path)"
        )
    return tuple(None if token == "[*]" else token for token in _STEP.findall(selector))


_ABSENT: Any = object()
_NOT_OBJECT: Any = object()


@functools.lru_cache(maxsize=256)
def _field_names(model: type[BaseModel]) -> frozenset[str]:
    """A model class's field names (``model_fields`` is a property that costs
    more than the lookup it serves)."""
    return frozenset(model.model_fields)


def member(value: Any, name: str) -> Any:
    """Field ``name`` of a validated object (a model by field name, a
    mapping by key, a dataclass by attribute), ``_ABSENT`` when it has none,
    ``_NOT_OBJECT`` when ``value`` is not an object at all."""
    if isinstance(value, BaseModel):
        if name in _field_names(type(value)):
            return getattr(value, name)
        return (value.model_extra or {}).get(name, _ABSENT)
    if isinstance(value, Mapping):
        return value.get(name, _ABSENT)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return getattr(value, name, _ABSENT)
    return _NOT_OBJECT


def select(
    value: Any,
    steps: tuple[Step, ...],
    parts: list[str | int],
    found: list[tuple[list[str | int], Any]],
    empty: list[list[str | int]],
    base: list[str | int],
) -> None:
    """Collect what ``steps`` select in ``value``: ``found`` gets ``(parts,
    value)`` for each value, ``empty`` the parts of each absent or null one.
    ``base`` prefixes the JSON path of an error."""
    if value is None or value is _ABSENT:
        empty.append(parts)
        return
    if not steps:
        if isinstance(value, _ARRAYS):
            found.extend(([*parts, i], item) for i, item in enumerate(value))
        else:
            found.append((parts, value))
        return
    step, rest = steps[0], steps[1:]
    if step is None:
        if isinstance(value, _ARRAYS):
            for i, item in enumerate(value):
                select(item, rest, [*parts, i], found, empty, base)
        elif rest and member(value, "") is not _NOT_OBJECT:
            # an object where an array was expected: its members are no
            # items (``{"0": {"path": ...}}`` would leave the path unread,
            # and an executor that walks its values would use it)
            where = json_path([*base, *parts])
            raise _reject(
                "PATH_INVALID",
                "expected an array",
                path=where,
                expected="an array",
                hint="give the arguments the shape the tool declares",
            )
        else:  # a scalar where an array was expected: checked as the one item (the next step refuses it)
            select(value, rest, parts, found, empty, base)
        return
    child = member(value, step)
    if child is _NOT_OBJECT:
        where = json_path([*base, *parts])
        raise _reject(
            "PATH_INVALID",
            f"expected an object holding {step!r}",
            path=where,
            expected=f"an object with {step!r}",
            hint="give the arguments the shape the tool declares",
        )
    select(child, rest, [*parts, step], found, empty, base)


def select_paths(
    value: Any, steps: tuple[Step, ...], field: tuple[str, str] | None, base: str, index: int
) -> tuple[list[tuple[str, Any]], list[str]]:
    """``(found, empty)``: the JSON path and value of each path that
    ``steps`` select in ``value`` (the arguments of call ``index``, whose
    JSON path is ``base``), and the JSON path of each one left empty.
    ``field`` is the selector's one step and its JSON path suffix when the
    selector is a single field name: its value is read directly (the same
    answer as the general walk)."""
    if field is not None and value is not None:
        child = member(value, field[0])
        if child is not _NOT_OBJECT:
            where = base + field[1]
            if child is None or child is _ABSENT:
                return [], [where]
            if isinstance(child, _ARRAYS):
                return [(f"{where}[{i}]", item) for i, item in enumerate(child)], []
            return [(where, child)], []
    found: list[tuple[list[str | int], Any]] = []
    empty: list[list[str | int]] = []
    prefix: list[str | int] = ["calls", index, "arguments"]
    select(value, steps, [], found, empty, prefix)
    return [(json_path([*prefix, *parts]), raw) for parts, raw in found], [
        json_path([*prefix, *parts]) for parts in empty
    ]
