"""The domain layer: the tools the application knows.

A :class:`ToolRegistry` holds :class:`Tool` entries (name, version, argument
schema, whether the tool has side effects). A call to a name that is not
registered is ``UNKNOWN_TOOL``; its hint offers at most :data:`MAX_SUGGESTIONS`
registered names close to the one the model wrote (edit distance after
folding case, separators and a ``functions.`` style prefix), never the whole
registry and nothing about the tools beyond their names.

Tool names are compared exactly, and a name that differs from a known one
(registered, or named by a policy rule) only in spelling is refused, never
matched: an executor that normalises names would run the known tool while
the rules for it were never consulted. :func:`tool_key` is the spelling-blind
form (NFKC, case folded, combining marks and a ``functions.``/``tools.``
namespace prefix dropped); two names with the same key, or keys of one
length that differ only where either holds a non-ASCII character (a
Cyrillic ``а`` for a Latin ``a``), are look-alikes. A call to a look-alike
of a known name is ``AMBIGUOUS_TOOL_NAME``; a name that is empty or holds
whitespace, control or invisible characters (format characters, the Hangul
fillers, the blank Braille pattern, the variation selectors and the other
default-ignorable marks) is ``INVALID_TOOL_NAME``, whatever is
known. Registering two look-alikes is a
configuration error (ValueError).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Iterable, Iterator, Literal, Mapping

from ..errors import DomainError
from ..types import CALL_KINDS, CallKind
from .schema import Schema

__all__ = [
    "Tool",
    "ToolRegistry",
]

#: At most this many names are suggested for an unknown tool.
MAX_SUGGESTIONS: Final = 3
#: Names longer than this get no suggestions (bounds the distance computation).
_MAX_SUGGEST_NAME: Final = 128
_PREFIX = re.compile(r"^(?:functions?|tools?|default_api)[.:/]", re.IGNORECASE)
_SEPARATORS = re.compile(r"[\s_\-.:/]+")
#: Namespace prefixes an executor may strip before it looks a name up.
_NAMESPACE = re.compile(r"^(?:functions?|tools?|default_api)[.:/]")
#: Unicode categories a tool name may not hold: separators (spaces), controls,
#: format characters (zero-width, bidi), surrogates, private use, unassigned.
_INVALID_CATEGORIES: Final = frozenset({"Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co", "Cn"})
_MARKS: Final = frozenset({"Mn", "Mc", "Me"})
#: Letters and symbols that render as nothing: the Hangul fillers (default
#: ignorable, though their category is Lo) and the blank Braille pattern.
_BLANK: Final = frozenset({"\u115f", "\u1160", "\u3164", "\uffa0", "\u2800"})
#: Marks (category Mn) that are default ignorable, so render as nothing: the
#: combining grapheme joiner, the Khmer inherent vowels, the Mongolian free
#: variation selectors and every variation selector (code point ranges).
_IGNORABLE_MARKS: Final = (
    (0x034F, 0x034F),
    (0x17B4, 0x17B5),
    (0x180B, 0x180D),
    (0x180F, 0x180F),
    (0xFE00, 0xFE0F),
    (0xE0100, 0xE01EF),
)


def _invisible(char: str) -> bool:
    """Whether ``char`` is whitespace, a control, format, surrogate, private
    use or unassigned code point, or a letter or mark that renders as nothing."""
    category = unicodedata.category(char)
    if char.isspace() or char in _BLANK or category in _INVALID_CATEGORIES:
        return True
    code = ord(char)
    return category == "Mn" and any(low <= code <= high for low, high in _IGNORABLE_MARKS)


@dataclass(frozen=True, slots=True, kw_only=True)
class Tool:
    """A registered tool. ``parameters`` is the argument schema (a Pydantic
    model, any Pydantic type, a JSON Schema dict, or a :class:`Schema`);
    None means any JSON object. ``side_effects`` defaults to True: a tool is
    assumed to change something unless it is declared read-only.

    The arguments are closed by default (``extra="forbid"``): a field the
    schema does not declare (``toolNmae``) is ``SCHEMA_MISMATCH`` at its path,
    in nested objects too, whatever the Pydantic default or a JSON Schema
    that says nothing about ``additionalProperties`` would allow (see
    :class:`~decisions.validate.schema.Schema`, ``closed``). ``extra="allow"`` is the
    explicit opt-out: the schema is then applied as written (Pydantic
    models keep their own ``extra`` setting, JSON Schema objects stay open
    unless they close themselves).

    ``kind`` is the kind of call the tool answers (see
    :data:`~decisions.types.CallKind`); a call of another kind is
    ``CALL_KIND_MISMATCH``. ``"custom"`` is a text tool: its input is text,
    ``parameters`` (if any) must describe a string. A client-executed tool
    (``"local_shell"``, ``"computer"``, ``"apply_patch"``, ``"shell"``) is
    registered under its kind as its name, and ``parameters`` describe its
    action (operation) object.

    What a tool declares about its results, checked when a result is
    committed to the ledger (seed 000, 8.5): ``returns``, the schema an
    ``ok`` result's content must match (the same kinds as ``parameters``;
    closed), and ``effects``, an effect check called as ``effects(arguments,
    result)`` that returns the effects it observed or raises
    :class:`~decisions.errors.ResultError` (see
    :class:`~decisions.ledger.FileEffects`)."""

    name: str
    parameters: Any = None
    version: str = "1"
    side_effects: bool = True
    description: str = ""
    extra: Literal["forbid", "allow"] = "forbid"
    kind: CallKind = "function"
    returns: Any = None
    effects: Callable[[Mapping[str, Any] | str | None, Any], Sequence[Any]] | None = None
    schema: Schema | None = field(init=False, repr=False, compare=False, default=None)
    result_schema: Schema | None = field(init=False, repr=False, compare=False, default=None)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError("a tool needs a non-empty name")
        for text in ("name", "version", "kind", "extra", "description"):  # a str subclass: the str it holds
            value = getattr(self, text)
            if isinstance(value, str) and type(value) is not str:
                object.__setattr__(self, text, str.__str__(value))
        if type(self.side_effects) is not bool:  # read by its truth, None or 0 would make a tool read-only
            raise ValueError(f"Tool.side_effects must be a bool, not {type(self.side_effects).__name__}")
        problem = _name_problem(self.name)
        if problem is not None:
            raise ValueError(f"tool name {self.name!r} {problem}")
        if self.extra not in ("forbid", "allow"):
            raise ValueError("Tool.extra must be 'forbid' or 'allow'")
        if self.kind not in CALL_KINDS:
            raise ValueError(f"Tool.kind must be one of {', '.join(CALL_KINDS)}")
        if self.kind not in ("function", "custom") and self.name != self.kind:
            raise ValueError(f"a {self.kind} tool is registered under the name {self.kind!r}")
        if self.parameters is not None:
            closed = self.extra == "forbid"
            spec = self.parameters
            if isinstance(spec, Schema):
                schema = spec if spec.closed == closed else Schema(spec.spec, closed=closed)
            else:
                schema = Schema(spec, closed=closed)
            if self.kind == "custom" and schema.json_schema().get("type") != "string":
                raise ValueError("a custom tool's input is text: its parameters must describe a string")
            object.__setattr__(self, "schema", schema)
        if self.returns is not None:
            spec = self.returns
            object.__setattr__(self, "result_schema", spec if isinstance(spec, Schema) else Schema(spec, closed=True))
        if self.effects is not None and not callable(self.effects):
            raise ValueError("Tool.effects must be a callable effect check")


def fold(name: str) -> str:
    """The comparison form of a tool name: no ``functions.`` prefix, no case,
    no separators."""
    return _SEPARATORS.sub("", _PREFIX.sub("", name.strip())).lower()


def _name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a tool name, or None."""
    if not name:
        return "is empty"
    for char in name:
        if _invisible(char):
            return f"holds the character U+{ord(char):04X} ({unicodedata.category(char)}: whitespace, control or invisible)"
    return None


