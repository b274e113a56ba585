"""ECMA-262 regular expressions as JSON Schema's ``pattern`` means them,
searched in time linear in the text.

JSON Schema's ``pattern`` and ``patternProperties`` name ECMA-262 regular
expressions with Unicode semantics. Python's ``re`` reads the same text
differently (``$`` also matches before a final newline, ``\\d`` and ``\\w``
take every script's digits and letters, ``.`` takes ``\\r`` and U+2028) and
backtracks: ``^(a+)+b`` against forty ``a`` and a ``!`` runs for days. This
module parses the ECMA-262 syntax (``u`` mode; a lone ``]``, ``{`` or ``}``
is read as itself, as browsers do), builds a Thompson automaton and
searches with a DFA built lazily from it, per search: a step the text
met before costs two dictionary lookups, a new one at most one pass over
the automaton, and the states visited to build steps are bounded
(:data:`MAX_SEARCH_WORK`, then :class:`SearchTooCostly`, which the schema
layer turns into a refusal).

Lookarounds and backreferences, which no finite automaton holds, are
refused (:class:`PatternUnsupported`) when the schema is compiled, as is a
pattern whose automaton would pass :data:`MAX_STATES` states.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "MAX_SEARCH_WORK",
    "MAX_STATES",
    "Pattern",
    "PatternError",
    "PatternUnsupported",
    "SearchTooCostly",
    "check_pattern",
    "compile_pattern",
    "parse",
]

#: The largest automaton a pattern may build (``.{0,5000}`` takes about 10,000).
MAX_STATES: Final = 20_000
#: States one search may visit while it builds the steps its text needs
#: (a step met again costs nothing): an unanchored ``a{19999}`` against 20,000 ``a``
#: would visit 200 million.
MAX_SEARCH_WORK: Final = 1_000_000
#: Groups nest at most this deep.
MAX_NESTING: Final = 32
#: DFA steps kept by one search, and characters' classes kept per pattern;
#: past it they are dropped and built again as the text needs them.
_CACHE_LIMIT: Final = 50_000


class PatternError(ValueError):
    """A ``pattern`` that is not an ECMA-262 regular expression."""


class SearchTooCostly(Exception):
    """A text whose search would build more than :data:`MAX_SEARCH_WORK`
    states: the value is refused, as one no search showed to match."""


class PatternUnsupported(PatternError):
    """A valid ECMA-262 pattern this engine does not search: a lookaround,
    a backreference, an unknown Unicode property, or too large an automaton."""


# ---------------------------------------------------------------- character sets


@dataclass(frozen=True, slots=True)
class _Set:
    """A set of characters: code-point ranges, Unicode general categories
    and nested sets (a class escape inside a class), or their complement."""

    ranges: tuple[tuple[int, int], ...] = ()
    categories: frozenset[str] = frozenset()
    members: tuple[_Set, ...] = ()
    negated: bool = False

    def __contains__(self, char: str) -> bool:
        point = ord(char)
        found = (
            any(low <= point <= high for low, high in self.ranges)
            or (bool(self.categories) and unicodedata.category(char) in self.categories)
            or any(char in member for member in self.members)
        )
        return found is not self.negated


def _one(point: int) -> _Set:
    return _Set(ranges=((point, point),))


_DIGIT: Final = _Set(ranges=((0x30, 0x39),))
_WORD: Final = _Set(ranges=((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)))
#: ECMA-262's WhiteSpace and LineTerminator: these, and every Space_Separator.
_SPACE: Final = _Set(
    ranges=((0x09, 0x0D), (0x20, 0x20), (0xA0, 0xA0), (0x2028, 0x2029), (0xFEFF, 0xFEFF)),
    categories=frozenset({"Zs"}),
)
_LINE_TERMINATOR: Final = _Set(ranges=((0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029)))
_DOT: Final = _Set(members=(_LINE_TERMINATOR,), negated=True)
_CLASS_ESCAPES: Final = {
    "d": _DIGIT,
    "D": _Set(members=(_DIGIT,), negated=True),
    "w": _WORD,
    "W": _Set(members=(_WORD,), negated=True),
    "s": _SPACE,
    "S": _Set(members=(_SPACE,), negated=True),
}
_CONTROL_ESCAPES: Final = {"t": 0x09, "n": 0x0A, "v": 0x0B, "f": 0x0C, "r": 0x0D}

_GENERAL_CATEGORIES: Final = {
    "Cc": ("Control", "cntrl"),
    "Cf": ("Format",),
    "Cn": ("Unassigned",),
    "Co": ("Private_Use",),
    "Cs": ("Surrogate",),
    "Ll": ("Lowercase_Letter",),
    "Lm": ("Modifier_Letter",),
    "Lo": ("Other_Letter",),
    "Lt": ("Titlecase_Letter",),
    "Lu": ("Uppercase_Letter",),
    "Mc": ("Spacing_Mark",),
    "Me": ("Enclosing_Mark",),
    "Mn": ("Nonspacing_Mark",),
    "Nd": ("Decimal_Number", "digit"),
    "Nl": ("Letter_Number",),
    "No": ("Other_Number",),
    "Pc": ("Connector_Punctuation",),
    "Pd": ("Dash_Punctuation",),
    "Pe": ("Close_Punctuation",),
    "Pf": ("Final_Punctuation",),
    "Pi": ("Initial_Punctuation",),
    "Po": ("Other_Punctuation",),
    "Ps": ("Open_Punctuation",),
    "Sc": ("Currency_Symbol",),
    "Sk": ("Modifier_Symbol",),
    "Sm": ("Math_Symbol",),
    "So": ("Other_Symbol",),
    "Zl": ("Line_Separator",),
    "Zp": ("Paragraph_Separator",),
    "Zs": ("Space_Separator",),
}
_GROUPED: Final = {
    "C": ("Other",),
    "L": ("Letter",),
    "M": ("Mark", "Combining_Mark"),
    "N": ("Number",),
    "P": ("Punctuation", "punct"),
    "S": ("Symbol",),
    "Z": ("Separator",),
}


def _category_names() -> dict[str, frozenset[str]]:
    names: dict[str, frozenset[str]] = {}
    for short, aliases in _GENERAL_CATEGORIES.items():
        for name in (short, *aliases):
            names[name] = frozenset({short})
    for letter, aliases in _GROUPED.items():
        members = frozenset(c for c in _GENERAL_CATEGORIES if c[0] == letter)
        for name in (letter, *aliases):
            names[name] = members
    names["LC"] = names["Cased_Letter"] = frozenset({"Lu", "Ll", "Lt"})
    return names


_CATEGORY_NAMES: Final = _category_names()
_BINARY_PROPERTIES: Final = {
    "Any": _Set(ranges=((0, 0x10FFFF),)),
    "ASCII": _Set(ranges=((0, 0x7F),)),
    "Assigned": _Set(categories=frozenset({"Cn"}), negated=True),
}


# ---------------------------------------------------------------- the syntax tree
#
# ("set", _Set) | ("cat", [node]) | ("alt", [node]) | ("repeat", node, low, high | None)
# | ("assert", "^" | "$" | "b" | "B")

_Node = tuple[Any, ...]
_QUANTIFIER: Final = re.compile(r"\{(\d+)(?:(,)(\d*))?\}")
_HEX: Final = frozenset("0123456789abcdefABCDEF")
_DIGITS: Final = frozenset("0123456789")
_SYNTAX: Final = frozenset("^$\\.*+?()[]{}|/")


def _count(digits: str) -> int:
    """A quantifier's count; one of more than nine digits is read as a count
    above any bound (not converted: a long digit string is costly, or refused)."""
    return int(digits) if len(digits) <= 9 else MAX_STATES + 1


class _Parser:
    """A recursive-descent reader of one pattern (groups nest at most
    :data:`MAX_NESTING` deep, so the recursion is bounded). An error names
    the offset where the construct at fault starts."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.at = 0
        self.depth = 0

    def fail(self, what: str, at: int, unsupported: bool = False) -> PatternError:
        kind = PatternUnsupported if unsupported else PatternError
        return kind(f"{what} at offset {at} of the pattern {self.source[:200]!r}")

    def peek(self, ahead: int = 0) -> str:
        at = self.at + ahead
        return self.source[at] if at < len(self.source) else ""

    def parse(self) -> _Node:
        node = self.disjunction()
        if self.at < len(self.source):  # only a ')' stops a disjunction early
            raise self.fail("an unmatched ')'", self.at)
        return node

    def disjunction(self) -> _Node:
        branches = [self.alternative()]
        while self.peek() == "|":
            self.at += 1
            branches.append(self.alternative())
        return branches[0] if len(branches) == 1 else ("alt", branches)

    def alternative(self) -> _Node:
        terms: list[_Node] = []
        while self.at < len(self.source) and self.peek() not in "|)":
            terms.append(self.term())
        return terms[0] if len(terms) == 1 else ("cat", terms)

    def term(self) -> _Node:
        char = self.peek()
        if char in "^$" or (char == "\\" and self.peek(1) in ("b", "B")):
            self.at += 1 if char in "^$" else 2
            if self.quantifier_ahead():
                raise self.fail("a quantifier after an assertion", self.at)
            return ("assert", self.source[self.at - 1])
        if char == "(":
            atom = self.group()
        else:
            atom = self.atom()
        return self.quantified(atom)

    def quantifier_ahead(self) -> bool:
        return self.peek() in ("*", "+", "?") or (
            self.peek() == "{" and _QUANTIFIER.match(self.source, self.at) is not None
        )

    def quantified(self, atom: _Node) -> _Node:
        start, char = self.at, self.peek()
        high: int | None
        if char in ("*", "+", "?"):
            low, high = {"*": (0, None), "+": (1, None), "?": (0, 1)}[char]
            self.at += 1
        elif char == "{" and (match := _QUANTIFIER.match(self.source, self.at)) is not None:
            low = _count(match[1])
            high = low if match[2] is None else _count(match[3]) if match[3] else None
            if high is not None and high < low:
                raise self.fail("a quantifier whose maximum is below its minimum", start)
            if low > MAX_STATES or (high is not None and high > MAX_STATES):
                raise self.fail(f"a count above {MAX_STATES}", start, unsupported=True)
            self.at = match.end()
        else:
            return atom
        if self.peek() == "?":  # lazy: the same strings match
            self.at += 1
        if self.quantifier_ahead():
            raise self.fail("a quantifier after a quantifier", self.at)
        return ("repeat", atom, low, high)

    def group(self) -> _Node:
        start = self.at
        self.at += 1
        if self.peek() == "?":
            if self.source.startswith(("?=", "?!", "?<=", "?<!"), self.at):
                raise self.fail("a lookaround (not held by an automaton)", start, unsupported=True)
            if self.peek(1) == ":":
                self.at += 2
            elif self.peek(1) == "<":
                end = self.source.find(">", self.at)
                if end == -1 or not self.source[self.at + 2 : end].isidentifier():
                    raise self.fail("a group name that is not an identifier", start)
                self.at = end + 1
            else:
                raise self.fail("an unknown group '(?'", start)
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise self.fail(f"groups nested more than {MAX_NESTING} deep", start, unsupported=True)
        node = self.disjunction()
        self.depth -= 1
        if self.peek() != ")":
            raise self.fail("an unterminated group", start)
        self.at += 1
        return node

    def atom(self) -> _Node:
        char = self.peek()
        if char == ".":
            self.at += 1
            return ("set", _DOT)
        if char == "[":
            return ("set", self.char_class())
        if char == "\\":
            escaped = self.escape()
            return ("set", escaped if isinstance(escaped, _Set) else _one(escaped))
        if char in ("*", "+", "?") or self.quantifier_ahead():
            raise self.fail("nothing to repeat", self.at)
        self.at += 1
        return ("set", _one(ord(char)))

    def char_class(self) -> _Set:
        start = self.at
        self.at += 1
        negated = self.peek() == "^"
        if negated:
            self.at += 1
        ranges: list[tuple[int, int]] = []
        members: list[_Set] = []
        while True:
            if self.at >= len(self.source):
                raise self.fail("an unterminated character class", start)
            if self.peek() == "]":
                self.at += 1
                return _Set(ranges=tuple(ranges), members=tuple(members), negated=negated)
            first_at = self.at
            first = self.class_atom()
            if self.peek() == "-" and self.peek(1) not in ("]", ""):
                self.at += 1
                last = self.class_atom()
                if isinstance(first, _Set) or isinstance(last, _Set):
                    raise self.fail("a class escape as the end of a range", first_at)
                if last < first:
                    raise self.fail("a range out of order", first_at)
                ranges.append((first, last))
            elif isinstance(first, _Set):
                members.append(first)
            else:
                ranges.append((first, first))

    def class_atom(self) -> int | _Set:
        if self.source.startswith("\\b", self.at):  # a backspace in a class
            self.at += 2
            return 0x08
        if self.peek() == "\\":
            return self.escape()
        char = self.peek()
        self.at += 1
        return ord(char)

    def escape(self) -> int | _Set:
        """The escape at ``\\``: a code point or a set."""
        start = self.at
        self.at += 1
        char = self.peek()
        if not char:
            raise self.fail("a '\\' at the end", start)
        self.at += 1
        if char in _CLASS_ESCAPES:
            return _CLASS_ESCAPES[char]
        if char in _CONTROL_ESCAPES:
            return _CONTROL_ESCAPES[char]
        if char in ("p", "P"):
            found = self.property(start)
            return _Set(members=(found,), negated=True) if char == "P" else found
        if char == "0":
            if self.peek() in _DIGITS:
                raise self.fail("an octal escape", start)
            return 0
        if char in _DIGITS or char == "k":
            raise self.fail("a backreference (not held by an automaton)", start, unsupported=True)
        if char == "c":
            letter = self.peek()
            if not ("a" <= letter <= "z" or "A" <= letter <= "Z"):
                raise self.fail("'\\c' without a letter", start)
            self.at += 1
            return ord(letter) % 32
        if char == "x":
            return self.hex_digits(2, start)
        if char == "u":
            return self.unicode_escape(start)
        if char in _SYNTAX or (char.isascii() and not char.isalnum()):
            return ord(char)  # an identity escape of punctuation (and "_")
        raise self.fail(f"an unknown escape '\\{char}'", start)

    def hex_digits(self, count: int, start: int) -> int:
        digits = self.source[self.at : self.at + count]
        if len(digits) != count or not _HEX.issuperset(digits):
            raise self.fail(f"an escape without {count} hexadecimal digits", start)
        self.at += count
        return int(digits, 16)

    def unicode_escape(self, start: int) -> int:
        if self.peek() == "{":
            end = self.source.find("}", self.at)
            digits = self.source[self.at + 1 : end] if end != -1 else ""
            if not digits or not _HEX.issuperset(digits) or int(digits, 16) > 0x10FFFF:
                raise self.fail("a '\\u{...}' escape that is not a code point", start)
            self.at = end + 1
            return int(digits, 16)
        point = self.hex_digits(4, start)
        following = self.source[self.at + 2 : self.at + 6]
        if (
            0xD800 <= point <= 0xDBFF
            and self.source.startswith("\\u", self.at)
            and len(following) == 4
            and _HEX.issuperset(following)
            and 0xDC00 <= int(following, 16) <= 0xDFFF
        ):  # a surrogate pair is one code point
            self.at += 6
            return 0x10000 + ((point - 0xD800) << 10) + (int(following, 16) - 0xDC00)
        return point

    def property(self, start: int) -> _Set:
        if self.peek() != "{":
            raise self.fail("'\\p' without '{'", start)
        end = self.source.find("}", self.at)
        if end == -1:
            raise self.fail("an unterminated '\\p{'", start)
        text = self.source[self.at + 1 : end]
        self.at = end + 1
        name, _, value = text.partition("=")
        if value:
            if name not in ("General_Category", "gc"):
                raise self.fail(
                    f"the Unicode property {name!r} (only General_Category is known)", start, unsupported=True
                )
            text = value
        if text in _CATEGORY_NAMES:
            return _Set(categories=_CATEGORY_NAMES[text])
        if not value and text in _BINARY_PROPERTIES:
            return _BINARY_PROPERTIES[text]
        raise self.fail(f"the Unicode property {text!r}", start, unsupported=True)


