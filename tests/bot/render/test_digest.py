"""Rendering digests: within Block Kit's limits, validated by slack_sdk's own models; agent text
escaped and labelled; buttons carrying the digest id only (pure: test_render_purity.py)."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

from slack_sdk.models.views import View

from bot.render.actions import (
    DIGEST_APPROVE_ALL,
    DIGEST_CHOOSE,
    DIGEST_CHOOSE_VIEW,
    DIGEST_REJECT_ALL,
    DIGEST_REJECT_VIEW,
    DIGEST_REVIEW,
    DIGEST_SHOW_FULL,
)
from bot.render.digest import digest_message
from bot.render.digest_clicks import Tally, choose_modal, reject_modal, tally_text
from bot.render.digest_reply import digest_reply
from contracts.base import Preview, PreviewField
from contracts.outcomes import NeedsReconciliation, RevisionRequired, Succeeded, TerminalFailure
from store.digests import Digest
from store.proposals import Proposal, Status
from tests.bot.render.test_proposal import all_text, assert_valid_message

NOW = datetime(2031, 3, 14, 15, 0, tzinfo=UTC)


def item(n: int, **changes: Any) -> Proposal:
    fields: dict[str, Any] = {
        "id": f"cs_item{n:04d}" + "x" * 20,
        "agent": "support-bot",
        "submission_key": f"key-{n}",
        "submission_fingerprint": "fp",
        "requested_by": "U0REQUESTER",
        "operation": "payments.refund",
        "request": {},
        "arguments": {"payment_id": f"pay_{n}"},
        "preview": Preview(
            title=f"Refund {n}.00 USD",
            fields=(
                PreviewField(label="Payment", value=f"pay_{n}"),
                PreviewField(label="Customer", value=f"cus_{n}"),
            ),
        ),
        "binding_hash": "h",
        "agent_reason": "Charged twice <!channel> & more",
        "rule_id": "refunds",
        "decision": "ask",
        "policy_note": "rule 'refunds': Amount 120.00 USD ≤ 2,000.00 USD limit",
        "channel": "C0REFUNDS",
        "status": Status.PENDING,
        "created_at": NOW,
        "expires_at": NOW + timedelta(hours=1),
        "updated_at": NOW,
        "slack_channel": "C0REFUNDS",
        "slack_ts": "1700000000.000100",
        "digest_id": "dg_digest",
    }
    fields.update(changes)
    return Proposal(**fields)


def digest(items: list[Proposal]) -> Digest:
    return Digest(
        id="dg_digest",
        channel="C0REFUNDS",
        ts="1700000000.000100",
        operation="payments.refund",
        requested_by="U0REQUESTER",
        created_at=NOW,
        items=tuple(items),
    )


def button_values(message: dict[str, Any]) -> dict[str, str]:
    return {
        element["action_id"]: element["value"]
        for block in message["blocks"]
        if block["type"] == "actions"
        for element in block["elements"]
    }


def test_a_pending_digest_lists_every_item_and_offers_its_buttons_with_its_id_only() -> None:
    message = digest_message(digest([item(n) for n in range(3)]), now=NOW)

    assert_valid_message(message)
    text = all_text(message)
    for n in range(3):
        assert f"*Payment* pay_{n}" in text and f"cs_item{n:04d}" in text
    assert "3 proposals" in text and "payments.refund" not in text
    assert "<@U0REQUESTER>" in text and "of rule *refunds*" in text
    assert "Irreversible" in text  # the operation's risk class, as on a proposal's own message
    assert button_values(message) == dict.fromkeys(
        [DIGEST_APPROVE_ALL, DIGEST_REVIEW, DIGEST_REJECT_ALL, DIGEST_CHOOSE], "dg_digest"
    )


def test_a_digest_is_named_by_its_operations_description_never_its_name() -> None:
    refunds = digest([item(n) for n in range(3)])
    described = digest_message(refunds, now=NOW, what="Refund a settled card payment.")

    assert described["blocks"][0]["text"]["text"] == "3 proposals: Refund a settled card payment"
    assert described["text"] == "Approval needed: 3 proposals: Refund a settled card payment"
    modal = json.dumps(reject_modal(refunds, 3, "Refund a settled card payment."))
    assert "pending proposals of this digest (Refund a settled card payment)" in modal
    assert "payments.refund" not in modal + json.dumps(described)


def test_facts_every_decided_item_shares_read_as_at_preview() -> None:
    """What every item shows alike says "at preview" once none is pending, as each item's own
    message would; while one is pending it reads as the operation gives it."""
    fields = (PreviewField(label="Refundable now", value="5.00 USD"),)
    done = {"status": Status.SUCCEEDED, "decided_by": "U0APPROVER", "outcome": Succeeded()}
    decided = [item(n, preview=Preview(title=f"Refund {n}", fields=fields), **done) for n in (1, 2)]
    pending = [decided[0], item(3, preview=Preview(title="Refund 3", fields=fields))]

    assert "*Refundable at preview*: 5.00 USD" in all_text(digest_message(digest(decided), now=NOW))
    text = all_text(digest_message(digest(pending), now=NOW))
    assert "*Refundable now*: 5.00 USD" in text and "at preview" not in text


def test_the_agents_words_are_labelled_and_escaped() -> None:
    text = all_text(digest_message(digest([item(1)]), now=NOW))

    assert "Agent's words (unverified)" in text
    assert "<!channel>" not in text and "&lt;!channel&gt; &amp; more" in text


def test_each_item_shows_its_own_state_and_decided_digests_have_no_buttons() -> None:
    decided = [
        item(1, status=Status.SUCCEEDED, decided_by="U0APPROVER", outcome=Succeeded(result={})),
        item(2, status=Status.REJECTED, decided_by="U0APPROVER", decision_note="dup <b>"),
        item(3, status=Status.EXPIRED),
        item(4, status=Status.EXECUTING, decided_by="U0APPROVER"),
        item(
            5,
            status=Status.NEEDS_RECONCILIATION,
            decided_by="U0APPROVER",
            outcome=NeedsReconciliation(detail="timeout", correlation_id="c1"),
        ),
    ]
    message = digest_message(digest(decided), now=NOW)

    assert_valid_message(message)
    text = all_text(message)
    assert "Succeeded" in text and "Rejected by <@U0APPROVER>: dup &lt;b&gt;" in text
    assert "Expired" in text and "executing" in text and "Outcome unknown" in text
    assert button_values(message) == {}


def test_fifty_long_items_stay_within_block_kits_limits() -> None:
    long = "x" * 3000
    items = [
        item(n, preview=Preview(title=long, fields=(PreviewField(label=long, value=long),)))
        for n in range(50)
    ]
    message = digest_message(digest(items), now=NOW)

    assert_valid_message(message)
    assert all(len(block["text"]["text"]) <= 3000 for block in message["blocks"] if "text" in block)
    assert all_text(message).count("cs_item") == 50  # every row shown, each clipped
    # clipped: no Approve all, but Review all… still approves, after reading them in full
    assert set(button_values(message)) == {
        DIGEST_REVIEW,
        DIGEST_REJECT_ALL,
        DIGEST_CHOOSE,
        DIGEST_SHOW_FULL,
    }


def test_one_reply_reports_every_kind_of_outcome_and_offers_to_resolve_uncertain_ones() -> None:
    by = {"decided_by": "U0APPROVER"}
    entries = [
        (
            1,
            item(1, status=Status.SUCCEEDED, outcome=Succeeded(result={"id": 1}), **by),
            Status.SUCCEEDED,
        ),
        (2, item(2, status=Status.REJECTED, decision_note="no", **by), Status.REJECTED),
        (3, item(3, status=Status.EXPIRED), Status.EXPIRED),
        (
            4,
            item(4, outcome=TerminalFailure(detail="closed", correlation_id="c4"), **by),
            Status.FAILED,
        ),
        (5, item(5, outcome=RevisionRequired(reason="changed"), **by), Status.REVISION_REQUIRED),
        (
            6,
            item(6, outcome=NeedsReconciliation(detail="timeout", correlation_id="c6"), **by),
            Status.NEEDS_RECONCILIATION,
        ),
    ]
    reply = digest_reply(entries)

    assert reply is not None
    assert_valid_message(reply)
    text = all_text(reply)
    for word in ("Succeeded", "Rejected", "Expired", "Failed", "Revision required", "unknown"):
        assert word in text
    assert button_values(reply) == {
        "reconcile_succeeded": item(6).id,
        "reconcile_failed": item(6).id,
    }
    assert digest_reply([(7, item(7), Status.SUPERSEDED)]) is None


def test_a_reply_names_each_item_by_its_number_and_who_decided_as_its_own_reply_would() -> None:
    """Who decided first, then the item as the digest numbers it; its id only as the one
    reference to quote where a proposal's own reply shows one (an outcome unknown or failed)."""
    done = item(1, status=Status.SUCCEEDED, outcome=Succeeded(result={}), decided_by="U0PRIYA")
    rejected = item(2, status=Status.REJECTED, decision_note="dup", decided_by="U0DANA")
    unsure = item(
        4, outcome=NeedsReconciliation(detail="timeout", correlation_id="c4"), decided_by="U0PRIYA"
    )
    reply = digest_reply(
        [
            (3, done, Status.SUCCEEDED),
            (5, rejected, Status.REJECTED),
            (8, unsure, Status.NEEDS_RECONCILIATION),
        ]
    )

    assert reply is not None
    text = "\n".join(b["text"]["text"] for b in reply["blocks"] if b["type"] == "section")
    succeeded = ":white_check_mark: *Succeeded* · Approved by <@U0PRIYA>.\n*Item 3:* Refund 1.00"
    assert succeeded in text
    assert ":x: *Rejected* by <@U0DANA>. Nothing was executed.\n*Item 5:* Refund 2.00 USD" in text
    assert "*Outcome unknown* · Approved by <@U0PRIYA>." in text
    assert text.count("cs_") == 1 and f"Reference `{unsure.id}`" in text
    labels = [
        element["text"]["text"]
        for block in reply["blocks"]
        if block["type"] == "actions"
        for element in block["elements"]
    ]
    assert labels == ["Item 8: it happened", "Item 8: it did not happen"]


