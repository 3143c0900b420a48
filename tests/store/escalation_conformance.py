"""The behaviour every EscalationStore backend must have, written against the protocols only.

A backend's test module subclasses :class:`EscalationConformance` and provides a ``store``
fixture that yields an empty Store; its escalations come from ``store.escalations()``.
"""

from __future__ import annotations

import asyncio
import secrets
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from contracts.escalation import (
    Signals,
    Summary,
    ToolResult,
    Trigger,
    TriggerKind,
    TriggerVerdict,
)
from store.escalations import (
    ESCALATION_TRANSITIONS,
    EscalationConflict,
    EscalationNotFound,
    EscalationStatus,
    Moved,
    NewEscalation,
    Refused,
    taken_since,
)
from store.proposals import Effect
from store.protocol import Store
from tests.store.conformance import LEASE

__all__ = ["EscalationConformance", "new_escalation"]

NOW = datetime(2031, 3, 14, 15, 9, 26, 535897, tzinfo=UTC)
AFTER = timedelta(minutes=15)


def new_escalation(now: datetime = NOW, **changes: Any) -> NewEscalation:
    fields: dict[str, Any] = {
        "id": "esc_" + secrets.token_hex(13),
        "agent": "support-bot",
        "submission_key": secrets.token_hex(8),
        "submission_fingerprint": "fp-1",
        "conversation_id": "conv-42",
        "requested_by": "U0REQ",
        "customer_ref": "cus_ada",
        "team": "billing",
        "summary": Summary(
            goal="Get a refund for a double charge ✓",
            steps_done=("looked up the payment", "tried the refund"),
            tool_results=(ToolResult(tool="payments.lookup", result_summary="two charges"),),
            blocked_on="the refund tool answers 500",
        ),
        "trigger": Trigger(
            kind=TriggerKind.REPEATED_FAILURE,
            signals=Signals(failed_turns=4, error_codes=("E500", "E500")),
        ),
        "verdict": TriggerVerdict(
            kind=TriggerKind.REPEATED_FAILURE, note="4 turns without progress (threshold 3)"
        ),
        "channel": "C0SUPPORT",
        "callback_url": "http://127.0.0.1:9/cb",
        "created_at": now,
    }
    fields.update(changes)
    return NewEscalation(**fields)


async def _events(store: Store, escalation_id: str) -> list[str]:
    return [e.event for e in await store.escalations().escalation_log(escalation_id)]