# ---------------------------------------------------------------- the automaton

_CHAR: Final = 0
_SPLIT: Final = 1
_ASSERT: Final = 2
_MATCH: Final = 3


class _Automaton:
    """A Thompson automaton under construction: parallel lists per state;
    a reading state names its set by index into :attr:`sets` (equal sets
    share one index, so a character is tested once per distinct set)."""

    def __init__(self) -> None:
        self.kind: list[int] = []
        self.arg: list[int] = []  # the set's index, or the assertion's position in "^$bB"
        self.out: list[int] = []
        self.out1: list[int] = []
        self.sets: list[_Set] = []
        self.set_index: dict[_Set, int] = {}

    def add(self, kind: int, arg: int = -1, out: int = -1, out1: int = -1) -> int:
        if len(self.kind) >= MAX_STATES:
            raise PatternUnsupported(f"a pattern whose automaton passes {MAX_STATES} states")
        self.kind.append(kind)
        self.arg.append(arg)
        self.out.append(out)
        self.out1.append(out1)
        return len(self.kind) - 1

    def build(self, node: _Node, follow: int) -> int:
        """States for ``node`` that continue at ``follow``; their entry.
        Built back to front, so no state is patched afterwards."""
        tag = node[0]
        if tag == "set":
            index = self.set_index.setdefault(node[1], len(self.sets))
            if index == len(self.sets):
                self.sets.append(node[1])
            return self.add(_CHAR, index, follow)
        if tag == "assert":
            return self.add(_ASSERT, "^$bB".index(node[1]), follow)
        if tag == "cat":
            for part in reversed(node[1]):
                follow = self.build(part, follow)
            return follow
        if tag == "alt":
            entries = [self.build(branch, follow) for branch in node[1]]
            entry = entries[-1]
            for other in reversed(entries[:-1]):
                entry = self.add(_SPLIT, out=other, out1=entry)
            return entry
        _, body, low, high = node
        if high is None:  # body{low,}: low copies, then a loop
            loop = self.add(_SPLIT, out1=follow)
            self.out[loop] = self.build(body, loop)
            follow = loop
        else:  # body{low,high}: high - low optional copies, nested
            for _ in range(high - low):
                follow = self.add(_SPLIT, out=self.build(body, follow), out1=follow)
        for _ in range(low):
            follow = self.build(body, follow)
        return follow


