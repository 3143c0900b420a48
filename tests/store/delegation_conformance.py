"""Delegations: the behaviour every Store backend must have (Store.delegations()).

A backend's test class subclasses :class:`DelegationConformance` and provides a ``store`` fixture
yielding an empty store (tests/store/test_delegations.py runs it on SQLite and PostgreSQL).
"""

from __future__ import annotations

import asyncio
import secrets
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from store.base import StoreError
from store.delegations import DelegationNotFound, NewDelegation, token_hash
from store.proposals import NewProposal
from store.protocol import Store
from store.revocation import NotRevocable, Revoked

__all__ = ["DelegationConformance", "new_delegation"]


NOW = datetime(2031, 3, 14, 15, 9, 26, 535897, tzinfo=UTC)
HOUR = timedelta(hours=1)


def _proposal(now: datetime = NOW, **changes: Any) -> NewProposal:
    """A pending proposal (the shared builder, which imports this module's suite)."""
    from tests.store.conformance import new_proposal

    return new_proposal(now, **changes)


def new_delegation(now: datetime = NOW, **changes: Any) -> tuple[NewDelegation, str]:
    """A delegation of an hour and its token."""
    token = "csd_" + secrets.token_urlsafe(24)
    fields: dict[str, Any] = {
        "id": "dl_" + secrets.token_hex(16),
        "token_hash": token_hash(token),
        "agent": "billing-agent",
        "person": "U0DANA",
        "created_at": now,
        "expires_at": now + HOUR,
    }
    fields.update(changes)
    return NewDelegation(**fields), token


