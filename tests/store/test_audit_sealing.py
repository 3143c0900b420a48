"""Sealing on PostgreSQL: writers append audit entries unsealed, taking no lock on the chain, and
the sealer gives them their place in it soon after, at the head; the database refuses every
change to an entry but its seal, and a seal out of its place."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, cast

import asyncpg
import pytest

from store.audit import IDLE_SECONDS, Sealer, entry_hash, seal_audit
from store.backend import Backend
from store.base import StoreError, StoreUnavailable
from store.postgres import PostgresStore
from tests.store.conformance import new_proposal
from tests.store.test_postgres import NOW, URL, OpenStore, open_pg, raw

__all__ = ["open_pg", "raw"]  # the fixtures these tests share with test_postgres.py


UNSEALED = "SELECT count(*) FROM audit_log WHERE seq IS NULL"


async def _until(check: Callable[[], Awaitable[bool]], *, within: float) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not await check():
        assert loop.time() < deadline, f"not within {within} s"
        await asyncio.sleep(0.05)


@pytest.mark.postgres
async def test_writers_commit_while_a_sealer_holds_the_head(
    open_pg: OpenStore, raw: asyncpg.Connection[asyncpg.Record]
) -> None:
    store = await open_pg()
    waiting = await open_pg()
    async with raw.transaction():
        await raw.execute("SELECT * FROM audit_head FOR UPDATE")  # a sealer, stuck mid-batch
        created = await asyncio.wait_for(
            asyncio.gather(*(store.create_proposal(new_proposal(NOW)) for _ in range(8))),
            timeout=30,  # a hang guard only: before, every append waited for the head
        )
        reading = asyncio.create_task(waiting.audit_log())
        await asyncio.sleep(0.2)

        assert await raw.fetchval(UNSEALED) == 8  # committed, waiting for their seal
        assert not reading.done()  # a reader waits for the seal of what committed before it

    log = await reading
    assert [e.event for e in log] == ["submitted"] * 8
    assert {e.proposal_id for e in log} == {p.id for p, _ in created}
    assert (await store.verify_audit()).ok


@pytest.mark.postgres
async def test_entries_are_sealed_soon_without_anyone_asking(
    open_pg: OpenStore, raw: asyncpg.Connection[asyncpg.Record]
) -> None:
    store = await open_pg()
    for _ in range(5):
        await store.create_proposal(new_proposal(NOW))

    await _until(lambda: _none_unsealed(raw), within=5)
    assert await raw.fetchval("SELECT seq FROM audit_head") == 5


@pytest.mark.postgres
async def test_entries_a_stopped_instance_left_unsealed_are_sealed_by_another(
    open_pg: OpenStore, raw: asyncpg.Connection[asyncpg.Record]
) -> None:
    running = await open_pg()
    await running.record_event(None, actor="bot", event="started", detail={}, now=NOW)
    # What an instance killed between its commit and its seal leaves behind.
    await raw.execute(
        "INSERT INTO audit_log (at, actor, event, detail) VALUES ($1, 'gone', 'left', '{}')", NOW
    )

    await _until(lambda: _none_unsealed(raw), within=IDLE_SECONDS + 4)
    assert [e.event for e in await running.audit_log()] == ["started", "left"]
    assert (await running.verify_audit()).ok


@pytest.mark.postgres
async def test_each_proposals_entries_are_sealed_in_the_order_of_its_transitions(
    open_pg: OpenStore,
) -> None:
    first, second = await open_pg(), await open_pg()

    async def decide(n: int) -> str:
        instance = (first, second)[n % 2]
        new = new_proposal(NOW)
        await instance.create_proposal(new)
        await (second, first)[n % 2].reject(new.id, actor="U1", reason=f"no {n}", now=NOW)
        return new.id

    ids = await asyncio.gather(*(decide(n) for n in range(30)))

    log = await first.audit_log()
    assert [e.seq for e in log] == list(range(1, 61))
    for proposal_id in ids:
        assert [e.event for e in log if e.proposal_id == proposal_id] == ["submitted", "rejected"]
    assert (await second.verify_audit()).ok


# --- the database refuses ------------------------------------------------------------------------


@pytest.fixture
async def quiet(
    open_pg: OpenStore, raw: asyncpg.Connection[asyncpg.Record]
) -> asyncpg.Connection[asyncpg.Record]:
    """The schema with one sealed entry and one unsealed, and no sealer running."""
    store = await open_pg()
    await store.record_event(None, actor="bot", event="sealed", detail={"n": 1}, now=NOW)
    await store.close()
    await raw.execute(
        "INSERT INTO audit_log (at, actor, event, detail) VALUES ($1, 'bot', 'unsealed', '{}')",
        NOW,
    )
    return raw


@pytest.mark.postgres
@pytest.mark.parametrize(
    ("statement", "refusal"),
    [
        ("UPDATE audit_log SET actor = 'mallory' WHERE seq IS NULL", "append-only"),
        ("DELETE FROM audit_log WHERE seq IS NULL", "append-only"),
        ("UPDATE audit_log SET seq = 2 WHERE seq = 1", "append-only"),
        (  # a seal that changes what the entry says
            "UPDATE audit_log SET seq = 2, prev_hash = h.hash, hash = 'x', actor = 'mallory' "
            "FROM audit_head AS h WHERE audit_log.seq IS NULL",
            "append-only",
        ),
        (  # a seal out of its place
            "UPDATE audit_log SET seq = 3, prev_hash = h.hash, hash = 'x' "
            "FROM audit_head AS h WHERE audit_log.seq IS NULL",
            "follow the head",
        ),
        (
            "UPDATE audit_log SET seq = 2, prev_hash = repeat('f', 64), hash = 'x' "
            "WHERE seq IS NULL",
            "follow the head",
        ),
        ("UPDATE audit_log SET seq = 2 WHERE seq IS NULL", "follow the head"),
        (  # a seal without its hash
            "UPDATE audit_log SET seq = 2, prev_hash = h.hash "
            "FROM audit_head AS h WHERE audit_log.seq IS NULL",
            '"hash"',
        ),
    ],
)
async def test_the_database_refuses_every_change_but_a_seal_in_its_place(
    quiet: asyncpg.Connection[asyncpg.Record], statement: str, refusal: str
) -> None:
    before = await quiet.fetch("SELECT * FROM audit_log ORDER BY id")

    with pytest.raises(asyncpg.IntegrityConstraintViolationError, match=refusal):
        await quiet.execute(statement)

    assert await quiet.fetch("SELECT * FROM audit_log ORDER BY id") == before


@pytest.mark.postgres
async def test_the_sealer_seals_what_it_finds_after_the_head(
    quiet: asyncpg.Connection[asyncpg.Record], open_pg: OpenStore
) -> None:
    store = await open_pg()

    log = await store.audit_log()

    assert [(e.seq, e.event) for e in log] == [(1, "sealed"), (2, "unsealed")]
    assert log[1].prev_hash == log[0].hash
    assert (await store.verify_audit()).ok


class _Raced:
    """A store whose sealer, between its read of the chain and its seal, is overtaken once by
    another instance's sealer (``race``), which moves the head."""

    def __init__(self, store: PostgresStore, race: Callable[[], Awaitable[None]]) -> None:
        self._store = store
        self._race: Callable[[], Awaitable[None]] | None = race

    def tx(self, *, write: bool) -> Any:
        return self._store.tx(write=write)

    @asynccontextmanager
    async def lone_write(self) -> AsyncIterator[Any]:
        if self._race is not None:
            race, self._race = self._race, None
            await race()
        async with self._store.lone_write() as tx:
            yield tx


