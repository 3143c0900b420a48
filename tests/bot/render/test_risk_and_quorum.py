"""Rendering risk classes and quorum progress: valid Block Kit, and what each reader must see."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from bot.render import proposal as render
from bot.render.home import proposal_detail_blocks, waiting_blocks
from bot.render.replies import outcome_reply
from contracts.outcomes import Succeeded
from store.proposals import Approval, Proposal, Status
from tests.bot.render.test_proposal import NOW, assert_valid_message, make_proposal


def approved_by(*people: str, binding_hash: str = "b" * 64) -> tuple[Approval, ...]:
    return tuple(
        Approval(approver=person, binding_hash=binding_hash, approved_at=NOW + timedelta(n))
        for n, person in enumerate(people)
    )


def shown(blocks: list[dict[str, Any]]) -> str:
    return json.dumps(blocks, ensure_ascii=False)


@pytest.mark.parametrize(
    ("risk", "label"),
    [
        ("irreversible", ":red_circle: Irreversible (money or external effect)"),
        ("reversible", ":large_orange_circle: Reversible write"),
        ("read", ":white_circle: Read only"),
    ],
)
def test_the_message_shows_the_risk_class_first(risk: str, label: str) -> None:
    # Countersign's verdict (risk, why asked) comes before anything the agent supplied
    message = render.proposal_message(make_proposal(risk=risk), now=NOW)

    assert_valid_message(message)
    assert message["blocks"][0]["text"]["text"].startswith(label + "\n*Why you are asked:*")


def test_one_approver_rules_show_no_progress() -> None:
    message = render.proposal_message(make_proposal(), now=NOW)

    assert "approved" not in shown(message["blocks"])
    assert render.quorum_progress(make_proposal()) is None


def test_a_pending_quorum_shows_who_approved_and_who_may_still() -> None:
    proposal = make_proposal(quorum=3, approvals=approved_by("U0ADA"))

    message = render.proposal_message(proposal, now=NOW)

    assert_valid_message(message)
    text = shown(message["blocks"])
    assert "*1 of 3 approved*: <@U0ADA>" in text
    assert "2 more from finance; not <@U0REQUESTER> or those who already approved" in text
    assert any(b["type"] == "actions" for b in message["blocks"])
    approve = next(
        element
        for block in message["blocks"]
        if block["type"] == "actions"
        for element in block["elements"]
        if element["action_id"] == "approve"
    )
    assert approve["confirm"]["title"]["text"] == "Approve?"  # this click will not execute


def test_the_last_missing_approval_is_confirmed_as_executing() -> None:
    proposal = make_proposal(quorum=2, approvals=approved_by("U0ADA"))

    message = render.proposal_message(proposal, now=NOW)

    approve = [
        element
        for block in message["blocks"]
        if block["type"] == "actions"
        for element in block["elements"]
        if element["action_id"] == "approve"
    ]
    assert approve[0]["confirm"]["title"]["text"] == "Approve and execute?"


def test_approvals_bound_to_other_arguments_are_not_shown_as_counting() -> None:
    stale = approved_by("U0MALLORY", binding_hash="f" * 64)
    proposal = make_proposal(quorum=2, approvals=(*stale, *approved_by("U0ADA")))

    progress = render.quorum_progress(proposal)

    assert progress is not None
    assert "1 of 2 approved*: <@U0ADA>" in progress
    assert "U0MALLORY" not in progress


def test_the_clicker_is_told_how_many_more_are_needed_and_from_whom() -> None:
    proposal = make_proposal(
        quorum=3, approver_roles=("finance", "treasury"), approvals=approved_by("U0ADA")
    )

    assert render.approval_recorded_text(proposal) == (
        ":ballot_box_with_check: Your approval is recorded: 1 of 3. Waiting for 2 more from "
        "finance or treasury."
    )


def _executed(**changes: Any) -> Proposal:
    values: dict[str, Any] = {
        "quorum": 2,
        "approvals": approved_by("U0ADA", "U0GRACE"),
        "decided_by": "U0GRACE",
    }
    return make_proposal(
        status=Status.SUCCEEDED,
        decided_at=NOW,
        outcome=Succeeded(result={"refund_id": "re_1"}),
        slack_channel="C0APPROVALS",
        slack_ts="1.2",
        **{**values, **changes},
    )


def test_after_execution_the_message_and_the_reply_name_every_approver() -> None:
    message = render.proposal_message(_executed(), now=NOW)
    reply = outcome_reply(_executed())

    assert_valid_message(message)
    assert_valid_message(reply)
    assert "Approved by <@U0ADA> and <@U0GRACE> (2 of 2)" in shown(message["blocks"])
    assert "Approved by <@U0ADA> and <@U0GRACE> (2 of 2)" in shown(reply["blocks"])
    assert not any(b["type"] == "actions" for b in message["blocks"])


def test_a_single_approvers_reply_names_them_and_an_automatic_one_names_nobody() -> None:
    single = _executed(quorum=1, approvals=approved_by("U0GRACE"), decided_by="U0GRACE")
    automatic = _executed(quorum=1, approvals=(), decided_by=None)

    assert "Approved by <@U0GRACE>" in shown(outcome_reply(single)["blocks"])
    assert "Approved by" not in shown(outcome_reply(automatic)["blocks"])


def test_the_workspace_lists_show_risk_and_progress() -> None:
    proposal = make_proposal(risk="reversible", quorum=2, approvals=approved_by("U0ADA"))

    listed = shown(waiting_blocks([proposal], now=NOW))
    detail = shown(proposal_detail_blocks(proposal, [], now=NOW))

    assert ":large_orange_circle: Reversible write" in listed
    assert "1 of 2 approved" in listed
    assert ":large_orange_circle: Reversible write" in detail
