"""The embedded ledger: the standard library's ``sqlite3`` in WAL mode.

Safe across the processes of one machine (not across machines, and not on a
network file system): every step is a ``BEGIN IMMEDIATE`` transaction, so
writers queue on SQLite's own lock (waiting up to ``timeout`` seconds) and
each conditional update sees the last committed state. ``synchronous`` stays
at SQLite's default (FULL): a granted claim survives a power cut.
``?synchronous=normal`` trades that for speed (no fsync per transaction; a
claim still survives a crash of the process, not of the machine).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from typing import Any, Final

from ..errors import ResultError
from .ddl import create, tables

__all__: list[str] = []  # internal to the package

_DDL: Final = tables(real="REAL", serial="INTEGER PRIMARY KEY AUTOINCREMENT")


def sqlite_path(url: str) -> str:
    """The file of a ``sqlite:///relative``, ``sqlite:////absolute`` or
    ``sqlite:///:memory:`` URL (``sqlite://`` alone is in memory)."""
    rest = url[len("sqlite://") :].split("?", 1)[0]
    if rest in ("", "/", "/:memory:"):
        return ":memory:"
    if not rest.startswith("/"):
        raise ValueError(f"not a sqlite URL: {url!r} (use sqlite:///relative.db or sqlite:////absolute.db)")
    return rest[1:]


def _unavailable(url: str, error: sqlite3.Error) -> ResultError:
    return ResultError(
        "LEDGER_UNAVAILABLE", f"SQLite ledger {url}: {error}", hint="retry later; check the database file"
    )


class SQLiteDatabase:
    """One connection to a SQLite ledger file."""

    def __init__(self, url: str, *, timeout: float = 30.0) -> None:
        self.url = url
        path = sqlite_path(url)
        try:
            self._conn = sqlite3.connect(path, timeout=timeout, isolation_level=None, check_same_thread=False)
            if path != ":memory:":
                self._conn.execute("PRAGMA journal_mode=WAL")
            if url.endswith("?synchronous=normal"):
                self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.create_function("ledger_now", 0, time.time)
        except sqlite3.Error as error:
            raise _unavailable(url, error) from None
        self.run(self._setup)

    @staticmethod
    def _setup(cur: Any) -> None:
        create(cur, _DDL)

    def run(self, work: Callable[[Any], Any]) -> Any:
        """``work(cursor)`` in one write transaction; rolled back if it raises."""
        try:
            cur = self._conn.cursor()
            cur.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as error:
            raise _unavailable(self.url, error) from None
        try:
            value = work(cur)
            self._conn.execute("COMMIT")
            return value
        except BaseException as error:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            if isinstance(error, sqlite3.OperationalError):
                raise _unavailable(self.url, error) from None
            raise

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()
