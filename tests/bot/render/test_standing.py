"""Block Kit for standing rules and reviews: valid for Slack, ids only in button values, the
agent's and arguments' text escaped."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from slack_sdk.models.views import View

from bot.render import proposal as render
from bot.render import standing as render_standing
from contracts.operations.refund import InMemoryLedger, Refund
from contracts.outcomes import Succeeded
from contracts.standing import StandingPolicy, duration_choices, uses_choices
from store.proposals import Status
from store.standing import Reviewed, RuleHistory, StandingRule
from tests.bot.render.test_proposal import INJECTION, NOW, assert_valid_message, make_proposal

STANDING = StandingPolicy(max=timedelta(days=7), admins=("finance-admins",), ceiling="amount_cents")


def rule(**changes: Any) -> StandingRule:
    values: dict[str, Any] = {
        "id": "sr_0123456789abcdef0123456789abcdef",
        "operation": "payments.refund",
        "agent": "billing-bot",
        "rule_id": "big-refunds",
        "ceiling_field": "amount_cents",
        "ceiling": 12000,
        "created_by": "U0ADMIN",
        "created_from": "cs_first",
        "created_at": NOW,
        "expires_at": NOW + timedelta(hours=4),
        "uses": 3,
        **changes,
    }
    return StandingRule(**values)


def buttons(blocks: list[dict[str, Any]]) -> list[tuple[str, str]]:
    found = []
    for block in blocks:
        elements = block.get("elements", []) if block["type"] == "actions" else []
        accessory = block.get("accessory")
        for element in [*elements, *([accessory] if accessory else [])]:
            found.append((element["action_id"], element["value"]))
    return found


def test_a_pending_proposal_offers_allow_similar_only_when_asked_to() -> None:
    proposal = make_proposal()

    offered = render.proposal_message(proposal, now=NOW, allow_similar=True)
    plain = render.proposal_message(proposal, now=NOW)

    assert_valid_message(offered)
    assert ("approve_standing", proposal.id) in buttons(offered["blocks"])
    assert "approve_standing" not in [action for action, _ in buttons(plain["blocks"])]


def test_the_grant_modal_offers_durations_up_to_the_max_and_shows_the_ceiling() -> None:
    proposal = make_proposal(
        agent=INJECTION,
        arguments={"payment_id": "pay_123", "amount_cents": 12000, "currency": "USD"},
    )
    formats = Refund(InMemoryLedger()).field_formats()

    modal = render_standing.standing_modal(
        proposal, STANDING, duration_choices(STANDING.max), formats=formats
    )

    View(**modal).validate_json()
    assert modal["private_metadata"] == proposal.id
    select = modal["blocks"][1]["element"]
    assert [o["value"] for o in select["options"]] == ["1h", "4h", "8h", "1d", "3d", "7d"]
    assert [o["text"]["text"] for o in select["options"]] == [
        "1 hour", "4 hours", "8 hours", "1 day", "3 days", "7 days",
    ]  # fmt: skip
    text = json.dumps(modal["blocks"][0])
    assert "*Amount* up to `120.00 USD`" in text  # in the operation's terms
    assert "12000" not in text and "amount_cents" not in text
    assert "<!channel>" not in text  # the agent's name is escaped


def test_the_grant_modal_offers_uses_up_to_the_rules_max_uses_and_says_what_is_bound() -> None:
    standing = STANDING.model_copy(update={"max_uses": 25, "vary": ("note",)})
    proposal = make_proposal()

    modal = render_standing.standing_modal(
        proposal, standing, duration_choices(standing.max), uses_choices(standing.max_uses)
    )

    View(**modal).validate_json()
    select = modal["blocks"][2]["element"]
    assert [o["value"] for o in select["options"]] == ["1", "3", "5", "10", "25"]
    assert select["initial_option"]["value"] == "25"
    text = json.dumps(modal["blocks"][0])
    assert "at most 25 calls" in text
    assert "everything else as approved here (only *Note* may differ)" in text


def history(approved: int, rejected: int, expired: int, **changes: Any) -> RuleHistory:
    return RuleHistory(approved=approved, rejected=rejected, expired=expired, days=30, **changes)


def modal_history(proposal: Any, decided: RuleHistory | None) -> str | None:
    """The modal's history sentence, if it has one (the modal validated first)."""
    modal = render_standing.standing_modal(
        proposal, STANDING, duration_choices(STANDING.max), history=decided
    )
    View(**modal).validate_json()
    found = [b["text"]["text"] for b in modal["blocks"] if b.get("block_id") == "history"]
    assert len(found) <= 1
    return found[0] if found else None


