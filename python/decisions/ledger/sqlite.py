"""The embedded ledger: the standard library's ``sqlite3`` in WAL mode.

Safe across the processes of one machine (not across machines, and not on a
network file system): every step is a ``BEGIN IMMEDIATE`` transaction, so
writers queue on SQLite's own lock (its busy timeout: up to ``timeout``
seconds, no sleeping loop of ours) and each conditional update sees the last
committed state.

Durability: WAL with ``synchronous=NORMAL`` by default. A committed step
survives the crash of any process (a SIGKILLed worker loses nothing it
committed), and the file is never corrupted; a power cut or an OS crash may
lose the last steps committed before it (the WAL is synced at checkpoints,
not at every commit), so a claim granted just before may be granted again
after the reboot. ``?synchronous=full`` syncs the WAL at every commit (a
granted claim survives a power cut) at the cost of an fsync per step.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from typing import Any, Final

from ..errors import ResultError
from ..limits import seconds
from .ddl import create, storable, tables, unencodable

__all__: list[str] = []  # internal to the package

#: The longest wait for a lock, in seconds: what a 32-bit count of
#: milliseconds holds (SQLite's busy timeout, PostgreSQL's ``lock_timeout``).
MAX_TIMEOUT: Final = (2**31 - 1) / 1000

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


def _synchronous(url: str) -> str:
    """The ``synchronous`` setting a URL asks for: ``?synchronous=full`` or ``normal`` (the default)."""
    query = url.split("?", 1)[1] if "?" in url else ""
    if query in ("", "synchronous=normal"):
        return "NORMAL"
    if query == "synchronous=full":
        return "FULL"
    raise ValueError(f"unsupported SQLite ledger option {query!r}: use ?synchronous=normal or ?synchronous=full")


def _unavailable(url: str, error: sqlite3.Error) -> ResultError:
    return ResultError(
        "LEDGER_UNAVAILABLE", f"SQLite ledger {url}: {error}", hint="retry later; check the database file"
    )


def _columns(cur: Any, table: str) -> set[str]:
    """The column names of ``table``."""
    cur.execute(f"PRAGMA table_info({table})")
    return {row[1] for row in cur.fetchall()}


class _Cursor:
    """A sqlite3 cursor that refuses what PostgreSQL could not store (see :func:`.ddl.storable`)."""

    __slots__ = ("_cur",)

    def __init__(self, cur: sqlite3.Cursor) -> None:
        self._cur = cur

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        try:
            return self._cur.execute(sql, storable(params))
        except UnicodeEncodeError:
            raise unencodable() from None

    def fetchone(self) -> Any:
        return self._cur.fetchone()

    def fetchall(self) -> list[Any]:
        return self._cur.fetchall()


class SQLiteDatabase:
    """One connection to a SQLite ledger file."""

    writable_cte = False

    def __init__(self, url: str, *, timeout: float = 30.0) -> None:
        wait = min(seconds("timeout", timeout, zero=True), MAX_TIMEOUT)
        self.url = url
        path = sqlite_path(url)
        try:
            self._conn = sqlite3.connect(path, timeout=wait, isolation_level=None, check_same_thread=False)
            if path != ":memory:":
                self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=" + _synchronous(url))
            self._conn.create_function("ledger_now", 0, time.time)
        except sqlite3.Error as error:
            raise _unavailable(url, error) from None
        try:
            self.run(self._setup)
        except BaseException:  # a ledger refused (another version, tables it cannot use) leaves no connection open
            self._conn.close()
            raise

    @staticmethod
    def _setup(cur: Any) -> None:
        create(cur, _DDL, _columns)

    def run(self, work: Callable[[Any], Any], *, single: bool = False) -> Any:
        """``work(cursor)`` in one write transaction, ``single`` or not;
        rolled back if it raises."""
        try:
            cur = self._conn.cursor()
            cur.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as error:  # locked, unreadable, or the connection was closed
            raise _unavailable(self.url, error) from None
        try:
            value = work(_Cursor(cur))
            self._conn.execute("COMMIT")
            return value
        except BaseException as error:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            if isinstance(error, sqlite3.OperationalError) or type(error) is sqlite3.DatabaseError:  # locked, corrupt
                raise _unavailable(self.url, error) from None
            if isinstance(error, sqlite3.Error):  # tables of another shape (a constraint, a trigger): not transient
                raise ResultError(
                    "LEDGER_UNAVAILABLE",
                    f"SQLite ledger {self.url}: {type(error).__name__}: {error}",
                    retryable=False,
                    hint="the ledger's tables are not what this version writes: check the database's schema",
                ) from None
            raise

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()
