"""Versioned JSON shapes of decisions, verdicts, results and errors.

``to_dict(obj)`` gives a plain-JSON dict with ``"shape"`` (what it is) and
``"version"`` (of that shape); ``from_dict(data)`` builds the object back.
This is what the ledger stores; shapes of an earlier version still read. A shape or version this code does not know is
``UNKNOWN_SCHEMA_VERSION``; a dict that is not the shape it names is
``SCHEMA_MISMATCH`` at the offending path. ``ToolCall.validated`` (a Pydantic
instance) is not stored: the validated arguments are in ``arguments``.
A final answer's value is stored as JSON (a model is dumped in JSON mode).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Final, Union

from pydantic import BaseModel

from ..errors import OutputError, SchemaError, _shape_mismatch
from ..types import CALL_KINDS, CallKind
from ..validate.decision import CallVerdict, FinalDecision, ToolCall, ToolDecision
from .results import Effect, ToolResult

__all__ = ["SHAPE_VERSION", "to_dict", "from_dict"]

#: The version of every shape written today. Bumped when a reader of the
#: previous version could misread a shape written now (a member added, removed,
#: renamed or retyped), and then every shape is written at the new version.
#: The ledger's tables are versioned apart (``ddl.SCHEMA_VERSION``): a column
#: they gain, such as a call's ``call_id_generated``, is added to a ledger
#: written before and changes no shape.
SHAPE_VERSION: Final = 2
#: The versions read. Version 1 has no ``call_kind`` in a tool call: each was
#: read as a ``function`` call, and one of another kind (a ``custom`` call's
#: text arguments, a ``shell`` call) came back as a function call or not at all.
_READ_VERSIONS: Final = (1, 2)
Shaped = Union[ToolDecision, FinalDecision, ToolCall, CallVerdict, ToolResult, Effect, OutputError]


def _json_value(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    return value


def to_dict(obj: Shaped) -> dict[str, Any]:
    """The versioned JSON shape of a decision, call, verdict, result, effect or error."""
    head: dict[str, Any]
    if isinstance(obj, ToolDecision):
        head = {"shape": "tool_decision", "version": SHAPE_VERSION}
        return head | {
            "calls": [to_dict(c) for c in obj.calls],
            "verdicts": [to_dict(v) for v in obj.verdicts],
            "batch": obj.batch,
            "text": obj.text,
            "provider": obj.provider,
            "response_id": obj.response_id,
            "model": obj.model,
        }
    if isinstance(obj, FinalDecision):
        return {
            "shape": "final_decision",
            "version": SHAPE_VERSION,
            "value": _json_value(obj.value),
            "text": obj.text,
            "schema_id": obj.schema_id,
            "provider": obj.provider,
            "response_id": obj.response_id,
            "model": obj.model,
        }
    if isinstance(obj, ToolCall):
        return {
            "shape": "tool_call",
            "version": SHAPE_VERSION,
            "call_id": obj.call_id,
            "name": obj.name,
            "arguments": obj.arguments,
            "index": obj.index,
            "item_id": obj.item_id,
            "call_id_generated": obj.call_id_generated,
            "tool_version": obj.tool_version,
            "call_kind": obj.call_kind,
        }
    if isinstance(obj, CallVerdict):
        return {
            "shape": "call_verdict",
            "version": SHAPE_VERSION,
            "call_id": obj.call_id,
            "status": obj.status,
            "error": None if obj.error is None else to_dict(obj.error),
            "reasons": list(obj.reasons),
            "paths": dict(obj.paths),
            "empty_paths": list(obj.empty_paths),
            "approved_by": obj.approved_by,
        }
    if isinstance(obj, ToolResult):
        return {
            "shape": "tool_result",
            "version": SHAPE_VERSION,
            "call_id": obj.call_id,
            "status": obj.status,
            "content": _json_value(obj.content),
            "retry_safe": obj.retry_safe,
            "effects": [to_dict(e) for e in obj.effects],
        }
    if isinstance(obj, Effect):
        return {"shape": "effect", "version": SHAPE_VERSION, "path": obj.path, "digest": obj.digest}
    if isinstance(obj, OutputError):
        return {"shape": "error", "version": SHAPE_VERSION} | obj.to_dict()
    raise TypeError(f"no shape for {type(obj).__name__}")


class _Reader:
    """Field access with typed errors naming the path."""

    __slots__ = ("data", "path", "version")

    def __init__(self, data: Any, path: str, version: int = SHAPE_VERSION) -> None:
        if not isinstance(data, Mapping):
            raise _shape_mismatch(path, "an object")
        self.data = data
        self.path = path
        self.version = version  # of the outermost shape: the members it has

    def at(self, data: Any, path: str) -> _Reader:
        """A reader of a nested shape, of this one's version."""
        return _Reader(data, path, self.version)

    def one_of(self, name: str, choices: tuple[str, ...]) -> Any:
        value = self.get(name, (str,))
        if value not in choices:
            raise _shape_mismatch(f"{self.path}.{name}", " or ".join(choices))
        return value

    def get(self, name: str, kinds: tuple[type, ...] | None, *, optional: bool = False) -> Any:
        if name not in self.data:
            if optional:
                return None
            raise _shape_mismatch(f"{self.path}.{name}", "a value (missing)")
        value = self.data[name]
        if value is None and optional:
            return None
        if kinds is not None and (not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds)):
            raise _shape_mismatch(f"{self.path}.{name}", " or ".join(k.__name__ for k in kinds))
        return value


