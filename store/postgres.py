"""The PostgreSQL backend of the Store protocol, for several instances sharing one database:
the pool, its transactions, migrations and the change feed.

An asyncpg connection pool per store. Every write is one transaction (READ COMMITTED); reads run
on a pooled connection outside a transaction, each statement seeing what has committed. Appends
to the audit log take no lock on the chain: entries are appended unsealed and the store's sealer
(store/audit/sealer.py) seals them in batches once committed, each seal admitted by the database
only at the head of the chain, so entries written by any number of connections and processes form
one linear hash chain; sweeps take their rows with ``FOR UPDATE SKIP LOCKED``, so
instances sweeping at once never do one twice, nor wait for each other. The database announces
each committed change; :meth:`PostgresStore.listen` hears them all. The verbs are written once
over this (store/proposals/verbs.py and the modules it gathers).

:data:`KEPT_FOR_PEOPLE` connections of the pool are kept for people's lane (store/lanes.py):
everything else (agents' submissions, sweeps, the outbox, the sealer) holds at most the rest at
once, so a click's record and its decision never wait for a connection behind agents' writes.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal
from urllib.parse import parse_qs, urlsplit

import asyncpg

from contracts.redaction import scrub, shown_store_url
from store.audit import Sealer, seal_audit
from store.base import StoreError, StoreUnavailable
from store.lanes import for_people
from store.migrate import MigrationError, load_migrations
from store.pg_changes import ANNOUNCE, ChangeFeed
from store.pg_errors import DRIVER_ERRORS, translate
from store.pg_migrate import apply_migrations
from store.pg_statistics import TableStatistics
from store.pg_tx import PgTx
from store.verbs import StoreVerbs

__all__ = [
    "KEPT_FOR_PEOPLE",
    "POOL_SIZE",
    "POOL_SIZE_MAX",
    "POOL_SIZE_MIN",
    "PostgresStore",
    "redacted",
]

if TYPE_CHECKING:
    from store.pg_migrate import Connection

Isolation = Literal["read_committed", "repeatable_read"]

#: Connections of the pool only people's lane may use (store/lanes.py).
KEPT_FOR_PEOPLE = 2
#: The pool's size (``store.pool_size``): unless the operator sets it, 10 connections
POOL_SIZE = 10
#: the smallest pool: those kept for people's lane and one for everyone else
POOL_SIZE_MIN = KEPT_FOR_PEOPLE + 1
#: the largest pool one store may open: PostgreSQL's default max_connections
POOL_SIZE_MAX = 100

#: Whether the calling task already holds one of the places outside people's lane (a connection
#: taken while it holds another does not take a second place: it could wait for itself).
_HOLDING: ContextVar[bool] = ContextVar("countersign_pg_holding", default=False)


def redacted(url: str) -> str:
    """``url`` without its password, fit for messages and logs (contracts/redaction.py)."""
    return shown_store_url(url)


class PostgresStore(StoreVerbs):
    """A Store on a PostgreSQL database. Create it with :meth:`open`."""

    appends_unsealed = True  #: for the sealer (store/audit/sealer.py)

    def __init__(
        self,
        pool: asyncpg.Pool[asyncpg.Record],
        *,
        listen_connect: Callable[[], Awaitable[asyncpg.Connection[asyncpg.Record]]] | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        """``listen_connect`` opens the connection that hears other instances' changes."""
        self._pool = pool
        #: places for connections outside people's lane: the pool's size less those kept
        self._others = asyncio.Semaphore(max(1, pool.get_max_size() - KEPT_FOR_PEOPLE))
        self._changes = ChangeFeed(listen_connect or _cannot_listen)
        self._clock = clock or (lambda: datetime.now(UTC))
        self._closed = False
        #: seals the audit entries this store's writers append unsealed (store/audit/sealer.py)
        self._sealer = Sealer(lambda: seal_audit(self))
        #: analyzes the tables as they grow, for plans fit for their size (store/pg_statistics.py)
        self.statistics = TableStatistics(self.connection)

    @classmethod
    async def open(
        cls,
        url: str,
        *,
        durable: bool = True,
        min_size: int = 1,
        max_size: int = POOL_SIZE,
        server_settings: Mapping[str, str] | None = None,
        connect_timeout: float = 10.0,
        clock: Callable[[], datetime] | None = None,
    ) -> PostgresStore:
        """Connect a pool to ``url`` (``postgresql://user@host:port/database``) and migrate.

        ``max_size`` is the pool's size (``store.pool_size`` allows :data:`POOL_SIZE_MIN` to
        :data:`POOL_SIZE_MAX`), of which :data:`KEPT_FOR_PEOPLE` are kept for people's lane;
        the connection that listens for changes (:meth:`listen`) is one more.
        ``durable=False`` turns off ``synchronous_commit`` for the store's sessions: faster, and
        a server crash may lose the last commits (never corrupt the database).
        ``server_settings`` are session settings for every connection (``search_path`` picks
        a schema). Its connections are named ``countersign`` in ``pg_stat_activity`` unless the
        URL names them (``?application_name=countersign-a``, to tell instances apart).
        ``clock`` stamps the one verb without a ``now`` (attach_message).
        """
        settings = {**_named(url), **(server_settings or {})}
        if not durable:
            settings.setdefault("synchronous_commit", "off")
        where = redacted(url)
        logging.getLogger("asyncpg.pool").addFilter(_quiet_pool_floor)  # once: filters are a set
        try:
            pool = await asyncpg.create_pool(
                url,
                min_size=min_size,
                max_size=max_size,
                server_settings=settings,
                timeout=connect_timeout,
                reset=_nothing_to_reset,
            )
        except DRIVER_ERRORS as error:
            raise StoreUnavailable(
                f"cannot open PostgreSQL database {where}: {translate(error)}"
            ) from error
        except ValueError as error:  # asyncpg's own checks of the URL and its options
            raise StoreError(f"store URL {where}: {scrub(str(error), url)}") from error
        try:
            async with pool.acquire() as db:
                await apply_migrations(db, load_migrations("postgres"))
        except BaseException as error:
            pool.terminate()
            if isinstance(error, MigrationError):
                raise StoreUnavailable(f"PostgreSQL database {where}: {error}") from error
            if isinstance(error, DRIVER_ERRORS):
                raise StoreUnavailable(
                    f"PostgreSQL database {where}: {translate(error)}"
                ) from error
            raise

        def listen_connect() -> Awaitable[asyncpg.Connection[asyncpg.Record]]:
            return asyncpg.connect(url, server_settings=settings, timeout=connect_timeout)

        store = cls(pool, listen_connect=listen_connect, clock=clock)
        store._sealer.start()  # seals what an instance that stopped may have left unsealed
        store.statistics.start()
        return store

    @property
    def pool_size(self) -> int:
        """The most connections the pool holds at once (the listening one is not of them)."""
        return self._pool.get_max_size()

    async def listen(self, on_change: Callable[[str], None]) -> None:
        """From now on, call ``on_change(proposal_id)`` whenever any instance changes a
        proposal's status (this one included), once the change has committed. A proposal's
        creation is not announced: nothing can be waiting on it before then (migration 0023)."""
        if self._closed:
            raise StoreUnavailable("the store is closed")
        await self._changes.subscribe(on_change)

    async def announce(self, message: str) -> None:
        """Tell every instance's :meth:`listen` subscribers ``message`` (this one's included),
        on the channel proposal changes come on: a message holds a ``:``, which no proposal id
        does."""
        if ":" not in message:
            raise ValueError(f"an announcement holds a ':' (got {message!r})")
        async with self.connection() as db:
            await db.execute(ANNOUNCE, message)

    async def close(self) -> None:
        """Wait for the calls in progress (and a sealing run) to finish, then close every
        connection. Entries this store left unsealed are sealed by any other instance within
        store.audit.sealer.IDLE_SECONDS, or when a store next opens on the database."""
        if not self._closed:
            self._closed = True
            await self._sealer.close()  # first, in this turn: a run woken now is not begun
            await self.statistics.close()
            await self._changes.close()
            await self._pool.close()

    # --- connections and transactions (store/backend.py) ------------------------------------

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[Connection]:
        """A pooled connection for single statements. Driver errors are translated here."""
        if self._closed:
            raise StoreUnavailable("the store is closed")
        try:
            async with self._place(), self._pool.acquire() as db:
                yield db
        except DRIVER_ERRORS as error:
            if self._closed:
                raise StoreUnavailable("the store is closed") from error
            raise translate(error) from error

    @asynccontextmanager
    async def _place(self) -> AsyncIterator[None]:
        """Room to take a connection: at once in people's lane; else one of the places
        outside it (the pool's size less :data:`KEPT_FOR_PEOPLE`)."""
        if for_people() or _HOLDING.get():
            yield
            return
        async with self._others:
            token = _HOLDING.set(True)
            try:
                yield
            finally:
                _HOLDING.reset(token)

    @asynccontextmanager
    async def transaction(
        self, *, isolation: Isolation = "read_committed", readonly: bool = False
    ) -> AsyncIterator[Connection]:
        """One transaction on a pooled connection: committed at the end, rolled back on error."""
        async with self.connection() as db, db.transaction(isolation=isolation, readonly=readonly):
            yield db

    @asynccontextmanager
    async def tx(self, *, write: bool) -> AsyncIterator[PgTx]:
        """A transaction (READ COMMITTED) for a change; for reads, a pooled connection whose
        statements each see what has committed (store/backend.py); as :meth:`lone_write`, its
        statements commit on their own. Either way the sealer is woken for the audit entries
        appended."""
        if write:
            async with self.transaction() as db:
                tx = PgTx(db)
                yield tx
        else:
            async with self.connection() as db:
                tx = PgTx(db)
                yield tx
        if tx.unsealed:
            self._sealer.wake()

    @asynccontextmanager
    async def snapshot(self) -> AsyncIterator[PgTx]:
        """A read-only REPEATABLE READ transaction: its statements see one snapshot."""
        async with self.transaction(isolation="repeatable_read", readonly=True) as db:
            yield PgTx(db)

    def lone_write(self) -> AbstractAsyncContextManager[PgTx]:
        """A pooled connection outside a transaction: the statement commits on its own."""
        return self.tx(write=False)

    async def audit_sealed(self) -> None:
        """Return once every audit entry committed before the call is sealed (by this store's
        sealer, or another instance's)."""
        await self._sealer.sealed()