def tool_key(name: str) -> str:
    """The spelling-blind form of a tool name: NFKC, case folded, combining
    marks dropped, and a namespace prefix (``functions.``, ``tools.``,
    ``default_api:``) removed, repeatedly."""
    text = unicodedata.normalize("NFKC", name).casefold()
    text = "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) not in _MARKS)
    text = unicodedata.normalize("NFKC", text)
    while True:
        match = _NAMESPACE.match(text)
        if match is None or match.end() == len(text):
            return text
        text = text[match.end() :]


def _look_alike(a: str, b: str) -> bool:
    """Keys of one length that differ only where either holds a non-ASCII
    character: a Unicode look-alike (``rеad_file`` with a Cyrillic ``е``)."""
    return len(a) == len(b) and all(x == y or not x.isascii() or not y.isascii() for x, y in zip(a, b))


def check_tool_name(name: str, *, path: str = "$.name") -> None:
    """Raise :class:`DomainError` ``INVALID_TOOL_NAME`` when ``name`` is empty
    or holds whitespace, control or invisible characters."""
    problem = _name_problem(name) if isinstance(name, str) else "is not a string"
    if problem is None:
        return
    shown = name[:_MAX_SUGGEST_NAME] if isinstance(name, str) else repr(name)
    raise DomainError(
        "INVALID_TOOL_NAME",
        f"the tool name {shown!r} {problem}",
        path=path,
        issues=(
            {
                "path": path,
                "code": "invalid_tool_name",
                "expected": "a tool name without whitespace, control or invisible characters",
            },
        ),
        hint="call a tool by its exact name, with no spaces or invisible characters",
    )


