"""The proposal's life, from the agent's call to the recorded outcome; the edges call in here.

Read it in the order a proposal lives it:

- ``intake``, ``submit``: who asked (``requesters``), the contract parsed and frozen, the policy
  and any standing rule (``standing``) classify it, the store keeps it (``Service.submit``)
- ``checks``, ``decide``, ``clicks``, ``edits``: who may decide it now (``deciders``: the one
  rule every decision in Slack takes, escalations' and delegations' too; ``lineage``: never its
  editors), Approve (a quorum of them), Reject, Extend (``extensions``), Retry and reconcile,
  each click recorded first and applied in order, and an approver's edit that replaces it
- ``execution``, ``executor``: claimed once, revalidated, run, and its outcome recorded
- ``sweeps``, ``reminders``, ``timing``: what time does: reminders, hand-overs to backup
  approvers, expiry, and abandoned executions handed to a person to reconcile
- ``core`` and ``service``: what the stages share, and the whole that the app factory builds:
  the core with each stage built over it, given the stages it uses
- ``ports``, ``subscribers``: what the flow needs from the edges (Slack's publisher and
  directory, the agents' long polls) and who hears of every change
- ``destinations``: which addresses Countersign may send an agent's callbacks to
- ``quorum``: quorums that rest on Slack user groups, checked at startup

Everything here depends on ``contracts``, ``store``, the pure renderers (``bot.render``) and
the settings only, never on an edge (the agent API, Slack, the sandbox, operators' commands,
the bench, monitoring; tests/test_layers.py). The names below are imported from their module
when first asked for, so that importing one module of this package imports neither the others
nor the app they need.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot import exported_from

if TYPE_CHECKING:
    from bot.flow.clicks import RecordedDecisions
    from bot.flow.core import APP_HOME
    from bot.flow.destinations import CallbackGuard, Resolve, system_resolve
    from bot.flow.edits import EditAnswer, EditFlow, EditValues
    from bot.flow.executor import Executor, idempotency_key
    from bot.flow.intake import SubmissionKey, admissible, classified, resolved
    from bot.flow.lineage import editors_of
    from bot.flow.ports import Directory, Publisher, StoreWatch, Waiters
    from bot.flow.quorum import unreachable_quorums
    from bot.flow.reminders import Reminders
    from bot.flow.requesters import (
        Membership,
        RequesterRefused,
        check_requester,
        verified_requester,
    )
    from bot.flow.service import Service
    from bot.flow.standing import offers
    from bot.flow.submit import Submitted, new_proposal_id
    from bot.flow.subscribers import Subscriber, Subscribers

__all__ = [
    "APP_HOME",
    "CallbackGuard",
    "Directory",
    "EditAnswer",
    "EditFlow",
    "EditValues",
    "Executor",
    "Membership",
    "Publisher",
    "RecordedDecisions",
    "Reminders",
    "RequesterRefused",
    "Resolve",
    "Service",
    "StoreWatch",
    "SubmissionKey",
    "Submitted",
    "Subscriber",
    "Subscribers",
    "Waiters",
    "admissible",
    "check_requester",
    "classified",
    "editors_of",
    "idempotency_key",
    "new_proposal_id",
    "offers",
    "resolved",
    "system_resolve",
    "unreachable_quorums",
    "verified_requester",
]

#: the module of this package that defines each public name
_DEFINED_IN = {
    "APP_HOME": "core",
    "CallbackGuard": "destinations",
    "Directory": "ports",
    "EditAnswer": "edits",
    "EditFlow": "edits",
    "EditValues": "edits",
    "Executor": "executor",
    "Membership": "requesters",
    "Publisher": "ports",
    "RecordedDecisions": "clicks",
    "Reminders": "reminders",
    "RequesterRefused": "requesters",
    "Resolve": "destinations",
    "Service": "service",
    "StoreWatch": "ports",
    "SubmissionKey": "intake",
    "Submitted": "submit",
    "Subscriber": "subscribers",
    "Subscribers": "subscribers",
    "Waiters": "ports",
    "admissible": "intake",
    "check_requester": "requesters",
    "classified": "intake",
    "editors_of": "lineage",
    "idempotency_key": "executor",
    "new_proposal_id": "submit",
    "offers": "standing",
    "resolved": "intake",
    "system_resolve": "destinations",
    "unreachable_quorums": "quorum",
    "verified_requester": "requesters",
}

__getattr__ = exported_from(__name__, _DEFINED_IN)
