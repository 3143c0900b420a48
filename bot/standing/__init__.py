"""Standing rules ("Approve, and allow similar for a while") and the review of automatic
approvals after the fact.

- ``rules``: granting standing rules (which calls they approve: bot/flow/standing.py)
- ``admin``: listing and revoking them (``/countersign standing``)
- ``review``: sampling automatic approvals for a person's verdict, and their statistics
- ``deciding``: what those two share, the checks of the person deciding
- ``listeners``: the Slack listeners of these buttons and modals

The names below are imported from their module when first asked for, so that importing one
module of this package imports neither the others nor the app they need.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot import exported_from

if TYPE_CHECKING:
    from bot.standing.admin import StandingAdmin
    from bot.standing.listeners import register_standing_listeners
    from bot.standing.review import Reviews, review_stats_command
    from bot.standing.rules import StandingGrants

__all__ = [
    "Reviews",
    "StandingAdmin",
    "StandingGrants",
    "register_standing_listeners",
    "review_stats_command",
]

#: the module of this package that defines each public name
_DEFINED_IN = {
    "Reviews": "review",
    "StandingAdmin": "admin",
    "StandingGrants": "rules",
    "register_standing_listeners": "listeners",
    "review_stats_command": "review",
}

__getattr__ = exported_from(__name__, _DEFINED_IN)
