"""Standing rules and reviews: the behaviour every Store backend must have (Store.standing()).

Mixed into :class:`tests.store.conformance.StoreConformance`, so it runs on every backend with
that suite's ``store`` and ``now`` fixtures.
"""

from __future__ import annotations

import asyncio
import secrets
from datetime import datetime, timedelta
from typing import Any

import pytest

from contracts.outcomes import (
    NeedsReconciliation,
    Outcome,
    RevisionRequired,
    Succeeded,
    TerminalFailure,
)
from contracts.standing import CallToCover, Grant, bound_arguments, covers
from store.base import StoreError
from store.proposals import (
    AlreadyDecided,
    Delivery,
    Effect,
    NewProposal,
    NotApprovable,
    Proposal,
    ProposalNotFound,
    Status,
    Transitioned,
)
from store.proposals.lifecycle import TRANSITIONS
from store.protocol import Store
from store.revocation import NotRevocable, Revoked
from store.standing import AlreadyReviewed, Reviewed, RuleHistory, StandingRuleNotFound

__all__ = ["StandingConformance"]

ADMIN = "U0ADMIN"
LEASE = timedelta(minutes=5)


def _proposal(now: datetime, **changes: Any) -> NewProposal:
    from tests.store.conformance import new_proposal  # the shared builder (imports this module)

    return new_proposal(now, **changes)


def covered(
    now: datetime, standing_rule_id: str | None, amount: int, **changes: Any
) -> NewProposal:
    """A refund the policy asks for, approved automatically by ``standing_rule_id``: the granted
    call (:func:`grant_of`) but for the amount."""
    fields: dict[str, Any] = {
        "arguments": {"payment_id": "pay_42", "amount_cents": amount, "note": "dup charge ✓"},
        "status": Status.EXECUTING,
        "decision": "auto",
        "channel": None,
        "approver_roles": (),
        "expires_at": None,
        "standing_rule_id": standing_rule_id,
        "policy_note": f"standing rule {standing_rule_id}",
        **changes,
    }
    return _proposal(now, **fields)


def grant_of(
    proposal: Proposal,
    now: datetime,
    *,
    by: str = ADMIN,
    hours: int = 1,
    max_uses: int = 10,
    varying: tuple[str, ...] = ("amount_cents",),
) -> Grant:
    amount = proposal.arguments["amount_cents"]
    assert isinstance(amount, int)
    assert proposal.rule_id is not None
    return Grant(
        operation=proposal.operation,
        agent=proposal.agent,
        rule_id=proposal.rule_id,
        ceiling_field="amount_cents",
        ceiling=amount,
        arguments=bound_arguments(proposal.arguments, varying),
        varying=varying,
        max_uses=max_uses,
        created_by=by,
        created_from=proposal.id,
        created_at=now,
        expires_at=now + timedelta(hours=hours),
    )


async def drain(store: Store, *, now: datetime) -> list[Delivery]:
    """Every outbox entry, each delivered as it comes due (later ones wait behind earlier)."""
    delivered: list[Delivery] = []
    while batch := await store.claim_deliveries(now=now, limit=100, lease=timedelta(minutes=1)):
        for delivery in batch:
            await store.complete_delivery(delivery.id, now=now)
        delivered += batch
    return delivered


#: The outcome that leaves an executing proposal in each status after it.
_OUTCOME_OF: dict[Status, Outcome] = {
    Status.SUCCEEDED: Succeeded(result=None),
    Status.FAILED: TerminalFailure(detail="account closed", correlation_id="c-1"),
    Status.REVISION_REQUIRED: RevisionRequired(reason="refunded already"),
    Status.NEEDS_RECONCILIATION: NeedsReconciliation(detail="timeout", correlation_id="c-2"),
}


def _approved_statuses() -> set[Status]:
    """Where a proposal a person approved may be: executing and every status after it."""
    found = {Status.EXECUTING}
    while more := {after for status in found for after in TRANSITIONS[status]} - found:
        found |= more
    return found


