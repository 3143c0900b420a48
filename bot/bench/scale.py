"""The scale scenario: a store holding many proposals, and what must not slow down with its size.

Seeding bypasses the API: the proposals are inserted with one SQL statement into a fresh database
(SQLite file) or schema (PostgreSQL) that the migrations created, so millions of rows take
seconds. Seeded rows carry no audit entries and no outbox entries; they exist to be read.
Then a second `countersign serve` opens that store and the benchmark measures, each as p99:
fetching one proposal over HTTP, an approver's queue (the store query the App Home will need:
pending proposals of one channel, riskiest first then by expiry, 20 at a time) and one expiry
sweep with nothing due; and the server's memory (RSS) after serving them.
"""

from __future__ import annotations

import functools
import random
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import aiosqlite
import asyncpg

from bot.bench.load import back_to_back
from bot.bench.report import Measurement
from bot.bench.stage import AGENT, APPROVER, OPERATION, REQUESTER, Stage
from store.open import open_store

__all__ = ["ScaleStore", "backlog", "scale"]

#: pending proposals are spread over this many channels (prime to 10: every channel gets some)
CHANNELS = 7
#: one stored proposal in this many is pending
PENDING_EVERY = 10
QUEUE_LIMIT = 20
_HASH = "0" * 64
_OUTCOME = '{"kind": "succeeded", "result": {}}'

#: The approver's queue: pending proposals of one channel, riskiest first, then soonest expiry
#: (the order of the index proposals_pending_queue).
QUEUE_SQLITE = """
SELECT * FROM proposals WHERE status = 'pending' AND channel = ?
ORDER BY risk_rank, expires_at, id LIMIT 20
"""
QUEUE_POSTGRES = QUEUE_SQLITE.replace("?", "$1")

#: ``count`` proposals: one in ten pending (expiring from a day ahead on), the rest decided.
SEED_SQLITE = """
WITH RECURSIVE seq(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM seq WHERE i + 1 < :count)
INSERT INTO proposals (
    id, agent, submission_key, submission_fingerprint, requested_by, operation, request,
    arguments, preview, binding_hash, rule_id, decision, policy_note, approver_roles, channel,
    status, created_at, expires_at, decided_by, decided_at, outcome, updated_at)
SELECT
    printf('cs_seed%019d', i), :agent, 'seed-' || i, :hash, :requester, :operation,
    '{"lane": "ingest", "n": ' || i || '}', '{"lane": "ingest", "n": ' || i || '}',
    '{"title": "Deploy build ' || i || '", "fields": [{"label": "Lane", "value": "ingest"}]}',
    :hash, 'ingest', 'ask', 'seeded by countersign bench', '["approvers"]',
    'C0SCALE' || (i % :channels),
    CASE WHEN i % :every = 0 THEN 'pending' WHEN i % 3 = 0 THEN 'expired'
         WHEN i % 3 = 1 THEN 'rejected' ELSE 'succeeded' END,
    strftime('%Y-%m-%dT%H:%M:%S', :base, '-' || (:count - i) || ' seconds') || '.000000Z',
    strftime('%Y-%m-%dT%H:%M:%S', :base,
             CASE WHEN i % :every = 0 THEN '+' ELSE '-' END || (86400 + i) || ' seconds')
        || '.000000Z',
    CASE WHEN i % :every <> 0 AND i % 3 <> 0 THEN :approver END,
    CASE WHEN i % :every <> 0 AND i % 3 <> 0 THEN :base_text END,
    CASE WHEN i % :every <> 0 AND i % 3 = 2 THEN :outcome END,
    :base_text
FROM seq
"""

SEED_POSTGRES = """
INSERT INTO proposals (
    id, agent, submission_key, submission_fingerprint, requested_by, operation, request,
    arguments, preview, binding_hash, rule_id, decision, policy_note, approver_roles, channel,
    status, created_at, expires_at, decided_by, decided_at, outcome, updated_at)
SELECT
    'cs_seed' || lpad(i::text, 19, '0'), $2, 'seed-' || i, $3, $4, $5,
    ('{"lane": "ingest", "n": ' || i || '}')::json,
    ('{"lane": "ingest", "n": ' || i || '}')::json,
    ('{"title": "Deploy build ' || i
        || '", "fields": [{"label": "Lane", "value": "ingest"}]}')::json,
    $3, 'ingest', 'ask', 'seeded by countersign bench', '{approvers}',
    'C0SCALE' || (i % $6),
    CASE WHEN i % $7 = 0 THEN 'pending' WHEN i % 3 = 0 THEN 'expired'
         WHEN i % 3 = 1 THEN 'rejected' ELSE 'succeeded' END,
    $8::timestamptz - ($1 - i) * interval '1 second',
    $8::timestamptz
        + (CASE WHEN i % $7 = 0 THEN 1 ELSE -1 END) * (86400 + i) * interval '1 second',
    CASE WHEN i % $7 <> 0 AND i % 3 <> 0 THEN $9 END,
    CASE WHEN i % $7 <> 0 AND i % 3 <> 0 THEN $8::timestamptz END,
    CASE WHEN i % $7 <> 0 AND i % 3 = 2 THEN $10::json END,
    $8::timestamptz
FROM generate_series(0, $1::integer - 1) AS i
"""


