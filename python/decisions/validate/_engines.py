"""The validators behind a JSON Schema :class:`~decisions.validate.schema.Schema`.

``jsonschema`` (with integers that are ints, not ``1.0``) is the reference:
it decides every invalid value and writes its issues. A schema that keeps
to the subset on which ``jsonschema-rs`` gives the same verdicts (the
differential test over the JSON-Schema-Test-Suite's draft 2020-12 cases,
``tests/test_schema_engines.py``) also gets a ``jsonschema-rs`` validator,
which says "valid" many times faster; a value it does not call valid is
handed to ``jsonschema``, so the issues and their paths are always
``jsonschema``'s. Outside the subset, and when ``jsonschema-rs`` is not
installed, ``jsonschema`` does everything.

The subset is decided once per schema, when it is compiled (:func:`fast_refusal`
says why a schema is left out), and once per value (:func:`plain_json`):
only values made of plain JSON types, without integers that a 64-bit number
cannot hold, non-finite floats or (where the schema types anything as an
integer) floats with no fraction, are asked. A compiled schema is kept per
digest of its canonical JSON, so the same schema in many tools or registries
is compiled and checked once.
"""

from __future__ import annotations

import copy
import hashlib
import math
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Final, Mapping

import jsonschema
import jsonschema.validators
import referencing
import referencing.exceptions
import referencing.jsonschema
from jsonschema_specifications import REGISTRY as _SPECIFICATIONS  # type: ignore[import-untyped]

from .._payload import canonical_json
from ._ecma import PatternError, PatternUnsupported, check_pattern, compile_pattern
from ._shapes import additional_names, close_json_schema

__all__ = [
    "FAST_VALIDATOR",
    "NOT_PLAIN",
    "PLAIN",
    "TOO_DEEP",
    "Compiled",
    "UnevaluatedError",
    "BranchBudgetExhausted",
    "compile_json_schema",
    "explaining",
    "union_validator_class",
    "verdicts_kept",
    "fast_refusal",
    "plain_json",
    "scan",
]


def _load_fast() -> Any:
    try:
        import jsonschema_rs
    except ImportError:
        return None
    return jsonschema_rs


_RS: Final[Any] = _load_fast()
#: The name of the fast validator (``"jsonschema-rs"``), or None when it is not installed.
FAST_VALIDATOR: Final[str | None] = None if _RS is None else "jsonschema-rs"


def _strict_integer(checker: Any, instance: Any) -> bool:
    return isinstance(instance, int) and not isinstance(instance, bool)


# ---------------------------------------------------------------- alternatives in linear time
#
# ``jsonschema``'s own ``anyOf``/``oneOf`` list every error of every branch,
# also to say "valid": for a value nested d deep in a recursive union of two
# branches that both look inside it, that is 2**d walks (a model's 20-deep
# object held a process for minutes). Here a branch is first asked for its
# verdict only: the first error ends the walk, and each (value, subschema)
# verdict is computed once per validation. The branches' errors, which the
# issues are written from, are listed only for a union that failed, only
# while :func:`explaining` is on, and within a bound on how many failed
# unions are explained (the error tree itself can be exponential).

#: (id(value), id(subschema)) -> (value, subschema, verdict) for the validation
#: in progress: both are held so their ids are not reused meanwhile.
_VERDICTS: ContextVar[dict[tuple[int, int], tuple[Any, Any, bool]] | None] = ContextVar("_VERDICTS", default=None)
#: The failed unions still to explain, while the issues are written (None: verdicts only).
_EXPLAIN: ContextVar[list[int] | None] = ContextVar("_EXPLAIN", default=None)
#: How many failed ``anyOf``/``oneOf``/``allOf`` one validation explains branch by branch.
MAX_EXPLAINED_UNIONS: Final = 2_000


class BranchBudgetExhausted(Exception):
    """More failed unions to explain than :data:`MAX_EXPLAINED_UNIONS`."""


@contextmanager
def explaining() -> Iterator[None]:
    """Within: failed unions carry their branches' errors (``context``), as
    ``jsonschema`` gives them, up to :data:`MAX_EXPLAINED_UNIONS` of them;
    then :class:`BranchBudgetExhausted`."""
    budget = _EXPLAIN.set([MAX_EXPLAINED_UNIONS])
    memo = _VERDICTS.set({})
    try:
        yield
    finally:
        _VERDICTS.reset(memo)
        _EXPLAIN.reset(budget)


@contextmanager
def verdicts_kept(memo: dict[tuple[int, int], tuple[Any, Any, bool]]) -> Iterator[None]:
    """Within: the unions' branch verdicts are read from and kept in
    ``memo``, across validations (of one value's parts, by schemas whose
    references resolve alike), as within one."""
    kept = _VERDICTS.set(memo)
    try:
        yield
    finally:
        _VERDICTS.reset(kept)


