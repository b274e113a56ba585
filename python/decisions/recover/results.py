"""Tool results: paired with their calls by call id, and shaped as each
provider expects them back.

A :class:`ResultBook` is one :class:`~decisions.validate.decision.ToolDecision`
recorded in the execution ledger (a SQLite ledger in memory of its own by
default, or the host's): :meth:`ResultBook.add` claims the call and commits
its result, so it holds exactly what :class:`~decisions.ledger.Ledger` holds.
A result for a call the decision does not hold is ``UNKNOWN_CALL_ID``, a
second result for an answered call is ``DUPLICATE_RESULT`` (except after a
retry-safe failure: the call is open again, and the retry's result is the
next attempt's, which replaces the failure), a result for a
call that may not run (denied, waiting for approval, cancelled run) is
``NOT_CLAIMED``; a rejected result changes nothing, so a late or repeated
delivery can be retried safely. Tool output is data: it is passed on
verbatim (a string as is, anything else as JSON text) and nothing in it is
parsed or changes any decision.
"""

from __future__ import annotations

import threading
import uuid
from typing import Any, Final

from ..errors import DomainError, ResultError
from ..ledger.core import Ledger, error_content
from ..ledger.messages import RESULT_PROVIDERS, result_messages, written
from ..ledger.records import Entry
from ..ledger.results import ResultStatus, ToolResult
from ..ledger.sqlite import SQLiteDatabase
from ..validate.decision import ToolCall, ToolDecision

__all__ = ["ToolResult", "ResultBook", "ResultStatus", "result_messages", "RESULT_PROVIDERS"]

#: The worker name a book's claims carry in the ledger's audit.
WORKER: Final = "result-book"
_ENDED: Final = ("committed", "failed", "denied")


class ResultBook:
    """The results of one tool decision, paired with its calls by id and
    kept in ``ledger`` under ``run_id`` (defaults: a SQLite ledger in memory,
    a fresh run id). A denied call is answered by its verdict. Thread-safe."""

    __slots__ = ("decision", "ledger", "run_id", "_calls", "_lock")

    def __init__(self, decision: ToolDecision, *, ledger: Ledger | None = None, run_id: str | None = None) -> None:
        self.decision = decision
        self.ledger = ledger if ledger is not None else Ledger(SQLiteDatabase("sqlite://"))
        self.run_id = run_id if run_id is not None else f"run-{uuid.uuid4().hex}"
        self._calls: dict[str, ToolCall] = {c.call_id: c for c in decision.calls}
        self._lock = threading.Lock()
        self.ledger.record(decision, run_id=self.run_id)

    def add(self, result: ToolResult) -> ToolResult:
        """Accept ``result``; raise ``UNKNOWN_CALL_ID``, ``DUPLICATE_RESULT``
        or ``NOT_CLAIMED`` (leaving the book unchanged) when it does not pair
        with an open call. A result that fails the tool's result checks is
        accepted and ends the call ``failed``; after a retry-safe failure
        (``retry_safe=True`` and a retryable error) the call is open again and
        the next result is its retry's, one result per attempt."""
        if result.call_id not in self._calls:
            raise DomainError(
                "UNKNOWN_CALL_ID",
                f"no call {result.call_id!r} in this decision",
                path="$.call_id",
                hint="answer only the calls of this decision",
            )
        with self._lock:
            claim = self.ledger.claim(result.call_id, run_id=self.run_id, worker=WORKER)
            if claim.reason in ("committed", "failed", "leased", "unknown"):
                raise DomainError(
                    "DUPLICATE_RESULT",
                    f"call {result.call_id!r} already has a result",
                    path="$.call_id",
                    hint="each call takes exactly one result",
                )
            if not claim.granted:
                raise ResultError(
                    "NOT_CLAIMED",
                    f"call {result.call_id!r} may not run ({claim.reason})",
                    path="$.call_id",
                    hint="answer only the calls that were allowed to run",
                )
            self.ledger.commit(claim, result)
            return result

    def get(self, call_id: str) -> ToolResult | None:
        """The accepted result for ``call_id``, or None."""
        if call_id not in self._calls:
            return None
        return self.ledger.entry(call_id, run_id=self.run_id).result

    @property
    def pending(self) -> tuple[str, ...]:
        """Call ids without a result (or a denying verdict), in call order."""
        return tuple(e.call_id for e in self._entries() if e.state not in _ENDED)

    @property
    def complete(self) -> bool:
        """True when every call has its result (or was denied)."""
        return not self.pending

    @property
    def results(self) -> tuple[ToolResult, ...]:
        """The accepted results, in call order (not arrival order)."""
        return tuple(e.result for e in self._entries() if e.result is not None)

    def _entries(self) -> tuple[Entry, ...]:
        """This decision's calls as the ledger holds them (the run may hold others)."""
        return tuple(e for e in self.ledger.entries(self.run_id) if e.call_id in self._calls)

    def messages(self, provider: str) -> list[dict[str, Any]]:
        """The provider-shaped message(s) carrying every result back, in
        call order: each result verbatim, a denied call's verdict as an
        error. Every call must be answered (ValueError otherwise): the
        providers reject a turn with an unanswered call. A result is held
        to the ledger's ``max_result_bytes`` (:meth:`add` ends a call whose
        result exceeds it ``failed`` with ``RESULT_TOO_LARGE``)."""
        entries = self._entries()
        pending = [e.call_id for e in entries if e.state not in _ENDED]
        if pending:
            raise ValueError(f"calls without a result: {pending}")
        pairs = [
            (self._calls[e.call_id], e.result or ToolResult(e.call_id, "error", error_content(e))) for e in entries
        ]
        notes = [e.call_id for e in entries if e.result is None]
        return written(provider, pairs, self.ledger.limits, notes)
