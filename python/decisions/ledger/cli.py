"""``decisions ledger URL [RUN]``: a run's entries as a table (or ``--json``).

Without RUN it lists the ledger's runs. Exit codes: 0 shown, 1 a typed failure
(the database cannot be used, or the run has no calls), 2 a usage error.
"""

from __future__ import annotations

import argparse
import json
from datetime import datetime, timezone
from typing import Any, TextIO

from .._payload import dumps
from ..errors import OutputError
from . import open_ledger

__all__: list[str] = []  # internal to the package


def add_parser(sub: Any) -> None:
    """Register the ``ledger`` subcommand on an argparse subparsers object."""
    cmd = sub.add_parser("ledger", help="show a run's calls in an execution ledger (or list its runs)")
    cmd.add_argument("url", help="sqlite:///path.db or postgresql://...")
    cmd.add_argument("run", nargs="?", help="the run id (omit to list the runs)")
    cmd.add_argument("--json", action="store_true", help="print the entries as JSON")


def _time(value: float | None) -> str:
    if value is None:
        return "-"
    try:
        return datetime.fromtimestamp(value, tz=timezone.utc).strftime("%H:%M:%S.%f")[:-3]
    except (OverflowError, OSError, ValueError):  # a clock beyond any date (year 10000 on): the number itself
        return repr(value)


def _cell(text: str) -> str:
    """``text`` fit for a terminal: a control or format character (an escape
    sequence, a bidi override a model put in a call id) written as its escape."""
    return text if text.isprintable() else "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
    return "\n".join(lines)


def run(args: argparse.Namespace, out: TextIO) -> int:
    """Show the run (or the runs); 0 when shown, 1 on a typed failure, 2 on a bad URL."""
    try:
        ledger = open_ledger(args.url)
    except ValueError as error:
        out.write(f"decisions ledger: {error}\n")
        return 2
    except OutputError as error:
        out.write(json.dumps({"error": error.to_dict()}) + "\n" if args.json else f"{error.code}: {error.message}\n")
        return 1
    with ledger:
        try:
            if args.run is None:
                runs = ledger.runs()
                if args.json:
                    out.write(
                        json.dumps([{"run_id": r, "cancelled": c, "calls": n} for r, c, n in runs], indent=2) + "\n"
                    )
                else:
                    out.write(
                        _table(
                            ["run", "cancelled", "calls"],
                            [[_cell(r), "yes" if c else "no", str(n)] for r, c, n in runs],
                        )
                        + "\n"
                    )
                return 0
            entries = ledger.entries(args.run)
            cancelled = ledger.cancelled(args.run)
        except OutputError as error:
            out.write(
                json.dumps({"error": error.to_dict()}) + "\n" if args.json else f"{error.code}: {error.message}\n"
            )
            return 1
    if args.json:
        shown = {"run_id": args.run, "cancelled": cancelled, "entries": [e.to_dict() for e in entries]}
        try:
            text = json.dumps(shown, indent=2, ensure_ascii=False)
        except RecursionError:  # a result nested deeper than json.dumps goes: the same JSON on one line
            text = dumps(shown)
        out.write(text + "\n")
        return 0 if entries else 1
    rows = [
        [
            _cell(e.call_id),
            _cell(e.tool),
            e.state,
            str(e.attempt),
            _cell(e.worker or "-"),
            _time(e.decided_at),
            _time(e.claimed_at),
            _time(e.finished_at),
            e.result_status or "-",
            e.error.code if e.error is not None else "-",
        ]
        for e in entries
    ]
    header = ["call", "tool", "state", "attempt", "worker", "decided", "claimed", "finished", "result", "error"]
    out.write(f"run {_cell(args.run)}{' (cancelled)' if cancelled else ''}: {len(entries)} call(s)\n")
    out.write(_table(header, rows) + "\n")
    return 0 if entries else 1
