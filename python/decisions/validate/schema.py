"""The schema layer: a value that parsed is checked against the shape the
caller asked for.

:class:`Schema` wraps either a Pydantic type (a model, a discriminated union,
any type a ``TypeAdapter`` accepts) or a JSON Schema dict (Draft 2020-12 by
default, or the draft its ``$schema`` names), validated with ``jsonschema``
(``jsonschema-rs`` says "valid" first where it agrees: see
:mod:`decisions.validate._engines`; a schema is compiled once per digest).
Both are strict: no coercion (``"1"``, ``true`` and ``1.0`` are not
integers), and ``null`` is not the same as a missing field.

Objects are closed by default (``closed=True``): a field the schema does not
declare is an ``unexpected`` issue at its path (``$.calls[0].arguments.toolNmae``),
where Pydantic would ignore it and JSON Schema would let it through. For a
Pydantic type every model, TypedDict and dataclass in it is validated with
``extra="forbid"``; one that sets ``extra`` to ``"allow"`` or ``"ignore"`` itself
cannot be honoured beside that, so it is a ValueError naming the class, to be
resolved with ``closed=False``. For a JSON Schema every object that declares
``properties`` (or ``patternProperties``) and says nothing about
``additionalProperties``/``unevaluatedProperties`` is closed: with
``additionalProperties: false`` when it is built from no other schema, with
``unevaluatedProperties: false`` when it is composed (``$ref``, ``allOf``,
``anyOf``, ``oneOf``, ``if``/``then``/``else``), so that the properties of the
parts count; a draft older than 2019-09 cannot close a composed object, which
is a ValueError. ``additionalProperties: true`` (or a schema) is an explicit
opt-out and is kept, and so is an object that declares no properties (a
free-form map). Nothing under ``not`` or ``if`` is changed (closing there
would loosen the schema). ``closed=False`` applies the schema as written.

A failure is one :class:`~decisions.errors.SchemaError` ``SCHEMA_MISMATCH``
whose ``issues`` are ``{path, code, expected}`` dicts. ``path`` is a JSON path
(``$.calls[0].arguments.path``); ``code`` is one of :data:`ISSUE_CODES`, the
same whichever validator found it.

The parts live beside this module: :mod:`~decisions.validate._issues` (the
issue codes and how each validator's errors map to them),
:mod:`~decisions.validate._shapes` (closing objects, field selectors) and
:mod:`~decisions.validate._engines` (the JSON Schema validators, compiled once).
"""

from __future__ import annotations

import json
from typing import Any, Final, Mapping, Sequence

from pydantic import TypeAdapter, ValidationError

from .._payload import plain_json
from ..errors import json_path as json_path  # the tests and older callers import it from here
from ._ecma import SearchTooCostly
from ._engines import PLAIN, TOO_DEEP, BranchBudgetExhausted, Compiled, compile_json_schema, explaining, scan
from ._issues import (
    ISSUE_CODES,
    MAX_ISSUES,
    MAX_VALIDATION_DEPTH,
    error_order,
    issue,
    js_issues,
    not_json,
    pydantic_issues,
)
from ._issues import schema_mismatch as schema_mismatch  # decide imports it from here
from ._shapes import (
    core_definitions,
    core_expand,
    core_step,
    echoed_fields,
    explicitly_open,
    js_expand,
    js_step,
    selector_text,
)
from ._shown import shown

__all__ = [
    "Schema",
    "ISSUE_CODES",
]


#: What a value no alternative of too many nested unions accepts is told.
_PATTERN_TOO_COSTLY: Final = (
    "a value whose strings the schema's patterns can be matched against within their search bound"
)
_TOO_MANY_ALTERNATIVES: Final = (
    "a value the schema accepts (it fails in too many alternatives, parts or references at once to list)"
)


#: How deep a JSON Schema's objects and arrays may nest. Checking a schema
#: against its metaschema (and compiling it) recurses in ``jsonschema``,
#: eight to twelve Python frames for each level of the schema: at this bound
#: that is about 500 of the interpreter's 1,000, the rest left to the caller.
#: A schema from elsewhere (a tool list an MCP server sends) nested deeper is
#: a ``ValueError``, not a ``RecursionError`` from inside the validator.
MAX_SCHEMA_DEPTH: Final = 64


def _too_deep(root: str) -> list[dict[str, str]]:
    """The one issue of a value nested deeper than validation goes."""
    return [issue(root, (), "too_deep", f"at most {MAX_VALIDATION_DEPTH} levels of nesting")]


