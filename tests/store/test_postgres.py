"""The PostgreSQL backend: the shared conformance suite on a real server, plus what only it has.

Every test gets a fresh schema in the database ``test`` (the store's connections find it through
``search_path``) and drops it afterwards. Several stores opened on one schema stand for several
Countersign instances sharing a database: each has its own connection pool.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import logging
import re
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import pytest

from contracts.canonical import canonical_json
from store.audit import GENESIS
from store.base import StoreError, StoreUnavailable
from store.connector import load_queries
from store.lanes import people_first
from store.migrate import Migration, load_migrations
from store.open import open_store
from store.pg_changes import ChangeFeed
from store.pg_errors import translate
from store.pg_migrate import apply_migrations
from store.pg_statistics import countersign_tables
from store.pg_tx import PgTx
from store.postgres import KEPT_FOR_PEOPLE, PostgresStore, redacted
from store.proposals import TRANSITIONS, AlreadyDecided, Effect, Status, Transitioned
from store.proposals.rows import insert_proposal_params
from tests.e2e.store_outage import StoreProxy
from tests.scale.cluster import fresh_database
from tests.store.batch_conformance import WINDOW, waiting
from tests.store.conformance import (
    LEASE,
    OUTCOME_EXAMPLES,
    StoreConformance,
    new_proposal,
    store_waiting,
)
from tests.store.digest_conformance import digest
from tests.store.escalation_conformance import new_escalation

pytestmark = pytest.mark.postgres

URL = "postgresql://postgres@127.0.0.1:5432/test"
NOW = datetime(2031, 3, 14, 15, 9, 26, 535897, tzinfo=UTC)

OpenStore = Callable[..., Awaitable[PostgresStore]]


@pytest.fixture
async def open_pg(schema: str) -> AsyncIterator[OpenStore]:
    """Opens stores (instances) on the test's schema; closes whatever is left open."""
    opened: list[PostgresStore] = []

    async def open_(settings: dict[str, str] | None = None, **options: Any) -> PostgresStore:
        server_settings = {"search_path": schema, **(settings or {})}
        store = await PostgresStore.open(URL, server_settings=server_settings, **options)
        opened.append(store)
        return store

    yield open_
    for store in opened:
        await store.close()


@pytest.fixture
async def raw(schema: str) -> AsyncIterator[asyncpg.Connection[asyncpg.Record]]:
    """A plain connection to the schema, bypassing the store (autocommit)."""
    db = await asyncpg.connect(URL, server_settings={"search_path": schema})
    try:
        yield db
    finally:
        await db.close()


class TestPostgresStore(StoreConformance):
    @pytest.fixture
    async def store(self, open_pg: OpenStore) -> PostgresStore:
        return await open_pg()


# --- several instances on one database -----------------------------------------------------------


async def test_claims_from_two_instances_make_exactly_one_executor_per_proposal(
    open_pg: OpenStore,
) -> None:
    first, second = await open_pg(), await open_pg()
    proposals = [new_proposal(NOW) for _ in range(10)]
    for new in proposals:
        await first.create_proposal(new)

    results = await asyncio.gather(
        *(
            instance.claim_for_execution(
                new.id,
                actor=f"U{i}",
                now=NOW,
                binding_hash=new.binding_hash,
                lease_until=NOW + LEASE,
            )
            for new in proposals
            for i in range(8)
            for instance in (first, second)
        )
    )

    for new in proposals:
        mine = [r for r in results if r.proposal.id == new.id]
        winners = [r for r in mine if isinstance(r, Transitioned)]
        assert len(winners) == 1
        assert sum(isinstance(r, AlreadyDecided) for r in mine) == 15
        approved = [e for e in await second.audit_log(new.id) if e.event == "approved"]
        assert [e.actor for e in approved] == [winners[0].proposal.decided_by]
    assert (await first.verify_audit()).ok


async def test_expiry_sweeps_in_two_instances_expire_each_proposal_once(
    open_pg: OpenStore,
) -> None:
    first, second = await open_pg(), await open_pg()
    for _ in range(30):
        await first.create_proposal(new_proposal(NOW, expires_at=NOW - timedelta(seconds=1)))

    sweeps = await asyncio.gather(
        *(instance.expire_due(now=NOW, limit=4) for _ in range(6) for instance in (first, second))
    )
    sweeps.append(await first.expire_due(now=NOW))  # whatever the racing sweeps left

    expired = [p.id for sweep in sweeps for p in sweep]
    assert len(expired) == len(set(expired)) == 30
    assert sum(e.event == "expired" for e in await second.audit_log()) == 30
    assert (await second.verify_audit()).ok


async def test_outbox_workers_in_two_instances_never_share_a_delivery(
    open_pg: OpenStore,
) -> None:
    first, second = await open_pg(), await open_pg()
    for _ in range(40):
        await first.create_proposal(new_proposal(NOW))

    batches = await asyncio.gather(
        *(
            instance.claim_deliveries(now=NOW, limit=3, lease=LEASE)
            for _ in range(10)
            for instance in (first, second)
        )
    )
    rest = await second.claim_deliveries(now=NOW, limit=100, lease=LEASE)

    ids = [d.id for batch in [*batches, rest] for d in batch]
    assert len(ids) == len(set(ids)) == 40
    assert all(d.attempts == 1 for batch in batches for d in batch)


async def test_lost_executions_are_reclaimed_once_by_sweeps_in_two_instances(
    open_pg: OpenStore,
) -> None:
    first, second = await open_pg(), await open_pg()
    for _ in range(20):
        new = new_proposal(NOW, decision="auto", status=Status.EXECUTING)
        await first.create_proposal(new)
    late = NOW + LEASE

    sweeps = await asyncio.gather(
        *(
            instance.reclaim_abandoned(now=late, limit=3)
            for _ in range(5)
            for instance in (first, second)
        )
    )
    sweeps.append(await first.reclaim_abandoned(now=late))

    reclaimed = [p.id for sweep in sweeps for p in sweep]
    assert len(reclaimed) == len(set(reclaimed)) == 20
    assert sum(e.event == "execution_abandoned" for e in await second.audit_log()) == 20
    assert (await second.verify_audit()).ok


async def test_appends_from_two_instances_form_one_linear_chain(open_pg: OpenStore) -> None:
    first, second = await open_pg(max_size=5), await open_pg(max_size=5)

    entries = await asyncio.gather(
        *(
            instance.record_event(None, actor=name, event="tick", detail={"i": i}, now=NOW)
            for i in range(40)
            for name, instance in (("first", first), ("second", second))
        )
    )

    log = await first.audit_log()
    assert [e.seq for e in log] == list(range(1, 81))
    assert sorted(e.seq for e in entries) == list(range(1, 81))
    assert all(e.prev_hash == before.hash for before, e in itertools.pairwise(log))
    report = await second.verify_audit()
    assert (report.ok, report.checked) == (True, 80)


async def test_instances_opening_at_once_apply_each_migration_once(
    open_pg: OpenStore, raw: asyncpg.Connection[asyncpg.Record]
) -> None:
    stores = await asyncio.gather(*(open_pg() for _ in range(6)))

    rows = await raw.fetch("SELECT version, name FROM schema_migrations ORDER BY version")

    assert [(r["version"], r["name"]) for r in rows] == [
        (m.version, m.name) for m in load_migrations("postgres")
    ]
    for store in stores:  # every instance works on the one schema
        await store.record_event(None, actor="boot", event="started", detail={}, now=NOW)
    assert (await stores[0].verify_audit()).checked == 6


async def test_verify_audit_sees_one_snapshot_while_other_instances_append(
    open_pg: OpenStore,
) -> None:
    writer, checker = await open_pg(), await open_pg()

    async def write() -> None:
        for i in range(60):
            await writer.record_event(None, actor="w", event="tick", detail={"i": i}, now=NOW)

    async def check() -> list[bool]:
        return [(await checker.verify_audit()).ok for _ in range(20)]

    _, verdicts = await asyncio.gather(write(), check())

    assert all(verdicts)


# --- changes heard by every instance -------------------------------------------------------------


class Heard:
    """Records the proposal ids a store's listener reports, in order."""

    def __init__(self) -> None:
        self.ids: asyncio.Queue[str] = asyncio.Queue()

    def __call__(self, proposal_id: str) -> None:
        self.ids.put_nowait(proposal_id)

    async def next(self) -> str:
        return await asyncio.wait_for(self.ids.get(), timeout=30)  # a hang guard only


async def _withdrawn(store: PostgresStore) -> str:
    """A proposal created in ``store``, then withdrawn by its agent (a change of status)."""
    new = new_proposal(NOW)
    await store.create_proposal(new)
    assert isinstance(await store.cancel(new.id, agent=new.agent, now=NOW), Transitioned)
    return new.id


async def test_changes_committed_in_another_instance_are_heard(open_pg: OpenStore) -> None:
    listening, deciding = await open_pg(), await open_pg()
    heard = Heard()
    await listening.listen(heard)
    new = new_proposal(NOW)

    await deciding.create_proposal(new)  # nobody can be waiting on it yet: not announced
    await deciding.attach_message(new.id, "C1", "1.1")  # not a status change: not announced
    await deciding.claim_for_execution(
        new.id, actor="U1", now=NOW, binding_hash=new.binding_hash, lease_until=NOW + LEASE
    )
    await deciding.record_outcome(new.id, OUTCOME_EXAMPLES[0], now=NOW)
    marker = await _withdrawn(deciding)

    assert [await heard.next() for _ in range(3)] == [new.id, new.id, marker]
    assert heard.ids.empty()


async def test_an_announcement_reaches_every_instance_after_the_changes_before_it(
    open_pg: OpenStore,
) -> None:
    """Store.announce: a message of the application's own, heard beside proposals' ids by every
    instance listening (the announcer's too); a message that could pass for an id is refused."""
    listening, announcing = await open_pg(), await open_pg()
    heard, own = Heard(), Heard()
    await listening.listen(heard)
    await announcing.listen(own)
    marker = await _withdrawn(announcing)

    await announcing.announce("directory:group:S1")

    assert [await heard.next() for _ in range(2)] == [marker, "directory:group:S1"]
    assert [await own.next() for _ in range(2)] == [marker, "directory:group:S1"]
    with pytest.raises(ValueError, match="':'"):
        await announcing.announce("cs_notanid")


