"""The error model: one hierarchy, one closed table of codes.

Every failure the package reports is an :class:`OutputError` subclass named by
its *layer* (where in the chain it failed) and a stable *code* (what failed).
Both backends raise these same classes; the Rust core looks them up here by
layer. ``ERROR_CODES`` is the single source of truth for the codes: a test
fails if either backend can produce a code that is not in it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, ClassVar, Final, Iterable, Literal, Mapping

from ._redact import redact_secrets, redact_value

__all__ = [
    "ERROR_CODES",
    "Layer",
    "ErrorCode",
    "OutputError",
    "TransportError",
    "StreamError",
    "ParseError",
    "SchemaError",
    "DomainError",
    "PolicyError",
    "ResultError",
    "CompletionError",
    "error_class",
]

Layer = Literal["transport", "stream", "parse", "schema", "domain", "policy", "result", "completion"]


@dataclass(frozen=True, slots=True)
class ErrorCode:
    """One row of the code table: the layer it belongs to, whether retrying
    the request (or asking the model to repair) can help, and its meaning."""

    layer: Layer
    retryable: bool
    meaning: str


def _table(layer: Layer, rows: Mapping[str, tuple[bool, str]]) -> dict[str, ErrorCode]:
    return {code: ErrorCode(layer, retryable, meaning) for code, (retryable, meaning) in rows.items()}


#: code -> (layer, default retryable, meaning). Codes are stable API: add, never rename.
ERROR_CODES: Final[Mapping[str, ErrorCode]] = {
    **_table(
        "transport",
        {
            "CONNECTION_CLOSED": (True, "the connection ended before the response was complete"),
            "PROVIDER_ERROR": (False, "the provider reported an error instead of a response"),
            "HTTP_STATUS": (False, "the provider answered with a non-success HTTP status"),
        },
    ),
    **_table(
        "stream",
        {
            # SSE framing
            "SSE_INVALID_UTF8": (False, "the event stream is not valid UTF-8"),
            "SSE_LINE_TOO_LONG": (False, "an event-stream line exceeds max_sse_line_bytes"),
            "SSE_EVENT_TOO_LARGE": (False, "an event's data exceeds max_sse_event_bytes"),
            "SSE_TOO_MANY_EVENTS": (False, "the stream has more events than max_stream_events"),
            "SSE_STREAM_TOO_LARGE": (False, "the stream is longer than max_stream_bytes"),
            "SSE_NO_DATA": (True, "more than max_bytes_without_data arrived without a data event"),
            "SSE_UNTERMINATED_EVENT": (True, "the stream ended in the middle of an event"),
            # event mapping
            "MALFORMED_EVENT": (False, "a known provider event does not have the documented shape"),
            "MULTIPLE_CHOICES": (False, "the response has several choices and none was selected"),
            "OUTPUT_MISMATCH": (False, "the streamed deltas disagree with the provider's final output"),
            # assembly state machine
            "EVENT_BEFORE_START": (False, "an event arrived before the response started"),
            "DUPLICATE_START": (False, "the response was started twice"),
            "DELTA_BEFORE_START": (False, "a delta arrived for an item that was never started"),
            "DELTA_AFTER_END": (False, "a delta arrived for an item that had already ended"),
            "UNKNOWN_ITEM": (False, "an event names an item that does not exist"),
            "DUPLICATE_ITEM_ID": (False, "two items share one item id"),
            "DUPLICATE_CALL_ID": (False, "two tool calls share one call id"),
            "CALL_NAME_CHANGED": (False, "a tool call's name changed during the stream"),
            "SEQUENCE_NOT_MONOTONIC": (False, "event sequence numbers went backwards or repeated"),
            "ITEM_NOT_ENDED": (True, "the response finished with an item still open"),
            "NO_TERMINAL_EVENT": (True, "the stream ended without a terminal event (disconnect)"),
            "EVENT_AFTER_TERMINAL": (False, "an event arrived after the terminal event"),
            "STREAM_CANCELLED": (False, "the stream was cancelled by the caller"),
            "STREAM_FAILED": (False, "the stream already failed; no further events are accepted"),
            "ARGUMENTS_TOO_LARGE": (False, "a tool call's arguments exceed max_call_argument_bytes"),
            "TOO_MANY_CALLS": (False, "the response has more tool calls than max_calls_per_response"),
            "TOO_MANY_ITEMS_IN_RESPONSE": (False, "the response has more items than max_items_per_response"),
            "RESPONSE_TOO_LARGE": (False, "the response content exceeds max_response_bytes"),
            "TOO_MANY_EVENTS": (False, "the response has more events than max_stream_events"),
            # whole bodies
            "RESPONSE_NOT_FINISHED": (True, "the body is a response that is not finished yet (poll it by its id)"),
            "BODY_NOT_FINISHED": (True, "the body is not a finished response: it has no finish signal"),
            "NOT_A_RESPONSE_BODY": (False, "the body is not a response of this provider"),
            "UNSUPPORTED_ITEM": (
                False,
                "the response holds an output item the package cannot represent (a call the host must handle)",
            ),
            # completeness gate
            "INCOMPLETE_RESPONSE": (
                True,
                "the output was cut off (length / max tokens); raise the limit or shorten the task",
            ),
            "INCOMPLETE_TOOL_CALL": (True, "a tool call was not completed"),
            "CONTENT_FILTERED": (False, "the provider withheld or cut the output for safety reasons"),
            "REFUSAL": (False, "the model refused to answer"),
            "RESPONSE_CANCELLED": (False, "the response was cancelled"),
            "RESPONSE_ERROR": (True, "the response ended in an error"),
            "UNKNOWN_FINISH_REASON": (False, "the finish reason is not one the package knows"),
            "FINISH_REASON_MISMATCH": (True, "the finish reason contradicts the items in the response"),
            "SNAPSHOT_NOT_DECIDABLE": (False, "a provisional snapshot can never become a decision"),
            "AMBIGUOUS_PROVIDER": (
                False,
                'provider="auto" cannot tell the provider: the input matches none or several (listed)',
            ),
        },
    ),
    **_table(
        "parse",
        {
            "EMPTY_INPUT": (True, "there is no JSON value, only whitespace or nothing"),
            "INVALID_UTF8": (True, "the input is not valid UTF-8"),
            "UTF16_INPUT": (False, "the input is UTF-16 or UTF-32; JSON must be UTF-8"),
            "BOM": (True, "the input starts with a byte order mark"),
            "UNEXPECTED_END": (True, "the input ended in the middle of a value"),
            "UNEXPECTED_CHARACTER": (True, "a character that cannot appear here"),
            "TRAILING_CONTENT": (True, "more content follows the single JSON value"),
            "MARKDOWN_FENCE": (True, "the JSON is wrapped in a Markdown code fence"),
            "COMMENT": (True, "JSON does not allow comments"),
            "SINGLE_QUOTES": (True, "JSON strings and keys use double quotes"),
            "TRAILING_COMMA": (True, "a comma before a closing bracket or brace"),
            "KEY_NOT_STRING": (True, "an object key is not a double-quoted string"),
            "DUPLICATE_KEY": (True, "an object has the same key twice"),
            "INVALID_NUMBER": (True, "a number is not written as JSON allows"),
            "LEADING_ZERO": (True, "a number has a leading zero"),
            "NAN_OR_INFINITY": (True, "NaN and Infinity are not JSON"),
            "NUMBER_OUT_OF_RANGE": (True, "an integer outside the 64-bit range, or a float that overflows"),
            "NUMBER_TOO_LONG": (False, "a number is longer than max_number_length characters"),
            "INVALID_ESCAPE": (True, "a backslash escape that JSON does not define"),
            "INVALID_UNICODE_ESCAPE": (True, "a \\u escape without four hex digits"),
            "LONE_SURROGATE": (True, "a \\u escape names half of a surrogate pair"),
            "CONTROL_CHARACTER": (True, "a raw control character inside a string"),
            "DOCUMENT_TOO_LARGE": (False, "the document is larger than max_document_bytes"),
            "DEPTH_EXCEEDED": (False, "nesting is deeper than max_depth"),
            "STRING_TOO_LONG": (False, "a string is longer than max_string_bytes"),
            "TOO_MANY_ITEMS": (False, "an array has more than max_array_items items"),
            "TOO_MANY_MEMBERS": (False, "an object has more than max_object_members members"),
            "TOO_MANY_VALUES": (False, "the document has more than max_values values"),
            "ARGUMENTS_NOT_OBJECT": (True, "tool-call arguments must be a JSON object"),
            "DOUBLE_ENCODED_JSON": (True, "the value is a JSON string holding JSON; send the object itself"),
        },
    ),
    **_table(
        "schema",
        {
            "SCHEMA_MISMATCH": (True, "the value does not match the schema"),
            "AMBIGUOUS_DECISION": (True, "the response holds both a final answer and tool calls"),
            "EMPTY_DECISION": (True, "the response holds neither a final answer nor a tool call"),
            "UNSUPPORTED_SCHEMA": (False, "the schema uses a feature the provider cannot enforce"),
            "UNKNOWN_SCHEMA_VERSION": (False, "no schema is registered under that id and version"),
            "AMBIGUOUS_MIGRATION": (False, "an old shape cannot be migrated without guessing"),
        },
    ),
    **_table(
        "domain",
        {
            "UNKNOWN_TOOL": (True, "the model called a tool that is not registered"),
            "TOO_MANY_TOOL_CALLS": (True, "more tool calls than the caller allows in one decision"),
            "UNKNOWN_CALL_ID": (False, "a tool result names a call that was never decided"),
            "DUPLICATE_RESULT": (False, "a tool result for this call was already accepted"),
            "INVALID_TOOL_NAME": (True, "a tool name is empty or holds whitespace, control or invisible characters"),
            "AMBIGUOUS_TOOL_NAME": (
                True,
                "a tool name differs from a known one only in case, namespace prefix or look-alike characters",
            ),
            "CALL_KIND_MISMATCH": (
                True,
                "a call's kind does not match its registered tool's (custom text input vs JSON arguments, or another client tool)",
            ),
        },
    ),
    **_table(
        "policy",
        {
            "PATH_OUTSIDE_WORKSPACE": (True, "a path resolves outside the workspace"),
            "PATH_INVALID": (
                True,
                "a path is malformed (NUL or another control character, drive or UNC form, home expansion, longer than 4096 bytes)",
            ),
            "SCOPE_DENIED": (True, "the tool may not read or write there"),
            "TOOL_DENIED": (False, "policy does not allow this tool"),
            "RUN_CANCELLED": (False, "the run was cancelled; nothing may execute"),
            "CALL_ALREADY_DECIDED": (False, "this call id was already decided (replay)"),
            "STATE_CHECK_FAILED": (False, "the caller's state check refused the call"),
            "REPAIRED_CALL_REFUSED": (True, "a repaired call may not run a side-effecting tool"),
            "BATCH_REJECTED": (True, "another call in the batch failed, so the batch may not run"),
            "REPAIR_BUDGET_EXHAUSTED": (False, "the repair budget for this run is spent"),
            "REPEATED_ERROR": (False, "the model repeated the same error after a repair prompt"),
        },
    ),
    **_table(
        "result",
        {
            "TOOL_ERROR": (True, "the tool reported an error"),
            "RESULT_SCHEMA_MISMATCH": (False, "the tool's result does not match its declared result schema"),
            "EFFECT_NOT_OBSERVED": (False, "an effect the result claims (a file and its digest) is not what is there"),
            "PARTIAL_EFFECT": (False, "the call changed some of what it should and not the rest"),
            "LATE_RESULT": (
                False,
                "the result came after the worker's lease expired or the run was cancelled; it changed nothing",
            ),
            "STALE_ATTEMPT": (
                False,
                "the result carries an attempt (fencing token) that is no longer current; it changed nothing",
            ),
            "RESULT_TOO_LARGE": (
                False,
                "a tool result's content exceeds max_result_bytes, or it claims more effects than max_result_effects",
            ),
            "ALREADY_COMMITTED": (False, "the call already has its result; the first one stays"),
            "NOT_CLAIMED": (False, "the claim was not granted, so there is nothing to commit or renew"),
            "INVALID_TRANSITION": (False, "the call's state in the ledger does not allow this step"),
            "LEDGER_CONFLICT": (False, "a different call was already recorded under this run and call id"),
            "LEDGER_UNAVAILABLE": (
                True,
                "the ledger's database cannot be used (unreachable, locked, another schema version, or tables it did not write; these last two are not retryable)",
            ),
        },
    ),
    **_table(
        "completion",
        {
            "EVIDENCE_NOT_FOUND": (False, "the answer cites evidence that is not a committed call of this run"),
            "CLAIM_NOT_BACKED": (False, "the answer claims changes the committed calls did not make"),
            "SIDE_EFFECTS_PENDING": (False, "calls of the run are still running, waiting or of unknown outcome"),
            "ACCEPTANCE_FAILED": (False, "an acceptance criterion of the task did not pass"),
        },
    ),
}


class OutputError(Exception):
    """Base of every error the package raises about provider output.

    ``layer`` and ``code`` name the failure; ``retryable`` says whether asking
    again (or asking the model to repair) may help; ``offset`` is a character
    offset into the text that failed, ``path`` a JSON path such as
    ``$.calls[0].arguments.path``, ``issues`` a tuple of ``{path, code,
    expected}`` dicts, and ``hint`` one line fit to show the model.

    For an error in one tool call, ``call_index``, ``call_id`` and ``tool``
    name the call (the id and tool name the model knows); ``batch`` lists
    every call of an all-or-nothing batch that this error stopped, one
    ``{index, call_id, tool, status, code}`` dict each (``status`` is
    ``"denied"`` with the call's own code, or ``"not_run"`` with
    ``BATCH_REJECTED``). Every attribute survives ``pickle`` and
    :meth:`to_dict` / :meth:`from_dict`, except a ``ParseError``'s ``doc``
    (the model's raw text, which may hold credentials: pass it to
    ``repair_prompt(error, text=...)`` on the other side if needed).

    The base class has no layer of its own: every error raised is one of
    the layer subclasses (:func:`error_class` picks it for a code).
    """

    layer: ClassVar[Layer]

    def __init__(
        self,
        code: str,
        message: str | None = None,
        *,
        retryable: bool | None = None,
        offset: int | None = None,
        path: str | None = None,
        issues: tuple[Mapping[str, Any], ...] = (),
        hint: str | None = None,
        call_index: int | None = None,
        call_id: str | None = None,
        tool: str | None = None,
        batch: tuple[Mapping[str, Any], ...] = (),
    ) -> None:
        if not hasattr(type(self), "layer"):
            raise TypeError("OutputError is the base class; raise a layer's class (errors.error_class(code))")
        entry = ERROR_CODES.get(code)
        if entry is None or entry.layer != self.layer:
            raise ValueError(f"{code!r} is not a {self.layer} error code")
        self.code = code
        # Credentials never travel in a message, hint, path or issue (see _redact):
        # everything shown (str, repr, to_dict, the pickled form) is built from these.
        self.message = redact_secrets(message) if message is not None else entry.meaning
        self.retryable = entry.retryable if retryable is None else retryable
        self.offset = offset
        self.path = redact_secrets(path) if path is not None else None
        self.issues = tuple(redact_value(dict(issue)) for issue in issues)
        self.hint = redact_secrets(hint) if hint is not None else None
        self.call_index = call_index
        self.call_id = redact_secrets(call_id) if call_id is not None else None
        self.tool = redact_secrets(tool) if tool is not None else None
        self.batch = tuple(redact_value(dict(entry)) for entry in batch)
        Exception.__init__(self, self._render())

    def _render(self) -> str:
        text = f"{self.code}: {self.message}"
        if self.path is not None:
            text += f" at {self.path}"
        if self.offset is not None:
            text += f" (offset {self.offset})"
        return text

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code!r}, {self.message!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        # Rebuilt from the stable shape, then every instance attribute (notes a
        # caller added, ...) is restored as it was, except a ParseError's
        # document: the model's raw text may hold credentials, and nothing an
        # error shows or carries may (see _redact).
        state = {name: value for name, value in self.__dict__.items() if name != "doc"}
        return (_rebuild, (type(self), self.to_dict()), state)

    def to_dict(self) -> dict[str, Any]:
        """The stable, JSON-serialisable shape of this error
        (:meth:`from_dict` turns it back into the error)."""
        return {
            "layer": self.layer,
            "code": self.code,
            "message": self.message,
            "retryable": self.retryable,
            "offset": self.offset,
            "path": self.path,
            "hint": self.hint,
            "issues": [dict(issue) for issue in self.issues],
            "call_index": self.call_index,
            "call_id": self.call_id,
            "tool": self.tool,
            "batch": [dict(entry) for entry in self.batch],
        }

    @staticmethod
    def from_dict(data: Mapping[str, Any], *, path: str = "$") -> OutputError:
        """The error a :meth:`to_dict` shape describes, in its layer's class
        (a ``ParseError`` has no document: ``to_dict`` does not carry it).

        Each member is typed before the error is built: a member of another
        JSON type, a missing ``code`` or one not in :data:`ERROR_CODES` is
        :class:`SchemaError` ``SCHEMA_MISMATCH`` at the member's path (under
        ``path``, the dict's own)."""
        if not isinstance(data, Mapping):
            raise _shape_mismatch(path, "an object")
        code = data.get("code")
        if type(code) is not str or code not in ERROR_CODES:
            raise _shape_mismatch(f"{path}.code", "a code of decisions.ERROR_CODES")
        layer = data.get("layer")
        if layer is not None and layer != ERROR_CODES[code].layer:
            raise _shape_mismatch(f"{path}.layer", f"the layer of {code} ({ERROR_CODES[code].layer})")
        state: dict[str, Any] = {"code": code}
        for name, kind in _MEMBERS:
            value = data.get(name)
            if value is not None and type(value) is not kind:
                raise _shape_mismatch(f"{path}.{name}", kind.__name__)
            if isinstance(value, int) and value < 0:
                raise _shape_mismatch(f"{path}.{name}", "a non-negative int")
            state[name] = value
        if state["issues"] is None:
            raise _shape_mismatch(f"{path}.issues", "list")
        for name in ("issues", "batch"):
            entries = state[name] or []
            for i, entry in enumerate(entries):
                if type(entry) is not dict:
                    raise _shape_mismatch(f"{path}.{name}[{i}]", "an object")
                if name == "issues":
                    for key in ("path", "code", "expected"):
                        if type(entry.get(key)) is not str and (key != "expected" or key in entry):
                            raise _shape_mismatch(f"{path}.issues[{i}].{key}", "str")
                else:
                    _check_batch_entry(entry, f"{path}.batch[{i}]")
            state[name] = entries
        return _rebuild(error_class(code), state)