class EscalationConformance:
    """Subclass with a ``store`` fixture yielding an empty Store of the backend under test."""

    async def test_created_escalation_reads_back_open_with_every_field(self, store: Store) -> None:
        escalations = store.escalations()
        new = new_escalation()

        created, was_created = await escalations.create_escalation(new)

        assert was_created
        stored = await escalations.get_escalation(new.id)
        assert stored == created
        assert stored.model_dump(include=set(NewEscalation.model_fields)) == new.model_dump()
        assert stored.status is EscalationStatus.OPEN
        assert (stored.owner, stored.handed_off, stored.announced_at) == (None, False, NOW)
        assert await _events(store, new.id) == ["escalated"]

    async def test_the_same_submission_is_one_escalation_and_another_body_conflicts(
        self, store: Store
    ) -> None:
        escalations = store.escalations()
        first = new_escalation()
        await escalations.create_escalation(first)

        again, created = await escalations.create_escalation(
            new_escalation(submission_key=first.submission_key)
        )
        assert (again.id, created) == (first.id, False)
        with pytest.raises(EscalationConflict) as raised:
            await escalations.create_escalation(
                new_escalation(submission_key=first.submission_key, submission_fingerprint="fp-2")
            )
        assert raised.value.existing.id == first.id
        assert await escalations.find_escalation("support-bot", first.submission_key) == again
        assert await escalations.find_escalation("other-bot", first.submission_key) is None

    async def test_unknown_id_raises_not_found(self, store: Store) -> None:
        with pytest.raises(EscalationNotFound, match="esc_nope"):
            await store.escalations().get_escalation("esc_nope")
        with pytest.raises(EscalationNotFound):
            await store.escalations().take("esc_nope", actor="U1", now=NOW)

    async def test_twenty_concurrent_takes_make_exactly_one_owner(self, store: Store) -> None:
        escalations = store.escalations()
        new, _ = await escalations.create_escalation(new_escalation())

        results = await asyncio.gather(
            *(escalations.take(new.id, actor=f"U{i:03d}", now=NOW) for i in range(20))
        )

        [won] = [r for r in results if isinstance(r, Moved)]
        owner = won.escalation.owner
        assert won.escalation.handed_off
        losers = [r for r in results if isinstance(r, Refused)]
        assert len(losers) == 19
        assert all(f"{owner} has already taken it" in r.reason for r in losers)
        assert await _events(store, new.id) == ["escalated", "taken"]

    async def test_only_the_owner_hands_back_and_the_note_is_kept(self, store: Store) -> None:
        escalations = store.escalations()
        new, _ = await escalations.create_escalation(new_escalation())
        await escalations.take(new.id, actor="U1", now=NOW)

        other = await escalations.hand_back(new.id, actor="U2", note="mine now", now=NOW)
        assert isinstance(other, Refused)
        assert "U1 has taken it" in other.reason
        back = await escalations.hand_back(new.id, actor="U1", note="refund done", now=NOW)

        assert isinstance(back, Moved)
        assert back.escalation.status is EscalationStatus.HANDED_BACK
        assert (back.escalation.owner, back.escalation.note) == (None, "refund done")
        retaken = await escalations.take(new.id, actor="U2", now=NOW)
        assert isinstance(retaken, Moved)
        assert retaken.escalation.owner == "U2"

    async def test_resolve_by_the_owner_or_when_nobody_owns_it(self, store: Store) -> None:
        escalations = store.escalations()
        taken, _ = await escalations.create_escalation(new_escalation())
        unowned, _ = await escalations.create_escalation(new_escalation())
        await escalations.take(taken.id, actor="U1", now=NOW)

        not_owner = await escalations.resolve(taken.id, actor="U2", note=None, now=NOW)
        assert isinstance(not_owner, Refused)
        done = await escalations.resolve(taken.id, actor="U1", note="refunded", now=NOW)
        closed = await escalations.resolve(unowned.id, actor="U3", note="duplicate", now=NOW)

        assert isinstance(done, Moved) and isinstance(closed, Moved)
        assert (done.escalation.status, done.escalation.resolved_by) == (
            EscalationStatus.RESOLVED,
            "U1",
        )
        assert done.escalation.owner is None
        again = await escalations.take(taken.id, actor="U2", now=NOW)
        assert isinstance(again, Refused)
        assert "already resolved by U1" in again.reason
        assert await _events(store, taken.id) == ["escalated", "taken", "resolved"]

    async def test_taken_at_is_when_the_owner_took_it_and_goes_when_they_let_go(
        self, store: Store
    ) -> None:
        """The take writes taken_at with the owner; placing the message again later moves
        updated_at, not taken_at, so only a click made by the take's moment knows it as its
        own. A hand-back or a resolution clears it with the owner; a take again sets it anew."""
        escalations = store.escalations()
        new, _ = await escalations.create_escalation(new_escalation())
        assert new.taken_at is None
        took_at = NOW + timedelta(seconds=1)

        taken = await escalations.take(new.id, actor="U1", now=took_at)
        assert isinstance(taken, Moved) and taken.escalation.taken_at == took_at
        placed_at = NOW + timedelta(minutes=1)
        placed = await escalations.attach_escalation_message(
            new.id, "C0SUPPORT", "1.2", now=placed_at
        )
        assert (placed.taken_at, placed.updated_at) == (took_at, placed_at)
        assert taken_since(placed, "U1", took_at)
        assert not taken_since(placed, "U1", took_at + timedelta(seconds=30))
        assert not taken_since(placed, "U2", took_at)

        back = await escalations.hand_back(new.id, actor="U1", note="back", now=NOW + AFTER)
        assert isinstance(back, Moved) and back.escalation.taken_at is None
        retook_at = NOW + 2 * AFTER
        retaken = await escalations.take(new.id, actor="U2", now=retook_at)
        assert isinstance(retaken, Moved) and retaken.escalation.taken_at == retook_at
        done = await escalations.resolve(new.id, actor="U2", note=None, now=NOW + 3 * AFTER)
        assert isinstance(done, Moved) and done.escalation.taken_at is None
        assert (await escalations.get_escalation(new.id)).taken_at is None

    async def test_every_transition_writes_its_outbox_entries_in_order(self, store: Store) -> None:
        escalations = store.escalations()
        new, _ = await escalations.create_escalation(new_escalation())
        await escalations.take(new.id, actor="U1", now=NOW)
        await escalations.resolve(new.id, actor="U1", note=None, now=NOW)

        seen: list[tuple[Effect, EscalationStatus]] = []
        while batch := await escalations.claim_deliveries(now=NOW, limit=10, lease=LEASE):
            for delivery in batch:
                seen.append((delivery.effect, delivery.status))
                await escalations.complete_delivery(delivery.id, now=NOW)

        slack = [s for s in seen if s[0] is not Effect.CALLBACK]
        assert slack == [
            (Effect.SLACK_POST, EscalationStatus.OPEN),
            (Effect.SLACK_UPDATE, EscalationStatus.TAKEN),
            (Effect.SLACK_REPLY, EscalationStatus.TAKEN),
            (Effect.SLACK_UPDATE, EscalationStatus.RESOLVED),
            (Effect.SLACK_REPLY, EscalationStatus.RESOLVED),
        ]
        callbacks = [s[1] for s in seen if s[0] is Effect.CALLBACK]
        assert callbacks == [EscalationStatus.TAKEN, EscalationStatus.RESOLVED]
        assert await escalations.pending_deliveries() == 0

    async def test_no_callback_entries_without_a_callback_url(self, store: Store) -> None:
        escalations = store.escalations()
        new, _ = await escalations.create_escalation(new_escalation(callback_url=None))
        await escalations.take(new.id, actor="U1", now=NOW)

        due = await escalations.claim_deliveries(now=NOW, limit=10, lease=LEASE)

        assert Effect.CALLBACK not in {d.effect for d in due}

    async def test_an_abandoned_delivery_is_audited_on_the_escalation(self, store: Store) -> None:
        escalations = store.escalations()
        new, _ = await escalations.create_escalation(new_escalation())
        [post] = await escalations.claim_deliveries(now=NOW, limit=10, lease=LEASE)

        await escalations.abandon_delivery(post.id, now=NOW, error="not_in_channel")

        assert await _events(store, new.id) == ["escalated", "delivery_abandoned"]
        assert await escalations.pending_deliveries() == 0

    async def test_unclaimed_escalations_are_reannounced_once_per_period(
        self, store: Store
    ) -> None:
        escalations = store.escalations()
        waiting, _ = await escalations.create_escalation(new_escalation())
        taken, _ = await escalations.create_escalation(new_escalation())
        await escalations.take(taken.id, actor="U1", now=NOW)

        assert await escalations.reannounce_due(now=NOW + AFTER / 2, after=AFTER, most=3) == []
        sweeps = await asyncio.gather(
            *(escalations.reannounce_due(now=NOW + AFTER, after=AFTER, most=3) for _ in range(5))
        )

        announced = [e for sweep in sweeps for e in sweep]
        assert [e.id for e in announced] == [waiting.id]
        assert (announced[0].reannouncements, announced[0].announced_at) == (1, NOW + AFTER)
        assert await escalations.reannounce_due(now=NOW + AFTER * 1.5, after=AFTER, most=3) == []
        [second] = await escalations.reannounce_due(now=NOW + AFTER * 2, after=AFTER, most=3)
        assert second.reannouncements == 2
        replies = []
        later = NOW + AFTER * 2
        while batch := await escalations.claim_deliveries(now=later, limit=50, lease=LEASE):
            for delivery in batch:
                if delivery.escalation_id == waiting.id and delivery.reannounce:
                    replies.append((delivery.effect, delivery.status))
                await escalations.complete_delivery(delivery.id, now=later)
        assert replies == [(Effect.SLACK_REPLY, EscalationStatus.OPEN)] * 2

    async def test_reannouncements_stop_after_the_most_allowed(self, store: Store) -> None:
        escalations = store.escalations()
        waiting, _ = await escalations.create_escalation(new_escalation())

        counts = []
        for period in range(1, 6):
            announced = await escalations.reannounce_due(
                now=NOW + AFTER * period, after=AFTER, most=2
            )
            counts.append([e.reannouncements for e in announced])

        assert counts == [[1], [2], [], [], []]
        assert (await escalations.get_escalation(waiting.id)).reannouncements == 2
        assert (await _events(store, waiting.id)).count("reannounced") == 2

    async def test_count_open_counts_only_the_agents_untaken_escalations(
        self, store: Store
    ) -> None:
        escalations = store.escalations()
        assert await escalations.count_open("support-bot") == 0
        opened = [(await escalations.create_escalation(new_escalation()))[0] for _ in range(3)]
        await escalations.create_escalation(new_escalation(agent="other-bot"))
        taken, handed, resolved = opened
        await escalations.take(taken.id, actor="U1", now=NOW)
        assert await escalations.count_open("support-bot") == 2
        await escalations.resolve(resolved.id, actor="U1", note=None, now=NOW)
        assert await escalations.count_open("support-bot") == 1
        await escalations.take(handed.id, actor="U1", now=NOW)
        await escalations.hand_back(handed.id, actor="U1", note="yours", now=NOW)

        assert await escalations.count_open("support-bot") == 0
        assert await escalations.count_open("other-bot") == 1
        assert await escalations.count_open("nobody") == 0

    async def test_owned_by_lists_what_a_person_has_taken(self, store: Store) -> None:
        escalations = store.escalations()
        first, _ = await escalations.create_escalation(new_escalation())
        second, _ = await escalations.create_escalation(new_escalation())
        await escalations.create_escalation(new_escalation())
        await escalations.take(first.id, actor="U1", now=NOW)
        await escalations.take(second.id, actor="U1", now=NOW + timedelta(seconds=1))

        assert [e.id for e in await escalations.owned_by("U1")] == [first.id, second.id]
        # the first one's message posted again later: still the one taken first (oldest first
        # is by when each was taken, 0031, not by the row's last change)
        await escalations.attach_escalation_message(
            first.id, "C0SUPPORT", "9.9", now=NOW + timedelta(minutes=5)
        )
        assert [e.id for e in await escalations.owned_by("U1")] == [first.id, second.id]
        await escalations.hand_back(first.id, actor="U1", note="back", now=NOW)
        assert [e.id for e in await escalations.owned_by("U1")] == [second.id]

    async def test_escalation_audit_entries_extend_the_one_hash_chain(self, store: Store) -> None:
        escalations = store.escalations()
        new, _ = await escalations.create_escalation(new_escalation())
        await escalations.take(new.id, actor="U1", now=NOW)
        await escalations.attach_escalation_message(new.id, "C0SUPPORT", "1.2", now=NOW)

        report = await store.verify_audit()

        assert (report.ok, report.checked) == (True, 3)

    def test_the_transitions_table_matches_what_the_docstring_promises(self) -> None:
        assert ESCALATION_TRANSITIONS[EscalationStatus.RESOLVED] == frozenset()
        assert EscalationStatus.TAKEN in ESCALATION_TRANSITIONS[EscalationStatus.HANDED_BACK]
