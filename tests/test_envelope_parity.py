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


# ---------------------------------------------------------------- mapper shape errors
# Every field of every recorded event given each wrong JSON type: both
# backends give the same response, or the same error class, code, message,
# path and offset. A mapper's MALFORMED_EVENT names the path of the field in
# the event (the envelope rule's syntax). The field list is generated from
# the recordings: one case per provider, field (indices written ``[*]``) and
# the JSON type the recording gives it.

#: the providers whose mappers follow the shape template (all of them)
TEMPLATE = ("openai-chat", "openai-responses", "anthropic", "gemini")

WRONG = ['"x"', "7", "-1", "1.5", "true", "[]", "{}", "null"]


def _json_type(value: Any) -> str:
    if isinstance(value, _Obj):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, _Num):
        return "number"
    return type(value).__name__


def _paths(value: Any, at: str = "$") -> list[tuple[str, str, list[Any]]]:
    """``(path, normalized path, route)`` of every value below ``value``."""
    out = []
    stack = [(value, at, at, [])]
    while stack:
        node, path, norm, route = stack.pop()
        if isinstance(node, _Obj):
            for i, (k, child) in enumerate(node):
                out.append((f"{path}.{k}", f"{norm}.{k}", [*route, i]))
                stack.append((child, f"{path}.{k}", f"{norm}.{k}", [*route, i]))
        elif isinstance(node, list):
            for i, child in enumerate(node):
                out.append((f"{path}[{i}]", f"{norm}[*]", [*route, i]))
                stack.append((child, f"{path}[{i}]", f"{norm}[*]", [*route, i]))
    return out


def _at(value: Any, route: list[int]) -> tuple[Any, int]:
    for i in route[:-1]:
        value = _get(value, i)
    return value, route[-1]


def _field_cases() -> list[tuple[str, str, str, int, list[int], str]]:
    """One ``(recording, format, provider, line, route, wrong value)`` per
    provider, field and recorded type, and wrong JSON value."""
    seen: set[tuple[str, str, str]] = set()
    cases = []
    for path, file_format, provider in RECORDINGS:
        if provider not in TEMPLATE:
            continue
        data = (FIXTURES / path).read_bytes()
        for line, text in _documents(data, file_format):
            try:
                value = _load(text)
            except ValueError:
                continue
            for _, norm, route in _paths(value):
                container, index = _at(value, route)
                kind = _json_type(_get(container, index))
                key = (provider, norm, kind)
                if key in seen:
                    continue
                seen.add(key)
                for wrong in WRONG:
                    if _json_type(_load(wrong)) != kind:
                        cases.append((path, file_format, provider, line, route, wrong))
    return cases


FIELD_CASES = _field_cases()


def _full_outcome(impl: ModuleType, data: bytes, file_format: str, provider: str) -> Any:
    """``_outcome`` with the error's message too."""
    outcome = _outcome(impl, data, file_format, provider)
    if outcome[0] == "error":
        try:
            _outcome_raise(impl, data, file_format, provider)
        except OutputError as err:
            return (*outcome, err.message)
    return outcome


def _outcome_raise(impl: ModuleType, data: bytes, file_format: str, provider: str) -> None:
    if file_format == "json-body":
        impl.normalize(data, provider=provider)
        return
    asm = impl.StreamAssembler(provider)
    if file_format == "raw-sse":
        asm.feed(data)
    else:
        for line in data.splitlines():
            if line.strip():
                asm.feed_event(line)
    asm.finish()


def _mutated(case: tuple[str, str, str, int, list[int], str]) -> tuple[bytes, str, str, str]:
    path, file_format, provider, line, route, wrong = case
    data = (FIXTURES / path).read_bytes()
    text = dict(_documents(data, file_format))[line]
    value = _load(text)
    container, index = _at(value, route)
    _set(container, index, _Raw(wrong))
    field = _paths(value)
    where = next(p for p, _, r in field if r == route)
    return _replace(data, file_format, line, _dump(value)), file_format, provider, where


def test_field_cases_cover_every_template_provider() -> None:
    """The generated list is not empty for any provider it claims to cover."""
    assert {case[2] for case in FIELD_CASES} == set(TEMPLATE)
    assert len(FIELD_CASES) > 300


def test_every_field_with_every_wrong_type_agrees(both: tuple[ModuleType, ModuleType]) -> None:
    """Same response, or same error class, code, message, path and offset,
    for each generated case; a mapper's MALFORMED_EVENT names a path."""
    native, pure = both
    failures = []
    for case in FIELD_CASES:
        data, file_format, provider, where = _mutated(case)
        expected = _full_outcome(native, data, file_format, provider)
        got = _full_outcome(pure, data, file_format, provider)
        if got != expected:
            failures.append((case[0], where, case[5], expected, got))
        elif expected[0] == "error" and expected[2] == "MALFORMED_EVENT" and expected[3] is None:
            failures.append((case[0], where, case[5], "no path", expected))
    assert not failures, f"{len(failures)} of {len(FIELD_CASES)}: {failures[:5]}"


@st.composite
def mutated_recording(draw: st.DrawFn) -> tuple[bytes, str, str, str]:
    """A recording of a template provider with one value of one event replaced
    by a value of another JSON type."""
    rows = [row for row in RECORDINGS if row[2] in TEMPLATE]
    path, file_format, provider = draw(st.sampled_from(rows))
    data = (FIXTURES / path).read_bytes()
    line, text = draw(st.sampled_from(_documents(data, file_format)))
    try:
        value = _load(text)
    except ValueError:  # data that is not JSON ([DONE])
        return data, file_format, provider, "$"
    field = _paths(value)
    if not field:
        return data, file_format, provider, "$"
    where, _, route = draw(st.sampled_from(field))
    container, index = _at(value, route)
    _set(container, index, _Raw(draw(st.sampled_from(WRONG))))
    return _replace(data, file_format, line, _dump(value)), file_format, provider, where


@given(mutated_recording())
def test_mutated_recordings_agree_with_message_and_path(
    both: tuple[ModuleType, ModuleType], case: tuple[bytes, str, str, str]
) -> None:
    native, pure = both
    data, file_format, provider, where = case
    note(f"{provider}: {where}")
    expected = _full_outcome(native, data, file_format, provider)
    note(f"native: {expected}")
    assert _full_outcome(pure, data, file_format, provider) == expected