def _call(r: _Reader) -> ToolCall:
    call_kind: CallKind = "function" if r.version == 1 else r.one_of("call_kind", CALL_KINDS)
    # a custom call's arguments are its input text, every other kind's a JSON object
    arguments = r.get("arguments", (str,)) if call_kind == "custom" else dict(r.get("arguments", (dict,)))
    return ToolCall(
        call_id=r.get("call_id", (str,)),
        name=r.get("name", (str,)),
        arguments=arguments,
        index=r.get("index", (int,)),
        item_id=r.get("item_id", (str,), optional=True),
        call_id_generated=r.get("call_id_generated", (bool,)),
        tool_version=r.get("tool_version", (str,), optional=True),
        call_kind=call_kind,
    )


def _verdict(r: _Reader) -> CallVerdict:
    error = r.get("error", (dict,), optional=True)
    return CallVerdict(
        call_id=r.get("call_id", (str,)),
        status=r.one_of("status", ("allowed", "approved", "needs_approval", "denied")),
        error=None if error is None else _error(r.at(error, f"{r.path}.error")),
        reasons=tuple(r.get("reasons", (list,))),
        paths=MappingProxyType(dict(r.get("paths", (dict,)))),
        empty_paths=tuple(r.get("empty_paths", (list,))),
        approved_by=r.get("approved_by", (str,), optional=True),
    )


def _tool_decision(r: _Reader) -> ToolDecision:
    batch = r.one_of("batch", ("all_or_nothing", "per_call"))
    calls = r.get("calls", (list,))
    verdicts = r.get("verdicts", (list,))
    try:
        return ToolDecision(
            calls=tuple(_call(r.at(c, f"{r.path}.calls[{i}]")) for i, c in enumerate(calls)),
            verdicts=tuple(_verdict(r.at(v, f"{r.path}.verdicts[{i}]")) for i, v in enumerate(verdicts)),
            batch=batch,
            text=r.get("text", (str,)),
            provider=r.get("provider", (str,), optional=True),
            response_id=r.get("response_id", (str,), optional=True),
            model=r.get("model", (str,), optional=True),
        )
    except ValueError as error:
        raise _shape_mismatch(f"{r.path}.verdicts", str(error)) from None


def _final(r: _Reader) -> FinalDecision:
    return FinalDecision(
        value=r.get("value", None),
        text=r.get("text", (str,)),
        schema_id=r.get("schema_id", (str,), optional=True),
        provider=r.get("provider", (str,), optional=True),
        response_id=r.get("response_id", (str,), optional=True),
        model=r.get("model", (str,), optional=True),
    )


def _effect(r: _Reader) -> Effect:
    try:
        return Effect(r.get("path", (str,)), r.get("digest", (str,), optional=True))
    except ValueError as error:
        raise _shape_mismatch(r.path, str(error)) from None


def _result(r: _Reader) -> ToolResult:
    effects = r.get("effects", (list,))
    try:
        return ToolResult(
            r.get("call_id", (str,)),
            r.get("status", (str,)),
            r.get("content", None),
            retry_safe=r.get("retry_safe", (bool,)),
            effects=tuple(_effect(r.at(e, f"{r.path}.effects[{i}]")) for i, e in enumerate(effects)),
        )
    except ValueError as error:
        raise _shape_mismatch(r.path, str(error)) from None


def _error(r: _Reader) -> OutputError:
    return OutputError.from_dict(r.data, path=r.path)


_READERS: Final[Mapping[str, Callable[[_Reader], Any]]] = {
    "tool_decision": _tool_decision,
    "final_decision": _final,
    "tool_call": _call,
    "call_verdict": _verdict,
    "tool_result": _result,
    "effect": _effect,
    "error": _error,
}


def from_dict(data: Mapping[str, Any], *, path: str = "$") -> Any:
    """The object a :func:`to_dict` shape describes (``UNKNOWN_SCHEMA_VERSION``
    for a shape or version this code does not read)."""
    r = _Reader(data, path)
    shape, version = r.get("shape", (str,)), r.get("version", (int,))
    reader = _READERS.get(shape)
    if reader is None or version not in _READ_VERSIONS:
        raise SchemaError(
            "UNKNOWN_SCHEMA_VERSION", f"no stored shape {shape!r} version {version}", path=f"{path}.shape"
        )
    return reader(_Reader(data, path, version))
