"""Native and pure ``loads`` on generated JSON-ish text: equal values, or
errors with the same code, position, line, column and hint.

Inputs are valid documents (random values serialised by ``json.dumps`` with
``ensure_ascii`` either way and random whitespace) and mutations of them:
truncation, byte flips, inserted JSON-significant characters, duplicated
keys, deep nesting, big numbers, surrogate escapes and raw control
characters; as ``str`` and as ``bytes``, with the default limits or small
random ones. ``HYPOTHESIS_PROFILE=long`` runs many more examples.
"""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from decisions import Limits, ParseError
from json_values import same_value

WHITESPACE = st.text(alphabet=" \t\n\r", max_size=3)
SIGNIFICANT = list("{}[]\",:\\ \t\n-+.0123456789eEtrufalsnNI/*'`u") + ["\x00", "\x1f", "\u00e9", "\U0001f600"]

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
VALUES = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5),
    max_leaves=25,
)


@st.composite
def documents(draw: st.DrawFn) -> str:
    """A valid document: a random value with random formatting."""
    value = draw(VALUES)
    text = json.dumps(
        value,
        ensure_ascii=draw(st.booleans()),
        indent=draw(st.none() | st.integers(0, 2)),
        separators=(draw(WHITESPACE) + "," + draw(WHITESPACE), draw(WHITESPACE) + ":" + draw(WHITESPACE)),
    )
    return draw(WHITESPACE) + text + draw(WHITESPACE)


def _pair(key: str, value: Any) -> str:
    return json.dumps(key) + ":" + json.dumps(value)


@st.composite
def duplicated_keys(draw: st.DrawFn) -> str:
    keys = draw(st.lists(st.sampled_from(["a", "b", "\u00e9", "a\\u0062"]), min_size=1, max_size=6))
    members = ",".join(json.dumps(k).replace("\\\\u", "\\u") + ":" + str(i) for i, k in enumerate(keys))
    return "{" + members + "}"


NUMBER_TEXT = st.one_of(
    st.integers(min_value=-(2**66), max_value=2**66).map(str),
    st.sampled_from(["-0", "-0.0", "0.0", "1e400", "-1e400", "1e-400", "1.7976931348623157e308", "1.8e308"]),
    st.builds(
        lambda sign, digits, frac, exp: sign + digits + frac + exp,
        st.sampled_from(["", "-"]),
        st.text(alphabet="0123456789", min_size=1, max_size=110),
        st.sampled_from(["", "."]) | st.text(alphabet="0123456789", max_size=5).map(lambda d: "." + d),
        st.sampled_from(["", "e", "E+", "e-"]) | st.integers(-400, 400).map(lambda e: f"e{e}"),
    ),
)


@st.composite
def surrogate_strings(draw: st.DrawFn) -> str:
    units = st.sampled_from(["d800", "DBFF", "dc00", "DFFF", "d83d", "de00", "0041", "00e9", "0000", "12G4"])
    parts = draw(st.lists(units.map(lambda u: "\\u" + u) | st.sampled_from(["a", "\\n", "\\", "\\u12"]), max_size=5))
    return '"' + "".join(parts) + draw(st.sampled_from(['"', ""]))


@st.composite
def control_strings(draw: st.DrawFn) -> str:
    body = draw(st.text(alphabet=st.characters(max_codepoint=0x7F), max_size=10))
    return json.dumps([body, draw(st.text(max_size=3))])


@st.composite
def deep(draw: st.DrawFn) -> str:
    opener = draw(st.sampled_from(["[", '{"k":', '[{"a":']))
    depth = draw(st.integers(55, 75))
    closer = {"[": "]", '{"k":': "}", '[{"a":': "}]"}[opener]
    return opener * depth + "0" + closer * draw(st.integers(depth - 1, depth + 1))


SEEDS = st.one_of(
    documents(),
    duplicated_keys(),
    NUMBER_TEXT,
    NUMBER_TEXT.map(lambda n: "[" + n + "]"),
    surrogate_strings(),
    control_strings(),
    deep(),
)


@st.composite
def mutated(draw: st.DrawFn) -> str:
    """A seed with a few edits: truncation, insertion, deletion, character swap."""
    text = draw(SEEDS)
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["truncate", "insert", "delete", "replace"]))
        i = draw(st.integers(0, len(text)))
        if kind == "truncate":
            text = text[:i]
        elif kind == "insert":
            text = text[:i] + draw(st.sampled_from(SIGNIFICANT)) + text[i:]
        elif kind == "delete":
            text = text[:i] + text[i + 1 :]
        else:
            text = text[:i] + draw(st.sampled_from(SIGNIFICANT)) + text[i + 1 :]
    return text


