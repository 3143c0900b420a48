"""A proposal its agent withdrew (status cancelled), as each message shows it: in place of the
buttons, that the agent withdrew it and when; nothing was executed."""

from __future__ import annotations

from datetime import timedelta

from bot.render import proposal as render
from bot.render.clicks import already_decided_text, refusal_text, withdrawn_reason
from bot.render.digest import digest_message
from store.proposals import Proposal, Status
from tests.bot.render.test_digest import NOW as DIGEST_NOW
from tests.bot.render.test_digest import button_values, digest, item
from tests.bot.render.test_proposal import (
    NOW,
    all_text,
    assert_valid_message,
    buttons,
    make_proposal,
)


def withdrawn() -> Proposal:
    return make_proposal(
        status=Status.CANCELLED,
        decided_at=NOW,
        slack_channel="C0APPROVALS",
        slack_ts="1700000000.000100",
    )


def test_the_message_says_the_agent_withdrew_it_and_when_without_buttons() -> None:
    message = render.proposal_message(withdrawn(), now=NOW + timedelta(minutes=1))

    assert_valid_message(message)
    assert buttons(message) == {}
    last = message["blocks"][-1]["text"]["text"]
    assert "*Withdrawn by the agent*" in last
    assert "<!date^1714564800^" in last  # when it was withdrawn
    assert "nothing was executed" in last
    assert message["text"].startswith("Withdrawn by the agent: ")
    assert ":hourglass_flowing_sand: Expires" not in all_text(message)


def test_a_click_on_it_is_told_the_agent_withdrew_it() -> None:
    reason = withdrawn_reason(withdrawn())
    late = already_decided_text(withdrawn())

    assert reason == "the agent withdrew this proposal at 2024-05-01 12:00:00 UTC; nothing changed"
    assert "Countersign did not do that: the agent withdrew" in refusal_text(reason)
    assert late.startswith("The agent withdrew this proposal.")
    assert "already decided" not in late


def test_a_withdrawn_item_of_a_digest_shows_so_and_has_no_buttons_of_its_own() -> None:
    items = [item(1, status=Status.CANCELLED, decided_at=DIGEST_NOW), item(2)]

    message = digest_message(digest(items), now=DIGEST_NOW)
    alone = digest_message(digest(items[:1]), now=DIGEST_NOW)

    assert "Withdrawn by the agent. Nothing was executed." in all_text(message)
    assert "1 cancelled, 1 pending" in all_text(message)
    assert set(button_values(message).values()) == {"dg_digest"}
    assert button_values(alone) == {}