@pytest.mark.postgres
async def test_a_sealer_overtaken_by_another_seals_after_the_head_it_moved(
    open_pg: OpenStore, raw: asyncpg.Connection[asyncpg.Record]
) -> None:
    store = await open_pg()
    await store.record_event(None, actor="bot", event="first", detail={}, now=NOW)
    await store._sealer.close()  # this test seals by hand (the store reads no more)
    insert = (
        "INSERT INTO audit_log (at, actor, event, detail) VALUES ($1, $2, $3, '{}') RETURNING id"
    )
    for event in ("x1", "x2"):
        await raw.fetchval(insert, NOW, "bot", event)

    async def other_sealer() -> None:  # seals an entry of its own at the head first
        entry = await raw.fetchval(insert, NOW, "other", "raced")
        seq, prev_hash = await raw.fetchrow("SELECT seq, hash FROM audit_head")
        digest = entry_hash(
            prev_hash,
            seq=seq + 1,
            at=NOW,
            proposal_id=None,
            actor="other",
            event="raced",
            detail={},
        )
        await raw.execute(
            "UPDATE audit_log SET seq = $1, prev_hash = $2, hash = $3 WHERE id = $4",
            seq + 1,
            prev_hash,
            digest,
            entry,
        )

    sealed = await seal_audit(cast(Backend, _Raced(store, other_sealer)))

    assert sealed == 2  # its first batch was refused whole, then sealed after the new head
    assert await _none_unsealed(raw)
    reader = await open_pg()
    log = await reader.audit_log()
    assert [(e.seq, e.event) for e in log] == [(1, "first"), (2, "raced"), (3, "x1"), (4, "x2")]
    assert (await reader.verify_audit()).ok


