"""What the database itself enforces about standing rules and reviews, on SQLite and PostgreSQL:
a grant never changes except for one revocation, nothing is deleted, a verdict is final, a
proposal's standing rule and review sample are frozen, and only sampled proposals are reviewed.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
import pytest

from store.base import Store, StoreError, Transitioned
from store.sqlite import SqliteStore
from tests.store.conformance import new_proposal
from tests.store.standing_conformance import LEASE, covered, grant_of, new_rule_id
from tests.store.test_postgres import open_pg, raw, schema  # noqa: F401 (fixtures)

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
    statement = REFUSED[name].format(**ids, at="'2031-03-14T15:09:26.535897Z'", false=0)

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
    statement = REFUSED[name].format(**ids, at="now()", false="false")

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