#: The members of an error's dict besides its code, with their JSON types.
_MEMBERS: Final = (
    ("message", str),
    ("retryable", bool),
    ("offset", int),
    ("path", str),
    ("hint", str),
    ("lineno", int),
    ("colno", int),
    ("call_index", int),
    ("call_id", str),
    ("tool", str),
    ("issues", list),
    ("batch", list),
)


#: The statuses of a call in :attr:`OutputError.batch`.
_BATCH_STATUSES: Final = ("denied", "not_run")


def _check_batch_entry(entry: Mapping[str, Any], path: str) -> None:
    """``SCHEMA_MISMATCH`` at the first member of a batch entry that is not of its documented shape."""
    index = entry.get("index")
    if type(index) is not int or index < 0:
        raise _shape_mismatch(f"{path}.index", "a non-negative int")
    for key in ("call_id", "tool"):
        if type(entry.get(key)) is not str:
            raise _shape_mismatch(f"{path}.{key}", "str")
    status = entry.get("status")
    if type(status) is not str or status not in _BATCH_STATUSES:
        raise _shape_mismatch(f"{path}.status", "one of " + ", ".join(_BATCH_STATUSES))
    code = entry.get("code")
    if type(code) is not str or code not in ERROR_CODES:
        raise _shape_mismatch(f"{path}.code", "a code of decisions.ERROR_CODES")


