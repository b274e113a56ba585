"""OpenAI Responses API (pure twin of ``rust/src/core/providers/openai_responses.rs``).

Streams are typed ``response.*`` events with a ``sequence_number`` (strictly
increasing where given, else ``SEQUENCE_NOT_MONOTONIC``); bodies are
``response`` objects.

Identity: the output item's ``id`` is the canonical ``item_id`` and a function
call's ``call_id`` its ``call_id``; both are kept (``output_index`` only
locates an item in the output). A message's content part ``k`` becomes the
item ``{id}`` for ``k == 0`` and ``{id}:{k}`` otherwise. A reasoning item's
summary parts form one reasoning item whose text joins the parts with a blank
line (``"\\n\\n"``); its ``encrypted_content`` is kept as the signature.

Terminal authority: ``response.completed`` (stop, tool_calls when the output
holds function calls, refusal when it holds a refusal and no call),
``response.incomplete`` (``max_output_tokens`` -> length, ``content_filter``
-> content_filter, other reasons -> unknown; raw = the reason),
``response.failed`` and ``error`` (both -> response failed; the
``response.failed`` that follows an ``error`` confirms it and adds nothing).
A failure (either, or a head event that says failed) that comes before
``response.created`` is preceded by a response start (the id and model its
``response`` names, none for an ``error``), so it reaches the caller as the
provider's failure, never as an event before the start.

Vetoes: the terminal's ``response`` object (or a whole body) can say the
response is not done whatever the event type says, and then that wins:
- ``error`` (an object) -> response failed (``PROVIDER_ERROR``), on any
  terminal event and in a body of any ``status``.
- ``status`` ``failed`` / ``error`` -> response failed; ``incomplete``, or an
  ``incomplete_details`` object beside any status -> the incomplete reason
  (``INCOMPLETE_RESPONSE``, ``CONTENT_FILTERED``, else ``UNKNOWN_FINISH_REASON``);
  ``cancelled`` -> cancelled (``RESPONSE_CANCELLED``); ``in_progress``,
  ``queued``, ``""`` or any unknown status -> unknown, raw = the status
  (``UNKNOWN_FINISH_REASON``; a body that is ``queued`` / ``in_progress`` is
  ``RESPONSE_NOT_FINISHED``, naming its id; one without status has no finish:
  ``BODY_NOT_FINISHED``). Only ``completed``
  (or, on ``response.completed``, no status) is done.
- a head event's ``response`` (``response.created`` / ``in_progress`` /
  ``queued``) is shape-checked as a terminal's is (a wrongly typed field is
  ``MALFORMED_EVENT`` at its path), and a head that already says the
  response is over decides it, whatever later events say: an ``error`` or a
  ``failed`` / ``error`` status fails it (a ``response.failed`` that follows
  confirms it, any other event is ``EVENT_AFTER_TERMINAL``); ``cancelled``,
  ``incomplete`` or an ``incomplete_details`` object finishes it as the
  terminal would. Other statuses there change nothing.
- an output item's ``status``: only ``completed`` (or none) finishes a message
  or call; ``incomplete``, ``in_progress`` or unknown in a done event, the
  terminal's output or a body leaves it unfinished, and a done response with
  an unfinished message or call is ``ITEM_NOT_ENDED`` (when the stream's done
  event and the final output disagree, the unfinished one wins).
- Azure OpenAI's filter verdicts: an entry of a response object's
  ``content_filters`` (on ``response.created`` / ``in_progress`` /
  ``queued``, the terminal's ``response`` or a body) with ``blocked: true``
  or with ``filtered: true`` in its ``content_filter_results`` (read as
  Chat's are), the prompt's or the completion's, makes the finish
  ``content_filter`` (``CONTENT_FILTERED``, the raw status kept) whatever the
  status says, an unfinished item too; ``blocked: false``, ``filtered:
  false``, null and no list change nothing, and a list or results of another
  shape are ``MALFORMED_EVENT`` at the field's path. An ``error`` in the
  results says the filter did not run: unless a verdict withheld the
  response, it is refused with ``PROVIDER_ERROR`` (retryable) at the error's
  path, at the head event that says so or at the finish, as Chat's is.
- any event after the terminal (other than ``response.failed`` after
  ``error``) -> ``EVENT_AFTER_TERMINAL``.
- an SSE event whose ``event:`` name (OpenAI names each event by its type)
  is not its data's ``type`` (``event: response.failed`` or ``event: error``
  framing a ``response.completed``): two events in one, neither taken ->
  ``MALFORMED_EVENT`` at ``$.type``; no name, or ``message``, is read by the
  data alone.

Output check: every delta updates a running length and hash for its item
(constant work per delta byte, nothing re-scanned). The ``.done`` events, the
finished output items and the output of the terminal ``response`` are compared
against them: texts and function-call arguments per item, plus each call's
name and ``call_id``; an item in the final output the stream never carried,
or a streamed message or call missing from it, listed twice or in another
order than the stream's, is ``OUTPUT_MISMATCH``; so is a message content
part restated (``response.content_part.done``, a done item, the final
output) as another type than it streamed as, at its ``type`` (a refusal
would become the answer, or the answer a refusal), a
``response.function_call_arguments.done`` whose ``name`` is not the call's,
at ``$.name``, and an event whose ``output_index`` is not the one its item
(named by ``item_id``, or the done item's ``id``) was added at, at
``$.output_index`` (a client reading the index would apply the event to
another item; an event or an added item without one is taken by its id),
except
a reasoning item the stream never announced (OpenRouter sends some only in
``response.completed``): it is taken from the output, placed among the streamed
items at its position in the output, and counted in ``unknown_events`` as
``completed_only:reasoning``. A done event for an item that streamed no delta at all supplies the whole value
(servers that send arguments only there).

Calls the application runs: ``function_call`` (arguments: JSON text),
``custom_tool_call`` (``custom``: its ``input`` is free-form text, kept
verbatim and never parsed; streamed by ``response.custom_tool_call_input.delta``
/ ``.done``), and the client-executed tools ``local_shell_call``,
``computer_call``, ``shell_call`` (their ``action`` object) and
``apply_patch_call`` (its ``operation`` object). A ``shell_call`` with an
``environment`` other than ``{"type": "local"}`` runs in the provider's
container (its ``shell_call_output`` follows in the same response): it is
counted like a builtin tool, never made a call. Each becomes a tool call of
its own ``call_kind`` (``function``, ``custom``, ``local_shell``, ``computer``,
``shell``, ``apply_patch``) with its ``call_id``; a client tool's call is named
by its kind and its arguments are the JSON text of the object, written
deterministically (keys sorted, compact: ``jsontext.dumps``) when the item is
done (the object an ``output_item.added`` carries is a placeholder and is not
read). An apply_patch diff streamed by ``response.apply_patch_call_operation_diff.delta``
/ ``.done`` is checked against the final ``operation.diff`` like any other
streamed value; ``response.shell_call_command.*`` events carry no item id and
are counted (the ``shell_call`` item's ``action`` carries the commands). A
client call whose done item has no ``action`` / ``operation`` object is
``MALFORMED_EVENT``. Every call kind is subject to the same identity, output
and status checks as a function call.

Builtin tools the provider runs itself (``web_search_call``,
``file_search_call``, ``code_interpreter_call``,
``mcp_call``, ``mcp_list_tools``, ``shell_call_output``, a ``tool_search_call``
whose ``execution`` is not ``client`` and its ``tool_search_output``, a hosted
``shell_call``, ``compaction``) are not calls: the provider has done them
and the host has nothing to do, so their items are counted in
``unknown_events`` as ``output_item:<type>`` and their own events by type,
never turned into calls. A message content part of a type other than
``output_text`` and ``refusal`` (``output_audio``, ...) is part of the answer
the mapper cannot represent: ``UNSUPPORTED_ITEM`` at its path, never a cut
answer; so is an ``image_generation_call``'s image (the item is refused). Any other output item (a type the mapper does not
know, ``mcp_approval_request``, a ``tool_search_call`` with ``execution:
"client"``, a ``*_call`` of no supported call kind) may be a call the host
must handle or part of the answer: it is ``UNSUPPORTED_ITEM`` at the item's
path, never counted while the rest is decided. Annotations are counted.
"""

