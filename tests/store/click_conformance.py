"""Decision clicks recorded at the click and applied after (store.proposals.clicks), as every Store
backend must keep them: recorded only for a pending proposal and once per person, leased oldest
first to one applier at a time, leased again when a lease ends, gone once settled.

Part of the shared conformance suite: :class:`tests.store.conformance.StoreConformance` inherits
these tests, so every backend runs them.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

from store.proposals import NewProposal
from store.protocol import Store

__all__ = ["ClickConformance"]

LEASE = timedelta(seconds=60)


def _new(now: datetime, **changes: Any) -> NewProposal:
    # Imported here: tests.store.conformance imports this module to inherit from it.
    from tests.store.conformance import new_proposal

    return new_proposal(now, **changes)


class ClickConformance:
    async def test_a_click_is_recorded_once_per_person_and_only_on_a_pending_proposal(
        self, store: Store, now: datetime
    ) -> None:
        clicks = store.clicks()
        pending = (await store.create_proposal(_new(now)))[0]
        rejected = (await store.create_proposal(_new(now)))[0]
        await store.reject(rejected.id, actor="U0REJECTER", reason="no", now=now)

        first = await clicks.record_click(
            pending.id, actor="U0APPROVER", verb="approve", channel="C0FINANCE", now=now
        )
        again = await clicks.record_click(
            pending.id, actor="U0APPROVER", verb="approve", channel="C0FINANCE", now=now
        )
        other = await clicks.record_click(
            pending.id, actor="U0OTHER", verb="approve", channel=None, now=now
        )

        assert first is not None and first[1] is True
        assert first[0].subject == pending.id and first[0].actor == "U0APPROVER"
        assert first[0].channel == "C0FINANCE" and first[0].recorded_at == now
        assert again == (first[0], False)
        assert other is not None and other[1] is True and other[0].id > first[0].id
        for proposal_id in (rejected.id, "cs_nobody"):
            assert (
                await clicks.record_click(
                    proposal_id, actor="U0APPROVER", verb="approve", channel=None, now=now
                )
                is None
            )
        assert await clicks.waiting_clicks() == 2

    async def test_recorded_clicks_are_leased_oldest_first_again_when_the_lease_ends_and_gone_once_settled(  # noqa: E501
        self, store: Store, now: datetime
    ) -> None:
        clicks = store.clicks()
        made = [(await store.create_proposal(_new(now)))[0] for _ in range(3)]
        recorded = []
        for proposal in made:
            click = await clicks.record_click(
                proposal.id, actor="U0APPROVER", verb="approve", channel=None, now=now
            )
            assert click is not None
            recorded.append(click[0].id)

        first = await clicks.claim_clicks(now=now, limit=2, lease=LEASE)
        rest = await clicks.claim_clicks(now=now, limit=10, lease=LEASE)
        none = await clicks.claim_clicks(now=now + timedelta(seconds=30), limit=10, lease=LEASE)
        await clicks.settle_click(first[0].id)
        again = await clicks.claim_clicks(now=now + LEASE, limit=10, lease=LEASE)

        assert [c.id for c in first] == recorded[:2]
        assert [c.id for c in rest] == recorded[2:]
        assert none == []
        assert [c.id for c in again] == recorded[1:]
        assert again[0].leased_until == now + 2 * LEASE
        assert await clicks.waiting_clicks() == 2
        # settled (by whichever applier) is what another instance's clicker reads
        assert [await clicks.is_waiting(i) for i in recorded] == [False, True, True]

    async def test_concurrent_appliers_never_lease_the_same_click(
        self, store: Store, now: datetime
    ) -> None:
        """Appliers in every instance claim at once (on PostgreSQL, connections of their own)."""
        clicks = store.clicks()
        for _ in range(30):
            proposal = (await store.create_proposal(_new(now)))[0]
            await clicks.record_click(
                proposal.id, actor="U0APPROVER", verb="approve", channel=None, now=now
            )

        claimed = await asyncio.gather(
            *(clicks.claim_clicks(now=now, limit=4, lease=LEASE) for _ in range(10))
        )

        ids = [click.id for batch in claimed for click in batch]
        assert len(ids) == len(set(ids)) == 30

    async def test_every_decision_verb_is_recorded_with_what_it_carries_in_the_status_it_needs(
        self, store: Store, now: datetime
    ) -> None:
        """A rejection, an extension, a retry and a reconciliation are recorded like Approve,
        each once per person, with what the click carries (the reason); a retry or a
        reconciliation only on a proposal whose execution is uncertain."""
        clicks = store.clicks()
        pending = (await store.create_proposal(_new(now)))[0]

        reject = await clicks.record_click(
            pending.id,
            actor="U0APPROVER",
            verb="reject",
            channel=None,
            now=now,
            detail={"reason": "not this month"},
        )
        extend = await clicks.record_click(
            pending.id, actor="U0APPROVER", verb="extend", channel="C0FINANCE", now=now
        )
        retry = await clicks.record_click(
            pending.id, actor="U0APPROVER", verb="retry", channel="C0FINANCE", now=now
        )

        assert reject is not None and reject[1] is True
        assert reject[0].verb == "reject" and reject[0].detail == {"reason": "not this month"}
        assert extend is not None and extend[1] is True and extend[0].detail == {}
        assert retry is None  # the proposal is pending, not waiting to be reconciled
        [first, second] = await clicks.claim_clicks(now=now, limit=10, lease=LEASE)
        assert (first.id, first.detail, first.attempts) == (reject[0].id, reject[0].detail, 1)
        assert second.verb == "extend"
        again = await clicks.claim_clicks(now=now + LEASE, limit=10, lease=LEASE)
        assert [c.attempts for c in again] == [2, 2]  # an earlier applier may have applied them

    async def test_a_digest_click_needs_an_item_pending_and_an_escalation_click_an_open_escalation(
        self, store: Store, now: datetime
    ) -> None:
        """A digest's decision is recorded while one of its items is pending, with the items
        chosen; an escalation's while it is not resolved; each once per person and verb."""
        from tests.store.digest_conformance import digest
        from tests.store.escalation_conformance import new_escalation

        clicks = store.clicks()
        items = [(await store.create_proposal(_new(now)))[0].id for _ in range(2)]
        shown = digest()
        await store.digests().attach_digest(shown, items, deliveries=[], now=now)
        chosen: dict[str, Any] = {"items": items[:1], "reason": ""}
        escalations = store.escalations()
        open_one, _ = await escalations.create_escalation(new_escalation(now))
        resolved, _ = await escalations.create_escalation(
            new_escalation(now, conversation_id="conv-resolved")
        )
        await escalations.resolve(resolved.id, actor="U0RESPONDER", note=None, now=now)

        approve = await clicks.record_click(
            shown.id,
            actor="U0APPROVER",
            verb="digest_approve",
            channel=None,
            now=now,
            detail=chosen,
        )
        again = await clicks.record_click(
            shown.id, actor="U0APPROVER", verb="digest_approve", channel=None, now=now
        )
        take = await clicks.record_click(
            open_one.id, actor="U0RESPONDER", verb="escalation_take", channel="C0ESC", now=now
        )
        late = await clicks.record_click(
            resolved.id, actor="U0RESPONDER", verb="escalation_resolve", channel=None, now=now
        )
        unknown = await clicks.record_click(
            "dg_nothing", actor="U0APPROVER", verb="digest_approve_all", channel=None, now=now
        )

        assert approve is not None and approve[1] is True and approve[0].detail == chosen
        assert again == (approve[0], False)
        assert take is not None and take[1] is True and take[0].subject == open_one.id
        assert late is None and unknown is None
        for item in items:
            await store.reject(item, actor="U0APPROVER", reason="no", now=now)
        decided = await clicks.record_click(
            shown.id, actor="U0OTHER", verb="digest_approve_all", channel=None, now=now
        )
        assert decided is None  # every item is decided: nothing left to record
        assert await clicks.waiting_clicks() == 2
