"""A stream that contradicts itself, on both backends.

Every fact a provider's stream states more than once (an item's kind, id,
call id, name, a part's type, a call's arguments, the text of an answer) may
be stated differently the second time. A contradiction that could change
which call runs, with which arguments, or the final answer is refused at the
event that states it, never resolved by picking one side; a restatement that
agrees is accepted. Each case is a recorded fixture with one event changed.

1. OpenAI Responses: a message content part restated as another type than it
   streamed as (``response.content_part.done``, the message in
   ``response.output_item.done`` or in ``response.completed``'s output) was
   accepted: an answer streamed as text and restated as a refusal (or the
   reverse) was decided as the stream said. It is ``OUTPUT_MISMATCH`` at the
   part's ``type``, as a restated text or call is.
2. OpenAI Responses: ``response.function_call_arguments.done`` carries the
   call's ``name``; one naming another tool than the call was added as was
   ignored. It is ``OUTPUT_MISMATCH`` at ``$.name`` (a name of another type
   is ``MALFORMED_EVENT`` there).

3. OpenAI Responses: every ``*.delta`` / ``*.done``, content part and
   ``response.output_item.done`` event names its item twice, by ``item_id``
   (or the item's ``id``) and by ``output_index``. One whose
   ``output_index`` is not the one the item was added at was applied to the
   item its id names, while a client that reads the index (the OpenAI SDK's
   accumulator) applies it to the other. It is ``OUTPUT_MISMATCH`` at
   ``$.output_index``; an event without one, or an item added without one,
   is taken by its id as before.
4. Gemini: a part continuing a streamed call (``willContinue``) that gives
   the call an ``id`` other than the one its first part gave (or any, when
   the first gave none and the id was generated) was taken as the call's
   continuation under the first id: the result would be paired with another
   id than the provider's. It is ``MALFORMED_EVENT`` at ``functionCall.id``,
   as a continuation that names a tool is at ``functionCall``; the same id
   restated, or an empty one, is accepted.

The contradictions each provider's mapper already refused are pinned in one
table (each with its code and the event that fails), and every mutated
stream gives the same outcome on both backends.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

from conftest import BACKENDS, FIXTURES
from decisions import OutputError, decide

PACKAGES = FIXTURES / "vercel-ai" / "packages"

Events = list[dict[str, Any]]


def _events(path: str) -> Events:
    """The recorded stream at ``path`` (under the vercel-ai packages), one JSON event a line."""
    return [json.loads(line) for line in (PACKAGES / path).read_text().splitlines() if line.strip()]


#: a Responses message answering in text: its last turn (created ... completed)
RESP_MESSAGE = _events("openai/src/responses/__fixtures__/openai-reasoning-encrypted-content.1.chunks.txt")[94:110]
#: a Responses function call (created ... completed)
RESP_CALL = _events("azure/src/__fixtures__/azure-tool-call.1.chunks.txt")
#: a Chat Completions function call, streamed by index
CHAT_CALL = _events("deepseek/src/chat/__fixtures__/deepseek-tool-call.chunks.txt")
#: an Anthropic text block then a tool_use block
ANTHROPIC_CALL = _events("anthropic/src/__fixtures__/anthropic-tool-no-args.chunks.txt")
#: a Gemini function call, then the finishing chunk
GEMINI_CALL = _events("google/src/__fixtures__/google-tool-call.chunks.txt")

ANSWER = "The final result is **570**."


def outcome(impl: ModuleType, provider: str, events: Events, message: bool = False) -> tuple[Any, ...]:
    """What ``impl`` makes of ``events``: ``("error", event index or "finish", code, path)``
    (and the error's message if ``message``), ``("tool", calls)``, ``("final", value)`` or
    ``("refused", code)`` from ``decide``."""
    assembler = impl.StreamAssembler(provider)
    index: int | str = 0
    try:
        for index, event in enumerate(events):
            assembler.feed_event(json.dumps(event))
        index = "finish"
        response = assembler.finish()
    except OutputError as error:
        assert assembler.state == "failed"
        return ("error", index, error.code, error.path) + ((error.message,) if message else ())
    try:
        decision = decide(response)
    except OutputError as error:
        return ("refused", error.code)
    if decision.kind == "tool":
        return ("tool", [(call.call_id, call.name, call.arguments) for call in decision.calls])
    return ("final", decision.value)


def mutated(events: Events, change: Callable[[Events], Events | None]) -> Events:
    """A deep copy of ``events`` changed by ``change`` (in place, or by what it returns)."""
    copied = copy.deepcopy(events)
    result = change(copied)
    return copied if result is None else result


def _at(events: Events, kind: str) -> dict[str, Any]:
    """The one event of type ``kind`` in ``events``."""
    (event,) = [event for event in events if event.get("type") == kind]
    return event


# ------------------------------------------------------------------ 1. Responses: a part's type restated

RESP = "openai-responses"


def _as_refusal(events: Events) -> None:
    """The message, streamed and restated everywhere as a refusal with the same text."""
    for event in events:
        kind = event["type"]
        if kind == "response.output_text.delta":
            event["type"] = "response.refusal.delta"
        elif kind == "response.output_text.done":
            event.update(type="response.refusal.done", refusal=event.pop("text"))
        elif kind in ("response.content_part.added", "response.content_part.done"):
            event["part"] = {"type": "refusal", "refusal": event["part"]["text"]}
    for item in (_at(events, "response.output_item.done")["item"], _at(events, "response.completed")["response"]):
        message = item if "content" in item else item["output"][0]
        message["content"] = [{"type": "refusal", "refusal": part["text"]} for part in message["content"]]


def _refusal_stream() -> Events:
    return mutated(RESP_MESSAGE, _as_refusal)


#: where a part's type is restated: the event, and the path of that part in it
PART_RESTATED: dict[str, tuple[str, str]] = {
    "content_part.done": ("response.content_part.done", "$.part"),
    "output_item.done": ("response.output_item.done", "$.item.content[0]"),
    "completed": ("response.completed", "$.response.output[0].content[0]"),
}


def _part_in(event: dict[str, Any]) -> dict[str, Any]:
    """The restated part's object in ``event`` (one of :data:`PART_RESTATED`)."""
    if "part" in event:
        return event["part"]  # type: ignore[no-any-return]
    item = event["item"] if "item" in event else event["response"]["output"][0]
    return item["content"][0]  # type: ignore[no-any-return]


def _restate(events: Events, where: str, part: Callable[[str], dict[str, Any]]) -> tuple[Events, int]:
    """``events`` with the part at ``where`` replaced by ``part(text)``, and that event's index."""
    kind, _ = PART_RESTATED[where]
    changed = copy.deepcopy(events)
    index = next(i for i, event in enumerate(changed) if event["type"] == kind)
    target = _part_in(changed[index])
    text = target.get("text", target.get("refusal"))
    target.clear()
    target.update(part(text))
    return changed, index


def test_the_streams_agreeing_with_themselves_are_decided(impl: ModuleType) -> None:
    """The controls: the text answer, and the same answer as a refusal throughout."""
    assert outcome(impl, RESP, RESP_MESSAGE) == ("final", ANSWER)
    assert outcome(impl, RESP, _refusal_stream()) == ("refused", "REFUSAL")


@pytest.mark.parametrize("where", list(PART_RESTATED))
def test_text_restated_as_a_refusal_is_refused(impl: ModuleType, where: str) -> None:
    events, index = _restate(RESP_MESSAGE, where, lambda text: {"type": "refusal", "refusal": text})
    assert outcome(impl, RESP, events) == ("error", index, "OUTPUT_MISMATCH", f"{PART_RESTATED[where][1]}.type")


@pytest.mark.parametrize("where", list(PART_RESTATED))
def test_a_refusal_restated_as_text_is_refused(impl: ModuleType, where: str) -> None:
    """The refusal would have become the final answer had the restatement won."""
    events, index = _restate(_refusal_stream(), where, lambda text: {"type": "output_text", "text": text})
    assert outcome(impl, RESP, events) == ("error", index, "OUTPUT_MISMATCH", f"{PART_RESTATED[where][1]}.type")


@pytest.mark.parametrize("where", list(PART_RESTATED))
def test_a_part_restated_as_a_kind_the_package_does_not_read_is_refused(impl: ModuleType, where: str) -> None:
    """An ``output_text`` part restated as audio with the same text: the stream's answer is in doubt."""
    events, index = _restate(
        RESP_MESSAGE, where, lambda text: {"type": "output_audio", "text": text, "transcript": text}
    )
    code, path = outcome(impl, RESP, events)[2:]
    assert outcome(impl, RESP, events)[:2] == ("error", index)
    assert (code, path) in (
        ("OUTPUT_MISMATCH", f"{PART_RESTATED[where][1]}.type"),
        ("UNSUPPORTED_ITEM", PART_RESTATED[where][1]),
    )


def test_the_message_restated_in_its_own_kind_is_accepted(impl: ModuleType) -> None:
    """A restatement that agrees (here every part written anew, members reordered) changes nothing."""
    events = mutated(
        RESP_MESSAGE,
        lambda s: [
            {**event, "part": {"text": event["part"]["text"], "type": "output_text"}} if "part" in event else event
            for event in s
        ],
    )
    assert outcome(impl, RESP, events) == ("final", ANSWER)


# ------------------------------------------------------------------ 2. Responses: arguments.done names another tool


def _arguments_done_name(name: Any) -> Events:
    def change(events: Events) -> None:
        _at(events, "response.function_call_arguments.done")["name"] = name

    return mutated(RESP_CALL, change)


ARGS_DONE = next(i for i, e in enumerate(RESP_CALL) if e["type"] == "response.function_call_arguments.done")
CALL = ("call_H5DxLSFnsGhiROnUiDHmgyc8", "weather", {"location": "San Francisco"})


def test_arguments_done_naming_the_call_is_accepted(impl: ModuleType) -> None:
    assert outcome(impl, RESP, RESP_CALL) == ("tool", [CALL])
    assert outcome(impl, RESP, _arguments_done_name("weather")) == ("tool", [CALL])
    assert outcome(impl, RESP, _arguments_done_name(None)) == ("tool", [CALL])


@pytest.mark.parametrize("name", ["delete_account", "", "Weather"])
def test_arguments_done_naming_another_tool_is_refused(impl: ModuleType, name: str) -> None:
    assert outcome(impl, RESP, _arguments_done_name(name)) == ("error", ARGS_DONE, "OUTPUT_MISMATCH", "$.name")


@pytest.mark.parametrize("name", [7, ["weather"], {"name": "weather"}, True])
def test_arguments_done_with_a_name_of_another_type_is_malformed(impl: ModuleType, name: Any) -> None:
    assert outcome(impl, RESP, _arguments_done_name(name)) == ("error", ARGS_DONE, "MALFORMED_EVENT", "$.name")


# ------------------------------------------------------------------ 3. Responses: output_index names another item

#: each event of the two streams that names an item by id and output_index (the call's is at 0)
PLACED = [
    (name, stream, index)
    for name, stream in (("message", RESP_MESSAGE), ("call", RESP_CALL))
    for index, event in enumerate(stream)
    if "output_index" in event and event["type"] != "response.output_item.added"
]


@pytest.mark.parametrize(
    ("stream", "index"),
    [(stream, index) for _, stream, index in PLACED],
    ids=[f"{name} {stream[index]['type']} #{index}" for name, stream, index in PLACED],
)
def test_an_event_at_another_output_index_is_refused(impl: ModuleType, stream: Events, index: int) -> None:
    events = mutated(stream, _set(index, "output_index", value=1))
    assert outcome(impl, RESP, events) == ("error", index, "OUTPUT_MISMATCH", "$.output_index")


def test_the_output_index_is_read_only_when_both_sides_give_it(impl: ModuleType) -> None:
    """The controls: an event without an output_index, or an item added without one, is taken by its id."""
    without = mutated(RESP_CALL, lambda s: [{k: v for k, v in e.items() if k != "output_index"} for e in s])
    assert outcome(impl, RESP, without) == ("tool", [CALL])
    added = next(i for i, e in enumerate(RESP_CALL) if e["type"] == "response.output_item.added")
    added_without = mutated(
        RESP_CALL,
        lambda s: [{k: v for k, v in e.items() if k != "output_index"} if i == added else e for i, e in enumerate(s)],
    )
    assert outcome(impl, RESP, mutated(added_without, _set(ARGS_DONE, "output_index", value=1))) == ("tool", [CALL])


@pytest.mark.parametrize(
    ("stream", "index"),
    [(stream, index) for _, stream, index in PLACED],
    ids=[f"{name} #{index}" for name, _, index in PLACED],
)
def test_an_output_index_written_minus_zero_is_zero(impl: ModuleType, stream: Events, index: int) -> None:
    """``-0`` is the count 0 (as everywhere a count is read): an event at
    ``-0`` for an item added at 1 names another item. The native mapper
    read the text as no count and applied the event to the item its id
    named."""
    at_one = mutated(stream, lambda s: [{**e, "output_index": 1} if "output_index" in e else e for e in s])
    texts = [json.dumps(event) for event in at_one]
    assert '"output_index": 1' in texts[index]
    texts[index] = texts[index].replace('"output_index": 1', '"output_index": -0')
    assembler = impl.StreamAssembler(RESP)
    for position, text in enumerate(texts):
        try:
            assembler.feed_event(text)
        except OutputError as error:
            assert (position, error.code, error.path) == (index, "OUTPUT_MISMATCH", "$.output_index")
            assert error.message.endswith(
                f"output_index 0 is not that of {stream[index].get('item_id') or stream[index]['item']['id']}, added at 1"
            )
            return
    raise AssertionError("the stream was taken")


@pytest.mark.parametrize("place", ["1", -1, True, 0.5])
def test_an_output_index_that_is_no_count_stays_malformed(impl: ModuleType, place: Any) -> None:
    index = ARGS_DONE - 1
    events = mutated(RESP_CALL, _set(index, "output_index", value=place))
    assert outcome(impl, RESP, events) == ("error", index, "MALFORMED_EVENT", "$.output_index")


# ------------------------------------------------------------------ 4. Gemini: a streamed call's id restated

GEMINI = "gemini"
#: a Gemini call whose arguments stream over four chunks, then another; the first call's chunks are 0-3
GEMINI_STREAMED = _events("google/src/__fixtures__/google-stream-tool-call-arguments.chunks.txt")
FUNCTION_CALL = ("candidates", 0, "content", "parts", 0, "functionCall")
ID_AT = "$.candidates[0].content.parts[0].functionCall.id"


def _gemini_ids(first: str | None, later: int, again: str) -> Events:
    """The streamed call with ``first`` as its first part's id and ``again`` in chunk ``later``."""

    def change(events: Events) -> None:
        if first is not None:
            _set(0, *FUNCTION_CALL, "id", value=first)(events)
        _set(later, *FUNCTION_CALL, "id", value=again)(events)

    return mutated(GEMINI_STREAMED, change)


def test_a_streamed_gemini_call_restating_its_id_is_accepted(impl: ModuleType) -> None:
    control = outcome(impl, GEMINI, GEMINI_STREAMED)
    assert control[0] == "tool" and control[1][0][1:] == ("getWeather", {"location": "Boston"})
    for later in (1, 2, 3):
        agreed = outcome(impl, GEMINI, _gemini_ids("fc_1", later, "fc_1"))
        assert agreed == ("tool", [("fc_1", "getWeather", {"location": "Boston"}), control[1][1]])
        assert outcome(impl, GEMINI, _gemini_ids(None, later, "")) == control


@pytest.mark.parametrize("later", [1, 2, 3], ids=["partial", "last partial", "closing part"])
@pytest.mark.parametrize("first", ["fc_1", None], ids=["given", "generated"])
def test_a_streamed_gemini_call_given_another_id_is_refused(impl: ModuleType, first: str | None, later: int) -> None:
    events = _gemini_ids(first, later, "fc_2")
    assert outcome(impl, GEMINI, events) == ("error", later, "MALFORMED_EVENT", ID_AT)


def test_a_streamed_gemini_call_given_the_generated_id_is_refused(impl: ModuleType) -> None:
    """An id that happens to spell the generated one still says what the first part did not."""
    generated = outcome(impl, GEMINI, GEMINI_STREAMED)[1][0][0]
    assert outcome(impl, GEMINI, _gemini_ids(None, 2, generated)) == ("error", 2, "MALFORMED_EVENT", ID_AT)


def test_a_streamed_gemini_call_id_of_another_type_is_malformed(impl: ModuleType) -> None:
    assert outcome(impl, GEMINI, _gemini_ids("fc_1", 2, 7)) == ("error", 2, "MALFORMED_EVENT", ID_AT)  # type: ignore[arg-type]


# ------------------------------------------------------------------ contradictions refused already (pinned)


def _set(index: int, *keys: Any, value: Any) -> Callable[[Events], None]:
    """A change setting ``events[index][keys...]`` to ``value``."""

    def change(events: Events) -> None:
        target: Any = events[index]
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value

    return change


def _insert(index: int, event: dict[str, Any] | Callable[[Events], dict[str, Any]]) -> Callable[[Events], Events]:
    """A change inserting ``event`` (or what it makes of the stream) before ``events[index]``."""

    def change(events: Events) -> Events:
        new = event(events) if callable(event) else event
        return [*events[:index], new, *events[index:]]

    return change


def _restated_call(events: Events) -> Events:
    """Gemini: the call (given an id) restated by a second chunk with other arguments."""
    events[0]["candidates"][0]["content"]["parts"][0]["functionCall"]["id"] = "fc_1"
    again = copy.deepcopy(events[0])
    again["candidates"][0]["content"]["parts"][0]["functionCall"]["args"] = {"location": "Paris"}
    return [events[0], again, *events[1:]]


CHAT_FIRST = next(i for i, e in enumerate(CHAT_CALL) if e["choices"] and e["choices"][0]["delta"].get("tool_calls"))
CHAT_TOOL = ("choices", 0, "delta", "tool_calls", 0)
A_STOP = {"type": "content_block_stop", "index": 0}

#: name -> (provider, stream, change, the event index that fails, code, path)
REFUSED: dict[str, tuple[str, Events, Callable[[Events], Any], int, str, str | None]] = {
    "responses arguments.done other arguments": (
        RESP,
        RESP_CALL,
        _set(ARGS_DONE, "arguments", value='{"location":"Paris"}'),
        ARGS_DONE,
        "OUTPUT_MISMATCH",
        None,
    ),
    "responses output_item.done other name": (
        RESP,
        RESP_CALL,
        _set(ARGS_DONE + 1, "item", "name", value="delete_account"),
        ARGS_DONE + 1,
        "OUTPUT_MISMATCH",
        None,
    ),
    "responses output_item.done other call_id": (
        RESP,
        RESP_CALL,
        _set(ARGS_DONE + 1, "item", "call_id", value="call_other"),
        ARGS_DONE + 1,
        "OUTPUT_MISMATCH",
        None,
    ),
    "responses completed other arguments": (
        RESP,
        RESP_CALL,
        _set(ARGS_DONE + 2, "response", "output", 0, "arguments", value='{"location":"Paris"}'),
        ARGS_DONE + 2,
        "OUTPUT_MISMATCH",
        None,
    ),
    "responses output_text.done other text": (
        RESP,
        RESP_MESSAGE,
        _set(12, "text", value="The final result is **571**."),
        12,
        "OUTPUT_MISMATCH",
        None,
    ),
    "responses output_item.done other role": (
        RESP,
        RESP_MESSAGE,
        _set(14, "item", "role", value="user"),
        14,
        "MALFORMED_EVENT",
        "$.item.role",
    ),
    "chat later delta other name": (
        "openai-chat",
        CHAT_CALL,
        _set(CHAT_FIRST + 1, *CHAT_TOOL, "function", value={"name": "delete_account", "arguments": "{"}),
        CHAT_FIRST + 1,
        "CALL_NAME_CHANGED",
        None,
    ),
    "chat later delta other role": (
        "openai-chat",
        CHAT_CALL,
        _set(CHAT_FIRST + 1, "choices", 0, "delta", "role", value="user"),
        CHAT_FIRST + 1,
        "MALFORMED_EVENT",
        "$.choices[0].delta.role",
    ),
    "anthropic stop of a block never started": (
        "anthropic",
        ANTHROPIC_CALL,
        _insert(5, {"type": "content_block_stop", "index": 7}),
        5,
        "UNKNOWN_ITEM",
        None,
    ),
    "anthropic stop of a block already stopped": (
        "anthropic",
        ANTHROPIC_CALL,
        _insert(6, A_STOP),
        6,
        "DELTA_AFTER_END",
        None,
    ),
    "anthropic block started twice": (
        "anthropic",
        ANTHROPIC_CALL,
        _insert(8, lambda events: copy.deepcopy(events[7])),
        8,
        "DUPLICATE_ITEM_ID",
        None,
    ),
    "anthropic delta after its block stopped": (
        "anthropic",
        ANTHROPIC_CALL,
        _insert(7, {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": " rm -rf"}}),
        7,
        "DELTA_AFTER_END",
        None,
    ),
    "anthropic message_start twice": (
        "anthropic",
        ANTHROPIC_CALL,
        _insert(1, lambda events: copy.deepcopy(events[0])),
        1,
        "DUPLICATE_START",
        None,
    ),
    "gemini call restated by id with other arguments": (
        "gemini",
        GEMINI_CALL,
        _restated_call,
        1,
        "DUPLICATE_CALL_ID",
        None,
    ),
    "gemini later chunk of another role": (
        "gemini",
        GEMINI_CALL,
        _set(1, "candidates", 0, "content", "role", value="user"),
        1,
        "MALFORMED_EVENT",
        "$.candidates[0].content.role",
    ),
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_a_contradiction_refused_already_stays_refused(impl: ModuleType, name: str) -> None:
    provider, stream, change, index, code, path = REFUSED[name]
    assert outcome(impl, provider, mutated(stream, change)) == ("error", index, code, path)


# ------------------------------------------------------------------ every mutated stream: both backends agree


def _every_case() -> dict[str, tuple[str, Events]]:
    cases: dict[str, tuple[str, Events]] = {
        f"refused: {name}": (provider, mutated(stream, change))
        for name, (provider, stream, change, *_) in REFUSED.items()
    }
    for where in PART_RESTATED:
        cases[f"text as refusal at {where}"] = (
            RESP,
            _restate(RESP_MESSAGE, where, lambda text: {"type": "refusal", "refusal": text})[0],
        )
        cases[f"refusal as text at {where}"] = (
            RESP,
            _restate(_refusal_stream(), where, lambda text: {"type": "output_text", "text": text})[0],
        )
        cases[f"text as audio at {where}"] = (
            RESP,
            _restate(RESP_MESSAGE, where, lambda text: {"type": "output_audio", "text": text})[0],
        )
    for name in ("weather", "delete_account", 7):
        cases[f"arguments.done name {name!r}"] = (RESP, _arguments_done_name(name))
    for label, stream, index in PLACED:
        for place in (0, 1, 2, "1"):
            cases[f"{label} #{index} output_index {place!r}"] = (
                RESP,
                mutated(stream, _set(index, "output_index", value=place)),
            )
    for first in ("fc_1", None):
        for later in (1, 2, 3):
            for again in ("fc_1", "fc_2", "", 7):
                cases[f"gemini id {first} then {again!r} at {later}"] = (GEMINI, _gemini_ids(first, later, again))  # type: ignore[arg-type]
    return cases


@pytest.mark.skipif(len(BACKENDS) < 2, reason="needs the native backend")
def test_both_backends_agree_on_every_contradiction() -> None:
    for name, (provider, events) in _every_case().items():
        native, pure = (outcome(BACKENDS[key], provider, events, message=True) for key in ("native", "pure"))
        assert native == pure, name
