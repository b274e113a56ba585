"""The pure Chat readers take event data and bodies parsed without the
repeated-key check (``envelope.unkeyed``) once they prove, by counting
``:``, that no key repeats. Wherever they take such a value it must be the
strictly parsed one, and the outcome (response or error) must be the one
the strict parse gives: texts with repeated keys in every object, with the
same or another value, colons in keys and strings, whitespace around the
colon, escapes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from decisions import DEFAULT_LIMITS
from decisions._pure import pipeline
from decisions._pure.envelope import decode, envelope_limits, unkeyed
from decisions._pure.providers import mapper_for
from decisions._pure.providers.openai_chat import _read
from decisions.errors import OutputError
from test_pure_fast_paths import BODIES, _body, _chat, _chunk, _EventsOnly, _fast_taken, _more, _start, _stream_outcome

CHAT = "openai-chat"
LIM = envelope_limits(DEFAULT_LIMITS)


class Obj:
    """A JSON object as its members in order, a key possibly repeated."""

    def __init__(self, members: list[tuple[str, Any]]) -> None:
        self.members = members


def pairs(value: Any) -> Any:
    """``value`` with every dict as an :class:`Obj`."""
    if isinstance(value, dict):
        return Obj([(k, pairs(v)) for k, v in value.items()])
    if isinstance(value, list):
        return [pairs(v) for v in value]
    return value


def dump(value: Any, colon: str = ": ", comma: str = ", ") -> str:
    """The JSON text of a value of :func:`pairs`, with these separators."""
    if isinstance(value, Obj):
        return "{" + comma.join(json.dumps(k) + colon + dump(v, colon, comma) for k, v in value.members) + "}"
    if isinstance(value, list):
        return "[" + comma.join(dump(v, colon, comma) for v in value) + "]"
    return json.dumps(value)


def objects(value: Any) -> list[Obj]:
    """Every object of a value of :func:`pairs`."""
    if isinstance(value, Obj):
        return [value, *(o for _, v in value.members for o in objects(v))]
    if isinstance(value, list):
        return [o for v in value for o in objects(v)]
    return []


def strings(value: Any) -> list[tuple[Any, Any]]:
    """(container, key or index) of every string value of a :func:`pairs` value."""
    out: list[tuple[Any, Any]] = []
    if isinstance(value, Obj):
        for i, (_, v) in enumerate(value.members):
            if isinstance(v, str):
                out.append((value, i))
            out += strings(v)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            if isinstance(v, str):
                out.append((value, i))
            out += strings(v)
    return out


_COLON_TEXT = st.text(alphabet=':" a{}\\', max_size=6)
_SEPARATORS = st.sampled_from([(": ", ", "), (":", ","), (" : ", " , "), ("\t:\n", ",\r\n")])


@st.composite
def damaged_text(draw: st.DrawFn, value: Any) -> str:
    """``value``'s text with some members repeated (same or another value,
    first or last), keys and strings given colons, other separators."""
    tree = pairs(value)
    for _ in range(draw(st.integers(0, 2))):
        found = objects(tree)
        if not found:
            break
        obj = draw(st.sampled_from(found))
        if obj.members and draw(st.booleans()):
            key, old = draw(st.sampled_from(obj.members))
            new = old if draw(st.booleans()) else draw(st.one_of(st.none(), st.integers(0, 3), _COLON_TEXT))
        else:
            key, new = draw(_COLON_TEXT), draw(_COLON_TEXT)
        obj.members.insert(draw(st.integers(0, len(obj.members))), (key, new))
    for _ in range(draw(st.integers(0, 2))):
        found = strings(tree)
        if not found:
            break
        container, at = draw(st.sampled_from(found))
        extra = draw(_COLON_TEXT)
        if isinstance(container, Obj):
            key, old = container.members[at]
            container.members[at] = (key, old + extra)
        else:
            container[at] += extra
    colon, comma = draw(_SEPARATORS)
    return dump(tree, colon, comma)


def _normalized(text: str, fast: bool) -> Any:
    mapper = mapper_for(CHAT, None)
    assert mapper is not None
    try:
        return pipeline.normalize_text(CHAT, mapper if fast else _EventsOnly(mapper), text.encode(), DEFAULT_LIMITS)  # type: ignore[arg-type]
    except OutputError as err:
        return (type(err).__name__, err.code, err.message, err.path, err.offset)


def check_body(text: str) -> bool:
    """A body read from its unkeyed parse is the strictly parsed body, read
    alike, and ``normalize_text`` gives what the strict path gives; whether
    the unkeyed parse was taken."""
    assert _normalized(text, True) == _normalized(text, False)
    light = unkeyed(text.encode(), LIM)
    if light is None:
        return False
    mapper = mapper_for(CHAT, None)
    taken = mapper.fast_body(light[0], CHAT, DEFAULT_LIMITS, light[1])  # type: ignore[union-attr]
    if taken is None:
        return False
    assert decode(text.encode(), DEFAULT_LIMITS, ()) == light[0]
    assert taken == mapper.fast_body(light[0], CHAT, DEFAULT_LIMITS)  # type: ignore[union-attr]
    return True


def check_chunk(text: str) -> bool:
    """A chunk read from its unkeyed parse is the strictly parsed chunk,
    read alike; whether it was read."""
    light = unkeyed(text, LIM)
    if light is None:
        return False
    read = _read(light[0], 0, light[1])
    if read is None:
        return False
    assert decode(text, DEFAULT_LIMITS, ()) == light[0]
    assert read == _read(light[0], 0)
    return True


_BODY_SEEDS = [_body(path) for path in BODIES] + [
    _chat(
        {
            "content": "a: b",
            "tool_calls": [{"id": "c:1", "type": "function", "function": {"name": "f", "arguments": '{"a": ":"}'}}],
        }
    ),
    _chat({"content": None, "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "{}"}}]}, model="m:7b"),
    _chat({"content": "x"}, "stop", usage={"prompt_tokens": 1, "prompt_tokens_details": {"cached_tokens": 0}}),
]


@given(st.sampled_from(_BODY_SEEDS).flatmap(damaged_text))
def test_bodies(text: str) -> None:
    check_body(text)


_CHUNK_SEEDS = [
    _chunk({"role": "assistant"}),
    _chunk({"content": 'a: ":" b'}),
    _chunk(None, "stop"),
    _start(0, "call:1", "f", '{"a": 1}'),
    _more(0, '": "'),
    _more(0, "x"),
]


@given(st.sampled_from(_CHUNK_SEEDS).flatmap(damaged_text))
def test_chunks(text: str) -> None:
    check_chunk(text)


@given(st.lists(st.sampled_from(_CHUNK_SEEDS).flatmap(damaged_text), min_size=1, max_size=4))
def test_streams(texts: list[str]) -> None:
    events = [_chunk({"role": "assistant"}), _start(0, "a"), *texts, _chunk(None, "tool_calls")]
    assert _stream_outcome(events, False, DEFAULT_LIMITS, None) == _stream_outcome(events, True, DEFAULT_LIMITS, None)


_ARGS = '"arguments": "{\\"path\\": \\"a\\"}"'
_BODY = (
    '{"id": "r", "model": "m", "choices": [{"index": 0, "message": {"role": "assistant", "content": null, '
    '"tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", ' + _ARGS + "}}]}, "
    '"finish_reason": "tool_calls"}], "usage": {"prompt_tokens": 1, "completion_tokens": 2}}'
)
BODY_EDGES = {
    "plain": (_BODY, True),
    "no space before the colons": (_BODY.replace('": ', '":'), True),
    "spaces around the colons": (_BODY.replace('": ', '" : '), True),
    "id repeated, same value": (_BODY.replace('"id": "r"', '"id": "r", "id": "r"'), False),
    "id repeated, another value": (_BODY.replace('"id": "r"', '"id": "s", "id": "r"'), False),
    "arguments repeated": (_BODY.replace(_ARGS, _ARGS + ", " + _ARGS), False),
    "usage key repeated": (
        _BODY.replace('"completion_tokens": 2', '"completion_tokens": 2, "completion_tokens": 2'),
        False,
    ),
    "repeated key in an object not read": (_BODY.replace('"id": "r"', '"id": "r", "x": {"a": 1, "a": 1}'), False),
    "object not read": (_BODY.replace('"id": "r"', '"id": "r", "x": {"a": 1}'), False),
    "colon in a key": (_BODY.replace('"id": "r"', '"id": "r", "a:b": 1'), False),
    "colon in a string not read": (_BODY.replace('"id": "r"', '"id": "r", "x": "a:b"'), False),
    "colon in the id": (_BODY.replace('"id": "r"', '"id": "r:1"'), True),
    "colon in the id, a key repeated": (_BODY.replace('"id": "r"', '"id": "r:1", "model": "m"'), False),
    "colons in the arguments, a key repeated": (_BODY.replace('"index": 0', '"index": 0, "index": 0'), False),
    "an escape": (_BODY.replace('"m"', '"\\u006d"'), False),
    "an escaped colon": (_BODY.replace('"r"', '"\\u003a"').replace('"index": 0', '"index": 0, "index": 0'), False),
}


@pytest.mark.parametrize(("text", "taken"), list(BODY_EDGES.values()), ids=list(BODY_EDGES))
def test_body_edges(text: str, taken: bool) -> None:
    assert check_body(text) is taken


_CHUNK_TEXT = json.dumps(_start(0, "c", "f", '{"a": 1}'))
CHUNK_EDGES = {
    "plain": (_CHUNK_TEXT, True),
    "function repeated": (_CHUNK_TEXT.replace('"function": {', '"function": {}, "function": {'), False),
    "name repeated": (_CHUNK_TEXT.replace('"name": "f"', '"name": "g", "name": "f"'), False),
    "index repeated": (_CHUNK_TEXT.replace('"index": 0,', '"index": 0, "index": 0,'), False),
    "choices repeated": (_CHUNK_TEXT.replace('"choices": [', '"choices": [], "choices": ['), False),
    "a key beside, with colons": (_CHUNK_TEXT.replace('"model": "m"', '"model": "m", "x": ":"'), False),
}


@pytest.mark.parametrize(("text", "taken"), list(CHUNK_EDGES.values()), ids=list(CHUNK_EDGES))
def test_chunk_edges(text: str, taken: bool) -> None:
    assert check_chunk(text) is taken
    events = [_chunk({"role": "assistant"}), text, _chunk(None, "tool_calls")]
    assert _stream_outcome(events, False, DEFAULT_LIMITS, None) == _stream_outcome(events, True, DEFAULT_LIMITS, None)


def test_common_data_takes_the_unkeyed_parse() -> None:
    """The shortcut is not dead code: most recorded bodies that ``fast_body``
    reads are read from their unkeyed parse."""
    texts = [json.dumps(_body(path)) for path in BODIES]
    common = [text for text in texts if _fast_taken(text.encode(), DEFAULT_LIMITS, None)]
    assert sum(check_body(text) for text in common) >= len(common) * 3 // 4