def test_the_grant_modal_says_what_people_decided_on_such_requests_lately() -> None:
    text = modal_history(make_proposal(), history(784, 2, 1))

    assert text == (
        "In the last 30 days people approved 784 such requests from billing-bot under this rule,"
        " rejected 2 and let 1 expire: about 1 in 260 was not approved."
    )


@pytest.mark.parametrize(
    ("decided", "expected"),
    [
        (
            history(1, 1, 0),
            "people approved 1 such request from billing-bot under this rule, rejected 1 and let"
            " none expire: 1 in 2 was not approved.",
        ),
        (
            history(12_345, 0, 0),
            "people approved 12,345 such requests from billing-bot under this rule, rejected"
            " none and let none expire.",
        ),
        (
            history(4_000, 3, 1_000),
            "people approved 4,000 such requests from billing-bot under this rule, rejected 3 and"
            " let 1,000 expire: about 1 in 5 was not approved.",
        ),
        (
            history(3_998, 3, 0),
            "rejected 3 and let none expire: about 1 in 1,300 was not approved.",
        ),
        (history(297, 3, 0), "rejected 3 and let none expire: 1 in 100 was not approved"),
        (
            history(0, 2, 1),
            "people approved no such request from billing-bot under this rule, rejected 2 and let"
            " 1 expire: 3 of 3 were not approved.",
        ),
        (
            history(0, 0, 1),
            "rejected none and let 1 expire: 1 of 1 was not approved.",
        ),
        (
            history(7, 0, 2, capped_at=5_000),
            "In the last 30 days (the latest 5,000 such requests) people approved 7 such"
            " requests from billing-bot under this rule, rejected none and let 2 expire: about"
            " 1 in 5 was not approved.",
        ),
    ],
)
def test_the_history_counts_read_as_people_say_them(decided: RuleHistory, expected: str) -> None:
    text = modal_history(make_proposal(), decided)

    assert text is not None and expected in text


def test_the_grant_modal_says_when_nothing_was_decided_and_nothing_when_not_known() -> None:
    none = modal_history(make_proposal(), history(0, 0, 0))
    unknown = modal_history(make_proposal(), None)

    assert none == (
        "No such request from billing-bot was decided under this rule in the last 30 days."
    )
    assert unknown is None


def test_the_agents_name_in_the_history_is_inert() -> None:
    for decided in (history(5, 1, 0), history(0, 0, 0)):
        text = modal_history(make_proposal(agent=INJECTION), decided)

        assert text is not None
        assert "<!channel>" not in text and "<@U0BOSS>" not in text and "<https" not in text
        assert "&lt;!channel&gt;" in text  # shown as written, not as a mention


def test_the_granter_and_the_list_see_the_remaining_uses() -> None:
    spent = rule(max_uses=4, uses=3, varying=("amount_cents",), arguments={"payment_id": "p"})

    listed = json.dumps(render_standing.standing_list_blocks([spent], now=NOW))
    granted = render_standing.granted_text(spent.id, spent)

    assert "3 calls approved so far, 1 of 4 uses remaining" in listed
    assert "everything else as approved here" in listed
    assert "at most 4 calls" in granted
    assert spent.id not in granted  # the rule's id is for the audit log and Revoke


def test_the_standing_list_has_a_revoke_button_carrying_the_rule_id_only() -> None:
    listed = render_standing.standing_list_blocks([rule(), rule(id="sr_other")], now=NOW)

    assert_valid_message({"text": "listed", "blocks": listed})
    assert buttons(listed) == [
        ("revoke_standing", "sr_0123456789abcdef0123456789abcdef"),
        ("revoke_standing", "sr_other"),
    ]
    assert "3 calls approved so far" in json.dumps(listed)
    assert render_standing.standing_list_blocks([], now=NOW)[0]["text"]["text"] == (
        "No standing rules are active."
    )


