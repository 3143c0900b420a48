"""One PostgreSQL transaction as the connector's Tx (store/connector.py).

Named queries run with their parameters in ``$n`` order; times are ``timestamptz`` and arrays
``text[]``. An append to the audit chain locks the head row (rows first, head second).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from store.base import AuditEntry
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

    @staticmethod
    def param(name: str, value: Any) -> Any:
        if isinstance(value, datetime):
            return aware(value, field=name)
        if isinstance(value, Array):
            return list(value)
        return value

    def _bound(self, query: str, params: dict[str, Any]) -> tuple[str, list[Any]]:
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

    def take_head(self) -> None:
        """Never known: every append reads the head row and locks it until the transaction
        ends (other connections and instances append too)."""
        return None

    def moved_head(self, entry: AuditEntry) -> None:
        """Nothing to remember: the next append reads the head row again."""