def _shape_mismatch(path: str, expected: str) -> SchemaError:
    return SchemaError(
        "SCHEMA_MISMATCH",
        f"not a stored shape: expected {expected} at {path}",
        path=path,
        issues=({"path": path, "code": "shape", "expected": expected},),
    )


def _rebuild(cls: type[OutputError], state: Mapping[str, Any]) -> OutputError:
    context: dict[str, Any] = {
        "call_index": state.get("call_index"),
        "call_id": state.get("call_id"),
        "tool": state.get("tool"),
        "batch": tuple(state.get("batch") or ()),
    }
    if issubclass(cls, ParseError):
        return cls(
            state["code"],
            state["message"],
            doc="",
            pos=state["offset"] or 0,
            lineno=state["lineno"],
            colno=state["colno"],
            hint=state["hint"],
            retryable=state["retryable"],
            path=state["path"],
            issues=tuple(state["issues"]),
            **context,
        )
    return cls(
        state["code"],
        state["message"],
        retryable=state["retryable"],
        offset=state["offset"],
        path=state["path"],
        issues=tuple(state["issues"]),
        hint=state["hint"],
        **context,
    )


class TransportError(OutputError):
    """The connection or the provider failed: no response to judge."""

    layer = "transport"


class StreamError(OutputError):
    """The stream or response is not a complete, well-formed response."""

    layer = "stream"


