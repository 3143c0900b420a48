"""Delegation from Slack: a person lets one agent act for them for a short while.

- ``commands``: ``/countersign delegate`` and ``delegations``, and the tokens they mint
- ``listeners``: the Revoke button

The names below are imported from their module when first asked for, so that importing one
module of this package imports neither the others nor the app they need.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot import exported_from

if TYPE_CHECKING:
    from bot.delegations.commands import (
        DELEGATIONS,
        Delegations,
        DelegationTokenRefused,
        is_delegation_token,
    )
    from bot.delegations.listeners import register_delegation_listeners

__all__ = [
    "DELEGATIONS",
    "DelegationTokenRefused",
    "Delegations",
    "is_delegation_token",
    "register_delegation_listeners",
]

#: the module of this package that defines each public name
_DEFINED_IN = {
    "DELEGATIONS": "commands",
    "DelegationTokenRefused": "commands",
    "Delegations": "commands",
    "is_delegation_token": "commands",
    "register_delegation_listeners": "listeners",
}

__getattr__ = exported_from(__name__, _DEFINED_IN)