def _quiet_pool_floor(record: logging.LogRecord) -> bool:
    """Drop asyncpg's "Failed to restore the pool connection floor; retrying", written with a
    traceback each time it cannot reconnect: the database being away is an outage, which the
    application reports once, not a bug."""
    return not record.getMessage().startswith("Failed to restore the pool connection floor")


async def _nothing_to_reset(db: asyncpg.Connection[asyncpg.Record]) -> None:
    """What a pooled connection needs before its next use: nothing. The store leaves nothing
    on it (no LISTEN: the change feed has its own connection; advisory locks only for a
    transaction; settings only at connect), and asyncpg rolls back a transaction left open
    before this is called. Its default reset (``pg_advisory_unlock_all(); CLOSE ALL; UNLISTEN
    *; RESET ALL``) costs a round trip every time a connection goes back to the pool."""


async def _cannot_listen() -> asyncpg.Connection[asyncpg.Record]:
    raise StoreUnavailable("this store was built without a way to listen; open it with open()")


def _named(url: str) -> dict[str, str]:
    """The connections' default name, unless the URL's query gives one (asyncpg takes it from
    there as a session setting; one given as ``server_settings`` would override it)."""
    query = parse_qs(urlsplit(url).query)
    return {} if "application_name" in query else {"application_name": "countersign"}
