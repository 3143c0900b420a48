"""The floors: what the parts under Countersign do alone, on this machine, in this run.

(a) ``store``: the store's own durable write rate: one proposal-sized row and one audit-sized
    row per transaction, same driver and durability setting as the app (the store's SQLite
    connection: statements on the loop's thread, ``BEGIN IMMEDIATE`` and ``COMMIT`` in
    aiosqlite's; WAL, ``synchronous=FULL``, one connection shared by 16 writers under a lock; or
    asyncpg with a pool of 10 and ``synchronous_commit=on``).
(b) ``aiohttp``: a bare aiohttp server process answering a trivial POST.
(c) ``bolt``: a bare slack-bolt AsyncApp process whose block action listener only acknowledges,
    sent the same signed block_actions bodies as Countersign's clicks.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path

import aiohttp
import asyncpg

from bot.bench.load import Call, back_to_back
from bot.bench.processes import ServerProcess
from bot.bench.report import Measurement
from bot.bench.stage import Stage
from store.sqlite_conn import SqliteConnection

__all__ = ["WRITERS", "bolt_floor", "http_floor", "store_floor"]

#: concurrent writers, as many as the ingest scenario's agents
WRITERS = 16

#: a proposal row's worth of JSON (request, arguments, preview, policy note: about 1 KiB)
_PROPOSAL = json.dumps(
    {
        "request": {"lane": "ingest", "n": 1},
        "arguments": {"lane": "ingest", "n": 1},
        "preview": {"title": "Deploy build 1", "fields": [{"label": "Lane", "value": "ingest"}]},
        "policy_note": "rule 'ingest': lane 'ingest' == 'ingest'",
        "binding_hash": "0" * 64,
        "submission_fingerprint": "0" * 64,
        "padding": "x" * 600,
    }
)
_AUDIT = json.dumps({"operation": "bench.deploy", "decision": "ask", "rule_id": "ingest"})


async def store_floor(store_url: str, work: Path, duration: float, *, durable: bool) -> Measurement:
    """Floor (a) on the store ``store_url`` names (a SQLite file in ``work``, or PostgreSQL):
    ``WRITERS`` writers back to back, each transaction as that backend's writer makes it."""
    if store_url.startswith(("postgresql://", "postgres://")):
        backend, how = "postgresql", "asyncpg pool of 10"
        writer = _postgres_writer(store_url, durable=durable)
    else:
        backend, how = "sqlite", "SQLite WAL"
        writer = _sqlite_writer(work / "floor.sqlite", durable=durable)
    async with writer as write:
        result = await back_to_back(write, clients=WRITERS, duration=duration)
    what = f"INSERT proposal + INSERT audit per transaction, {how}, {WRITERS} writers"
    return Measurement.timed(
        "floor a: store", "floor", what, result.of(200), result.elapsed, backend=backend
    )


@asynccontextmanager
async def _sqlite_writer(path: Path, *, durable: bool) -> AsyncIterator[Call]:
    """One proposal and its audit row per transaction, on one connection as the store's
    writer uses it."""
    db = await SqliteConnection.open(path)
    try:
        await db.worker.execute_fetchall("PRAGMA journal_mode = WAL")
        await db.execute(f"PRAGMA synchronous = {'FULL' if durable else 'NORMAL'}")
        await db.execute(
            "CREATE TABLE floor_proposals (id TEXT PRIMARY KEY, body TEXT NOT NULL, "
            "created_at TEXT NOT NULL) STRICT"
        )
        await db.execute(
            "CREATE TABLE floor_audit (seq INTEGER PRIMARY KEY, proposal_id TEXT NOT NULL, "
            "detail TEXT NOT NULL, hash TEXT NOT NULL) STRICT"
        )
        lock = asyncio.Lock()

        async def write(n: int) -> int:
            proposal_id, at = secrets.token_hex(13), datetime.now(UTC).isoformat()
            async with lock:  # one connection, one transaction at a time: as the store does
                await db.waiting("BEGIN IMMEDIATE")
                await db.execute(
                    "INSERT INTO floor_proposals VALUES (?, ?, ?)", (proposal_id, _PROPOSAL, at)
                )
                await db.execute(
                    "INSERT INTO floor_audit VALUES (?, ?, ?, ?)",
                    (n + 1, proposal_id, _AUDIT, secrets.token_hex(32)),
                )
                await db.waiting("COMMIT")
            return 200

        yield write
    finally:
        await db.close()


@asynccontextmanager
async def _postgres_writer(url: str, *, durable: bool) -> AsyncIterator[Call]:
    """One proposal and its audit row per transaction, over a pool as the store's."""
    settings = {} if durable else {"synchronous_commit": "off"}
    pool = await asyncpg.create_pool(url, min_size=1, max_size=10, server_settings=settings)
    try:
        await pool.execute(
            "CREATE TABLE floor_proposals (id TEXT PRIMARY KEY, body TEXT NOT NULL, "
            "created_at TIMESTAMPTZ NOT NULL)"
        )
        await pool.execute(
            "CREATE TABLE floor_audit (seq BIGINT PRIMARY KEY, proposal_id TEXT NOT NULL, "
            "detail JSONB NOT NULL, hash TEXT NOT NULL)"
        )

        async def write(n: int) -> int:
            proposal_id = secrets.token_hex(13)
            async with pool.acquire() as db, db.transaction():
                await db.execute(
                    "INSERT INTO floor_proposals VALUES ($1, $2, $3)",
                    proposal_id,
                    _PROPOSAL,
                    datetime.now(UTC),
                )
                await db.execute(
                    "INSERT INTO floor_audit VALUES ($1, $2, $3, $4)",
                    n + 1,
                    proposal_id,
                    _AUDIT,
                    secrets.token_hex(32),
                )
            return 200

        yield write
    finally:
        await pool.close()


async def http_floor(stage: Stage, duration: float, *, clients: int) -> Measurement:
    """Floor (b): a bare aiohttp server process answering a trivial POST."""
    server = ServerProcess(
        "bare-aiohttp", "bot.bench.bare", ["aiohttp", "--port", "{port}"], logs=stage.logs
    )
    await server.start(stage.env)
    body = json.dumps({"operation": "bench.deploy", "request": {"lane": "ingest", "n": 1}})
    try:

        async def post(n: int) -> int:
            try:
                async with stage.http.post(f"{server.url}/echo", data=body) as answer:
                    await answer.read()
                    return answer.status
            except aiohttp.ClientError:
                return 0

        result = await back_to_back(post, clients=clients, duration=duration)
    finally:
        await server.stop()
    what = f"bare aiohttp process, trivial POST, {clients} clients"
    return Measurement.timed("floor b: aiohttp", "floor", what, result.of(201), result.elapsed)


async def bolt_floor(
    stage: Stage, clicks: Sequence[bytes], duration: float, *, clients: int
) -> Measurement:
    """Floor (c): a bare bolt AsyncApp process acknowledging the same signed click bodies."""
    server = ServerProcess(
        "bare-bolt", "bot.bench.bare", ["bolt", "--port", "{port}"], logs=stage.logs
    )
    await server.start(stage.env)
    try:

        async def click(n: int) -> int:
            return await stage.post_click(f"{server.url}/slack/events", clicks[n % len(clicks)])

        result = await back_to_back(click, clients=clients, duration=duration)
    finally:
        await server.stop()
    what = f"bare bolt AsyncApp process, signed block_actions, ack only, {clients} clients"
    return Measurement.timed("floor c: bolt", "floor", what, result.of(200), result.elapsed)
