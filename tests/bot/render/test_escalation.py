"""Escalation messages are valid Block Kit, label the agent's words, and carry only the id."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from slack_sdk.models.views import View

from bot.render.escalation import escalation_message, escalation_reply, hand_back_modal
from bot.render.home import home_view
from store.escalations import Escalation, EscalationStatus
from tests.bot.render.test_proposal import assert_valid_message, buttons
from tests.store.escalation_conformance import new_escalation

NOW = datetime(2031, 3, 14, 9, 0, tzinfo=UTC)


def stored(**changes: object) -> Escalation:
    new = new_escalation(NOW)
    fields = {
        **new.model_dump(),
        "status": EscalationStatus.OPEN,
        "announced_at": NOW,
        "updated_at": NOW,
        **changes,
    }
    return Escalation.model_validate(fields)


def test_every_state_renders_valid_block_kit_with_its_buttons() -> None:
    expected = {
        EscalationStatus.OPEN: ["escalation_take", "escalation_resolve"],
        EscalationStatus.TAKEN: ["escalation_hand_back", "escalation_resolve"],
        EscalationStatus.HANDED_BACK: ["escalation_take", "escalation_resolve"],
        EscalationStatus.RESOLVED: [],
    }
    extra: dict[EscalationStatus, dict[str, object]] = {
        EscalationStatus.TAKEN: {"owner": "U0OWNER"},
        EscalationStatus.HANDED_BACK: {"note": "back to you"},
        EscalationStatus.RESOLVED: {"resolved_by": "U0OWNER", "resolved_at": NOW},
    }
    for status, actions in expected.items():
        escalation = stored(status=status, **extra.get(status, {}))
        message = escalation_message(escalation, handed_back_by="U0OWNER")
        assert_valid_message(message)
        assert list(buttons(message)) == actions
        assert {b["value"] for b in buttons(message).values()} <= {escalation.id}
        assert_valid_message(escalation_reply(escalation, handed_back_by="U0OWNER"))


def test_the_agents_report_is_labelled_escaped_and_quoted() -> None:
    escalation = stored()
    summary = escalation.summary.model_copy(update={"goal": "<!channel> refund <https://x|me>"})
    shown = json.dumps(escalation_message(escalation.model_copy(update={"summary": summary})))

    assert "The agent's report (unverified)" in shown
    assert "&lt;!channel&gt;" in shown and "<!channel>" not in shown
    assert "Why Countersign escalated it:* 4 turns without progress" in shown


def test_the_hand_back_modal_and_the_home_tab_are_valid_views() -> None:
    modal = hand_back_modal(stored(status=EscalationStatus.TAKEN, owner="U0OWNER"))
    View(**modal).validate_json()
    assert modal["private_metadata"].startswith("esc_")
    owned = [stored(status=EscalationStatus.TAKEN, owner="U1")]
    home = home_view(waiting=[], owned=owned, decisions=[], now=NOW, notice="hello")
    View(**home).validate_json()
    assert len(home["blocks"]) <= 100