#: What a step reaches when the match is found.
_MATCHED: Final = frozenset({-1})


class Pattern:
    """One compiled pattern: :meth:`search` says whether it matches
    anywhere in a text, as ECMA-262's ``RegExp.prototype.test`` with the
    ``u`` flag does."""

    __slots__ = ("_automaton", "_class_ids", "_classes", "_first", "_words", "source")

    def __init__(self, source: str, tree: _Node) -> None:
        self.source = source
        automaton = _Automaton()
        entry = automaton.build(tree, automaton.add(_MATCH))
        self._automaton = automaton
        self._first = frozenset({entry})
        self._words = any(k == _ASSERT and a >= 2 for k, a in zip(automaton.kind, automaton.arg))
        #: a character -> its class's id; a class: the sets that hold it, and whether it is a word character
        self._class_ids: dict[str, int] = {}
        self._classes: dict[tuple[frozenset[int], bool], int] = {}

    def _closure(
        self, states: frozenset[int], start: bool, end: bool, before: bool, after: bool, budget: list[int]
    ) -> list[int] | None:
        """The reading states reached from ``states`` without reading, where
        assertions see: at the start, at the end, a word character before,
        a word character after. None when it reaches the match. The states
        visited are taken from ``budget`` (:class:`SearchTooCostly` past it)."""
        automaton = self._automaton
        kinds, args, outs, outs1 = automaton.kind, automaton.arg, automaton.out, automaton.out1
        holds = (start, end, before != after, before == after)
        reading: list[int] = []
        seen: set[int] = set()
        stack = list(states)
        while stack:
            state = stack.pop()
            if state in seen:
                continue
            seen.add(state)
            kind = kinds[state]
            if kind == _CHAR:
                reading.append(state)
            elif kind == _SPLIT:
                stack.append(outs1[state])
                stack.append(outs[state])
            elif kind == _ASSERT:
                if holds[args[state]]:
                    stack.append(outs[state])
            else:
                return None
        budget[0] -= len(seen)
        if budget[0] < 0:
            raise SearchTooCostly(f"a search of the pattern {self.source[:200]!r} passed {MAX_SEARCH_WORK} states")
        return reading

    def _class_of(self, char: str) -> int:
        held = frozenset(i for i, each in enumerate(self._automaton.sets) if char in each)
        signature = (held, char in _WORD)
        found = self._classes.get(signature)
        if found is None:
            found = self._classes[signature] = len(self._classes)
        if len(self._class_ids) >= _CACHE_LIMIT:
            self._class_ids.clear()
        self._class_ids[char] = found
        return found

    def _step(self, states: frozenset[int], start: bool, before: bool, char: str, budget: list[int]) -> frozenset[int]:
        reading = self._closure(states, start, False, before, char in _WORD, budget)
        if reading is None:
            return _MATCHED
        automaton = self._automaton
        sets = automaton.sets
        following = set(self._first)
        for state in reading:
            if char in sets[automaton.arg[state]]:
                following.add(automaton.out[state])
        return frozenset(following)

    def search(self, text: str) -> bool:
        """Whether the pattern matches somewhere in ``text``;
        :class:`SearchTooCostly` when it cannot tell within
        :data:`MAX_SEARCH_WORK` states visited to build its steps.

        The steps are built for this search alone (only the characters'
        classes are kept from one search to the next), so what a text costs,
        and whether it passes the bound, depends on the pattern and the text
        only, never on what was searched before."""
        steps: dict[tuple[frozenset[int], bool, bool, int], frozenset[int]] = {}
        class_ids, words = self._class_ids, self._words
        budget = [MAX_SEARCH_WORK]
        states, start, before = self._first, True, False
        for char in text:
            class_id = class_ids.get(char)
            if class_id is None:
                class_id = self._class_of(char)
            key = (states, start, before, class_id)
            following = steps.get(key)
            if following is None:
                following = self._step(states, start, before, char, budget)
                if len(steps) >= _CACHE_LIMIT:
                    steps.clear()
                steps[key] = following
            if following is _MATCHED:
                return True
            states, start, before = following, False, words and char in _WORD
        return self._closure(states, start, True, before, False, budget) is None

    def __repr__(self) -> str:
        return f"Pattern({self.source!r})"


def parse(source: str) -> _Node:
    """The syntax tree of ``source``: PatternError when it is not ECMA-262,
    PatternUnsupported when it is but holds what no automaton does."""
    if not isinstance(source, str):
        raise PatternError(f"a pattern must be a string, not {type(source).__name__}")
    return _Parser(source).parse()


@functools.lru_cache(maxsize=1024)
def compile_pattern(source: str) -> Pattern:
    """The compiled ``source`` (kept for the next schema that names it)."""
    return Pattern(source, parse(source))


def check_pattern(source: object) -> bool:
    """The ``regex`` format: True for a string that :func:`compile_pattern`
    takes (else its error) and for anything that is not a string."""
    if isinstance(source, str):
        compile_pattern(source)
    return True
