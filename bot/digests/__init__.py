"""Digests: similar proposals due together, posted as one message and decided together.

- ``decisions``: Approve all, Review all…, Reject all…, Choose… (each item decided as a click on
  it alone)
- ``outbox``: a digest's posts, updates and replies delivered as one
- ``listeners``: the Slack listeners of a digest's buttons and modals

The names below are imported from their module when first asked for, so that importing one
module of this package imports neither the others nor the app they need.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot import exported_from

if TYPE_CHECKING:
    from bot.digests.decisions import DigestService
    from bot.digests.listeners import register_digest_listeners
    from bot.digests.outbox import DigestOutbox, shown_in

__all__ = [
    "DigestOutbox",
    "DigestService",
    "register_digest_listeners",
    "shown_in",
]

#: the module of this package that defines each public name
_DEFINED_IN = {
    "DigestOutbox": "outbox",
    "DigestService": "decisions",
    "register_digest_listeners": "listeners",
    "shown_in": "outbox",
}

__getattr__ = exported_from(__name__, _DEFINED_IN)