class Schema:
    """A compiled, strict validator for one Pydantic type or JSON Schema.

    Build it once (``Schema.of(spec)``) and reuse it: compiling checks the
    schema itself, which costs more than validating a value. A JSON Schema
    is copied when the Schema is built (``spec`` is that plain copy; see
    :func:`~decisions._payload.plain_json`): what is validated, digested and
    shown is what the mapping held then (ValueError for one that is not
    JSON).
    """

    __slots__ = (
        "spec",
        "kind",
        "closed",
        "_adapter",
        "_compiled",
        "_extra",
        "_applied",
        "_validator",
        "_serializer",
        "_echo",
    )

    spec: Any
    kind: str
    closed: bool

    def __init__(self, spec: Any, *, closed: bool = True) -> None:
        self.spec = spec
        self.closed = closed
        self._adapter: TypeAdapter[Any] | None = None
        self._compiled: Compiled | None = None
        self._extra: Any = None
        #: A Pydantic type's own validator and serializer (None for a JSON
        #: Schema): what ``TypeAdapter.validate_json`` and ``dump_python`` call.
        self._validator: Any = None
        self._serializer: Any = None
        #: A closed model's field names when its dump of a validated input
        #: with exactly those keys in that order is the input itself (see
        #: :func:`~decisions.validate._shapes.echoed_fields`), else None.
        self._echo: tuple[str, ...] | None = None
        if isinstance(spec, Mapping):
            self.kind = "json_schema"
            try:
                # one plain copy, read once: digested, compiled and shown alike, whatever the caller's
                # mapping does later or answers through methods of its own
                spec = self.spec = plain_json(spec)
            except (TypeError, ValueError) as error:
                raise ValueError(f"a JSON Schema must be JSON: {error}") from None
            if _nested_deeper(spec, MAX_SCHEMA_DEPTH):
                raise ValueError(f"a JSON Schema may nest objects and arrays at most {MAX_SCHEMA_DEPTH} levels deep")
            try:
                self._compiled = compile_json_schema(spec, closed)
            except RecursionError:  # the caller's own stack was already deep
                raise ValueError(
                    "the JSON Schema could not be checked: the caller's stack was already too deep for its nesting"
                ) from None
            self._applied: Any = self._compiled.applied
        else:
            self.kind = "pydantic"
            self._adapter = spec if isinstance(spec, TypeAdapter) else TypeAdapter(spec)
            self._applied = self._adapter.core_schema
            if closed:
                opened = explicitly_open(self._applied)
                if opened:
                    raise ValueError(
                        f"{', '.join(opened)} set extra themselves, which a closed schema would override: "
                        "make them extra='forbid' or unset, or pass closed=False (Tool(extra='allow')) "
                        "to validate as the models say"
                    )
                self._extra = "forbid"
                self._echo = echoed_fields(self._applied)
            self._validator = self._adapter.validator
            self._serializer = self._adapter.serializer

    @classmethod
    def of(cls, spec: Any, *, closed: bool = True) -> Schema:
        """``spec`` itself if it is a Schema, else a compiled one."""
        return spec if isinstance(spec, Schema) else cls(spec, closed=closed)

    def dump(self, value: Any) -> Any:
        """The JSON form of a validated value: what a Pydantic type produced,
        dumped by field name (so aliases and validators have had their say);
        a JSON Schema value is already JSON and is returned as it is."""
        if self._serializer is None:
            return value
        # the adapter's serializer itself: TypeAdapter.dump_python calls it with these arguments
        return self._serializer.to_python(value, mode="json", by_alias=False)

    def check_selector(self, steps: Sequence[str | None]) -> None:
        """ValueError unless every step of a field selector (a field name, or
        None for every item of an array) names something this schema defines."""
        if self._adapter is not None:
            defs = core_definitions(self._applied)
            nodes: list[Any] = [self._applied]
            expand: Any = lambda n: core_expand(n, defs)  # noqa: E731
            step_of: Any = core_step
        else:
            root = self._applied
            nodes = [root]
            expand = lambda n: js_expand(n, root)  # noqa: E731
            step_of = js_step
        for position, step in enumerate(steps):
            following: list[Any] = []
            for node in nodes:
                for shape in expand(node):
                    found = step_of(shape, step)
                    if found is not None:
                        following.extend(found)
            if not following:
                what = "array items ([*])" if step is None else f"field {step!r}"
                where = selector_text(steps[:position]) or "the arguments"
                raise ValueError(f"the schema defines no {what} under {where}")
            nodes = following

    def __repr__(self) -> str:
        return f"Schema({self.kind})"

    @property
    def validator(self) -> str:
        """Which validator says a value is valid: ``"pydantic"``,
        ``"jsonschema-rs"`` (a JSON Schema in the subset where it agrees with
        ``jsonschema``, which still writes every issue) or ``"jsonschema"``."""
        if self._compiled is None:
            return "pydantic"
        return "jsonschema" if self._compiled.fast is None else "jsonschema-rs"

    @property
    def returns_model(self) -> bool:
        """True when validation returns Python objects (Pydantic), not the JSON value."""
        return self.kind == "pydantic"

    def json_schema(self) -> dict[str, Any]:
        """The JSON Schema of this schema (generated for Pydantic types)."""
        if self._adapter is not None:
            return self._adapter.json_schema()
        return dict(self.spec)

    def issues(self, value: Any, *, text: str | None = None, root: str = "$") -> tuple[list[dict[str, str]], Any]:
        """``(issues, validated)``: the issues found (empty when the value
        matches) and the validated value (None when there are issues)."""
        return self._issues_at(value, text, root)

    def _issues_at(self, value: Any, text: str | None, root: str | int) -> tuple[list[dict[str, str]], Any]:
        """:meth:`issues` at ``root``, a JSON path or the index of a call
        whose arguments ``value`` is (``$.calls[i].arguments``, a path built
        only when there are issues)."""
        compiled = self._compiled
        if compiled is not None and compiled.fast is not None:
            found = scan(value, compiled.integers, MAX_VALIDATION_DEPTH)
            if found == TOO_DEEP:
                return _too_deep(_root(root)), None
            if found == PLAIN and _fast_valid(compiled.fast, value):
                return [], value
        # a text with fewer brackets than the bound (or fewer characters) cannot nest deeper
        if (
            text is None
            or (len(text) > MAX_VALIDATION_DEPTH and text.count("[") + text.count("{") > MAX_VALIDATION_DEPTH)
        ) and _nested_deeper(value, MAX_VALIDATION_DEPTH):
            return _too_deep(_root(root)), None
        try:
            return self._issues(value, text, root)
        except RecursionError:  # the caller's own stack was already deep
            return _too_deep(_root(root)), None

    def _issues(self, value: Any, text: str | None, root: str | int) -> tuple[list[dict[str, str]], Any]:
        source = text
        if source is None:  # a Python value, not parsed JSON: it must be JSON to be validated as JSON
            try:
                source = json.dumps(value, ensure_ascii=False, allow_nan=False)
            except (TypeError, ValueError):
                return not_json(value, _root(root)), None
        if self._compiled is None:
            try:
                # the adapter's validator itself: TypeAdapter.validate_json calls it with these arguments
                return [], self._validator.validate_json(source, strict=True, extra=self._extra)
            except ValidationError as error:
                return pydantic_issues(error, value, _root(root)), None
            except RecursionError:
                raise
            except Exception as error:  # fail closed: a validator that breaks did not accept the value
                return [
                    issue(
                        _root(root), (), "invalid", f"a value the validators accept (one raised {type(error).__name__})"
                    )
                ], None
        issues: list[dict[str, str]] = []
        said: set[tuple[str, str, str]] = set()
        where = _root(root)
        reference = self._compiled.reference
        try:
            with explaining():  # every message written shows the value's parts bounded (see ``_shown``)
                failures = sorted(reference.iter_errors(shown(value)), key=error_order)
            for failure in failures:
                for found in js_issues(failure, where):
                    key = (found["path"], found["code"], found["expected"])
                    if key not in said:  # one failure reached by two paths of the schema is said once
                        said.add(key)
                        issues.append(found)
                if len(issues) >= MAX_ISSUES:
                    break
        except BranchBudgetExhausted:
            return [issue(where, (), "invalid", _TOO_MANY_ALTERNATIVES)], None
        except SearchTooCostly:
            return [issue(where, (), "invalid", _PATTERN_TOO_COSTLY)], None
        return (issues, None) if issues else ([], value)

    def validate(self, value: Any, *, text: str | None = None, root: str = "$") -> Any:
        """The validated value, or :class:`SchemaError` ``SCHEMA_MISMATCH``.

        ``value`` is the parsed JSON; ``text`` (optional) the JSON text it was
        parsed from, which Pydantic validates in strict JSON mode.
        """
        issues, validated = self.issues(value, text=text, root=root)
        if issues:
            raise schema_mismatch(issues)
        return validated


def _root(root: str | int) -> str:
    """The JSON path ``root`` stands for (an int: a call's arguments)."""
    return root if isinstance(root, str) else f"$.calls[{root}].arguments"


def _fast_valid(fast: Any, value: Any) -> bool:
    """The fast validator's "valid"; False (the reference then decides) for a
    value it cannot take (a lone surrogate in a string)."""
    try:
        return bool(fast.is_valid(value))
    except ValueError:
        return False


def _nested_deeper(value: Any, bound: int) -> bool:
    """Whether lists and dicts in ``value`` nest deeper than ``bound`` (no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children: Any = item.values() if type(item) is dict else item if type(item) is list else None
        if children is None:
            continue
        if depth > bound:
            return True
        stack.extend((child, depth + 1) for child in children if type(child) is dict or type(child) is list)
    return False