def test_the_choose_modal_offers_ten_items_a_group_and_validates() -> None:
    items = [item(n) for n in range(23)]
    modal = choose_modal(digest(items), items)

    View(**modal).validate_json()
    assert (modal["callback_id"], modal["private_metadata"]) == (DIGEST_CHOOSE_VIEW, "dg_digest")
    groups = [b for b in modal["blocks"] if b.get("block_id", "").startswith("items_")]
    assert [len(g["element"]["options"]) for g in groups] == [10, 10, 3]
    offered = [o["value"] for g in groups for o in g["element"]["options"]]
    assert offered == [p.id for p in items]
    assert all(len(o["text"]["text"]) <= 75 for g in groups for o in g["element"]["options"])


def test_the_reject_all_modal_asks_for_a_reason() -> None:
    modal = reject_modal(digest([item(1), item(2)]), 2)

    View(**modal).validate_json()
    assert (modal["callback_id"], modal["private_metadata"]) == (DIGEST_REJECT_VIEW, "dg_digest")
    [reason] = [b for b in modal["blocks"] if b.get("block_id") == "reason"]
    assert reason["optional"] is False


def test_the_clicker_is_told_the_counts_and_the_reasons() -> None:
    tally = Tally("approved", done=2, counted=1, already=3, refused=Counter({"not yours": 4}))

    text = tally_text(tally)

    assert text.startswith("Approved 2, 1 approval counted, waiting for more approvers, ")
    assert "3 already decided, 4 refused." in text and "4 refused: not yours" in text
    assert (
        json.dumps(tally_text(Tally("rejected"))) == '"Rejected 0, 0 already decided, 0 refused."'
    )