async def test_changes_in_another_schema_of_the_database_are_not_heard(
    open_pg: OpenStore, raw: asyncpg.Connection[asyncpg.Record]
) -> None:
    listening = await open_pg()
    heard = Heard()
    await listening.listen(heard)
    other_schema = f"cs_other_{secrets.token_hex(4)}"
    await raw.execute(f'CREATE SCHEMA "{other_schema}"')
    try:
        other = await PostgresStore.open(URL, server_settings={"search_path": other_schema})
        try:
            await _withdrawn(other)  # another deployment's change
        finally:
            await other.close()
        ours = await _withdrawn(await open_pg())

        assert await heard.next() == ours  # the other schema's came first, and was not heard
    finally:
        await raw.execute(f'DROP SCHEMA "{other_schema}" CASCADE')


async def test_a_change_rolled_back_is_never_heard(
    open_pg: OpenStore, raw: asyncpg.Connection[asyncpg.Record]
) -> None:
    listening, deciding = await open_pg(), await open_pg({"lock_timeout": "200ms"})
    heard = Heard()
    await listening.listen(heard)
    lost = new_proposal(NOW)
    await deciding.create_proposal(lost)

    async with raw.transaction():
        await raw.execute("LOCK TABLE audit_log IN SHARE MODE")  # the audit append waits
        with pytest.raises(StoreUnavailable):
            # the status changed, then the transaction failed
            await deciding.cancel(lost.id, agent=lost.agent, now=NOW)
    marker = await _withdrawn(deciding)

    assert await heard.next() == marker  # notifications arrive in commit order


async def test_the_listener_reconnects_after_its_connection_is_killed(
    open_pg: OpenStore, raw: asyncpg.Connection[asyncpg.Record]
) -> None:
    listening, deciding = await open_pg(), await open_pg()
    heard = Heard()
    await listening.listen(heard)
    old_pid = listening._changes.server_pid
    assert old_pid is not None

    assert await raw.fetchval("SELECT pg_terminate_backend($1)", old_pid)
    for _ in range(3000):  # bounded wait for the new connection (polling: no event to await)
        if listening._changes.server_pid not in (None, old_pid):
            break
        await asyncio.sleep(0.01)
    changed = await _withdrawn(deciding)

    assert listening._changes.server_pid not in (None, old_pid)
    assert await heard.next() == changed


async def test_a_listener_stopped_half_way_leaves_no_connection_open(schema: str) -> None:
    proxy = StoreProxy()
    port = await proxy.start()
    opened: list[asyncpg.Connection[asyncpg.Record]] = []

    async def connect() -> asyncpg.Connection[asyncpg.Record]:
        url = f"postgresql://postgres@127.0.0.1:{port}/test"
        connection = await asyncpg.connect(url, server_settings={"search_path": schema})
        opened.append(connection)
        proxy.hold()  # the network stalls: the feed's first statement gets no answer
        return connection

    feed = ChangeFeed(connect)
    subscribing = asyncio.ensure_future(feed.subscribe(lambda proposal_id: None))
    try:
        for _ in range(1000):  # bounded wait for the connection (no event to await)
            if opened:
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)
        subscribing.cancel()  # as closing the store cancels a listener reconnecting
        with pytest.raises(asyncio.CancelledError):
            await subscribing
        assert opened and opened[0].is_closed()
        assert feed.server_pid is None
    finally:
        await proxy.close()


async def test_listen_on_a_closed_store_raises_store_unavailable(open_pg: OpenStore) -> None:
    store = await open_pg()
    await store.close()

    with pytest.raises(StoreUnavailable, match="closed"):
        await store.listen(Heard())


# --- migrations ----------------------------------------------------------------------------------


async def test_migrations_are_recorded_once_and_reopening_applies_nothing(
    open_pg: OpenStore, raw: asyncpg.Connection[asyncpg.Record]
) -> None:
    await (await open_pg()).close()
    await (await open_pg()).close()

    rows = await raw.fetch("SELECT version, name, applied_at FROM schema_migrations")

    expected = [(m.version, m.name) for m in load_migrations("postgres")]
    assert sorted((r["version"], r["name"]) for r in rows) == expected
    assert all(r["applied_at"].tzinfo is not None for r in rows)


async def test_a_failing_migration_leaves_nothing_behind(
    raw: asyncpg.Connection[asyncpg.Record],
) -> None:
    good = Migration(1, "good", "CREATE TABLE kept (x integer);")
    bad = Migration(2, "bad", "CREATE TABLE half (x integer);\nINSERT INTO missing VALUES (1);")

    with pytest.raises(asyncpg.UndefinedTableError, match="missing"):
        await apply_migrations(raw, [good, bad])

    assert not raw.is_in_transaction()
    tables = {r["tablename"] for r in await raw.fetch("SELECT tablename FROM pg_tables")}
    assert "kept" in tables and "half" not in tables
    assert [r["version"] for r in await raw.fetch("SELECT version FROM schema_migrations")] == [1]
    assert await apply_migrations(raw, [good]) == []


async def test_a_database_migrated_by_a_newer_version_is_refused(
    open_pg: OpenStore, raw: asyncpg.Connection[asyncpg.Record]
) -> None:
    await (await open_pg()).close()
    await raw.execute("INSERT INTO schema_migrations (version, name) VALUES (99, 'future')")

    with pytest.raises(StoreUnavailable, match=r"migration\(s\) 0099 .*upgrade Countersign"):
        await open_pg()


# --- what the database itself enforces -----------------------------------------------------------


async def test_status_check_lists_exactly_the_lifecycle_statuses(
    open_pg: OpenStore, raw: asyncpg.Connection[asyncpg.Record], schema: str
) -> None:
    await open_pg()
    # another schema's constraint of that name (a concurrent test run's, another deployment's)
    other_schema = f"cs_other_{secrets.token_hex(4)}"
    await raw.execute(f'CREATE SCHEMA "{other_schema}"')
    try:
        await raw.execute(
            f'CREATE TABLE "{other_schema}".proposals (status TEXT CONSTRAINT '
            "proposals_status_is_a_lifecycle_status CHECK (status IN ('elsewhere')))"
        )

        [check] = await raw.fetch(
            "SELECT pg_get_constraintdef(c.oid) FROM pg_constraint c "
            "JOIN pg_namespace n ON n.oid = c.connamespace "
            "WHERE c.conname = 'proposals_status_is_a_lifecycle_status' AND n.nspname = $1",
            schema,
        )
    finally:
        await raw.execute(f'DROP SCHEMA "{other_schema}" CASCADE')

    assert set(re.findall(r"'(\w+)'", check[0])) == {status.value for status in Status}


async def test_database_allows_exactly_the_lifecycle_transitions(
    open_pg: OpenStore, raw: asyncpg.Connection[asyncpg.Record]
) -> None:
    store = await open_pg()
    await store.create_proposal(new_proposal(NOW, id="p"))

    allowed: set[tuple[Status, Status]] = set()
    for source in Status:
        for target in Status:
            # Put the row in ``source`` past the trigger, then try the move to ``target``.
            await raw.execute(
                "ALTER TABLE proposals DISABLE TRIGGER proposals_status_follows_lifecycle"
            )
            await raw.execute("UPDATE proposals SET status = $1 WHERE id = 'p'", source.value)
            await raw.execute(
                "ALTER TABLE proposals ENABLE TRIGGER proposals_status_follows_lifecycle"
            )
            try:
                await raw.execute("UPDATE proposals SET status = $1 WHERE id = 'p'", target.value)
            except asyncpg.IntegrityConstraintViolationError as error:
                assert "not a lifecycle transition" in str(error)
            else:
                if source != target:
                    allowed.add((source, target))

    expected = {(source, target) for source, targets in TRANSITIONS.items() for target in targets}
    assert allowed == expected


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("arguments", '{"amount_cents": 1}'),
        ("binding_hash", "x"),
        ("risk", "read"),
        ("supersedes", "q"),
    ],
)
async def test_database_refuses_to_change_the_frozen_contract(
    open_pg: OpenStore, raw: asyncpg.Connection[asyncpg.Record], column: str, value: str | None
) -> None:
    store = await open_pg()
    await store.create_proposal(new_proposal(NOW, id="p"))

    with pytest.raises(asyncpg.IntegrityConstraintViolationError, match="frozen contract"):
        await raw.execute(f"UPDATE proposals SET {column} = $1 WHERE id = 'p'", value)


async def test_database_refuses_a_proposal_outside_its_batch_or_moved_to_another(
    open_pg: OpenStore, raw: asyncpg.Connection[asyncpg.Record]
) -> None:
    store = await open_pg()
    new = new_proposal(NOW, id="p")
    await store.create_proposal(new)
    await raw.execute(
        "INSERT INTO batches (id, key, channel, rule_id, opened_at, closes_at, max_size) "
        "VALUES ('b', 'k', 'C-OTHER', $1, $2, $2, 10)",
        new.rule_id,
        NOW,
    )
    columns = ", ".join(
        await raw.fetchval(
            "SELECT array_agg(column_name::text ORDER BY ordinal_position) FROM "
            "information_schema.columns WHERE table_schema = current_schema() "
            "AND table_name = 'proposals' AND is_generated = 'NEVER'"
        )
    )
    copy = (  # proposal p as another proposal, q, in batch b
        f"INSERT INTO proposals ({columns}) SELECT {columns} FROM jsonb_populate_record("
        "NULL::proposals, (SELECT to_jsonb(p) FROM proposals AS p WHERE p.id = 'p') "
        "|| jsonb_build_object('id', 'q', 'submission_key', 'q', 'batch_id', 'b'))"
    )

    with pytest.raises(asyncpg.IntegrityConstraintViolationError, match="joins one batch"):
        await raw.execute(copy)  # a new proposal in a batch of another channel
    with pytest.raises(asyncpg.IntegrityConstraintViolationError, match="joins one batch"):
        await raw.execute("UPDATE proposals SET batch_id = 'b' WHERE id = 'p'")  # moved
    await raw.execute("UPDATE batches SET channel = $1 WHERE id = 'b'", new.channel)
    await raw.execute(copy)  # in a batch of its own channel and rule: let in
    with pytest.raises(asyncpg.IntegrityConstraintViolationError, match="joins one batch"):
        await raw.execute("UPDATE proposals SET batch_id = NULL WHERE id = 'q'")  # moved out


