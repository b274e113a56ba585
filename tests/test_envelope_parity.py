"""Native vs pure on hostile provider envelopes.

The provider event data and bodies are decoded by serde_json (native) and by
the pure twin's strict ``json.loads`` plumbing. This test takes one recorded
event (or body) of every provider and rewrites its JSON text with a hostile
form at one place: ``NaN`` / ``Infinity`` / ``-Infinity`` instead of a value,
a lone surrogate escape (``\\ud800``, ``\\udc00``) in a string, a paired
surrogate escape or an escaped backslash before ``ud800`` (both valid), a
repeated known or unknown key, integers beyond 64 bits (and ``1e400``,
``-1``) instead of a number. Both backends must then give the same
``NormalizedResponse`` or the same error class and code.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

from hypothesis import given, note
from hypothesis import strategies as st

from decisions import OutputError

FIXTURES = Path(__file__).parent / "fixtures"
_APIS = {
    "openai-chat": "openai-chat",
    "openai-responses": "openai-responses",
    "anthropic-messages": "anthropic",
    "gemini": "gemini",
}


class _Num(str):
    """A number kept as the text it was written with."""


class _Obj(list):  # type: ignore[type-arg]
    """An object's key-value pairs (duplicates allowed)."""


class _Raw(str):
    """JSON text written as is."""


def _load(text: str) -> Any:
    """JSON text -> lists and ``_Obj`` pair lists, numbers as written."""
    return json.loads(text, object_pairs_hook=_Obj, parse_float=_Num, parse_int=_Num)


def _dump(value: Any) -> str:
    """The JSON text of a ``_load`` value (no whitespace, strings ASCII-escaped)."""
    if isinstance(value, _Raw):
        return str(value)
    if isinstance(value, _Num):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, _Obj):
        return "{" + ",".join(json.dumps(k) + ":" + _dump(v) for k, v in value) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_dump(v) for v in value) + "]"
    return json.dumps(value)


