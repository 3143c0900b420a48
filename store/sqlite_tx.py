"""One SQLite transaction as the connector's Tx (store/connector.py), and the audit head the
store's single writer follows in memory, so that it seals each audit entry as it appends it.

Named queries run with named parameters; times are stored as fixed-width UTC text and arrays as
JSON text (read with ``json_each``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from store.audit import Appended
from store.base import StoreError
from store.connector import Array, Dialect, Row
from store.rows import db_time, dump_json
from store.sqlite_conn import SqliteConnection
from store.tx import BaseTx

__all__ = ["FollowedHead", "SqliteTx"]

#: the parameters' types :meth:`SqliteTx.param` converts (the rest go to the driver as they are)
_CONVERTED = (datetime, Array)


@dataclass(slots=True)
class FollowedHead:
    """The audit head (seq, hash) as this process's writer last moved it; None: unknown, read it
    from the table.

    Only one writer appends at a time (the batch of the group commit holds SQLite's write lock),
    so after reading the head once per batch the writer can follow it in memory. The group
    commit forgets it between batches and after a writer that failed.
    """

    last: tuple[int, str] | None = None

    def forget(self) -> None:
        self.last = None


class SqliteTx(BaseTx):
    """One SQLite transaction (or, for reads, the connection in autocommit)."""

    dialect: Dialect = "sqlite"

    def __init__(self, db: SqliteConnection, head: FollowedHead) -> None:
        self._db = db
        self._head = head

    @staticmethod
    def param(name: str, value: Any) -> Any:
        if isinstance(value, datetime):
            return db_time(value, field=name)
        if isinstance(value, Array):
            return dump_json(list(value))
        return value

    def _bound(self, query: str, params: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        named = self.named(query)
        values = dict(named.named(params))
        for key, value in values.items():  # a proposal's insert has some sixty: one test each
            if isinstance(value, _CONVERTED):
                values[key] = self.param(key, value)
        return named.text, values

    async def one(self, query: str, /, **params: Any) -> Row | None:
        rows = await self._db.fetch_named(*self._bound(query, params))
        return rows[0] if rows else None

    async def all(self, query: str, /, **params: Any) -> list[Row]:
        return await self._db.fetch_named(*self._bound(query, params))

    async def execute(self, query: str, /, **params: Any) -> None:
        await self._db.execute(*self._bound(query, params))

    async def head_to_follow(self) -> tuple[int, str]:
        """The head this batch of writes followed, read from the table the first time. Taken:
        unknown again until :meth:`appended` names the new one (or the batch forgets it)."""
        head, self._head.last = self._head.last, None
        if head is None:
            row = await self.one("select_audit_head")
            if row is None:
                raise StoreError("the audit head row is missing; the database was altered by hand")
            head = (int(row["seq"]), str(row["hash"]))
        return head

    def appended(self, entry: Appended) -> None:
        assert entry.sealed is not None  # sealed after the head this writer follows
        self._head.last = entry.sealed
