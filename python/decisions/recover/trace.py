"""Parse records and redaction.

:func:`parse_record` builds one record per response as a plain dict with the
documented shape below, ready for ``logging``, a JSON log line or
OpenTelemetry span attributes (every value is a str, int, float, bool or
None). Raw responses are referenced by their sha256 digest and size, never
copied into the record.

Record shape (``RECORD_FIELDS``, in order):

=========================  =====================================================
``record_version``         ``1``
``run_id``                 the caller's run id, or None
``response_id``            the provider's response id
``provider``               ``openai-chat``, ``openai-responses``, ``anthropic``, ...
``model``                  the model the provider reported
``strategy``               ``native_structured_output`` / ``tool_structured_response`` / ``json_text``
``schema_id``              e.g. ``agent.decision``
``schema_version``         e.g. ``2.1.0``
``sent_schema_digest``     ``sha256:...`` of the schema sent (from the request record)
``event_count``            stream events consumed (None for a whole body)
``parse_duration_ms``      time spent parsing / assembling
``validation_duration_ms`` time spent in schema, domain and policy checks
``finish_reason``          the normalized finish reason
``decision_kind``          ``tool`` / ``final`` / None on error
``tool_call_count``        number of tool calls in the decision (0 for final)
``repaired``               deterministic fixes applied (comma-separated) or None
``repair_attempt``         0 for the first answer, n for the n-th repair
``error_layer``            the failing layer, or None
``error_code``             the stable error code, or None
``error_path``             the JSON path of the error, or None
``raw_digest``             ``sha256:...`` of the raw response bytes, or None
``raw_bytes``              size of the raw response in bytes, or None
``library_version``        this package's version
=========================  =====================================================

:class:`Redactor` masks credentials (the token formats and credential
members of ``decisions._redact``: provider API keys, cloud and VCS tokens,
JWTs, private keys, passwords) in any text and any configured field name in
nested data; every string that goes into a record passes through it.
"""

from __future__ import annotations

import hashlib
import re
import time
from dataclasses import dataclass, field
from typing import Any, Final, Iterable, Mapping

from .._redact import REDACTED, redact_secrets, redact_with_offset
from .._version import __version__
from ..errors import OutputError
from ..limits import count, seconds
from ..types import FixedResponse

__all__ = [
    "RECORD_FIELDS",
    "Redactor",
    "parse_record",
    "DEFAULT_FIELDS",
]

RECORD_FIELDS: Final[tuple[str, ...]] = (
    "record_version",
    "run_id",
    "response_id",
    "provider",
    "model",
    "strategy",
    "schema_id",
    "schema_version",
    "sent_schema_digest",
    "event_count",
    "parse_duration_ms",
    "validation_duration_ms",
    "finish_reason",
    "decision_kind",
    "tool_call_count",
    "repaired",
    "repair_attempt",
    "error_layer",
    "error_code",
    "error_path",
    "raw_digest",
    "raw_bytes",
    "library_version",
)

#: Field names masked by default wherever they appear in nested data.
DEFAULT_FIELDS: Final = frozenset(
    {
        "api_key",
        "apikey",
        "authorization",
        "x-api-key",
        "x-goog-api-key",
        "password",
        "secret",
        "token",
        "access_token",
        "refresh_token",
    }
)


@dataclass(frozen=True, slots=True)
class Redactor:
    """Masks credentials in text and configured fields in data.

    ``fields`` are compared case-insensitively with ``-`` and ``_`` treated
    alike; their values are replaced whole. ``patterns`` are extra regular
    expressions to mask in every string.
    """

    fields: frozenset[str] = DEFAULT_FIELDS
    patterns: tuple[re.Pattern[str], ...] = ()
    _folded: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", frozenset(self.fields))
        object.__setattr__(self, "_folded", frozenset(_fold(name) for name in self.fields))

    def with_fields(self, names: Iterable[str]) -> Redactor:
        """A redactor that also masks ``names``."""
        return Redactor(self.fields | frozenset(names), self.patterns)

    def redact_text(self, text: str) -> str:
        """``text`` with every credential shape masked."""
        return redact_secrets(text, self.patterns)

    def redact_with_offset(self, text: str, offset: int) -> tuple[str, int]:
        """``text`` masked, and where ``offset`` lands in it."""
        return redact_with_offset(text, offset, self.patterns)

    def redact(self, value: Any) -> Any:
        """A copy of ``value`` (dicts, lists, tuples, strings) with configured
        fields and credential shapes masked. Iterative: nesting depth costs no
        stack."""
        root: list[Any] = [None]
        stack: list[tuple[Any, Any, Any]] = [(value, root, 0)]
        while stack:
            item, parent, key = stack.pop()
            if isinstance(item, str):
                parent[key] = self.redact_text(item)
            elif isinstance(item, Mapping):
                out: dict[Any, Any] = {}
                parent[key] = out
                for name, sub in item.items():
                    clean_name = self.redact_text(name) if isinstance(name, str) else name
                    if isinstance(name, str) and _fold(name) in self._folded:
                        out[clean_name] = REDACTED
                    else:
                        out[clean_name] = None
                        stack.append((sub, out, clean_name))
            elif isinstance(item, (list, tuple)):
                seq: list[Any] = [None] * len(item)
                parent[key] = seq
                stack.extend((sub, seq, i) for i, sub in enumerate(item))
            else:
                parent[key] = item
        return root[0]

    def error_dict(self, error: OutputError) -> dict[str, Any]:
        """``error.to_dict()`` with credentials and configured fields masked."""
        return self.redact(error.to_dict())  # type: ignore[no-any-return]


