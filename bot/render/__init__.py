"""Block Kit, pure: every message, modal and Home tab Countersign shows, as a function of
stored values (and ``now``) alone.

- ``blocks``: Block Kit's building blocks and limits (texts, sections, buttons, modals, inputs,
  messages, clipping), which every renderer is made of
- ``words``: Countersign's words for people, moments and proposals (mentions, times, lengths of
  time, references, risk labels)
- ``proposal``: a proposal's message; ``status``: its status in words; ``replies``: the thread
  replies under it; ``clicks``: what a clicker is told, only to them
- ``digest``, ``edit``, ``escalation``, ``full``, ``home``, ``reminders``, ``standing``,
  ``delegations``: the messages and views of each feature; a digest's are several modules
  (``digest``: its message; ``digest_table``: its items as one table; ``digest_reply``: its thread
  reply; ``digest_clicks``: the modals its buttons open and the clicker's tally;
  ``digest_review``: Review all…)
- ``edit_form``: an operation's request schema as the edit modal's typed inputs, and the
  submitted form read back into a request
- ``actions``: every action id, view callback id and input id the messages and modals carry
  (the listeners register for the same ones)
- ``inert``: an agent's words made inert (no mentions, links or formatting of their own)

The names below are imported from their module when first asked for, so that importing one
module of this package imports neither the others nor the app they need.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot import exported_from

if TYPE_CHECKING:
    from bot.render.blocks import FALLBACK_MAX, REASON_MAX, Message, escape
    from bot.render.delegations import delegation_list_blocks, minted_blocks
    from bot.render.digest_clicks import Tally
    from bot.render.edit import edit_modal
    from bot.render.escalation import HAND_BACK_NOTE_MAX
    from bot.render.full import full_view, full_views
    from bot.render.home import (
        WAITING_SHOWN,
        help_blocks,
        home_view,
        proposal_detail_blocks,
        waiting_blocks,
    )
    from bot.render.inert import inert
    from bot.render.reminders import reminder_reply
    from bot.render.standing import standing_list_blocks

__all__ = [
    "FALLBACK_MAX",
    "HAND_BACK_NOTE_MAX",
    "REASON_MAX",
    "WAITING_SHOWN",
    "Message",
    "Tally",
    "delegation_list_blocks",
    "edit_modal",
    "escape",
    "full_view",
    "full_views",
    "help_blocks",
    "home_view",
    "inert",
    "minted_blocks",
    "proposal_detail_blocks",
    "reminder_reply",
    "standing_list_blocks",
    "waiting_blocks",
]

#: the module of this package that defines each public name
_DEFINED_IN = {
    "FALLBACK_MAX": "blocks",
    "HAND_BACK_NOTE_MAX": "escalation",
    "Message": "blocks",
    "REASON_MAX": "blocks",
    "Tally": "digest_clicks",
    "WAITING_SHOWN": "home",
    "delegation_list_blocks": "delegations",
    "edit_modal": "edit",
    "escape": "blocks",
    "full_view": "full",
    "full_views": "full",
    "help_blocks": "home",
    "home_view": "home",
    "inert": "inert",
    "minted_blocks": "delegations",
    "proposal_detail_blocks": "home",
    "reminder_reply": "reminders",
    "standing_list_blocks": "standing",
    "waiting_blocks": "home",
}

__getattr__ = exported_from(__name__, _DEFINED_IN)
