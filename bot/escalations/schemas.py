"""The agent API's escalation bodies as the server builds them: the wire models
(contracts/api.py, shared with the Python client) with a constructor from a stored escalation."""

from __future__ import annotations

from contracts import api
from contracts.api import EscalationBody
from contracts.escalation import agent_verdict
from store.escalations import FINAL_ESCALATION, Escalation

__all__ = ["EscalationBody", "EscalationOut"]


class EscalationOut(api.EscalationOut):
    @classmethod
    def of(cls, escalation: Escalation) -> EscalationOut:
        return cls(
            id=escalation.id,
            status=escalation.status.value,
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