async def test_database_lets_the_expiry_change_only_with_one_extension(
    open_pg: OpenStore, raw: asyncpg.Connection[asyncpg.Record]
) -> None:
    store = await open_pg()
    await store.create_proposal(new_proposal(NOW, id="p"))
    later = NOW + timedelta(hours=5)

    with pytest.raises(asyncpg.IntegrityConstraintViolationError, match="extended once"):
        await raw.execute("UPDATE proposals SET expires_at = $1 WHERE id = 'p'", later)
    await raw.execute(
        "UPDATE proposals SET expires_at = $1, extended_by = 'U9', extended_at = $1 WHERE id = 'p'",
        later,
    )
    with pytest.raises(asyncpg.IntegrityConstraintViolationError, match="extended once"):
        await raw.execute(
            "UPDATE proposals SET expires_at = $1 WHERE id = 'p'", later + timedelta(hours=1)
        )
    assert (await store.get_proposal("p")).extended_by == "U9"


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE audit_log SET actor = 'mallory' WHERE seq = 1",
        "DELETE FROM audit_log WHERE seq = 2",
        "TRUNCATE audit_log",
        "UPDATE audit_head SET seq = 1",
        "DELETE FROM audit_head",
        "TRUNCATE audit_head",
    ],
)
async def test_database_refuses_to_change_or_remove_audit_entries(
    open_pg: OpenStore, raw: asyncpg.Connection[asyncpg.Record], statement: str
) -> None:
    store = await open_pg()
    await store.create_proposal(new_proposal(NOW, decision="deny", status=Status.DENIED))
    before = await store.audit_log()

    with pytest.raises(asyncpg.IntegrityConstraintViolationError, match=r"audit_(log|head)"):
        await raw.execute(statement)

    assert await store.audit_log() == before
    assert (await store.verify_audit()).ok


async def test_database_refuses_an_entry_that_does_not_follow_the_head(
    open_pg: OpenStore, raw: asyncpg.Connection[asyncpg.Record]
) -> None:
    store = await open_pg()
    entry = await store.record_event(None, actor="bot", event="note", detail={}, now=NOW)

    with pytest.raises(asyncpg.IntegrityConstraintViolationError, match="follow the head"):
        await raw.execute(
            "INSERT INTO audit_log (seq, at, actor, event, detail, prev_hash, hash) "
            "VALUES (3, now(), 'mallory', 'forged', '{}', $1, $1)",
            entry.hash,
        )


async def test_verify_audit_finds_entries_removed_from_the_end(
    open_pg: OpenStore, raw: asyncpg.Connection[asyncpg.Record]
) -> None:
    store = await open_pg()
    for i in range(3):
        await store.record_event(None, actor="bot", event="note", detail={"i": i}, now=NOW)
    # Only by switching the append-only trigger off: what someone with the owner's rights can do.
    await raw.execute("ALTER TABLE audit_log DISABLE TRIGGER audit_log_refuses_update_and_delete")
    await raw.execute("DELETE FROM audit_log WHERE seq = 3")

    report = await store.verify_audit()

    assert (report.ok, report.first_bad_seq) == (False, 3)
    assert report.problem is not None and "removed from the end" in report.problem


async def test_verify_audit_finds_a_changed_entry(
    open_pg: OpenStore, raw: asyncpg.Connection[asyncpg.Record]
) -> None:
    store = await open_pg()
    for i in range(3):
        await store.record_event(None, actor="bot", event="note", detail={"i": i}, now=NOW)
    await raw.execute("ALTER TABLE audit_log DISABLE TRIGGER audit_log_refuses_update_and_delete")
    await raw.execute("""UPDATE audit_log SET detail = '{"i": 7}' WHERE seq = 2""")

    report = await store.verify_audit()

    assert (report.ok, report.first_bad_seq) == (False, 2)


async def test_empty_audit_head_is_the_genesis_of_store_audit(
    open_pg: OpenStore, raw: asyncpg.Connection[asyncpg.Record]
) -> None:
    await open_pg()

    assert [tuple(r) for r in await raw.fetch("SELECT seq, hash FROM audit_head")] == [(0, GENESIS)]


async def test_json_reads_back_exactly_so_hashes_still_verify(
    open_pg: OpenStore,
) -> None:
    # jsonb would return 1e+20 as the integer 100000000000000000000 (another canonical JSON,
    # so another hash) and refuse "\u0000"; the json columns keep what was written.
    store = await open_pg()
    odd: dict[str, object] = {"big": 1e20, "tiny": 1e-7, "nul": "a\x00b", "z": 1, "a": [2.50]}
    new = new_proposal(NOW, arguments=odd, request=odd)
    await store.create_proposal(new)
    await store.record_event(new.id, actor="bot", event="odd", detail=odd, now=NOW)  # type: ignore[arg-type]

    stored = await store.get_proposal(new.id)
    entry = (await store.audit_log(new.id))[-1]

    assert canonical_json(stored.arguments) == canonical_json(new.arguments)
    assert canonical_json(stored.request) == canonical_json(new.request)
    assert canonical_json(entry.detail) == canonical_json(odd)
    assert (await store.verify_audit()).ok


async def test_times_are_instants_whatever_the_session_time_zone(
    open_pg: OpenStore,
) -> None:
    store = await open_pg({"TimeZone": "Pacific/Kiritimati"})
    new = new_proposal(NOW, expires_at=NOW + timedelta(minutes=1))
    await store.create_proposal(new)

    stored = await store.get_proposal(new.id)

    assert (stored.created_at, stored.expires_at) == (NOW, NOW + timedelta(minutes=1))
    assert [p.id for p in await store.expire_due(now=NOW + timedelta(minutes=1))] == [new.id]


# --- driver errors are translated ----------------------------------------------------------------


async def test_a_server_that_cannot_be_reached_raises_store_unavailable() -> None:
    # Port 1 on loopback: nothing listens there, so the connection is refused at once.
    with pytest.raises(StoreUnavailable, match="cannot open PostgreSQL database"):
        await PostgresStore.open("postgresql://postgres@127.0.0.1:1/test", connect_timeout=5)


async def test_a_database_that_does_not_exist_raises_store_unavailable_naming_it() -> None:
    with pytest.raises(StoreUnavailable, match="no_such_database_for_countersign"):
        await PostgresStore.open(
            "postgresql://postgres@127.0.0.1:5432/no_such_database_for_countersign"
        )


async def test_messages_never_show_the_password() -> None:
    url = "postgresql://postgres:s3cret@127.0.0.1:1/test"

    with pytest.raises(StoreUnavailable) as raised:
        await PostgresStore.open(url, connect_timeout=5)

    assert "s3cret" not in str(raised.value)
    assert redacted(url) == "postgresql://postgres:***@127.0.0.1:1/test"
    assert redacted(URL) == URL


async def test_a_held_lock_raises_store_unavailable_and_the_store_recovers(
    open_pg: OpenStore, raw: asyncpg.Connection[asyncpg.Record]
) -> None:
    store = await open_pg({"lock_timeout": "200ms"})
    async with raw.transaction():
        await raw.execute("LOCK TABLE audit_log IN SHARE MODE")  # another session, stuck
        with pytest.raises(StoreUnavailable, match="lock timeout"):
            await store.create_proposal(new_proposal(NOW))

    _, created = await store.create_proposal(new_proposal(NOW))
    assert created
    assert len(await store.audit_log()) == 1  # the refused attempt left nothing


async def test_a_connection_killed_mid_transaction_raises_store_unavailable_then_recovers(
    open_pg: OpenStore, raw: asyncpg.Connection[asyncpg.Record]
) -> None:
    store = await open_pg(max_size=1)
    await store.record_event(None, actor="bot", event="before", detail={}, now=NOW)
    pid = await _backend_pid(store)
    async with raw.transaction():
        await raw.execute("LOCK TABLE audit_log IN SHARE MODE")  # the store's append waits
        lost = asyncio.create_task(
            store.record_event(None, actor="bot", event="lost", detail={}, now=NOW)
        )
        await _until_waiting_for_a_lock(raw, pid)
        assert await raw.fetchval("SELECT pg_terminate_backend($1)", pid)

        with pytest.raises(StoreUnavailable):
            await lost

    await store.record_event(None, actor="bot", event="after", detail={}, now=NOW)
    assert [e.event for e in await store.audit_log()] == ["before", "after"]


async def _backend_pid(store: PostgresStore) -> int:
    async with store.connection() as db:  # the pool's one connection
        pid: int = await db.fetchval("SELECT pg_backend_pid()")
        return pid


async def _until_waiting_for_a_lock(raw: asyncpg.Connection[asyncpg.Record], pid: int) -> None:
    """Poll the server until the backend ``pid`` waits for a lock (the database has no event)."""
    query = "SELECT wait_event_type FROM pg_stat_activity WHERE pid = $1"
    for _ in range(3000):
        if await raw.fetchval(query, pid) == "Lock":
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"backend {pid} never waited for a lock")


async def test_a_nul_character_in_text_is_refused_and_stores_nothing(open_pg: OpenStore) -> None:
    store = await open_pg()

    with pytest.raises(StoreError, match="NUL character"):
        await store.create_proposal(new_proposal(NOW, agent_reason="before\x00after"))

    assert await store.audit_log() == []


async def test_a_closed_store_raises_store_unavailable(open_pg: OpenStore) -> None:
    store = await open_pg()
    await store.close()

    with pytest.raises(StoreUnavailable, match="closed"):
        await store.get_proposal("p")


async def test_closing_right_after_a_write_warns_of_nothing(
    open_pg: OpenStore, caplog: pytest.LogCaptureFixture
) -> None:
    """A write wakes the audit sealer; closing the store right after must not let that run
    meet the closed store and warn that it could not seal (its entries are sealed by the next
    instance: store/postgres.py)."""
    store = await open_pg()
    for n in range(20):
        await store.create_proposal(new_proposal(NOW + timedelta(milliseconds=n)))
        with caplog.at_level(logging.WARNING, logger="store"):
            await store.close()
        assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
        store = await open_pg()


async def test_calls_waiting_while_the_store_closes_raise_store_unavailable_or_finish(
    open_pg: OpenStore,
) -> None:
    store = await open_pg(max_size=2)
    calls = [store.create_proposal(new_proposal(NOW)) for _ in range(6)]

    results = await asyncio.gather(*calls, store.close(), return_exceptions=True)

    failures = [r for r in results if isinstance(r, BaseException)]
    assert failures and all(isinstance(r, StoreUnavailable) for r in failures)


async def test_a_naive_now_is_refused_naming_the_argument(open_pg: OpenStore) -> None:
    store = await open_pg()

    with pytest.raises(ValueError, match="now: got naive datetime"):
        await store.expire_due(now=datetime(2031, 1, 1))  # noqa: DTZ001 - the point


async def test_expire_due_refuses_a_limit_below_one(open_pg: OpenStore) -> None:
    store = await open_pg()
    await store.create_proposal(new_proposal(NOW, expires_at=NOW))

    with pytest.raises(ValueError, match="limit: got 0"):
        await store.expire_due(now=NOW, limit=0)
    assert (await store.audit_log())[-1].event == "submitted"


