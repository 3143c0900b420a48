"""The agent cannot read the policy table through its answers: the note it gets for auto, ask and
deny names the rule, never the conditions or thresholds (approvers still see them in Slack)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import (
    CAMPAIGN_CHANNEL,
    REFUNDS_CHANNEL,
    REQUESTER,
    Countersign,
    replace_rule,
    running_countersign,
)

#: A threshold no timestamp, id or probe value can contain by chance.
THRESHOLD = 4242421

TAGS = f"""
[[policy]]
id = "small-tags"
operation = "crm.tag_customers"
when = [{{ field = "customers", lte = {THRESHOLD} }}]
decision = "auto"

[[policy]]
id = "big-tags"
operation = "crm.tag_customers"
decision = "ask"
approvers = ["finance"]
channel = "{CAMPAIGN_CHANNEL}"
"""


@pytest.fixture
async def cs(tmp_path: Path) -> AsyncIterator[Countersign]:
    async with running_countersign(tmp_path, config_edit=replace_rule("small-tags", TAGS)) as cs:
        yield cs


def tagging(customers: int) -> dict[str, Any]:
    return {
        "operation": "crm.tag_customers",
        "request": {"segment": "churn-risk", "tag": "winback", "customers": customers},
        "requested_by": REQUESTER,
    }


async def test_probing_around_a_threshold_never_shows_the_threshold(cs: Countersign) -> None:
    answers = {}
    for customers in (THRESHOLD - 2, THRESHOLD - 1, THRESHOLD + 1, THRESHOLD + 2):
        status, created = await cs.submit(tagging(customers))
        assert status == 201, created
        _, again = await cs.read(created["id"])
        answers[customers] = created
        for body in (created, again):
            assert str(THRESHOLD) not in json.dumps(body), body
            assert "<=" not in body["policy"]["note"]

    below, above = answers[THRESHOLD - 1], answers[THRESHOLD + 1]
    assert (below["policy"]["decision"], above["policy"]["decision"]) == ("auto", "ask")
    assert below["policy"]["note"] == "approved automatically by policy rule 'small-tags'"
    assert above["policy"]["note"] == "asked by policy rule 'big-tags': a person has to approve it"
    # the notes of two calls on the same side of the threshold are the same words
    assert answers[THRESHOLD - 2]["policy"] == below["policy"]


async def test_an_ask_tells_the_agent_the_rule_and_the_approver_the_condition(
    cs: Countersign,
) -> None:
    # refunds ask up to 200000 cents (pay_1002 is 120000) and are denied above
    status, asked = await cs.submit(
        {
            "operation": "payments.refund",
            "request": {"payment_id": "pay_1002"},
            "requested_by": REQUESTER,
        }
    )
    _, denied = await cs.submit(
        {
            "operation": "payments.refund",
            "request": {"payment_id": "pay_1004"},
            "requested_by": REQUESTER,
        }
    )

    assert status == 201
    for body in (asked, denied):
        assert "200000" not in json.dumps(body)
    assert asked["policy"]["note"] == "asked by policy rule 'refunds': a person has to approve it"
    # a deny gives the reason the operators wrote for the agent
    assert denied["policy"]["note"] == "Refunds over 2,000.00 go through the manual process."
    found = await cs.posted(asked["id"])
    shown = json.dumps(cs.slack.message(REFUNDS_CHANNEL, found.slack_ts).blocks)
    # the approver is told why, in the operation's terms: the amount and the rule's limit
    assert "2,000.00 USD limit" in shown and "1,200.00 USD" in shown
