"""One PostgreSQL transaction as the connector's Tx (store/connector.py).

Named queries run with their parameters in ``$n`` order; times are ``timestamptz`` and arrays
``text[]``. Audit entries are appended unsealed: the transaction takes no lock on the chain.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from store.audit import Appended, Entry, append_unsealed_entries
from store.connector import Array, Dialect, Row
from store.rows import aware
from store.tx import BaseTx

if TYPE_CHECKING:
    from store.pg_migrate import Connection

__all__ = ["PgTx"]


class PgTx(BaseTx):
    """One PostgreSQL transaction (or, for reads, a pooled connection outside one)."""

    dialect: Dialect = "postgres"

    def __init__(self, db: Connection) -> None:
        self._db = db
        #: entries this transaction appended, for the sealer once it commits
        self.unsealed = 0

    @staticmethod
    def param(name: str, value: Any) -> Any:
        if isinstance(value, datetime):
            return aware(value, field=name)
        if isinstance(value, Array):
            return list(value)
        return value

    def _bound(self, query: str, params: Mapping[str, Any]) -> tuple[str, list[Any]]:
        named = self.named(query)
        values = named.positional(params)
        return named.text, [
            self.param(key, value) for key, value in zip(named.params, values, strict=True)
        ]

    async def one(self, query: str, /, **params: Any) -> Row | None:
        text, values = self._bound(query, params)
        return await self._db.fetchrow(text, *values)

    async def all(self, query: str, /, **params: Any) -> list[Row]:
        text, values = self._bound(query, params)
        return list(await self._db.fetch(text, *values))

    async def execute(self, query: str, /, **params: Any) -> None:
        text, values = self._bound(query, params)
        await self._db.execute(text, *values)

    async def execute_many(self, query: str, params: Sequence[Mapping[str, Any]], /) -> None:
        """Sent together, in one round trip; outside a transaction (``lone_write``) they also
        commit together, or none does (asyncpg runs them in one implicit transaction)."""
        if not params:
            return
        bound = [self._bound(query, each) for each in params]
        await self._db.executemany(bound[0][0], [values for _, values in bound])

    async def head_to_follow(self) -> None:
        """Never known: entries are appended unsealed, so writers on any connection and
        instance never wait for each other on the head; the sealer seals them once committed
        (store/audit/sealer.py)."""
        return None

    def appended(self, entry: Appended) -> None:
        self.unsealed += 1

    async def append_audit_entries(self, at: datetime, entries: Sequence[Entry]) -> None:
        """In one statement, unsealed (store/audit/verbs.py)."""
        if entries:
            await append_unsealed_entries(self, at, entries)
            self.unsealed += len(entries)

    def appended_unsealed(self, count: int) -> None:
        self.unsealed += count
