"""Google Gemini ``generateContent`` / ``streamGenerateContent`` (pure twin of
``rust/src/core/providers/gemini.rs``).

Every stream chunk is a ``GenerateContentResponse`` (SSE ``data`` with
``alt=sse``, or one JSON value per line); a whole body is one such response,
or a JSON array of them (``streamGenerateContent`` without ``alt=sse``).

Terminal authority: Gemini sends no end event; the end of the stream (or of
the body) is the terminal. The finish reason is the last ``finishReason`` of
the selected candidate seen by then (earlier Vertex models put ``STOP`` on
every chunk; current ones may send usage or citations after it), except that
a veto (a ``blockReason`` or any finish other than ``STOP``) is kept whatever
follows it. Content (a ``functionCall``, text) in a chunk whose candidate
gives no ``finishReason``, after a chunk that gave ``STOP``, came after the
end: ``EVENT_AFTER_TERMINAL`` at the part's path (after a veto, the veto
refuses the response). A response that ends without any is finished with ``unknown``
(raw ``None``), which ``decide`` refuses. An ``error`` object fails the
response at once; any chunk after it is ``EVENT_AFTER_TERMINAL``.

Vetoes (a field that says "not finished, failed, blocked or ambiguous" wins
over one that says "done"):
- ``error`` -> response failed (``PROVIDER_ERROR``), whatever the chunk's
  candidates say.
- ``promptFeedback.blockReason`` (any value, ``BLOCK_REASON_UNSPECIFIED``
  too) -> content_filter, raw = the reason (``CONTENT_FILTERED``), even beside
  a ``finishReason`` of ``STOP``.
- ``finishReason`` of the selected candidate: see the finish reasons below;
  only ``STOP`` is done (``CONTENT_FILTERED``, ``RESPONSE_ERROR``,
  ``INCOMPLETE_RESPONSE``, ``UNKNOWN_FINISH_REASON`` otherwise, also for
  ``OTHER``, ``FINISH_REASON_UNSPECIFIED``, ``""`` and other spellings).
- a ``safetyRatings`` entry of the selected candidate, or of
  ``promptFeedback`` (with or without a ``blockReason``), with
  ``blocked: true`` (in this chunk or an earlier one) turns a ``STOP`` into
  content_filter, raw ``SAFETY``.
- two candidates with one ``index`` (a missing index is the position) ->
  ``MULTIPLE_CHOICES``; a finish on another candidate finishes nothing.
- ``finishMessage`` only explains a ``finishReason`` and vetoes nothing by
  itself.
- a streamed chunk with none of ``candidates``, ``promptFeedback``,
  ``usageMetadata``, ``modelVersion`` and ``error`` (a gateway's error object:
  ``{"detail": ...}``) -> ``MALFORMED_EVENT`` at ``$.candidates``, never
  skipped; a whole body of that shape is ``NOT_A_RESPONSE_BODY``.

Mapping:
- items are ``item_<n>`` in order. Consecutive text parts form one text item,
  consecutive ``thought: true`` parts one reasoning item; an empty text part
  opens nothing.
- a ``thoughtSignature`` on a thought part is that reasoning item's signature;
  on any other part (text, function call, empty) it becomes a reasoning item of
  its own (empty text, that signature) placed just before the part, so it can
  be sent back with the turn.
- ``functionCall`` with ``name`` and ``args`` (an object) is a whole call; its
  arguments are ``args`` as deterministic JSON text (``{}`` when absent).
  Streamed arguments (``willContinue: true``, then parts carrying
  ``partialArgs`` of ``{jsonPath, stringValue|numberValue|boolValue|nullValue,
  willContinue}``) are assembled into one object and emitted when a part
  without ``willContinue`` closes the call. A string whose partial has
  ``willContinue`` continues in the next partial with the same path; a part
  that closes the call while such a string waits for its continuation is
  ``MALFORMED_EVENT`` at the ``functionCall`` (the string would be cut). In a
  stream the value is bounded as it comes: once a lower bound of its JSON
  text (each string piece's UTF-8 bytes, one byte for any other value, each
  key's bytes) passes ``max_call_argument_bytes``, the call is
  ``ARGUMENTS_TOO_LARGE``, as its deltas would be, before the rest is held.
  A ``functionCall`` carrying both ``args`` and ``partialArgs`` says two
  things of its arguments: ``MALFORMED_EVENT`` at the ``functionCall``, never
  the two merged. A part continuing a streamed call that gives an ``id``
  (not empty) other than the one its first part gave, or any when the first
  gave none, names another call than the one streaming: ``MALFORMED_EVENT``
  at its ``functionCall.id`` (the result would be paired with another id).
- a candidate's ``content.role`` other than ``model`` (null and absent are
  the model's) is another party's message: ``MALFORMED_EVENT`` at its path.
- Gemini gives no call ids unless ``functionCall.id`` is set: the call id is
  ``<responseId>:call_<k>`` (``call_<k>`` without a response id), *k* counting
  the response's calls from 0, with ``call_id_generated`` set.
- the parts of code Gemini runs itself (``executableCode``,
  ``codeExecutionResult``), its server-side ``toolCall`` / ``toolResponse``
  and the metadata keys of a part (``partMetadata``, ``videoMetadata``, ...)
  leave the host nothing to do: they are counted in ``unknown_events`` as
  ``part:<key>``. Any other key (``inlineData`` or ``fileData``, content the
  answer would lose; ``functionResponse``; a key the mapper does not know) is
  ``UNSUPPORTED_ITEM`` at the part's path, never counted while the rest is
  decided; of several, the first in code point order is named. A part with
  no member, or only null ones, says nothing of what it carried (google-genai
  drops the fields it does not know, leaving ``{}`` of a part newer than the
  SDK): ``UNSUPPORTED_ITEM`` at its path too.
- finish reasons: STOP → stop (tool_calls when the response holds a call),
  MAX_TOKENS → length; SAFETY, RECITATION, BLOCKLIST, PROHIBITED_CONTENT, SPII,
  LANGUAGE, IMAGE_SAFETY, IMAGE_PROHIBITED_CONTENT, IMAGE_RECITATION and
  Vertex AI's MODEL_ARMOR → content_filter; MALFORMED_FUNCTION_CALL,
  MALFORMED_RESPONSE, UNEXPECTED_TOOL_CALL, TOO_MANY_TOOL_CALLS,
  MISSING_THOUGHT_SIGNATURE → error; anything else (OTHER, IMAGE_OTHER,
  NO_IMAGE, FINISH_REASON_UNSPECIFIED, a value not known) → unknown. The raw
  value is kept.
- usage (the last ``usageMetadata`` seen): input = ``promptTokenCount``,
  cached = ``cachedContentTokenCount``, reasoning = ``thoughtsTokenCount``,
  output = ``candidatesTokenCount`` + ``thoughtsTokenCount``.
- several candidates are ``MULTIPLE_CHOICES`` unless ``choice`` selects one
  (by candidate ``index``).
"""