async def in_status(store: Store, status: Status, *, at: datetime, **changes: Any) -> Proposal:
    """A proposal asked of a person (with ``changes``) created at ``at`` and taken to
    ``status`` by the store's verbs a minute later (a denied one is created so)."""
    if status is Status.DENIED:
        denied = _proposal(at, status=Status.DENIED, decision="deny", expires_at=None, **changes)
        return (await store.create_proposal(denied))[0]
    lasting = timedelta(hours=1) if status is Status.EXPIRED else timedelta(days=60)
    new = _proposal(at, created_at=at, expires_at=at + lasting, **changes)
    proposal, _ = await store.create_proposal(new)
    later = at + timedelta(minutes=1)
    if status in _approved_statuses():
        claimed = await store.claim_for_execution(
            proposal.id,
            actor="U0APPROVER",
            now=later,
            binding_hash=proposal.binding_hash,
            lease_until=later + LEASE,
        )
        assert isinstance(claimed, Transitioned), claimed
        if status is not Status.EXECUTING:
            await store.record_outcome(proposal.id, _OUTCOME_OF[status], now=later)
    elif status is Status.REJECTED:
        rejected = await store.reject(proposal.id, actor="U0APPROVER", reason="no", now=later)
        assert isinstance(rejected, Transitioned), rejected
    elif status is Status.EXPIRED:
        expired = await store.expire_due(now=at + timedelta(minutes=61))
        assert [p.id for p in expired] == [proposal.id]
    elif status is Status.SUPERSEDED:
        edit = _proposal(
            later,
            submission_key=f"edit:{proposal.id}",
            supersedes=proposal.id,
            edited_by="U0EDITOR",
            expires_at=later + timedelta(days=60),
            **changes,
        )
        edited = await store.supersede(proposal.id, edit, actor="U0EDITOR", now=later)
        assert isinstance(edited, Transitioned), edited
    elif status is Status.CANCELLED:
        cancelled = await store.cancel(proposal.id, agent=proposal.agent, now=later)
        assert isinstance(cancelled, Transitioned), cancelled
    else:
        assert status is Status.PENDING, f"no way here to take a proposal to {status}"
    current = await store.get_proposal(proposal.id)
    assert current.status is status
    return current


def new_rule_id() -> str:
    return "sr_" + secrets.token_hex(8)


