"""What the database itself enforces about standing rules and reviews, on SQLite and PostgreSQL:
a grant never changes except for one revocation, nothing is deleted, a verdict is final, a
proposal's standing rule and review sample are frozen, and only sampled proposals are reviewed.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import aiosqlite
import asyncpg
import pytest

from store.base import StoreError
from store.migrate import load_migrations
from store.pg_migrate import apply_migrations as pg_apply_migrations
from store.proposals import Transitioned
from store.protocol import Store
from store.sqlite import SqliteStore, apply_migrations
from tests.store.conformance import new_proposal
from tests.store.standing_conformance import LEASE, covered, grant_of, new_rule_id
from tests.store.test_postgres import open_pg, raw  # noqa: F401 (fixtures)

NOW = datetime(2031, 3, 14, 15, 9, 26, 535897, tzinfo=UTC)

#: Statements each of which the database must refuse; ``{rule}`` / ``{sampled}`` / ``{plain}``
#: name a granted standing rule, a sampled reviewed proposal and an unsampled proposal.
REFUSED = {
    "change-ceiling": "UPDATE standing_rules SET ceiling = 999999 WHERE id = '{rule}'",
    "change-expiry": "UPDATE standing_rules SET expires_at = created_at WHERE id = '{rule}'",
    "change-granter": "UPDATE standing_rules SET created_by = 'U0OTHER' WHERE id = '{rule}'",
    "half-revocation": "UPDATE standing_rules SET revoked_by = 'U0X' WHERE id = '{rule}'",
    "delete-rule": "DELETE FROM standing_rules WHERE id = '{rule}'",
    "change-verdict": "UPDATE reviews SET verdict = 'ok' WHERE proposal_id = '{sampled}'",
    "delete-verdict": "DELETE FROM reviews WHERE proposal_id = '{sampled}'",
    "review-unsampled": (
        "INSERT INTO reviews (proposal_id, verdict, reviewer, at) "
        "VALUES ('{plain}', 'ok', 'U0R', {at})"
    ),
    "set-standing-rule": ("UPDATE proposals SET standing_rule_id = '{rule}' WHERE id = '{plain}'"),
    "raise-max-uses": "UPDATE standing_rules SET max_uses = max_uses + 1 WHERE id = '{rule}'",
    "unbind-arguments": "UPDATE standing_rules SET arguments = NULL WHERE id = '{rule}'",
    "vary-more": ("UPDATE standing_rules SET varying = {varying} WHERE id = '{rule}'"),
    "unsample": "UPDATE proposals SET review_sampled = {false} WHERE id = '{sampled}'",
}


async def _fill(store: Store) -> dict[str, str]:
    """A granted standing rule, a sampled proposal it approved (reviewed), an unsampled one."""
    proposal, _ = await store.create_proposal(new_proposal(NOW))
    rule = new_rule_id()
    result = await store.standing().claim_and_grant(
        proposal.id,
        actor="U0ADMIN",
        now=NOW,
        binding_hash=proposal.binding_hash,
        lease_until=NOW + LEASE,
        grant=grant_of(proposal, NOW, by="U0ADMIN"),
        standing_rule_id=rule,
    )
    assert isinstance(result, Transitioned)
    sampled, _ = await store.create_proposal(covered(NOW, rule, 1000, review_sampled=True))
    plain, _ = await store.create_proposal(covered(NOW, None, 800, rule_id="small"))
    await store.standing().record_review(
        sampled.id, reviewer="U0R", verdict="should_have_asked", now=NOW
    )
    return {"rule": rule, "sampled": sampled.id, "plain": plain.id}


# --- SQLite ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(REFUSED))
async def test_sqlite_refuses(tmp_path: Path, name: str) -> None:
    path = tmp_path / "countersign.sqlite"
    store = await SqliteStore.open(path)
    ids = await _fill(store)
    await store.close()
    statement = REFUSED[name].format(
        **ids,
        at="'2031-03-14T15:09:26.535897Z'",
        false=0,
        varying="""'["amount_cents","payment_id"]'""",
    )

    db = sqlite3.connect(path, isolation_level=None)
    try:
        with pytest.raises(sqlite3.IntegrityError):
            db.execute(statement)
    finally:
        db.close()


async def test_sqlite_allows_one_complete_revocation_only(tmp_path: Path) -> None:
    path = tmp_path / "countersign.sqlite"
    store = await SqliteStore.open(path)
    ids = await _fill(store)
    await store.close()
    revoke = "UPDATE standing_rules SET revoked_by = ?, revoked_at = ? WHERE id = ?"
    at = "2031-03-14T15:10:00.000000Z"

    db = sqlite3.connect(path, isolation_level=None)
    try:
        db.execute(revoke, ("U0ADMIN", at, ids["rule"]))
        with pytest.raises(sqlite3.IntegrityError):
            db.execute(revoke, ("U0OTHER", at, ids["rule"]))
        with pytest.raises(sqlite3.IntegrityError):
            db.execute(
                "UPDATE standing_rules SET revoked_by = NULL, revoked_at = NULL WHERE id = ?",
                (ids["rule"],),
            )
    finally:
        db.close()


async def test_sqlite_refuses_a_standing_rule_longer_than_30_days(tmp_path: Path) -> None:
    store = await SqliteStore.open(tmp_path / "countersign.sqlite")
    try:
        proposal, _ = await store.create_proposal(new_proposal(NOW))
        grant = grant_of(proposal, NOW).model_copy(
            update={"expires_at": NOW + timedelta(days=30, minutes=1)}
        )
        with pytest.raises(StoreError, match="CHECK constraint"):
            await store.standing().claim_and_grant(
                proposal.id,
                actor="U0ADMIN",
                now=NOW,
                binding_hash=proposal.binding_hash,
                lease_until=NOW + LEASE,
                grant=grant,
                standing_rule_id=new_rule_id(),
            )
        # the approval rolled back with the grant
        assert (await store.get_proposal(proposal.id)).status == "pending"
    finally:
        await store.close()


# --- PostgreSQL -----------------------------------------------------------------------------------


@pytest.mark.postgres
@pytest.mark.parametrize("name", sorted(REFUSED))
async def test_postgres_refuses(
    open_pg: Callable[..., Awaitable[Store]],  # noqa: F811
    raw: asyncpg.Connection[asyncpg.Record],  # noqa: F811
    name: str,
) -> None:
    ids = await _fill(await open_pg())
    statement = REFUSED[name].format(
        **ids, at="now()", false="false", varying="ARRAY['amount_cents', 'payment_id']"
    )

    with pytest.raises(asyncpg.IntegrityConstraintViolationError):
        await raw.execute(statement)


@pytest.mark.postgres
async def test_postgres_allows_one_complete_revocation_only(
    open_pg: Callable[..., Awaitable[Store]],  # noqa: F811
    raw: asyncpg.Connection[asyncpg.Record],  # noqa: F811
) -> None:
    ids = await _fill(await open_pg())
    revoke = "UPDATE standing_rules SET revoked_by = $2, revoked_at = now() WHERE id = $1"

    await raw.execute(revoke, ids["rule"], "U0ADMIN")
    with pytest.raises(asyncpg.IntegrityConstraintViolationError):
        await raw.execute(revoke, ids["rule"], "U0OTHER")
    with pytest.raises(asyncpg.IntegrityConstraintViolationError):
        await raw.execute("TRUNCATE standing_rules CASCADE")


# --- grants made before max_uses and bound arguments ---------------------------------------------


async def test_sqlite_migration_binds_earlier_grants_to_their_approved_call(tmp_path: Path) -> None:
    """A grant stored before 0010 binds its approved call's arguments but the ceiling, and
    covers DEFAULT_MAX_USES calls."""
    path = tmp_path / "old.sqlite"
    before = [m for m in load_migrations("sqlite") if m.version < 10]  # up to 0009
    at = "2031-03-14T15:09:26.535897Z"
    async with aiosqlite.connect(path, isolation_level=None) as db:
        await db.execute("PRAGMA foreign_keys = ON")
        await apply_migrations(db, before)
        await db.execute(
            "INSERT INTO proposals (id, agent, submission_key, submission_fingerprint, "
            "requested_by, operation, request, arguments, preview, binding_hash, decision, "
            "policy_note, status, created_at, updated_at, channel, decided_by, decided_at, "
            "lease_until) VALUES ('old', 'a', 'k', 'f', 'U1', 'payments.refund', '{}', "
            """'{"payment_id":"pay_7","amount_cents":500,"note":"x"}', '{}', 'h', 'ask', 'n', """
            "'executing', ?, ?, 'C1', 'U0ADMIN', ?, ?)",
            (at, at, at, "2031-03-14T15:14:26.535897Z"),
        )
        await db.execute(
            "INSERT INTO standing_rules (id, operation, agent, rule_id, ceiling_field, ceiling, "
            "created_by, created_from, created_at, expires_at) VALUES ('sr_old', "
            "'payments.refund', 'a', 'r', 'amount_cents', 500, 'U0ADMIN', 'old', ?, "
            "'2031-03-14T16:09:26.535897Z')",
            (at,),
        )

    store = await SqliteStore.open(path)
    try:
        rule = await store.standing().get_standing_rule("sr_old")
    finally:
        await store.close()

    assert rule.arguments == {"payment_id": "pay_7", "note": "x"}
    assert (rule.varying, rule.max_uses, rule.remaining) == (("amount_cents",), 10, 10)


@pytest.mark.postgres
async def test_postgres_migration_binds_earlier_grants_to_their_approved_call(
    open_pg: Callable[..., Awaitable[Store]],  # noqa: F811
    raw: asyncpg.Connection[asyncpg.Record],  # noqa: F811
) -> None:
    before = [m for m in load_migrations("postgres") if m.version < 9]  # up to 0008
    await pg_apply_migrations(raw, before)
    await raw.execute(
        "INSERT INTO proposals (id, agent, submission_key, submission_fingerprint, requested_by, "
        "operation, request, arguments, preview, binding_hash, decision, policy_note, status, "
        "created_at, updated_at, channel, decided_by, decided_at, lease_until) VALUES ('old', "
        "'a', 'k', 'f', 'U1', 'payments.refund', '{}', "
        """'{"payment_id":"pay_7","amount_cents":500,"note":"x"}', '{}', 'h', 'ask', 'n', """
        "'executing', $1, $1, 'C1', 'U0ADMIN', $1, $2)",
        NOW,
        NOW + LEASE,
    )
    await raw.execute(
        "INSERT INTO standing_rules (id, operation, agent, rule_id, ceiling_field, ceiling, "
        "created_by, created_from, created_at, expires_at) VALUES ('sr_old', "
        "'payments.refund', 'a', 'r', 'amount_cents', 500, 'U0ADMIN', 'old', $1, $2)",
        NOW,
        NOW + timedelta(hours=1),
    )

    rule = await (await open_pg()).standing().get_standing_rule("sr_old")

    assert rule.arguments == {"payment_id": "pay_7", "note": "x"}
    assert (rule.varying, rule.max_uses, rule.remaining) == (("amount_cents",), 10, 10)