class ParseError(OutputError, json.JSONDecodeError):
    """Strict JSON parsing failed.

    A subclass of :class:`json.JSONDecodeError`, so existing handlers keep
    working: ``pos`` is the character offset (also ``offset``), ``lineno`` and
    ``colno`` are 1-based, ``msg`` is the message and ``doc`` the text.
    """

    layer = "parse"

    def __init__(
        self,
        code: str,
        message: str | None = None,
        *,
        doc: str = "",
        pos: int = 0,
        lineno: int | None = None,
        colno: int | None = None,
        hint: str | None = None,
        retryable: bool | None = None,
        path: str | None = None,
        issues: tuple[Mapping[str, Any], ...] = (),
        call_index: int | None = None,
        call_id: str | None = None,
        tool: str | None = None,
        batch: tuple[Mapping[str, Any], ...] = (),
    ) -> None:
        OutputError.__init__(
            self,
            code,
            message,
            retryable=retryable,
            offset=pos,
            path=path,
            hint=hint,
            issues=issues,
            call_index=call_index,
            call_id=call_id,
            tool=tool,
            batch=batch,
        )
        self.msg = self.message
        self.doc = doc
        self.pos = pos
        if lineno is None or colno is None:
            lineno = doc.count("\n", 0, pos) + 1
            colno = pos - doc.rfind("\n", 0, pos)
        self.lineno = lineno
        self.colno = colno
        self.args = (self._render(),)

    def _render(self) -> str:
        text = f"{self.code}: {self.message}"
        if self.path is not None:
            text += f" in {self.path}"
        lineno = getattr(self, "lineno", None)
        if lineno is not None:
            text += f" at line {lineno} column {self.colno} (char {self.pos})"
        return text

    def to_dict(self) -> dict[str, Any]:
        data = super().to_dict()
        data["lineno"] = self.lineno
        data["colno"] = self.colno
        return data


