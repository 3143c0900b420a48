"""The proposal flow as one object: what the app factory builds and the edges call.

Listeners and HTTP handlers decode their input and call in here; business rules come from
``contracts`` and state transitions from ``store``. The verbs live in the stage that owns them,
in the order a proposal goes through them:

- bot/flow/submit.py: ``submit`` (verify, freeze, classify, store; run when automatic)
- bot/flow/decide.py: ``approve``, ``reject``, ``extend``, ``reconcile``, ``retry``, and the
  digests' ``approve_item`` and ``reject_item``
- bot/flow/checks.py: ``decidable``, ``refuse``, ``refusal_for``, ``not_claimed``: the checks
  features share
- bot/flow/sweeps.py: ``expire_due``, ``remind_due``, ``hand_over_due``, ``reclaim_abandoned``
- bot/flow/execution.py: ``execute``
- bot/flow/core.py: ``changed``, ``tell``, ``now``, ``lease_until``, ``operation_context``
"""

from __future__ import annotations

from bot.flow.decide import Deciding

__all__ = ["Service"]


class Service(Deciding):
    """The whole flow (see the module's docstring for where each verb lives)."""
