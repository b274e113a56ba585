"""Tool and output definitions: a name, a description and a Pydantic model or
JSON Schema, from which :mod:`~decisions.request.fragments` builds each
provider's request and :func:`decisions.decide` checks the answer."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final, Mapping

from ..validate._engines import compile_json_schema
from ..validate.domain import Tool
from ..validate.schema import Schema
from .conversion import _json_copy

__all__ = ["ToolDefinition", "OutputDefinition"]

#: Names the four APIs all accept for tools and output formats.
_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")


# ---------------------------------------------------------------- definitions


def _schema_of(source: Any) -> tuple[dict[str, Any], Any]:
    """The JSON Schema dict for a schema dict, a Pydantic model or any type
    Pydantic's ``TypeAdapter`` accepts; and the model/type (or None). A
    schema dict is checked as :class:`~decisions.validate.schema.Schema`
    checks it (its draft's metaschema: ``jsonschema.SchemaError``; a
    reference that does not resolve offline: ValueError), so no provider is
    sent a schema that ``decide`` would refuse to compile."""
    if isinstance(source, Mapping):
        schema = _json_copy(source)
        compile_json_schema(schema, False)
        return schema, None
    import pydantic

    if isinstance(source, type) and issubclass(source, pydantic.BaseModel):
        return source.model_json_schema(), source
    if isinstance(source, pydantic.TypeAdapter):
        return source.json_schema(), source
    try:
        return pydantic.TypeAdapter(source).json_schema(), source
    except pydantic.PydanticSchemaGenerationError as exc:
        raise TypeError(f"cannot build a JSON Schema from {source!r}") from exc


def _check_name(name: str, what: str) -> str:
    if not isinstance(name, str) or _NAME.fullmatch(name) is None:
        raise ValueError(f"{what} name {name!r} must match {_NAME.pattern} (accepted by every provider)")
    return name


@dataclass(frozen=True, slots=True, init=False)
class ToolDefinition:
    """One tool: ``name``, ``description`` and its arguments' schema.

    ``parameters`` is a Pydantic model class, any type Pydantic can describe,
    or a JSON Schema dict; ``schema`` is the resulting JSON Schema and
    ``model`` the class or type (``None`` for a dict). ``control`` marks a
    control-protocol tool (``submit_*``) that has no side effect.
    """

    name: str
    description: str
    schema: dict[str, Any]
    model: Any
    control: bool

    def __init__(self, name: str, parameters: Any, description: str = "", *, control: bool = False) -> None:
        schema, model = _schema_of(parameters)
        object.__setattr__(self, "name", _check_name(name, "tool"))
        object.__setattr__(self, "description", description or str(schema.get("description", "")))
        object.__setattr__(self, "schema", schema)
        object.__setattr__(self, "model", model)
        object.__setattr__(self, "control", control)

    @classmethod
    def of(cls, source: Any) -> ToolDefinition:
        """``source`` itself, or the definition of a registered
        :class:`decisions.Tool` (same name, parameters and description), so
        one tool list serves both the request and :func:`decisions.decide`."""
        if isinstance(source, ToolDefinition):
            return source

        if not isinstance(source, Tool):
            raise TypeError(f"expected a ToolDefinition or a decisions.Tool, not {type(source).__name__}")
        parameters = source.parameters
        if parameters is None:
            parameters = {"type": "object"}
        elif source.schema is not None and source.schema.kind == "json_schema":
            parameters = source.schema.spec  # the copy decide validates with, whatever became of the caller's dict
        elif isinstance(parameters, Schema):
            parameters = parameters.spec
        return cls(source.name, parameters, source.description)


@dataclass(frozen=True, slots=True, init=False)
class OutputDefinition:
    """The final answer's shape: a Pydantic model, a type (e.g. a
    discriminated union) or a JSON Schema dict, with the name the provider
    sees and an optional schema id and version (``agent.decision`` /
    ``2.1.0``) kept in request and parse records."""

    name: str
    description: str
    schema: dict[str, Any]
    model: Any
    schema_id: str | None
    schema_version: str | None

    def __init__(
        self,
        schema: Any,
        *,
        name: str | None = None,
        description: str = "",
        schema_id: str | None = None,
        schema_version: str | None = None,
    ) -> None:
        json_schema, model = _schema_of(schema)
        if name is None:
            name = getattr(model, "__name__", None) or str(json_schema.get("title", "")) or "output"
            name = re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64] or "output"
        object.__setattr__(self, "name", _check_name(name, "output"))
        object.__setattr__(self, "description", description or str(json_schema.get("description", "")))
        object.__setattr__(self, "schema", json_schema)
        object.__setattr__(self, "model", model)
        object.__setattr__(self, "schema_id", schema_id)
        object.__setattr__(self, "schema_version", schema_version)

    @classmethod
    def of(cls, source: Any) -> OutputDefinition:
        """``source`` itself if it is one, else a definition built from it."""
        return source if isinstance(source, OutputDefinition) else cls(source)

    def submit_tool(self) -> ToolDefinition:
        """The ``submit_<name>`` control tool that carries this output when
        the provider has tools but no native structured output."""
        name = f"submit_{self.name}"[:64]
        description = self.description or f"Submit the final answer as a {self.name} value."
        return ToolDefinition(name, self.schema, description, control=True)