@dataclass(frozen=True, slots=True)
class ScaleStore:
    """A store URL to seed (a new SQLite file or an empty PostgreSQL schema)."""

    url: str
    backend: str


async def seed(target: ScaleStore, count: int, *, every: int = PENDING_EVERY) -> float:
    """Create the schema (the migrations), insert ``count`` proposals, one in ``every``
    pending; the seconds it took."""
    store = await open_store(target.url)  # applies the migrations
    await store.close()
    now = datetime.now(UTC).replace(microsecond=0)
    started = time.perf_counter()
    if target.backend == "postgresql":
        pg = await asyncpg.connect(target.url)
        try:
            await pg.execute(
                SEED_POSTGRES,
                count,
                AGENT,
                _HASH,
                REQUESTER,
                OPERATION,
                CHANNELS,
                every,
                now,
                APPROVER,
                _OUTCOME,
            )
            await pg.execute("ANALYZE proposals")
        finally:
            await pg.close()
    else:
        path = target.url.removeprefix("sqlite:///")
        async with aiosqlite.connect(path, isolation_level=None) as db:
            await db.execute("PRAGMA synchronous = OFF")  # seeding only: speed over durability
            await db.execute("BEGIN")
            params: dict[str, Any] = {
                "count": count,
                "agent": AGENT,
                "hash": _HASH,
                "requester": REQUESTER,
                "operation": OPERATION,
                "channels": CHANNELS,
                "every": every,
                "base": now.strftime("%Y-%m-%d %H:%M:%S"),
                "base_text": now.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z",
                "approver": APPROVER,
                "outcome": _OUTCOME,
            }
            await db.execute(SEED_SQLITE, params)
            await db.execute("COMMIT")
            await db.execute("ANALYZE")
    return time.perf_counter() - started


async def scale(
    stage: Stage, target: ScaleStore, count: int, duration: float, samples: int
) -> list[Measurement]:
    seconds = await seed(target, count)
    pending = (count + PENDING_EVERY - 1) // PENDING_EVERY
    sized = {"stored": count, "pending": pending, "seed_seconds": round(seconds, 1)}
    rows = [await _queue(target, samples), await _sweep(target, samples)]
    server = await stage.countersign("countersign-scale", target.url)
    try:
        rows.insert(0, await _fetch(stage, server.url, count, duration))
        rss = server.rss()
    finally:
        await server.stop()
    memory = Measurement(
        name="scale: server RSS",
        kind="scenario",
        what="RSS of `countersign serve` on the seeded store after serving the fetches",
        backend=target.backend,
        details={"rss_bytes": rss},
    )
    if rss is not None:
        memory.details["rss_mb"] = round(rss / 2**20, 1)
        memory.note = f"{rss / 2**20:.0f} MB"
        memory.judge("RSS < 200 MB", rss < 200 * 2**20)
    for row in rows:
        row.backend = target.backend
        row.details.update(sized)
        row.note = f"{count:,} stored"
        row.judge("p99 < 50 ms", row.p99_ms is not None and row.p99_ms < 50)
    return [*rows, memory]


async def _fetch(stage: Stage, url: str, count: int, duration: float) -> Measurement:
    """GET /v1/proposals/{id} of random stored proposals, 4 clients back to back."""
    headers = {"Authorization": f"Bearer {stage.token}"}
    pick = random.Random(7)

    async def fetch(n: int) -> int:
        proposal_id = f"cs_seed{pick.randrange(count):019d}"
        async with stage.http.get(f"{url}/v1/proposals/{proposal_id}", headers=headers) as answer:
            await answer.read()
            return answer.status

    result = await back_to_back(fetch, clients=4, duration=duration)
    what = "GET /v1/proposals/{id} of random stored proposals, 4 clients"
    row = Measurement.timed("scale: fetch one", "scenario", what, result.of(200), result.elapsed)
    row.details["statuses"] = dict(result.statuses)
    return row


