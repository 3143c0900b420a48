"""What the store keeps of standing rules and reviews: the StandingStore protocol every backend
gives through ``Store.standing()`` (written once, store/standing/verbs.py)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Protocol

from pydantic import JsonValue

from contracts.standing import Grant
from store.base import TransitionResult
from store.standing.records import (
    Reviewed,
    ReviewResult,
    ReviewStats,
    RevokeResult,
    StandingRule,
    Verdict,
)

__all__ = ["StandingStore"]


class StandingStore(Protocol):
    async def claim_and_grant(
        self,
        proposal_id: str,
        *,
        actor: str,
        now: datetime,
        binding_hash: str,
        lease_until: datetime,
        grant: Grant,
        standing_rule_id: str,
    ) -> TransitionResult:
        """One transaction: the approval (pending -> executing, as claim_for_execution, for a
        proposal needing one approval) and the standing rule ``grant`` describes, audited as
        "approved" and "standing_rule_granted". Nothing is granted unless the claim succeeds."""
        ...

    async def get_standing_rule(self, standing_rule_id: str) -> StandingRule:
        """Raises StandingRuleNotFound."""
        ...

    async def find_covering(
        self,
        *,
        operation: str,
        agent: str,
        rule_id: str,
        value: int | float,
        arguments: Mapping[str, JsonValue],
        requested_by: str,
        now: datetime,
    ) -> list[StandingRule]:
        """Active standing rules for this operation, agent and policy rule whose ceiling is at
        least ``value``, which bind exactly the call's ``arguments`` but those they let vary,
        whose granter is not ``requested_by`` and which have uses left, latest expiry first.
        (:func:`contracts.standing.covers` checks it all again, and so does the database, with
        the uses, when the covered proposal is created.)"""
        ...

    async def active_standing_rules(self, *, now: datetime, limit: int = 50) -> list[StandingRule]:
        """Unrevoked, unexpired standing rules (used up or not), soonest expiry first."""
        ...

    async def revoke_standing_rule(
        self, standing_rule_id: str, *, actor: str, now: datetime
    ) -> RevokeResult:
        """Active -> revoked, once, audited as "standing_rule_revoked" on the proposal that
        granted it. Raises StandingRuleNotFound."""
        ...

    async def record_review(
        self, proposal_id: str, *, reviewer: str, verdict: Verdict, now: datetime
    ) -> ReviewResult:
        """The verdict on a sampled automatic approval, once per proposal, audited as
        "reviewed". Raises ProposalNotFound, or ValueError when it was not sampled."""
        ...

    async def get_review(self, proposal_id: str) -> Reviewed | None: ...

    async def review_stats(self) -> list[ReviewStats]:
        """Per policy rule and standing rule: sampled, reviewed and flagged counts."""
        ...
