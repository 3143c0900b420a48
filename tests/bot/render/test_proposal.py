"""Block Kit rendering: valid for Slack, complete, clipped and escaped.

That it is pure is tested for every render module in test_render_purity.py.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import JsonValue
from slack_sdk.models.blocks import Block
from slack_sdk.models.views import View

from bot.render import proposal as render
from bot.render.blocks import CLIPPED, clip, escape
from bot.render.clicks import already_decided_text, refusal_text
from bot.render.replies import expiry_reply, outcome_reply, rejection_reply
from contracts.base import Preview, PreviewField
from contracts.formats import FieldFormat
from contracts.outcomes import (
    NeedsReconciliation,
    Outcome,
    RevisionRequired,
    Succeeded,
    TerminalFailure,
)
from store.proposals import Proposal, Status

NOW = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
PROPOSAL_ID = "cs_2v6qk3bn7xw4yq5fz2m3a6lhpe"
INJECTION = "<!channel> <@U0BOSS> <https://evil.example|click me> & friends"


def make_proposal(**changes: Any) -> Proposal:
    values: dict[str, Any] = {
        "id": PROPOSAL_ID,
        "agent": "billing-bot",
        "submission_key": "key-1",
        "submission_fingerprint": "f" * 64,
        "requested_by": "U0REQUESTER",
        "run_id": "run-42",
        "operation": "payments.refund",
        "request": {"payment_id": "pay_123"},
        "arguments": {"payment_id": "pay_123", "amount_cents": 12000},
        "preview": Preview(
            title="Refund 120.00 USD to customer@example.com",
            fields=(
                PreviewField(label="Payment", value="pay_123"),
                PreviewField(label="Amount", value="120.00 USD"),
                PreviewField(label="Reason", value="requested_by_customer"),
            ),
        ),
        "binding_hash": "b" * 64,
        "agent_reason": "The customer was charged twice.",
        "rule_id": "big-refunds",
        "decision": "ask",
        "policy_note": "rule 'big-refunds': Amount 120.00 USD > 100.00 USD",
        "approver_roles": ("finance",),
        "channel": "C0APPROVALS",
        "status": Status.PENDING,
        "created_at": NOW - timedelta(minutes=5),
        "expires_at": NOW + timedelta(hours=1, minutes=5),
        "updated_at": NOW - timedelta(minutes=5),
    }
    values.update(changes)
    return Proposal(**values)


def decided(status: Status, outcome: Outcome | None = None, **changes: Any) -> Proposal:
    return make_proposal(
        status=status,
        decided_by="U0APPROVER",
        decided_at=NOW,
        outcome=outcome,
        slack_channel="C0APPROVALS",
        slack_ts="1700000000.000100",
        **changes,
    )


OUTCOMES: dict[str, Outcome] = {
    "succeeded": Succeeded(result={"refund_id": "re_789", "amount_cents": 12000}),
    "needs_reconciliation": NeedsReconciliation(
        detail="TimeoutError: no answer from the ledger", correlation_id="cs_x.corr-nr"
    ),
    "revision_required": RevisionRequired(reason="the payment was disputed meanwhile"),
    "terminal_failure": TerminalFailure(
        detail="ledger refused: payment voided", correlation_id="cs_x.corr-tf"
    ),
}
OUTCOME_STATUS = {
    "succeeded": Status.SUCCEEDED,
    "needs_reconciliation": Status.NEEDS_RECONCILIATION,
    "revision_required": Status.REVISION_REQUIRED,
    "terminal_failure": Status.FAILED,
}


def assert_valid_message(message: dict[str, Any]) -> None:
    """What Slack would accept: parsed and validated by slack_sdk's models, nothing lost."""
    assert set(message) == {"text", "blocks"}
    assert isinstance(message["text"], str) and message["text"]
    blocks = message["blocks"]
    assert 1 <= len(blocks) <= 50
    for block in blocks:
        parsed = Block.parse(block)
        assert parsed is not None, f"unknown block {block}"
        parsed.validate_json()
        assert parsed.to_dict() == block, "a key slack_sdk does not know was dropped"
        # limits slack_sdk's models do not check
        for field in block.get("fields", []):
            assert len(field["text"]) <= 2000
        if block["type"] == "context":
            assert all(len(element["text"]) <= 3000 for element in block["elements"])


def all_text(message: dict[str, Any]) -> str:
    return json.dumps(message, ensure_ascii=False)