class SchemaError(OutputError):
    """The value is well-formed JSON but not the shape the schema demands."""

    layer = "schema"


class DomainError(OutputError):
    """The decision names something the application does not know."""

    layer = "domain"


class PolicyError(OutputError):
    """The decision is well-formed and known, but not allowed."""

    layer = "policy"


class ResultError(OutputError):
    """After the decision: a claim, commit or tool result the ledger refuses or marks failed."""

    layer = "result"


class CompletionError(OutputError):
    """A final answer that is well-formed but not backed by what really happened."""

    layer = "completion"


_CLASSES: Final[Mapping[str, type[OutputError]]] = {
    "transport": TransportError,
    "stream": StreamError,
    "parse": ParseError,
    "schema": SchemaError,
    "domain": DomainError,
    "policy": PolicyError,
    "result": ResultError,
    "completion": CompletionError,
}


def snapshot_error(state: str) -> StreamError:
    """``SNAPSHOT_NOT_DECIDABLE`` for a provisional snapshot of a ``state`` stream."""
    return StreamError(
        "SNAPSHOT_NOT_DECIDABLE",
        f"a snapshot of a {state} stream is provisional",
        hint="wait for the stream to finish",
    )


def error_class(code: str) -> type[OutputError]:
    """The exception class that carries ``code``."""
    return _CLASSES[ERROR_CODES[code].layer]