from __future__ import annotations

from typing import Any

from ...errors import OutputError, new_error
from ...types import (
    CanonicalEvent,
    ItemEnded,
    ItemStarted,
    ReasoningDelta,
    RefusalDelta,
    ResponseFailed,
    ResponseFinished,
    ResponseStarted,
    TextDelta,
    ToolArgumentsDelta,
    ToolCallStarted,
)
from ._openai import Annotation, failure, first, unscreened
from ._responses_shapes import (
    CALL_KINDS,
    CLIENT_FIELDS,
    PART_KINDS,
    Acc,
    Final,
    Out,
    final_arguments,
    out_item,
    part_id,
    read_part,
    ref_event,
    value_field,
)
from ._shape import located, shape
from ._unknown import count_unknown

__all__ = ["OpenAIResponsesMapper"]

_S = shape("openai-responses")

#: the name of an event in its shape errors before its type is known
_EVENT = "response event"

_INCOMPLETE = {"max_output_tokens": "length", "content_filter": "content_filter"}

_FAILED = ("failed", "error")

#: the failure a ``failed`` / ``error`` status stands for (no error object to name it)
_STATUS_FAILED = ResponseFailed(code="failed")


def _same_part_kind(acc: Acc, kind: str, what: str, at: str) -> None:
    """A content part restated (at ``at``) as another type than it streamed as
    (a refusal as text, or the reverse) changes the answer: ``OUTPUT_MISMATCH``
    at its ``type``."""
    streamed = "refusal" if acc.kind == "refusal" else "output_text"
    if kind != streamed:
        raise located(
            "OUTPUT_MISMATCH", f'{what}: {acc.canon} streamed as part type "{streamed}", not "{kind}"', f"{at}.type"
        )