def _branch_valid(
    validator: Any, instance: Any, subschema: Any, index: int | str | None, memoize: bool, resolver: Any = None
) -> bool:
    memo = _VERDICTS.get()
    own = None
    if memo is None:  # the outermost union of this validation keeps the verdicts for the ones inside it
        memo = {}
        own = _VERDICTS.set(memo)
    try:
        key = (id(instance), id(subschema))
        found = memo.get(key) if memoize else None
        if found is not None and found[0] is instance and found[1] is subschema:
            return found[2]
        explain = _EXPLAIN.set(None)
        try:
            valid = (
                next(iter(validator.descend(instance, subschema, schema_path=index, resolver=resolver)), None) is None
            )
        finally:
            _EXPLAIN.reset(explain)
        if memoize:
            memo[key] = (instance, subschema, valid)
        return valid
    finally:
        if own is not None:
            _VERDICTS.reset(own)


def _branch_errors(validator: Any, branches: list[Any], instance: Any) -> list[Any] | None:
    """Every branch's errors, or None when verdicts alone are asked for."""
    budget = _EXPLAIN.get()
    if budget is None:
        return None
    if budget[0] <= 0:
        raise BranchBudgetExhausted
    budget[0] -= 1
    errors: list[Any] = []
    for index, subschema in enumerate(branches):
        errors.extend(validator.descend(instance, subschema, schema_path=index))
    return errors


def _spend_explanation() -> None:
    """Count one failed part explained (a union, a composition, a
    reference) against :data:`MAX_EXPLAINED_UNIONS`, while explaining."""
    budget = _EXPLAIN.get()
    if budget is not None:
        if budget[0] <= 0:
            raise BranchBudgetExhausted
        budget[0] -= 1


class UnevaluatedError(jsonschema.ValidationError):
    """An ``unevaluatedProperties`` failure that carries the members it is
    about, in the object's order: the issues name them without looking for
    each one in the message (a search per member through a message that
    lists them all costs the square of their number)."""

    names: tuple[str, ...] = ()


# ---------------------------------------------------------------- uniqueItems in linear time
#
# ``jsonschema``'s ``uniqueItems`` sorts the items, and when they cannot be
# sorted (objects, or numbers beside strings) compares every pair: 10,000
# objects are 50 million comparisons. Here each item gets a hashable key that
# is equal exactly when ``jsonschema``'s ``equal`` holds two items equal (``1``
# and ``1.0`` alike, ``true`` and ``1`` apart, at any depth), so one pass
# with a set decides. (The sorting path also missed duplicates that sort
# apart: ``[[1], [true], [1]]``.)

_LIST_KEY: Final = object()
_DICT_KEY: Final = object()
_BOOL_KEY: Final = object()


def equality_key(value: Any) -> Any:
    """A hashable key of the JSON value ``value``: two keys are equal exactly
    when ``jsonschema`` holds the values equal. Iterative (no recursion)."""
    built: list[Any] = []
    stack: list[tuple[Any, bool]] = [(value, False)]
    while stack:
        item, children_built = stack.pop()
        if children_built:
            count = len(item)
            keys = built[len(built) - count :] if count else []
            del built[len(built) - count :]
            if isinstance(item, Mapping):
                built.append((_DICT_KEY, frozenset(zip(item, keys))))
            else:
                built.append((_LIST_KEY, tuple(keys)))
        elif isinstance(item, bool):
            built.append((_BOOL_KEY, item))
        elif isinstance(item, Mapping):
            stack.append((item, True))
            stack.extend((child, False) for child in reversed(list(item.values())))
        elif isinstance(item, (list, tuple)):
            stack.append((item, True))
            stack.extend((child, False) for child in reversed(item))
        else:  # a string, a number, null
            built.append(item)
    return built[0]


def unique_items(validator: Any, unique: Any, instance: Any, schema: Any) -> Iterator[Any]:
    """``uniqueItems`` in one pass over the items (see :func:`equality_key`)."""
    if not unique or not validator.is_type(instance, "array"):
        return
    seen: set[Any] = set()
    for item in instance:
        key = equality_key(item)
        if key in seen:
            yield jsonschema.ValidationError(f"{instance!r} has non-unique elements")
            return
        seen.add(key)


