"""The proposal flow as one object: what the app factory builds and the edges call.

Listeners and HTTP handlers decode their input and call in here; business rules come from
``contracts`` and state transitions from ``store``. The service is the core the stages share
(bot/flow/core.py: the collaborators, the clock, ``changed``, ``tell``, ``now``, ``lease_until``,
``operation_context``) with the stages built over it, each a collaborator given the core and
the stages it uses, and nothing else:

- bot/flow/execution.py, ``Execution(core)``: ``execute``
- bot/flow/sweeps.py, ``Sweeps(core)``: ``expire_due``, ``remind_due``, ``hand_over_due``,
  ``reclaim_abandoned``
- bot/flow/checks.py, ``Checks(core, sweeps)``: ``decidable``, ``refuse``, ``refusal_for``,
  ``not_claimed``: the checks features share (a click on an overdue proposal expires it first)
- bot/flow/submit.py, ``Submission(core, execution)``: ``submit`` (verify, freeze, classify,
  store; run when automatic)
- bot/flow/decide.py, ``Decisions(core, checks, execution)``: ``approve``, ``reject``,
  ``extend``, ``reconcile``, ``retry``, and the digests' ``approve_item`` and ``reject_item``

Each stage's verbs are the service's too, bound once here, so the edges call one object.
"""

from __future__ import annotations

from typing import Unpack

from bot.flow.checks import Checks
from bot.flow.core import Collaborators, FlowCore
from bot.flow.decide import Decisions
from bot.flow.execution import Execution
from bot.flow.submit import Submission
from bot.flow.sweeps import Sweeps

__all__ = ["Service"]


class Service(FlowCore):
    """The whole flow: the core and its stages (see the module's docstring)."""

    def __init__(self, **collaborators: Unpack[Collaborators]) -> None:
        super().__init__(**collaborators)
        execution = Execution(self)
        sweeps = Sweeps(self)
        checks = Checks(self, sweeps)
        submission = Submission(self, execution)
        decisions = Decisions(self, checks, execution)
        self.execute = execution.execute
        self.remind_due = sweeps.remind_due
        self.hand_over_due = sweeps.hand_over_due
        self.expire_due = sweeps.expire_due
        self.reclaim_abandoned = sweeps.reclaim_abandoned
        self.decidable = checks.decidable
        self.refuse = checks.refuse
        self.audit_refusal = checks.audit_refusal
        self.refusal_for = checks.refusal_for
        self.item_refusal = checks.item_refusal
        self.backup_roles = checks.backup_roles
        self.deciding_roles = checks.deciding_roles
        self.not_claimed = checks.not_claimed
        self.submit = submission.submit
        self.frozen_contract = submission.frozen_contract
        self.approve = decisions.approve
        self.begin_reject = decisions.begin_reject
        self.reject = decisions.reject
        self.approve_item = decisions.approve_item
        self.reject_item = decisions.reject_item
        self.extend = decisions.extend
        self.reconcile = decisions.reconcile
        self.retry = decisions.retry
