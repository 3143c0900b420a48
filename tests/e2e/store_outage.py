"""A PostgreSQL that really stops answering: the store reaches the test server through a local
TCP proxy, and :meth:`StoreProxy.cut` drops every connection and refuses new ones until
:meth:`StoreProxy.restore`, as a database restart or a network partition does."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg

__all__ = ["PG_ADMIN_URL", "StoreProxy", "postgres_through_proxy"]

PG_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/test"


class StoreProxy:
    """Pipes TCP connections from a local port to ``upstream``; can be cut and restored."""

    def __init__(self, upstream_host: str = "127.0.0.1", upstream_port: int = 5432) -> None:
        self._upstream = (upstream_host, upstream_port)
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._flowing = asyncio.Event()
        self._flowing.set()
        self.port = 0

    @property
    def cut_off(self) -> bool:
        return self._server is None

    async def start(self) -> int:
        """Listen (on the same port again after a cut); the port."""
        self._server = await asyncio.start_server(
            self._pipe, "127.0.0.1", self.port, reuse_address=True
        )
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    async def cut(self) -> None:
        """Refuse new connections and drop the open ones, mid-statement or not."""
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        for writer in list(self._writers):
            with contextlib.suppress(Exception):
                transport = writer.transport
                transport.abort()
        self._writers.clear()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def restore(self) -> None:
        await self.start()

    def hold(self) -> None:
        """Stop passing bytes either way, connections left open: a network that stalls."""
        self._flowing.clear()

    def release(self) -> None:
        self._flowing.set()

    async def close(self) -> None:
        await self.cut()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self._upstream)
        except OSError:
            writer.transport.abort()
            return
        self._writers |= {writer, up_writer}
        one = asyncio.create_task(_copy(reader, up_writer, self._flowing))
        two = asyncio.create_task(_copy(up_reader, writer, self._flowing))
        self._tasks |= {one, two}
        try:
            await asyncio.wait({one, two}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (one, two):
                task.cancel()
            for end in (writer, up_writer):
                end.transport.abort()
                self._writers.discard(end)
            self._tasks -= {one, two}


async def _copy(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, flowing: asyncio.Event
) -> None:
    with contextlib.suppress(OSError, asyncio.IncompleteReadError):
        while data := await reader.read(65536):
            await flowing.wait()
            writer.write(data)
            await writer.drain()


@asynccontextmanager
async def postgres_through_proxy() -> AsyncIterator[tuple[str, StoreProxy]]:
    """A store URL for a fresh schema on the test server, reached through a proxy; and the
    proxy. The schema is dropped afterwards."""
    schema = f"cs_outage_{secrets.token_hex(4)}"
    admin = await asyncpg.connect(PG_ADMIN_URL)
    await admin.execute(f'CREATE SCHEMA "{schema}"')
    proxy = StoreProxy()
    port = await proxy.start()
    try:
        # asyncpg takes query parameters it does not know as session settings
        yield f"postgresql://postgres@127.0.0.1:{port}/test?search_path={schema}", proxy
    finally:
        await proxy.close()
        await admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        await admin.close()