def _fold(name: str) -> str:
    return name.lower().replace("-", "_")


def digest(raw: bytes | bytearray | memoryview | str) -> str:
    """``sha256:<hex>`` of the raw response (text is hashed as UTF-8)."""
    return "sha256:" + hashlib.sha256(_raw_bytes(raw)).hexdigest()


def _raw_bytes(raw: bytes | bytearray | memoryview | str) -> bytes:
    """The bytes of a raw response (text as UTF-8): what a str or bytes-like
    value holds, not what a subclass's own ``encode`` or ``__bytes__`` says."""
    if isinstance(raw, str):
        return str.encode(raw, "utf-8", "surrogatepass")
    return bytes(memoryview(raw))


class Stopwatch:
    """Milliseconds between ``start()`` (or construction) and ``ms()``."""

    __slots__ = ("_start",)

    def __init__(self) -> None:
        self._start = time.perf_counter()

    def start(self) -> None:
        self._start = time.perf_counter()

    def ms(self) -> float:
        return round((time.perf_counter() - self._start) * 1000.0, 3)


def _decision_kind(decision: Any) -> tuple[str | None, int]:
    if decision is None:
        return None, 0
    calls = getattr(decision, "calls", None)
    kind = getattr(decision, "kind", None)
    if not isinstance(kind, str):
        kind = "tool" if calls is not None else "final"
    return kind, len(calls) if calls is not None else 0


def parse_record(
    *,
    response: Any = None,
    decision: Any = None,
    error: OutputError | None = None,
    request: Any = None,
    strategy: str | None = None,
    schema_id: str | None = None,
    schema_version: str | None = None,
    event_count: int | None = None,
    parse_duration_ms: float | None = None,
    validation_duration_ms: float | None = None,
    repair_attempt: int = 0,
    repaired: Iterable[str] = (),
    raw: bytes | bytearray | memoryview | str | None = None,
    run_id: str | None = None,
    provider: str | None = None,
    redactor: Redactor | None = None,
) -> dict[str, Any]:
    """One parse record (see the module docstring for the shape).

    ``response`` is a :class:`~decisions.types.NormalizedResponse` (or
    snapshot) for its id, provider, model and finish reason; ``decision`` a
    tool or final decision; ``error`` the failure, if any; ``request`` the
    :class:`~decisions.request.requests.RequestRecord` of the output or tool schema
    (strategy, schema id and version, sent digest); ``raw`` the raw bytes,
    digested here and not kept. Every string is passed through ``redactor``.
    """
    redactor = redactor or Redactor()
    if isinstance(response, FixedResponse):  # its fixes are what the record's "repaired" names
        repaired = tuple(dict.fromkeys((*repaired, *response.applied)))
        response = response.response
    # the record's numbers are written to JSON logs and span attributes: no NaN, no infinity, no negative count
    if event_count is not None:
        count("event_count", event_count, minimum=0)
    count("repair_attempt", repair_attempt, minimum=0)
    for name, duration in (
        ("parse_duration_ms", parse_duration_ms),
        ("validation_duration_ms", validation_duration_ms),
    ):
        if duration is not None:
            seconds(name, duration, zero=True, unit="milliseconds")
    kind, calls = _decision_kind(decision)
    if request is not None:
        strategy = strategy or getattr(request, "strategy", None)
        schema_id = schema_id or getattr(request, "schema_id", None)
        schema_version = schema_version or getattr(request, "schema_version", None)
    raw_bytes = None
    if raw is not None:
        raw_bytes = len(_raw_bytes(raw))
    repaired_list = list(repaired) or list(getattr(decision, "repaired", ()) or ())
    record: dict[str, Any] = {
        "record_version": 1,
        "run_id": run_id,
        "response_id": getattr(response, "response_id", None),
        "provider": provider or getattr(response, "provider", None) or getattr(request, "provider", None),
        "model": getattr(response, "model", None),
        "strategy": strategy,
        "schema_id": schema_id,
        "schema_version": schema_version,
        "sent_schema_digest": getattr(request, "sent_digest", None),
        "event_count": event_count,
        "parse_duration_ms": parse_duration_ms,
        "validation_duration_ms": validation_duration_ms,
        "finish_reason": getattr(response, "finish_reason", None),
        "decision_kind": kind,
        "tool_call_count": calls,
        "repaired": ",".join(repaired_list) or None,
        "repair_attempt": repair_attempt,
        "error_layer": error.layer if error is not None else None,
        "error_code": error.code if error is not None else None,
        "error_path": error.path if error is not None else None,
        "raw_digest": digest(raw) if raw is not None else None,
        "raw_bytes": raw_bytes,
        "library_version": __version__,
    }
    return {name: (redactor.redact_text(value) if isinstance(value, str) else value) for name, value in record.items()}