def _slots(value: Any, out: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """Every ``(container, index)`` holding a value, depth first."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, _Obj):
            for i, (_, child) in enumerate(node):
                out.append((node, i))
                stack.append(child)
        elif isinstance(node, list):
            for i, child in enumerate(node):
                out.append((node, i))
                stack.append(child)
    return out


def _get(container: Any, index: int) -> Any:
    return container[index][1] if isinstance(container, _Obj) else container[index]


def _set(container: Any, index: int, value: Any) -> None:
    if isinstance(container, _Obj):
        container[index] = (container[index][0], value)
    else:
        container[index] = value


CONSTANTS = ["NaN", "Infinity", "-Infinity"]
HUGE = [
    str(2**64),
    str(2**64 - 1),
    str(2**70),
    str(-(2**63) - 1),
    "100000000000000000000000000000",
    "-1",
    "1e400",
    "1.5",
]
STRING_FORMS = ["\\ud800", "\\udc00", "a\\udbff", "\\ud83d\\ude00", "\\\\ud800", "\\ud800\\u0041", "\\uDFFF"]
OTHER_VALUES = ["null", "0", '"x"', "[]", "{}", "true"]


@st.composite
def hostile(draw: st.DrawFn, text: str) -> str:
    """``text`` (one JSON document) with one hostile form at one place."""
    value = _load(text)
    slots = _slots(value, [])
    objects = [value] if isinstance(value, _Obj) else []
    objects += [_get(c, i) for c, i in slots if isinstance(_get(c, i), _Obj)]
    kind = draw(st.sampled_from(["constant", "string", "number", "dup_known", "dup_unknown"]))
    if kind in ("dup_known", "dup_unknown") and objects:
        obj = draw(st.sampled_from(objects))
        if kind == "dup_known" and obj:
            k, v = obj[draw(st.integers(0, len(obj) - 1))]
            obj.insert(
                draw(st.integers(0, len(obj))), (k, draw(st.sampled_from([_Raw(_dump(v)), *map(_Raw, OTHER_VALUES)])))
            )
            return _dump(value)
        for _ in range(2):
            obj.insert(draw(st.integers(0, len(obj))), ("x_unknown_key", _Raw(draw(st.sampled_from(OTHER_VALUES)))))
        return _dump(value)
    if not slots:
        return text
    if kind == "string":
        strings = [(c, i) for c, i in slots if type(_get(c, i)) is str]
        if strings:
            c, i = draw(st.sampled_from(strings))
            old = json.dumps(_get(c, i))[1:-1]
            cut = draw(st.sampled_from([0, len(old)]))  # never inside an escape
            _set(c, i, _Raw('"' + old[:cut] + draw(st.sampled_from(STRING_FORMS)) + old[cut:] + '"'))
            return _dump(value)
    if kind == "number":
        numbers = [(c, i) for c, i in slots if isinstance(_get(c, i), _Num)]
        if numbers:
            c, i = draw(st.sampled_from(numbers))
            _set(c, i, _Raw(draw(st.sampled_from(HUGE))))
            return _dump(value)
    c, i = draw(st.sampled_from(slots))
    _set(c, i, _Raw(draw(st.sampled_from(CONSTANTS))))
    return _dump(value)


def _recordings() -> list[tuple[str, str, str]]:
    rows = []
    for line in (FIXTURES / "FEATURES.tsv").read_text().splitlines()[1:]:
        _, path, file_format, api, *_ = line.split("\t")
        if api in _APIS and file_format in ("raw-sse", "jsonl", "json-body"):
            rows.append((path, file_format, _APIS[api]))
    return rows


RECORDINGS = _recordings()


def _documents(data: bytes, file_format: str) -> list[tuple[int, str]]:
    """``(line number, JSON text)`` of each event (or the body, line -1)."""
    if file_format == "json-body":
        return [(-1, data.decode("utf-8"))]
    out = []
    for n, line in enumerate(data.decode("utf-8").split("\n")):
        text = line[5:].strip() if file_format == "raw-sse" and line.startswith("data:") else line.strip()
        if file_format == "raw-sse" and not line.startswith("data:"):
            continue
        if text.startswith(("{", "[")):
            out.append((n, text))
    return out


def _outcome(impl: ModuleType, data: bytes, file_format: str, provider: str) -> Any:
    try:
        if file_format == "json-body":
            return ("ok", impl.normalize(data, provider=provider))
        asm = impl.StreamAssembler(provider)
        if file_format == "raw-sse":
            asm.feed(data)
        else:
            for line in data.splitlines():
                if line.strip():
                    asm.feed_event(line)
        return ("ok", asm.finish())
    except OutputError as err:
        return ("error", type(err).__name__, err.code, err.path, err.offset)


def _replace(data: bytes, file_format: str, line: int, text: str) -> bytes:
    if line < 0:
        return text.encode("utf-8")
    lines = data.decode("utf-8").split("\n")
    lines[line] = ("data: " + text) if file_format == "raw-sse" else text
    return "\n".join(lines).encode("utf-8")


@st.composite
def hostile_recording(draw: st.DrawFn) -> tuple[bytes, str, str]:
    """A recording with one event (or its body) made hostile."""
    path, file_format, provider = draw(st.sampled_from(RECORDINGS))
    data = (FIXTURES / path).read_bytes()
    docs = _documents(data, file_format)
    if not docs:
        return data, file_format, provider
    line, text = draw(st.sampled_from(docs))
    try:
        _load(text)
    except ValueError:
        return data, file_format, provider
    changed = draw(hostile(text))
    plain = _dump(_load(text))
    start = next((i for i, (x, y) in enumerate(zip(plain, changed)) if x != y), min(len(plain), len(changed)))
    note(f"{path}: ...{changed[max(0, start - 60) : start + 60]}...")
    return _replace(data, file_format, line, changed), file_format, provider


@given(hostile_recording())
def test_hostile_envelopes_agree(both: tuple[ModuleType, ModuleType], case: tuple[bytes, str, str]) -> None:
    """Same response, or same error class, code and path, on both backends:
    repeated keys included (the envelope rule refuses them on both)."""
    native, pure = both
    data, file_format, provider = case
    expected = _outcome(native, data, file_format, provider)
    note(f"native: {expected[:3]}")
    assert _outcome(pure, data, file_format, provider) == expected
