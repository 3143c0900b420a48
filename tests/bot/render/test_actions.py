"""Action ids live in bot/render/actions.py and never change: messages posted last week carry
them."""

from __future__ import annotations

from bot.render import actions

#: Every id as posted so far. A changed value strands the buttons already in Slack: add an id.
POSTED = {
    "APPROVE": "approve",
    "APPROVE_STANDING": "approve_standing",
    "APPROVE_STANDING_VIEW": "approve_standing",
    "DIGEST_APPROVE_ALL": "digest_approve_all",
    "DIGEST_CHOOSE": "digest_choose",
    "DIGEST_CHOOSE_VIEW": "digest_choose_items",
    "DIGEST_DECISION_INPUT": "decision",
    "DIGEST_ITEMS_INPUT": "items",
    "DIGEST_REJECT_ALL": "digest_reject_all",
    "DIGEST_REJECT_VIEW": "digest_reject",
    "DIGEST_REVIEW": "digest_review",
    "DIGEST_REVIEW_PAGE": "digest_review_page",
    "DIGEST_REVIEW_VIEW": "digest_review",
    "DIGEST_SHOW_FULL": "digest_show_full",
    "DURATION_INPUT": "duration",
    "EDIT": "edit",
    "EDIT_FIELD_INPUT": "value",
    "EDIT_VIEW": "edit_proposal",
    "ESCALATION_HAND_BACK": "escalation_hand_back",
    "ESCALATION_HAND_BACK_VIEW": "escalation_hand_back",
    "ESCALATION_RESOLVE": "escalation_resolve",
    "ESCALATION_TAKE": "escalation_take",
    "EXTEND": "extend",
    "NOTE_INPUT": "note",
    "REASON_INPUT": "reason",
    "RECONCILE_FAILED": "reconcile_failed",
    "RECONCILE_RETRY": "reconcile_retry",
    "RECONCILE_SUCCEEDED": "reconcile_succeeded",
    "REJECT": "reject",
    "REJECT_VIEW": "reject_reason",
    "REVIEW_OK": "review_ok",
    "REVIEW_SHOULD_HAVE_ASKED": "review_should_have_asked",
    "REVOKE_DELEGATION": "delegation_revoke",
    "REVOKE_STANDING": "revoke_standing",
    "SHOW_FULL": "show_full",
    "SHOW_FULL_VIEW": "show_full",
    "USES_INPUT": "uses",
}


def test_every_posted_id_keeps_its_value() -> None:
    assert {name: getattr(actions, name) for name in actions.__all__} == POSTED
