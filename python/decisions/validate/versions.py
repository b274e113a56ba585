"""Versioned schemas and deterministic migrations.

A :class:`SchemaRegistry` holds schemas under an id and a semantic version
(``agent.decision@2.1.0``). A decision validated against one records its
reference, so a replayed response is judged by the schema of its time, not
the newest. Adapters migrate an old shape to a newer version; each adapter is
a pure function that either returns the new shape or raises
``AMBIGUOUS_MIGRATION``: anything that would need a guess is an error, not an
adapter.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ..errors import OutputError, SchemaError, json_path
from .schema import Schema

__all__ = ["SchemaRef", "VersionedSchema", "SchemaRegistry", "tool_name_args_to_calls", "Adapter"]

_VERSION = re.compile(r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\Z")
_ID = re.compile(r"[A-Za-z][A-Za-z0-9_.\-]*\Z")

#: An adapter takes the old value and returns the new one (never mutating
#: its input), or raises SchemaError ``AMBIGUOUS_MIGRATION``.
Adapter = Callable[[Any], Any]


@dataclass(frozen=True, slots=True, order=True)
class SchemaRef:
    """``id@version``, with the version as ``MAJOR.MINOR.PATCH``."""

    id: str
    version: tuple[int, int, int]

    @classmethod
    def parse(cls, ref: str | SchemaRef) -> SchemaRef:
        """``SchemaRef`` from ``"agent.decision@2.1.0"``; ValueError if malformed."""
        if isinstance(ref, SchemaRef):
            return ref
        if not isinstance(ref, str):
            raise TypeError(f"a schema reference is 'id@MAJOR.MINOR.PATCH', not {type(ref).__name__}")
        name, _, version = ref.rpartition("@")
        match = _VERSION.match(version)
        if not name or not _ID.match(name) or match is None:
            raise ValueError(f"{ref!r} is not a schema reference 'id@MAJOR.MINOR.PATCH'")
        return cls(name, (int(match[1]), int(match[2]), int(match[3])))

    def __str__(self) -> str:
        return f"{self.id}@{'.'.join(map(str, self.version))}"


@dataclass(frozen=True, slots=True)
class VersionedSchema:
    """A schema registered under a reference. Pass it as ``output=`` to
    ``decide``: the final decision then records ``schema_id``."""

    ref: SchemaRef
    schema: Schema

    @property
    def schema_id(self) -> str:
        return str(self.ref)

    def validate(self, value: Any, *, text: str | None = None, root: str = "$") -> Any:
        """Validate against this version (``SCHEMA_MISMATCH`` on failure)."""
        return self.schema.validate(value, text=text, root=root)


def _ambiguous(message: str, path: str = "$") -> SchemaError:
    return SchemaError(
        "AMBIGUOUS_MIGRATION",
        message,
        path=path,
        hint="the value cannot be migrated without guessing; send it in the current shape",
    )


class SchemaRegistry:
    """Schemas by id and version, and the adapters between versions."""

    __slots__ = ("_schemas", "_adapters")

    def __init__(self) -> None:
        self._schemas: dict[SchemaRef, VersionedSchema] = {}
        self._adapters: dict[SchemaRef, tuple[SchemaRef, Adapter]] = {}

    def register(self, ref: str | SchemaRef, spec: Any) -> VersionedSchema:
        """Register ``spec`` (Pydantic type, JSON Schema dict or Schema)
        under ``ref``; registering one reference twice is a ValueError."""
        parsed = SchemaRef.parse(ref)
        if parsed in self._schemas:
            raise ValueError(f"{parsed} is already registered")
        entry = VersionedSchema(parsed, Schema.of(spec))
        self._schemas[parsed] = entry
        return entry

    def get(self, ref: str | SchemaRef) -> VersionedSchema:
        """The schema registered as ``ref``, or ``UNKNOWN_SCHEMA_VERSION``."""
        try:
            parsed = SchemaRef.parse(ref)
        except ValueError as error:
            raise SchemaError("UNKNOWN_SCHEMA_VERSION", str(error)) from error
        entry = self._schemas.get(parsed)
        if entry is None:
            known = sorted(str(r) for r in self._schemas if r.id == parsed.id)
            raise SchemaError(
                "UNKNOWN_SCHEMA_VERSION",
                f"no schema {parsed} is registered" + (f" (known: {', '.join(known)})" if known else ""),
            )
        return entry

    def versions(self, schema_id: str) -> tuple[str, ...]:
        """The registered versions of ``schema_id``, oldest first."""
        return tuple(str(r) for r in sorted(self._schemas) if r.id == schema_id)

    def latest(self, schema_id: str) -> VersionedSchema:
        """The newest registered version of ``schema_id``."""
        refs = [r for r in self._schemas if r.id == schema_id]
        if not refs:
            raise SchemaError("UNKNOWN_SCHEMA_VERSION", f"no schema {schema_id!r} is registered")
        return self._schemas[max(refs)]

    def add_adapter(self, source: str | SchemaRef, target: str | SchemaRef, adapter: Adapter) -> None:
        """Register the one adapter from ``source`` to a newer ``target``
        (both registered). A second adapter from one source is a ValueError,
        so every migration path is unique."""
        src, dst = self.get(source).ref, self.get(target).ref
        if dst.id != src.id or dst.version <= src.version:
            raise ValueError(f"an adapter goes to a newer version of the same id, not {src} -> {dst}")
        if src in self._adapters:
            raise ValueError(f"{src} already has an adapter")
        self._adapters[src] = (dst, adapter)

    def migrate(self, value: Any, source: str | SchemaRef, target: str | SchemaRef) -> Any:
        """``value`` (valid under ``source``) carried to ``target`` by the
        chain of adapters, then validated against ``target``. The input is
        never mutated; no chain is ``AMBIGUOUS_MIGRATION``."""
        src, dst = self.get(source).ref, self.get(target).ref
        self.get(src).validate(value)
        current = src
        result = copy.deepcopy(value)
        while current != dst:  # each step goes to a strictly newer version
            step = self._adapters.get(current)
            if step is None or step[0] > dst:
                raise _ambiguous(f"no adapter chain leads from {src} to {dst}")
            source_ref, (current, adapter) = current, step
            try:
                result = adapter(result)
            except OutputError:
                raise
            except Exception as error:  # fail closed: a broken adapter migrates nothing
                raise _ambiguous(f"the adapter from {source_ref} raised {type(error).__name__}") from None
        return self.get(dst).validate(result)


_V1_TOOL_KEYS = frozenset({"tool_name", "args", "call_id"})


def tool_name_args_to_calls(value: Any) -> dict[str, Any]:
    """The v1 → v2 decision adapter.

    ``{"tool_name": n, "args": {...}}`` (optionally with ``call_id``) becomes
    ``{"kind": "tool", "calls": [{"name": n, "arguments": {...}}]}`` (with
    ``call_id`` kept when given, never invented), and ``{"final_answer": a}``
    becomes ``{"kind": "final", "answer": a}``. Anything else, including
    both at once, a missing or non-object ``args``, a non-string or empty
    name, unknown keys, or a value already in a newer shape, is
    ``AMBIGUOUS_MIGRATION``.
    """
    if not isinstance(value, Mapping):
        raise _ambiguous("a v1 decision is a JSON object")
    keys = set(value)
    if keys == {"final_answer"}:
        return {"kind": "final", "answer": copy.deepcopy(value["final_answer"])}
    unknown = sorted(keys - _V1_TOOL_KEYS)
    if unknown:
        raise _ambiguous(f"field {unknown[0]!r} has no place in the new shape", json_path([unknown[0]]))
    for key in ("tool_name", "args"):
        if key not in value:
            raise _ambiguous(f"a v1 tool decision needs {key!r}", json_path([key]))
    name, args = value["tool_name"], value["args"]
    if not isinstance(name, str) or not name:
        raise _ambiguous("tool_name must be a non-empty string", "$.tool_name")
    if not isinstance(args, Mapping):
        raise _ambiguous("args must be a JSON object", "$.args")
    call: dict[str, Any] = {"name": name, "arguments": copy.deepcopy(dict(args))}
    if "call_id" in value:
        if not isinstance(value["call_id"], str) or not value["call_id"]:
            raise _ambiguous("call_id must be a non-empty string", "$.call_id")
        call = {"call_id": value["call_id"], **call}
    return {"kind": "tool", "calls": [call]}
