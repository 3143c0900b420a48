"""The reminder before expiry and the Extend button: valid Block Kit, plain about who."""

from __future__ import annotations

from datetime import timedelta

from bot.render import proposal as render
from bot.render.reminders import NOBODY_CAN_APPROVE, reminder_reply
from contracts.base import Preview
from tests.bot.render.test_proposal import (
    INJECTION,
    NOW,
    PROPOSAL_ID,
    all_text,
    assert_valid_message,
    buttons,
    make_proposal,
    mrkdwn_texts,
)

EXPIRES = NOW + timedelta(minutes=12)


def test_reminder_says_when_it_expires_and_mentions_who_can_approve() -> None:
    message = reminder_reply(
        make_proposal(expires_at=EXPIRES), now=NOW, approvers=["U0ANA", "U0BO"]
    )

    assert_valid_message(message)
    [first, *_] = mrkdwn_texts(message)
    assert first.startswith(":alarm_clock: This expires in 12 minutes (<!date^")
    assert first.endswith("<@U0ANA> <@U0BO> can approve.")
    assert "<@U0ANA> <@U0BO> can approve." in message["text"]  # the notification mentions too
    assert "U0REQUESTER" not in all_text(message)


def test_user_groups_are_mentioned_as_groups() -> None:
    message = reminder_reply(make_proposal(expires_at=EXPIRES), now=NOW, approvers=["S0FINANCE"])

    assert "<!subteam^S0FINANCE> can approve." in mrkdwn_texts(message)[0]


def test_when_nobody_can_approve_the_reminder_says_so_plainly() -> None:
    message = reminder_reply(make_proposal(expires_at=EXPIRES), now=NOW, approvers=[])

    assert_valid_message(message)
    assert NOBODY_CAN_APPROVE in mrkdwn_texts(message)[0]
    assert "<@" not in all_text(message)


def test_reminder_says_how_to_extend_only_when_it_can_be_extended() -> None:
    proposal = make_proposal(expires_at=EXPIRES)

    can = reminder_reply(proposal, now=NOW, approvers=["U0ANA"], extend_by=timedelta(minutes=30))
    cannot = reminder_reply(proposal, now=NOW, approvers=["U0ANA"])

    assert "extend it once, by 30 minutes" in all_text(can)
    assert "extend" not in all_text(cannot)


def test_agent_text_in_the_reminder_cannot_mention_anyone() -> None:
    proposal = make_proposal(expires_at=EXPIRES, preview=Preview(title=INJECTION))

    message = reminder_reply(proposal, now=NOW, approvers=["not a user id"])

    assert "<!channel>" not in all_text(message) and "<@U0BOSS>" not in all_text(message)
    assert "`not a user id` can approve." in mrkdwn_texts(message)[0]


# --- the Extend button -------------------------------------------------------------------------


def test_extend_button_appears_when_the_rule_allows_it_carrying_only_the_id() -> None:
    message = render.proposal_message(make_proposal(), now=NOW, extend_by=timedelta(minutes=30))

    assert_valid_message(message)
    found = buttons(message)
    assert {"approve", "reject", "extend"} <= set(found)
    assert found["extend"]["value"] == PROPOSAL_ID
    assert found["extend"]["text"]["text"] == "Extend by 30 minutes"


def test_no_extend_button_without_extend_by_or_once_extended() -> None:
    extended = make_proposal(extended_by="U0ANA", extended_at=NOW)

    plain = render.proposal_message(make_proposal(), now=NOW)
    again = render.proposal_message(extended, now=NOW, extend_by=timedelta(minutes=30))

    assert {"approve", "reject"} <= set(buttons(plain))
    assert "extend" not in buttons(plain) and "extend" not in buttons(again)


def test_an_extended_proposal_shows_who_extended_it_next_to_its_expiry() -> None:
    message = render.proposal_message(make_proposal(extended_by="U0ANA", extended_at=NOW), now=NOW)

    [expiry] = [text for text in mrkdwn_texts(message) if "Expires" in text]
    assert "(in 65 minutes) · extended by <@U0ANA>" in expiry
