"""The conversion undone on a response value.

A value the model wrote for a converted schema (see
:mod:`~decisions.request.conversion`) is walked along the ORIGINAL schema:
the ``null`` the model had to write for an optional field that strict mode
made required is removed, so that the decision layer validates the value
against the ORIGINAL schema. (The root wrapper is removed by the record that
knows its key, :meth:`~decisions.request.fragments.RequestRecord.restore`.)
"""

from __future__ import annotations

from typing import Any, Mapping

from ..validate._issues import MAX_VALIDATION_DEPTH
from ..validate._shapes import close_json_schema
from .conversion import _DEFS_KEYS, _MAX_SCHEMA_DEPTH, _def_name, _pointer

__all__ = ["Restorer"]


class Restorer:
    """Walks a value along the ORIGINAL schema and removes the ``null`` the
    model wrote for a property that strict mode made required."""

    def __init__(self, original: Mapping[str, Any], nullable: frozenset[str]) -> None:
        self.original = original
        self.nullable = nullable
        #: (id of a value, schema pointer) -> (the value, its restored form): a
        #: union tries each branch on the same subvalues, and without this a
        #: value nested d deep in a recursive union of k branches was walked
        #: k**d times. The value is held so its id is not reused meanwhile.
        self._done: dict[tuple[int, str], tuple[Any, Any]] = {}
        #: a union's path -> each branch as validation applies it, see :meth:`union`
        self._probes: dict[str, list[Any]] = {}
        #: the parts of the value (and of its restored forms) copied for
        #: validation, and the verdicts of the probes' branches on them: each
        #: union of a value nested d deep validated the whole value below it
        #: afresh (d**3 steps: a 60-level argument of a few hundred bytes held
        #: the process for 12 seconds)
        self._twins: dict[int, tuple[Any, Any]] = {}
        self._verdicts: dict[tuple[int, int], tuple[Any, Any, bool]] = {}
        self.defs: dict[str, tuple[str, Any]] = {}
        for key in _DEFS_KEYS:
            block = original.get(key)
            if isinstance(block, Mapping):
                for name, body in block.items():
                    self.defs[name] = (_pointer("#", key, name), body)

    def value(self, value: Any, node: Any, path: str, hops: int = 0, level: int = 0) -> Any:
        """``value`` (``level`` deep in the whole value) restored along
        ``node``; ``hops`` counts the schema steps (references, ``allOf`` /
        ``anyOf`` / ``oneOf`` members) taken since the value was last
        descended, which only a cycle of references could make unbounded.
        A value nested deeper than validation goes is left as written
        (validation refuses it)."""
        if not isinstance(node, Mapping) or hops > _MAX_SCHEMA_DEPTH or level > MAX_VALIDATION_DEPTH:
            return value
        if not isinstance(value, (dict, list)):
            return self._restored(value, node, path, hops, level)
        key = (id(value), path)
        done = self._done.get(key)
        if done is not None and done[0] is value:
            return done[1]
        restored = self._restored(value, node, path, hops, level)
        self._done[key] = (value, restored)
        return restored

    def _restored(self, value: Any, node: Mapping[str, Any], path: str, hops: int, level: int) -> Any:
        ref = node.get("$ref")
        if isinstance(ref, str):
            found = _def_name(ref)
            if found is not None and found[1] in self.defs:
                def_path, body = self.defs[found[1]]
                value = self.value(value, body, def_path, hops + 1, level)
        members = node.get("allOf")
        if isinstance(members, list):  # a one-member allOf is merged into its parent when sent
            for index, member in enumerate(members):
                value = self.value(value, member, _pointer(path, "allOf", index), hops + 1, level)
        for key in ("anyOf", "oneOf"):
            branches = node.get(key)
            if isinstance(branches, list):
                value = self.union(value, branches, _pointer(path, key), hops, level)
        if isinstance(value, dict) and isinstance(node.get("properties"), Mapping):
            props = node["properties"]
            out = {}
            for name, item in value.items():
                prop_path = _pointer(path, "properties", name)
                if item is None and prop_path in self.nullable:
                    continue
                out[name] = self.value(item, props.get(name), prop_path, 0, level + 1) if name in props else item
            value = out
        if isinstance(value, list):
            items = node.get("items")
            prefix = node.get("prefixItems")
            if isinstance(prefix, list):
                value = [
                    self.value(v, prefix[i], _pointer(path, "prefixItems", i), 0, level + 1)
                    if i < len(prefix)
                    else self.value(v, items, _pointer(path, "items"), 0, level + 1)  # the items after the prefix
                    for i, v in enumerate(value)
                ]
            elif isinstance(items, Mapping):
                value = [self.value(v, items, _pointer(path, "items"), 0, level + 1) for v in value]
        return value

    def union(self, value: Any, branches: list[Any], path: str, hops: int, level: int) -> Any:
        """``value`` restored along the first branch it then fits; ``value``
        itself when it already fits a branch as written (a null some branch
        of the original allows is the model's, not the conversion's).

        "Fits" is what the decision layer accepts: integers strict (``1.0``
        is no integer) and objects closed (a member the branch does not
        declare is refused), so a value that fits only a looser reading is
        restored rather than passed on to be refused. A value restored to
        fit closed objects fits open ones too."""
        from jsonschema import Draft202012Validator

        from ..validate._ecma import SearchTooCostly
        from ..validate._engines import union_validator_class, verdicts_kept
        from ..validate._shown import shown

        probes = self._probes.get(path)
        if probes is None:
            defs = {k: v for k, v in self.original.items() if k in _DEFS_KEYS}
            probes = [
                close_json_schema({**defs, **branch}, True) if isinstance(branch, Mapping) else branch
                for branch in branches
            ]
            self._probes[path] = probes
        validator = union_validator_class(Draft202012Validator, self.original, strict=True)

        def fits(schema: Any, candidate: Any) -> bool:
            try:
                # a failing branch's message shows the candidate bounded (see
                # ``_shown``); its parts copied once, so the branches' verdicts
                # on them are kept for the levels above and below
                with verdicts_kept(self._verdicts):
                    return bool(validator(schema).is_valid(shown(candidate, self._twins)))
            except SearchTooCostly:  # not shown to fit: left as written, for the decision to refuse
                return False

        if any(fits(probe, value) for probe in probes):
            return value
        for index, branch in enumerate(branches):
            candidate = self.value(value, branch, _pointer(path, index), hops + 1, level)
            if candidate is value:
                continue
            if fits(probes[index], candidate):
                return candidate
        return value