from __future__ import annotations

import copy
from typing import Any, Final, Literal

from ...errors import OutputError, new_error
from ...types import (
    CanonicalEvent,
    FinishReason,
    ItemEnded,
    ItemStarted,
    ReasoningDelta,
    ResponseFailed,
    ResponseFinished,
    ResponseStarted,
    TextDelta,
    ToolArgumentsDelta,
    ToolCallStarted,
    UsageReported,
)
from ._shape import U64_MAX as _U64
from ._shape import located, model_role, shape
from ._unknown import count_unknown
from .jsontext import dumps

__all__ = ["GeminiMapper", "finish_reason", "MAX_PATH_SEGMENTS"]

#: the members of a chunk besides ``error``: one of them (not null) at least
_CHUNK_MEMBERS: Final = ("candidates", "promptFeedback", "usageMetadata", "modelVersion")

#: deepest ``partialArgs`` jsonPath accepted
MAX_PATH_SEGMENTS = 128

_FINISH: dict[str, FinishReason] = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "LANGUAGE": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "IMAGE_PROHIBITED_CONTENT": "content_filter",
    "IMAGE_RECITATION": "content_filter",
    "MODEL_ARMOR": "content_filter",  # Vertex AI: the response was blocked by Model Armor
    "MALFORMED_FUNCTION_CALL": "error",
    "MALFORMED_RESPONSE": "error",
    "UNEXPECTED_TOOL_CALL": "error",
    "TOO_MANY_TOOL_CALLS": "error",
    "MISSING_THOUGHT_SIGNATURE": "error",
}