_IDENT: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def json_path(parts: Iterable[str | int], root: str = "$") -> str:
    """``$.a[0]["b c"]`` from ``("a", 0, "b c")``: the paths errors carry."""
    out = [root]
    for part in parts:
        if isinstance(part, int):
            out.append(f"[{part}]")
        elif _IDENT.match(part):
            out.append(f".{part}")
        else:
            out.append(f"[{json.dumps(part, ensure_ascii=False)}]")
    return "".join(out)


def new_error(code: str, message: str | None = None, **fields: Any) -> OutputError:
    """Build the error for ``code`` in its layer's class (used by both backends)."""
    return error_class(code)(code, message, **fields)


def at_call(error: OutputError, index: int, call_id: str, tool: str) -> OutputError:
    """``error`` with the call it is about named on it (``call_index``,
    ``call_id``, ``tool``), unless it already names one; returns ``error``."""
    if error.call_index is None:
        error.call_index = index
        error.call_id = redact_secrets(call_id)
        error.tool = redact_secrets(tool)
    return error


def in_batch(error: OutputError, batch: Iterable[Mapping[str, Any]]) -> OutputError:
    """``error`` with the batch it stopped listed on it (see :class:`OutputError`); returns ``error``."""
    error.batch = tuple(redact_value(dict(entry)) for entry in batch)
    return error