#: How many unknown names a :class:`ToolNames` remembers as checked.
_MAX_PASSED = 1024


class ToolNames:
    """A set of known tool names (registered, or named by policy rules) that
    refuses look-alikes. Build it once; :meth:`check` is a set lookup for a
    known name."""

    __slots__ = ("_exact", "_keys", "_by_length", "_passed")

    def __init__(self, names: Iterable[str] = ()) -> None:
        self._exact: set[str] = set()
        self._keys: dict[str, str] = {}
        self._by_length: dict[int, list[tuple[str, str]]] = {}
        #: Unknown names :meth:`check` found well formed and like no known
        #: name (bounded; forgotten whenever a name is added).
        self._passed: set[str] = set()
        for name in names:
            self.add(name)

    def add(self, name: str) -> None:
        """Add ``name``; ValueError when it is malformed or a look-alike of a
        different name already known."""
        if name in self._exact:
            return
        problem = _name_problem(name)
        if problem is not None:
            raise ValueError(f"tool name {name!r} {problem}")
        other = self.look_alike(name)
        if other is not None:
            raise ValueError(
                f"tool names {other!r} and {name!r} differ only in spelling; one of them would shadow the other"
            )
        key = tool_key(name)
        self._passed.clear()
        self._exact.add(name)
        self._keys[key] = name
        self._by_length.setdefault(len(key), []).append((key, name))

    def __contains__(self, name: object) -> bool:
        return name in self._exact

    def look_alike(self, name: str) -> str | None:
        """The known name that ``name`` differs from only in spelling (None
        when ``name`` is known exactly or resembles no known name)."""
        if name in self._exact:
            return None
        key = tool_key(name)
        found = self._keys.get(key)
        if found is not None:
            return found
        for known_key, known in self._by_length.get(len(key), ()):
            if (not key.isascii() or not known_key.isascii()) and _look_alike(key, known_key):
                return known
        return None

    def passes(self, name: str) -> bool:
        """Whether ``name`` is known, or already found to resemble none:
        :meth:`check` of it does nothing."""
        return name in self._exact or name in self._passed

    def check(self, name: str, *, path: str = "$.name") -> None:
        """Nothing for a known name or one that resembles none; else
        :class:`DomainError` ``INVALID_TOOL_NAME`` or ``AMBIGUOUS_TOOL_NAME``."""
        if name in self._exact or name in self._passed:
            return
        check_tool_name(name, path=path)
        known = self.look_alike(name)
        if known is None:
            if len(self._passed) >= _MAX_PASSED:
                self._passed.clear()
            self._passed.add(name)
            return
        shown = name[:_MAX_SUGGEST_NAME]
        raise DomainError(
            "AMBIGUOUS_TOOL_NAME",
            f"the model called {shown!r}, which differs from the tool {known!r} only in spelling",
            path=path,
            issues=({"path": path, "code": "ambiguous_tool_name", "expected": repr(known)},),
            hint=f"call the tool by its exact name, {known!r}",
        )