def mrkdwn_texts(message: dict[str, Any]) -> list[str]:
    texts: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "mrkdwn":
                texts.append(node["text"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(message["blocks"])
    return texts


def buttons(message: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        element["action_id"]: element
        for block in message["blocks"]
        if block["type"] == "actions"
        for element in block["elements"]
    }


# --- the pending message --------------------------------------------------------------------------


def test_pending_message_is_valid_block_kit() -> None:
    assert_valid_message(render.proposal_message(make_proposal(), now=NOW))


def test_pending_message_shows_every_preview_field() -> None:
    proposal = make_proposal()
    fields = mrkdwn_texts(render.proposal_message(proposal, now=NOW))
    for field in proposal.preview.fields:
        assert f"*{field.label}*\n{field.value}" in fields


def test_header_is_the_preview_title_after_the_verdict() -> None:
    message = render.proposal_message(make_proposal(), now=NOW)
    assert message["blocks"][0]["text"]["text"].startswith(":red_circle: Irreversible")
    assert message["blocks"][1] == {
        "type": "header",
        "text": {
            "type": "plain_text",
            "text": "Refund 120.00 USD to customer@example.com",
            "emoji": False,  # the title carries agent values: no emoji from their shortcodes
        },
    }
    assert "Refund 120.00 USD" in message["text"]


def test_buttons_carry_the_proposal_id_and_nothing_else() -> None:
    found = buttons(render.proposal_message(make_proposal(), now=NOW))
    assert set(found) == {"approve", "reject", "edit"}
    assert found["approve"]["value"] == PROPOSAL_ID
    assert found["reject"]["value"] == PROPOSAL_ID
    assert found["edit"]["value"] == PROPOSAL_ID
    assert found["approve"]["style"] == "primary"
    assert found["reject"]["style"] == "danger"


def test_approve_asks_for_confirmation_and_reject_does_not() -> None:
    found = buttons(render.proposal_message(make_proposal(), now=NOW))
    confirm = found["approve"]["confirm"]
    assert confirm["title"]["text"] == "Approve and execute?"
    assert confirm["confirm"]["text"] == "Approve"
    assert confirm["text"]["text"] == "Refund 120.00 USD to customer@example.com"  # no op name
    assert "confirm" not in found["reject"]


def test_message_says_who_asked_and_why_the_policy_asked() -> None:
    texts = "\n".join(mrkdwn_texts(render.proposal_message(make_proposal(), now=NOW)))
    assert "*billing-bot*" in texts
    assert "<@U0REQUESTER>" in texts
    assert "*Why you are asked:* Amount 120.00 USD &gt; 100.00 USD (rule *big-refunds*)" in texts
    assert "payments.refund" not in texts  # the operation's name is in Show full's small print
    assert "Reference `cs_2v6qk3bn7xw4yq5fz2m3a6lhpe`" in texts


def test_agent_display_name_replaces_the_agent_id_when_given() -> None:
    message = render.proposal_message(make_proposal(), now=NOW, agent_display="Billing assistant")
    assert "*Billing assistant*" in "\n".join(mrkdwn_texts(message))


def test_agent_reason_is_labelled_as_the_agents_unverified_words() -> None:
    proposal = make_proposal(agent_reason="Charged twice.\nSee ticket 7.")
    texts = mrkdwn_texts(render.proposal_message(proposal, now=NOW))
    [reason] = [text for text in texts if "Charged twice" in text]
    assert reason.startswith("*Agent's explanation (unverified)*")
    assert reason.endswith("\n>Charged twice.\n>See ticket 7.")


def test_no_explanation_section_without_an_agent_reason() -> None:
    message = render.proposal_message(make_proposal(agent_reason=None), now=NOW)
    assert "Agent's explanation" not in all_text(message)


def test_expiry_is_a_slack_date_token_with_the_time_left() -> None:
    proposal = make_proposal()
    texts = "\n".join(mrkdwn_texts(render.proposal_message(proposal, now=NOW)))
    unix = int((NOW + timedelta(hours=1, minutes=5)).timestamp())
    assert (
        f"<!date^{unix}^{{date_short_pretty}} at {{time}}|2024-05-01 13:05 UTC> (in 65 minutes)"
        in texts
    )
    assert "(in 65 minutes)" in texts


def test_time_left_is_computed_from_the_given_now() -> None:
    later = NOW + timedelta(hours=1)
    texts = "\n".join(mrkdwn_texts(render.proposal_message(make_proposal(), now=later)))
    assert "(in 5 minutes)" in texts
    overdue = NOW + timedelta(hours=2)
    texts = "\n".join(mrkdwn_texts(render.proposal_message(make_proposal(), now=overdue)))
    assert "(55 minutes ago)" in texts


# --- clipping -------------------------------------------------------------------------------------


def test_long_field_values_are_clipped_with_a_visible_note() -> None:
    preview = Preview(title="T", fields=(PreviewField(label="Memo", value="x" * 5000),))
    message = render.proposal_message(make_proposal(preview=preview), now=NOW)
    assert_valid_message(message)
    [memo] = [text for text in mrkdwn_texts(message) if text.startswith("*Memo*")]
    assert len(memo) <= 2000
    assert memo.endswith(CLIPPED)


def test_long_title_is_clipped_in_the_header() -> None:
    preview = Preview(title="Refund " * 60, fields=())
    message = render.proposal_message(make_proposal(preview=preview), now=NOW)
    assert_valid_message(message)
    header = message["blocks"][1]["text"]["text"]
    assert len(header) == 150
    assert header.endswith(CLIPPED)


def test_many_fields_are_split_ten_to_a_section() -> None:
    fields = tuple(PreviewField(label=f"Field {i}", value=f"value {i}") for i in range(35))
    message = render.proposal_message(
        make_proposal(preview=Preview(title="T", fields=fields)), now=NOW
    )
    assert_valid_message(message)
    sections = [b for b in message["blocks"] if b["type"] == "section" and "fields" in b]
    assert [len(s["fields"]) for s in sections] == [10, 10, 10, 5]
    texts = mrkdwn_texts(message)
    for i in range(35):
        assert f"*Field {i}*\nvalue {i}" in texts


def test_too_many_fields_stay_under_fifty_blocks_and_say_how_many_are_hidden() -> None:
    fields = tuple(PreviewField(label=f"F{i}", value="v") for i in range(800))
    message = render.proposal_message(
        make_proposal(preview=Preview(title="T", fields=fields)), now=NOW
    )
    assert_valid_message(message)
    assert len(message["blocks"]) == 50
    assert buttons(message), "the decision buttons must survive clipping"
    shown = sum(1 for text in mrkdwn_texts(message) if text.startswith("*F"))
    assert f"_{800 - shown} more not shown_ {CLIPPED}" in mrkdwn_texts(message)


def test_long_agent_reason_is_clipped_but_stays_quoted() -> None:
    message = render.proposal_message(make_proposal(agent_reason="word " * 2000), now=NOW)
    assert_valid_message(message)
    [reason] = [t for t in mrkdwn_texts(message) if t.startswith("*Agent's explanation")]
    assert len(reason) <= 3000
    assert reason.endswith(CLIPPED)


def test_clip_never_cuts_an_escape_or_a_token_in_half() -> None:
    escaped = escape("a" * 20 + "<<<<<")
    assert clip(escaped, 35) == "a" * 20 + "&lt;" + CLIPPED
    assert clip("hello <@U0REQUESTER> there", 24) == "hello " + CLIPPED
    assert clip("short", 10) == "short"


# --- escaping -------------------------------------------------------------------------------------


def test_agent_cannot_inject_mentions_or_links_through_its_reason() -> None:
    message = render.proposal_message(make_proposal(agent_reason=INJECTION), now=NOW)
    text = all_text(message)
    assert "<!channel>" not in text
    assert "<@U0BOSS>" not in text
    assert "<https://evil" not in text
    assert "&lt;!channel&gt; &lt;@U0BOSS&gt;" in text
    assert "&amp; friends" in text


def test_arguments_cannot_inject_mentions_through_preview_fields_or_title() -> None:
    preview = Preview(
        title=f"Refund {INJECTION}", fields=(PreviewField(label="Memo", value=INJECTION),)
    )
    message = render.proposal_message(make_proposal(preview=preview), now=NOW)
    assert "<!channel>" not in "\n".join(mrkdwn_texts(message))
    assert "<!channel>" not in message["text"]  # the fallback text is what notifications show
    assert all(text["verbatim"] is True for text in _mrkdwn_objects(message))


def _mrkdwn_objects(message: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "mrkdwn":
                found.append(node)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(message["blocks"])
    return found


def test_rejection_reason_and_outcome_details_are_escaped() -> None:
    rejected = decided(Status.REJECTED, decision_note=INJECTION)
    failed = decided(Status.FAILED, TerminalFailure(detail=INJECTION, correlation_id="c<!here>"))
    for message in (
        render.proposal_message(rejected, now=NOW),
        rejection_reply(rejected),
        render.proposal_message(failed, now=NOW),
        outcome_reply(failed),
    ):
        assert "<!channel>" not in all_text(message)
        assert "<!here>" not in all_text(message)


def test_refusal_text_escapes_the_reason() -> None:
    text = refusal_text("you requested it yourself <!channel>")
    assert "<!channel>" not in text
    assert text.endswith("you requested it yourself &lt;!channel&gt;")


# --- decided messages -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "status", [s for s in Status if s not in (Status.PENDING, Status.NEEDS_RECONCILIATION)]
)
def test_decided_message_has_no_buttons_and_is_valid(status: Status) -> None:
    kind = next((k for k, s in OUTCOME_STATUS.items() if s is status), None)
    proposal = decided(status, OUTCOMES[kind] if kind else None)
    message = render.proposal_message(proposal, now=NOW)
    assert_valid_message(message)
    assert buttons(message) == {}
    assert ":hourglass_flowing_sand: Expires" not in all_text(message)


def test_uncertain_outcome_offers_only_reconciliation_buttons_carrying_the_id() -> None:
    outcome = OUTCOMES["needs_reconciliation"]
    proposal = decided(Status.NEEDS_RECONCILIATION, outcome)
    message = render.proposal_message(proposal, now=NOW)

    assert_valid_message(message)
    assert {action: element["value"] for action, element in buttons(message).items()} == {
        "reconcile_succeeded": proposal.id,
        "reconcile_failed": proposal.id,
        "reconcile_retry": proposal.id,
    }


def test_executing_message_says_who_approved_and_when() -> None:
    message = render.proposal_message(decided(Status.EXECUTING), now=NOW)
    last = message["blocks"][-1]["text"]["text"]
    assert "Approved by <@U0APPROVER> <!date^1714564800^{date_short_pretty} at {time}|" in last
    assert " at <!date" not in last  # never "at today at'
    assert "Executing" in last


def test_rejected_message_shows_who_rejected_and_the_reason() -> None:
    proposal = decided(Status.REJECTED, decision_note="Not this customer.")
    last = render.proposal_message(proposal, now=NOW)["blocks"][-1]["text"]["text"]
    assert "*Rejected* by <@U0APPROVER> <!date^1714564800^" in last
    assert last.endswith(">Not this customer.")


def test_expired_message_says_nothing_was_executed() -> None:
    proposal = make_proposal(status=Status.EXPIRED)
    last = render.proposal_message(proposal, now=NOW)["blocks"][-1]["text"]["text"]
    assert "*Expired*" in last
    assert "Nothing was executed" in last


def test_auto_approved_message_credits_the_policy() -> None:
    proposal = make_proposal(
        status=Status.SUCCEEDED, decision="auto", outcome=OUTCOMES["succeeded"]
    )
    last = render.proposal_message(proposal, now=NOW)["blocks"][-1]["text"]["text"]
    assert "Approved automatically by the policy" in last


@pytest.mark.parametrize("kind", sorted(OUTCOMES))
def test_final_message_summarises_the_outcome(kind: str) -> None:
    proposal = decided(OUTCOME_STATUS[kind], OUTCOMES[kind])
    sections = [b for b in render.proposal_message(proposal, now=NOW)["blocks"] if "text" in b]
    last = sections[-1]["text"]["text"]
    expected = {
        "succeeded": "*Succeeded.*",
        "needs_reconciliation": "may or may not have happened",
        "revision_required": "*Revision required*",
        "terminal_failure": "*Failed*",
    }[kind]
    assert "Approved by <@U0APPROVER>" in last
    assert expected in last


def test_already_decided_text_names_the_decider() -> None:
    text = already_decided_text(decided(Status.REJECTED, decision_note="no"))
    assert "already decided" in text
    assert "<@U0APPROVER>" in text


# --- thread replies -------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(OUTCOMES))
def test_outcome_reply_is_valid_block_kit(kind: str) -> None:
    assert_valid_message(outcome_reply(decided(OUTCOME_STATUS[kind], OUTCOMES[kind])))


def test_each_outcome_kind_renders_distinctly() -> None:
    rendered = {
        kind: outcome_reply(decided(OUTCOME_STATUS[kind], OUTCOMES[kind])) for kind in OUTCOMES
    }
    assert len({json.dumps(message) for message in rendered.values()}) == len(OUTCOMES)
    assert len({message["text"].split(":")[0] for message in rendered.values()}) == len(OUTCOMES)


def test_succeeded_reply_shows_result_fields_under_their_labels() -> None:
    reply = outcome_reply(decided(Status.SUCCEEDED, OUTCOMES["succeeded"]))
    texts = mrkdwn_texts(reply)
    assert "*Refund id*\nre_789" in texts  # no format declared: the name as words
    assert "*Amount cents*\n12000" in texts


def test_succeeded_reply_shows_result_fields_in_the_operations_terms() -> None:
    formats = {
        "refund_id": FieldFormat(label="Refund"),
        "amount_cents": FieldFormat(label="Amount", kind="money", currency="USD"),
    }
    reply = outcome_reply(decided(Status.SUCCEEDED, OUTCOMES["succeeded"]), formats)
    texts = mrkdwn_texts(reply)
    assert "*Refund*\nre_789" in texts
    assert "*Amount*\n120.00 USD" in texts


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        (None, "No result details."),
        ([1, 2, 3], "```\n[1, 2, 3]\n```"),
        ({"nested": {"a": [1, "`x`"]}}, '*Nested*\n{"a": [1, "\u02cbx\u02cb"]}'),
    ],
)
def test_succeeded_reply_renders_any_json_result(result: JsonValue, expected: str) -> None:
    reply = outcome_reply(decided(Status.SUCCEEDED, Succeeded(result=result)))
    assert_valid_message(reply)
    assert any(expected in text for text in mrkdwn_texts(reply))


