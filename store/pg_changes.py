"""Proposal changes made by any instance, heard through PostgreSQL's LISTEN/NOTIFY.

The database notifies the schema's channel (:data:`CHANNEL_OF_SCHEMA`) with a proposal's id
when a transaction that changed its status commits (``store/sql/postgres/0003_notify_changes.sql``,
made per schema in ``0005``; creations are not announced since ``0023``). One connection of each
instance, outside the pool (a pool would reset it and drop the LISTEN), hears them. When that
connection is lost it is opened again, backing off, until the store closes; changes made
meanwhile go unheard, which only delays waiters (they re-read on their own as well).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import asyncpg

from store.pg_errors import DRIVER_ERRORS, translate

if TYPE_CHECKING:
    from typing import TypeAlias

    Connection: TypeAlias = asyncpg.Connection[asyncpg.Record]

__all__ = ["ANNOUNCE", "CHANNEL_OF_SCHEMA", "ChangeFeed"]

log = logging.getLogger(__name__)

#: The notification channel of the connection's schema, as the trigger names it; its payload is
#: the id of the proposal that changed.
CHANNEL_OF_SCHEMA = "SELECT 'countersign_' || left(md5(current_schema()), 16)"

#: A message of the application's own to every instance listening on the schema's channel, heard
#: beside the proposals' ids (``Store.announce``); $1 is the message.
ANNOUNCE = f"SELECT pg_notify(({CHANNEL_OF_SCHEMA}), $1)"

#: Waits between attempts to open the listening connection again.
_FIRST_RETRY_SECONDS = 0.1
_LAST_RETRY_SECONDS = 5.0


class ChangeFeed:
    """Calls every subscriber with the id of each proposal changed in any instance."""

    def __init__(self, connect: Callable[[], Awaitable[Connection]]) -> None:
        self._connect = connect
        self._subscribers: list[Callable[[str], None]] = []
        self._connection: Connection | None = None
        self._reconnecting: asyncio.Task[None] | None = None
        self._closed = False

    @property
    def server_pid(self) -> int | None:
        """The listening connection's server process, while there is one."""
        return None if self._connection is None else self._connection.get_server_pid()

    async def subscribe(self, on_change: Callable[[str], None]) -> None:
        """Call ``on_change(proposal_id)`` from now on; the first subscriber starts listening.

        Raises StoreUnavailable when the listening connection cannot be opened.
        """
        self._subscribers.append(on_change)
        if self._connection is None and self._reconnecting is None:
            try:
                await self._listen()
            except BaseException:
                self._subscribers.remove(on_change)
                raise

    async def close(self) -> None:
        self._closed = True
        if self._reconnecting is not None:
            self._reconnecting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reconnecting
        if self._connection is not None:
            connection, self._connection = self._connection, None
            with contextlib.suppress(*DRIVER_ERRORS):
                await connection.close(timeout=5)

    async def _listen(self) -> None:
        try:
            connection = await self._connect()
        except DRIVER_ERRORS as error:
            raise translate(error) from error
        try:
            channel = await connection.fetchval(CHANNEL_OF_SCHEMA)
            await connection.add_listener(channel, self._notified)
        except BaseException as error:
            # failed or cancelled (the store closing) half-way: the connection is neither kept
            # nor left open for the garbage collector to find
            connection.terminate()
            if isinstance(error, DRIVER_ERRORS):
                raise translate(error) from error
            raise
        connection.add_termination_listener(self._lost)
        self._connection = connection

    def _notified(self, connection: object, pid: int, channel: str, payload: object) -> None:
        for on_change in list(self._subscribers):
            try:
                on_change(str(payload))
            except Exception:  # one subscriber's bug must not silence the others
                log.exception("a subscriber to proposal changes failed")

    def _lost(self, connection: object) -> None:
        self._connection = None
        if not self._closed and self._reconnecting is None:
            log.warning("lost the connection listening for proposal changes; reconnecting")
            self._reconnecting = asyncio.ensure_future(self._listen_again())

    async def _listen_again(self) -> None:
        delay = _FIRST_RETRY_SECONDS
        try:
            while not self._closed:
                try:
                    await self._listen()
                except Exception as error:  # StoreUnavailable, mostly: try again later
                    # said once: the outage itself is the application's to report
                    first = delay == _FIRST_RETRY_SECONDS
                    log.log(
                        logging.WARNING if first else logging.DEBUG,
                        "cannot listen for proposal changes yet: %s",
                        error,
                    )
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, _LAST_RETRY_SECONDS)
                else:
                    if self._closed:  # the store closed while we connected
                        await self.close()
                    else:
                        log.info("listening for proposal changes again")
                    return
        finally:
            self._reconnecting = None
