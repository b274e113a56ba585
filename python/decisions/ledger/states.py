"""The state machine of one recorded call, as a table.

Every change of a call's state in the ledger is one row of
:data:`TRANSITIONS`: ``(state, event) -> new state``. The database applies a
row with a conditional update (``WHERE state = ...``), so two workers cannot
both make the same step; :func:`step` is what the code and the README consult.
"""

from __future__ import annotations

from typing import Final, Literal, Mapping

__all__ = ["CallState", "TRANSITIONS", "STATES", "transition_table"]

#: ``decided``: allowed, not started. ``denied``: refused by policy or by an
#: approver. ``awaiting_approval``: waits for :meth:`Ledger.approve`.
#: ``approved``: may start. ``executing``: claimed by a worker under a lease.
#: ``committed``/``failed``: ended with a result. ``unknown``: a call with side
#: effects whose worker vanished; only :meth:`Ledger.reconcile` moves it on.
CallState = Literal["decided", "denied", "awaiting_approval", "approved", "executing", "committed", "failed", "unknown"]
STATES: Final[tuple[CallState, ...]] = (
    "decided",
    "denied",
    "awaiting_approval",
    "approved",
    "executing",
    "committed",
    "failed",
    "unknown",
)

Event = Literal[
    "approve",  # an approver allows a call that waits
    "reject",  # an approver refuses it
    "claim",  # a worker wins the call (attempt + 1, lease starts)
    "reclaim",  # the lease expired on a call without side effects (or idempotent): claimed again
    "lease_expired",  # the lease expired on a call with side effects: nobody knows what happened
    "commit_ok",  # a result that passed the result checks
    "commit_failed",  # an error result, or one that failed the result checks
    "retry",  # a failed call whose result said it is safe to retry, with a retryable error, is claimed again
    "reconcile_ok",  # the host established that the call took effect
    "reconcile_failed",  # ... that it failed
    "reconcile_retry",  # ... that it did not happen and may run again
]

#: The whole state machine. Anything not in this table is ``INVALID_TRANSITION``
#: (or, for claims and commits, a refused claim / a late or duplicate result).
TRANSITIONS: Final[Mapping[tuple[CallState, Event], CallState]] = {
    ("awaiting_approval", "approve"): "approved",
    ("awaiting_approval", "reject"): "denied",
    ("decided", "claim"): "executing",
    ("approved", "claim"): "executing",
    ("executing", "reclaim"): "executing",
    ("executing", "lease_expired"): "unknown",
    ("executing", "commit_ok"): "committed",
    ("executing", "commit_failed"): "failed",
    ("failed", "retry"): "executing",
    ("unknown", "reconcile_ok"): "committed",
    ("unknown", "reconcile_failed"): "failed",
    ("unknown", "reconcile_retry"): "decided",
}

#: States a call may be claimed from (``failed`` only when its result was retry-safe and
#: its error retryable: never a partial effect or a result that failed its checks,
#: ``executing`` only when the lease expired and the call has no side effects).
CLAIMABLE: Final[tuple[CallState, ...]] = ("decided", "approved")
#: States that keep a run from being complete: a call that may still run
#: (one waiting for an approval too: approved, it runs after the answer).
PENDING: Final[tuple[CallState, ...]] = ("decided", "awaiting_approval", "approved", "executing", "unknown")


def step(state: CallState, event: Event) -> CallState | None:
    """The state after ``event`` in ``state``, or None when the table has no such step."""
    return TRANSITIONS.get((state, event))


def transition_table() -> str:
    """The state machine as a Markdown table (state, event, next state)."""
    rows = ["| state | event | next state |", "|---|---|---|"]
    rows += [f"| `{s}` | {e} | `{n}` |" for (s, e), n in TRANSITIONS.items()]
    return "\n".join(rows)
