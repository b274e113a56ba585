"""Tool results and the checks a commit runs on them (seed 000, 8.5).

A :class:`ToolResult` says how a call ended (``ok``, ``error`` or
``partial``), whether running the call again is safe (``retry_safe``) and
which effects it claims (files written, with their digests). A
:class:`~decisions.Tool` declares what its results must be: a result schema
(``returns``: Pydantic model or JSON Schema) and an effect check
(``effects``, e.g. :class:`FileEffects`: "the file at ``path`` now has this
digest"). :func:`check_result` runs both; a result that does not fit is a
:class:`~decisions.errors.ResultError` and the call is ``failed``.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass
from typing import Any, Final, Literal

from pydantic import BaseModel

from .._payload import strict_dumps
from ..errors import OutputError, PolicyError, ResultError
from ..limits import DEFAULT_LIMITS, Limits
from ..validate.domain import Tool
from ..validate.paths import resolve_path

__all__ = [
    "ResultStatus",
    "Effect",
    "ToolResult",
    "EffectCheck",
    "FileEffects",
    "check_result",
    "check_result_size",
    "file_digest",
]

#: ``ok``: the call did what it should. ``error``: it did not (the tool said so).
#: ``partial``: it did some of it; the call is ``failed`` with ``PARTIAL_EFFECT``.
ResultStatus = Literal["ok", "error", "partial"]


@dataclass(frozen=True, slots=True)
class Effect:
    """A change a call claims to have made: the file at ``path`` (relative to
    the workspace) now has ``digest`` (``sha256:<hex>``; None: it was deleted)."""

    path: str
    digest: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.path, str) or not self.path:
            raise ValueError("Effect.path must be a non-empty string")
        if self.digest is not None and not (isinstance(self.digest, str) and self.digest.startswith("sha256:")):
            raise ValueError("Effect.digest must be 'sha256:<hex>' or None")


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The outcome of running one call: ``status`` ``"ok"``, ``"error"`` or
    ``"partial"``, ``content`` a string or a JSON-serialisable value, whether
    running the call again is safe (``retry_safe``), and the ``effects`` it claims."""

    call_id: str
    status: ResultStatus
    content: Any = None
    _: KW_ONLY
    retry_safe: bool = False
    effects: tuple[Effect, ...] = ()

    def __post_init__(self) -> None:
        if self.status not in ("ok", "error", "partial"):
            raise ValueError("ToolResult.status must be 'ok', 'error' or 'partial'")
        if not isinstance(self.call_id, str) or not self.call_id:
            raise ValueError("ToolResult.call_id must be a non-empty string")
        if not isinstance(self.effects, tuple) or not all(isinstance(e, Effect) for e in self.effects):
            raise ValueError("ToolResult.effects must be a tuple of Effect")
        if not isinstance(self.retry_safe, bool):  # "no" or 1 would be stored as retry-safe, and not read back
            raise ValueError("ToolResult.retry_safe must be a bool")

    @property
    def text(self) -> str:
        """The content as text: a string as is, anything else as JSON (any
        depth); ``RESULT_SCHEMA_MISMATCH`` when it is not text UTF-8 can
        carry or not a JSON value (NaN, Infinity, bytes, a lone surrogate)."""
        try:
            text = self.content if isinstance(self.content, str) else strict_dumps(self.content)
            text.encode("utf-8")
        except (TypeError, ValueError, RecursionError):  # UnicodeEncodeError is a ValueError
            raise ResultError(
                "RESULT_SCHEMA_MISMATCH",
                f"the result for {self.call_id!r} is not JSON text (NaN, Infinity, bytes, a lone surrogate)",
                path="$.content",
                call_id=self.call_id,
                hint="give a result only finite numbers, valid Unicode text and JSON values",
            ) from None
        return text


_END: Final = object()


def _text_bytes(text: str, room: int) -> int:
    """UTF-8 bytes of ``text``, or its length when that alone exceeds ``room``
    (every character takes a byte at least; nothing is encoded then)."""
    if len(text) > room or text.isascii():
        return len(text)
    return len(text.encode("utf-8", "surrogatepass"))


def _json_string_bytes(text: str, room: int) -> int:
    """UTF-8 bytes of ``text`` as a JSON string (quoted, escaped), or a lower
    bound of them when that exceeds ``room`` (nothing is written then)."""
    if len(text) + 2 > room:
        return len(text) + 2
    return _text_bytes(json.dumps(text, ensure_ascii=False), room)