@pytest.mark.postgres
async def test_two_sealers_whose_batches_overlap_never_deadlock(
    open_pg: OpenStore, raw: asyncpg.Connection[asyncpg.Record], schema: str
) -> None:
    # Sealer B read the chain while entry x1 (appended first) had not committed: its batch is
    # x2 alone. Sealer A read it after x1 committed: its batch is x1 then x2, and it has sealed
    # x1 (it holds x1's row and the head) when B's seal of x2 arrives. Were B to lock x2's row
    # before it waits for the head, A's seal of x2 would wait for B and B for A: PostgreSQL
    # would abort one of them as a deadlock, and whoever waits for B's run would get the error.
    store = await open_pg()
    await store.record_event(None, actor="bot", event="first", detail={}, now=NOW)
    await store._sealer.close()  # this test seals by hand (the store reads no more)
    sealer_a = await asyncpg.connect(URL, server_settings={"search_path": schema})
    insert = (
        "INSERT INTO audit_log (at, actor, event, detail) VALUES ($1, $2, $3, '{}') RETURNING id"
    )
    writing = sealer_a.transaction()
    await writing.start()
    x1 = await sealer_a.fetchval(insert, NOW, "bot", "x1")  # committed after B's read
    x2 = await raw.fetchval(insert, NOW, "bot", "x2")
    seq, head_hash = await raw.fetchrow("SELECT seq, hash FROM audit_head")
    x1_hash = entry_hash(
        head_hash, seq=seq + 1, at=NOW, proposal_id=None, actor="bot", event="x1", detail={}
    )
    x2_hash = entry_hash(
        x1_hash, seq=seq + 2, at=NOW, proposal_id=None, actor="bot", event="x2", detail={}
    )
    seal = "UPDATE audit_log SET seq = $1, prev_hash = $2, hash = $3 WHERE id = $4"

    async def a_seals_x2_once_b_is_under_way() -> None:
        await asyncio.sleep(0.3)
        await sealer_a.execute(seal, seq + 2, x1_hash, x2_hash, x2)
        await sealing.commit()

    async def sealer_a_seals_x1() -> None:  # between B's read and B's seal
        nonlocal sealing, rest
        await writing.commit()
        sealing = sealer_a.transaction()
        await sealing.start()
        await sealer_a.execute(seal, seq + 1, head_hash, x1_hash, x1)
        rest = asyncio.create_task(a_seals_x2_once_b_is_under_way())

    sealing: Any = None
    rest: asyncio.Task[None] | None = None
    try:
        await asyncio.wait_for(
            seal_audit(cast(Backend, _Raced(store, sealer_a_seals_x1))), timeout=30
        )
    finally:
        if rest is not None:
            await asyncio.wait([rest], timeout=30)
        await sealer_a.close()
    assert rest is not None and rest.result() is None  # A sealed x2 without an error

    assert await _none_unsealed(raw)
    reader = await open_pg()
    log = await reader.audit_log()
    assert [(e.seq, e.event) for e in log] == [(1, "first"), (2, "x1"), (3, "x2")]
    assert (await reader.verify_audit()).ok


async def _none_unsealed(raw: asyncpg.Connection[asyncpg.Record]) -> bool:
    return bool(await raw.fetchval(UNSEALED) == 0)


# --- the sealer's runs ----------------------------------------------------------------------------


async def test_a_caller_waits_for_a_run_that_starts_after_it_asks() -> None:
    runs: list[int] = []
    release = asyncio.Event()

    async def seal() -> int:
        runs.append(len(runs))
        await release.wait()
        return 0

    sealer = Sealer(seal, idle_seconds=60)
    sealer.start()
    await asyncio.sleep(0)
    asked = asyncio.create_task(sealer.sealed())  # the first run is under way: not enough
    await asyncio.sleep(0.05)
    assert runs == [0] and not asked.done()

    release.set()
    await asked

    assert runs == [0, 1]
    await sealer.close()


async def test_a_failed_run_fails_its_callers_and_a_closed_sealer_refuses() -> None:
    async def seal() -> int:
        raise StoreUnavailable("the database is away")

    sealer = Sealer(seal, idle_seconds=60)
    with pytest.raises(StoreError, match="away"):
        await sealer.sealed()
    await sealer.close()

    with pytest.raises(StoreUnavailable, match="closed"):
        await sealer.sealed()
