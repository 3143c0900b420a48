"""What every backend's Tx (store/connector.py) shares: the helpers verbs call on a transaction,
written once over its ``one``, ``all`` and ``execute``.

A backend's Tx (store/sqlite_tx.py, store/pg_tx.py) says how a named query and its parameters
reach its driver (:meth:`BaseTx.param`: times and arrays in the stored form) and whether it
seals audit entries as it appends them; appending to the audit log and running one query for
several sets of parameters are the same on both.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from pydantic import JsonValue

from store.audit import Appended, Entry, append_entry
from store.connector import Dialect, Query, Row, load_queries

__all__ = ["BaseTx"]


class BaseTx(ABC):
    """One transaction (or, for reads, one connection) of a backend, as the connector's Tx."""

    dialect: Dialect

    @staticmethod
    @abstractmethod
    def param(name: str, value: Any) -> Any:
        """``value`` as the driver takes it for the parameter ``name``."""

    @abstractmethod
    async def one(self, query: str, /, **params: Any) -> Row | None:
        """The first row the named query returns, or None."""

    @abstractmethod
    async def all(self, query: str, /, **params: Any) -> list[Row]:
        """Every row the named query returns."""

    @abstractmethod
    async def execute(self, query: str, /, **params: Any) -> None:
        """Run the named query; its rows, if any, are not read."""

    async def execute_many(self, query: str, params: Sequence[Mapping[str, Any]], /) -> None:
        """Run the named query once for each set of ``params``, in order. One after another
        here (SQLite runs statements inline: no round trips to save); PostgreSQL sends them
        together, in one round trip."""
        for each in params:
            await self.execute(query, **each)

    def named(self, query: str) -> Query:
        """The named query of this backend's dialect."""
        return load_queries(self.dialect)[query]

    async def append_audit(
        self,
        at: datetime,
        proposal_id: str | None,
        actor: str,
        event: str,
        detail: Mapping[str, JsonValue],
    ) -> int:
        """Append one entry in this transaction and return its row's id: sealed at once after
        the head :meth:`head_to_follow` names, or, when it names none, left for the sealer
        (store/audit/verbs.py)."""
        appended = await append_entry(
            self, at, proposal_id, actor, event, detail, head=await self.head_to_follow()
        )
        self.appended(appended)
        return appended.id

    @abstractmethod
    async def head_to_follow(self) -> tuple[int, str] | None:
        """The head (seq, hash) the next entry is sealed after, when this backend knows it for
        certain (its single writer holds the only write lock); None: append it unsealed."""

    async def append_audit_entries(self, at: datetime, entries: Sequence[Entry]) -> None:
        """Append ``entries`` (proposal id, actor, event, detail) in order: one by one here."""
        for proposal_id, actor, event, detail in entries:
            await self.append_audit(at, proposal_id, actor, event, detail)

    def appended_unsealed(self, count: int) -> None:
        """A named query appended ``count`` entries unsealed: not on a backend that seals every
        entry as it appends it (this one, unless it says otherwise)."""
        raise TypeError(f"{type(self).__name__} seals every audit entry as it appends it")

    @abstractmethod
    def appended(self, entry: Appended) -> None:
        """``entry`` was appended in this transaction (committed with it, or not at all)."""