async def test_cancelled_writes_raise_cancelled_and_leave_the_store_usable(
    open_pg: OpenStore,
) -> None:
    store = await open_pg(max_size=2)
    cancelled = 0
    for delay in [i * 0.0002 for i in range(60)]:
        task = asyncio.create_task(
            store.record_event(None, actor="t", event="tick", detail={}, now=NOW)
        )
        await asyncio.sleep(delay)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            cancelled += 1

    assert cancelled > 0  # some cancellations really landed mid-write
    await store.record_event(None, actor="t", event="after", detail={}, now=NOW)
    assert (await store.verify_audit()).ok


@pytest.mark.parametrize(
    ("error", "kind", "message"),
    [
        (asyncpg.UniqueViolationError("duplicate key"), StoreError, "refused the change"),
        (asyncpg.CheckViolationError("check"), StoreError, "refused the change"),
        (asyncpg.CharacterNotInRepertoireError("0x00"), StoreError, "NUL character"),
        (asyncpg.InvalidTextRepresentationError("bad"), StoreError, "refused the change"),
        (asyncpg.ConnectionDoesNotExistError("gone"), StoreUnavailable, "gone"),
        (asyncpg.AdminShutdownError("shutdown"), StoreUnavailable, "shutdown"),
        (asyncpg.CannotConnectNowError("starting"), StoreUnavailable, "starting"),
        (asyncpg.TooManyConnectionsError("too many"), StoreUnavailable, "too many"),
        (asyncpg.DeadlockDetectedError("deadlock"), StoreUnavailable, "deadlock"),
        (asyncpg.SerializationError("serialize"), StoreUnavailable, "serialize"),
        (asyncpg.QueryCanceledError("statement timeout"), StoreUnavailable, "timeout"),
        (asyncpg.UndefinedTableError("no table"), StoreUnavailable, "no table"),
        (asyncpg.InterfaceError("pool is closing"), StoreUnavailable, "pool is closing"),
        (ConnectionRefusedError(111, "refused"), StoreUnavailable, "cannot reach"),
        (TimeoutError(), StoreUnavailable, "TimeoutError"),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, BaseException) else None,
)
def test_every_driver_error_becomes_a_store_error(
    error: BaseException, kind: type[StoreError], message: str
) -> None:
    translated = translate(error)

    assert type(translated) is kind
    assert message in str(translated)


# --- open_store ----------------------------------------------------------------------------------


@pytest.mark.parametrize("scheme", ["postgresql", "postgres"])
async def test_open_store_opens_postgresql_urls(
    schema: str, raw: asyncpg.Connection[asyncpg.Record], scheme: str
) -> None:
    # asyncpg passes query parameters it does not know on as session settings
    store = await open_store(f"{scheme}://postgres@127.0.0.1:5432/test?search_path={schema}")
    try:
        assert isinstance(store, PostgresStore)
        new = new_proposal(NOW)
        await store.create_proposal(new)
        assert (await store.get_proposal(new.id)).id == new.id
    finally:
        await store.close()

    assert await raw.fetchval("SELECT count(*) FROM proposals") == 1  # in the test's schema


async def test_connections_are_named_countersign_unless_the_url_names_them(
    open_pg: OpenStore, schema: str, raw: asyncpg.Connection[asyncpg.Record]
) -> None:
    """Instances on one database are told apart in pg_stat_activity by the name their URL
    gives (the store's default would override it otherwise)."""
    default = await open_pg()
    named = await PostgresStore.open(
        f"{URL}?application_name=countersign-a", server_settings={"search_path": schema}
    )
    try:
        await named.listen(lambda proposal_id: None)
        for store, name in ((default, "countersign"), (named, "countersign-a")):
            async with store.connection() as db:
                assert await db.fetchval("SHOW application_name") == name
        listening = named._changes.server_pid
        assert (
            await raw.fetchval(
                "SELECT application_name FROM pg_stat_activity WHERE pid = $1", listening
            )
            == "countersign-a"
        )
    finally:
        await named.close()


async def test_durable_false_turns_off_synchronous_commit_only(open_pg: OpenStore) -> None:
    fast, safe = await open_pg(durable=False), await open_pg()

    async def setting(store: PostgresStore) -> str:
        async with store.connection() as db:
            value: str = await db.fetchval("SHOW synchronous_commit")
            return value

    assert (await setting(fast), await setting(safe)) == ("off", "on")


async def test_outcome_json_is_stored_as_json_text(
    open_pg: OpenStore, raw: asyncpg.Connection[asyncpg.Record]
) -> None:
    store = await open_pg()
    new = new_proposal(NOW, decision="auto", status=Status.EXECUTING)
    await store.create_proposal(new)
    await store.record_outcome(new.id, OUTCOME_EXAMPLES[0], now=NOW)

    kind = await raw.fetchval("SELECT outcome->>'kind' FROM proposals WHERE id = $1", new.id)
    detail = await raw.fetchval("SELECT detail FROM audit_log ORDER BY seq DESC LIMIT 1")

    assert kind == "succeeded"
    assert json.loads(detail)["kind"] == "succeeded"


# --- query plans --------------------------------------------------------------------------------


def _nodes(plan: dict[str, Any]) -> list[dict[str, Any]]:
    """Every node of an EXPLAIN (FORMAT JSON) plan."""
    return [plan, *(node for child in plan.get("Plans", ()) for node in _nodes(child))]


def _rows_read(nodes: list[dict[str, Any]]) -> int:
    """Rows the plan's ``nodes`` read in all: those each kept and those its filter removed, in
    every loop."""
    return sum(
        (node["Actual Rows"] + node.get("Rows Removed by Filter", 0)) * node["Actual Loops"]
        for node in nodes
    )


async def _explained(
    raw: asyncpg.Connection[asyncpg.Record], name: str, params: dict[str, Any]
) -> dict[str, Any]:
    """The plan the named query ran with, by EXPLAIN ANALYZE (which runs it: rolled back
    after); ``params`` may hold more than it takes."""
    query = load_queries("postgres")[name]
    given = {key: params[key] for key in query.params}
    values = [
        PgTx.param(key, value)
        for key, value in zip(query.params, query.positional(given), strict=True)
    ]
    explained = raw.transaction()
    await explained.start()
    try:
        [plan] = json.loads(
            await raw.fetchval(f"EXPLAIN (ANALYZE, FORMAT JSON) {query.text}", *values)
        )
    finally:
        await explained.rollback()
    return dict(plan)


async def _literal(raw: asyncpg.Connection[asyncpg.Record], value: Any) -> str:
    """``value`` (a bound parameter as PgTx gives it) as an SQL literal of its text."""
    if isinstance(value, list | tuple):
        return str(await raw.fetchval("SELECT quote_nullable($1::text[]::text)", list(value)))
    if isinstance(value, bool):
        value = "true" if value else "false"
    elif isinstance(value, datetime):
        value = value.isoformat()
    elif value is not None:
        value = str(value)
    return str(await raw.fetchval("SELECT quote_nullable($1::text)", value))


class _Prepared:
    """A named query prepared once on ``raw`` with a generic plan, as a pooled connection
    keeps it: planned at its first run, from what the tables held then, and kept however they
    grow (only new statistics or a change of the schema make PostgreSQL plan it again)."""

    def __init__(self, raw: asyncpg.Connection[asyncpg.Record], name: str) -> None:
        self._raw = raw
        self._query = load_queries("postgres")[name]
        self._name = f"generic_{name}"

    async def explained(self, params: dict[str, Any]) -> dict[str, Any]:
        """The plan a run with ``params`` took, by EXPLAIN ANALYZE (rolled back after)."""
        if not await self._raw.fetchval(
            "SELECT count(*) FROM pg_prepared_statements WHERE name = $1", self._name
        ):
            await self._raw.execute("SET plan_cache_mode = force_generic_plan")
            await self._raw.execute(f"PREPARE {self._name} AS {self._query.text}")
        given = {key: params[key] for key in self._query.params}
        values = [
            PgTx.param(key, value)
            for key, value in zip(self._query.params, self._query.positional(given), strict=True)
        ]
        literals = ", ".join([await _literal(self._raw, value) for value in values])
        explained = self._raw.transaction()
        await explained.start()
        try:
            [plan] = json.loads(
                await self._raw.fetchval(
                    f"EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE {self._name} ({literals})"
                )
            )
        finally:
            await explained.rollback()
        return dict(plan)


class _Custom:
    """A named query planned at each run (a custom plan), from the statistics the tables have
    then: none, where autovacuum is off and nothing ran ANALYZE."""

    def __init__(self, raw: asyncpg.Connection[asyncpg.Record], name: str) -> None:
        self._raw = raw
        self._name = name

    async def explained(self, params: dict[str, Any]) -> dict[str, Any]:
        """The plan a run with ``params`` took, by EXPLAIN ANALYZE (rolled back after)."""
        return await _explained(self._raw, self._name, params)


async def _planned_empty(
    raw: asyncpg.Connection[asyncpg.Record],
    name: str,
    plan: str,
    params: dict[str, Any],
    tables: tuple[str, ...],
) -> _Custom | _Prepared:
    """The named query, run once on ``tables`` while they are empty and never analyzed
    (autovacuum off for the test, which the store's own analysis, store/pg_statistics, leaves
    alone too): planned again at each run (``plan`` "custom"), or prepared with the generic
    plan made now and kept however the tables grow ("generic")."""
    for table in tables:
        await raw.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = false)")
    planned = _Prepared(raw, name) if plan == "generic" else _Custom(raw, name)
    await planned.explained(params)
    return planned


