"""Standing rules and reviews of sampled automatic approvals: records, answers, audit details.

A standing rule (contracts/standing.py) is granted in the same transaction as the approval that
grants it (:meth:`StandingStore.claim_and_grant`), is immutable afterwards except for one
revocation (a compare-and-set, audited), and covers later calls until it expires or has covered
``max_uses`` of them. Its uses are not a counter on the grant: each use *is* the proposal it
approved (``proposals.standing_rule_id``, frozen, never deleted), and the database refuses a
proposal beyond ``max_uses`` when it is inserted, counting under a lock on the grant, so
concurrent calls cannot exceed it and the grant's row never changes. A review is
one person's verdict on one automatic approval that was sampled for review; one per proposal.
:class:`store.standing.verbs.StandingStore` is written once over a backend's connector, on the
backend's database and audit chain; get it from ``Store.standing()``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from pydantic import JsonValue

from contracts.frozen import Frozen
from contracts.standing import Grant
from store.base import StoreError
from store.proposals.lifecycle import Status
from store.proposals.records import NotApprovable, Proposal, TransitionResult
from store.proposals.verdicts import refusal
from store.revocation import NotRevocable, Revoked

__all__ = [
    "AlreadyReviewed",
    "ReviewResult",
    "ReviewStats",
    "Reviewed",
    "RevokeResult",
    "RuleHistory",
    "StandingRule",
    "StandingRuleNotFound",
    "Verdict",
    "approval_detail",
    "grant_detail",
    "grant_refusal",
]

Verdict = Literal["ok", "should_have_asked"]


class StandingRule(Grant):
    """A stored standing rule: the grant, its revocation, and how many calls it approved."""

    id: str  #: "sr_" + 128 random bits
    revoked_by: str | None = None
    revoked_at: datetime | None = None
    uses: int = 0  #: proposals it approved so far

    @property
    def remaining(self) -> int:
        """How many more calls it may approve."""
        return max(0, self.max_uses - self.uses)

    def active(self, now: datetime) -> bool:
        """Unrevoked, unexpired and with uses left: it may still cover a call."""
        return self.revoked_at is None and now < self.expires_at and self.remaining > 0


class ReviewStats(Frozen):
    """Sampled automatic approvals of one policy rule (and standing rule, if any), reviewed."""

    rule_id: str | None
    standing_rule_id: str | None  #: None: approved by the policy table itself
    sampled: int
    reviewed: int
    flagged: int  #: verdicts "should have been asked"

    @property
    def miss_rate(self) -> float | None:
        """Flagged among reviewed; None until something is reviewed."""
        return self.flagged / self.reviewed if self.reviewed else None


@dataclass(frozen=True, slots=True)
class RuleHistory:
    """What people decided, over the last ``days`` days, on the calls of one agent that one
    policy rule asked them about (:meth:`StandingStore.rule_history`)."""

    approved: int  #: a person approved it (it left pending to run; a standing rule's are not)
    rejected: int  #: a person rejected it
    expired: int  #: nobody decided before it expired
    days: int  #: the window: proposals created in the last this many days
    #: the window held more such calls than were read: the counts are of the latest this many
    #: (None: of every one)
    capped_at: int | None = None

    @property
    def decided(self) -> int:
        """Approved, rejected or left to expire."""
        return self.approved + self.rejected + self.expired


# --- answers --------------------------------------------------------------------------------------


#: the answer of a revocation (store/revocation.py)
RevokeResult = Revoked[StandingRule] | NotRevocable[StandingRule]


@dataclass(frozen=True, slots=True)
class Reviewed:
    """Your verdict is recorded."""

    proposal_id: str
    verdict: Verdict
    reviewer: str
    at: datetime


@dataclass(frozen=True, slots=True)
class AlreadyReviewed:
    """Someone gave a verdict first; ``review`` is theirs. Nothing changed."""

    review: Reviewed


ReviewResult = Reviewed | AlreadyReviewed


class StandingRuleNotFound(StoreError):
    """No standing rule has that id."""


def grant_refusal(current: Proposal, now: datetime, binding_hash: str) -> TransitionResult:
    """Why an approval granting a standing rule changed nothing: as any claim's refusal, and a
    proposal needing more than one approval is named as such (a grant comes with one)."""
    answer = refusal(current, now, binding_hash)
    if (
        isinstance(answer, NotApprovable)
        and current.status is Status.PENDING
        and current.quorum != 1
        and current.binding_hash == binding_hash
    ):
        return NotApprovable(
            current,
            f"it needs {current.quorum} approvals; a standing rule is granted with one approval",
        )
    return answer


def approval_detail(actor: str, binding_hash: str) -> dict[str, JsonValue]:
    """The "approved" audit detail of an approval that grants a standing rule: as any approval
    completing a quorum (store/proposals/approvals.py), of one."""
    return {"binding_hash": binding_hash, "approvers": [actor], "quorum": 1}


def grant_detail(standing_rule_id: str, grant: Grant) -> dict[str, JsonValue]:
    """What the audit records of a grant (every backend alike)."""
    return {
        "standing_rule_id": standing_rule_id,
        "operation": grant.operation,
        "agent": grant.agent,
        "rule_id": grant.rule_id,
        "ceiling_field": grant.ceiling_field,
        "ceiling": grant.ceiling,
        "arguments": grant.arguments,
        "varying": list(grant.varying),
        "max_uses": grant.max_uses,
        "expires_at": grant.expires_at.isoformat(),
    }
