"""Escalations: an agent hands a conversation to people; one person takes it, hands it back
with a note, or resolves it.

- ``flow``: the escalation's states and who may move it
- ``api``, ``schemas``: the agent API for escalations and its wire format
- ``delivery``: Slack posts, updates, replies and agent callbacks of the outbox
- ``listeners``: Take it, Hand back, Resolve

The names below are imported from their module when first asked for, so that importing one
module of this package imports neither the others nor the app they need.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot import exported_from

if TYPE_CHECKING:
    from bot.escalations.api import ESCALATIONS, escalation_routes
    from bot.escalations.delivery import EscalationDeliverer
    from bot.escalations.flow import EscalationService, reannounce_forever
    from bot.escalations.listeners import register_escalation_listeners

__all__ = [
    "ESCALATIONS",
    "EscalationDeliverer",
    "EscalationService",
    "escalation_routes",
    "reannounce_forever",
    "register_escalation_listeners",
]

#: the module of this package that defines each public name
_DEFINED_IN = {
    "ESCALATIONS": "api",
    "EscalationDeliverer": "delivery",
    "EscalationService": "flow",
    "escalation_routes": "api",
    "reannounce_forever": "flow",
    "register_escalation_listeners": "listeners",
}

__getattr__ = exported_from(__name__, _DEFINED_IN)