def _unions(memoize: bool) -> dict[str, Any]:
    def ref(validator: Any, reference: Any, instance: Any, schema: Any) -> Iterator[Any]:
        # A value reaches a recursive schema only through references: kept
        # verdicts there make any walk linear, where ``jsonschema`` walks a
        # child once per path to it (``$ref`` beside ``properties`` that
        # both recurse: 2**depth, also to say valid).
        if getattr(validator, "_ref_resolver", None) is not None:  # the deprecated resolver: as it was
            yield from validator._validate_reference(ref=reference, instance=instance)
            return
        try:
            resolved = validator._resolver.lookup(reference)
        except referencing.exceptions.Unresolvable as err:
            raise jsonschema.exceptions._WrappedReferencingError(err) from err  # type: ignore[attr-defined]
        if _branch_valid(validator, instance, resolved.contents, None, memoize, resolved.resolver):
            return
        _spend_explanation()
        yield from validator.descend(instance, resolved.contents, resolver=resolved.resolver)

    def any_of(validator: Any, branches: Any, instance: Any, schema: Any) -> Iterator[Any]:
        if any(_branch_valid(validator, instance, sub, i, memoize) for i, sub in enumerate(branches)):
            return
        context = _branch_errors(validator, branches, instance)
        yield jsonschema.ValidationError(
            f"{instance!r} is not valid under any of the given schemas", context=context or ()
        )

    def all_of(validator: Any, parts: Any, instance: Any, schema: Any) -> Iterator[Any]:
        # ``jsonschema`` walks every part for its errors: parts that both look
        # inside a recursive value, 2**depth walks; here each part's verdict
        # first, then the failed parts' errors, in order, as it lists them
        failed = [
            index for index, part in enumerate(parts) if not _branch_valid(validator, instance, part, index, memoize)
        ]
        if not failed:
            return
        _spend_explanation()
        for index in failed:
            yield from validator.descend(instance, parts[index], schema_path=index)

    def one_of(validator: Any, branches: Any, instance: Any, schema: Any) -> Iterator[Any]:
        valid: list[int] = []
        for index, subschema in enumerate(branches):
            if _branch_valid(validator, instance, subschema, index, memoize):
                valid.append(index)
                if len(valid) == 2:
                    break
        if not valid:
            context = _branch_errors(validator, branches, instance)
            yield jsonschema.ValidationError(
                f"{instance!r} is not valid under any of the given schemas", context=context or ()
            )
        elif len(valid) > 1:
            valid += [
                index
                for index in range(valid[1] + 1, len(branches))
                if _branch_valid(validator, instance, branches[index], index, memoize)
            ]
            reprs = ", ".join(repr(branches[index]) for index in valid[1:] + valid[:1])
            yield jsonschema.ValidationError(f"{instance!r} is valid under each of {reprs}")

    def if_(validator: Any, condition: Any, instance: Any, schema: Any) -> Iterator[Any]:
        # ``jsonschema`` asks ``is_valid`` afresh: the condition and then/else both
        # look inside a recursive value, 2**depth walks without the kept verdict
        if _branch_valid(validator, instance, condition, "if", memoize):
            if "then" in schema:
                yield from validator.descend(instance, schema["then"], schema_path="then")
        elif "else" in schema:
            yield from validator.descend(instance, schema["else"], schema_path="else")

    def not_(validator: Any, negated: Any, instance: Any, schema: Any) -> Iterator[Any]:
        if _branch_valid(validator, instance, negated, "not", memoize):
            yield jsonschema.ValidationError(f"{instance!r} should not be valid under {negated!r}")

    def evaluated_keys(validator: Any, instance: Any, schema: Any) -> set[str]:
        """``jsonschema``'s ``find_evaluated_property_keys_by_schema`` with the
        branch verdicts kept: it asks every alternative and condition whether
        the object is valid, and each answer looks inside the object's
        children, whose own ``unevaluatedProperties`` ask again (2**depth)."""
        if validator.is_type(schema, "boolean"):
            return set()
        keys: set[str] = set()
        for ref_keyword in ("$ref", "$dynamicRef"):
            ref = schema.get(ref_keyword)
            if ref is not None:
                resolved = validator._resolver.lookup(ref)
                inner = validator.evolve(schema=resolved.contents, _resolver=resolved.resolver)
                keys |= evaluated_keys(inner, instance, resolved.contents)
        properties = schema.get("properties")
        if validator.is_type(properties, "object"):
            keys |= properties.keys() & instance.keys()
        for keyword in ("additionalProperties", "unevaluatedProperties"):
            subschema = schema.get(keyword)
            if subschema is not None:
                keys |= {
                    key
                    for key, value in instance.items()
                    if _branch_valid(validator, value, subschema, keyword, memoize)
                }
        if "patternProperties" in schema:
            for name in instance:
                if any(compile_pattern(pattern).search(name) for pattern in schema["patternProperties"]):
                    keys.add(name)
        if "dependentSchemas" in schema:
            for name, subschema in schema["dependentSchemas"].items():
                if name in instance:
                    keys |= evaluated_keys(validator, instance, subschema)
        for keyword in ("allOf", "oneOf", "anyOf"):
            for index, subschema in enumerate(schema.get(keyword, [])):
                if _branch_valid(validator, instance, subschema, index, memoize):
                    keys |= evaluated_keys(validator, instance, subschema)
        if "if" in schema:
            if _branch_valid(validator, instance, schema["if"], "if", memoize):
                keys |= evaluated_keys(validator, instance, schema["if"])
                if "then" in schema:
                    keys |= evaluated_keys(validator, instance, schema["then"])
            elif "else" in schema:
                keys |= evaluated_keys(validator, instance, schema["else"])
        return keys

    def unevaluated_properties(validator: Any, unevaluated: Any, instance: Any, schema: Any) -> Iterator[Any]:
        if not validator.is_type(instance, "object"):
            return
        evaluated = evaluated_keys(validator, instance, schema)
        extras = [
            name
            for name in instance
            if name not in evaluated and not _branch_valid(validator, instance[name], unevaluated, name, memoize)
        ]
        if extras:
            verb = "was" if len(extras) == 1 else "were"
            if unevaluated is False:
                listed = ", ".join(repr(each) for each in sorted(extras, key=str))
                error = UnevaluatedError(f"Unevaluated properties are not allowed ({listed} {verb} unexpected)")
            else:
                listed = ", ".join(repr(each) for each in extras)
                error = UnevaluatedError(
                    "Unevaluated properties are not valid under the given schema "
                    f"({listed} {verb} unevaluated and invalid)"
                )
            error.names = tuple(extras)
            yield error

    def evaluated_indexes(validator: Any, instance: Any, schema: Any) -> set[int]:
        """``find_evaluated_item_indexes_by_schema``, with the kept verdicts
        (see :func:`evaluated_keys`)."""
        if validator.is_type(schema, "boolean"):
            return set()
        if "items" in schema:
            return set(range(len(instance)))
        indexes: set[int] = set()
        for ref_keyword in ("$ref", "$dynamicRef"):
            ref = schema.get(ref_keyword)
            if ref is not None:
                resolved = validator._resolver.lookup(ref)
                inner = validator.evolve(schema=resolved.contents, _resolver=resolved.resolver)
                indexes |= evaluated_indexes(inner, instance, resolved.contents)
        if "prefixItems" in schema:
            indexes |= set(range(len(schema["prefixItems"])))
        if "if" in schema:
            if _branch_valid(validator, instance, schema["if"], "if", memoize):
                indexes |= evaluated_indexes(validator, instance, schema["if"])
                if "then" in schema:
                    indexes |= evaluated_indexes(validator, instance, schema["then"])
            elif "else" in schema:
                indexes |= evaluated_indexes(validator, instance, schema["else"])
        for keyword in ("contains", "unevaluatedItems"):
            if keyword in schema:
                indexes |= {
                    index
                    for index, item in enumerate(instance)
                    if _branch_valid(validator, item, schema[keyword], index, memoize)
                }
        for keyword in ("allOf", "oneOf", "anyOf"):
            for index, subschema in enumerate(schema.get(keyword, [])):
                if _branch_valid(validator, instance, subschema, index, memoize):
                    indexes |= evaluated_indexes(validator, instance, subschema)
        return indexes

    def unevaluated_items(validator: Any, unevaluated: Any, instance: Any, schema: Any) -> Iterator[Any]:
        if not validator.is_type(instance, "array"):
            return
        evaluated = evaluated_indexes(validator, instance, schema)
        extras = [item for index, item in enumerate(instance) if index not in evaluated]
        if extras:
            listed = ", ".join(repr(each) for each in extras)
            verb = "was" if len(extras) == 1 else "were"
            yield jsonschema.ValidationError(f"Unevaluated items are not allowed ({listed} {verb} unexpected)")

    return {
        "unevaluatedItems": unevaluated_items,
        "uniqueItems": unique_items,
        "$ref": ref,
        "allOf": all_of,
        "anyOf": any_of,
        "oneOf": one_of,
        "if": if_,
        "not": not_,
        "unevaluatedProperties": unevaluated_properties,
    }