class DelegationConformance:
    async def test_a_delegation_is_found_by_its_token_hash_only(self, store: Store) -> None:
        new, token = new_delegation()
        created = await store.delegations().create_delegation(new)
        found = await store.delegations().delegation_for_token(token_hash(token))
        assert found == created
        assert (created.id, created.agent, created.person) == (new.id, new.agent, new.person)
        assert created.expires_at == new.expires_at and created.active(NOW)
        assert await store.delegations().delegation_for_token(token_hash(token + "x")) is None

    async def test_the_token_is_never_stored_and_the_grant_is_audited(self, store: Store) -> None:
        new, token = new_delegation()
        await store.delegations().create_delegation(new)
        [entry] = await store.audit_log(new.id)
        assert (entry.event, entry.actor) == ("delegation_granted", "U0DANA")
        assert entry.detail["agent"] == "billing-agent"
        assert token not in repr(entry) and new.token_hash not in repr(entry)
        assert (await store.verify_audit()).ok

    async def test_a_person_lists_only_their_active_delegations_newest_first(
        self, store: Store
    ) -> None:
        older, _ = new_delegation()
        newer, _ = new_delegation(NOW + timedelta(minutes=1))
        someone_elses, _ = new_delegation(person="U0ALEX")
        expired, _ = new_delegation(NOW - 2 * HOUR)
        revoked, _ = new_delegation()
        for new in (older, newer, someone_elses, expired, revoked):
            await store.delegations().create_delegation(new)
        await store.delegations().revoke_delegation(revoked.id, actor="U0DANA", now=NOW)
        listed = await store.delegations().delegations_of("U0DANA", now=NOW + timedelta(minutes=2))
        assert [d.id for d in listed] == [newer.id, older.id]

    async def test_a_revocation_happens_once_and_is_audited(self, store: Store) -> None:
        new, token = new_delegation()
        await store.delegations().create_delegation(new)
        later = NOW + timedelta(minutes=5)
        first = await store.delegations().revoke_delegation(new.id, actor="U0DANA", now=later)
        assert isinstance(first, Revoked)
        again = await store.delegations().revoke_delegation(new.id, actor="U0DANA", now=later)
        assert isinstance(again, NotRevocable)
        assert "already revoked by U0DANA" in again.reason
        found = await store.delegations().delegation_for_token(token_hash(token))
        assert found is not None and found.revoked_by == "U0DANA" and not found.active(later)
        events = [e.event for e in await store.audit_log(new.id)]
        assert events == ["delegation_granted", "delegation_revoked"]

    async def test_concurrent_revocations_revoke_once(self, store: Store) -> None:
        new, _ = new_delegation()
        await store.delegations().create_delegation(new)
        results = await asyncio.gather(
            *(
                store.delegations().revoke_delegation(new.id, actor=f"U0P{n}", now=NOW)
                for n in range(5)
            )
        )
        assert sum(isinstance(r, Revoked) for r in results) == 1
        events = [e.event for e in await store.audit_log(new.id)]
        assert events.count("delegation_revoked") == 1

    async def test_an_expired_delegation_cannot_be_revoked(self, store: Store) -> None:
        new, _ = new_delegation()
        await store.delegations().create_delegation(new)
        result = await store.delegations().revoke_delegation(
            new.id, actor="U0DANA", now=NOW + 2 * HOUR
        )
        assert isinstance(result, NotRevocable) and "expired" in result.reason

    async def test_unknown_delegations_raise_not_found(self, store: Store) -> None:
        with pytest.raises(DelegationNotFound):
            await store.delegations().get_delegation("dl_nope")
        with pytest.raises(DelegationNotFound):
            await store.delegations().revoke_delegation("dl_nope", actor="U0DANA", now=NOW)

    async def test_a_proposal_made_under_a_delegation_names_it_and_is_audited(
        self, store: Store
    ) -> None:
        new, _ = new_delegation()
        await store.delegations().create_delegation(new)
        made = _proposal(requested_by="U0DANA", agent="billing-agent", delegation_id=new.id)

        proposal, created = await store.create_proposal(made)

        assert created and proposal.delegation_id == new.id
        assert (await store.get_proposal(proposal.id)).delegation_id == new.id
        [submitted] = [e for e in await store.audit_log(proposal.id) if e.event == "submitted"]
        assert submitted.detail["delegation_id"] == new.id
        assert submitted.detail["requested_by"] == "U0DANA"
        assert (await store.verify_audit()).ok

    @pytest.mark.parametrize(
        ("changes", "state"),
        [
            ({"requested_by": "U0ALEX"}, "active"),  # someone else than its person
            ({"agent": "other-agent"}, "active"),  # another agent
            ({}, "revoked"),
            ({}, "expired"),
            ({"delegation_id": "dl_unknown"}, "active"),
        ],
    )
    async def test_the_database_refuses_a_proposal_its_delegation_does_not_cover(
        self, store: Store, changes: dict[str, Any], state: str
    ) -> None:
        new, _ = new_delegation()
        await store.delegations().create_delegation(new)
        if state == "revoked":
            await store.delegations().revoke_delegation(new.id, actor="U0DANA", now=NOW)
        fields: dict[str, Any] = {
            "requested_by": "U0DANA",
            "agent": "billing-agent",
            "delegation_id": new.id,
        }
        at = NOW + (2 * HOUR if state == "expired" else timedelta(minutes=1))
        made = _proposal(at, **(fields | changes))

        with pytest.raises(StoreError):
            await store.create_proposal(made)
        assert await store.audit_log(made.id) == []

    async def test_a_delegation_must_expire_after_it_is_created(self, store: Store) -> None:
        new, _ = new_delegation(expires_at=NOW)
        with pytest.raises(ValueError, match="expires_at"):
            await store.delegations().create_delegation(new)
        assert await store.delegations().delegations_of("U0DANA", now=NOW - HOUR) == []

    async def test_the_database_refuses_a_delegation_longer_than_seven_days(
        self, store: Store
    ) -> None:
        new, _ = new_delegation(expires_at=NOW + timedelta(days=7, minutes=1))
        with pytest.raises(StoreError):
            await store.delegations().create_delegation(new)
        assert await store.audit_log(new.id) == []
        week, _ = new_delegation(expires_at=NOW + timedelta(days=7))
        assert (await store.delegations().create_delegation(week)).id == week.id