def _distance(a: str, b: str, bound: int) -> int:
    """Optimal-string-alignment edit distance, or ``bound + 1`` when it
    exceeds ``bound``.

    The common prefix and suffix are set aside (they cost nothing), and only
    the cells within ``bound`` of the diagonal are computed (a cell off it
    is further than ``bound`` already): ``len(a) * (2 * bound + 1)`` steps at
    most, where the whole table is ``len(a) * len(b)``, which every one of
    thousands of long registered names sharing a prefix with the unknown
    one would cost."""
    limit = min(len(a), len(b))
    head = 0
    while head < limit and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < limit - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    a, b = a[head : len(a) - tail], b[head : len(b) - tail]
    over = bound + 1
    if abs(len(a) - len(b)) > bound:
        return over
    width = len(b)
    previous2: list[int] = []
    previous = [j if j <= bound else over for j in range(width + 1)]
    for i, ca in enumerate(a, 1):
        current = [over] * (width + 1)
        if i <= bound:
            current[0] = i
        for j in range(max(1, i - bound), min(width, i + bound) + 1):
            cb = b[j - 1]
            value = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                value = min(value, previous2[j - 2] + 1)
            current[j] = value
        if min(current) > bound:
            return over
        previous2, previous = previous, current
    return min(previous[-1], over)


#: A function tool as ``decide``'s plain path reads it: version, schema, and
#: the schema's validator, ``extra``, serializer and echoed fields.
PlainPlan = tuple[str, "Schema | None", Any, Any, Any, "tuple[str, ...] | None"]


class ToolRegistry:
    """The tools the model may call, by name."""

    __slots__ = ("_tools", "_plain", "_folded", "_names", "version", "__weakref__")

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        #: What ``decide``'s plain path reads of each function tool, read
        #: once: its version, schema, and the schema's validator, extra,
        #: serializer and echoed fields (see :class:`~decisions.validate.schema.Schema`).
        self._plain: dict[str, PlainPlan] = {}
        self._folded: dict[str, list[str]] = {}
        self._names = ToolNames()
        #: Counts registrations, so that what was compiled against the
        #: registry (a policy's plan) knows when it is stale.
        self.version = 0
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool) -> Tool:
        """Add ``tool``; a second tool with the same name, or with a name that
        differs from a registered one only in spelling (``Read_File`` beside
        ``read_file``), is a ValueError."""
        if not isinstance(tool, Tool):
            raise TypeError(f"expected a Tool, not {type(tool).__name__}")
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} is already registered")
        self._names.add(tool.name)
        self._tools[tool.name] = tool
        if tool.kind == "function":
            schema = tool.schema
            self._plain[tool.name] = (
                (tool.version, None, None, None, None, None)
                if schema is None
                else (tool.version, schema, schema._validator, schema._extra, schema._serializer, schema._echo)
            )
        self._folded.setdefault(fold(tool.name), []).append(tool.name)
        self.version += 1
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
        # a copy taken at once: another thread may register a tool while this one suggests
        for folded, originals in list(self._folded.items()):
            if folded == target or len(folded) > _MAX_SUGGEST_NAME:
                continue
            distance = _distance(target, folded, bound)
            if distance <= bound:
                scored.extend((distance, original) for original in originals)
        scored.sort()
        return tuple([*exact, *(n for _, n in scored)][: max(0, limit)])

    def resolve(self, name: str, *, path: str = "$.name") -> Tool:
        """The tool called exactly ``name``, or :class:`DomainError`:
        ``INVALID_TOOL_NAME`` (whitespace, control or invisible characters),
        ``AMBIGUOUS_TOOL_NAME`` (a registered name spelt otherwise), else
        ``UNKNOWN_TOOL`` (never a corrected name: a near miss is suggested,
        not used)."""
        tool = self._tools.get(name)
        if tool is not None:
            return tool
        self._names.check(name, path=path)
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
            if any(isinstance(spec, Tool) for spec in tools.values()):
                raise TypeError("a mapping gives each tool name its argument schema: pass Tool objects as a list")
            return cls(Tool(name=name, parameters=spec) for name, spec in tools.items())
        return cls(tools)
