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
that delta's ``tool_calls`` list.

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
  event after the terminal (``EVENT_AFTER_TERMINAL``).
- ``finish_reason`` ``length`` / ``content_filter`` -> ``INCOMPLETE_RESPONSE``
  / ``CONTENT_FILTERED``; any other value (``""``, ``eos``, ``error``, other
  case) leaves the items open (``ITEM_NOT_ENDED``); none: no terminal
  (``NO_TERMINAL_EVENT``; in a body ``MALFORMED_EVENT``).
- content or a second ``finish_reason`` after the finish_reason ->
  ``EVENT_AFTER_TERMINAL``.
- two entries for one choice index in a chunk, or for the selected choice in
  a body -> ``MULTIPLE_CHOICES``; a finish on another choice finishes nothing.
"""

from __future__ import annotations

from typing import Any

from ...errors import new_error
from ...providers import DONE
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
    UsageReported,
)
from ._shape import U64_MAX

__all__ = ["OpenAIChatMapper"]


_FINISH = {
    "stop": "stop",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "length": "length",
    "content_filter": "content_filter",
}

#: provider error types/codes that say asking again may succeed
RETRYABLE_ERRORS = frozenset(
    {"server_error", "rate_limit_exceeded", "rate_limit_error", "overloaded_error", "service_unavailable"}
)


# ---------------------------------------------------------------- shape checks
# Each accepts what the Rust mapper's serde structs accept: a missing key or
# null for an optional field, the documented type otherwise.


def _envelope(
    d: dict[str, Any], what: str
) -> tuple[
    str | None,
    str | None,
    list[Any] | None,
    dict[str, Any] | None,
    UsageReported | None,
    dict[str, Any] | None,
    ResponseFailed | None,
]:
    """The fields a chunk and a whole body share, shape-checked in one order:
    id, model, choices, usage (and its event), error (and its failure)."""
    rid = opt_str(d, "id", what)
    model = opt_str(d, "model", what)
    raw_choices = opt_list(d, "choices", what)
    usage = opt_obj(d, "usage", what)
    usage_event = None if usage is None else chat_usage(usage, what)
    err = opt_obj(d, "error", what)
    failure = None if err is None else provider_error(err, what)
    return rid, model, raw_choices, usage, usage_event, err, failure


def malformed(what: str, detail: str) -> Exception:
    """The error for a known event whose shape does not fit."""
    return new_error("MALFORMED_EVENT", f"{what}: {detail}")


def obj(value: Any, what: str, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise malformed(what, f"{path} must be an object")
    return value


def opt_obj(d: dict[str, Any], key: str, what: str) -> dict[str, Any] | None:
    value = d.get(key)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise malformed(what, f"{key} must be an object")
    return value


def opt_list(d: dict[str, Any], key: str, what: str) -> list[Any] | None:
    value = d.get(key)
    if value is None:
        return None
    if not isinstance(value, list):
        raise malformed(what, f"{key} must be an array")
    return value


def opt_str(d: dict[str, Any], key: str, what: str) -> str | None:
    value = d.get(key)
    if value is None or isinstance(value, str):
        return value
    raise malformed(what, f"{key} must be a string")


def req_str(d: dict[str, Any], key: str, what: str) -> str:
    value = d.get(key)
    if isinstance(value, str):
        return value
    raise malformed(what, f"{key} must be a string")


def opt_u64(d: dict[str, Any], key: str, what: str) -> int | None:
    value = d.get(key)
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= U64_MAX:
        return value
    raise malformed(what, f"{key} must be a non-negative integer")


def opt_bool(d: dict[str, Any], key: str, what: str) -> bool | None:
    value = d.get(key)
    if value is None or isinstance(value, bool):
        return value
    raise malformed(what, f"{key} must be a boolean")


def provider_error(err: dict[str, Any], what: str) -> ResponseFailed:
    """An OpenAI-style ``{"code", "message", "type"}`` error object."""
    code = err.get("code")
    if code is not None and (
        isinstance(code, bool)
        or not isinstance(code, (str, int))
        or (isinstance(code, int) and not -(2**63) <= code <= U64_MAX)
    ):
        raise malformed(what, "error.code must be a string or a 64-bit integer")
    message = opt_str(err, "message", what) or ""
    error_type = opt_str(err, "type", what)
    code_text = str(code) if code is not None else (error_type or "error")
    retryable = code_text in RETRYABLE_ERRORS or (error_type in RETRYABLE_ERRORS)
    return ResponseFailed(code=code_text, message=message, retryable=retryable, error_type=error_type)


# ---------------------------------------------------------------- mapper


class _Call:
    __slots__ = ("item_id", "call_id", "name")

    def __init__(self, item_id: str, call_id: str, name: str) -> None:
        self.item_id = item_id
        self.call_id = call_id
        self.name = name


class OpenAIChatMapper:
    """Chat Completions chunks / bodies -> canonical events."""

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

    # ------------------------------------------------------------ stream

    def map_event(self, event: str | None, payload: Any) -> list[CanonicalEvent]:
        """One chunk (decoded), or the ``[DONE]`` marker."""
        if self._done:
            raise new_error("EVENT_AFTER_TERMINAL", "an event arrived after data: [DONE]")
        if payload == DONE:
            self._done = True
            return []
        out: list[CanonicalEvent] = []
        chunk = obj(payload, "chat.completion.chunk", "the chunk")
        self._chunk(chunk, out)
        return out

    def end(self) -> list[CanonicalEvent]:
        """EOF adds nothing: the finish reason is the terminal."""
        return []

    def fast_delta(self, event: str | None, payload: Any) -> tuple[bool, str, str] | None:
        """The common chunk, without building event objects: one choice (the
        selected one) whose delta only continues the open text item or an open
        tool call's arguments, with every field ``map_event`` checks of the
        right type. Returns ``(is_text, item_id, delta)``, exactly what
        ``map_event`` would map it to (one non-empty ``TextDelta`` or
        ``ToolArgumentsDelta``), and changes no state; ``None`` for any other
        chunk, which then goes through ``map_event``."""
        if type(payload) is not dict or self._finished or self._done or not self._started:
            return None
        get = payload.get
        choices = get("choices")
        if type(choices) is not list or len(choices) != 1 or get("usage") is not None or get("error") is not None:
            return None
        rid, model = get("id"), get("model")
        if (rid is not None and type(rid) is not str) or (model is not None and type(model) is not str):
            return None
        choice = choices[0]
        if type(choice) is not dict or choice.get("finish_reason") is not None:
            return None
        index = choice.get("index")
        if (0 if index is None else index) != self._choice or (index is not None and type(index) is not int):
            return None
        delta = choice.get("delta")
        if type(delta) is not dict:
            return None
        d = delta.get
        if d("refusal") is not None or d("reasoning_content") is not None or d("reasoning") is not None:
            return None
        content, calls = d("content"), d("tool_calls")
        if d("function_call") is not None:
            return None
        if calls is None:
            if type(content) is str and content and self._text is not None:
                return True, self._text, content
            return None
        if content is not None or type(calls) is not list or len(calls) != 1:
            return None
        call = calls[0]
        if type(call) is not dict or call.get("id") is not None:
            return None
        fn = call.get("function")
        if type(fn) is not dict or fn.get("name") is not None:
            return None
        arguments = fn.get("arguments")
        k = call.get("index")
        if type(arguments) is not str or not arguments or (k is not None and type(k) is not int):
            return None
        current = self._calls.get(0 if k is None else k)
        return None if current is None else (False, current.item_id, arguments)

    def _chunk(self, chunk: dict[str, Any], out: list[CanonicalEvent]) -> None:
        what = "chat.completion.chunk"
        # the whole chunk is shape-checked before any of it is acted on
        rid, model, raw_choices, usage, usage_event, err, failure = _envelope(chunk, what)
        choices = []
        for position, raw in enumerate(raw_choices or ()):
            choice = obj(raw, what, f"choices[{position}]")
            index = opt_u64(choice, "index", what)
            delta = opt_obj(choice, "delta", what)
            finish = opt_str(choice, "finish_reason", what)
            choices.append(
                (0 if index is None else index, None if delta is None else _delta_parts(delta, what), finish)
            )
        _no_repeated_choice([c[0] for c in choices], "chunk")
        if not self._started and (rid or choices or usage is not None or err is not None):
            self._start(rid or None, model or None, out)
        if failure is not None:  # an error vetoes whatever the chunk's choices say
            out.append(failure)
            return
        for index, parts, finish in choices:
            if index != self._choice:
                if self._choice_given:
                    continue
                raise new_error(
                    "MULTIPLE_CHOICES",
                    f"the stream has choice {index} besides choice 0; pass choice= to select one",
                )
            self._choice_delta(parts, finish, out)
        if usage_event is not None:
            out.append(usage_event)

    def _start(self, rid: str | None, model: str | None, out: list[CanonicalEvent]) -> None:
        self._started = True
        self._response_id = rid
        out.append(ResponseStarted(response_id=rid, model=model))

    def _choice_delta(self, parts: "_Parts | None", finish: str | None, out: list[CanonicalEvent]) -> None:
        terminal = self._finished
        if parts is not None:
            if terminal and parts.has_content():
                raise new_error("EVENT_AFTER_TERMINAL", "content arrived after the choice's finish_reason")
            self._apply(parts, out)
        if finish is not None:
            if terminal:
                raise new_error("EVENT_AFTER_TERMINAL", "a second finish_reason for the same choice")
            self._finish_with(finish, out)

    def _apply(self, parts: "_Parts", out: list[CanonicalEvent]) -> None:
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
        for index, call_id, name, arguments in parts.tool_calls:
            self._tool_delta(index, call_id, name, arguments, out)
        if parts.function_call is not None:
            self._legacy_delta(*parts.function_call, out)

    def _open_item(self, item_id: str, kind: Any, out: list[CanonicalEvent]) -> None:
        self._open.append(item_id)
        out.append(ItemStarted(item_id=item_id, kind=kind))

    def _new_call(self, call_id: str | None, name: str | None, out: list[CanonicalEvent]) -> _Call:
        if not name:
            raise malformed("chat.completion.chunk", "a tool call starts without a function name")
        k = self._ncalls
        self._ncalls += 1
        item_id = f"choice{self._choice}.tool_calls[{k}]"
        generated = not call_id
        if generated:
            prefix = f"{self._response_id}." if self._response_id else ""
            call_id = f"{prefix}call_{k}"
        assert call_id is not None
        call = _Call(item_id, call_id, name)
        self._open.append(item_id)
        out.append(ToolCallStarted(item_id=item_id, call_id=call_id, name=name, call_id_generated=generated))
        return call

    def _tool_delta(
        self,
        index: int,
        call_id: str | None,
        name: str | None,
        arguments: str | None,
        out: list[CanonicalEvent],
    ) -> None:
        call = self._calls.get(index)
        if call is None or (call_id and call_id != call.call_id):
            # a new index, or the index reused by another call: a new call
            if call is not None:
                self._close(call.item_id, out)
            call = self._new_call(call_id, name, out)
            self._calls[index] = call
        elif name and name != call.name:
            raise new_error("CALL_NAME_CHANGED", f"tool call {call.call_id} was named {call.name!r}, then {name!r}")
        if arguments:
            out.append(ToolArgumentsDelta(item_id=call.item_id, delta=arguments))

    def _legacy_delta(self, name: str | None, arguments: str | None, out: list[CanonicalEvent]) -> None:
        call = self._legacy
        if call is None:
            call = self._legacy = self._new_call(None, name, out)
        elif name and name != call.name:
            raise new_error("CALL_NAME_CHANGED", f"function call {call.call_id} was named {call.name!r}, then {name!r}")
        if arguments:
            out.append(ToolArgumentsDelta(item_id=call.item_id, delta=arguments))

    def _close(self, item_id: str, out: list[CanonicalEvent]) -> None:
        self._open.remove(item_id)
        out.append(ItemEnded(item_id=item_id))

    def _finish_with(self, raw: str, out: list[CanonicalEvent]) -> None:
        reason = _FINISH.get(raw, "unknown")
        if reason == "stop" and self._refusal is not None:
            reason = "refusal"
        if reason in ("stop", "tool_calls", "refusal"):
            for item_id in self._open:
                out.append(ItemEnded(item_id=item_id))
            self._open.clear()
        self._finished = True
        out.append(ResponseFinished(finish_reason=reason, raw_finish_reason=raw))  # type: ignore[arg-type]

    # ------------------------------------------------------------ whole body

    def map_body(self, body: Any) -> list[CanonicalEvent]:
        """A ``chat.completion`` object (or an ``{"error": ...}`` body)."""
        what = "chat.completion"
        out: list[CanonicalEvent] = []
        body = obj(body, what, "the body")
        rid, model, raw_choices, usage, usage_event, err, failure = _envelope(body, what)
        choices = []
        for position, raw in enumerate(raw_choices or ()):
            choice = obj(raw, what, f"choices[{position}]")
            index = opt_u64(choice, "index", what)
            message = opt_obj(choice, "message", what)
            finish = opt_str(choice, "finish_reason", what)
            choices.append(
                (
                    position if index is None else index,
                    None if message is None else _delta_parts(message, what),
                    finish,
                )
            )
        self._start(rid or None, model or None, out)
        if failure is not None:  # an error vetoes whatever the choices say
            out.append(failure)
            return out
        if not choices:
            raise malformed(what, "the body has no choices")
        if not self._choice_given and len(choices) > 1:
            raise new_error("MULTIPLE_CHOICES", f"the body has {len(choices)} choices; pass choice= to select one")
        selected = [c for c in choices if c[0] == self._choice]
        _no_repeated_choice([c[0] for c in selected], "body")
        if not selected:
            raise new_error(
                "MULTIPLE_CHOICES", f"choice {self._choice} is not among the choices {[c[0] for c in choices]}"
            )
        _, parts, finish = selected[0]
        if finish is None:
            raise malformed(what, "the selected choice has no finish_reason")
        if parts is not None:
            calls, parts.tool_calls = parts.tool_calls, []
            self._apply(parts, out)
            for _, call_id, name, arguments in calls:
                call = self._new_call(call_id, name, out)
                if arguments:
                    out.append(ToolArgumentsDelta(item_id=call.item_id, delta=arguments))
        if usage_event is not None:
            out.append(usage_event)
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
        self.tool_calls: list[tuple[int, str | None, str | None, str | None]] = []
        self.function_call: tuple[str | None, str | None] | None = None

    def has_content(self) -> bool:
        return bool(
            any(text for _, text in self.content)
            or self.refusal
            or self.reasoning
            or self.tool_calls
            or self.function_call
        )


def _delta_parts(delta: dict[str, Any], what: str) -> _Parts:
    parts = _Parts()
    content = delta.get("content")
    if isinstance(content, str):
        parts.content.append(("text", content))
    elif isinstance(content, list):
        for i, raw in enumerate(content):
            part = obj(raw, what, f"content[{i}]")
            kind = req_str(part, "type", what)
            text = opt_str(part, "text", what)
            thinking = [
                opt_str(obj(sub, what, f"content[{i}].thinking[{j}]"), "text", what) or ""
                for j, sub in enumerate(opt_list(part, "thinking", what) or ())
            ]
            if kind == "text":
                if text is None:
                    raise malformed(what, "text must be a string")
                parts.content.append(("text", text))
            elif kind == "thinking":
                parts.content.extend(("reasoning", sub) for sub in thinking)
            else:
                raise malformed(what, f"content part type {kind!r} is not known")
    elif content is not None:
        raise malformed(what, "content must be a string or an array of parts")
    parts.refusal = opt_str(delta, "refusal", what)
    reasoning_content = opt_str(delta, "reasoning_content", what)
    reasoning = opt_str(delta, "reasoning", what)
    if reasoning_content and reasoning and reasoning_content != reasoning:
        raise malformed(what, "reasoning and reasoning_content disagree")
    parts.reasoning = reasoning_content or reasoning
    for position, raw in enumerate(opt_list(delta, "tool_calls", what) or ()):
        call = obj(raw, what, f"tool_calls[{position}]")
        index = opt_u64(call, "index", what)
        fn = opt_obj(call, "function", what)
        parts.tool_calls.append(
            (
                position if index is None else index,
                opt_str(call, "id", what),
                None if fn is None else opt_str(fn, "name", what),
                None if fn is None else opt_str(fn, "arguments", what),
            )
        )
    fc = opt_obj(delta, "function_call", what)
    if fc is not None:
        parts.function_call = (opt_str(fc, "name", what), opt_str(fc, "arguments", what))
    return parts


def chat_usage(usage: dict[str, Any], what: str) -> UsageReported:
    """Chat ``usage`` -> canonical usage."""
    prompt = opt_obj(usage, "prompt_tokens_details", what)
    completion = opt_obj(usage, "completion_tokens_details", what)
    return UsageReported(
        input_tokens=opt_u64(usage, "prompt_tokens", what),
        output_tokens=opt_u64(usage, "completion_tokens", what),
        cached_tokens=None if prompt is None else opt_u64(prompt, "cached_tokens", what),
        reasoning_tokens=None if completion is None else opt_u64(completion, "reasoning_tokens", what),
    )