def _json_bytes(value: Any, budget: int) -> int:
    """UTF-8 bytes of ``json.dumps(value, ensure_ascii=False)``, counted
    without writing it (any depth, no recursion) and only until they exceed
    ``budget``. What JSON cannot write (a cycle, bytes, a non-string key)
    counts nothing: the writer refuses it afterwards."""
    size = 0
    frames: list[tuple[int, Iterator[Any]]] = [(0, iter((value,)))]
    open_ids: set[int] = set()
    while frames and size <= budget:
        ident, children = frames[-1]
        node = next(children, _END)
        if node is _END:
            frames.pop()
            open_ids.discard(ident)
        elif isinstance(node, (dict, list, tuple)):
            if id(node) in open_ids:  # a cycle
                break
            open_ids.add(id(node))
            size += 2 * max(len(node), 1)  # the brackets and the ", " between items
            if isinstance(node, dict):
                for key in node:
                    if size > budget:
                        break
                    if isinstance(key, str):
                        size += _json_string_bytes(key, budget - size) + 2  # and ": "
                frames.append((id(node), iter(node.values())))
            else:
                frames.append((id(node), iter(node)))
        elif isinstance(node, str):
            size += _json_string_bytes(node, budget - size)
        elif isinstance(node, (bool, int, float)) or node is None:
            try:
                size += len(json.dumps(node))
            except ValueError:  # an int too long to write: the writer refuses it
                break
    return size


def _check_effects_size(result: ToolResult, limits: Limits) -> None:
    """``RESULT_TOO_LARGE`` at ``$.effects`` when ``result`` claims more than
    ``limits.max_result_effects`` effects, or effects whose paths and digests
    have more than ``limits.max_result_bytes`` bytes together."""
    effects = result.effects
    count, room = limits.max_result_effects, limits.max_result_bytes
    if len(effects) > count:
        what = f"claims {len(effects)} effects, more than {count}"
    else:
        size = 0
        for effect in effects:
            size += _text_bytes(effect.path, room - size) + len(effect.digest or "")
            if size > room:
                break
        if size <= room:
            return
        what = f"claims effects of more than {room} bytes"
    raise ResultError(
        "RESULT_TOO_LARGE",
        f"the result for {result.call_id!r} {what}",
        path="$.effects",
        call_id=result.call_id,
        retryable=False,
        hint="claim the files the call changed, not more (or raise Limits.max_result_effects)",
    )


def check_result_size(result: ToolResult, limits: Limits = DEFAULT_LIMITS) -> None:
    """``RESULT_TOO_LARGE`` when ``result``'s content as text (:attr:`ToolResult.text`)
    has more than ``limits.max_result_bytes`` bytes, measured before it is written,
    or (at ``$.effects``) when it claims more than ``limits.max_result_effects``
    effects, or effects of more than ``max_result_bytes`` bytes."""
    content = result.content
    limit = limits.max_result_bytes
    if isinstance(content, str):
        size = _text_bytes(content, limit)
    else:
        size = _json_bytes(content.model_dump(mode="json") if isinstance(content, BaseModel) else content, limit)
    if size > limit:
        raise ResultError(
            "RESULT_TOO_LARGE",
            f"the result for {result.call_id!r} has more than {limit} bytes of content",
            path="$.content",
            call_id=result.call_id,
            retryable=False,
            hint="cut or summarise the tool's output before handing it back",
        )
    _check_effects_size(result, limits)


#: ``check(arguments, result)`` returns the effects it observed (each claimed
#: effect it verified) or raises :class:`ResultError` (``EFFECT_NOT_OBSERVED``,
#: ``PARTIAL_EFFECT``). ``arguments`` is None for a call recorded as sensitive,
#: the input text for a custom call.
EffectCheck = Callable[[Mapping[str, Any] | str | None, ToolResult], Sequence[Effect]]