def _unsupported_part(kind: str, item_id: str, at: str) -> OutputError:
    """A message content part of a type the mapper cannot represent: the
    answer would be cut, so it is ``UNSUPPORTED_ITEM`` at ``at``."""
    return located(
        "UNSUPPORTED_ITEM",
        f'content part of type "{kind}" in message {item_id} is not one the package can '
        "represent; the answer would be cut, so nothing in the response is decided",
        at,
    )


class _Item:
    __slots__ = ("type", "place", "parts", "acc", "diff", "call_id", "name", "summaries")

    def __init__(self, type_: str, place: int | None) -> None:
        self.type = type_
        self.place = place  # the output_index it was added at (None: not given)
        self.parts: dict[int, Acc] = {}  # message: content_index -> part
        self.acc: Acc | None = None  # a call's arguments / reasoning text
        self.diff: Acc | None = None  # apply_patch_call: the streamed operation diff
        self.call_id = ""
        self.name = ""
        self.summaries = 0  # reasoning summary parts seen


class OpenAIResponsesMapper:
    """Responses ``response.*`` events / ``response`` bodies -> canonical events."""

    def __init__(self, choice: int | None = None) -> None:
        del choice  # the Responses API has no choices
        self.unknown_events: dict[str, int] = {}
        self._seq: int | None = None
        self._items: dict[str, _Item] = {}
        self._order: list[str] = []  # message / function_call ids, in stream order
        self.placements: list[tuple[str, int]] = []  # completed-only reasoning: (item id, position)
        self._calls = False  # whether the output holds a call
        self._refusals = False  # whether it holds a refusal
        self._terminal: str | None = None  # "finished" | "failed" | "error"
        self._started = False  # a response start was given (response.created, or before a failure)
        self._unfinished: str | None = None  # a message / call some output said was not completed
        self._blocked: Annotation | None = None  # what the head events' content_filters said
        self._place: int | None = None  # the output_index of the event being mapped (None: not a count)

    def _count(self, key: str) -> None:
        count_unknown(self.unknown_events, key)

    # ------------------------------------------------------------ stream

    def map_event(self, event: str | None, payload: Any) -> list[CanonicalEvent]:
        """One ``response.*`` (or ``error``) event, decoded."""
        data = _S.obj(payload, _EVENT, "$")
        kind = _S.req_str(data, "type", _EVENT, "$")
        seq = _S.opt_count(data, "sequence_number", _EVENT, "$")
        if event is not None and event != "message" and event != kind:
            # the SSE event's name is the type (``event: response.failed``): two types are two events
            raise located("MALFORMED_EVENT", f"responses SSE event {event} carries data of type {kind}", "$.type")
        if self._terminal is not None:
            if kind == "response.failed" and self._terminal == "error":
                self._terminal = "failed"
                return []
            raise new_error("EVENT_AFTER_TERMINAL", f"{kind} after the response ended")
        if seq is not None:
            if self._seq is not None and seq <= self._seq:
                raise new_error("SEQUENCE_NOT_MONOTONIC", f"sequence_number {seq} after {self._seq} ({kind})")
            self._seq = seq
        handler = _HANDLERS.get(kind)
        if handler is None:
            self._count(kind)
            return []
        place = data.get("output_index")  # a handler refuses one that is not a count
        self._place = place if type(place) is int else None
        out: list[CanonicalEvent] = []
        handler(self, data, kind, out)
        return out

    def end(self) -> list[CanonicalEvent]:
        """EOF adds nothing: a Responses stream must carry its own terminal."""
        return []

    def _created(self, d: dict[str, Any], what: str, out: list[CanonicalEvent]) -> None:
        head = self._head(d, what)
        self._started = True
        out.append(ResponseStarted(response_id=head.id, model=head.model))
        self._head_verdict(head, out)

    def _in_progress(self, d: dict[str, Any], what: str, out: list[CanonicalEvent]) -> None:
        self._head_verdict(self._head(d, what), out)

    def _head(self, d: dict[str, Any], what: str) -> Final:
        """A head event's ``response``, shape-checked as a terminal's; what its ``content_filters``
        say is kept for the finish (a filter that did not run, with no verdict that withheld the
        response, is refused now)."""
        head = Final(_S.obj(d.get("response"), what, "$.response"), what, "$.response")
        self._blocked = first(self._blocked, head.blocked)
        if self._blocked is not None and not self._blocked[1]:
            raise unscreened(self._blocked[0])
        return head

    def _head_verdict(self, head: Final, out: list[CanonicalEvent]) -> None:
        """A head whose ``response`` already says it is over decides the response now, whatever
        later events say: an ``error`` or a ``failed`` / ``error`` status fails it (a
        ``response.failed`` that follows confirms it), a ``cancelled`` / ``incomplete`` status or an
        ``incomplete_details`` object finishes it as the terminal's would."""
        if head.error is not None or head.status in _FAILED:
            self._terminal = "error"
            self._start_failed(head.id, head.model, out)
            out.append(head.error or _STATUS_FAILED)
        elif head.incomplete or head.status in ("cancelled", "incomplete"):
            self._finish(head, False, out)

    def _item_added(self, d: dict[str, Any], what: str, out: list[CanonicalEvent]) -> None:
        _S.opt_count(d, "output_index", what, "$")
        item = out_item(d.get("item"), what, "$.item")
        if isinstance(item, str):
            self._count(f"output_item:{item}")
            return
        if item.id in self._items:
            raise new_error("DUPLICATE_ITEM_ID", f"output item {item.id} was added twice")
        entry = self._items[item.id] = _Item(item.type, self._place)
        if item.type == "message":
            self._order.append(item.id)
        elif item.type in CALL_KINDS:
            assert item.call_id is not None
            assert item.name is not None
            self._order.append(item.id)
            entry.call_id, entry.name = item.call_id, item.name
            entry.acc = Acc(item.id, "arguments")
            self._calls = True
            out.append(
                ToolCallStarted(
                    item_id=item.id,
                    call_id=item.call_id,
                    name=item.name,
                    call_kind=CALL_KINDS[item.type],  # type: ignore[arg-type]
                )
            )
            if item.type == "apply_patch_call":
                entry.diff = Acc(item.id, "diff")
            # a client tool's object is complete only when the item is done
            if item.arguments and item.type not in CLIENT_FIELDS:
                self._delta(entry.acc, item.arguments, out)
        else:
            entry.acc = Acc(item.id, "reasoning")
            out.append(ItemStarted(item_id=item.id, kind="reasoning"))

    def _item(self, item_id: str, what: str, kind: str) -> _Item:
        entry = self._items.get(item_id)
        if entry is None:
            raise new_error("DELTA_BEFORE_START", f"{what} for item {item_id}, which was never added")
        if entry.type != kind:
            raise new_error("UNKNOWN_ITEM", f"{what} for item {item_id}, which is a {entry.type}")
        self._same_place(entry, item_id, what)
        return entry

    def _same_place(self, entry: _Item, item_id: str, what: str) -> None:
        """An event whose ``output_index`` is not the one its item was added at names two items
        (a client that reads the index would apply it to the other): ``OUTPUT_MISMATCH`` there."""
        if self._place is not None and entry.place is not None and self._place != entry.place:
            raise located(
                "OUTPUT_MISMATCH",
                f"{what}: output_index {self._place} is not that of {item_id}, added at {entry.place}",
                "$.output_index",
            )

    def _part(self, item_id: str, index: int, what: str) -> Acc:
        entry = self._item(item_id, what, "message")
        part = entry.parts.get(index)
        if part is None:
            raise new_error("DELTA_BEFORE_START", f"{what} for content part {index} of {item_id}, never added")
        return part

    def _part_event(self, d: dict[str, Any], what: str) -> tuple[str, int, str, str | None]:
        item_id = _S.req_str(d, "item_id", what, "$")
        index = _S.opt_count(d, "content_index", what, "$") or 0
        _S.opt_count(d, "output_index", what, "$")
        kind, text = read_part(d.get("part"), what, "$.part")
        return item_id, index, kind, text

    def _part_added(self, d: dict[str, Any], what: str, out: list[CanonicalEvent]) -> None:
        item_id, index, kind, text = self._part_event(d, what)
        entry = self._items.get(item_id)
        if entry is not None and entry.type == "reasoning" and kind == "reasoning_text":
            return  # its deltas arrive as response.reasoning_text.delta
        entry = self._item(item_id, what, "message")
        canon_kind = PART_KINDS.get(kind)
        if canon_kind is None:
            raise _unsupported_part(kind, item_id, "$.part")
        if index in entry.parts:
            raise new_error("DUPLICATE_ITEM_ID", f"content part {index} of {item_id} was added twice")
        acc = entry.parts[index] = Acc(part_id(item_id, index), canon_kind)
        out.append(ItemStarted(item_id=acc.canon, kind=canon_kind))  # type: ignore[arg-type]
        if canon_kind == "refusal":
            self._refusals = True
        if text:
            self._delta(acc, text, out)

    def _part_done(self, d: dict[str, Any], what: str, out: list[CanonicalEvent]) -> None:
        item_id, index, kind, text = self._part_event(d, what)
        entry = self._items.get(item_id)
        if entry is not None and entry.type == "reasoning" and kind == "reasoning_text":
            return
        entry = self._item(item_id, what, "message")
        acc = entry.parts.get(index)
        if acc is None:
            if kind in PART_KINDS:
                raise new_error("DELTA_BEFORE_START", f"{what} for content part {index} of {item_id}, never added")
            raise _unsupported_part(kind, item_id, "$.part")
        _same_part_kind(acc, kind, what, "$.part")
        if text is None:
            raise located("MALFORMED_EVENT", f"{what}: a {kind} part needs its text", f"$.part.{value_field(kind)}")
        self._check(acc, text, what, out)
        if not acc.ended:
            acc.ended = True
            out.append(ItemEnded(item_id=acc.canon))

    def _delta(self, acc: Acc, delta: str, out: list[CanonicalEvent]) -> None:
        if acc.ended:
            raise new_error("DELTA_AFTER_END", f"a delta for {acc.canon} after it ended")
        acc.add(delta)
        if acc.kind == "text":
            out.append(TextDelta(item_id=acc.canon, delta=delta))
        elif acc.kind == "refusal":
            out.append(RefusalDelta(item_id=acc.canon, delta=delta))
        elif acc.kind == "arguments":
            out.append(ToolArgumentsDelta(item_id=acc.canon, delta=delta))
        else:
            out.append(ReasoningDelta(item_id=acc.canon, delta=delta))

    def _check(self, acc: Acc, text: str, what: str, out: list[CanonicalEvent]) -> None:
        """Compare a final value with what streamed (or take it if nothing did)."""
        if acc.length == 0 and text and not acc.ended:
            self._delta(acc, text, out)
        elif not acc.same(text):
            raise new_error(
                "OUTPUT_MISMATCH", f"{what}: the streamed {acc.kind} of {acc.canon} differs from the final value"
            )

    def _content_delta(self, d: dict[str, Any], what: str, out: list[CanonicalEvent], kind: str) -> None:
        item_id, index, delta = ref_event(d, what, "delta")
        part = self._part(item_id, index, what)
        if part.kind != kind:
            raise new_error("UNKNOWN_ITEM", f"{what} for {part.canon}, which is a {part.kind} part")
        self._delta(part, delta, out)

    def _content_done(self, d: dict[str, Any], what: str, out: list[CanonicalEvent], field: str) -> None:
        item_id, index, text = ref_event(d, what, field)
        self._check(self._part(item_id, index, what), text, what, out)

    def _text_delta(self, d: dict[str, Any], what: str, out: list[CanonicalEvent]) -> None:
        self._content_delta(d, what, out, "text")

    def _text_done(self, d: dict[str, Any], what: str, out: list[CanonicalEvent]) -> None:
        self._content_done(d, what, out, "text")

    def _refusal_delta(self, d: dict[str, Any], what: str, out: list[CanonicalEvent]) -> None:
        self._content_delta(d, what, out, "refusal")

    def _refusal_done(self, d: dict[str, Any], what: str, out: list[CanonicalEvent]) -> None:
        self._content_done(d, what, out, "refusal")

    def _args_delta(self, d: dict[str, Any], what: str, out: list[CanonicalEvent]) -> None:
        item_id, _, delta = ref_event(d, what, "delta")
        acc = self._item(item_id, what, "function_call").acc
        assert acc is not None
        self._delta(acc, delta, out)

    def _args_done(self, d: dict[str, Any], what: str, out: list[CanonicalEvent]) -> None:
        item_id, _, arguments = ref_event(d, what, "arguments")
        name = _S.opt_str(d, "name", what, "$")
        entry = self._item(item_id, what, "function_call")
        if name is not None and name != entry.name:  # the call would run as another tool
            raise located(
                "OUTPUT_MISMATCH", f'{what}: call {item_id} was added as "{entry.name}", not "{name}"', "$.name"
            )
        assert entry.acc is not None
        self._check(entry.acc, arguments, what, out)

    def _input_delta(self, d: dict[str, Any], what: str, out: list[CanonicalEvent]) -> None:
        item_id, _, delta = ref_event(d, what, "delta")
        acc = self._item(item_id, what, "custom_tool_call").acc
        assert acc is not None
        self._delta(acc, delta, out)

    def _input_done(self, d: dict[str, Any], what: str, out: list[CanonicalEvent]) -> None:
        item_id, _, text = ref_event(d, what, "input")
        acc = self._item(item_id, what, "custom_tool_call").acc
        assert acc is not None
        self._check(acc, text, what, out)

    def _diff_delta(self, d: dict[str, Any], what: str, out: list[CanonicalEvent]) -> None:
        item_id, _, delta = ref_event(d, what, "delta")
        entry = self._item(item_id, what, "apply_patch_call")
        assert entry.diff is not None
        assert entry.acc is not None
        if entry.acc.ended:
            raise new_error("DELTA_AFTER_END", f"a delta for {item_id} after it ended")
        entry.diff.add(delta)

    def _diff_done(self, d: dict[str, Any], what: str, out: list[CanonicalEvent]) -> None:
        item_id, _, diff = ref_event(d, what, "diff")
        entry = self._item(item_id, what, "apply_patch_call")
        assert entry.diff is not None
        self._same_diff(entry.diff, diff, what)

    @staticmethod
    def _same_diff(acc: Acc, diff: str | None, what: str) -> None:
        """A streamed apply_patch diff against the operation's (nothing streamed: nothing to check)."""
        if acc.length and not acc.same(diff or ""):
            raise new_error("OUTPUT_MISMATCH", f"{what}: the streamed diff of {acc.canon} differs from the final value")

    def _summary_part(self, d: dict[str, Any], what: str, out: list[CanonicalEvent]) -> None:
        item_id, _, _ = ref_event(d, what)
        entry = self._item(item_id, what, "reasoning")
        assert entry.acc is not None
        if entry.summaries:
            self._delta(entry.acc, "\n\n", out)
        entry.summaries += 1

    def _reasoning_delta(self, d: dict[str, Any], what: str, out: list[CanonicalEvent]) -> None:
        item_id, _, delta = ref_event(d, what, "delta")
        acc = self._item(item_id, what, "reasoning").acc
        assert acc is not None
        self._delta(acc, delta, out)

    def _reasoning_done(self, d: dict[str, Any], what: str, out: list[CanonicalEvent]) -> None:
        self._item(ref_event(d, what)[0], what, "reasoning")

    def _item_done(self, d: dict[str, Any], what: str, out: list[CanonicalEvent]) -> None:
        _S.opt_count(d, "output_index", what, "$")
        item = out_item(d.get("item"), what, "$.item")
        if isinstance(item, str):
            return
        entry = self._items.get(item.id)
        if entry is None or entry.type != item.type:
            raise new_error("OUTPUT_MISMATCH", f"{what}: {item.type} {item.id} was never added to the stream")
        self._same_place(entry, item.id, what)
        self._compare(item, entry, what, out, end=True, at="$.item")
        self._note_status(item)

    def _note_status(self, item: Out) -> None:
        if not item.complete and item.type != "reasoning" and self._unfinished is None:
            self._unfinished = item.id

    def _compare(self, item: Out, entry: _Item, what: str, out: list[CanonicalEvent], *, end: bool, at: str) -> None:
        if entry.type in CALL_KINDS:
            acc = entry.acc
            assert acc is not None
            if item.call_id != entry.call_id or item.name != entry.name:
                raise new_error("OUTPUT_MISMATCH", f"{what}: the call_id or name of {item.id} changed")
            self._check(acc, final_arguments(item, what, at), what, out)
            if entry.diff is not None:
                self._same_diff(entry.diff, item.diff, what)
            if end and item.complete and not acc.ended:
                acc.ended = True
                out.append(ItemEnded(item_id=item.id))
        elif entry.type == "message":
            seen = 0
            for index, (kind, text) in enumerate(item.parts):
                if kind not in PART_KINDS:  # a part the stream never carried: the answer would be cut
                    raise _unsupported_part(kind, item.id, f"{at}.content[{index}]")
                acc = entry.parts.get(index)
                if acc is None:
                    raise new_error("OUTPUT_MISMATCH", f"{what}: content part {index} of {item.id} never streamed")
                seen += 1
                _same_part_kind(acc, kind, what, f"{at}.content[{index}]")
                self._check(acc, text or "", what, out)
                if end and item.complete and not acc.ended:
                    acc.ended = True
                    out.append(ItemEnded(item_id=acc.canon))
            if seen != len(entry.parts):
                raise new_error("OUTPUT_MISMATCH", f"{what}: a streamed content part of {item.id} is missing")
        else:
            acc = entry.acc
            assert acc is not None
            if acc.length == 0 and not acc.ended and item.reasoning:
                self._delta(acc, item.reasoning, out)
            if end and not acc.ended:
                if item.signature:
                    out.append(ReasoningDelta(item_id=item.id, signature=item.signature))
                acc.ended = True
                out.append(ItemEnded(item_id=item.id))

    def _terminal_event(self, d: dict[str, Any], what: str, out: list[CanonicalEvent]) -> None:
        final = Final(_S.obj(d.get("response"), what, "$.response"), what, "$.response")
        if final.error is not None or what == "response.failed" or final.status in _FAILED:
            self._terminal = "failed"
            self._start_failed(final.id, final.model, out)
            out.append(final.error or _STATUS_FAILED)
            return
        seen: set[str] = set()
        position = 0  # how many canonical items the output items before this one make
        for index, item in enumerate(final.output):
            if isinstance(item, str):
                continue
            at = f"$.response.output[{index}]"
            entry = self._items.get(item.id)
            if entry is None and item.type == "reasoning":  # never streamed (OpenRouter): taken from here
                self._count("completed_only:reasoning")
                _reasoning_item(item, out)
                self.placements.append((item.id, position))
                position += 1
                continue
            if entry is None or entry.type != item.type:
                raise new_error("OUTPUT_MISMATCH", f"{what}: the output has {item.type} {item.id}, never streamed")
            position += len(entry.parts) if entry.type == "message" else 1
            seen.add(item.id)
            self._compare(item, entry, what, out, end=False, at=at)
            self._note_status(item)
        for item_id in self._order:
            if item_id not in seen:
                raise new_error("OUTPUT_MISMATCH", f"{what}: streamed item {item_id} is not in the output")
        streamed = set(self._order)
        listed = [item.id for item in final.output if not isinstance(item, str) and item.id in streamed]
        if listed != self._order:  # another order (the calls would run in it) or an item listed twice
            raise new_error("OUTPUT_MISMATCH", f"{what}: the output does not list the streamed items in stream order")
        self._finish(final, what == "response.incomplete", out)

    def _finish(self, final: Final, incomplete: bool, out: list[CanonicalEvent]) -> None:
        # a filter that did not run, unless one withheld the response: refused, whatever else it says
        blocked = first(self._blocked, final.blocked)
        if blocked is not None and not blocked[1]:
            raise unscreened(blocked[0])
        if final.usage is not None:
            out.append(final.usage)
        self._terminal = "finished"
        status = final.status
        if incomplete or status == "incomplete" or final.incomplete:
            raw = final.reason or "incomplete"
            reason = _INCOMPLETE.get(raw, "unknown")
        elif status == "cancelled":
            raw, reason = "cancelled", "cancelled"
        elif status is None or status == "completed":
            raw = "completed"
            reason = "tool_calls" if self._calls else "refusal" if self._refusals else "stop"
            if self._unfinished is not None and blocked is None:
                raise new_error(
                    "ITEM_NOT_ENDED", f"the response completed, but output item {self._unfinished} was not completed"
                )
        else:  # in_progress, queued or a status this package does not know: never "done"
            raw, reason = status, "unknown"
        if blocked is not None:  # a filter that blocked the prompt or the output: whatever the status says
            reason = "content_filter"
        out.append(ResponseFinished(finish_reason=reason, raw_finish_reason=raw))  # type: ignore[arg-type]

    def _error(self, d: dict[str, Any], what: str, out: list[CanonicalEvent]) -> None:
        err = d.get("error")
        failed = failure(_S, d, what, "$") if err is None else failure(_S, err, what, "$.error")
        self._terminal = "error"
        self._start_failed(None, None, out)  # the provider failed before it started the response
        out.append(failed)

    def _start_failed(self, response_id: str | None, model: str | None, out: list[CanonicalEvent]) -> None:
        """A failure that came before ``response.created`` is the provider's: a
        response start (with what the failure names of it) goes first, so it
        reaches the caller as the failure, not as an event before the start."""
        if not self._started:
            self._started = True
            out.append(ResponseStarted(response_id=response_id, model=model))

    # ------------------------------------------------------------ whole body

    def map_body(self, body: Any) -> list[CanonicalEvent]:
        """A ``response`` object (or an ``{"error": ...}`` body)."""
        what = "response"
        final = Final(_S.obj(body, what, "$"), what, "$")
        out: list[CanonicalEvent] = [ResponseStarted(response_id=final.id, model=final.model)]
        if final.error is not None:  # an error vetoes whatever the status says
            out.append(final.error)
            return out
        if final.status in _FAILED:
            out.append(_STATUS_FAILED)
            return out
        for index, item in enumerate(final.output):
            if isinstance(item, str):
                self._count(f"output_item:{item}")
            else:
                self._body_item(item, out, what, f"$.output[{index}]")
        if final.status in ("queued", "in_progress"):  # background mode: the caller polls it by its id
            raise new_error(
                "RESPONSE_NOT_FINISHED",
                f'response "{final.id or ""}" is {final.status}, not finished: poll it by its id until it is',
            )
        if final.status is None:
            return out
        self._finish(final, False, out)
        return out

    def _body_item(self, item: Out, out: list[CanonicalEvent], what: str, at: str) -> None:
        if item.type in CALL_KINDS:
            assert item.call_id is not None
            assert item.name is not None
            arguments = final_arguments(item, what, at)
            self._calls = True
            out.append(
                ToolCallStarted(
                    item_id=item.id,
                    call_id=item.call_id,
                    name=item.name,
                    call_kind=CALL_KINDS[item.type],  # type: ignore[arg-type]
                )
            )
            if arguments:
                out.append(ToolArgumentsDelta(item_id=item.id, delta=arguments))
            if item.complete:
                out.append(ItemEnded(item_id=item.id))
        elif item.type == "message":
            for index, (kind, text) in enumerate(item.parts):
                canon_kind = PART_KINDS.get(kind)
                if canon_kind is None:
                    raise _unsupported_part(kind, item.id, f"{at}.content[{index}]")
                canon = part_id(item.id, index)
                out.append(ItemStarted(item_id=canon, kind=canon_kind))  # type: ignore[arg-type]
                if canon_kind == "refusal":
                    self._refusals = True
                    if text:
                        out.append(RefusalDelta(item_id=canon, delta=text))
                elif text:
                    out.append(TextDelta(item_id=canon, delta=text))
                if item.complete:
                    out.append(ItemEnded(item_id=canon))
        else:
            _reasoning_item(item, out)


