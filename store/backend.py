"""What a backend gives the Store verbs written once over it: three ways to reach the database.

The verbs of the Store protocol (store/proposals/verbs.py and the modules it gathers,
store/audit/verbs.py) are written once, over these. Each backend (SqliteStore, PostgresStore) says
what they are on its database, and translates its driver's errors at their edge:

- ``tx(write=True)``: one transaction for a change. SQLite batches concurrent ones into one
  COMMIT (group commit); PostgreSQL runs READ COMMITTED on a pooled connection.
- ``tx(write=False)``: a connection for reads, each statement seeing what has committed (no
  BEGIN, no COMMIT).
- ``snapshot()``: reads that must agree with each other, from one snapshot.
- ``lone_write()``: one statement that changes something and needs nothing else in its
  transaction. PostgreSQL runs it on its own (autocommit: one round trip instead of three);
  SQLite as a write of the group commit.
- ``audit_sealed()``: returns once every audit entry committed before the call has its place in
  the hash chain (store/audit/verbs.py). SQLite seals each entry as it appends it; PostgreSQL's
  sealer seals them in batches after their transactions commit.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import ClassVar, TypeVar

from store.connector import Connector, Tx

__all__ = ["Backend", "FamilyStore"]

T = TypeVar("T")


class Backend(ABC):
    """A database the Store verbs run on (see the module's docstring)."""

    #: Whether audit entries are appended unsealed, for a sealer (PostgreSQL): then an entry
    #: may be written by the statement of the change it records, in the same round trip
    #: (store/proposals/submissions.py). SQLite's writer seals each entry as it appends it.
    appends_unsealed: ClassVar[bool] = False

    @abstractmethod
    def tx(self, *, write: bool) -> AbstractAsyncContextManager[Tx]:
        """A transaction for a change (``write``), or a connection for reads."""

    @abstractmethod
    def snapshot(self) -> AbstractAsyncContextManager[Tx]:
        """A read-only transaction whose statements all see one snapshot."""

    @abstractmethod
    def lone_write(self) -> AbstractAsyncContextManager[Tx]:
        """A connection for one statement that changes something, committed on its own."""

    @abstractmethod
    async def audit_sealed(self) -> None:
        """Return once every audit entry committed before this call is sealed into the chain."""


class FamilyStore:
    """A table family's store (escalations, standing rules, ...): its verbs, written once over
    the backend's connector, share the backend's transactions and audit chain."""

    def __init__(self, backend: Connector) -> None:
        self._backend = backend

    async def _reading(self, read: Callable[[Tx, str], Awaitable[T]], key: str, /) -> T:
        """``read(tx, key)`` on a connection for reads of its own."""
        async with self._backend.tx(write=False) as tx:
            return await read(tx, key)