class StandingConformance:
    """Needs the ``store`` and ``now`` fixtures of StoreConformance."""

    async def _granted(
        self,
        store: Store,
        now: datetime,
        *,
        hours: int = 1,
        by: str = ADMIN,
        varying: tuple[str, ...] = ("amount_cents",),
        **changes: Any,
    ) -> tuple[Proposal, str]:
        """A pending 42.00 refund (with ``changes``) approved with a standing rule whose calls
        may vary in ``varying``; (the approved one, rule id)."""
        proposal, _ = await store.create_proposal(_proposal(now, **changes))
        rule_id = new_rule_id()
        result = await store.standing().claim_and_grant(
            proposal.id,
            actor=by,
            now=now,
            binding_hash=proposal.binding_hash,
            lease_until=now + LEASE,
            grant=grant_of(proposal, now, by=by, hours=hours, varying=varying),
            standing_rule_id=rule_id,
        )
        assert isinstance(result, Transitioned), result
        return result.proposal, rule_id

    # --- granting ------------------------------------------------------------------------------

    async def test_an_approval_with_a_grant_claims_and_grants_in_one_transaction(
        self, store: Store, now: datetime
    ) -> None:
        approved, rule_id = await self._granted(store, now)

        assert approved.status is Status.EXECUTING
        assert (approved.decided_by, approved.decided_at) == (ADMIN, now)
        rule = await store.standing().get_standing_rule(rule_id)
        assert rule.model_dump(exclude={"id", "revoked_by", "revoked_at", "uses"}) == (
            grant_of(approved, now).model_dump()
        )
        assert (rule.revoked_by, rule.revoked_at, rule.uses) == (None, None, 0)
        entries = await store.audit_log(approved.id)
        assert [e.event for e in entries] == ["submitted", "approved", "standing_rule_granted"]
        assert entries[-1].actor == ADMIN
        assert entries[-1].detail["standing_rule_id"] == rule_id
        assert entries[-1].detail["ceiling"] == 4200

    async def test_a_grant_on_a_decided_proposal_grants_nothing(
        self, store: Store, now: datetime
    ) -> None:
        proposal, _ = await store.create_proposal(_proposal(now))
        claimed = await store.claim_for_execution(
            proposal.id,
            actor="U0FIRST",
            now=now,
            binding_hash=proposal.binding_hash,
            lease_until=now + LEASE,
        )
        assert isinstance(claimed, Transitioned)
        rule_id = new_rule_id()

        result = await store.standing().claim_and_grant(
            proposal.id,
            actor=ADMIN,
            now=now,
            binding_hash=proposal.binding_hash,
            lease_until=now + LEASE,
            grant=grant_of(proposal, now),
            standing_rule_id=rule_id,
        )

        assert isinstance(result, AlreadyDecided)
        assert result.proposal.decided_by == "U0FIRST"
        with pytest.raises(StandingRuleNotFound):
            await store.standing().get_standing_rule(rule_id)
        events = [e.event for e in await store.audit_log(proposal.id)]
        assert "standing_rule_granted" not in events

    async def test_a_grant_bound_to_another_contract_or_past_expiry_grants_nothing(
        self, store: Store, now: datetime
    ) -> None:
        proposal, _ = await store.create_proposal(_proposal(now))
        standing = store.standing()
        other_hash = await standing.claim_and_grant(
            proposal.id,
            actor=ADMIN,
            now=now,
            binding_hash="another-hash",
            lease_until=now + LEASE,
            grant=grant_of(proposal, now),
            standing_rule_id=new_rule_id(),
        )
        later = now + timedelta(hours=2)
        expired = await standing.claim_and_grant(
            proposal.id,
            actor=ADMIN,
            now=later,
            binding_hash=proposal.binding_hash,
            lease_until=later + LEASE,
            grant=grant_of(proposal, later),
            standing_rule_id=new_rule_id(),
        )

        assert isinstance(other_hash, NotApprovable)
        assert "binding hash" in other_hash.reason
        assert isinstance(expired, NotApprovable)
        assert "expired" in expired.reason
        assert await standing.active_standing_rules(now=now) == []
        assert (await store.get_proposal(proposal.id)).status is Status.PENDING

    async def test_a_grant_comes_with_a_single_approval_only(
        self, store: Store, now: datetime
    ) -> None:
        proposal, _ = await store.create_proposal(_proposal(now, quorum=2))

        result = await store.standing().claim_and_grant(
            proposal.id,
            actor=ADMIN,
            now=now,
            binding_hash=proposal.binding_hash,
            lease_until=now + LEASE,
            grant=grant_of(proposal, now),
            standing_rule_id=new_rule_id(),
        )

        assert isinstance(result, NotApprovable)
        assert "needs 2 approvals" in result.reason
        assert (await store.get_proposal(proposal.id)).status is Status.PENDING
        assert await store.standing().active_standing_rules(now=now) == []

    # --- covering later calls ------------------------------------------------------------------

    async def test_find_covering_matches_operation_agent_rule_ceiling_and_time(
        self, store: Store, now: datetime
    ) -> None:
        approved, rule_id = await self._granted(store, now)
        standing = store.standing()

        async def found(value: float = 4200, **changes: Any) -> list[str]:
            call: dict[str, Any] = {
                "operation": approved.operation,
                "agent": approved.agent,
                "rule_id": approved.rule_id,
                "arguments": approved.arguments,
                "requested_by": "U0SOMEONE",
                "now": now + timedelta(minutes=30),
                **changes,
            }
            covering = await standing.find_covering(CallToCover(**call), value=value)
            return [rule.id for rule in covering]

        bound = {"payment_id": "pay_42", "note": "dup charge ✓"}
        assert await found() == [rule_id]
        assert await found(arguments={**bound, "amount_cents": 1}) == [rule_id]
        assert await found(arguments={**bound, "payment_id": "pay_43", "amount_cents": 1}) == []
        assert await found(arguments={"payment_id": "pay_42", "amount_cents": 1}) == []
        assert await found(arguments={**bound, "amount_cents": 1, "extra": 1}) == []
        assert await found(value=100) == [rule_id]
        assert await found(value=4201) == []
        assert await found(value=4200.5) == []
        assert await found(agent="other-agent") == []
        assert await found(operation="crm.send_campaign") == []
        assert await found(rule_id="another-rule") == []
        assert await found(requested_by=ADMIN) == []  # never the granter's own requests
        assert await found(now=now + timedelta(hours=1)) == []  # expired

    async def test_many_grants_for_other_calls_do_not_hide_the_one_that_covers(
        self, store: Store, now: datetime
    ) -> None:
        mine, rule_id = await self._granted(store, now, hours=1)
        for n in range(12):  # later expiry: listed first, were the arguments not compared
            other = {**mine.arguments, "payment_id": f"pay_other_{n}"}
            proposal, _ = await store.create_proposal(_proposal(now, arguments=other))
            granted = await store.standing().claim_and_grant(
                proposal.id,
                actor=ADMIN,
                now=now,
                binding_hash=proposal.binding_hash,
                lease_until=now + LEASE,
                grant=grant_of(proposal, now, hours=2),
                standing_rule_id=new_rule_id(),
            )
            assert isinstance(granted, Transitioned)

        call = CallToCover(
            operation=mine.operation,
            agent=mine.agent,
            rule_id="refunds-ask",
            arguments={**mine.arguments, "amount_cents": 100},
            requested_by="U0SOMEONE",
            now=now,
        )
        found = await store.standing().find_covering(call, value=100)

        assert [rule.id for rule in found] == [rule_id]

    async def test_a_covered_proposal_records_its_standing_rule_and_counts_as_a_use(
        self, store: Store, now: datetime
    ) -> None:
        _, rule_id = await self._granted(store, now)

        created, _ = await store.create_proposal(covered(now, rule_id, 3000))

        assert created.status is Status.EXECUTING
        assert created.standing_rule_id == rule_id
        assert (await store.get_proposal(created.id)).standing_rule_id == rule_id
        [auto] = [e for e in await store.audit_log(created.id) if e.event == "auto_approved"]
        assert auto.detail["standing_rule_id"] == rule_id
        assert (await store.standing().get_standing_rule(rule_id)).uses == 1

    async def _granted_uses(self, store: Store, now: datetime, max_uses: int) -> str:
        proposal, _ = await store.create_proposal(_proposal(now))
        rule_id = new_rule_id()
        result = await store.standing().claim_and_grant(
            proposal.id,
            actor=ADMIN,
            now=now,
            binding_hash=proposal.binding_hash,
            lease_until=now + LEASE,
            grant=grant_of(proposal, now, max_uses=max_uses),
            standing_rule_id=rule_id,
        )
        assert isinstance(result, Transitioned), result
        return rule_id

    async def test_a_grant_records_what_it_binds_and_how_often_it_covers(
        self, store: Store, now: datetime
    ) -> None:
        rule_id = await self._granted_uses(store, now, 4)

        rule = await store.standing().get_standing_rule(rule_id)
        assert rule.arguments == {"payment_id": "pay_42", "note": "dup charge ✓"}
        assert (rule.varying, rule.max_uses, rule.uses, rule.remaining) == (
            ("amount_cents",),
            4,
            0,
            4,
        )

    async def test_a_used_up_rule_covers_nothing_more(self, store: Store, now: datetime) -> None:
        rule_id = await self._granted_uses(store, now, 2)
        for amount in (100, 200):
            await store.create_proposal(covered(now, rule_id, amount))

        rule = await store.standing().get_standing_rule(rule_id)
        assert (rule.uses, rule.remaining, rule.active(now)) == (2, 0, False)
        call = CallToCover(
            operation="payments.refund",
            agent="billing-agent",
            rule_id="refunds-ask",
            arguments=covered(now, rule_id, 100).arguments,
            requested_by="U0SOMEONE",
            now=now,
        )
        found = await store.standing().find_covering(call, value=100)
        assert found == []
        third = covered(now, rule_id, 300)
        with pytest.raises(StoreError):
            await store.create_proposal(third)
        with pytest.raises(ProposalNotFound):
            await store.get_proposal(third.id)

    async def test_the_database_covers_the_same_nested_values_as_python(
        self, store: Store, now: datetime
    ) -> None:
        nested: dict[str, Any] = {
            "payment_id": "pay_42",
            "amount_cents": 4200,
            "meta": {"tags": ["a", "b"], "flag": True, "ratio": 0.5, "none": None, "n": 3},
            "note": "dup charge ✓",
        }
        proposal, _ = await store.create_proposal(_proposal(now, arguments=nested))
        rule_id = new_rule_id()
        granted = await store.standing().claim_and_grant(
            proposal.id,
            actor=ADMIN,
            now=now,
            binding_hash=proposal.binding_hash,
            lease_until=now + LEASE,
            grant=grant_of(proposal, now),
            standing_rule_id=rule_id,
        )
        assert isinstance(granted, Transitioned)
        grant = await store.standing().get_standing_rule(rule_id)
        call = {**nested, "amount_cents": 100}
        assert covers(
            grant,
            CallToCover(
                operation=proposal.operation,
                agent=proposal.agent,
                rule_id="refunds-ask",
                arguments=call,
                requested_by="U0SOMEONE",
                now=now,
            ),
        )

        created, _ = await store.create_proposal(
            covered(now, rule_id, 100, arguments=call, requested_by="U0SOMEONE")
        )

        assert created.standing_rule_id == rule_id

    @pytest.mark.parametrize("granted", [2**64 + 1, -(2**64) - 1, 10**30 + 1, 10**400, -(10**400)])
    async def test_a_ceiling_past_64_bits_never_covers_a_call_above_what_was_granted(
        self, store: Store, now: datetime, granted: int
    ) -> None:
        # SQLite's integers hold 64 bits, an agent's count may not: the store neither fails nor
        # covers a call above what was approved (rounding a ceiling up would). Past a float's
        # range (-10**400) a rule may cover nothing at all there: that refuses too.
        bound = {"payment_id": "pay_42", "note": "dup charge ✓"}
        proposal, rule_id = await self._granted(
            store, now, arguments={**bound, "amount_cents": granted}
        )
        rule = await store.standing().get_standing_rule(rule_id)
        assert rule.ceiling <= granted

        async def found(value: int) -> list[str]:
            call = CallToCover(
                operation=proposal.operation,
                agent=proposal.agent,
                rule_id="refunds-ask",
                arguments={**bound, "amount_cents": value},
                requested_by="U0SOMEONE",
                now=now,
            )
            return [r.id for r in await store.standing().find_covering(call, value=value)]

        assert await found(granted + 1) == []
        assert await found(granted + 2**20) == []
        assert await found(10**500) == []
        if granted > -(2**1000):  # within a float's range: what is well below is covered
            assert await found(granted - 10 ** (len(str(granted)) + 1)) == [rule_id]

    async def test_a_rule_binding_small_floats_covers_a_call_with_a_null_among_its_varying(
        self, store: Store, now: datetime
    ) -> None:
        # SQLite compares a bound argument holding a list or an object by its JSON text: the
        # same value must be written the same, whatever else the arguments hold (a null)
        bound: dict[str, Any] = {
            "payment_id": "pay_42",
            "meta": {"ratio": 1e-05, "eps": [2.5e-07, 0.5]},
        }
        granted_from = {**bound, "amount_cents": 4200, "memo": "first"}
        proposal, rule_id = await self._granted(
            store, now, varying=("amount_cents", "memo"), arguments=granted_from
        )
        call = {**bound, "amount_cents": 100, "memo": None}
        to_cover = CallToCover(
            operation=proposal.operation,
            agent=proposal.agent,
            rule_id="refunds-ask",
            arguments=call,
            requested_by="U0SOMEONE",
            now=now,
        )
        assert covers(await store.standing().get_standing_rule(rule_id), to_cover)

        found = await store.standing().find_covering(to_cover, value=100)
        created, _ = await store.create_proposal(
            covered(now, rule_id, 100, arguments=call, requested_by="U0SOMEONE")
        )

        assert [rule.id for rule in found] == [rule_id]
        assert created.standing_rule_id == rule_id

    @pytest.mark.parametrize("max_uses", [1, 3])
    async def test_concurrent_uses_beyond_max_uses_are_refused(
        self, store: Store, now: datetime, max_uses: int
    ) -> None:
        rule_id = await self._granted_uses(store, now, max_uses)
        attempts = [covered(now, rule_id, 100 + i) for i in range(max_uses + 5)]

        results = await asyncio.gather(
            *(store.create_proposal(new) for new in attempts), return_exceptions=True
        )

        admitted = [r for r in results if not isinstance(r, BaseException)]
        refused = [r for r in results if isinstance(r, BaseException)]
        assert len(admitted) == max_uses, results
        assert all(isinstance(r, StoreError) for r in refused), refused
        assert (await store.standing().get_standing_rule(rule_id)).uses == max_uses
        assert (await store.verify_audit()).ok

    @pytest.mark.parametrize(
        "change",
        [
            {"arguments": {"payment_id": "pay_43", "amount_cents": 3000, "note": "dup charge ✓"}},
            {"arguments": {"amount_cents": 3000, "note": "dup charge ✓"}},
            {
                "arguments": {
                    "payment_id": "pay_42",
                    "amount_cents": 3000,
                    "note": "dup charge ✓",
                    "x": 1,
                }
            },
        ],
        ids=["other-bound-value", "bound-argument-missing", "argument-added"],
    )
    async def test_the_database_refuses_a_covered_call_whose_other_arguments_differ(
        self, store: Store, now: datetime, change: dict[str, Any]
    ) -> None:
        _, rule_id = await self._granted(store, now)
        new = covered(now, rule_id, 3000, **change)

        with pytest.raises(StoreError):
            await store.create_proposal(new)

        with pytest.raises(ProposalNotFound):
            await store.get_proposal(new.id)

    @pytest.mark.parametrize(
        "change",
        [
            {"amount": 4201},
            {"agent": "other-agent"},
            {"rule_id": "another-rule"},
            {"requested_by": ADMIN},
            {"later": timedelta(hours=1)},
            {"status": Status.PENDING, "decision": "ask", "expires_at": "soon"},
        ],
        ids=["above-ceiling", "other-agent", "other-rule", "granter", "expired", "not-auto"],
    )
    async def test_the_database_refuses_a_proposal_its_standing_rule_does_not_cover(
        self, store: Store, now: datetime, change: dict[str, Any]
    ) -> None:
        _, rule_id = await self._granted(store, now)
        change = dict(change)
        amount = change.pop("amount", 3000)
        at = now + change.pop("later", timedelta(0))
        if change.get("expires_at") == "soon":
            change["expires_at"] = at + timedelta(hours=1)
            change["channel"] = "C0FINANCE"
        new = covered(at, rule_id, amount, **change)

        with pytest.raises(StoreError):
            await store.create_proposal(new)

        with pytest.raises(ProposalNotFound):
            await store.get_proposal(new.id)

    async def test_a_revoked_rule_covers_nothing_more(self, store: Store, now: datetime) -> None:
        _, rule_id = await self._granted(store, now)
        revoked = await store.standing().revoke_standing_rule(rule_id, actor=ADMIN, now=now)
        assert isinstance(revoked, Revoked)

        with pytest.raises(StoreError):
            await store.create_proposal(covered(now, rule_id, 3000))
        call = CallToCover(
            operation="payments.refund",
            agent="billing-agent",
            rule_id="refunds-ask",
            arguments=covered(now, rule_id, 1).arguments,
            requested_by="U0SOMEONE",
            now=now,
        )
        assert await store.standing().find_covering(call, value=1) == []

    # --- listing and revoking ------------------------------------------------------------------

    async def test_active_standing_rules_are_unrevoked_and_unexpired_soonest_expiry_first(
        self, store: Store, now: datetime
    ) -> None:
        _, long_id = await self._granted(store, now, hours=5)
        _, short_id = await self._granted(store, now, hours=2)
        _, revoked_id = await self._granted(store, now, hours=3)
        await store.standing().revoke_standing_rule(revoked_id, actor=ADMIN, now=now)

        active = await store.standing().active_standing_rules(now=now)
        later = await store.standing().active_standing_rules(now=now + timedelta(hours=2))

        assert [rule.id for rule in active] == [short_id, long_id]
        assert [rule.id for rule in later] == [long_id]
        with pytest.raises(ValueError, match="limit"):
            await store.standing().active_standing_rules(now=now, limit=0)

    async def test_revocation_happens_once_however_many_revoke_and_is_audited(
        self, store: Store, now: datetime
    ) -> None:
        approved, rule_id = await self._granted(store, now)
        standing = store.standing()

        results = await asyncio.gather(
            *(
                standing.revoke_standing_rule(rule_id, actor=f"U0ADMIN{i}", now=now)
                for i in range(10)
            )
        )

        [won] = [r for r in results if isinstance(r, Revoked)]
        lost = [r for r in results if isinstance(r, NotRevocable)]
        assert len(lost) == 9
        assert all(f"already revoked by {won.record.revoked_by}" in r.reason for r in lost)
        stored = await standing.get_standing_rule(rule_id)
        assert (stored.revoked_by, stored.revoked_at) == (won.record.revoked_by, now)
        revocations = [
            e for e in await store.audit_log(approved.id) if e.event == "standing_rule_revoked"
        ]
        assert [(e.actor, e.detail) for e in revocations] == [
            (won.record.revoked_by, {"standing_rule_id": rule_id})
        ]

    async def test_an_expired_or_unknown_rule_cannot_be_revoked(
        self, store: Store, now: datetime
    ) -> None:
        _, rule_id = await self._granted(store, now)

        late = await store.standing().revoke_standing_rule(
            rule_id, actor=ADMIN, now=now + timedelta(hours=1)
        )

        assert isinstance(late, NotRevocable)
        assert "expired" in late.reason
        assert (await store.standing().get_standing_rule(rule_id)).revoked_at is None
        with pytest.raises(StandingRuleNotFound):
            await store.standing().revoke_standing_rule("sr_nope", actor=ADMIN, now=now)

    # --- reviews of sampled automatic approvals --------------------------------------------------

    async def test_a_sampled_automatic_approval_queues_its_review_post_once(
        self, store: Store, now: datetime
    ) -> None:
        sampled, _ = await store.create_proposal(
            covered(now, None, 900, rule_id="small", review_sampled=True)
        )
        await store.create_proposal(covered(now, None, 800, rule_id="small"))  # not sampled
        later = now + LEASE + timedelta(seconds=1)
        # their executor vanished, and a person retries the sampled one: no second review post
        assert len(await store.reclaim_abandoned(now=later)) == 2
        retried = await store.retry_execution(
            sampled.id, actor="U0X", now=later, lease_until=later + LEASE
        )
        assert isinstance(retried, Transitioned)

        reviews = [
            d.proposal_id
            for d in await drain(store, now=later + timedelta(days=1))
            if d.effect is Effect.SLACK_REVIEW
        ]

        assert reviews == [sampled.id]

    async def test_a_verdict_is_recorded_once_per_proposal_and_audited(
        self, store: Store, now: datetime
    ) -> None:
        created, _ = await store.create_proposal(
            covered(now, None, 900, rule_id="small", review_sampled=True)
        )
        standing = store.standing()

        first = await standing.record_review(
            created.id, reviewer="U0R1", verdict="should_have_asked", now=now
        )
        again = await standing.record_review(created.id, reviewer="U0R2", verdict="ok", now=now)

        assert first == Reviewed(created.id, "should_have_asked", "U0R1", now)
        assert isinstance(again, AlreadyReviewed)
        assert again.review == first
        assert await standing.get_review(created.id) == first
        reviews = [e for e in await store.audit_log(created.id) if e.event == "reviewed"]
        assert [(e.actor, e.detail) for e in reviews] == [
            ("U0R1", {"verdict": "should_have_asked"})
        ]

    async def test_concurrent_verdicts_record_exactly_one(
        self, store: Store, now: datetime
    ) -> None:
        created, _ = await store.create_proposal(
            covered(now, None, 900, rule_id="small", review_sampled=True)
        )

        results = await asyncio.gather(
            *(
                store.standing().record_review(
                    created.id, reviewer=f"U0R{i}", verdict="ok", now=now
                )
                for i in range(10)
            )
        )

        assert sum(isinstance(r, Reviewed) for r in results) == 1

    async def test_only_a_sampled_proposal_can_be_reviewed(
        self, store: Store, now: datetime
    ) -> None:
        unsampled, _ = await store.create_proposal(covered(now, None, 900, rule_id="small"))
        standing = store.standing()

        with pytest.raises(ValueError, match="not sampled"):
            await standing.record_review(unsampled.id, reviewer="U0R", verdict="ok", now=now)
        with pytest.raises(ProposalNotFound):
            await standing.record_review("cs_nope", reviewer="U0R", verdict="ok", now=now)
        with pytest.raises(ValueError, match="verdict"):
            await standing.record_review(
                unsampled.id,
                reviewer="U0R",
                verdict="maybe",  # type: ignore[arg-type]
                now=now,
            )
        assert await standing.get_review(unsampled.id) is None
        assert "reviewed" not in [e.event for e in await store.audit_log(unsampled.id)]

    async def test_review_stats_count_sampled_reviewed_and_flagged_per_rule(
        self, store: Store, now: datetime
    ) -> None:
        _, rule_id = await self._granted(store, now)
        standing = store.standing()
        small = [
            (await store.create_proposal(covered(now, None, 900 + i, rule_id="small", **extra)))[0]
            for i, extra in enumerate([{"review_sampled": True}] * 3 + [{}])
        ]
        by_rule = [
            (
                await store.create_proposal(
                    covered(now, rule_id, 1000 + i, review_sampled=True, rule_id="refunds-ask")
                )
            )[0]
            for i in range(2)
        ]
        await standing.record_review(small[0].id, reviewer="U0R", verdict="ok", now=now)
        await standing.record_review(
            small[1].id, reviewer="U0R", verdict="should_have_asked", now=now
        )
        await standing.record_review(
            by_rule[0].id, reviewer="U0R", verdict="should_have_asked", now=now
        )
        await store.record_outcome(by_rule[1].id, Succeeded(result=None), now=now)

        stats = await standing.review_stats()

        rows = [
            (s.rule_id, s.standing_rule_id, s.sampled, s.reviewed, s.flagged, s.miss_rate)
            for s in stats
        ]
        assert rows == [
            ("refunds-ask", rule_id, 2, 1, 1, 1.0),
            ("small", None, 3, 2, 1, 0.5),
        ]

    # --- a rule's history, for the grant modal -----------------------------------------------

    async def test_rule_history_counts_what_people_decided_on_the_agents_asked_calls(
        self, store: Store, now: datetime
    ) -> None:
        day_ago = now - timedelta(days=1)
        for status in Status:  # one of each, of billing-agent under refunds-ask
            await in_status(store, status, at=day_ago)
        # not counted: another agent's, another rule's, older than 30 days, and automatic ones
        for status in (Status.SUCCEEDED, Status.REJECTED, Status.EXPIRED):
            await in_status(store, status, at=day_ago, agent="other-agent")
            await in_status(store, status, at=day_ago, rule_id="refunds-other")
            await in_status(store, status, at=now - timedelta(days=30, minutes=1))
        auto = _proposal(now, decision="auto", status=Status.EXECUTING, expires_at=None)
        await store.create_proposal(auto)
        granting, rule_id = await self._granted(store, now)  # a person approved it: counted
        await store.create_proposal(covered(now, rule_id, 3000))  # a standing rule ran it

        history = await store.standing().rule_history(
            "billing-agent", "refunds-ask", now=now + timedelta(minutes=2)
        )

        assert granting.decision == "ask" and granting.status is Status.EXECUTING
        approved = len(_approved_statuses())
        assert approved == 5  # executing, succeeded, failed, revision required, reconciliation
        assert history == RuleHistory(approved=approved + 1, rejected=1, expired=1, days=30)
        assert history.decided == approved + 3
        nothing = await store.standing().rule_history("billing-agent", "no-such-rule", now=now)
        assert nothing == RuleHistory(approved=0, rejected=0, expired=0, days=30)

    async def test_rule_history_reads_the_latest_proposals_in_its_window_only(
        self, store: Store, now: datetime
    ) -> None:
        await in_status(store, Status.REJECTED, at=now - timedelta(days=6, hours=23))
        await in_status(store, Status.SUCCEEDED, at=now - timedelta(days=3))
        await in_status(store, Status.EXPIRED, at=now - timedelta(days=2))
        await in_status(store, Status.PENDING, at=now - timedelta(days=1))
        standing = store.standing()

        week = await standing.rule_history("billing-agent", "refunds-ask", now=now, days=7)
        latest = await standing.rule_history("billing-agent", "refunds-ask", now=now, most=3)
        three_days = await standing.rule_history("billing-agent", "refunds-ask", now=now, days=3)

        assert week == RuleHistory(approved=1, rejected=1, expired=1, days=7)
        # the latest three: the pending one is read too, and counted in none
        assert latest == RuleHistory(approved=1, rejected=0, expired=1, days=30, capped_at=3)
        assert three_days == RuleHistory(approved=1, rejected=0, expired=1, days=3)
        with pytest.raises(ValueError, match="positive"):
            await standing.rule_history("billing-agent", "refunds-ask", now=now, most=0)

    async def test_rule_history_keeps_the_latest_by_when_made_not_by_when_stored(
        self, store: Store, now: datetime
    ) -> None:
        """The latest by ``created_at``, as the window is: a clock set back stores a call after
        others with an older time. A read walking the proposals in the order they were stored
        would keep the one stored last among the latest three, or stop at it as older than a
        five-day window."""
        await in_status(store, Status.REJECTED, at=now - timedelta(days=1))
        await in_status(store, Status.EXPIRED, at=now - timedelta(days=3))
        await in_status(store, Status.SUCCEEDED, at=now - timedelta(days=2))
        await in_status(store, Status.EXPIRED, at=now - timedelta(days=6))  # stored last
        standing = store.standing()

        latest = await standing.rule_history("billing-agent", "refunds-ask", now=now, most=3)
        five_days = await standing.rule_history("billing-agent", "refunds-ask", now=now, days=5)

        assert latest == RuleHistory(approved=1, rejected=1, expired=1, days=30, capped_at=3)
        assert five_days == RuleHistory(approved=1, rejected=1, expired=1, days=5)