def _reasoning_item(item: Out, out: list[CanonicalEvent]) -> None:
    """A whole reasoning item: a body's, or one only the final output of a stream carries."""
    out.append(ItemStarted(item_id=item.id, kind="reasoning"))
    if item.reasoning:
        out.append(ReasoningDelta(item_id=item.id, delta=item.reasoning))
    if item.signature:
        out.append(ReasoningDelta(item_id=item.id, signature=item.signature))
    out.append(ItemEnded(item_id=item.id))


_HANDLERS = {
    "response.created": OpenAIResponsesMapper._created,
    "response.in_progress": OpenAIResponsesMapper._in_progress,
    "response.queued": OpenAIResponsesMapper._in_progress,
    "response.output_item.added": OpenAIResponsesMapper._item_added,
    "response.output_item.done": OpenAIResponsesMapper._item_done,
    "response.content_part.added": OpenAIResponsesMapper._part_added,
    "response.content_part.done": OpenAIResponsesMapper._part_done,
    "response.output_text.delta": OpenAIResponsesMapper._text_delta,
    "response.output_text.done": OpenAIResponsesMapper._text_done,
    "response.refusal.delta": OpenAIResponsesMapper._refusal_delta,
    "response.refusal.done": OpenAIResponsesMapper._refusal_done,
    "response.function_call_arguments.delta": OpenAIResponsesMapper._args_delta,
    "response.function_call_arguments.done": OpenAIResponsesMapper._args_done,
    "response.custom_tool_call_input.delta": OpenAIResponsesMapper._input_delta,
    "response.custom_tool_call_input.done": OpenAIResponsesMapper._input_done,
    "response.apply_patch_call_operation_diff.delta": OpenAIResponsesMapper._diff_delta,
    "response.apply_patch_call_operation_diff.done": OpenAIResponsesMapper._diff_done,
    "response.reasoning_summary_part.added": OpenAIResponsesMapper._summary_part,
    "response.reasoning_summary_part.done": OpenAIResponsesMapper._reasoning_done,
    "response.reasoning_summary_text.delta": OpenAIResponsesMapper._reasoning_delta,
    "response.reasoning_summary_text.done": OpenAIResponsesMapper._reasoning_done,
    "response.reasoning_text.delta": OpenAIResponsesMapper._reasoning_delta,
    "response.reasoning_text.done": OpenAIResponsesMapper._reasoning_done,
    "response.completed": OpenAIResponsesMapper._terminal_event,
    "response.incomplete": OpenAIResponsesMapper._terminal_event,
    "response.failed": OpenAIResponsesMapper._terminal_event,
    "error": OpenAIResponsesMapper._error,
}
