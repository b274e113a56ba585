"""Inspecting one recorded stream or body: the work behind ``decisions inspect``.

:func:`inspect_bytes` detects the format and the provider, assembles or
normalizes the recording, runs ``decide`` and returns the stable machine
shape (``shape_version`` 1); :func:`render` prints it for a person.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any, Final, TextIO

from . import _backend
from .detect import candidates
from .errors import OutputError
from .limits import Limits
from .providers import CANONICAL, DONE, PROVIDERS
from .recover.repair import repair_prompt
from .stream.wire import decode_json
from .types import NormalizedResponse
from .validate.decide import decide

__all__ = ["inspect_bytes", "detect_format", "EXIT_DECISION", "EXIT_FAILURE", "EXIT_USAGE"]

EXIT_DECISION: Final = 0
EXIT_FAILURE: Final = 1
EXIT_USAGE: Final = 2

#: Version of the ``--json`` shape; bumped only on incompatible changes.
JSON_SHAPE_VERSION: Final = 1
_PROVIDER_CHOICES: Final = ("auto", *PROVIDERS, CANONICAL)
#: Events shown in the readable view (the JSON view has them all).
_SHOWN_EVENTS: Final = 40


class UsageError(Exception):
    """A problem with the command line or its input file (exit code 2)."""


# ---------------------------------------------------------------- input


def detect_format(data: bytes) -> str:
    """``"sse"``, ``"jsonl"`` (one JSON value per line) or ``"body"`` (one JSON value)."""
    for raw in data.splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith((b"data:", b"event:", b"id:", b"retry:", b":")):
            return "sse"
        break
    lines = [line for line in data.splitlines() if line.strip()]
    if len(lines) > 1 and all(line.lstrip().startswith(b"{") and line.rstrip().endswith(b"}") for line in lines):
        try:
            json.loads(lines[0])
            return "jsonl"
        except ValueError:
            pass
    return "body"


def _first_payloads(data: bytes, fmt: str, limits: Limits | None) -> list[Any]:
    """The first few decoded payloads, for provider detection (lenient: detection only)."""
    texts: Sequence[str | bytes] = []
    if fmt == "sse":
        decoder = _backend.impl.SSEDecoder(limits=limits)
        try:
            events = decoder.feed(data[: 64 * 1024])
        except OutputError:
            events = []
        texts = [event.data for event in events[:8] if event.data.strip() != DONE]
    elif fmt == "jsonl":
        texts = [line for line in data.splitlines() if line.strip()][:8]
    else:
        texts = [data]
    payloads = []
    for text in texts:
        try:
            payloads.append(json.loads(text))
        except (ValueError, RecursionError):  # not a shape to tell: the chain names the error
            continue
    return payloads


def _detect(data: bytes, fmt: str, limits: Limits | None) -> str:
    if not data.strip():
        raise UsageError("the input is empty: nothing to inspect")
    for payload in _first_payloads(data, fmt, limits):
        found = candidates(payload, stream=fmt != "body")
        if len(found) == 1:
            return found[0]
        if found:
            raise UsageError(f"cannot tell the provider (it could be {', '.join(found)}); pass --provider")
    raise UsageError("cannot tell the provider of this input (no known shape); pass --provider")


# ---------------------------------------------------------------- the job


def _jsonable(value: Any, depth: int = 0) -> Any:
    """The JSON shape of events, responses, decisions and errors."""
    if depth > 200:
        return repr(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, OutputError):
        return value.to_dict()
    if hasattr(value, "to_dict") and callable(value.to_dict):
        return _jsonable(value.to_dict(), depth + 1)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        data: dict[str, Any] = {}
        kind = getattr(type(value), "kind", None)
        if isinstance(kind, str):
            data["kind"] = kind
        for field in dataclasses.fields(value):
            if field.repr:
                data[field.name] = _jsonable(getattr(value, field.name), depth + 1)
        return data
    if hasattr(value, "model_dump") and callable(value.model_dump):
        return value.model_dump(mode="json")
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(v, depth + 1) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return repr(value)


def _repair(error: OutputError) -> tuple[str | None, str | None]:
    """``(repair message, None)``, or ``(None, why it is not sent to the model)``."""
    try:
        return repair_prompt(error), None
    except ValueError as refused:
        return None, str(refused)


def _decide(response: NormalizedResponse, tools: Any, output: Any, policy: Any) -> Any:
    kwargs = {
        name: value for name, value in (("tools", tools), ("output", output), ("policy", policy)) if value is not None
    }
    return decide(response, **kwargs)


def _decision_failure(decision: Any) -> OutputError | None:
    """The first typed failure inside a decision (a denied call), if any."""
    for verdict in getattr(decision, "verdicts", ()):
        error = getattr(verdict, "error", None)
        if isinstance(error, OutputError) and getattr(verdict, "status", None) == "denied":
            return error
    return None


def inspect_bytes(
    data: bytes,
    *,
    provider: str = "auto",
    tools: Any = None,
    output: Any = None,
    policy: Any = None,
    limits: Limits | None = None,
    source: str = "<bytes>",
    accept_unterminated: bool = False,
) -> dict[str, Any]:
    """Run the whole chain over one recording; the ``--json`` shape:

    ``{"source", "format", "provider", "backend", "events": [canonical event
    dicts], "response": NormalizedResponse dict | null, "decision": dict |
    null, "error": OutputError.to_dict() | null, "stage": where it stopped
    ("stream" | "decide" | null), "repair_prompt": str | null (the message
    ``decisions.repair_prompt`` builds), "repair_refused": str | null (why the
    error is not sent back to the model, e.g. truncation), "unterminated_event":
    str | null (an SSE file that ends without the blank line closing its last
    event: that event's data), "exit_code"}``.

    With ``accept_unterminated``, such a file is read as if it ended with the
    blank line (saved recordings often lose it; a live stream never may).
    """
    fmt = detect_format(data)
    chosen = _detect(data, fmt, limits) if provider == "auto" else provider
    result: dict[str, Any] = {
        "source": source,
        "format": fmt,
        "provider": chosen,
        "backend": _backend.BACKEND,
        "events": [],
        "response": None,
        "decision": None,
        "error": None,
        "stage": None,
        "repair_prompt": None,
        "repair_refused": None,
        "unterminated_event": None,
        "exit_code": EXIT_DECISION,
    }
    if fmt == "sse":
        result["unterminated_event"] = _unterminated_event(data, limits)
        if accept_unterminated and result["unterminated_event"] is not None:
            data += b"\n\n"
    known = (*_backend.impl.PROVIDERS, "canonical")
    if chosen not in known:
        raise UsageError(
            f"the {_backend.BACKEND} backend does not know provider {chosen!r} (known: {', '.join(known)})"
        )
    events: list[Any] = []
    error: OutputError | None = None
    try:
        if fmt == "body":
            if chosen == "canonical":
                raise UsageError("a canonical recording is a stream of events, not one body")
            response = _backend.impl.normalize(data, provider=chosen, limits=limits)
        else:
            assembler = _backend.impl.StreamAssembler(chosen, limits=limits, keep_events=True)
            try:
                if fmt == "sse":
                    assembler.feed(data)
                else:
                    for line in data.splitlines():
                        if line.strip():
                            assembler.feed_event(_canonical(line) if chosen == "canonical" else line)
                        events.extend(assembler.take_events())
                response = assembler.finish()
            finally:
                events.extend(assembler.take_events())
    except OutputError as failure:
        error, result["stage"] = failure, "stream"
    else:
        result["response"] = _jsonable(response)
        try:
            decision = _decide(response, tools, output, policy)
        except OutputError as failure:
            error, result["stage"] = failure, "decide"
        else:
            result["decision"] = _jsonable(decision)
            error = _decision_failure(decision)
            if error is not None:
                result["stage"] = "decide"
    result["events"] = [_jsonable(event) for event in events]
    if error is not None:
        result["error"] = error.to_dict()
        result["repair_prompt"], result["repair_refused"] = _repair(error)
        result["exit_code"] = EXIT_FAILURE
    return result


def _unterminated_event(data: bytes, limits: Limits | None) -> str | None:
    """The data of the event an SSE file leaves open at its end, if any."""
    decoder = _backend.impl.SSEDecoder(limits=limits)
    try:
        decoder.feed(data)
        decoder.finish()
    except OutputError as error:
        if error.code != "SSE_UNTERMINATED_EVENT":
            return None
    else:
        return None
    closed = _backend.impl.SSEDecoder(limits=limits)
    try:
        events = closed.feed(data + b"\n\n")
    except OutputError:
        return None
    return events[-1].data if events else None


def _canonical(line: bytes) -> Any:
    return decode_json(line)


# ---------------------------------------------------------------- readable output


def _short(text: str, width: int = 100) -> str:
    text = text.replace("\n", "\\n")
    return text if len(text) <= width else text[: width - 1] + "…"


def _event_line(event: Mapping[str, Any]) -> str:
    fields = ", ".join(f"{k}={_short(json.dumps(v, ensure_ascii=False), 60)}" for k, v in event.items() if k != "type")
    return f"{event.get('type')}: {fields}"


def render(result: Mapping[str, Any], out: TextIO) -> None:
    """The readable view of one :func:`inspect_bytes` result."""
    w = out.write
    w(f"── {result['source']}  ({result['format']}, provider {result['provider']}, backend {result['backend']})\n")
    events = result["events"]
    if events:
        w(f"events ({len(events)}):\n")
        for event in events[:_SHOWN_EVENTS]:
            w(f"  {_event_line(event)}\n")
        if len(events) > _SHOWN_EVENTS:
            w(f"  … {len(events) - _SHOWN_EVENTS} more (--json shows all)\n")
    response = result["response"]
    if response is not None:
        w(
            f"response: id={response.get('response_id')} model={response.get('model')} "
            f"finish={response.get('finish_reason')} (raw {response.get('raw_finish_reason')})\n"
        )
        for item in response.get("items", []):
            if item.get("kind") == "tool_call":
                state = "" if item.get("complete", True) else "  [incomplete]"
                w(f"  tool_call {item.get('call_id')} {item.get('name')}({_short(item.get('arguments', ''))}){state}\n")
            else:
                w(f"  {item.get('kind')}: {_short(item.get('text', ''))}\n")
    decision = result["decision"]
    if decision is not None:
        w(f"decision: {decision.get('kind')}\n")
        for call, verdict in zip(decision.get("calls", []), decision.get("verdicts", [])):
            args = json.dumps(call.get("arguments"), ensure_ascii=False)
            w(f"  {call.get('call_id')} {call.get('name')}({_short(args, 80)}) -> {verdict.get('status')}\n")
        if decision.get("kind") == "final":
            w(f"  value: {_short(json.dumps(decision.get('value'), ensure_ascii=False))}\n")
    error = result["error"]
    if error is not None:
        where = []
        if error.get("path"):
            where.append(f"at {error['path']}")
        if error.get("lineno") is not None:
            where.append(f"line {error['lineno']} column {error['colno']} (char {error['offset']})")
        elif error.get("offset") is not None:
            where.append(f"offset {error['offset']}")
        w(
            f"error: {error['layer']}/{error['code']} (retryable: {str(error['retryable']).lower()}) "
            f"{' '.join(where)}\n  {error['message']}\n"
        )
        if error.get("hint"):
            w(f"  hint: {error['hint']}\n")
        if error["code"] == "SSE_UNTERMINATED_EVENT" and result.get("unterminated_event") is not None:
            w(
                "  the file ends without the blank line that closes its last event, which would have been:\n"
                f"    data: {_short(str(result['unterminated_event']))}\n"
                "  a saved recording often loses that line: --accept-unterminated reads the file as if it had it\n"
            )
        if result.get("repair_prompt"):
            w("repair message to the model:\n")
            for line in str(result["repair_prompt"]).splitlines():
                w(f"  | {line}\n")
        elif result.get("repair_refused"):
            w(f"not sent back to the model: {result['repair_refused']}\n")
    w(f"exit code for this recording: {result['exit_code']}\n\n")