@st.composite
def byte_inputs(draw: st.DrawFn) -> bytes:
    """Encoded documents with a few bytes flipped or inserted (invalid UTF-8, NULs, BOMs)."""
    data = bytearray(draw(mutated()).encode("utf-8", "surrogatepass"))
    for _ in range(draw(st.integers(0, 3))):
        i = draw(st.integers(0, len(data)))
        byte = draw(st.sampled_from([0x00, 0x80, 0xBF, 0xC0, 0xC3, 0xE2, 0xED, 0xEF, 0xF0, 0xF4, 0xF8, 0xFE, 0xFF]))
        if draw(st.booleans()) and i < len(data):
            data[i] ^= byte
        else:
            data[i:i] = bytes([byte])
    return bytes(data)


LIMITS = st.none() | st.builds(
    Limits,
    max_document_bytes=st.integers(1, 400),
    max_depth=st.integers(1, 70),
    max_string_bytes=st.integers(1, 40),
    max_array_items=st.integers(1, 8),
    max_object_members=st.integers(1, 8),
    max_values=st.integers(1, 40),
    max_number_length=st.integers(1, 30),
)


def outcome(impl: ModuleType, data: str | bytes, limits: Limits | None) -> tuple[str, Any]:
    try:
        return ("value", impl.loads(data, limits=limits))
    except ParseError as err:
        return ("error", (err.code, err.pos, err.lineno, err.colno, err.hint, err.doc))


def assert_agree(both: tuple[ModuleType, ModuleType], data: str | bytes, limits: Limits | None = None) -> None:
    native, pure = both
    a, b = outcome(native, data, limits), outcome(pure, data, limits)
    if a[0] == b[0] == "value":
        assert same_value(a[1], b[1]), (data, a, b)
    else:
        assert a == b, data


@given(text=documents())
def test_valid_documents_agree_with_json(both: tuple[ModuleType, ModuleType], text: str) -> None:
    native, pure = both
    expected = json.loads(text)
    for impl in (native, pure):
        assert same_value(impl.loads(text), expected)
        assert same_value(impl.loads(text.encode()), expected)


@given(text=mutated(), limits=LIMITS)
# Edge cases kept as fixed examples: an escaped backslash before "u" (the pure
# fast path's surrogate scan must not be fooled), a surrogate pair split by
# the end of input, numbers at the 64-bit and double edges, and limits hit
# exactly at a container's end.
@example(text='["\\\\ud800", "\\ud83d\\ude00"]', limits=None)
@example(text='"\\ud83d\\', limits=None)
@example(text="[-9223372036854775809, 18446744073709551615]", limits=None)
@example(text="[1.7976931348623157e308, 1.7976931348623159e308]", limits=None)
@example(text="[[], [[]]]", limits=Limits(max_depth=2))
@example(text='{"a": [], "b": {}}', limits=Limits(max_values=3))
@example(text='["\u00e9\u00e9"]', limits=Limits(max_string_bytes=3))
def test_mutated_text_agrees(both: tuple[ModuleType, ModuleType], text: str, limits: Limits | None) -> None:
    assert_agree(both, text, limits)


@given(data=byte_inputs(), limits=LIMITS)
def test_mutated_bytes_agree(both: tuple[ModuleType, ModuleType], data: bytes, limits: Limits | None) -> None:
    assert_agree(both, data, limits)


@given(text=SEEDS, limits=LIMITS)
def test_seeds_agree(both: tuple[ModuleType, ModuleType], text: str, limits: Limits | None) -> None:
    assert_agree(both, text, limits)


@given(
    digits=st.integers(min_value=0, max_value=10**20),
    fraction=st.integers(min_value=0, max_value=24),
    exponent=st.none() | st.integers(min_value=-30, max_value=30),
    negative=st.booleans(),
)
def test_decimals_are_correctly_rounded(
    both: tuple[ModuleType, ModuleType], digits: int, fraction: int, exponent: int | None, negative: bool
) -> None:
    """Short decimals (the native parser's exact fast path) and the rest round
    like ``float()``, bit for bit, sign of zero included."""
    text = str(digits).rjust(fraction + 1, "0")
    text = text[: len(text) - fraction] + "." + text[len(text) - fraction :] if fraction else text + ".0"
    text = ("-" if negative else "") + text + ("" if exponent is None else f"e{exponent}")
    for impl in both:
        got = impl.loads(text)
        assert isinstance(got, float) and got.hex() == float(text).hex(), (impl.__name__, text)
