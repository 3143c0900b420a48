"""Countersign's own verdict (risk, why asked, expiry, who decided) has a block of its own,
before any text an agent supplied, on every surface: the channel message in every status, the
digest, the Home tab's queue and escalations, /countersign show, the Show full and reject
modals, and the thread replies."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from bot.render.digest import digest_message
from bot.render.edit import EDIT_NOTE, edit_modal
from bot.render.edit_form import edit_form
from bot.render.escalation import escalation_message
from bot.render.full import full_view
from bot.render.home import home_view, proposal_detail_blocks, waiting_blocks
from bot.render.proposal import proposal_message, reject_modal
from bot.render.reminders import reminder_reply
from bot.render.replies import expiry_reply, outcome_reply, rejection_reply
from bot.render.words import RISK_LABELS
from contracts.escalation import TriggerKind, TriggerVerdict
from store.digests import Digest
from store.proposals import Proposal
from tests.bot.render.test_hostile_values import hostile_escalations, hostile_proposals
from tests.bot.render.test_proposal import NOW

#: In every agent-fed field; Countersign's verdict never holds it.
MARK = "AGENTMARK"
RISK = RISK_LABELS["irreversible"]


def proposals() -> list[Proposal]:
    # the policy's note is Countersign's reading of the values: kept out of the agent's fields
    # and so are the approver roles (configured)
    ours = {
        "policy_note": "rule 'big-refunds': Amount 120.00 USD > 100.00 USD",
        "approver_roles": ("finance",),
    }
    return [p.model_copy(update=ours) for p in hostile_proposals(f"x {MARK}")]


def escalations() -> list[Any]:
    # a verdict as judged now: Countersign's words alone (the agent's codes are its signals)
    verdict = TriggerVerdict(
        kind=TriggerKind.REPEATED_FAILURE, note="the same error code 3 times (threshold 3)"
    )
    return [e.model_copy(update={"verdict": verdict}) for e in hostile_escalations(f"x {MARK}")]


def blocks_of(rendered: Any) -> list[dict[str, Any]]:
    return list(rendered["blocks"] if isinstance(rendered, dict) else rendered)


def assert_verdict_first(blocks: list[dict[str, Any]], *verdict: str) -> None:
    """The first block holding every ``verdict`` text holds no agent text, and comes before
    the first block that does."""
    texts = [json.dumps(block, ensure_ascii=False) for block in blocks]
    ours = next(n for n, text in enumerate(texts) if all(v in text for v in verdict))
    agents = next(n for n, text in enumerate(texts) if MARK in text)
    assert MARK not in texts[ours], texts[ours]
    assert ours < agents, (ours, agents, texts[: agents + 1])


@pytest.mark.parametrize("proposal", proposals(), ids=lambda p: f"{p.status.value}-{p.quorum}")
def test_the_channel_message_in_every_status(proposal: Proposal) -> None:
    blocks = blocks_of(proposal_message(proposal, now=NOW))
    assert_verdict_first(blocks, RISK, "*Why you are asked:*")
    if proposal.decided_by is not None and proposal.status.value != "cancelled":
        # who decided is in the verdict too (a withdrawal is the agent's: it says so)
        assert_verdict_first(blocks, RISK, "<@U0APPROVER>")


def test_the_digest() -> None:
    items = tuple(p.model_copy(update={"digest_id": "dg_1"}) for p in proposals()[:3])
    digest = Digest(
        id="dg_1",
        channel="C0REFUNDS",
        ts="1.1",
        operation="payments.refund",
        requested_by="U0REQUESTER",
        created_at=NOW,
        items=items,
    )
    assert_verdict_first(blocks_of(digest_message(digest, now=NOW)), RISK, "*Why you are asked:*")


@pytest.mark.parametrize(
    "surface",
    [
        lambda p: waiting_blocks([p], now=NOW),  # the App Home queue, /countersign list
        lambda p: home_view(waiting=[p], owned=[], decisions=[], now=NOW)["blocks"],
        lambda p: proposal_detail_blocks(p, [], now=NOW),  # /countersign show
        lambda p: full_view(p)["blocks"],  # Show full
    ],
    ids=["queue", "home", "show", "show-full"],
)
def test_the_home_tab_the_queue_show_and_show_full(
    surface: Callable[[Proposal], list[dict[str, Any]]],
) -> None:
    for proposal in proposals()[:3]:
        assert_verdict_first(surface(proposal), RISK)


def test_the_reject_and_edit_modals() -> None:
    blocks = reject_modal(proposals()[0])["blocks"]
    assert_verdict_first(blocks, "Nothing will be executed.")
    form = edit_form({"type": "object", "properties": {"memo": {"type": "string"}}}, {"memo": MARK})
    assert_verdict_first(edit_modal(proposals()[0], form)["blocks"], EDIT_NOTE)


@pytest.mark.parametrize(
    "proposal", [p for p in proposals() if p.outcome is not None], ids=lambda p: p.status.value
)
def test_the_outcome_reply(proposal: Proposal) -> None:
    for quorum in (1, 2):
        reply = outcome_reply(proposal.model_copy(update={"quorum": quorum}))
        assert_verdict_first(blocks_of(reply), f"*{_word(proposal)}*")
    assert_verdict_first(
        blocks_of(outcome_reply(proposal.model_copy(update={"quorum": 2}))), "Approved by"
    )


def _word(proposal: Proposal) -> str:
    return {
        "succeeded": "Succeeded",
        "needs_reconciliation": "Outcome unknown",
        "revision_required": "Revision required",
        "failed": "Failed",
    }[proposal.status.value]


def test_the_other_thread_replies() -> None:
    rejected, expired = proposals()[3], proposals()[4]
    for reply, verdict in (
        (rejection_reply(rejected), "*Rejected* by <@U0APPROVER>"),
        (expiry_reply(expired), "*Expired*"),
        (reminder_reply(proposals()[0], now=NOW, approvers=["U0A"]), "<@U0A> can approve"),
    ):
        blocks = blocks_of(reply)
        texts = json.dumps(blocks, ensure_ascii=False)
        if MARK in texts:
            assert_verdict_first(blocks, verdict)
        else:
            assert verdict in texts


@pytest.mark.parametrize("escalation", escalations(), ids=lambda e: e.status)
def test_the_escalation_message_and_the_owners_home_tab(escalation: Any) -> None:
    assert_verdict_first(blocks_of(escalation_message(escalation)), "Why Countersign escalated")
    home = home_view(waiting=[], owned=[escalation], decisions=[], now=NOW)["blocks"]
    assert_verdict_first(home, "Why Countersign escalated")
