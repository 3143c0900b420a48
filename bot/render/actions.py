"""Every Slack action id, view callback id and modal input id Countersign uses, in one place.

Render modules put them on buttons, modals and inputs; the listeners (bot/slack/listeners.py and
each feature's) register for them and read the submitted values under them. The strings are part
of every message already posted: a button clicked next week carries the id it was posted with, so
a value here never changes (add a new one instead).
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "APPROVE",
    "APPROVE_STANDING",
    "APPROVE_STANDING_VIEW",
    "DIGEST_APPROVE_ALL",
    "DIGEST_CHOOSE",
    "DIGEST_CHOOSE_VIEW",
    "DIGEST_DECISION_INPUT",
    "DIGEST_ITEMS_INPUT",
    "DIGEST_REJECT_ALL",
    "DIGEST_REJECT_VIEW",
    "DIGEST_REVIEW",
    "DIGEST_REVIEW_PAGE",
    "DIGEST_REVIEW_VIEW",
    "DIGEST_SHOW_FULL",
    "DURATION_INPUT",
    "EDIT",
    "EDIT_FIELD_INPUT",
    "EDIT_VIEW",
    "ESCALATION_HAND_BACK",
    "ESCALATION_HAND_BACK_VIEW",
    "ESCALATION_RESOLVE",
    "ESCALATION_TAKE",
    "EXTEND",
    "NOTE_INPUT",
    "REASON_INPUT",
    "RECONCILE_FAILED",
    "RECONCILE_RETRY",
    "RECONCILE_SUCCEEDED",
    "REJECT",
    "REJECT_VIEW",
    "REVIEW_OK",
    "REVIEW_SHOULD_HAVE_ASKED",
    "REVOKE_DELEGATION",
    "REVOKE_STANDING",
    "SHOW_FULL",
    "SHOW_FULL_VIEW",
    "USES_INPUT",
]

# --- buttons on a proposal's message and its App Home card (value: the proposal id) ---------

APPROVE: Final = "approve"
#: opens the reason modal (:data:`REJECT_VIEW`)
REJECT: Final = "reject"
#: the one extension a rule may allow
EXTEND: Final = "extend"
#: opens the edit modal (:data:`EDIT_VIEW`)
EDIT: Final = "edit"
#: "Approve + allow similar…": opens :data:`APPROVE_STANDING_VIEW`
APPROVE_STANDING: Final = "approve_standing"
#: a person records what really happened to an uncertain execution, or tries it again
RECONCILE_SUCCEEDED: Final = "reconcile_succeeded"
RECONCILE_FAILED: Final = "reconcile_failed"
RECONCILE_RETRY: Final = "reconcile_retry"
#: opens every frozen argument in full, read-only (:data:`SHOW_FULL_VIEW`)
SHOW_FULL: Final = "show_full"

# --- digests (value: the digest id) ---------------------------------------------------------

DIGEST_APPROVE_ALL: Final = "digest_approve_all"
DIGEST_REJECT_ALL: Final = "digest_reject_all"
DIGEST_CHOOSE: Final = "digest_choose"
#: every item of a digest in full, in a read-only modal (bot/slack/show_full.py)
DIGEST_SHOW_FULL: Final = "digest_show_full"
#: "Review all…": every pending item in full, selected, approved with one submit
#: (:data:`DIGEST_REVIEW_VIEW`)
DIGEST_REVIEW: Final = "digest_review"
#: Next and Previous in that modal (value: the page to show, from 1)
DIGEST_REVIEW_PAGE: Final = "digest_review_page"

# --- escalations (value: the escalation id) -------------------------------------------------

ESCALATION_TAKE: Final = "escalation_take"
#: opens :data:`ESCALATION_HAND_BACK_VIEW`
ESCALATION_HAND_BACK: Final = "escalation_hand_back"
ESCALATION_RESOLVE: Final = "escalation_resolve"

# --- standing rules, reviews and delegations ------------------------------------------------

#: the Revoke button in ``/countersign standing`` (value: the standing rule id)
REVOKE_STANDING: Final = "revoke_standing"
#: the verdict buttons of a review post (value: the proposal id)
REVIEW_OK: Final = "review_ok"
REVIEW_SHOULD_HAVE_ASKED: Final = "review_should_have_asked"
#: a delegation's Revoke button (value: the delegation id)
REVOKE_DELEGATION: Final = "delegation_revoke"

# --- modals: callback ids (Slack keeps them apart from action ids) --------------------------

REJECT_VIEW: Final = "reject_reason"
EDIT_VIEW: Final = "edit_proposal"
APPROVE_STANDING_VIEW: Final = "approve_standing"
SHOW_FULL_VIEW: Final = "show_full"
DIGEST_REJECT_VIEW: Final = "digest_reject"
DIGEST_CHOOSE_VIEW: Final = "digest_choose_items"
DIGEST_REVIEW_VIEW: Final = "digest_review"
ESCALATION_HAND_BACK_VIEW: Final = "escalation_hand_back"

# --- modals: input ids (each input's block id and action id) --------------------------------

#: the reason for a rejection (the reject modal, a digest's reject and choose modals)
REASON_INPUT: Final = "reason"
#: the note handed back with an escalation
NOTE_INPUT: Final = "note"
#: how long a standing rule lasts, and how many calls it covers
DURATION_INPUT: Final = "duration"
USES_INPUT: Final = "uses"
#: which items of a digest, and whether to approve or reject them
DIGEST_ITEMS_INPUT: Final = "items"
DIGEST_DECISION_INPUT: Final = "decision"
#: the action id of every field of the edit form (its block id tells the fields apart)
EDIT_FIELD_INPUT: Final = "value"
