"""Tool results: paired with their calls by call id, and shaped as each
provider expects them back.

A :class:`ResultBook` is opened on one :class:`~decisions.validate.decision.ToolDecision`.
It accepts one :class:`ToolResult` per call id: a result for a call the
decision does not hold is ``UNKNOWN_CALL_ID``, a second result for an
answered call is ``DUPLICATE_RESULT``; a rejected result changes nothing, so
a late or repeated delivery can be retried safely. Tool output is data: it
is passed on verbatim (a string as is, anything else as JSON text) and
nothing in it is parsed or changes any decision.
"""

from __future__ import annotations

import threading
from typing import Any

from ..errors import DomainError
from ..ledger.messages import RESULT_PROVIDERS, result_messages
from ..ledger.results import ResultStatus, ToolResult
from ..validate.decision import ToolCall, ToolDecision

__all__ = ["ToolResult", "ResultBook", "ResultStatus", "result_messages", "RESULT_PROVIDERS"]


class ResultBook:
    """The results of one tool decision, paired with its calls by id. Thread-safe."""

    __slots__ = ("decision", "_calls", "_results", "_lock")

    def __init__(self, decision: ToolDecision) -> None:
        self.decision = decision
        self._calls: dict[str, ToolCall] = {c.call_id: c for c in decision.calls}
        self._results: dict[str, ToolResult] = {}
        self._lock = threading.Lock()

    def add(self, result: ToolResult) -> ToolResult:
        """Accept ``result``; raise ``UNKNOWN_CALL_ID`` or ``DUPLICATE_RESULT``
        (leaving the book unchanged) when it does not pair with an open call."""
        with self._lock:
            if result.call_id not in self._calls:
                raise DomainError(
                    "UNKNOWN_CALL_ID",
                    f"no call {result.call_id!r} in this decision",
                    path="$.call_id",
                    hint="answer only the calls of this decision",
                )
            if result.call_id in self._results:
                raise DomainError(
                    "DUPLICATE_RESULT",
                    f"call {result.call_id!r} already has a result",
                    path="$.call_id",
                    hint="each call takes exactly one result",
                )
            self._results[result.call_id] = result
            return result

    def get(self, call_id: str) -> ToolResult | None:
        """The accepted result for ``call_id``, or None."""
        with self._lock:
            return self._results.get(call_id)

    @property
    def pending(self) -> tuple[str, ...]:
        """Call ids without a result, in call order."""
        with self._lock:
            return tuple(c for c in self._calls if c not in self._results)

    @property
    def complete(self) -> bool:
        return not self.pending

    @property
    def results(self) -> tuple[ToolResult, ...]:
        """The accepted results, in call order (not arrival order)."""
        with self._lock:
            return tuple(self._results[c] for c in self._calls if c in self._results)

    def messages(self, provider: str) -> list[dict[str, Any]]:
        """The provider-shaped message(s) carrying every result back, in
        call order. Every call must have its result (ValueError otherwise):
        the providers reject a turn with an unanswered call."""
        pending = self.pending
        if pending:
            raise ValueError(f"calls without a result: {list(pending)}")
        return result_messages(provider, [(self._calls[r.call_id], r) for r in self.results])