# ---------------------------------------------------------------- ECMA-262 patterns
#
# ``jsonschema`` reads ``pattern``, ``patternProperties`` (and the names
# ``additionalProperties`` leaves to them) with Python's ``re``: other
# semantics than JSON Schema's ECMA-262, and backtracking a model's value can
# make exponential. These keywords search with :mod:`._ecma` instead.


def _pattern(validator: Any, pattern: Any, instance: Any, schema: Any) -> Iterator[Any]:
    if validator.is_type(instance, "string") and not compile_pattern(pattern).search(instance):
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, patterns: Any, instance: Any, schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        compiled = compile_pattern(pattern)
        for name, value in instance.items():
            if compiled.search(name):
                yield from validator.descend(value, subschema, path=name, schema_path=pattern)


def _additional_properties(validator: Any, additional: Any, instance: Any, schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    extras = set(additional_names(instance, schema))
    if validator.is_type(additional, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif not additional and extras:
        if "patternProperties" in schema:
            verb = "does" if len(extras) == 1 else "do"
            joined = ", ".join(repr(each) for each in sorted(extras))
            patterns = ", ".join(repr(each) for each in sorted(schema["patternProperties"]))
            yield jsonschema.ValidationError(f"{joined} {verb} not match any of the regexes: {patterns}")
        else:
            listed = ", ".join(repr(extra) for extra in sorted(extras, key=str))
            verb = "was" if len(extras) == 1 else "were"
            yield jsonschema.ValidationError(f"Additional properties are not allowed ({listed} {verb} unexpected)")


def _written(number: int | float) -> Fraction:
    """The number as a JSON text writes it: an int as itself, a float as
    the shortest decimal that reads back as it (``19.99``, not the binary
    fraction 19.989999999999998436…)."""
    return Fraction(number) if isinstance(number, int) else Fraction(repr(number))


def _multiple_of(validator: Any, divisor: Any, instance: Any, schema: Any) -> Iterator[Any]:
    """``multipleOf`` in exact decimal arithmetic: ``19.99`` is a multiple
    of ``0.01`` (as ``jsonschema-rs`` and Pydantic say), which float
    division (``19.99 / 0.01 == 1998.9999999999998``) denied."""
    if not validator.is_type(instance, "number"):
        return
    if isinstance(instance, int) and isinstance(divisor, int):
        failed = instance % divisor != 0
    else:
        failed = (_written(instance) / _written(divisor)).denominator != 1
    if failed:
        yield jsonschema.ValidationError(f"{instance!r} is not a multiple of {divisor}")


#: The keywords read as JSON Schema means them, where ``jsonschema``'s own
#: read them otherwise: patterns as ECMA-262, ``multipleOf`` in decimals.
_MEANT_KEYWORDS: Final = {
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
    "multipleOf": _multiple_of,
}


def _format_checker(base: Any) -> Any:
    """``base``'s format checker with ``regex`` read as ECMA-262 (so a
    schema's ``pattern`` is checked as :mod:`._ecma` will search it)."""
    checker = jsonschema.FormatChecker(())
    checker.checkers = {**base.FORMAT_CHECKER.checkers, "regex": (check_pattern, PatternError)}
    return checker


_STRICT_CLASSES: dict[tuple[type, bool, bool], Any] = {}


def _dynamic(schema: Any) -> bool:
    """Whether ``schema`` has dynamic references (a subschema's verdict then
    depends on the path that reached it, and is not kept)."""
    try:
        text = canonical_json(schema)
    except (TypeError, ValueError):
        return True
    return '"$dynamicRef"' in text or '"$recursiveRef"' in text


def union_validator_class(base: Any, schema: Any, *, strict: bool) -> Any:
    """``base`` (a ``jsonschema`` validator class) with linear-time
    ``anyOf``/``oneOf``, ECMA-262 patterns searched in linear time,
    ``multipleOf`` in decimals, and strict integers when ``strict``."""
    memoize = not _dynamic(schema)
    key = (base, strict, memoize)
    cls = _STRICT_CLASSES.get(key)
    if cls is None:
        extend: Any = jsonschema.validators.extend
        checker = base.TYPE_CHECKER.redefine("integer", _strict_integer) if strict else None
        # only the keywords the draft has (draft 3 has no anyOf, draft 6 no if)
        checks = {**_MEANT_KEYWORDS, **_unions(memoize)}
        keywords = {name: check for name, check in checks.items() if name in base.VALIDATORS}
        cls = extend(base, validators=keywords, type_checker=checker, format_checker=_format_checker(base))
        _STRICT_CLASSES[key] = cls
    return cls


def strict_validator_class(schema: Mapping[str, Any]) -> Any:
    """The ``jsonschema`` validator class for ``schema``'s draft, with strict
    integers and linear-time alternatives."""
    base = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return union_validator_class(base, schema, strict=True)


# ---------------------------------------------------------------- the agreed subset

#: Keywords whose value is one subschema, a list of them, or a map of them.
_SUB_ONE: Final = (
    "not",
    "if",
    "then",
    "else",
    "items",
    "contains",
    "additionalProperties",
    "unevaluatedProperties",
    "unevaluatedItems",
    "propertyNames",
    "contentSchema",
)
_SUB_LIST: Final = ("allOf", "anyOf", "oneOf", "prefixItems")
_SUB_MAP: Final = ("properties", "patternProperties", "$defs", "dependentSchemas")
#: Keywords the subset leaves out: base URIs and anchors, dynamic references,
#: vocabularies, and draft 7's ``dependencies`` (which 2020-12 ``jsonschema``
#: ignores and ``jsonschema-rs`` applies).
_OUTSIDE: Final = frozenset(
    {
        "$id",
        "$anchor",
        "$dynamicRef",
        "$dynamicAnchor",
        "$recursiveRef",
        "$recursiveAnchor",
        "$vocabulary",
        "dependencies",
    }
)
_DRAFT_2020_12: Final = frozenset(
    {"https://json-schema.org/draft/2020-12/schema", "https://json-schema.org/draft/2020-12/schema#"}
)
#: A local reference to the root or to one ``$defs`` entry.
_LOCAL_REF: Final = re.compile(r"#(?:/\$defs/[A-Za-z0-9_.-]+)?")
#: A pattern both validators search the same way (ECMA-262 in both: see
#: :mod:`._ecma` and the differential test in tests/test_schema_patterns.py):
#: ASCII letters, digits and a few characters, anchors, classes, groups
#: without ``(?``, counted repeats, ``\\d``/``\\w`` and their complements, and
#: escaped punctuation; no ``\\b`` (``jsonschema-rs`` takes every script's
#: letters as word characters there), no ``\\s`` (left to the reference:
#: the differential test does not try every white space), no ``[]``.
_PORTABLE_PATTERN: Final = re.compile(
    r"(?:[A-Za-z0-9_ ,:;=!@#%&'\"<>/~^$|*+?().\[\]-]|\{\d+(?:,\d*)?\}|\\[dDwW.\-/+*?()\[\]{}|^$\\])*"
)
_INT_RANGE: Final = (-(2**63), 2**64)


def _portable(pattern: Any) -> bool:
    if not isinstance(pattern, str) or _PORTABLE_PATTERN.fullmatch(pattern) is None:
        return False
    if "(?" in pattern or "[]" in pattern or "[^]" in pattern:
        return False
    try:  # one that is not ECMA-262 fails there, not here
        compile_pattern(pattern)
    except PatternError:
        return False
    return True


def _plain_number(value: Any) -> bool:
    if type(value) is int:
        return _INT_RANGE[0] <= value < _INT_RANGE[1]
    return type(value) is not float or math.isfinite(value)


def _numbers_plain(value: Any) -> bool:
    """Whether every number anywhere in ``value`` fits both validators."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif not _plain_number(item):
            return False
    return True


def _references(node: Any) -> set[str]:
    """The ``$ref`` values anywhere inside ``node``."""
    found: set[str] = set()
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            ref = item.get("$ref")
            if isinstance(ref, str):
                found.add(ref)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def _unevaluated(node: Any) -> bool:
    """Whether ``unevaluatedProperties`` or ``unevaluatedItems`` is anywhere inside ``node``."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if "unevaluatedProperties" in item or "unevaluatedItems" in item:
                return True
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _recursive(schema: dict[str, Any]) -> bool:
    """Whether a local reference of ``schema`` can reach itself (through the
    root or ``$defs`` entries): then a value can nest as deep as it likes."""
    defs = schema.get("$defs")
    targets: dict[str, Any] = {"#": schema}
    if isinstance(defs, dict):
        targets.update((f"#/$defs/{name}", body) for name, body in defs.items())
    edges = {name: _references(body) & targets.keys() for name, body in targets.items()}
    for start in edges:
        seen: set[str] = set()
        stack = list(edges[start])
        while stack:
            name = stack.pop()
            if name == start:
                return True
            if name not in seen:
                seen.add(name)
                stack.extend(edges[name])
    return False


def fast_refusal(schema: Any) -> str | None:
    """Why ``schema`` (as applied) is left to ``jsonschema`` alone, or None
    when it keeps to the agreed subset."""
    if not isinstance(schema, dict):
        return "not an object schema"
    declared = schema.get("$schema")
    if declared is not None and declared not in _DRAFT_2020_12:
        return f"draft {declared!r}"
    if not _numbers_plain(schema):
        return "a number beyond 64 bits or not finite"
    if _recursive(schema) and _unevaluated(schema):
        # jsonschema-rs asks each alternative about each level of a recursive
        # value again to find the evaluated members: 2**depth walks to say "valid"
        return "unevaluated keywords in a recursive schema"
    stack: list[Any] = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, bool):
            continue
        if not isinstance(node, dict):
            return "a subschema that is not an object or a boolean"
        if node is not schema and "$schema" in node:
            return "an embedded $schema"
        outside = _OUTSIDE.intersection(node)
        if outside:
            return f"keyword {sorted(outside)[0]}"
        ref = node.get("$ref")
        if ref is not None and (not isinstance(ref, str) or _LOCAL_REF.fullmatch(ref) is None):
            return f"$ref {ref!r}"
        if "pattern" in node and not _portable(node["pattern"]):
            return f"pattern {node['pattern']!r}"
        divisor = node.get("multipleOf")
        if divisor is not None and type(divisor) is not int:
            return "a multipleOf that is not an integer"
        for key in _SUB_ONE:
            if key in node:
                stack.append(node[key])
        for key in _SUB_LIST:
            value = node.get(key)
            if isinstance(value, list):
                stack.extend(value)
            elif value is not None:
                return f"{key} that is not a list"
        for key in _SUB_MAP:
            value = node.get(key)
            if isinstance(value, dict):
                if key == "patternProperties" and not all(_portable(p) for p in value):
                    return "a patternProperties pattern"
                stack.extend(value.values())
            elif value is not None:
                return f"{key} that is not an object"
    return None


def _types_integer(schema: Any) -> bool:
    """Whether ``integer`` is named anywhere in ``schema`` (a string value anywhere)."""
    stack = [schema]
    while stack:
        item = stack.pop()
        if item == "integer":
            return True
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


#: What :func:`scan` finds: a value both validators read the same way, one
#: the fast validator must not be asked about, one nested too deep.
PLAIN: Final = 0
NOT_PLAIN: Final = 1
TOO_DEEP: Final = 2


def scan(value: Any, integers: bool, bound: int) -> int:
    """:data:`PLAIN` when ``value`` is made of plain JSON types that both
    validators read the same way (exact dict with str keys, list, str, bool,
    None, ints within 64 bits, finite floats, and, when ``integers``, no float
    with a zero fraction: ``jsonschema-rs`` counts ``1.0`` as an integer) and
    nests at most ``bound`` levels; :data:`TOO_DEEP` when it nests deeper
    (found before anything else that is not plain); else :data:`NOT_PLAIN`.
    One pass, level by level, without recursion."""
    level = [value]
    depth = 0
    low, high = _INT_RANGE
    while level:
        depth += 1
        following: list[Any] = []
        for item in level:
            kind = type(item)
            if kind is str or kind is bool or item is None:
                continue
            if kind is dict:
                if depth > bound:
                    return TOO_DEEP
                for key in item:
                    if type(key) is not str:
                        return NOT_PLAIN
                following.extend(item.values())
            elif kind is list:
                if depth > bound:
                    return TOO_DEEP
                following.extend(item)
            elif kind is int:
                if not low <= item < high:
                    return NOT_PLAIN
            elif kind is float:
                if not math.isfinite(item) or (integers and item.is_integer()):
                    return NOT_PLAIN
            else:
                return NOT_PLAIN
        level = following
    return PLAIN


def plain_json(value: Any, integers: bool) -> bool:
    """Whether the fast validator may be asked about ``value`` (see :func:`scan`; any depth)."""
    return scan(value, integers, 1 << 62) == PLAIN


# ---------------------------------------------------------------- compiling once


@dataclass(frozen=True, slots=True)
class Compiled:
    """One JSON Schema, compiled: the schema as applied (objects closed or
    not), its ``jsonschema`` validator, and its ``jsonschema-rs`` validator
    (None, with the reason in ``refusal``, when it is outside the subset)."""

    applied: dict[str, Any]
    reference: Any
    fast: Any
    refusal: str | None
    integers: bool


_CACHE: dict[tuple[str, bool], Compiled] = {}
_CACHE_LOCK: Final = threading.Lock()
#: At most this many compiled schemas are kept (the oldest goes first).
CACHE_SIZE: Final = 512


def _digest(spec: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical_json(spec).encode("utf-8", "surrogatepass")).hexdigest()


#: Where a ``false`` subschema is replaced by ``{"not": {}}`` for the
#: reference validator (see :func:`false_located`). ``additionalProperties``
#: and ``unevaluatedProperties`` report their own ``false`` with the names.
_FALSE_ONE: Final = tuple(k for k in _SUB_ONE if k not in ("additionalProperties", "unevaluatedProperties"))
_FALSE_MAP: Final = (*_SUB_MAP, "definitions", "dependencies")


def false_located(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with each ``false`` subschema written ``{"not": {}}``, which
    allows the same nothing. ``jsonschema`` reports a ``false`` subschema
    without the member or item it stands for (``properties: {"a": false}``
    fails at ``$``, not ``$.a``); a ``not`` is reported where it applies.
    Changed in place (``schema`` is the validator's own copy)."""
    nothing: dict[str, Any] = {"not": {}}
    stack: list[Any] = [schema]
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if not isinstance(node, dict) or id(node) in seen:
            continue
        seen.add(id(node))
        for key in _FALSE_ONE:
            if node.get(key) is False:
                node[key] = dict(nothing)
            stack.append(node.get(key))
        for key in (*_SUB_LIST, "items"):  # ``items`` as a list: draft 7 and older
            members = node.get(key)
            if isinstance(members, list):
                node[key] = [dict(nothing) if m is False else m for m in members]
                stack.extend(node[key])
        for key in _FALSE_MAP:
            members = node.get(key)
            if isinstance(members, dict):
                node[key] = {k: dict(nothing) if v is False else v for k, v in members.items()}
                stack.extend(node[key].values())
        for key in ("additionalProperties", "unevaluatedProperties"):
            stack.append(node.get(key))
    return schema


#: What the reference resolves a ``$ref`` against: the schema itself and the
#: drafts' metaschemas, never anything fetched (``jsonschema`` alone would
#: fetch a remote ``$ref`` over the network on every validation).
_OFFLINE: Final = referencing.Registry()


def check_references(cls: Any, schema: Any) -> None:
    """ValueError unless every ``$ref`` and ``$dynamicRef`` in ``schema``,
    and in each schema they lead to, resolves offline to a schema (so no
    validation meets an unresolvable reference); resolved from where each
    sits, as the reference validator resolves it."""
    specification = referencing.jsonschema.specification_with(
        cls.ID_OF(cls.META_SCHEMA) or "urn:unknown-dialect", default=referencing.Specification.OPAQUE
    )
    root = specification.create_resource(schema)
    stack = [(_SPECIFICATIONS.combine(_OFFLINE).resolver_with_root(root), root)]
    seen: set[int] = set()
    while stack:
        resolver, resource = stack.pop()
        contents = resource.contents
        if id(contents) in seen:
            continue
        seen.add(id(contents))
        if isinstance(contents, dict):
            for keyword in ("$ref", "$dynamicRef"):
                ref = contents.get(keyword)
                if not isinstance(ref, str):
                    continue
                try:
                    resolved = resolver.lookup(ref)
                except referencing.exceptions.Unresolvable as error:
                    raise ValueError(
                        f"the schema's {keyword} {ref!r} does not resolve ({type(error).__name__}): "
                        "a reference must name a part of the schema itself (nothing is fetched)"
                    ) from None
                if not isinstance(resolved.contents, (dict, bool)):
                    raise ValueError(f"the schema's {keyword} {ref!r} names something that is not a schema")
                stack.append((resolved.resolver, specification.create_resource(resolved.contents)))
        stack.extend((resolver.in_subresource(sub), sub) for sub in resource.subresources())


def _compile(spec: Mapping[str, Any], closed: bool) -> Compiled:
    cls = strict_validator_class(spec)
    try:
        cls.check_schema(spec, format_checker=cls.FORMAT_CHECKER)
    except jsonschema.SchemaError as error:
        if isinstance(error.cause, PatternUnsupported):
            where = "".join(f"[{part!r}]" for part in error.absolute_path)
            raise PatternUnsupported(
                f"the schema's pattern {error.instance!r} at {where or 'the root'}: {error.cause}"
            ) from None
        if isinstance(error.cause, PatternError):
            error.message = f"{error.message} (as ECMA-262: {error.cause})"
        raise
    applied = (
        close_json_schema(spec, "unevaluatedProperties" in cls.VALIDATORS) if closed else copy.deepcopy(dict(spec))
    )
    located = false_located(copy.deepcopy(applied))
    check_references(cls, located)
    reference = cls(located, registry=_OFFLINE)
    refusal = "jsonschema-rs is not installed" if _RS is None else fast_refusal(applied)
    fast = None
    if refusal is None:
        try:
            fast = _RS.Draft202012Validator(applied, validate_formats=False, offline=True)
        except Exception as error:  # noqa: BLE001  (any refusal of the fast one leaves the reference)
            refusal = f"jsonschema-rs cannot compile it: {error}"
    return Compiled(applied, reference, fast, refusal, _types_integer(applied))


def compile_json_schema(spec: Mapping[str, Any], closed: bool) -> Compiled:
    """The compiled form of ``spec``, a plain JSON copy (see
    :func:`~decisions._payload.plain_json`: the digest and the validators
    are then made of one value), checked against its draft's metaschema
    first (``jsonschema.SchemaError``; a reference that does not resolve
    offline: ValueError); shared by every schema of the same digest."""
    key = (_digest(spec), closed)
    found = _CACHE.get(key)
    if found is None:
        found = _compile(spec, closed)
        with _CACHE_LOCK:
            while len(_CACHE) >= CACHE_SIZE:
                _CACHE.pop(next(iter(_CACHE)))
            _CACHE[key] = found
    return found
