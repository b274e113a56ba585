"""OpenAI Chat Completions (pure twin of ``rust/src/core/providers/openai_chat.rs``).

Also the wire format of OpenAI-compatible servers (vLLM, llama.cpp, Ollama,
Groq, DeepSeek, Mistral, xAI, Cerebras). Streams are ``chat.completion.chunk``
objects ended by ``data: [DONE]``; bodies are ``chat.completion`` objects.

Terminal authority: the chunk carrying the selected choice's ``finish_reason``
gives ``response_finished``. Usage chunks may follow it (the assembler merges
usage after the terminal); content for that choice may not. ``[DONE]`` only
ends the framing: alone it finishes nothing, so a stream cut before its
finish reason is reported by the assembler as having no terminal event, and
nothing may follow it.

Chat has no item ids, so items get stable generated ones: ``choice{c}.content``,
``choice{c}.refusal``, ``choice{c}.reasoning`` and ``choice{c}.tool_calls[k]``
(``k`` = order in which calls started). A call without an ``id`` (some
compatible servers) gets ``{response_id}.call_{k}`` and ``call_id_generated``.
A delta at a tool-call ``index`` already in use that carries a different
``id`` starts a new call (servers that send every call at index 0); it is
never glued to the previous one. A missing ``index`` means the position in
that delta's ``tool_calls`` list. A non-null ``audio`` in a delta or message
is an answer the mapper cannot represent: ``UNSUPPORTED_ITEM`` at its path,
never a decision made of the text or calls beside it; metadata members
(``annotations``, ...) are ignored.

Finish reasons: ``stop`` -> stop (refusal when the message is a refusal),
``tool_calls`` / ``function_call`` -> tool_calls, ``length`` -> length,
``content_filter`` -> content_filter, anything else -> unknown; the raw value
is kept. Items are ended only by a stop / tool_calls finish: a length,
content-filter or unknown finish leaves them open (so an unfinished call can
never be mistaken for a complete one).

Vetoes (a field that says "not finished, failed or ambiguous" wins over one
that says "done"):
- ``error`` on a chunk or a body, beside choices and a ``finish_reason`` or
  alone -> response failed (``PROVIDER_ERROR``); after the finish_reason, an
  event after the terminal (``EVENT_AFTER_TERMINAL``). An ``error`` that is a
  string (Hugging Face TGI) is the failure's message, code ``error``, and
  the chunk's ``error_type`` beside it its type (``overloaded`` is retryable).
- a chunk with none of ``choices``, ``usage``, ``error`` and
  ``prompt_filter_results`` (another server's error object:
  ``{"object": "error", ...}``, ``{"detail": ...}``) -> ``MALFORMED_EVENT`` at
  ``$.choices``, as a body without choices is.
- ``finish_reason`` ``length`` / ``content_filter`` -> ``INCOMPLETE_RESPONSE``
  / ``CONTENT_FILTERED``; any other value (``""``, ``eos``, ``error``, other
  case) leaves the items open (``ITEM_NOT_ENDED``); none: no terminal
  (``NO_TERMINAL_EVENT``; in a body ``MALFORMED_EVENT``).
- content or a second ``finish_reason`` after the finish_reason ->
  ``EVENT_AFTER_TERMINAL``.
- two entries for one choice index in a chunk, or for the selected choice in
  a body -> ``MULTIPLE_CHOICES``; a finish on another choice finishes nothing.
- a delta's or message's ``role`` other than ``assistant`` (``user``,
  ``tool``, ``system``, a non-string; null and absent are the model's, as
  in every chunk after the first) -> ``MALFORMED_EVENT`` at its path: another
  party's message is never the model's answer.
- a chunk's choice carrying a ``message`` (not null), or a body's choice a
  ``delta`` -> ``MALFORMED_EVENT`` at its path: the other mode's member is
  never read, so what it carries (a body sent as one event: its text, its
  calls) would be lost.
- Azure OpenAI's filter annotations: ``filtered: true`` in the selected
  choice's ``content_filter_results`` (any category; a list-form category
  such as ``custom_blocklists``, or a category's ``details``, counts each
  entry) or in a top-level ``prompt_filter_results[].content_filter_results``
  (the choice's ``content_filter_result`` and the top-level
  ``prompt_annotations``, as Azure has also named them, are read alike)
  -> the finish is ``content_filter`` whatever ``finish_reason`` says
  (``CONTENT_FILTERED``, the raw reason kept); after the finish_reason,
  ``CONTENT_FILTERED`` at once. ``filtered: false`` and no results at all
  change nothing; results of another shape are ``MALFORMED_EVENT`` at the
  field's path. An ``error`` in the results (their own ``error`` member, or
  one on a category or entry) says the filter did not run: the output (or
  the prompt) was not screened, so unless a filter already withheld it the
  response is refused at once with ``PROVIDER_ERROR`` (retryable) at the
  error's path.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from ...errors import OutputError, new_error
from ...limits import Limits
from ...providers import DONE
from ...types import (
    CanonicalEvent,
    Item,
    ItemEnded,
    ItemStarted,
    NormalizedResponse,
    ReasoningDelta,
    RefusalDelta,
    ResponseFailed,
    ResponseFinished,
    ResponseStarted,
    TextDelta,
    ToolArgumentsDelta,
    ToolCallStarted,
    UsageReported,
)
from ..assemble import Assembler
from ..objects import new_response, new_text_item, new_tool_call_item, new_usage
from ._openai import RETRYABLE_ERRORS, failure, unscreened
from ._openai import Annotation as _Annotation
from ._openai import filtered as _filtered
from ._openai import first as _first
from ._shape import U64_MAX, located, model_role, shape

__all__ = ["OpenAIChatMapper"]


_FINISH = {
    "stop": "stop",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "length": "length",
    "content_filter": "content_filter",
}

#: the names of a chunk and a body in the mapper's errors
_CHUNK, _BODY = "chat.completion.chunk", "chat.completion"

_S = shape("openai-chat")
_obj, _opt_obj, _opt_list, _opt_str, _req_str = _S.obj, _S.opt_obj, _S.opt_list, _S.opt_str, _S.req_str
_opt_count, _opt_bool = _S.opt_count, _S.opt_bool


def _invalid(name: str, detail: str, path: str) -> OutputError:
    """A ``MALFORMED_EVENT`` other than a shape: ``"<name>: <detail>"`` at ``path``."""
    return located("MALFORMED_EVENT", f"{name}: {detail}", path)


# ---------------------------------------------------------------- shape checks
# In the Rust mapper's order, field by field (see its module doc).

#: the members of a chunk or body holding Azure's filter results on the
#: prompt: ``prompt_filter_results``, and ``prompt_annotations`` as API
#: versions before 2023-10-01 name them
_PROMPT_FILTERS: Final = ("prompt_filter_results", "prompt_annotations")
#: the members of a choice holding Azure's filter results on its output:
#: ``content_filter_results``, and ``content_filter_result`` as Azure has
#: also spelt it in stream chunks
_CHOICE_FILTERS: Final = ("content_filter_results", "content_filter_result")


def _top(
    d: Any, what: str
) -> tuple[str | None, str | None, list[Any], UsageReported | None, ResponseFailed | None, _Annotation | None]:
    """The members a chunk and a body share, checked in this order: id,
    model, choices (an array), usage (and its event), error (and its
    failure), prompt_filter_results, then prompt_annotations (Azure's name for
    them before API version 2023-10-01; what they say: see :data:`_Annotation`)."""
    d = _obj(d, what, "$")
    rid = _opt_str(d, "id", what, "$")
    model = _opt_str(d, "model", what, "$")
    choices = _opt_list(d, "choices", what, "$") or []
    usage = d.get("usage")
    usage_event = None if usage is None else _usage(usage, what, "$.usage")
    err = d.get("error")
    failed = None if err is None else failure(_S, err, what, "$.error")
    if type(err) is str:  # a string error (TGI) names its kind beside it: "error_type": "overloaded"
        kind = _opt_str(d, "error_type", what, "$")
        if kind is not None:
            failed = ResponseFailed(code="error", message=err, retryable=kind in RETRYABLE_ERRORS, error_type=kind)
    prompt_filtered: _Annotation | None = None
    for member in _PROMPT_FILTERS:
        for position, entry in enumerate(_opt_list(d, member, what, "$") or []):
            at = f"$.{member}[{position}]"
            results = _opt_obj(_obj(entry, what, at), "content_filter_results", what, at)
            note = None if results is None else _filtered(_S, results, what, f"{at}.content_filter_results")
            prompt_filtered = _first(prompt_filtered, note)
    return rid, model, choices, usage_event, failed, prompt_filtered


def _usage(value: Any, what: str, at: str) -> UsageReported:
    """Chat ``usage`` -> canonical usage: the details objects, then the counts."""
    usage = _obj(value, what, at)
    prompt = _opt_obj(usage, "prompt_tokens_details", what, at)
    completion = _opt_obj(usage, "completion_tokens_details", what, at)
    input_tokens = _opt_count(usage, "prompt_tokens", what, at)
    output_tokens = _opt_count(usage, "completion_tokens", what, at)
    cached = None if prompt is None else _opt_count(prompt, "cached_tokens", what, f"{at}.prompt_tokens_details")
    reasoning = (
        None
        if completion is None
        else _opt_count(completion, "reasoning_tokens", what, f"{at}.completion_tokens_details")
    )
    return UsageReported(
        input_tokens=input_tokens, output_tokens=output_tokens, cached_tokens=cached, reasoning_tokens=reasoning
    )


def _call_strings(tool_calls: Iterable[Any]) -> list[Any]:
    """The strings ``fast_body`` read of each tool call but its arguments
    (their colons are counted as it reads them): its id, type and name."""
    out: list[Any] = []
    for call in tool_calls:
        out += (call.get("id"), call.get("type"), call["function"].get("name"))
    return out


#: one checked choice: (position, index, parts, finish_reason, what its
#: content filter results say or None)
_ChoiceRead = tuple[int, "int | None", "_Parts | None", "str | None", "_Annotation | None"]


def _choice(raw: Any, position: int, body: bool, what: str) -> _ChoiceRead:
    """One choice: its index, its delta (``message`` in a body),
    finish_reason, content_filter_results, then what the delta carries."""
    at = f"$.choices[{position}]"
    choice = _obj(raw, what, at)
    index = _opt_count(choice, "index", what, at)
    key, other = ("message", "delta") if body else ("delta", "message")
    if choice.get(other) is not None:  # what it would carry is never read: refused, not dropped
        raise _invalid(what, _OTHER_MODE[body], f"{at}.{other}")
    delta = _opt_obj(choice, key, what, at)
    finish = _opt_str(choice, "finish_reason", what, at)
    filtered = None
    for member in _CHOICE_FILTERS:
        results = _opt_obj(choice, member, what, at)
        filtered = _first(filtered, None if results is None else _filtered(_S, results, what, f"{at}.{member}"))
    parts = None if delta is None else _delta_parts(delta, what, f"{at}.{key}")
    return position, index, parts, finish, filtered


#: why a choice carrying the other mode's member is refused (by ``body``)
_OTHER_MODE: Final = {
    False: "a chunk's choice carries a whole message, which only a response body has, not a delta",
    True: "a response body's choice carries a delta, which only a stream chunk has, not its message",
}


# ---------------------------------------------------------------- the common chunks

#: what ``_read`` found: a first chunk, a finish, more text, more arguments, a new call
_START, _FINISH_CHUNK, _TEXT, _MORE, _CALL = range(5)


def _read(payload: Any, selected: int, colons: int | None = None) -> tuple[Any, ...] | None:
    """A common chunk, whatever the mapper's state: one choice (the
    ``selected`` one), every field ``map_event`` checks of the right type, a
    delta that carries nothing else the mapper reads, and either nothing
    (``(_START, id, model)``), or a finish_reason and nothing
    (``(_FINISH_CHUNK, finish_reason)``), or non-empty content
    (``(_TEXT, None, content)``), or one tool call: non-empty arguments alone
    (``(_MORE, index, arguments)``) or a name (``(_CALL, index, id, name,
    arguments)``). None for any other chunk.

    With ``colons``, the payload was parsed without the repeated-key check
    and holds that many ``:``: it is read only once its objects' members
    and the colons of the strings read account for all of them (see
    :func:`decisions._pure.envelope.unkeyed`), else None."""
    if type(payload) is not dict:
        return None
    get = payload.get
    choices = get("choices")
    if (
        type(choices) is not list
        or len(choices) != 1
        or (
            not _TOP_VETOES.isdisjoint(payload)
            and (
                get("usage") is not None
                or get("error") is not None
                or get("prompt_filter_results") is not None
                or get("prompt_annotations") is not None
            )
        )
    ):
        return None
    rid, model = get("id"), get("model")
    if (rid is not None and type(rid) is not str) or (model is not None and type(model) is not str):
        return None
    choice = choices[0]
    if (
        type(choice) is not dict
        or choice.get("content_filter_results") is not None
        or choice.get("content_filter_result") is not None
        or choice.get("message") is not None
    ):
        return None
    index, delta, finish = choice.get("index"), choice.get("delta"), choice.get("finish_reason")
    if (0 if index is None else index) != selected or (index is not None and type(index) is not int):
        return None
    content = calls = None
    if delta is not None:
        if type(delta) is not dict:
            return None
        if not _DELTA_VETOES.isdisjoint(delta) and _vetoed(delta):
            return None
        role = delta.get("role")
        if role is not None and role != "assistant":
            return None
        content, calls = delta.get("content"), delta.get("tool_calls")
    if colons is not None:  # what the members of the objects read leave to the strings
        colons -= len(payload) + len(choice) + (0 if delta is None else len(delta))
    if finish is not None:
        if type(finish) is not str or content is not None or calls is not None:
            return None
        if colons and colons != _colons(rid, model, finish):
            return None
        return _FINISH_CHUNK, finish
    if calls is None:
        if content is None:
            return None if colons and colons != _colons(rid, model) else (_START, rid, model)
        if type(content) is not str or not content or (colons and colons != _colons(rid, model, content)):
            return None
        return _TEXT, None, content
    if content is not None or type(calls) is not list or len(calls) != 1:
        return None
    call = calls[0]
    if type(call) is not dict or call.get("type") not in (None, "", "function"):
        return None
    k, fn, call_id = call.get("index"), call.get("function"), call.get("id")
    if type(fn) is not dict or (k is not None and (type(k) is not int or not 0 <= k <= U64_MAX)):
        return None
    name, arguments = fn.get("name"), fn.get("arguments")
    at = 0 if k is None else k
    if name is None and call_id is None:
        if type(arguments) is not str or not arguments:
            return None
    elif (
        (call_id is not None and type(call_id) is not str)
        or type(name) is not str
        or not name
        or (arguments is not None and type(arguments) is not str)
    ):
        return None
    if colons is not None:
        colons -= len(call) + len(fn)
        if colons and colons != _colons(rid, model, call_id, name, arguments, call.get("type")):
            return None
    return (_MORE, at, arguments) if name is None and call_id is None else (_CALL, at, call_id, name, arguments)


def _colons(*values: Any) -> int:
    """The ``:`` characters of the strings among ``values`` (each one a
    different string of the text read)."""
    found = 0
    for value in values:
        if type(value) is str:
            found += value.count(":")
    return found


#: members of a chunk or body that ``_read`` and ``fast_body`` leave to
#: ``map_event`` / ``map_body`` unless null (absent: nothing to look up)
_TOP_VETOES: Final = frozenset({"usage", "error", *_PROMPT_FILTERS})
_BODY_VETOES: Final = frozenset({"error", *_PROMPT_FILTERS})  # a body's usage is read
#: the same of a delta or message
_DELTA_VETOES: Final = frozenset({"refusal", "reasoning_content", "reasoning", "function_call", "audio"})


#: the item ids of the first tool calls of choice 0, made once
_ITEM_IDS: Final = tuple(f"choice0.tool_calls[{k}]" for k in range(16))


def _vetoed(delta: dict[str, Any]) -> bool:
    """Whether a delta or message carries one of :data:`_DELTA_VETOES` (not null)."""
    d = delta.get
    return (
        d("refusal") is not None
        or d("reasoning_content") is not None
        or d("reasoning") is not None
        or d("function_call") is not None
        or d("audio") is not None
    )


# ---------------------------------------------------------------- mapper


class _Call:
    __slots__ = ("item_id", "call_id", "name")

    def __init__(self, item_id: str, call_id: str, name: str) -> None:
        self.item_id = item_id
        self.call_id = call_id
        self.name = name


class OpenAIChatMapper:
    """Chat Completions chunks / bodies -> canonical events."""

    #: ``fast_event`` and ``fast_body`` take data parsed without the
    #: repeated-key check, given its ``colons`` (see ``_read``).
    PROVES_KEYS = True

    def __init__(self, choice: int | None = None) -> None:
        self.unknown_events: dict[str, int] = {}
        self._choice = 0 if choice is None else choice
        self._choice_given = choice is not None
        self._started = False
        self._response_id: str | None = None
        self._open: list[str] = []  # open item ids, in start order
        self._text: str | None = None
        self._refusal: str | None = None
        self._reasoning: str | None = None
        self._calls: dict[int, _Call] = {}  # tool-call index -> current call
        self._legacy: _Call | None = None  # a legacy ``function_call``
        self._ncalls = 0
        self._finished = False
        self._done = False
        self._filtered: str | None = None  # the path of the first filtered annotation

    # ------------------------------------------------------------ stream

    def map_event(self, event: str | None, payload: Any) -> list[CanonicalEvent]:
        """One chunk (decoded), or the ``[DONE]`` marker."""
        if self._done:
            raise new_error("EVENT_AFTER_TERMINAL", "an event arrived after data: [DONE]")
        if payload is DONE:  # the marker (decoded as the constant), never a JSON string spelling it
            self._done = True
            return []
        out: list[CanonicalEvent] = []
        self._chunk(payload, out)
        return out

    def end(self) -> list[CanonicalEvent]:
        """EOF adds nothing: the finish reason is the terminal."""
        return []

    def fast_event(
        self, event: str | None, payload: Any, assembler: Assembler, colons: int | None = None
    ) -> bool | tuple[int | None, str]:
        """The common chunks (see ``_read``) applied straight to ``assembler``
        (its entry points equal to ``apply`` of each event), without building
        event objects. The mapper's state changes as ``map_event`` changes
        it, then the assembler gets the events ``map_event`` gives, in order.
        Returns True, or for a delta chunk ``(key, delta)`` (see
        ``more_delta``); False, with
        nothing changed, for any other chunk or where the mapper's state
        makes it one that ``map_event`` must read. ``colons``: see ``_read``."""
        read = _read(payload, self._choice, colons)
        if read is None or self._finished or self._done:
            return False
        kind = read[0]
        if kind == _MORE or kind == _TEXT:
            return (read[1], read[2]) if self.more_delta(read[1], read[2], assembler) else False
        if not self._started:
            if kind != _START:
                return False
            rid, model = read[1], read[2]
            self._started = True
            self._response_id = rid or None
            assembler.apply(ResponseStarted(response_id=rid or None, model=model or None))
            return True
        if kind == _FINISH_CHUNK:
            raw = read[1]
            ended, reason = self._finish(raw)
            for item_id in ended:
                assembler.item_ended(item_id)
            assembler.finished(reason, raw)
            return True
        if kind != _CALL or read[1] in self._calls:
            return False
        _, index, call_id, name, arguments = read
        new, generated = self._register_call(call_id, name)
        self._calls[index] = new
        assembler.call_started(new.item_id, new.call_id, name, generated)
        if arguments:
            assembler.arguments_delta(new.item_id, arguments)
        return True

    def more_delta(self, key: int | None, delta: str, assembler: Assembler) -> bool:
        """``fast_event`` of a chunk that only continues the text (``key``
        None) or the arguments of the call at index ``key`` with ``delta``:
        the delta given to the open text item or call; False, with nothing
        changed, where the mapper's state does not allow it."""
        if self._finished or self._done or not self._started:
            return False
        if key is None:
            if self._text is None:
                return False
            assembler.text_delta(self._text, delta)
            return True
        current = self._calls.get(key)
        if current is None:
            return False
        assembler.arguments_delta(current.item_id, delta)
        return True

    def _chunk(self, payload: Any, out: list[CanonicalEvent]) -> None:
        # the whole chunk is shape-checked before any of it is acted on
        rid, model, raw_choices, usage, failed, prompt_filtered = _top(payload, _CHUNK)
        get = payload.get
        if (
            get("choices") is None
            and usage is None
            and failed is None
            and all(get(member) is None for member in _PROMPT_FILTERS)
        ):
            # another server's error object ({"object": "error", ...}, {"detail": ...}) is no chunk
            raise _invalid(_CHUNK, "the chunk has no choices, usage or error", "$.choices")
        choices = [_choice(raw, position, False, _CHUNK) for position, raw in enumerate(raw_choices)]
        if len(choices) > 1:
            _no_repeated_choice([0 if c[1] is None else c[1] for c in choices], "chunk")
        if not self._started and (rid or choices or usage is not None or failed is not None):
            self._start(rid or None, model or None, out)
        if failed is not None:  # an error vetoes whatever the chunk's choices say
            out.append(failed)
            return
        if prompt_filtered is not None:
            self._filter(prompt_filtered)
        for position, index, parts, finish, filtered in choices:
            index = 0 if index is None else index
            if index != self._choice:
                if self._choice_given:
                    continue
                raise new_error(
                    "MULTIPLE_CHOICES",
                    f"the stream has choice {index}, where only choice 0 is read without choice=; pass choice= to select one",
                )
            if filtered is not None:
                self._filter(filtered)
            self._choice_delta(parts, finish, f"$.choices[{position}].delta", out)
        if usage is not None:
            out.append(usage)

    def _start(self, rid: str | None, model: str | None, out: list[CanonicalEvent]) -> None:
        self._started = True
        self._response_id = rid
        out.append(ResponseStarted(response_id=rid, model=model))

    def _filter(self, note: _Annotation) -> None:
        """A ``filtered: true`` annotation at ``at``: the finish will be
        ``content_filter``; after the finish, ``CONTENT_FILTERED`` at once.
        A filter that did not run: ``PROVIDER_ERROR`` at once, unless a
        filter already withheld output."""
        at, ran = note
        if not ran:
            if self._filtered is not None:
                return
            raise unscreened(at)
        if self._finished:
            raise located("CONTENT_FILTERED", "the content filter withheld output after the finish_reason", at)
        if self._filtered is None:
            self._filtered = at

    def _choice_delta(self, parts: "_Parts | None", finish: str | None, at: str, out: list[CanonicalEvent]) -> None:
        terminal = self._finished
        if parts is not None:
            if terminal and parts.has_content():
                raise new_error("EVENT_AFTER_TERMINAL", "content arrived after the choice's finish_reason")
            self._apply(parts, at, out)
        if finish is not None:
            if terminal:
                raise new_error("EVENT_AFTER_TERMINAL", "a second finish_reason for the same choice")
            self._finish_with(finish, out)

    def _apply(self, parts: "_Parts", at: str, out: list[CanonicalEvent]) -> None:
        """Apply a checked delta at ``at`` (its tool calls: those left in ``parts``)."""
        c = self._choice
        if parts.reasoning:
            if self._reasoning is None:
                self._reasoning = f"choice{c}.reasoning"
                self._open_item(self._reasoning, "reasoning", out)
            out.append(ReasoningDelta(item_id=self._reasoning, delta=parts.reasoning))
        for kind, text in parts.content:
            if not text:
                continue
            if kind == "reasoning":
                if self._reasoning is None:
                    self._reasoning = f"choice{c}.reasoning"
                    self._open_item(self._reasoning, "reasoning", out)
                out.append(ReasoningDelta(item_id=self._reasoning, delta=text))
            else:
                if self._text is None:
                    self._text = f"choice{c}.content"
                    self._open_item(self._text, "text", out)
                out.append(TextDelta(item_id=self._text, delta=text))
        if parts.refusal:
            if self._refusal is None:
                self._refusal = f"choice{c}.refusal"
                self._open_item(self._refusal, "refusal", out)
            out.append(RefusalDelta(item_id=self._refusal, delta=parts.refusal))
        for position, index, call_id, name, arguments in parts.tool_calls:
            name_at = f"{at}.tool_calls[{position}].function.name"
            self._tool_delta(index, call_id, name, arguments, name_at, out)
        if parts.function_call is not None:
            self._legacy_delta(*parts.function_call, f"{at}.function_call.name", out)

    def _open_item(self, item_id: str, kind: Any, out: list[CanonicalEvent]) -> None:
        self._open.append(item_id)
        out.append(ItemStarted(item_id=item_id, kind=kind))

    def _new_call(self, call_id: str | None, name: str | None, at: str, out: list[CanonicalEvent]) -> _Call:
        """A new call; ``at`` is where its name sits (a call must have one)."""
        if not name:
            raise _invalid(_CHUNK, "a tool call starts without a function name", at)
        call, generated = self._register_call(call_id, name)
        out.append(ToolCallStarted(item_id=call.item_id, call_id=call.call_id, name=name, call_id_generated=generated))
        return call

    def _register_call(self, call_id: str | None, name: str) -> tuple[_Call, bool]:
        """A new call named ``name`` opened in the mapper's state, and whether its call id was generated."""
        k = self._ncalls
        self._ncalls += 1
        item_id = f"choice{self._choice}.tool_calls[{k}]"
        generated = not call_id
        if generated:
            prefix = f"{self._response_id}." if self._response_id else ""
            call_id = f"{prefix}call_{k}"
        assert call_id is not None
        self._open.append(item_id)
        return _Call(item_id, call_id, name), generated

    def _tool_delta(
        self,
        index: int,
        call_id: str | None,
        name: str | None,
        arguments: str | None,
        name_at: str,
        out: list[CanonicalEvent],
    ) -> None:
        call = self._calls.get(index)
        if call is None or (call_id and call_id != call.call_id):
            # a new index, or the index reused by another call: a new call
            if call is not None:
                self._close(call.item_id, out)
            call = self._new_call(call_id, name, name_at, out)
            self._calls[index] = call
        elif name and name != call.name:
            raise new_error("CALL_NAME_CHANGED", f'tool call {call.call_id} was named "{call.name}", then "{name}"')
        if arguments:
            out.append(ToolArgumentsDelta(item_id=call.item_id, delta=arguments))

    def _legacy_delta(self, name: str | None, arguments: str | None, name_at: str, out: list[CanonicalEvent]) -> None:
        call = self._legacy
        if call is None:
            call = self._legacy = self._new_call(None, name, name_at, out)
        elif name and name != call.name:
            raise new_error("CALL_NAME_CHANGED", f'function call {call.call_id} was named "{call.name}", then "{name}"')
        if arguments:
            out.append(ToolArgumentsDelta(item_id=call.item_id, delta=arguments))

    def _close(self, item_id: str, out: list[CanonicalEvent]) -> None:
        self._open.remove(item_id)
        out.append(ItemEnded(item_id=item_id))

    def _finish_with(self, raw: str, out: list[CanonicalEvent]) -> None:
        ended, reason = self._finish(raw)
        out.extend(ItemEnded(item_id=item_id) for item_id in ended)
        out.append(ResponseFinished(finish_reason=reason, raw_finish_reason=raw))  # type: ignore[arg-type]

    def _finish(self, raw: str) -> tuple[list[str], str]:
        """The finish_reason ``raw`` in the mapper's state: the items it ends, and the finish reason."""
        reason = "content_filter" if self._filtered is not None else _FINISH.get(raw, "unknown")
        if reason == "stop" and self._refusal is not None:
            reason = "refusal"
        ended: list[str] = []
        # a finish_reason ends the choice: its items end with it, except where
        # the reason cuts them (length, content_filter); an unknown one ends
        # them too, so the response is refused by its finish reason
        # (UNKNOWN_FINISH_REASON), not named an item left open
        if reason in ("stop", "tool_calls", "refusal", "unknown"):
            ended, self._open = self._open, []
        self._finished = True
        return ended, reason

    # ------------------------------------------------------------ whole body

    def fast_body(
        self, body: Any, provider: str, limits: Limits, colons: int | None = None
    ) -> NormalizedResponse | None:
        """The common body, straight to its response: one choice (the
        selected one) whose message has text and/or tool calls and nothing
        else the mapper reads, finished by ``stop``, ``tool_calls``,
        ``length`` or ``content_filter``, every field ``map_body`` checks of
        the right type, within the assembler's limits. Returns exactly what
        ``map_body`` and the assembler give; None for any other body, which
        then goes through them (and their errors).

        With ``colons``, the body was parsed without the repeated-key check
        and holds that many ``:``: it is read only once its objects' members
        and the colons of the strings read account for all of them (see
        :func:`decisions._pure.envelope.unkeyed`), else None."""
        if type(body) is not dict:
            return None
        get = body.get
        rid, model, choices, usage = get("id"), get("model"), get("choices"), get("usage")
        if (
            (rid is not None and type(rid) is not str)
            or (model is not None and type(model) is not str)
            or type(choices) is not list
            or len(choices) != 1
            or (
                not _BODY_VETOES.isdisjoint(body)
                and (
                    get("error") is not None
                    or get("prompt_filter_results") is not None
                    or get("prompt_annotations") is not None
                )
            )
        ):
            return None
        events = 2  # response_started, response_finished
        read_usage = None
        if usage is not None:  # what ``_usage`` reads of a usage object that passes its checks
            if type(usage) is not dict:
                return None
            prompt, completion = usage.get("prompt_tokens_details"), usage.get("completion_tokens_details")
            if (prompt is not None and type(prompt) is not dict) or (
                completion is not None and type(completion) is not dict
            ):
                return None
            input_tokens, output_tokens = usage.get("prompt_tokens"), usage.get("completion_tokens")
            cached = None if prompt is None else prompt.get("cached_tokens")
            reasoning = None if completion is None else completion.get("reasoning_tokens")
            for count in (input_tokens, output_tokens, cached, reasoning):
                if count is not None and (type(count) is not int or not 0 <= count <= U64_MAX):
                    return None
            read_usage = new_usage(input_tokens, output_tokens, cached, reasoning)
            events += 1
            if colons is not None:
                colons -= len(usage) + (0 if prompt is None else len(prompt))
                colons -= 0 if completion is None else len(completion)
        choice = choices[0]
        if type(choice) is not dict:
            return None
        index, message, raw = choice.get("index"), choice.get("message"), choice.get("finish_reason")
        if (
            (0 if index is None else index) != self._choice
            or (index is not None and (type(index) is not int or not 0 <= index <= U64_MAX))
            or type(message) is not dict
            or type(raw) is not str
            or choice.get("content_filter_results") is not None
            or choice.get("content_filter_result") is not None
            or choice.get("delta") is not None
        ):
            return None
        reason = _FINISH.get(raw)
        if reason is None:
            return None
        # the assembler ends every item at ``stop`` and ``tool_calls``; the
        # others read here (``length``, ``content_filter``) cut the response
        # and its calls
        ended = reason == "stop" or reason == "tool_calls"
        content, tool_calls = message.get("content"), message.get("tool_calls")
        if (
            (content is not None and type(content) is not str)
            or (tool_calls is not None and type(tool_calls) is not list)
            or (not _DELTA_VETOES.isdisjoint(message) and _vetoed(message))
            or message.get("role") not in (None, "assistant")
        ):
            return None
        items: list[Item] = []
        total = 0  # the bytes of the response's text and arguments
        if content:
            items.append(new_text_item(f"choice{self._choice}.content", content))
            total = len(content) if content.isascii() else len(content.encode("utf-8", "surrogatepass"))
            events += 3 if ended else 2  # item_started, text_delta (item_ended)
        item_ids = _ITEM_IDS if self._choice == 0 else ()
        max_arguments = limits.max_call_argument_bytes
        call_ids: list[str] = []
        for k, call in enumerate(tool_calls or ()):
            if type(call) is not dict or call.get("type") not in (None, "", "function"):
                return None
            k_index, fn, call_id = call.get("index"), call.get("function"), call.get("id")
            if (
                (k_index is not None and (type(k_index) is not int or not 0 <= k_index <= U64_MAX))
                or type(fn) is not dict
                or (call_id is not None and type(call_id) is not str)
            ):
                return None
            name, arguments = fn.get("name"), fn.get("arguments")
            if type(name) is not str or not name or (arguments is not None and type(arguments) is not str):
                return None
            if arguments:
                size = len(arguments) if arguments.isascii() else len(arguments.encode("utf-8", "surrogatepass"))
                if size > max_arguments:
                    return None
                total += size
                # tool_call_started, tool_arguments_delta (item_ended)
                events += 3 if ended else 2
                if colons is not None:
                    colons -= len(call) + len(fn) + arguments.count(":")
            else:
                arguments = ""
                events += 2 if ended else 1
                if colons is not None:
                    colons -= len(call) + len(fn)
            item_id = item_ids[k] if k < len(item_ids) else f"choice{self._choice}.tool_calls[{k}]"
            if call_id:
                generated = False
            else:
                generated = True
                call_id = f"{rid}.call_{k}" if rid else f"call_{k}"
            call_ids.append(call_id)
            items.append(new_tool_call_item(item_id, call_id, name, arguments, ended, generated, "function"))
        n = len(call_ids)
        if not items:
            return None  # read as nothing: whose body it is, is for ``normalize_text`` to say
        if colons is not None:
            colons -= len(body) + len(choice) + len(message)
            if content:
                colons -= content.count(":")
            if colons and colons != _colons(rid, model, raw, *_call_strings(tool_calls or ())):
                return None
        if (
            events > limits.max_stream_events
            or len(items) > limits.max_items_per_response
            or n > limits.max_calls_per_response
            or total > limits.max_response_bytes
            or (n > 1 and (call_ids[0] == call_ids[1] if n == 2 else len(set(call_ids)) != n))
        ):
            return None  # the assembler refuses it: the events themselves raise
        return new_response(provider, rid or None, model or None, tuple(items), reason, raw, read_usage, {})

    def map_body(self, body: Any) -> list[CanonicalEvent]:
        """A ``chat.completion`` object (or an ``{"error": ...}`` body)."""
        out: list[CanonicalEvent] = []
        rid, model, raw_choices, usage, failed, prompt_filtered = _top(body, _BODY)
        choices = [_choice(raw, position, True, _BODY) for position, raw in enumerate(raw_choices)]
        self._start(rid or None, model or None, out)
        if failed is not None:  # an error vetoes whatever the choices say
            out.append(failed)
            return out
        if not choices:
            raise _invalid(_BODY, "the body has no choices", "$.choices")
        if not self._choice_given and len(choices) > 1:
            raise new_error("MULTIPLE_CHOICES", f"the body has {len(choices)} choices; pass choice= to select one")
        indexes = [position if index is None else index for position, index, _, _, _ in choices]
        if len(indexes) > 1:
            _no_repeated_choice([i for i in indexes if i == self._choice], "body")
        if self._choice not in indexes:
            raise new_error("MULTIPLE_CHOICES", f"choice {self._choice} is not among the choices {indexes}")
        position, _, parts, finish, filtered = choices[indexes.index(self._choice)]
        at = f"$.choices[{position}]"
        if finish is None:
            raise _invalid(_BODY, "the selected choice has no finish_reason", f"{at}.finish_reason")
        for place in (prompt_filtered, filtered):
            if place is not None:
                self._filter(place)
        if parts is not None:
            calls, parts.tool_calls = parts.tool_calls, []
            self._apply(parts, f"{at}.message", out)
            for call_position, _, call_id, name, arguments in calls:
                name_at = f"{at}.message.tool_calls[{call_position}].function.name"
                call = self._new_call(call_id, name, name_at, out)
                if arguments:
                    out.append(ToolArgumentsDelta(item_id=call.item_id, delta=arguments))
        if usage is not None:
            out.append(usage)
        self._finish_with(finish, out)
        return out