_RETRYABLE_STATUS = frozenset({"RESOURCE_EXHAUSTED", "UNAVAILABLE", "INTERNAL", "DEADLINE_EXCEEDED"})
_RETRYABLE_CODES = frozenset({429, 500, 502, 503, 504})
_PART_KEYS = frozenset({"text", "thought", "thoughtSignature", "functionCall"})
#: part keys of what Gemini runs itself, and metadata: counted, nothing for the host to do
_INFORMATIONAL_KEYS = frozenset(
    {
        "executableCode",
        "codeExecutionResult",
        "toolCall",
        "toolResponse",
        "partMetadata",
        "videoMetadata",
        "audioMetadata",
        "documentMetadata",
        "spreadsheetMetadata",
        "speechMetadata",
        "mediaResolution",
        "mediaProcessing",
    }
)
_VALUE_KEYS = ("stringValue", "numberValue", "boolValue", "nullValue")
#: why a part with no member (or only null ones) is refused: what it carried is not known
_EMPTY_PART: Final = (
    "gemini part has no member: what it carried is not known (an SDK that drops the fields it does not "
    "know, as google-genai does, leaves such a part), so nothing in the response is decided"
)


def finish_reason(raw: str, has_calls: bool) -> FinishReason:
    """The normalized finish reason of a Gemini ``finishReason``."""
    reason = _FINISH.get(raw, "unknown")
    return "tool_calls" if reason == "stop" and has_calls else reason


_S = shape("gemini")
_malformed, _obj, _opt_obj, _opt_list = _S.malformed, _S.obj, _S.opt_obj, _S.opt_list
_opt_str, _opt_bool, _opt_count = _S.opt_str, _S.opt_bool, _S.opt_count


def _any_blocked(owner: dict[str, Any], what: str, at: str) -> bool:
    """Whether ``owner``'s ``safetyRatings`` (read as part of ``what`` at
    ``at``) holds a rating with ``blocked: true``; every rating is read, and a
    malformed one is ``MALFORMED_EVENT`` at its path."""
    blocked = False
    for k, rating in enumerate(_opt_list(owner, "safetyRatings", what, at) or ()):
        rating_at = f"{at}.safetyRatings[{k}]"
        blocked |= bool(_opt_bool(_obj(rating, "safetyRating", rating_at), "blocked", "safetyRating", rating_at))
    return blocked