def test_a_review_post_asks_for_a_verdict_then_shows_it() -> None:
    proposal = make_proposal(
        status=Status.SUCCEEDED,
        decision="auto",
        channel=None,
        standing_rule_id="sr_0123",
        policy_note=f"standing rule sr_0123 {INJECTION}",
        outcome=Succeeded(result={"refund_id": "re_1"}),
        review_sampled=True,
    )

    asking = render_standing.review_message(proposal)
    judged = render_standing.review_message(
        proposal, Reviewed(proposal.id, "should_have_asked", "U0REVIEWER", NOW)
    )

    for message in (asking, judged):
        assert_valid_message(message)
        text = json.dumps(message["blocks"])
        assert "sr_0123" in text and "Succeeded" in text
        assert "<!channel>" not in text
    assert buttons(asking["blocks"]) == [
        ("review_ok", proposal.id),
        ("review_should_have_asked", proposal.id),
    ]
    assert buttons(judged["blocks"]) == []
    assert "Should have been asked" in json.dumps(judged["blocks"])
    assert "U0REVIEWER" in json.dumps(judged["blocks"])


SR = "sr_0123456789abcdef0123456789abcdef"
STANDING_NOTE = (
    f"standing rule {SR}, granted by U0ADA until 2024-05-01T16:09:26+00:00 under rule 'refunds': "
    "Amount 300.00 USD ≤ 500.00 USD limit, the other arguments as approved; use 1 of 5"
)


def test_a_call_a_standing_rule_approved_mentions_the_granter_and_reads_its_end_as_a_date() -> None:
    proposal = make_proposal(
        status=Status.SUCCEEDED,
        decision="auto",
        rule_id="refunds",
        channel=None,
        standing_rule_id=SR,
        policy_note=STANDING_NOTE,
        outcome=Succeeded(result={"refund_id": "re_1"}),
    )

    text = json.dumps(render_standing.review_message(proposal)["blocks"], ensure_ascii=False)

    assert SR not in text
    assert (
        "a standing rule granted by <@U0ADA> until "
        "<!date^1714579766^{date_short_pretty} at {time}|2024-05-01 16:09 UTC>: "
        "Amount 300.00 USD ≤ 500.00 USD limit, the other arguments as approved; use 1 of 5 "
        "(rule *refunds*)"
    ) in text
    assert "2024-05-01T16:09:26" not in text


@pytest.mark.parametrize(
    "note",
    [
        STANDING_NOTE.replace("U0ADA", "<!channel>"),  # not a user id: nothing is mentioned
        STANDING_NOTE.replace(SR, "sr_ffff"),  # another standing rule than the proposal's
    ],
)
def test_a_note_that_is_not_the_proposals_standing_rule_stays_inert(note: str) -> None:
    proposal = make_proposal(
        decision="auto", rule_id="refunds", standing_rule_id=SR, policy_note=note
    )

    text = json.dumps(render_standing.review_message(proposal)["blocks"], ensure_ascii=False)

    assert "<@U0ADA>" not in text and "<!channel>" not in text and "<!date^1714579766" not in text


def test_an_asked_calls_note_says_which_standing_rule_did_not_cover_it_without_ids() -> None:
    """The note of a call asked because its granter could not decide it names the standing
    rule and the granter by id, for the audit log; the approver reads neither."""
    note = (
        "rule 'refunds': Amount 600.00 USD > 500.00 USD limit; "
        f"standing rule {SR}, granted by U0ADA, does not cover it: the granter's account is "
        "deactivated, so they could not decide it"
    )
    proposal = make_proposal(decision="ask", rule_id="refunds", policy_note=note)

    text = json.dumps(render.proposal_message(proposal, now=NOW)["blocks"], ensure_ascii=False)

    assert SR not in text and "U0ADA" not in text
    assert (
        "Amount 600.00 USD &gt; 500.00 USD limit; a standing rule does not cover it: the "
        "granter's account is deactivated, so they could not decide it (rule *refunds*)"
    ) in text