def _no_repeated_choice(indexes: list[int], where: str) -> None:
    """Two entries for one choice index are ambiguous: ``MULTIPLE_CHOICES``."""
    seen: set[int] = set()
    for index in indexes:
        if index in seen:
            raise new_error("MULTIPLE_CHOICES", f"the {where} has choice {index} more than once")
        seen.add(index)


class _Parts:
    """What one delta (or a body's message) carries, shape-checked."""

    __slots__ = ("content", "refusal", "reasoning", "tool_calls", "function_call")

    def __init__(self) -> None:
        self.content: list[tuple[str, str]] = []  # (kind "text" | "reasoning", text)
        self.refusal: str | None = None
        self.reasoning: str | None = None
        #: (position in tool_calls, index, id, name, arguments)
        self.tool_calls: list[tuple[int, int, str | None, str | None, str | None]] = []
        self.function_call: tuple[str | None, str | None] | None = None

    def has_content(self) -> bool:
        return bool(
            any(text for _, text in self.content)
            or self.refusal
            or self.reasoning
            or self.tool_calls
            or self.function_call
        )


def _delta_parts(delta: dict[str, Any], what: str, at: str) -> _Parts:
    """A delta's members in order: role (the model's, when not null), content, refusal, reasoning_content,
    reasoning, tool_calls, function_call."""
    model_role(delta, "assistant", what, at)
    parts = _Parts()
    content = delta.get("content")
    if type(content) is list:
        for i, raw in enumerate(content):
            part_at = f"{at}.content[{i}]"
            part = _obj(raw, what, part_at)
            kind = _req_str(part, "type", what, part_at)
            text = _opt_str(part, "text", what, part_at)
            thinking = []
            for j, sub in enumerate(_opt_list(part, "thinking", what, part_at) or ()):
                sub_at = f"{part_at}.thinking[{j}]"
                thinking.append(_opt_str(_obj(sub, what, sub_at), "text", what, sub_at) or "")
            if kind == "text":
                if text is None:
                    raise _S.malformed(what, f"{part_at}.text")
                parts.content.append(("text", text))
            elif kind == "thinking":
                parts.content.extend(("reasoning", sub) for sub in thinking)
            else:
                raise _invalid(what, f'content part type "{kind}" is not known', f"{part_at}.type")
    elif content is not None:
        parts.content.append(("text", _req_str(delta, "content", what, at)))
    parts.refusal = _opt_str(delta, "refusal", what, at)
    reasoning_content = _opt_str(delta, "reasoning_content", what, at)
    reasoning = _opt_str(delta, "reasoning", what, at)
    if reasoning_content and reasoning and reasoning_content != reasoning:
        raise _invalid(what, "reasoning and reasoning_content disagree", f"{at}.reasoning")
    parts.reasoning = reasoning_content or reasoning
    for position, raw in enumerate(_opt_list(delta, "tool_calls", what, at) or ()):
        call_at = f"{at}.tool_calls[{position}]"
        call = _obj(raw, what, call_at)
        index = _opt_count(call, "index", what, call_at)
        fn = _opt_obj(call, "function", what, call_at)
        call_id = _opt_str(call, "id", what, call_at)
        call_type = _opt_str(call, "type", what, call_at)
        if call_type and call_type != "function":  # a custom tool's call, or one the package does not know
            raise located(
                "UNSUPPORTED_ITEM",
                f'{what}: a tool call of type "{call_type}" is not one the package can represent; '
                "it may be a call the host must handle, so nothing in the response is decided",
                call_at,
            )
        fn_at = f"{call_at}.function"
        parts.tool_calls.append(
            (
                position,
                position if index is None else index,
                call_id,
                None if fn is None else _opt_str(fn, "name", what, fn_at),
                None if fn is None else _opt_str(fn, "arguments", what, fn_at),
            )
        )
    fc = _opt_obj(delta, "function_call", what, at)
    if fc is not None:
        fc_at = f"{at}.function_call"
        parts.function_call = (_opt_str(fc, "name", what, fc_at), _opt_str(fc, "arguments", what, fc_at))
    if delta.get("audio") is not None:  # an answer the package cannot represent: never a half answer
        raise located(
            "UNSUPPORTED_ITEM",
            f"{what}: an audio answer is not one the package can represent; "
            "the answer would be cut, so nothing in the response is decided",
            f"{at}.audio",
        )
    return parts