def test_huge_result_is_clipped() -> None:
    result: JsonValue = {f"key{i}": "v" * 3000 for i in range(40)}
    reply = outcome_reply(decided(Status.SUCCEEDED, Succeeded(result=result)))
    assert_valid_message(reply)
    assert CLIPPED in all_text(reply)


def test_needs_reconciliation_reply_warns_and_gives_the_reference() -> None:
    reply = outcome_reply(decided(Status.NEEDS_RECONCILIATION, OUTCOMES["needs_reconciliation"]))
    texts = "\n".join(mrkdwn_texts(reply))
    assert "*may or may not*" in texts
    assert "corr-nr" not in texts and "Correlation id" not in texts
    assert "Reference `cs_2v6qk3bn7xw4yq5fz2m3a6lhpe`" in texts  # correlation ids start so
    assert "TimeoutError: no answer from the ledger" in texts


def test_revision_required_reply_says_nothing_was_executed() -> None:
    reply = outcome_reply(decided(Status.REVISION_REQUIRED, OUTCOMES["revision_required"]))
    texts = "\n".join(mrkdwn_texts(reply))
    assert "Nothing was executed" in texts
    assert ">the payment was disputed meanwhile" in texts


def test_terminal_failure_reply_gives_detail_and_the_reference() -> None:
    reply = outcome_reply(decided(Status.FAILED, OUTCOMES["terminal_failure"]))
    texts = "\n".join(mrkdwn_texts(reply))
    assert "ledger refused: payment voided" in texts
    assert "corr-tf" not in texts
    assert "Reference `cs_2v6qk3bn7xw4yq5fz2m3a6lhpe`" in texts
    assert "did not happen" in texts


