"""Every error, of every code, crosses a process boundary whole: through
``pickle`` (every attribute, notes included) and through ``to_dict`` /
``OutputError.from_dict``. Only a ParseError's ``doc`` stays behind: the
model's raw text may hold credentials."""

from __future__ import annotations

import json
import pickle
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from decisions import ERROR_CODES, OutputError, ParseError, error_class

_text = st.text(max_size=40)
_maybe_text = st.none() | _text
_issue = st.fixed_dictionaries({"path": _text, "code": _text, "expected": _text})
_entry = st.fixed_dictionaries(
    {
        "index": st.integers(0, 200),
        "call_id": _text,
        "tool": _text,
        "status": st.sampled_from(["denied", "not_run"]),
        "code": st.sampled_from(sorted(ERROR_CODES)),
    }
)


@st.composite
def errors(draw: st.DrawFn, code: str) -> OutputError:
    cls = error_class(code)
    common: dict[str, Any] = {
        "retryable": draw(st.none() | st.booleans()),
        "path": draw(_maybe_text),
        "hint": draw(_maybe_text),
        "issues": tuple(draw(st.lists(_issue, max_size=3))),
        "call_index": draw(st.none() | st.integers(0, 1000)),
        "call_id": draw(_maybe_text),
        "tool": draw(_maybe_text),
        "batch": tuple(draw(st.lists(_entry, max_size=3))),
    }
    message = draw(_maybe_text)
    if cls is ParseError:
        doc = draw(_text)
        pos = draw(st.integers(0, len(doc)))
        return ParseError(code, message, doc=doc, pos=pos, **common)
    return cls(code, message, offset=draw(st.none() | st.integers(0, 10**9)), **common)


def _state(error: OutputError) -> dict[str, Any]:
    """Everything an error holds, but a ParseError's document (the model's raw
    text may hold credentials, so it never travels; see test_adversarial_text)."""
    return {"class": type(error), "args": error.args, "str": str(error), **vars(error), "doc": None}


CODES = sorted(ERROR_CODES)


@pytest.mark.parametrize("code", CODES)
@settings(max_examples=10)
@given(data=st.data())
def test_pickle_keeps_every_attribute(code: str, data: st.DataObject) -> None:
    error = data.draw(errors(code))
    notes = data.draw(st.lists(_text, max_size=2))
    for note in notes:
        error.add_note(note)
    for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):
        copy = pickle.loads(pickle.dumps(error, protocol=protocol))
        assert _state(copy) == _state(error)
        assert copy.to_dict() == error.to_dict()


@pytest.mark.parametrize("code", CODES)
@settings(max_examples=10)
@given(data=st.data())
def test_to_dict_and_from_dict_round_trip_through_json(code: str, data: st.DataObject) -> None:
    error = data.draw(errors(code))
    shape = json.loads(json.dumps(error.to_dict()))
    copy = OutputError.from_dict(shape)
    assert type(copy) is type(error)
    assert copy.to_dict() == error.to_dict()
    assert _state(copy) == _state(error)


_MEMBER_TYPES = {"message": str, "retryable": bool, "offset": int, "path": str, "hint": str, "lineno": int}
_MEMBER_TYPES |= {"colno": int, "call_index": int, "call_id": str, "tool": str, "issues": list, "batch": list}
_WRONG = [[], ["x"], {}, {"a": 1}, 1, 1.5, True, "x", 10**30]
_BATCH_ENTRY = {"index": 0, "call_id": "c", "tool": "t", "status": "denied", "code": "UNKNOWN_TOOL"}


@pytest.mark.parametrize("code", ["INVALID_ESCAPE", "UNKNOWN_TOOL", "PATH_OUTSIDE_WORKSPACE"])
@pytest.mark.parametrize("member", [*_MEMBER_TYPES, "issues[0]", "batch[0]", "code"])
@pytest.mark.parametrize("value", _WRONG, ids=repr)
def test_from_dict_types_each_member_first(code: str, member: str, value: object) -> None:
    """A dict from elsewhere (a queue, a database) may hold anything: a member
    of another JSON type is SCHEMA_MISMATCH at its path, never an
    AttributeError, TypeError or KeyError from inside the error class."""
    data = error_class(code)(code, "m", issues=({"path": "$", "code": "c", "expected": "e"},)).to_dict()
    data["batch"] = [_BATCH_ENTRY]
    name, _, index = member.partition("[")
    wanted = dict if index else _MEMBER_TYPES.get(member, str)
    if type(value) is wanted and member != "code":
        pytest.skip("the member's own type")
    if index:
        data[name][0] = value
    else:
        data[name] = value
    with pytest.raises(OutputError) as caught:
        OutputError.from_dict(data, path="$.error")
    assert (caught.value.code, caught.value.path) == ("SCHEMA_MISMATCH", f"$.error.{member}")


@pytest.mark.parametrize("data", [None, [], "x", {}, {"code": "NOT_A_CODE", "issues": []}, {"code": "UNKNOWN_TOOL"}])
def test_from_dict_refuses_what_is_no_error(data: Any) -> None:
    with pytest.raises(OutputError) as caught:
        OutputError.from_dict(data)
    assert caught.value.code == "SCHEMA_MISMATCH"


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("index", None),
        ("index", -1),
        ("index", True),
        ("index", "0"),
        ("call_id", None),
        ("call_id", 1),
        ("tool", None),
        ("tool", ["t"]),
        ("status", None),
        ("status", "ran"),
        ("status", 1),
        ("code", None),
        ("code", "NOT_A_CODE"),
        ("code", 1),
    ],
    ids=repr,
)
def test_from_dict_types_each_batch_entry_member(key: str, value: object) -> None:
    """A batch entry is the documented shape or SCHEMA_MISMATCH at its member, never an error
    carrying a batch that a host reading ``status`` or ``code`` would misread."""
    data = error_class("UNKNOWN_TOOL")("UNKNOWN_TOOL", "m").to_dict()
    entry = dict(_BATCH_ENTRY)
    if value is None:
        del entry[key]
    else:
        entry[key] = value
    data["batch"] = [dict(_BATCH_ENTRY), entry]
    with pytest.raises(OutputError) as caught:
        OutputError.from_dict(data, path="$.error")
    assert (caught.value.code, caught.value.path) == ("SCHEMA_MISMATCH", f"$.error.batch[1].{key}")
    data["batch"] = [dict(_BATCH_ENTRY)]
    assert OutputError.from_dict(data).batch == (_BATCH_ENTRY,)
