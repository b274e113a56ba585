"""The domain layer: the tools the application knows.

A :class:`ToolRegistry` holds :class:`Tool` entries (name, version, argument
schema, whether the tool has side effects). A call to a name that is not
registered is ``UNKNOWN_TOOL``; its hint offers at most :data:`MAX_SUGGESTIONS`
registered names close to the one the model wrote (edit distance after
folding case, separators and a ``functions.`` style prefix), never the whole
registry and nothing about the tools beyond their names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Final, Iterable, Iterator, Mapping

from .errors import DomainError
from .schema import Schema

__all__ = ["Tool", "ToolRegistry", "MAX_SUGGESTIONS", "fold"]

#: At most this many names are suggested for an unknown tool.
MAX_SUGGESTIONS: Final = 3
#: Names longer than this get no suggestions (bounds the distance computation).
_MAX_SUGGEST_NAME: Final = 128
_PREFIX = re.compile(r"^(?:functions?|tools?|default_api)[.:/]", re.IGNORECASE)
_SEPARATORS = re.compile(r"[\s_\-.:/]+")


@dataclass(frozen=True, slots=True, kw_only=True)
class Tool:
    """A registered tool. ``parameters`` is the argument schema (a Pydantic
    model, any Pydantic type, a JSON Schema dict, or a :class:`Schema`);
    None means any JSON object. ``side_effects`` defaults to True: a tool is
    assumed to change something unless it is declared read-only."""

    name: str
    parameters: Any = None
    version: str = "1"
    side_effects: bool = True
    description: str = ""
    schema: Schema | None = field(init=False, repr=False, compare=False, default=None)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError("a tool needs a non-empty name")
        if self.parameters is not None:
            object.__setattr__(self, "schema", Schema.of(self.parameters))


def fold(name: str) -> str:
    """The comparison form of a tool name: no ``functions.`` prefix, no case,
    no separators."""
    return _SEPARATORS.sub("", _PREFIX.sub("", name.strip())).lower()


def _distance(a: str, b: str, bound: int) -> int:
    """Optimal-string-alignment edit distance, or ``bound + 1`` once it is
    certain to exceed ``bound``."""
    if abs(len(a) - len(b)) > bound:
        return bound + 1
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cost = 0 if ca == cb else 1
            value = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                value = min(value, previous2[j - 2] + 1)
            current[j] = value
        if min(current) > bound:
            return bound + 1
        previous2, previous = previous, current
    return previous[-1]


class ToolRegistry:
    """The tools the model may call, by name."""

    __slots__ = ("_tools", "_folded")

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self._folded: dict[str, list[str]] = {}
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool) -> Tool:
        """Add ``tool``; a second tool with the same name is a ValueError."""
        if not isinstance(tool, Tool):
            raise TypeError(f"expected a Tool, not {type(tool).__name__}")
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} is already registered")
        self._tools[tool.name] = tool
        self._folded.setdefault(fold(tool.name), []).append(tool.name)
        return tool

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def get(self, name: str) -> Tool | None:
        """The tool registered as exactly ``name``, or None."""
        return self._tools.get(name)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._tools)

    def suggest(self, name: str, limit: int = MAX_SUGGESTIONS) -> tuple[str, ...]:
        """Registered names close to ``name``, nearest first (at most ``limit``)."""
        if not isinstance(name, str) or len(name) > _MAX_SUGGEST_NAME:
            return ()
        target = fold(name)
        exact = sorted(self._folded.get(target, ()))
        bound = max(1, min(3, len(target) // 3))
        scored: list[tuple[int, str]] = []
        for folded, originals in self._folded.items():
            if folded == target or len(folded) > _MAX_SUGGEST_NAME:
                continue
            distance = _distance(target, folded, bound)
            if distance <= bound:
                scored.extend((distance, original) for original in originals)
        scored.sort()
        return tuple([*exact, *(n for _, n in scored)][: max(0, limit)])

    def resolve(self, name: str, *, path: str = "$.name") -> Tool:
        """The tool called ``name``, or :class:`DomainError` ``UNKNOWN_TOOL``
        (never a corrected name: a near miss is suggested, not used)."""
        tool = self._tools.get(name)
        if tool is not None:
            return tool
        suggestions = self.suggest(name)
        shown = name if len(name) <= _MAX_SUGGEST_NAME else name[:_MAX_SUGGEST_NAME] + "…"
        if suggestions:
            listed = ", ".join(repr(s) for s in suggestions)
            hint = f"there is no tool {shown!r}; did you mean {listed}?"
            expected = "one of " + listed
        else:
            hint = f"there is no tool {shown!r}; call only the tools you were given"
            expected = "a registered tool name"
        raise DomainError(
            "UNKNOWN_TOOL",
            f"the model called {shown!r}, which is not a registered tool",
            path=path,
            issues=({"path": path, "code": "unknown_tool", "expected": expected},),
            hint=hint,
        )

    @classmethod
    def of(cls, tools: ToolRegistry | Iterable[Tool] | Mapping[str, Any]) -> ToolRegistry:
        """A registry from a registry, an iterable of tools, or a mapping of
        name to argument schema."""
        if isinstance(tools, ToolRegistry):
            return tools
        if isinstance(tools, Mapping):
            return cls(Tool(name=name, parameters=spec) for name, spec in tools.items())
        return cls(tools)