def test_outcome_reply_without_an_outcome_says_so() -> None:
    with pytest.raises(ValueError, match=r"no outcome yet \(status 'executing'\)"):
        outcome_reply(decided(Status.EXECUTING))


def test_rejection_and_expiry_replies_are_valid_and_distinct() -> None:
    rejection = rejection_reply(decided(Status.REJECTED, decision_note="Too big."))
    expiry = expiry_reply(make_proposal(status=Status.EXPIRED))
    assert_valid_message(rejection)
    assert_valid_message(expiry)
    assert ">Too big." in "\n".join(mrkdwn_texts(rejection))
    assert "*Expired*" in "\n".join(mrkdwn_texts(expiry))
    assert rejection["text"].startswith("Rejected by <@U0APPROVER>")


# --- the reject modal -----------------------------------------------------------------------------


def test_reject_modal_is_a_valid_view_asking_for_a_required_reason() -> None:
    modal = render.reject_modal(make_proposal())
    view = View(**modal)
    view.validate_json()
    assert view.to_dict() == modal
    assert modal["callback_id"] == "reject_reason"
    assert modal["private_metadata"] == PROPOSAL_ID
    [reason] = [b for b in modal["blocks"] if b["type"] == "input"]
    assert reason["block_id"] == "reason"
    assert reason["optional"] is False
    element = reason["element"]
    assert element == {
        "type": "plain_text_input",
        "action_id": "reason",
        "multiline": True,
        "max_length": 1000,
        "placeholder": element["placeholder"],
    }


def test_reject_modal_escapes_the_title() -> None:
    modal = render.reject_modal(make_proposal(preview=Preview(title=INJECTION)))
    View(**modal).validate_json()
    assert "<!channel>" not in json.dumps(modal)
