"""The agent API's escalation bodies: what an agent sends, and the state it reads back."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from bot.api.schemas import SLACK_USER_ID
from contracts.escalation import Summary, Trigger, TriggerVerdict, agent_verdict
from store.escalations import FINAL_ESCALATION, Escalation, EscalationStatus

__all__ = ["EscalationBody", "EscalationOut"]


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

    @classmethod
    def of(cls, escalation: Escalation) -> EscalationOut:
        return cls(
            id=escalation.id,
            status=escalation.status,
            handed_off=escalation.handed_off,
            final=escalation.status in FINAL_ESCALATION,
            conversation_id=escalation.conversation_id,
            agent=escalation.agent,
            requested_by=escalation.requested_by,
            customer_ref=escalation.customer_ref,
            team=escalation.team,
            channel=escalation.channel,
            summary=escalation.summary,
            trigger=escalation.trigger,
            verdict=agent_verdict(escalation.verdict),
            owner=escalation.owner,
            note=escalation.note,
            resolved_by=escalation.resolved_by,
            resolved_at=escalation.resolved_at,
            created_at=escalation.created_at,
            updated_at=escalation.updated_at,
        )