def file_digest(path: str | os.PathLike[str]) -> str:
    """``sha256:<hex>`` of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return "sha256:" + digest.hexdigest()


def _effect_error(code: str, message: str, path: str) -> ResultError:
    return ResultError(
        code,
        message,
        path=path,
        issues=({"path": path, "code": code.lower(), "expected": "the effect the result claims"},),
        hint="report only what the tool really changed",
    )


def _resolved(root: str, raw: str) -> str | None:
    """A path argument resolved under ``root`` as the policy resolves it
    (``./a.txt``, ``src//a.txt`` and an absolute path inside are one file),
    or None when it is not a path inside ``root`` (never observed)."""
    try:
        return resolve_path(root, raw)
    except PolicyError:
        return None


@dataclass(frozen=True, slots=True)
class FileEffects:
    """Effect check for file-writing tools: every claimed effect is looked at
    under ``root`` (its digest recomputed; a None digest means the file must be
    gone), and every path argument named in ``paths`` (field names of the
    call's arguments, string or list of strings) must be among the claimed
    effects, both resolved under ``root`` as the policy resolves paths. A
    path outside ``root`` is never observed."""

    root: str
    paths: tuple[str, ...] = ("path",)

    def __post_init__(self) -> None:
        if isinstance(self.paths, str):  # its letters would be the field names, and none would be checked
            raise ValueError(f"FileEffects.paths must be a tuple of field names, not the string {self.paths!r}")

    def __call__(self, arguments: Mapping[str, Any] | str | None, result: ToolResult) -> Sequence[Effect]:
        root = os.path.realpath(self.root)
        observed: list[Effect] = []
        claimed: set[str] = set()  # the resolved path of every observed effect
        for index, effect in enumerate(result.effects):
            where = f"$.effects[{index}]"
            try:
                target = os.path.realpath(os.path.join(root, effect.path))
            except (OSError, ValueError, RuntimeError):  # a NUL, a loop the platform refuses
                raise _effect_error(
                    "EFFECT_NOT_OBSERVED", f"effect path {effect.path!r} cannot be looked up", where
                ) from None
            if os.path.commonpath([root, target]) != root:
                raise _effect_error(
                    "EFFECT_NOT_OBSERVED", f"effect path {effect.path!r} is outside the workspace", where
                )
            if effect.digest is None:
                if os.path.lexists(target):
                    raise _effect_error(
                        "EFFECT_NOT_OBSERVED", f"{effect.path!r} was to be deleted but is still there", where
                    )
            else:
                try:
                    actual = file_digest(target) if os.path.isfile(target) else None
                except OSError as error:  # there, but not readable: not observed
                    raise _effect_error(
                        "EFFECT_NOT_OBSERVED", f"{effect.path!r} cannot be read ({type(error).__name__})", where
                    ) from None
                if actual != effect.digest:
                    seen = "missing" if actual is None else f"has {actual}"
                    raise _effect_error("EFFECT_NOT_OBSERVED", f"{effect.path!r} {seen}, not {effect.digest}", where)
            observed.append(effect)
            claimed.add(target)
        expected: list[str] = []
        for name in self.paths:
            value = arguments.get(name) if isinstance(arguments, Mapping) else None  # a custom call names none
            items = value if isinstance(value, list) else [value]
            expected += [v for v in items if isinstance(v, str) and v]
        missing = [p for p in expected if _resolved(root, p) not in claimed]
        if missing:
            code = "PARTIAL_EFFECT" if observed else "EFFECT_NOT_OBSERVED"
            raise _effect_error(code, f"no effect observed on {missing}", "$.effects")
        return tuple(observed)


def check_result(
    arguments: Mapping[str, Any] | str | None, result: ToolResult, tool: Tool | None
) -> tuple[OutputError | None, tuple[Effect, ...]]:
    """The error that fails ``result`` (None when it passes) and the effects
    the check observed. ``error`` is ``TOOL_ERROR``, ``partial``
    ``PARTIAL_EFFECT``; an ``ok`` result must match the schema; the effect
    check runs on ``ok`` and ``partial`` results. A ``tool`` that declares
    neither (or None) lets an ``ok`` result pass with its effects unchecked."""
    if result.status == "error":
        return ResultError("TOOL_ERROR", "the tool reported an error", path="$.status", retryable=result.retry_safe), ()
    issues: list[dict[str, str]] = []
    if result.status == "ok" and tool is not None and tool.result_schema is not None:
        # checked before the effect check runs: what it does to the content is not what was checked
        issues, _ = tool.result_schema.issues(result.content, root="$.content")
    observed: tuple[Effect, ...] = ()
    if tool is not None and tool.effects is not None:
        try:
            observed = tuple(tool.effects(arguments, result))
        except ResultError as error:
            return error, ()
        except Exception as error:  # fail closed: a broken check observed nothing
            return _effect_error(
                "EFFECT_NOT_OBSERVED", f"the effect check raised {type(error).__name__}", "$.effects"
            ), ()
        if not all(isinstance(effect, Effect) for effect in observed):
            return _effect_error(
                "EFFECT_NOT_OBSERVED", "the effect check returned something other than Effect objects", "$.effects"
            ), ()
    if result.status == "partial":
        return ResultError(
            "PARTIAL_EFFECT", "the tool reported a partial result", path="$.status", retryable=False
        ), observed
    if issues:
        first = issues[0]
        return ResultError(
            "RESULT_SCHEMA_MISMATCH",
            f"the result does not match the tool's result schema: {first.get('code')} at {first.get('path')}",
            path=first.get("path"),
            issues=tuple(issues),
        ), observed
    return None, observed
