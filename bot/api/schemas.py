"""The agent API's request and response bodies."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from contracts.base import FieldProblem, Preview
from contracts.outcomes import Outcome
from contracts.policy import agent_note
from store.base import Proposal
from store.lifecycle import FINAL, Status

__all__ = ["PolicyOut", "ProblemOut", "ProposalOut", "SubmitBody"]

SLACK_USER_ID = r"^[UW][A-Z0-9]{2,}$"


class SubmitBody(BaseModel):
    """``POST /v1/proposals``. The agent's identity comes from its token, never from here."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    operation: str = Field(min_length=1, max_length=200)
    request: dict[str, JsonValue]
    #: Slack user id of the human accountable for this agent run: one the agent may act for
    #: (its acts_for); with a delegation token, its person (and then it may be left out)
    requested_by: str | None = Field(default=None, pattern=SLACK_USER_ID)
    run_id: str | None = Field(default=None, min_length=1, max_length=200)
    #: the agent's explanation, shown in Slack labelled as the agent's words
    reason: str | None = Field(default=None, max_length=2000)
    callback_url: str | None = Field(default=None, pattern=r"^https?://[^\s]+$", max_length=2000)


class ProblemOut(BaseModel):
    """Every error answer, as ``application/problem+json`` (RFC 9457; built in
    bot/api/problems.py)."""

    model_config = ConfigDict(extra="forbid")

    type: str
    title: str
    status: int = Field(ge=400, le=599)
    detail: str
    #: each field at fault and what was expected; [] when no single field is to blame
    errors: list[FieldProblem]


class PolicyOut(BaseModel):
    decision: Literal["auto", "ask", "deny"]
    rule_id: str | None
    #: the rule that decided, never its conditions or thresholds (contracts.policy.agent_note);
    #: for a deny, the reason the operators wrote for the agent
    note: str

    @classmethod
    def of(cls, proposal: Proposal) -> PolicyOut:
        note = agent_note(
            proposal.decision,
            proposal.rule_id,
            proposal.policy_note,
            standing=proposal.standing_rule_id is not None,
        )
        return cls(decision=proposal.decision, rule_id=proposal.rule_id, note=note)


class DecisionOut(BaseModel):
    by: str | None
    at: datetime | None
    reason: str | None


class ProposalOut(BaseModel):
    id: str
    status: Status
    final: bool
    operation: str
    agent: str
    requested_by: str
    run_id: str | None
    preview: Preview
    arguments: dict[str, JsonValue]
    policy: PolicyOut
    created_at: datetime
    expires_at: datetime | None
    decision: DecisionOut | None
    outcome: Outcome | None
    supersedes: str | None = Field(
        description="For an edit: the id of the proposal it replaced (which is now superseded)."
    )
    edited_by: str | None = Field(
        description="For an edit: the Slack user id of the approver who edited the request."
    )
    superseded_by: str | None = Field(
        description="Once an approver edited this proposal (status superseded): the id of the "
        "edit, a new proposal that was checked and classified again. Follow it for the result."
    )

    @classmethod
    def of(cls, proposal: Proposal) -> ProposalOut:
        decided = proposal.decided_by is not None or proposal.status is Status.EXPIRED
        return cls(
            id=proposal.id,
            status=proposal.status,
            final=proposal.status in FINAL,
            operation=proposal.operation,
            agent=proposal.agent,
            requested_by=proposal.requested_by,
            run_id=proposal.run_id,
            preview=proposal.preview,
            arguments=proposal.arguments,
            policy=PolicyOut.of(proposal),
            created_at=proposal.created_at,
            expires_at=proposal.expires_at,
            decision=DecisionOut(
                by=proposal.decided_by, at=proposal.decided_at, reason=proposal.decision_note
            )
            if decided
            else None,
            outcome=proposal.outcome,
            supersedes=proposal.supersedes,
            edited_by=proposal.edited_by,
            superseded_by=proposal.superseded_by,
        )
