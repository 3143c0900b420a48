"""The agent API's wire format: the bodies agents send and the documents they read back.

The server (bot/api, bot/escalations) answers with these models and the Python client
(``countersign``) parses its answers into the same ones, so both read one definition (the
server's ``contracts.api`` is this module). The server builds them from stored rows (its
``.of(...)`` constructors live beside its routes); nothing here knows the store.

The status names are the server's store's (``Status`` and ``EscalationStatus`` there);
tests/contracts/test_api.py keeps them in step.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from countersign.wire.base import FieldProblem, Preview
from countersign.wire.escalation import Summary, Trigger, TriggerVerdict
from countersign.wire.outcomes import Outcome

__all__ = [
    "SLACK_USER_ID",
    "DecisionOut",
    "EscalationBody",
    "EscalationOut",
    "EscalationStatus",
    "PolicyOut",
    "ProblemOut",
    "ProposalOut",
    "ProposalStatus",
    "SubmitBody",
]

SLACK_USER_ID = r"^[UW][A-Z0-9]{2,}$"

#: A proposal's status (the lifecycle in the README's state diagram).
ProposalStatus = Literal[
    "pending",
    "denied",
    "rejected",
    "expired",
    "executing",
    "succeeded",
    "needs_reconciliation",
    "revision_required",
    "failed",
    "superseded",
    "cancelled",
]

#: An escalation's status.
EscalationStatus = Literal["open", "taken", "handed_back", "resolved"]


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
    #: show it to people at once rather than with its rule's batch: it only makes the proposal go
    #: out sooner (the rule, its approvers and its expiry stay the same), and it is audited
    urgent: bool = False


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
    #: the rule that decided, never its conditions or thresholds (the server's agent_note);
    #: for a deny, the reason the operators wrote for the agent
    note: str


class DecisionOut(BaseModel):
    by: str | None
    at: datetime | None
    reason: str | None


class ProposalOut(BaseModel):
    id: str
    status: ProposalStatus
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
    shown_after: datetime | None = Field(
        default=None,
        description="When people are shown it at the latest: its rule may hold it to be shown "
        "with others (a batch) until then; sooner when the batch fills up. Nobody decides before "
        "it is shown, so wait until then before polling. None for a proposal that does not ask.",
    )
    shown_at: datetime | None = Field(
        default=None,
        description="When people were first shown it in Slack (its message, or a digest holding "
        "it, was posted); None while nobody has been shown it: its batch has not gone out yet "
        "(see shown_after), or Slack has not taken the post yet. Nobody can have decided a "
        "proposal that asks before then. Older servers leave the field out.",
    )
    backup_after: datetime | None = Field(
        default=None,
        description="When the proposal is also offered to its rule's backup approvers if nobody "
        "has decided by then; None when its rule names none.",
    )
    handed_over: bool = Field(
        default=False,
        description="Whether nobody decided by backup_after, so that the backup approvers may "
        "decide too.",
    )
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


class EscalationBody(BaseModel):
    """``POST /v1/escalations``. The agent's identity comes from its token, never from here."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    conversation_id: str = Field(min_length=1, max_length=200)
    #: Slack user id of the human accountable for this conversation, or else...
    requested_by: str | None = Field(default=None, pattern=SLACK_USER_ID)
    #: ...the customer's reference (one of the two is required)
    customer_ref: str | None = Field(default=None, min_length=1, max_length=200)
    #: the team the conversation belongs to, for routing
    team: str | None = Field(default=None, min_length=1, max_length=100)
    summary: Summary
    trigger: Trigger
    callback_url: str | None = Field(default=None, pattern=r"^https?://[^\s]+$", max_length=2000)


class EscalationOut(BaseModel):
    id: str
    status: EscalationStatus
    #: a person owns the conversation: the agent must stop replying until it is handed back
    handed_off: bool
    final: bool
    conversation_id: str
    agent: str
    requested_by: str | None
    customer_ref: str | None
    team: str | None
    channel: str
    summary: Summary
    trigger: Trigger
    verdict: TriggerVerdict
    owner: str | None
    #: the hand-back note (for the agent) or the resolution note
    note: str | None
    resolved_by: str | None
    resolved_at: datetime | None
    created_at: datetime
    updated_at: datetime
