"""Completion checks (seed 000, 12.2): a final answer against what really happened.

A :class:`~decisions.decision.FinalDecision` says the model answered; it never
says the task is done. :func:`check_completion` holds the answer against the
ledger: every cited evidence resolves to a committed call of this run, the
files the answer says it changed are exactly those the committed calls'
*checked* effects changed and are still as the last of those calls left them
(looked at again under each :class:`FileEffects` root), no call of the run is still pending
(a retry-safe failure, which a worker may claim again, is pending too), and every
acceptance criterion passes. Otherwise it raises one
:class:`~decisions.errors.CompletionError` whose ``issues`` name each failed
check (its ``code`` is the first of them).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any

from ..errors import CompletionError
from ..validate.decision import FinalDecision
from .core import Ledger
from .records import Entry
from .results import Effect, FileEffects, file_digest
from .states import PENDING

__all__ = ["Criterion", "check_completion"]

#: ``criterion(value, entries)`` returns True (or None) to pass, False or a
#: reason to fail; if it raises or returns anything else (``0``, a numpy bool,
#: a list), it failed. Its ``__name__`` names it in the error.
Criterion = Callable[[Any, Sequence[Entry]], "bool | str | None"]


def _issue(path: str, code: str, expected: str, detail: str) -> dict[str, str]:
    return {"path": path, "code": code, "expected": expected, "detail": detail}


def _criterion_name(criterion: Criterion, index: int) -> str:
    """The name a criterion is reported by: its ``__name__`` when that is
    text, else its position (reading a broken name never escapes)."""
    try:
        name = criterion.__name__
    except Exception:  # none (a partial, a callable object), or a property that raises: no name
        name = None
    return str.__str__(name) if isinstance(name, str) else f"criterion {index}"


def _retried(entry: Entry) -> bool:
    """A failed call the ledger grants again (``claim``, ``claim_next``): its
    result said a retry is safe and the error that failed it is retryable."""
    return (
        entry.state == "failed"
        and entry.result is not None
        and entry.result.retry_safe
        and (entry.error is None or entry.error.retryable)
    )


def _changed_since(ledger: Ledger, entries: Sequence[Entry]) -> list[str]:
    """What is wrong with every file whose last checked effect (the latest
    committed call's, per :class:`FileEffects` root) is no longer what is there."""
    last: dict[tuple[str, str], tuple[float, str, Effect]] = {}
    for entry in entries:
        tool = ledger.tool(entry.tool)
        if entry.state != "committed" or tool is None or not isinstance(tool.effects, FileEffects):
            continue
        for effect in entry.effects:
            key = (tool.effects.root, os.path.normpath(effect.path))
            if key not in last or last[key][0] <= (entry.finished_at or 0.0):
                last[key] = (entry.finished_at or 0.0, entry.call_id, effect)
    out: list[str] = []
    for (root, path), (_, call_id, effect) in sorted(last.items()):
        base = os.path.realpath(root)
        try:  # a path that cannot be looked up (a NUL a check without a workspace let through) is missing
            target = os.path.realpath(os.path.join(base, path))
            inside = os.path.commonpath([base, target]) == base
            if not inside or not os.path.lexists(target):
                actual = None
            else:
                actual = file_digest(target) if os.path.isfile(target) else "something that is not a file"
        except (OSError, ValueError):
            actual = None
        if actual != effect.digest:
            now = "missing" if actual is None else f"has {actual}"
            out.append(f"{path!r} {now}, not what {call_id!r} left it ({effect.digest or 'deleted'})")
    return out


def check_completion(
    final: FinalDecision,
    *,
    ledger: Ledger,
    run_id: str,
    evidence: Iterable[str] = (),
    changed_files: Collection[str] | None = None,
    criteria: Iterable[Criterion] = (),
) -> tuple[Entry, ...]:
    """Check ``final`` against the ledger's record of ``run_id``; returns the
    run's entries when every check passes, else raises ``EVIDENCE_NOT_FOUND``,
    ``CLAIM_NOT_BACKED``, ``SIDE_EFFECTS_PENDING`` or ``ACCEPTANCE_FAILED``
    (the first that failed), with an issue for every failed check."""
    if not isinstance(final, FinalDecision):
        raise TypeError("check_completion takes a FinalDecision")
    if isinstance(evidence, str) or isinstance(changed_files, str):
        raise TypeError("evidence and changed_files take a collection of call ids and of paths, not one string")
    if changed_files is not None:  # read once: a generator would be spent by the first pass over it
        changed_files = tuple(changed_files)
    entries = ledger.entries(run_id)
    by_id = {e.call_id: e for e in entries}
    issues: list[dict[str, str]] = []
    for index, ref in enumerate(evidence):  # often the answer's own words: any value is judged, none raises
        entry = by_id.get(ref) if isinstance(ref, str) else None
        if entry is None or entry.state != "committed":
            found = "not a call of this run" if entry is None else f"{entry.state}, not committed"
            issues.append(
                _issue(
                    f"$.evidence[{index}]", "EVIDENCE_NOT_FOUND", "a committed call of this run", f"{ref!r}: {found}"
                )
            )
    if changed_files is not None:
        done = {os.path.normpath(e.path) for entry in entries if entry.state == "committed" for e in entry.effects}
        said = {os.path.normpath(p) for p in changed_files if isinstance(p, str) and p}
        for path in changed_files:
            if not isinstance(path, str) or not path:
                issues.append(
                    _issue(
                        "$.changed_files",
                        "CLAIM_NOT_BACKED",
                        "a file a committed call's checked effect changed",
                        f"{path!r} is not a path",
                    )
                )
        for path in sorted(said - done):
            issues.append(
                _issue(
                    "$.changed_files",
                    "CLAIM_NOT_BACKED",
                    "a file a committed call's checked effect changed",
                    f"{path!r} was not changed by any committed call",
                )
            )
        for path in sorted(done - said):
            issues.append(
                _issue(
                    "$.changed_files",
                    "CLAIM_NOT_BACKED",
                    "every file the run changed",
                    f"{path!r} was changed but is not listed",
                )
            )
        for detail in _changed_since(ledger, entries):
            issues.append(_issue("$.changed_files", "CLAIM_NOT_BACKED", "the files as the run left them", detail))
    for entry in entries:
        if entry.state in PENDING or _retried(entry):
            again = " and may be claimed again (a retry-safe failure)" if entry.state == "failed" else ""
            issues.append(
                _issue(
                    f"$.calls[{entry.seq}]",
                    "SIDE_EFFECTS_PENDING",
                    "every call ended",
                    f"{entry.call_id!r} ({entry.tool}) is {entry.state}{again}",
                )
            )
    for index, criterion in enumerate(criteria):
        name = _criterion_name(criterion, index)
        try:
            outcome = criterion(final.value, entries)
        except Exception as error:  # fail closed: a broken criterion did not pass
            outcome = f"raised {type(error).__name__}"
        if outcome is True or outcome is None:
            continue
        if isinstance(outcome, str):
            reason = str.__str__(outcome)  # the text itself, never a subclass's overrides
        elif outcome is False:
            reason = "returned False"
        else:  # fail closed: 0, numpy.False_, a list... are not a pass
            reason = f"returned {type(outcome).__name__}, not True, None, False or a reason"
        issues.append(_issue(f"$.criteria[{index}]", "ACCEPTANCE_FAILED", f"{name} to pass", f"{name}: {reason}"))
    if issues:
        first = issues[0]
        summary = "; ".join(f"{i['code']}: {i['detail']}" for i in issues[:5])
        more = f" (and {len(issues) - 5} more)" if len(issues) > 5 else ""
        raise CompletionError(
            first["code"],
            f"the task is not complete: {summary}{more}",
            path=first["path"],
            issues=tuple(issues),
            hint="finish or fix the open work before answering",
        )
    return entries