async def _queue(target: ScaleStore, samples: int) -> Measurement:
    """The approver's queue query, straight on the store (no endpoint serves it yet)."""
    latencies: list[float] = []
    plan: list[str]
    if target.backend == "postgresql":
        pg = await asyncpg.connect(target.url)
        try:
            for n in range(samples):
                started = time.perf_counter()
                await pg.fetch(QUEUE_POSTGRES, f"C0SCALE{n % CHANNELS}")
                latencies.append(time.perf_counter() - started)
            explained = await pg.fetch("EXPLAIN " + QUEUE_POSTGRES, "C0SCALE0")
            plan = [row[0] for row in explained]
        finally:
            await pg.close()
    else:
        path = target.url.removeprefix("sqlite:///")
        async with aiosqlite.connect(path, isolation_level=None) as db:
            for n in range(samples):
                started = time.perf_counter()
                await db.execute_fetchall(QUEUE_SQLITE, (f"C0SCALE{n % CHANNELS}",))
                latencies.append(time.perf_counter() - started)
            steps = await db.execute_fetchall("EXPLAIN QUERY PLAN " + QUEUE_SQLITE, ("x",))
            plan = [str(step[-1]) for step in steps]
    what = (
        f"pending proposals of one channel, riskiest first then by expiry, LIMIT {QUEUE_LIMIT}"
        " (store query)"
    )
    row = Measurement.timed("scale: approver queue", "scenario", what, latencies, sum(latencies))
    row.details["plan"] = plan
    return row


async def _sweep(target: ScaleStore, samples: int) -> Measurement:
    """One expiry sweep with nothing due, through the store's own expire_due."""
    store = await open_store(target.url)
    latencies: list[float] = []
    try:
        for _ in range(samples):
            started = time.perf_counter()
            expired = await store.expire_due(now=datetime.now(UTC), limit=100)
            latencies.append(time.perf_counter() - started)
            if expired:
                raise RuntimeError(f"the sweep expired {len(expired)} seeded proposals")
    finally:
        await store.close()
    what = "one expiry sweep with nothing due (Store.expire_due)"
    return Measurement.timed("scale: expiry sweep", "scenario", what, latencies, sum(latencies))


async def backlog(
    stage: Stage,
    empty: ScaleStore,
    full: ScaleStore,
    pending: int,
    duration: float,
    *,
    clients: int,
) -> list[Measurement]:
    """Agents submitting proposals that ask a person, back to back, to a server on an empty
    store and then to one on a store where ``pending`` proposals of the same agent already wait
    (each a `countersign serve` of its own, the agent's pending limit above the backlog): the
    per-agent pending limit is checked on every submission, and its cost must not grow with
    the backlog. Two rows; the second's ratio is its rate over the empty store's."""
    store = await open_store(empty.url)  # the migrations, nothing more
    await store.close()
    seconds = await seed(full, pending, every=1)
    rows: list[Measurement] = []
    for name, target, waiting in (
        ("backlog: empty store", empty, 0),
        ("backlog: pending", full, pending),
    ):
        server = await stage.countersign(name.replace(":", "").replace(" ", "-"), target.url)
        try:
            cpu_before = server.cpu_seconds()
            result = await back_to_back(
                functools.partial(_submit_to, stage, server.url),
                clients=clients,
                duration=duration,
            )
            cpu_after = server.cpu_seconds()
        finally:
            await server.stop()
        what = f"{clients} agents submitting proposals that ask a person, {waiting:,} pending"
        row = Measurement.timed(
            name, "scenario", what, result.of(201), result.elapsed, backend=target.backend
        )
        created = len(result.of(201))
        row.details.update(statuses=dict(result.statuses), already_pending=waiting)
        if cpu_before is not None and cpu_after is not None and created:
            row.details["cpu_ms_per_proposal"] = round(1000 * (cpu_after - cpu_before) / created, 2)
            row.cpu_ms = row.details["cpu_ms_per_proposal"]
            row.note = f"{row.details['cpu_ms_per_proposal']} ms CPU per proposal"
        rows.append(row)
    rows[1].details["seed_seconds"] = round(seconds, 1)
    rows[1].against(rows[0]).judge(
        "within 10% of empty", None if rows[1].ratio is None else rows[1].ratio >= 0.9
    )
    return rows


async def _submit_to(stage: Stage, url: str, n: int) -> int:
    return await stage.submit("ingest", url=url)
