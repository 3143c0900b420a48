"""The proposal's life, from the agent's call to the recorded outcome; the edges call in here.

- ``requesters``: who an agent may name as the person who asked (verified, never asserted)
- ``destinations``: where Countersign may send an agent's callbacks
- ``lineage``: everyone who edited a proposal or a version it replaced (none of them may decide it)

Everything here depends on ``contracts`` and ``store`` only, never on an edge (the agent API,
Slack, the sandbox, operators' commands, the bench). The names below are imported from their
module when first asked for, so that importing one module of this package imports neither the
others nor the app they need.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot import exported_from

if TYPE_CHECKING:
    from bot.flow.destinations import (
        CallbackGuard,
        DestinationRefused,
        Resolve,
        parse_prefix,
        system_resolve,
    )
    from bot.flow.requesters import (
        Membership,
        RequesterRefused,
        check_requester,
        verified_requester,
    )

__all__ = [
    "CallbackGuard",
    "DestinationRefused",
    "Membership",
    "RequesterRefused",
    "Resolve",
    "check_requester",
    "parse_prefix",
    "system_resolve",
    "verified_requester",
]

#: the module of this package that defines each public name
_DEFINED_IN = {
    "CallbackGuard": "destinations",
    "DestinationRefused": "destinations",
    "Membership": "requesters",
    "RequesterRefused": "requesters",
    "Resolve": "destinations",
    "check_requester": "requesters",
    "parse_prefix": "destinations",
    "system_resolve": "destinations",
    "verified_requester": "requesters",
}

__getattr__ = exported_from(__name__, _DEFINED_IN)
