"""The distributed ledger: PostgreSQL through psycopg 3 (``pip install
decisions[postgres]``).

Many workers on many machines share one database; PostgreSQL is the only
arbiter. Each step is one transaction at READ COMMITTED: a conditional
``UPDATE`` that two workers race on is serialised by the row lock, and the
loser re-checks the condition against the winner's committed row, so it is
not granted. Leases are judged by the server's clock (``clock_timestamp()``),
never by the workers'. A transaction that hits a deadlock or a serialisation
failure is retried a few times; a lost connection, or a lock held elsewhere for
longer than ``timeout``, is ``LEDGER_UNAVAILABLE``; so is (not retryable) any
other error of the database (tables of another shape, a missing privilege).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from ..errors import ResultError
from ..limits import seconds
from .ddl import create, storable, tables, unencodable

__all__: list[str] = []  # internal to the package

_DDL: Final = (
    "CREATE OR REPLACE FUNCTION ledger_now() RETURNS DOUBLE PRECISION LANGUAGE sql VOLATILE "
    "AS $$ SELECT extract(epoch FROM clock_timestamp())::double precision $$",
    *tables(real="DOUBLE PRECISION", serial="BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY"),
)
#: Serialises schema set-up between processes opening the ledger at once.
_SETUP_LOCK: Final = 0x6C6564676572  # "ledger"
_RETRIES: Final = 5


def _columns(cur: Any, table: str) -> set[str]:
    """The column names of ``table`` in the schema the ledger's tables are in."""
    cur.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ?",
        (table,),
    )
    return {row[0] for row in cur.fetchall()}


def _refused(error: Any) -> ResultError:
    """``LEDGER_UNAVAILABLE`` (not retryable) for a statement the database
    refused for good: a column or table missing or of another type, a
    constraint the ledger does not know, a privilege it lacks."""
    diag = getattr(error, "diag", None)
    primary = getattr(diag, "message_primary", None)
    detail = f"{type(error).__name__}" + (f": {primary}" if primary else "")
    return ResultError(
        "LEDGER_UNAVAILABLE",
        f"PostgreSQL ledger: {detail}",
        retryable=False,
        hint="the ledger's tables are not what this version writes, or its user lacks a privilege: "
        "check the database's schema and permissions",
    )


class _Cursor:
    """A psycopg cursor that takes the ledger's ``?`` placeholders."""

    __slots__ = ("_cur",)
    _sql: dict[str, str] = {}

    def __init__(self, cur: Any) -> None:
        self._cur = cur

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        text = self._sql.get(sql)
        if text is None:
            text = self._sql[sql] = sql.replace("?", "%s")
        try:
            return self._cur.execute(text, storable(params))
        except UnicodeEncodeError:
            raise unencodable() from None

    def fetchone(self) -> Any:
        return self._cur.fetchone()

    def fetchall(self) -> list[Any]:
        rows: list[Any] = self._cur.fetchall()
        return rows


class PostgresDatabase:
    """One connection to a PostgreSQL ledger."""

    writable_cte = True

    def __init__(self, url: str, *, timeout: float = 30.0) -> None:
        wait = seconds("timeout", timeout, zero=True)
        try:
            import psycopg
        except ImportError:  # pragma: no cover  (the extra is not installed)
            raise ImportError("a postgresql:// ledger needs psycopg 3: pip install 'decisions[postgres]'") from None
        self._psycopg = psycopg
        self.url = url
        try:
            self._conn = psycopg.connect(url, autocommit=True, connect_timeout=min(max(1, int(wait)), 2**31 - 1))
            # a row or setup lock held elsewhere is waited for up to ``timeout``, as on SQLite
            self._conn.execute(f"SET lock_timeout = {min(max(1, int(wait * 1000)), 2**31 - 1)}")
        except psycopg.Error as error:
            raise ResultError(
                "LEDGER_UNAVAILABLE",
                f"PostgreSQL ledger: {type(error).__name__}",
                hint="check that the server runs and the URL is right",
            ) from None
        try:
            self.run(self._setup)
        except BaseException:  # a ledger refused (another version, tables it cannot use) leaves no connection open
            self._conn.close()
            raise

    @staticmethod
    def _setup(cur: Any) -> None:
        cur.execute("SELECT pg_advisory_xact_lock(?)", (_SETUP_LOCK,))
        create(cur, _DDL, _columns)

    def run(self, work: Callable[[Any], Any], *, single: bool = False) -> Any:
        """``work(cursor)`` in one transaction; retried on deadlock or
        serialisation failure, rolled back if it raises. ``single``: work
        that sends one statement runs it on its own (autocommit: no BEGIN and
        COMMIT round trips; the statement is its own transaction)."""
        errors = self._psycopg.errors
        for attempt in range(_RETRIES):
            try:
                if single:
                    with self._conn.cursor() as cur:
                        return work(_Cursor(cur))
                with self._conn.transaction(), self._conn.cursor() as cur:
                    return work(_Cursor(cur))
            except (errors.DeadlockDetected, errors.SerializationFailure):
                if attempt == _RETRIES - 1:
                    raise ResultError(
                        "LEDGER_UNAVAILABLE", "PostgreSQL ledger: the transaction kept conflicting"
                    ) from None
            except errors.ProgramLimitExceeded as error:  # a value over a limit of the server: retrying cannot help
                raise _refused(error) from None
            except self._psycopg.OperationalError as error:
                raise ResultError("LEDGER_UNAVAILABLE", f"PostgreSQL ledger: {type(error).__name__}") from None
            except self._psycopg.Error as error:  # tables of another shape, no privilege: not transient
                raise _refused(error) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()
