"""Retention on every backend: decided proposals older than a cut-off are read for the archive
and removed with their approvals, review and outbox rows; the audit log keeps every entry and
still verifies; what changed since it was read, or is still undecided, stays."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from store.proposals import ProposalNotFound, Status, Transitioned
from store.protocol import Store
from store.retention import ARCHIVED_EVENT, retention_of
from tests.store.conformance import LEASE, OUTCOME_EXAMPLES, _drain, new_proposal

NOW = datetime(2031, 3, 14, 15, 9, 26, 535897, tzinfo=UTC)
OLD = NOW - timedelta(days=120)
CUTOFF = NOW - timedelta(days=90)


async def _decided_old(store: Store, at: datetime = OLD) -> str:
    """A proposal approved by a person and executed at ``at``, its effects delivered."""
    new = new_proposal(at)
    await store.create_proposal(new)
    claimed = await store.claim_for_execution(
        new.id, actor="U0APPROVER", now=at, binding_hash=new.binding_hash, lease_until=at + LEASE
    )
    assert isinstance(claimed, Transitioned)
    await store.record_outcome(new.id, OUTCOME_EXAMPLES[0], now=at)
    await _drain(store, at)
    return new.id


class RetentionConformance:
    @pytest.fixture
    def store(self) -> Store:
        raise NotImplementedError

    async def test_an_old_decided_proposal_is_archived_removed_and_the_chain_still_verifies(
        self, store: Store
    ) -> None:
        old = await _decided_old(store)
        undecided = new_proposal(OLD, expires_at=None)
        await store.create_proposal(undecided)
        recent = new_proposal(NOW - timedelta(days=1))
        await store.create_proposal(recent)
        await store.reject(recent.id, actor="U0APPROVER", reason="no", now=NOW - timedelta(days=1))
        entries_of_old = await store.audit_log(old)
        retention = retention_of(store)

        batch = await retention.archivable(before=CUTOFF, now=NOW, limit=100)

        assert [item.proposal.id for item in batch.proposals] == [old]
        [item] = batch.proposals
        assert item.proposal.status is Status.SUCCEEDED
        assert [a.approver for a in item.proposal.approvals] == ["U0APPROVER"]
        assert list(item.audit) == entries_of_old
        removed = await retention.remove(
            batch, archive="archive.jsonl", digest="d" * 64, actor="retention", now=NOW
        )
        assert removed == (old,)
        with pytest.raises(ProposalNotFound):
            await store.get_proposal(old)
        assert (await store.get_proposal(undecided.id)).status is Status.PENDING
        assert (await store.get_proposal(recent.id)).status is Status.REJECTED
        # the audit entries stay, and the chain verifies with the removal recorded in it
        assert await store.audit_log(old) == entries_of_old
        report = await store.verify_audit()
        assert report.ok, report.problem
        last = (await store.audit_log())[-1]
        assert (last.event, last.proposal_id) == (ARCHIVED_EVENT, None)
        assert last.detail["proposals"] == [old]
        assert last.detail["sha256"] == "d" * 64
        assert await retention.archived_count() == 1
        # nothing more to archive
        again = await retention.archivable(before=CUTOFF, now=NOW, limit=100)
        assert again.proposals == ()

    async def test_a_proposal_changed_after_it_was_read_stays(self, store: Store) -> None:
        old = await _decided_old(store)
        retention = retention_of(store)
        batch = await retention.archivable(before=CUTOFF, now=NOW, limit=100)
        await store.record_event(old, actor="U0SOMEONE", event="note", detail={}, now=NOW)

        removed = await retention.remove(
            batch, archive="a.jsonl", digest="d" * 64, actor="retention", now=NOW
        )

        assert removed == ()
        assert (await store.get_proposal(old)).status is Status.SUCCEEDED
        assert not any(e.event == ARCHIVED_EVENT for e in await store.audit_log())
        assert (await store.verify_audit()).ok

    async def test_a_proposal_with_an_undelivered_effect_stays(self, store: Store) -> None:
        new = new_proposal(OLD)
        await store.create_proposal(new)
        await store.reject(new.id, actor="U0APPROVER", reason="no", now=OLD)

        batch = await retention_of(store).archivable(before=CUTOFF, now=NOW, limit=100)

        assert batch.proposals == ()

    async def test_the_limit_takes_the_oldest_first(self, store: Store) -> None:
        first = await _decided_old(store)
        await _decided_old(store, OLD + timedelta(days=1))
        batch = await retention_of(store).archivable(before=CUTOFF, now=NOW, limit=1)
        assert [item.proposal.id for item in batch.proposals] == [first]