def _utf8_len(text: str) -> int:
    """The bytes of ``text`` in UTF-8 (a lone surrogate's three too)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def parse_path(path: str) -> list[str | int]:
    """The segments of a ``partialArgs`` jsonPath: ``$``, then ``.key``,
    ``[n]``, ``['key']`` or ``["key"]``."""
    bad = new_error("MALFORMED_EVENT", f"gemini partialArgs jsonPath {path} is not a supported path")
    if not path.startswith("$"):
        raise bad
    segments: list[str | int] = []
    i, n = 1, len(path)
    while i < n:
        if len(segments) >= MAX_PATH_SEGMENTS:
            raise new_error("MALFORMED_EVENT", f"gemini partialArgs jsonPath is deeper than {MAX_PATH_SEGMENTS} levels")
        ch = path[i]
        if ch == ".":
            j = i + 1
            while j < n and path[j] not in ".[":
                j += 1
            if j == i + 1:
                raise bad
            segments.append(path[i + 1 : j])
            i = j
        elif ch == "[":
            if i + 1 < n and path[i + 1] in "'\"":
                quote = path[i + 1]
                close = path.find(quote + "]", i + 2)
                if close < 0:
                    raise bad
                segments.append(path[i + 2 : close])
                i = close + 2
            else:
                close = path.find("]", i + 1)
                digits = path[i + 1 : close] if close > 0 else ""
                if not digits or not all("0" <= c <= "9" for c in digits) or len(digits) > 9:
                    raise bad
                segments.append(int(digits))
                i = close + 1
        else:
            raise bad
    if not segments or not isinstance(segments[0], str):
        raise bad
    return segments


def _assign(root: dict[str, Any], segments: list[str | int], value: Any) -> tuple[Any, str | int]:
    """Set ``value`` at ``segments`` under ``root``, where nothing is yet;
    returns where it is (the container and its key or index). A string that
    continues is not appended here: its pieces are joined once it ends."""
    conflict = new_error("MALFORMED_EVENT", "gemini partialArgs assign a path that conflicts with an earlier one")
    node: Any = root
    for seg, nxt in zip(segments, segments[1:]):
        fresh: Any = {} if isinstance(nxt, str) else []
        if isinstance(seg, str):
            if type(node) is not dict:
                raise conflict
            if seg not in node:
                node[seg] = fresh
            node = node[seg]
        else:
            if type(node) is not list or seg > len(node):
                raise conflict
            if seg == len(node):
                node.append(fresh)
            node = node[seg]
    last = segments[-1]
    if isinstance(last, str):
        if type(node) is not dict or last in node:
            raise conflict
        node[last] = value
    else:
        if type(node) is not list or last != len(node):
            raise conflict
        node.append(value)
    return node, last


class _StreamedCall:
    __slots__ = ("item_id", "call_id", "given", "args", "continuing", "target", "pieces", "size")

    def __init__(self, item_id: str, call_id: str, given: str | None, args: dict[str, Any]) -> None:
        self.item_id = item_id
        self.call_id = call_id
        self.given = given  # the id the first part gave (None: the call id was generated)
        self.args = args
        # a lower bound of the bytes of ``args`` as JSON text: each string
        # piece's bytes, each other value 1, each key's bytes
        self.size = 0
        self.continuing: str | None = None  # the jsonPath of the string that continues
        # where that string is, and its pieces so far: joined once it ends
        # (adding each piece to the string would copy it again and again)
        self.target: tuple[Any, str | int] | None = None
        self.pieces: list[str] = []

    def settle(self) -> None:
        """Put the continuing string, joined, where it belongs."""
        if self.target is not None:
            node, last = self.target
            node[last] = "".join(self.pieces)
            self.target, self.pieces = None, []


class GeminiMapper:
    """Maps Gemini response chunks and bodies to canonical events."""

    #: where a ``functionCall``'s ``args`` object and its streamed
    #: ``partialArgs`` sit, in a chunk and a body
    ARGUMENT_FIELDS: Final = (
        ("candidates", None, "content", "parts", None, "functionCall", "args"),
        ("candidates", None, "content", "parts", None, "functionCall", "partialArgs"),
    )

    #: a stream may be one JSON array (``streamGenerateContent`` without ``alt=sse``)
    ARRAY_FRAMING: Final = True

    def __init__(self, choice: int | None = None) -> None:
        self.unknown_events: dict[str, int] = {}
        self._choice = choice
        self._started = False
        self._terminal = False
        self._response_id: str | None = None
        self._items = 0
        self._calls = 0
        self._open: tuple[Literal["text", "reasoning"], str] | None = (
            None  # (kind, item_id) of the open text/reasoning item
        )
        self._call: _StreamedCall | None = None
        #: ``max_call_argument_bytes``: a streamed call past it is refused at once
        self._max_call_bytes: int | None = None
        self._usage: UsageReported | None = None
        # a whole body is being read: a shapeless one is the body's
        # NOT_A_RESPONSE_BODY to name, not a chunk's refusal
        self._reading_body = False
        self._blocked = False  # a safety rating of the selected candidate or the prompt said "blocked"
        # the finish seen so far: (raw, is a blockReason); a veto is never replaced
        self._finish_seen: tuple[str, bool] | None = None
        # this chunk's candidate gives no finishReason, an earlier one did: it may carry no content
        self._after_finish = False

    # ------------------------------------------------------------ helpers

    def _count(self, key: str) -> None:
        count_unknown(self.unknown_events, key)

    def _new_item(self) -> str:
        item_id = f"item_{self._items}"
        self._items += 1
        return item_id

    def _close_open(self, out: list[CanonicalEvent]) -> None:
        if self._open is not None:
            out.append(ItemEnded(item_id=self._open[1]))
            self._open = None

    def _item(self, kind: Literal["text", "reasoning"], out: list[CanonicalEvent]) -> str:
        """The open item of ``kind``, opened (closing any other) if needed."""
        if self._open is not None and self._open[0] == kind:
            return self._open[1]
        self._close_open(out)
        item_id = self._new_item()
        out.append(ItemStarted(item_id=item_id, kind=kind))
        self._open = (kind, item_id)
        return item_id

    def limit_arguments(self, max_bytes: int) -> None:
        """Refuse a call whose streamed arguments pass ``max_bytes`` as soon as they do."""
        self._max_call_bytes = max_bytes

    def _start_call(self, fc: dict[str, Any], name: str, at: str, out: list[CanonicalEvent]) -> tuple[str, str]:
        self._close_open(out)
        given = _opt_str(fc, "id", "functionCall", at)
        if given:
            call_id, generated = given, False
        else:
            call_id = f"call_{self._calls}" if self._response_id is None else f"{self._response_id}:call_{self._calls}"
            generated = True
        self._calls += 1
        item_id = self._new_item()
        out.append(ToolCallStarted(item_id=item_id, call_id=call_id, name=name, call_id_generated=generated))
        return item_id, call_id

    @staticmethod
    def _read_usage(u: dict[str, Any]) -> UsageReported:
        what, at = "usageMetadata", "$.usageMetadata"
        candidates = _opt_count(u, "candidatesTokenCount", what, at)
        thoughts = _opt_count(u, "thoughtsTokenCount", what, at)
        prompt = _opt_count(u, "promptTokenCount", what, at)
        cached = _opt_count(u, "cachedContentTokenCount", what, at)
        output = (
            None if candidates is None and thoughts is None else min((candidates or 0) + (thoughts or 0), _U64)
        )  # saturating, as in Rust
        return UsageReported(
            input_tokens=prompt,
            output_tokens=output,
            cached_tokens=cached,
            reasoning_tokens=thoughts,
        )

    def _usage_events(self) -> list[CanonicalEvent]:
        return [] if self._usage is None else [self._usage]

    def _vetoed(self) -> bool:
        seen = self._finish_seen
        return seen is not None and (seen[1] or seen[0] != "STOP")

    def _finish(self, out: list[CanonicalEvent]) -> None:
        """The end of the stream or body: the finish seen last (a veto kept)."""
        self._close_open(out)
        out.extend(self._usage_events())
        seen = self._finish_seen
        if seen is None:
            out.append(ResponseFinished(finish_reason="unknown", raw_finish_reason=None))
        elif seen[1]:
            out.append(ResponseFinished(finish_reason="content_filter", raw_finish_reason=seen[0]))
        else:
            reason = finish_reason(seen[0], self._calls > 0)
            if self._blocked and reason in ("stop", "tool_calls"):
                out.append(ResponseFinished(finish_reason="content_filter", raw_finish_reason="SAFETY"))
            else:
                out.append(ResponseFinished(finish_reason=reason, raw_finish_reason=seen[0]))
        self._terminal = True

    # ------------------------------------------------------------ parts

    def _part(self, part: dict[str, Any], at: str, out: list[CanonicalEvent]) -> None:
        what = "part"
        text = _opt_str(part, "text", what, at)
        thought = _opt_bool(part, "thought", what, at)
        signature = _opt_str(part, "thoughtSignature", what, at)
        fc = _opt_obj(part, "functionCall", what, at)
        unsupported = [key for key in part if key not in _PART_KEYS and key not in _INFORMATIONAL_KEYS]
        if unsupported:
            raise located(
                "UNSUPPORTED_ITEM",
                f'gemini part with "{min(unsupported)}" is not one the package can represent; '
                "it may be a call the host must handle or part of the answer, so nothing in the response is decided",
                at,
            )
        if all(value is None for value in part.values()):
            raise located("UNSUPPORTED_ITEM", _EMPTY_PART, at)
        for key in part:
            if key not in _PART_KEYS:
                self._count(f"part:{key}")
        if fc is not None and (text is not None or thought):
            raise located("MALFORMED_EVENT", "gemini part holds both a functionCall and text", at)
        if self._call is not None and fc is None and (text or thought or signature):
            raise located(
                "MALFORMED_EVENT", "gemini part interrupts a function call whose arguments are still streaming", at
            )
        if self._after_finish and (fc is not None or text):
            raise located(
                "EVENT_AFTER_TERMINAL",
                "gemini content arrived in a chunk without a finishReason after the chunk that gave one",
                at,
            )
        if thought:
            item_id = self._item("reasoning", out)
            if text or signature:
                out.append(ReasoningDelta(item_id=item_id, delta=text or "", signature=signature or None))
            return
        if signature:
            self._close_open(out)
            item_id = self._new_item()
            out.append(ItemStarted(item_id=item_id, kind="reasoning"))
            out.append(ReasoningDelta(item_id=item_id, delta="", signature=signature))
            out.append(ItemEnded(item_id=item_id))
        if fc is not None:
            self._function_call(fc, f"{at}.functionCall", out)
        elif text:
            out.append(TextDelta(item_id=self._item("text", out), delta=text))

    def _function_call(self, fc: dict[str, Any], at: str, out: list[CanonicalEvent]) -> None:
        what = "functionCall"
        name = _opt_str(fc, "name", what, at)
        args = _opt_obj(fc, "args", what, at)
        partial = _opt_list(fc, "partialArgs", what, at)
        will_continue = _opt_bool(fc, "willContinue", what, at)
        if args is not None and partial is not None:  # whole and streamed arguments: which are the call's is not said
            raise located("MALFORMED_EVENT", "gemini functionCall holds both args and partialArgs", at)
        call = self._call
        if call is None:
            if not name:
                raise located("MALFORMED_EVENT", "gemini functionCall without a name starts no call", f"{at}.name")
            item_id, call_id = self._start_call(fc, name, at, out)
            if not will_continue and not partial:
                # (a payload holding NaN or an infinite float is refused before any mapper reads it)
                out.append(ToolArgumentsDelta(item_id=item_id, delta=dumps({} if args is None else args)))
                out.append(ItemEnded(item_id=item_id))
                return
            # the caller's payload is not mutated: partial arguments build on a copy
            given = _opt_str(fc, "id", what, at) or None
            call = self._call = _StreamedCall(item_id, call_id, given, {} if args is None else copy.deepcopy(args))
        elif args is not None or name:
            raise located("MALFORMED_EVENT", "gemini functionCall starts a new call while another is streaming", at)
        else:
            again = _opt_str(fc, "id", what, at)
            if again and again != call.given:  # the result would be paired with another id than the provider's
                raise located(
                    "MALFORMED_EVENT",
                    f'gemini functionCall names call id "{again}" while {call.call_id} streams',
                    f"{at}.id",
                )
        limit = self._max_call_bytes
        for k, entry in enumerate(partial or ()):
            entry_at = f"{at}.partialArgs[{k}]"
            self._partial(call, _obj(entry, "partialArgs entry", entry_at), entry_at)
            if limit is not None and call.size > limit:
                raise new_error(
                    "ARGUMENTS_TOO_LARGE",
                    f'the arguments of tool call "{call.call_id}" exceed max_call_argument_bytes ({limit})',
                )
        if not will_continue:
            if call.continuing is not None:  # the rest of that string was lost: the arguments would be cut
                raise located(
                    "MALFORMED_EVENT",
                    f"gemini functionCall ends the call while its string at {call.continuing} was to continue",
                    at,
                )
            call.settle()
            out.append(ToolArgumentsDelta(item_id=call.item_id, delta=dumps(call.args)))
            out.append(ItemEnded(item_id=call.item_id))
            self._call = None

    @staticmethod
    def _partial(call: _StreamedCall, entry: dict[str, Any], at: str) -> None:
        what = "partialArgs entry"
        path = entry.get("jsonPath")
        if type(path) is not str:
            raise _malformed(what, f"{at}.jsonPath")
        present = [key for key in _VALUE_KEYS if key in entry]
        if len(present) != 1:
            raise _malformed(what, at)
        key = present[0]
        value = entry[key]
        value_at = f"{at}.{key}"
        if key == "stringValue" and type(value) is not str:
            raise _malformed(what, value_at)
        if key == "numberValue" and type(value) not in (int, float):
            raise _malformed(what, value_at)
        if key == "boolValue" and type(value) is not bool:
            raise _malformed(what, value_at)
        if key == "nullValue":
            if value is not None and value != "NULL_VALUE":
                raise _malformed(what, value_at)
            value = None
        will_continue = _opt_bool(entry, "willContinue", what, at)
        append = call.continuing == path
        if append and key != "stringValue":
            raise _malformed(what, value_at)
        grown = _utf8_len(value) if key == "stringValue" else 1
        if append:  # the same path as the entry before: the string there goes on
            call.pieces.append(value)
        else:
            call.settle()
            try:
                segments = parse_path(path)
                target = _assign(call.args, segments, value)
            except OutputError as error:  # named at the entry's jsonPath, as every located error is
                raise located(error.code, error.message, f"{at}.jsonPath") from None
            last = segments[-1]
            if isinstance(last, str):
                grown += _utf8_len(last)
            if will_continue and key == "stringValue":
                call.target, call.pieces = target, [value]
        call.size += grown
        call.continuing = path if will_continue and key == "stringValue" else None
        if call.continuing is None:
            call.settle()

    # ------------------------------------------------------------ chunks

    def map_event(self, event: str | None, payload: Any) -> list[CanonicalEvent]:
        """One streamed chunk (a ``GenerateContentResponse``)."""
        del event  # Gemini streams name no events
        chunk = _obj(payload, "chunk", "$")
        if self._terminal:
            raise new_error("EVENT_AFTER_TERMINAL", "gemini chunk after the error that ended the response")
        out: list[CanonicalEvent] = []
        error = chunk.get("error")
        if error is not None:
            failed = self._failed(_obj(error, "error", "$.error"))
            if not self._started:  # the provider failed before responding: an id-less start first
                self._started = True
                out.append(ResponseStarted())
            out.append(failed)
            self._terminal = True
            return out
        if not self._reading_body and all(chunk.get(key) is None for key in _CHUNK_MEMBERS):
            # another server's error object ({"detail": ...}, {"message": ...}) is no chunk
            raise located(
                "MALFORMED_EVENT",
                "gemini chunk has none of candidates, promptFeedback, usageMetadata, modelVersion or error",
                "$.candidates",
            )
        what = "chunk"
        response_id = _opt_str(chunk, "responseId", what, "$")
        model = _opt_str(chunk, "modelVersion", what, "$")
        if not self._started:
            self._started = True
            self._response_id = response_id
            out.append(ResponseStarted(response_id=response_id, model=model))
        elif response_id is not None and self._response_id is not None and response_id != self._response_id:
            raise new_error(
                "DUPLICATE_START", f"gemini chunk of response {response_id} inside response {self._response_id}"
            )
        usage = _opt_obj(chunk, "usageMetadata", "usageMetadata", "$")
        if usage is not None:
            self._usage = self._read_usage(usage)
        candidates = _opt_list(chunk, "candidates", what, "$") or []
        feedback = _opt_obj(chunk, "promptFeedback", "promptFeedback", "$")
        block_reason = (
            None if feedback is None else _opt_str(feedback, "blockReason", "promptFeedback", "$.promptFeedback")
        )
        if feedback is not None and _any_blocked(feedback, "promptFeedback", "$.promptFeedback"):
            self._blocked = True
        selected = self._select(candidates)
        finish = None
        if selected is not None:
            position, candidate = selected
            at = f"$.candidates[{position}]"
            content = _opt_obj(candidate, "content", "candidate", at)
            finish = _opt_str(candidate, "finishReason", "candidate", at)
            # (after a veto, the veto is what refuses the response)
            self._after_finish = finish is None and self._finish_seen is not None and not self._vetoed()
            if _any_blocked(candidate, "candidate", at):
                self._blocked = True
            parts_at = f"{at}.content.parts"
            parts = [] if content is None else (_opt_list(content, "parts", "content", f"{at}.content") or [])
            if content is not None:
                model_role(content, "model", "gemini content", f"{at}.content")
            for k, part in enumerate(parts):
                part_at = f"{parts_at}[{k}]"
                self._part(_obj(part, "part", part_at), part_at, out)
        if not self._vetoed():
            if block_reason is not None:  # a blocked prompt wins over any finishReason
                self._finish_seen = (block_reason, True)
            elif finish is not None:
                self._finish_seen = (finish, False)
        return out

    def _select(self, candidates: list[Any]) -> tuple[int, dict[str, Any]] | None:
        """The selected candidate and its position in ``candidates``."""
        chosen = None
        seen: set[int] = set()
        for position, raw in enumerate(candidates):
            at = f"$.candidates[{position}]"
            candidate = _obj(raw, "candidate", at)
            index = _opt_count(candidate, "index", "candidate", at)
            index = position if index is None else index
            if index in seen:
                raise new_error("MULTIPLE_CHOICES", f"gemini response has candidate {index} more than once")
            seen.add(index)
            if self._choice is None:
                if index != 0:
                    raise new_error(
                        "MULTIPLE_CHOICES", "gemini response has several candidates; select one with choice="
                    )
                chosen = (position, candidate)
            elif index == self._choice:
                chosen = (position, candidate)
        return chosen

    @staticmethod
    def _failed(error: dict[str, Any]) -> ResponseFailed:
        what = "error"
        code = error.get("code")
        if code is not None and (type(code) is not int or code < 0 or code > _U64):
            raise _malformed(what, "$.error.code")
        status = _opt_str(error, "status", what, "$.error")
        message = _opt_str(error, "message", what, "$.error") or ""
        retryable = (status in _RETRYABLE_STATUS) or (code in _RETRYABLE_CODES)
        name = status if status else ("UNKNOWN" if code is None else str(code))
        return ResponseFailed(code=name, message=message, retryable=retryable, error_type=status)

    def end(self) -> list[CanonicalEvent]:
        """EOF: the terminal of a started response (see the module docstring)."""
        out: list[CanonicalEvent] = []
        if self._started and not self._terminal:
            self._finish(out)
        return out

    def map_body(self, body: Any) -> list[CanonicalEvent]:
        """A whole ``GenerateContentResponse``, or a JSON array of stream chunks."""
        self._reading_body = True
        if type(body) is list:
            out: list[CanonicalEvent] = []
            for chunk in body:
                out.extend(self.map_event(None, chunk))
        else:
            out = self.map_event(None, body)
        out.extend(self.end())
        return out