def _reads(nodes: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """What each plan node read, for an assertion's message."""
    return [
        (n["Node Type"], n.get("Index Name"), n["Actual Rows"], n["Actual Loops"]) for n in nodes
    ]


async def test_the_pending_limit_looks_up_the_submissions_in_flight_by_id_in_a_plan_made_empty(
    open_pg: OpenStore, raw: asyncpg.Connection[asyncpg.Record]
) -> None:
    """A submission bounded by its agent's pending limit counts its submissions in flight that
    are not stored yet. Planned while the proposals table was nearly empty (a new database, the
    benchmark's), and kept by the pooled connection, that count hashed every stored proposal to
    match two ids: the table read on every submission, a third of PostgreSQL's CPU in the
    ingest row (docs/benchmarks.md). It now looks each id up by key, whatever the plan saw."""
    store = await open_pg()
    await store.statistics.close()  # no analysis meanwhile: the plan stays the one made empty
    generic = _Prepared(raw, "insert_submitted")
    params: dict[str, Any] = {
        "pending_limit": 100,
        "in_flight": json.dumps(["p_in_flight_1", "p_in_flight_2"]),
        "audit_entries": "[]",
        "effects": "[]",
        "post_due": NOW,
    }
    first = new_proposal(NOW)
    await generic.explained({**insert_proposal_params(first), **params})  # planned while empty
    for n in range(2000):
        await store.create_proposal(new_proposal(NOW + timedelta(milliseconds=n)))
    plan = await generic.explained({**insert_proposal_params(new_proposal(NOW)), **params})
    nodes = [n for n in _nodes(plan["Plan"]) if n.get("Relation Name") == "proposals"]
    assert plan["Plan"]["Actual Rows"] == 1
    assert _rows_read(nodes) <= 4, [
        (n["Node Type"], n.get("Index Name"), n["Actual Rows"], n["Actual Loops"]) for n in nodes
    ]


async def test_grouping_similar_posts_reads_the_similar_proposals_once_however_long_the_backlog(
    open_pg: OpenStore, raw: asyncpg.Connection[asyncpg.Record]
) -> None:
    """With a backlog of posts to one channel, each for its own requester, grouping one post's
    similar ones looked up the channel's pending proposals once per due outbox entry (12.8 s a
    lookup in a benchmark with 2,356 due, statistics not yet gathered). It now finds the similar
    proposals first, once, and then their entries."""
    store = await open_pg()
    for n in range(300):
        await store.create_proposal(new_proposal(NOW, requested_by=f"U{n:04d}"))
    params = {
        "channel": "C0FINANCE",
        "operation": new_proposal(NOW).operation,
        "requested_by": "U0150",
        "now": NOW,
        "lease": NOW + LEASE,
        "limit": 10,
    }
    plan = await _explained(raw, "claim_similar_posts", params)
    scans = [n for n in _nodes(plan["Plan"]) if n.get("Relation Name") == "proposals"]
    assert plan["Plan"]["Actual Rows"] == 1  # U0150's post, and only it
    assert scans and all(scan["Actual Loops"] == 1 for scan in scans), scans


@pytest.mark.parametrize("statistics", ["none", "analyzed", "generic"])
async def test_grouping_similar_posts_walks_only_the_oldest_few_of_a_backlog_of_them(
    open_pg: OpenStore, raw: asyncpg.Connection[asyncpg.Record], statistics: str
) -> None:
    """With 1,500 similar posts still to show (posts arriving faster than Slack lets a channel
    show them), grouping leased the oldest ten after reading and sorting them all; the cost of
    each lookup grew with the backlog. It now walks them oldest first and stops at its limit,
    with or without statistics, and in the generic plan a pooled connection made while the
    tables were empty."""
    store = await open_pg()
    later = NOW + timedelta(hours=1)
    params = {
        "channel": "C0FINANCE",
        "operation": "payments.refund",
        "requested_by": "U0123",
        "now": later,
        "lease": later + LEASE,
        "limit": 10,
    }
    planned = await _planned_empty(
        raw,
        "claim_similar_posts",
        "generic" if statistics == "generic" else "custom",
        params,
        ("proposals", "outbox"),
    )
    made = [new_proposal(NOW + timedelta(milliseconds=n)) for n in range(1500)]
    for new in made:
        await store.create_proposal(new)
    if statistics == "analyzed":
        await raw.execute("ANALYZE proposals; ANALYZE outbox")
    plan = await planned.explained(params)
    nodes = _nodes(plan["Plan"])
    scans = [n for n in nodes if n.get("Relation Name") == "proposals"]
    read = [scan["Actual Rows"] + scan.get("Rows Removed by Filter", 0) for scan in scans]
    assert plan["Plan"]["Actual Rows"] == 10
    assert scans and max(read) <= 12, [(n["Node Type"], n.get("Actual Rows")) for n in nodes]
    outbox = [n for n in nodes if n.get("Relation Name") == "outbox"]
    assert _rows_read(outbox) <= 60, [
        (n["Node Type"], n.get("Index Name"), n["Actual Rows"], n["Actual Loops"]) for n in outbox
    ]
    leased = await store.digests().claim_similar_posts(
        channel="C0FINANCE",
        operation="payments.refund",
        requested_by="U0123",
        now=later,
        limit=3,
        lease=LEASE,
    )
    assert [d.proposal_id for d in leased] == [new.id for new in made[:3]]


@pytest.mark.parametrize(
    ("query_name", "statistics"),
    [
        *(
            (name, statistics)
            for name in ("expire_due", "remind_due", "hand_over_due", "reclaim_abandoned")
            for statistics in ("none", "analyzed", "generic")
        ),
        # Before its first ANALYZE PostgreSQL reads and sorts every pending proposal for the
        # queue: autovacuum analyzes a table once 50 rows and a tenth of it have changed.
        ("select_pending", "analyzed"),
    ],
)
async def test_the_sweeps_and_the_pending_queue_read_only_what_they_return(
    open_pg: OpenStore, raw: asyncpg.Connection[asyncpg.Record], query_name: str, statistics: str
) -> None:
    """With 2,000 proposals pending and none of them due, each sweep reads no proposal whatever
    the planner's statistics say, and the queue of pending proposals only the five it shows
    (SQLite's plans walked every pending proposal; tests/store/test_sqlite.py). With a few
    hundred and no statistics PostgreSQL matches the sweep's ids by reading the pending
    proposals, as cheap as looking them up at that size: the test needs the larger table."""
    store = await open_pg()
    params = {"now": NOW + timedelta(minutes=10), "limit": 5, "outcome": "{}"}
    planned = await _planned_empty(
        raw,
        query_name,
        "generic" if statistics == "generic" else "custom",
        params,
        ("proposals",),
    )
    await store_waiting(store, 2000, at=NOW)
    if statistics == "analyzed":
        await raw.execute("ANALYZE proposals")
    plan = await planned.explained(params)
    nodes = _nodes(plan["Plan"])
    scans = [n for n in nodes if n.get("Relation Name") == "proposals"]
    read = [scan["Actual Rows"] + scan.get("Rows Removed by Filter", 0) for scan in scans]
    assert scans and max(read) <= 5, [
        (n["Node Type"], n.get("Index Name"), n.get("Actual Rows"), n.get("Rows Removed by Filter"))
        for n in scans
    ]


@pytest.mark.parametrize("statistics", ["none", "analyzed", "generic"])
async def test_a_rules_history_walks_only_the_latest_few_of_the_agents_asked_calls(
    open_pg: OpenStore, raw: asyncpg.Connection[asyncpg.Record], statistics: str
) -> None:
    """The grant modal's history of a rule keeps the latest few of the agent's calls the rule
    asked about. It read every one of them and sorted them (0.62 s with 1,000,000 of one
    agent); it now walks them newest first by proposals_asked_by_rule (0026) and stops at its
    limit, with or without statistics, and in the generic plan a pooled connection made while
    the table was empty."""
    store = await open_pg()
    params = {"agent": "billing-agent", "rule_id": "refunds-ask", "since": NOW, "most": 10}
    planned = await _planned_empty(
        raw,
        "select_rule_history",
        "generic" if statistics == "generic" else "custom",
        params,
        ("proposals",),
    )
    for n in range(500):
        await store.create_proposal(new_proposal(NOW + timedelta(seconds=n)))
    if statistics == "analyzed":
        await raw.execute("ANALYZE proposals")
    plan = await planned.explained(params)
    scans = [n for n in _nodes(plan["Plan"]) if n.get("Relation Name") == "proposals"]
    assert scans and _rows_read(scans) <= 10, [
        (n["Node Type"], n.get("Index Name"), n["Actual Rows"], n.get("Rows Removed by Filter"))
        for n in scans
    ]
    history = await store.standing().rule_history(
        "billing-agent", "refunds-ask", now=NOW + timedelta(days=1), most=10
    )
    assert history.capped_at == 10


@pytest.mark.parametrize("statistics", ["none", "analyzed"])
async def test_a_page_of_recent_calls_reads_only_that_page_however_many_older_calls(
    open_pg: OpenStore, raw: asyncpg.Connection[asyncpg.Record], statistics: str
) -> None:
    """`policy export-calls` reads the calls made since a time, 500 at a time. Each page read
    the whole table and sorted what it kept; by proposals_by_time (0030) it starts where the
    last page ended and stops at its limit, with or without statistics. (The command opens its
    own connections, on a table as large as it is: no plan made while it was empty is kept.)"""
    store = await open_pg()
    await store.statistics.close()  # analyzed only where the test says so
    since = NOW + timedelta(days=1)
    params = {"since": since, "after_at": since, "after_id": "", "limit": 5}
    planned = await _planned_empty(
        raw,
        "select_calls_since",
        "custom",
        params,
        ("proposals",),
    )
    for n in range(500):
        await store.create_proposal(new_proposal(NOW + timedelta(seconds=n)))
    for n in range(10):
        await store.create_proposal(new_proposal(since + timedelta(seconds=n)))
    if statistics == "analyzed":
        await raw.execute("ANALYZE proposals")
    plan = await planned.explained(params)
    scans = [n for n in _nodes(plan["Plan"]) if n.get("Relation Name") == "proposals"]
    assert plan["Plan"]["Actual Rows"] == 5
    assert scans and _rows_read(scans) <= 10, _reads(scans)


@pytest.mark.parametrize("plan", ["custom", "generic"])
@pytest.mark.parametrize(
    "query_name", ["expire_due", "remind_due", "hand_over_due", "reclaim_abandoned"]
)
async def test_the_sweeps_read_only_the_few_proposals_due_among_many_pending(
    open_pg: OpenStore, raw: asyncpg.Connection[asyncpg.Record], query_name: str, plan: str
) -> None:
    """With 2,000 proposals pending and three due (to expire, be reminded or handed over, or
    executions past their lease), planned without statistics or kept from a plan made on an
    empty table, each sweep reads about the three it returns; matching the locked rows by id,
    the generic plan walked every pending proposal (2,000 read). The store's sweep returns
    them earliest due first, up to its limit."""
    store = await open_pg()
    later = NOW + timedelta(minutes=10)
    params = {"now": later, "limit": 5, "outcome": "{}"}
    planned = await _planned_empty(raw, query_name, plan, params, ("proposals",))
    await store_waiting(store, 2000, at=NOW)
    due = [NOW + timedelta(minutes=5, seconds=s) for s in (3, 1, 2)]
    made = []
    for at in due:
        changes: dict[str, Any] = {
            "expire_due": {"expires_at": at},
            "remind_due": {"remind_at": at},
            "hand_over_due": {"backup_at": at, "backup_roles": ("finance-leads",)},
            "reclaim_abandoned": {},
        }[query_name]
        new, _ = await store.create_proposal(new_proposal(NOW, **changes))
        if query_name == "reclaim_abandoned":
            await store.claim_for_execution(
                new.id, actor="U1", now=NOW, binding_hash=new.binding_hash, lease_until=at
            )
        made.append(new)
    explained = await planned.explained(params)
    nodes = [n for n in _nodes(explained["Plan"]) if n.get("Relation Name") == "proposals"]
    assert explained["Plan"]["Actual Rows"] == 3
    assert _rows_read(nodes) <= 12, _reads(nodes)
    swept = await getattr(store, query_name)(now=later, limit=2)
    earliest = [new.id for _, new in sorted(zip(due, made, strict=True), key=lambda d: d[0])]
    assert [p.id for p in swept] == earliest[:2]


@pytest.mark.parametrize("plan", ["custom", "generic"])
async def test_leasing_recorded_clicks_reads_only_the_clicks_it_leases(
    open_pg: OpenStore, raw: asyncpg.Connection[asyncpg.Record], plan: str
) -> None:
    """People's clicks are recorded at once and applied after, oldest first. With 1,500 clicks
    recorded, planned without statistics or kept from a plan made on an empty table, leasing
    10 reads about the 10 it leases; matching the locked clicks by id, the generic plan read
    every recorded click. The store leases the oldest first."""
    store = await open_pg()
    later = NOW + timedelta(minutes=1)
    params = {"now": later, "lease": later + LEASE, "limit": 10}
    planned = await _planned_empty(raw, "claim_clicks", plan, params, ("recorded_clicks",))
    clicks = store.clicks()
    recorded = []
    for n in range(300):
        new, _ = await store.create_proposal(new_proposal(NOW + timedelta(milliseconds=n)))
        for actor in range(5):
            click = await clicks.record_click(
                new.id, actor=f"U{actor:04d}", verb="approve", channel="C0FINANCE", now=NOW
            )
            assert click is not None
            recorded.append(click[0].id)
    explained = await planned.explained(params)
    nodes = [n for n in _nodes(explained["Plan"]) if n.get("Relation Name") == "recorded_clicks"]
    assert explained["Plan"]["Actual Rows"] == 10
    assert _rows_read(nodes) <= 40, _reads(nodes)
    leased = await clicks.claim_clicks(now=later, limit=3, lease=LEASE)
    assert [c.id for c in leased] == sorted(recorded)[:3]


@pytest.mark.parametrize("plan", ["custom", "generic"])
async def test_reannouncing_escalations_reads_only_those_due(
    open_pg: OpenStore, raw: asyncpg.Connection[asyncpg.Record], plan: str
) -> None:
    """With 1,500 escalations open and three due to be announced again, planned without
    statistics or kept from a plan made on an empty table, the sweep reads about the three it
    announces; matching the locked escalations by id, the generic plan read every open one.
    The store announces the longest waiting first."""
    store = await open_pg()
    after = timedelta(minutes=30)
    later = NOW + after
    params = {"now": later, "due": later - after, "most": 3, "limit": 5}
    planned = await _planned_empty(
        raw, "reannounce_due_escalations", plan, params, ("escalations",)
    )
    escalations = store.escalations()
    for n in range(1500):
        await escalations.create_escalation(
            new_escalation(NOW + timedelta(minutes=5, milliseconds=n))
        )
    due = [NOW - timedelta(seconds=s) for s in (1, 3, 2)]
    made = [(await escalations.create_escalation(new_escalation(at)))[0] for at in due]
    explained = await planned.explained(params)
    nodes = [n for n in _nodes(explained["Plan"]) if n.get("Relation Name") == "escalations"]
    assert explained["Plan"]["Actual Rows"] == 3
    assert _rows_read(nodes) <= 12, _reads(nodes)
    announced = await escalations.reannounce_due(now=later, after=after, most=3, limit=2)
    longest = [e.id for _, e in sorted(zip(due, made, strict=True), key=lambda d: d[0])]
    assert sorted(e.id for e in announced) == sorted(longest[:2])


@pytest.mark.parametrize("statistics", ["none", "stale", "generic"])
async def test_leasing_due_entries_reads_only_the_entries_it_leases(
    open_pg: OpenStore, raw: asyncpg.Connection[asyncpg.Record], statistics: str
) -> None:
    """On a schema whose statistics were never gathered (a new database, the benchmark's), the
    outbox's lease checked "first of its lane" as an anti-join whose inner side scanned every
    open entry for each candidate, and matched the leased ids by walking every open entry: 315
    ms a claim with 4,800 open entries (docs/benchmarks.md). It now reads about what it leases,
    with no statistics, with statistics gathered while the outbox was empty, and in the generic
    plan a pooled connection made then (which, updating the leased rows by a list of their
    addresses, read the whole outbox: 1,530 rows to lease 10)."""
    store = await open_pg()
    params = {
        "now": NOW + timedelta(hours=1),
        "lease": NOW + timedelta(hours=1) + LEASE,
        "limit": 10,
    }
    planned = await _planned_empty(
        raw,
        "claim_deliveries",
        "generic" if statistics == "generic" else "custom",
        params,
        ("outbox",),
    )
    if statistics == "stale":
        await raw.execute("ANALYZE outbox")
    for n in range(1500):  # each with its card's post due
        await store.create_proposal(new_proposal(NOW + timedelta(milliseconds=n)))
    plan = await planned.explained(params)
    nodes = [n for n in _nodes(plan["Plan"]) if n.get("Relation Name") == "outbox"]
    assert plan["Plan"]["Actual Rows"] == 10
    assert _rows_read(nodes) <= 60, [
        (n["Node Type"], n.get("Index Name"), n["Actual Rows"], n["Actual Loops"]) for n in nodes
    ]


@pytest.mark.parametrize("plan", ["custom", "generic"])
async def test_leasing_decision_entries_reads_only_the_entries_it_leases(
    open_pg: OpenStore, raw: asyncpg.Connection[asyncpg.Record], plan: str
) -> None:
    """A decision's message update and reply are leased first, each proposal's together. With
    750 proposals' updates and replies due and 750 cards still to post, planned without
    statistics or kept from a plan made on an empty outbox, the lease read every open entry
    for each head's lane check and each follower's gap check, and again to find the heads'
    followers and to match the leased rows by id (107,754 to 112,732 entries read to lease
    20). It now reads about what it leases."""
    store = await open_pg()
    later = NOW + timedelta(hours=1)
    params = {"now": later, "lease": later + LEASE, "limit": 10}
    planned = await _planned_empty(
        raw, "claim_decision_deliveries", plan, params, ("proposals", "outbox")
    )
    made = [new_proposal(NOW + timedelta(milliseconds=n)) for n in range(1500)]
    for new in made:
        await store.create_proposal(new)
    decided = made[::2]  # shown and decided: their update and reply due, behind no post
    for new in decided:
        await store.reject(new.id, actor="U0APPROVER", reason="no", now=NOW)
    await raw.execute(
        "UPDATE outbox SET delivered_at = $1 WHERE effect = 'slack.post' AND proposal_id = ANY($2)",
        NOW,
        [new.id for new in decided],
    )
    explained = await planned.explained(params)
    nodes = [n for n in _nodes(explained["Plan"]) if n.get("Relation Name") == "outbox"]
    assert explained["Plan"]["Actual Rows"] == 20
    assert _rows_read(nodes) <= 100, _reads(nodes)
    leased = await store.claim_deliveries(now=later, limit=3, lease=LEASE)
    assert [(d.proposal_id, d.effect.value) for d in leased] == [
        (new.id, effect) for new in decided[:3] for effect in ("slack.update", "slack.reply")
    ]


@pytest.mark.parametrize("plan", ["custom", "generic"])
async def test_leasing_a_digests_entries_reads_only_the_entries_it_leases(
    open_pg: OpenStore, raw: asyncpg.Connection[asyncpg.Record], plan: str
) -> None:
    """A digest's update leases its items' message updates. Behind 1,500 other proposals'
    entries due (750 cards to post, 750 updates and replies), planned without statistics or
    kept from a plan made on an empty outbox, the lease walked the outbox's due entries to
    find the digest's, and every open entry for each one's lane check; or, its effect known,
    read the decision entries' partial index, built empty and so claiming no rows, for each
    item (34,859 to 43,968 rows read to lease 10). It now walks the digest's items and reads
    about what it leases."""
    store = await open_pg()
    later = NOW + timedelta(hours=1)
    new_digest = digest()
    params = {
        "now": later,
        "lease": later + LEASE,
        "limit": 10,
        "digest_id": new_digest.id,
        "effect": "slack.update",
    }
    planned = await _planned_empty(
        raw, "claim_digest_deliveries", plan, params, ("proposals", "outbox")
    )
    items = [new_proposal(NOW + timedelta(milliseconds=n)) for n in range(10)]
    for new in items:
        await store.create_proposal(new)
    posts = await store.claim_deliveries(now=later, limit=100, lease=LEASE)
    await store.digests().attach_digest(
        new_digest, [new.id for new in items], deliveries=[d.id for d in posts], now=NOW
    )
    for new in items:
        await store.reject(new.id, actor="U0APPROVER", reason="no", now=NOW)
    others = [new_proposal(NOW - timedelta(minutes=1, milliseconds=n)) for n in range(1500)]
    for new in others:  # each with its card's post due before the digest's entries
        await store.create_proposal(new)
    decided = others[::2]  # and half of them shown and decided, their update and reply due
    for new in decided:
        await store.reject(new.id, actor="U0APPROVER", reason="no", now=NOW - timedelta(minutes=1))
    await raw.execute(
        "UPDATE outbox SET delivered_at = $1 WHERE effect = 'slack.post' AND proposal_id = ANY($2)",
        NOW,
        [new.id for new in decided],
    )
    explained = await planned.explained(params)
    nodes = [
        n for n in _nodes(explained["Plan"]) if n.get("Relation Name") in ("outbox", "proposals")
    ]
    assert explained["Plan"]["Actual Rows"] == 10
    assert _rows_read(nodes) <= 100, _reads(nodes)
    leased = await store.digests().claim_digest_deliveries(
        new_digest.id, Effect.SLACK_UPDATE, now=later, limit=3, lease=LEASE
    )
    assert [d.proposal_id for d in leased] == [new.id for new in items[:3]]


@pytest.mark.parametrize("plan", ["custom", "generic"])
async def test_leasing_escalation_entries_reads_only_the_entries_it_leases(
    open_pg: OpenStore, raw: asyncpg.Connection[asyncpg.Record], plan: str
) -> None:
    """The escalations' outbox is leased as the proposals' is. With 1,500 escalations' posts
    due, planned without statistics or kept from a plan made on an empty outbox, its lane
    check (an anti-join) read every open entry for each entry leased, and matching the leased
    rows by id read them all again (16,520 entries read to lease 10); by their address, kept
    from a plan made empty, the update read the whole outbox. It now reads about what it
    leases."""
    store = await open_pg()
    later = NOW + timedelta(hours=1)
    params = {"now": later, "lease": later + LEASE, "limit": 10}
    planned = await _planned_empty(
        raw, "claim_escalation_deliveries", plan, params, ("escalations", "escalation_outbox")
    )
    escalations = store.escalations()
    made = [new_escalation(NOW + timedelta(milliseconds=n)) for n in range(1500)]
    for new in made:  # each with its post due
        await escalations.create_escalation(new)
    explained = await planned.explained(params)
    nodes = [n for n in _nodes(explained["Plan"]) if n.get("Relation Name") == "escalation_outbox"]
    assert explained["Plan"]["Actual Rows"] == 10
    assert _rows_read(nodes) <= 60, _reads(nodes)
    leased = await escalations.claim_deliveries(now=later, limit=3, lease=LEASE)
    assert [d.escalation_id for d in leased] == [new.id for new in made[:3]]


@pytest.mark.parametrize("plan", ["custom", "generic"])
async def test_claiming_a_batchs_posts_reads_only_the_batchs_entries(
    open_pg: OpenStore, raw: asyncpg.Connection[asyncpg.Record], plan: str
) -> None:
    """The worker holding a closed batch claims its proposals' posts. Beside 1,500 other
    cards to post, planned without statistics or kept from a plan made on an empty outbox,
    the claim walked every open entry to find the batch's, and again for each post's lane
    check (7,518 to 10,524 rows read to claim 3). It now reads the batch's proposals and
    their posts."""
    store = await open_pg()
    closed = NOW + WINDOW
    params = {"now": closed, "lease": closed + LEASE, "batch_id": "b_none", "held": []}
    planned = await _planned_empty(
        raw, "claim_batch_posts", plan, params, ("proposals", "outbox", "batches")
    )
    for n in range(1500):  # other proposals, each with its card's post due
        await store.create_proposal(new_proposal(NOW + timedelta(milliseconds=n)))
    items = [(await store.create_proposal(waiting(NOW)))[0] for _ in range(3)]
    batch_id = str(items[0].batch_id)
    assert await store.digests().lease_batch(batch_id, now=closed, lease=LEASE)
    explained = await planned.explained({**params, "batch_id": batch_id})
    nodes = [
        n for n in _nodes(explained["Plan"]) if n.get("Relation Name") in ("outbox", "proposals")
    ]
    assert explained["Plan"]["Actual Rows"] == 3
    assert _rows_read(nodes) <= 20, _reads(nodes)
    claimed = await store.digests().claim_batch_posts(batch_id, held=[], now=closed, lease=LEASE)
    assert sorted(d.proposal_id for d in claimed) == sorted(new.id for new in items)


async def test_a_commit_changes_pending_count_rows_in_sorted_order_so_writers_never_deadlock(
    open_pg: OpenStore, schema: str
) -> None:
    """Two transactions changing proposals of an agent counted in different rows (0016) took
    the count rows' locks in the order they wrote the proposals, and two expiry sweeps deadlocked
    at commit. Now a commit takes them sorted by (agent, shard): waiting for its first row, it
    holds none of the others.
    """
    store = await open_pg()
    by_shard: dict[int, str] = {}
    while len(by_shard) < 2:
        new = new_proposal(NOW)
        by_shard.setdefault(hashlib.md5(new.id.encode()).digest()[0] % 8, new.id)
        if new.id in by_shard.values():
            await store.create_proposal(new)
    (low, low_id), (high, high_id) = sorted(by_shard.items())
    assert await store.count_pending("billing-agent") == 2

    def connect() -> Awaitable[asyncpg.Connection[asyncpg.Record]]:
        return asyncpg.connect(URL, server_settings={"search_path": schema})

    holder, writer, prober = await connect(), await connect(), await connect()
    try:
        # Another writer's commit holds the lower count row.
        holding = holder.transaction()
        await holding.start()
        lock = (
            "SELECT 1 FROM pending_counts WHERE agent = 'billing-agent' AND shard = $1 FOR UPDATE"
        )
        await holder.execute(lock, low)

        # This one writes the proposal counted in the higher row first, then the lower one.
        writing = writer.transaction()
        await writing.start()
        expire = "UPDATE proposals SET status = 'expired', updated_at = $2 WHERE id = $1"
        await writer.execute(expire, high_id, NOW)
        await writer.execute(expire, low_id, NOW)
        commit = asyncio.ensure_future(writing.commit())
        writer_pid = writer.get_server_pid()
        while not await prober.fetchval(
            "SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = $1", writer_pid
        ):
            assert not commit.done()
            await asyncio.sleep(0.01)

        # Waiting for the lower row, the commit holds no lock on the higher one.
        async with prober.transaction():
            await prober.execute(lock + " NOWAIT", high)

        await holding.rollback()
        await commit
        # The commit took its noted changes with it.
        assert await prober.fetchval("SELECT count(*) FROM pending_count_changes") == 0
    finally:
        for db in (holder, writer, prober):
            await db.close()
    assert await store.count_pending("billing-agent") == 0


# --- people's lane -------------------------------------------------------------------------------


async def test_a_click_is_recorded_while_agents_hold_every_connection_they_may(
    open_pg: OpenStore,
) -> None:
    """People's lane (store/lanes.py): agents' transactions that hold their connections (and
    more waiting for one) never take those kept for people, so a click is still recorded."""
    store = await open_pg(max_size=2 + KEPT_FOR_PEOPLE)
    proposal, _ = await store.create_proposal(new_proposal(NOW))
    release, full = asyncio.Event(), asyncio.Event()
    holding = 0

    async def agent_write() -> None:
        nonlocal holding
        async with store.tx(write=True) as tx:
            await tx.one("select_audit_head")
            holding += 1
            if holding == 2:
                full.set()
            await release.wait()  # a write that really holds its connection

    agents = [asyncio.create_task(agent_write()) for _ in range(6)]
    try:
        await full.wait()
        with people_first():
            async with asyncio.timeout(10):  # without the kept connections: waits for ever
                recorded = await store.clicks().record_click(
                    proposal.id, actor="U0APPROVER", verb="approve", channel="C1", now=NOW
                )
                got = await store.get_proposal(proposal.id)
        assert recorded is not None and recorded[1]
        assert got.status is Status.PENDING
        assert holding == 2  # the other agents still wait for a place; none took a kept one
    finally:
        release.set()
        await asyncio.gather(*agents)
    assert holding == 6


async def test_a_store_opened_with_a_pool_size_holds_at_most_that_many_connections() -> None:
    """``store.pool_size`` (open_store's pool_size): agents' work filling its places and people's
    work waiting for more, the database sees no more than the pool's connections, and people's
    lane has the KEPT_FOR_PEOPLE of them agents never take."""
    size = 5
    async with fresh_database() as db_url:
        store = await open_store(db_url, pool_size=size)
        assert isinstance(store, PostgresStore) and store.pool_size == size
        admin = await asyncpg.connect(URL)
        query = "SELECT count(*) FROM pg_stat_activity WHERE datname = $1"
        name = db_url.rsplit("/", 1)[1]
        seen: list[int] = []
        release = asyncio.Event()
        agents_in, people_in = 0, 0

        async def agent() -> None:
            nonlocal agents_in
            async with store.tx(write=True) as tx:
                await tx.one("select_audit_head")
                agents_in += 1
                await release.wait()

        async def person() -> None:
            nonlocal people_in
            with people_first():
                async with store.connection() as db:
                    await db.fetchval("SELECT 1")
                    people_in += 1
                    await release.wait()

        async def until(done: Callable[[], bool]) -> None:
            async with asyncio.timeout(10):
                while not done():
                    seen.append(await admin.fetchval(query, name))
                    await asyncio.sleep(0.01)

        agents = [asyncio.create_task(agent()) for _ in range(4 * size)]
        people: list[asyncio.Task[None]] = []
        try:
            await until(lambda: agents_in >= size - KEPT_FOR_PEOPLE)
            people = [asyncio.create_task(person()) for _ in range(2 * KEPT_FOR_PEOPLE)]
            await until(lambda: people_in >= KEPT_FOR_PEOPLE)
            await asyncio.sleep(0.2)  # room for a connection too many to open, were it allowed
            seen.append(await admin.fetchval(query, name))

            assert (agents_in, people_in) == (size - KEPT_FOR_PEOPLE, KEPT_FOR_PEOPLE)
            assert seen[-1] == size
        finally:
            release.set()
            await asyncio.gather(*agents, *people)
            await store.close()
            await admin.close()
    assert max(seen) == size
    assert (agents_in, people_in) == (4 * size, 2 * KEPT_FOR_PEOPLE)


# --- round trips -------------------------------------------------------------------------------


@pytest.fixture
def logged_queries(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The text of every statement the stores opened from now on send, in order (asyncpg's
    query loggers on each pooled connection)."""
    queries: list[str] = []
    create_pool = asyncpg.create_pool

    def logging_pool(*args: Any, **kwargs: Any) -> Any:
        async def init(db: asyncpg.Connection[asyncpg.Record]) -> None:
            db.add_query_logger(lambda record: queries.append(record.query))

        return create_pool(*args, init=init, **kwargs)

    monkeypatch.setattr(asyncpg, "create_pool", logging_pool)
    return queries


@pytest.mark.parametrize(
    ("changes", "events"),
    [
        ({}, ["submitted"]),  # asks a person: its post
        (
            {"status": Status.EXECUTING, "decision": "auto", "review_sampled": True},
            ["submitted", "auto_approved"],
        ),
        ({"status": Status.DENIED, "decision": "deny"}, ["submitted", "denied"]),
    ],
)
async def test_a_new_proposal_is_stored_with_its_entries_in_one_statement(
    open_pg: OpenStore, logged_queries: list[str], changes: dict[str, Any], events: list[str]
) -> None:
    # one connection: the sealer, woken by the entries, runs its statements after
    store = await open_pg(min_size=1, max_size=1)
    await store.audit_sealed()
    await asyncio.sleep(0)  # the loggers of the statements so far have run
    logged_queries.clear()
    new = new_proposal(NOW, **changes)

    proposal, created = await store.create_proposal(new)
    await store.audit_sealed()
    await asyncio.sleep(0)

    assert created and proposal.id == new.id
    insert = load_queries("postgres")["insert_submitted"].text
    # no BEGIN before it, no COMMIT after it: the statement commits on its own
    assert logged_queries[0] == insert
    assert all(query.split()[0] != "COMMIT" for query in logged_queries[1:])
    assert [e.event for e in await store.audit_log(new.id)] == events
    assert (await store.verify_audit()).ok


async def test_an_outcome_is_recorded_with_its_entries_in_one_statement(
    open_pg: OpenStore, logged_queries: list[str]
) -> None:
    store = await open_pg(min_size=1, max_size=1)
    new = new_proposal(NOW, status=Status.EXECUTING, decision="auto", lease_until=NOW + LEASE)
    await store.create_proposal(new)
    await store.audit_sealed()
    await asyncio.sleep(0)  # the loggers of the statements so far have run
    logged_queries.clear()

    done = await store.record_outcome(new.id, OUTCOME_EXAMPLES[0], now=NOW)
    await store.audit_sealed()
    await asyncio.sleep(0)

    assert done.status is Status.SUCCEEDED
    at_once = load_queries("postgres")["record_outcome_at_once"].text
    assert logged_queries[0] == at_once  # no BEGIN before it, no COMMIT after it
    assert all(query.split()[0] != "COMMIT" for query in logged_queries[1:])
    assert [e.event for e in await store.audit_log(new.id)] == [
        "submitted",
        "auto_approved",
        "outcome",
    ]
    # its channel's message update and thread reply, and its agent's callback
    effects = [d.effect.value for d in await store.claim_deliveries(now=NOW, limit=10, lease=LEASE)]
    assert sorted(effects) == ["callback", "slack.reply", "slack.update"]
    assert (await store.verify_audit()).ok


async def test_a_digests_items_are_audited_in_one_statement(
    open_pg: OpenStore, logged_queries: list[str]
) -> None:
    store = await open_pg(min_size=1, max_size=1)
    ids = [(await store.create_proposal(new_proposal(NOW)))[0].id for _ in range(3)]
    await store.audit_sealed()
    await asyncio.sleep(0)  # the loggers of the statements so far have run
    logged_queries.clear()

    await store.digests().attach_digest(digest(), ids, deliveries=[], now=NOW)
    await asyncio.sleep(0)

    entries = load_queries("postgres")["insert_unsealed_audit_entries"].text
    single = load_queries("postgres")["insert_unsealed_audit_entry"].text
    assert logged_queries.count(entries) == 1 and single not in logged_queries
    for item in ids:  # each item's entry, in the chain
        assert [e.event for e in await store.audit_log(item)][-1] == "posted_to_slack"
    assert (await store.verify_audit()).ok


async def test_a_message_is_attached_with_its_audit_entry_in_one_statement(
    open_pg: OpenStore, logged_queries: list[str]
) -> None:
    store = await open_pg(min_size=1, max_size=1)
    new = new_proposal(NOW)
    await store.create_proposal(new)
    await store.audit_sealed()
    await asyncio.sleep(0)  # the loggers of the statements so far have run
    logged_queries.clear()

    shown = await store.attach_message(new.id, "C0FINANCE", "1700000000.000200")
    await store.audit_sealed()
    await asyncio.sleep(0)

    assert (shown.slack_channel, shown.slack_ts) == ("C0FINANCE", "1700000000.000200")
    at_once = load_queries("postgres")["update_message_at_once"].text
    assert logged_queries[0] == at_once  # no BEGIN before it, no COMMIT after it
    assert all(query.split()[0] != "COMMIT" for query in logged_queries[1:])
    [posted] = [e for e in await store.audit_log(new.id) if e.event == "posted_to_slack"]
    assert posted.detail == {"channel": "C0FINANCE", "ts": "1700000000.000200"}
    assert (await store.verify_audit()).ok


@pytest.mark.parametrize("query_name", ["record_outcome_at_once", "supersede_updates"])
@pytest.mark.parametrize("statistics", ["none", "stale"])
async def test_superseding_message_updates_reads_only_the_proposals_own_outbox_entries(
    open_pg: OpenStore, raw: asyncpg.Connection[asyncpg.Record], query_name: str, statistics: str
) -> None:
    """Superseding a proposal's earlier message updates found them through a join (or a
    condition) the planner ordered badly on tables not yet analyzed, as a fresh database's are,
    or analyzed before the updates were written: it walked every open message update of the
    outbox, 1,000 here, or the whole outbox, where the proposal's own index entries were all it
    needed."""
    store = await open_pg()
    # the statistics are the test's alone: autovacuum must not gather them meanwhile
    await raw.execute("ALTER TABLE outbox SET (autovacuum_enabled = false)")
    for n in range(1000):  # other proposals, each with a message update due
        await store.create_proposal(new_proposal(NOW, requested_by=f"U{n:04d}"))
    if statistics == "stale":  # gathered while the outbox held the proposals' posts alone
        await raw.execute("ANALYZE outbox")
    await raw.execute(
        "INSERT INTO outbox (proposal_id, effect, lane, status, created_at, next_attempt_at)"
        " SELECT id, 'slack.update', 'slack', status, $1, $1 FROM proposals",
        NOW,
    )
    running = new_proposal(NOW, decision="auto", status=Status.EXECUTING)
    await store.create_proposal(running)
    params = {
        "id": running.id,
        "proposal_id": running.id,
        "attempt": 1,
        "status": "succeeded",
        "outcome": json.dumps(OUTCOME_EXAMPLES[0].model_dump(mode="json")),
        "now": NOW,
        "actor": "countersign",
        "event": "outcome",
        "detail": "{}",
        "effects": json.dumps([["slack.update", "slack"], ["callback", "callback"]]),
        "lane": "slack",
        "effect": "slack.update",
    }
    plan = await _explained(raw, query_name, params)
    scans = [n for n in _nodes(plan["Plan"]) if n.get("Relation Name") == "outbox"]
    read = [scan["Actual Rows"] + scan.get("Rows Removed by Filter", 0) for scan in scans]
    assert scans and max(read) <= 3, [
        (scan["Node Type"], scan.get("Index Name"), scan.get("Actual Rows")) for scan in scans
    ]


# --- statistics of a young database (store/pg_statistics.py) -----------------------------------


async def _counted(raw: asyncpg.Connection[asyncpg.Record], sql: str, *args: Any) -> None:
    """Run ``sql`` on ``raw`` and make its changes visible in the tables' statistics now
    (PostgreSQL reports a connection's counts at most once a second otherwise)."""
    await raw.execute(sql, *args)
    await raw.execute("SELECT pg_stat_force_next_flush()")  # at the end of the next statement
    await raw.execute("SELECT 1")


def _batches(first: int, last: int) -> str:
    """An INSERT of posted batches ``first`` to ``last``: rows of one of Countersign's tables
    that nothing else touches."""
    return (
        "INSERT INTO batches (id, key, channel, rule_id, opened_at, closes_at, max_size, status)"
        f" SELECT 'b' || n, 'k' || n, 'C0FINANCE', 'r', now(), now(), 1, 'posted'"
        f" FROM generate_series({first:d}, {last:d}) AS n"
    )


async def test_a_table_is_analyzed_each_time_its_rows_have_doubled_and_not_before(
    open_pg: OpenStore, raw: asyncpg.Connection[asyncpg.Record]
) -> None:
    store = await open_pg()
    await store.statistics.close()  # rounds run here, one at a time, not on the timer
    await _counted(raw, _batches(1, 99))
    assert await store.statistics.analyze_grown() == []  # fewer than LEAST_ROWS
    await _counted(raw, _batches(100, 100))
    assert await store.statistics.analyze_grown() == ["batches"]
    assert await store.statistics.analyze_grown() == []
    await _counted(raw, _batches(101, 199))
    assert await store.statistics.analyze_grown() == []  # 99 changes since 100 rows
    await _counted(raw, _batches(200, 200))
    assert await store.statistics.analyze_grown() == ["batches"]
    for _ in range(5):  # rows changed in place, not more of them: no new statistics needed
        await _counted(raw, "UPDATE batches SET size = size")
    assert await store.statistics.analyze_grown() == []
    analyses = await raw.fetchval(
        "SELECT analyze_count FROM pg_stat_user_tables"
        " WHERE schemaname = current_schema() AND relname = 'batches'"
    )
    assert analyses == 2


async def test_others_tables_ours_with_autovacuum_off_and_another_instances_turn_are_left_alone(
    open_pg: OpenStore, raw: asyncpg.Connection[asyncpg.Record]
) -> None:
    store = await open_pg()
    await store.statistics.close()
    await raw.execute("CREATE TABLE another_application (n int)")
    await _counted(raw, "INSERT INTO another_application SELECT generate_series(1, 500)")
    await raw.execute("ALTER TABLE batches SET (autovacuum_enabled = false)")
    await _counted(raw, _batches(1, 500))
    assert await store.statistics.analyze_grown() == []
    await raw.execute("ALTER TABLE batches RESET (autovacuum_enabled)")
    schema = await raw.fetchval("SELECT current_schema()")
    other = await asyncpg.connect(URL, server_settings={"search_path": schema})
    try:  # another instance is analyzing the schema's tables
        await other.execute(
            "SELECT pg_advisory_lock(hashtext('countersign analyze ' || current_schema()))"
        )
        assert await store.statistics.analyze_grown() == []
    finally:
        await other.close()
    assert await store.statistics.analyze_grown() == ["batches"]


async def test_the_tables_analyzed_are_every_table_the_migrations_make(
    raw: asyncpg.Connection[asyncpg.Record],
) -> None:
    await apply_migrations(raw, load_migrations("postgres"))
    made = await raw.fetch("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
    assert {row["tablename"] for row in made} == countersign_tables()


async def test_marking_entries_delivered_looks_them_up_by_key_once_the_outbox_is_analyzed(
    open_pg: OpenStore, raw: asyncpg.Connection[asyncpg.Record]
) -> None:
    """Marking 25 leased entries delivered, on an outbox of a few thousand entries never
    analyzed, read every entry to find them (4,371 in a benchmark's run): without statistics
    PostgreSQL cannot tell that the entries lie in the order of their ids, and 25 lookups by key
    look as dear as reading the table. Once the outbox has doubled it is analyzed, and the same
    statement looks them up by key."""
    store = await open_pg()
    await store.statistics.close()
    for n in range(300):
        await store.create_proposal(new_proposal(NOW + timedelta(milliseconds=n)))
    for _ in range(10):
        await _counted(
            raw,
            "INSERT INTO outbox (proposal_id, effect, lane, status, created_at, next_attempt_at)"
            " SELECT id, 'slack.update', 'slack', status, $1, $1 FROM proposals",
            NOW,
        )
    first = await raw.fetchval("SELECT min(id) FROM outbox WHERE effect = 'slack.update'")
    params = {"now": NOW, "ids": [str(first + 100 * n) for n in range(25)]}

    async def outbox_read() -> int:
        plan = await _explained(raw, "complete_deliveries", params)
        assert plan["Plan"]["Plans"][0]["Actual Rows"] == 25
        return _rows_read([n for n in _nodes(plan["Plan"]) if n.get("Relation Name") == "outbox"])

    assert await outbox_read() >= 3000  # never analyzed: the whole outbox
    assert "outbox" in await store.statistics.analyze_grown()
    assert await outbox_read() <= 25
