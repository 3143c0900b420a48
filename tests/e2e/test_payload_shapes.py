"""A signed click whose ids are not shaped like Slack's (an empty user id, a channel that is not
a conversation id, no trigger) is ignored: nothing is looked up, told, audited or decided.

Slack never sends such a payload; answering it would mean a Slack call that fails (an ephemeral
message to user "") and an audit entry for it. The robustness fuzzer found this one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.e2e.harness import OUTSIDER, REQUESTER, Countersign, running_countersign
from tests.slack_requests import block_action_body

BODY = {
    "operation": "payments.refund",
    "request": {"payment_id": "pay_1002"},
    "requested_by": REQUESTER,
}


@pytest.fixture
async def cs(tmp_path: Path) -> AsyncIterator[Countersign]:
    async with running_countersign(tmp_path) as running:
        yield running


@pytest.mark.parametrize(
    ("user", "channel", "trigger_id"),
    [
        ("", None, None),  # no user
        ("u0lowercase", None, None),  # not a user id
        ("U0", None, None),  # too short to be one
        (OUTSIDER, "zz-not-a-channel", None),
        (REQUESTER, None, ""),  # no trigger for the reject modal
    ],
)
@pytest.mark.parametrize("action", ["approve", "reject"])
async def test_a_click_with_ids_slack_would_never_send_changes_and_calls_nothing(
    cs: Countersign, user: str, channel: str | None, trigger_id: str | None, action: str
) -> None:
    status, created = await cs.submit(BODY)
    assert status == 201, created
    posted = await cs.posted(created["id"])
    await cs.settled()
    entries, calls = len(await cs.store.audit_log()), len(cs.slack.calls())
    body = block_action_body(
        user_id=user,
        action_id=action,
        value=posted.id,
        channel_id=posted.slack_channel if channel is None else channel,
        message_ts=posted.slack_ts,
        trigger_id="1000000000001.1000000000.local-trigger" if trigger_id is None else trigger_id,
    )

    assert await cs.post_slack(body) == 200  # acknowledged, as Slack expects of every click
    await cs.settled()
    assert len(await cs.store.audit_log()) == entries
    # bolt authorizes each request it reads (auth.test); nothing else may be called
    assert [c.method for c in cs.slack.calls()[calls:] if c.method != "auth.test"] == []
    assert (await cs.store.get_proposal(posted.id)).status.value == "pending"


async def test_the_same_click_with_slack_shaped_ids_is_answered(cs: Countersign) -> None:
    """The control: an outsider's well-formed click is refused, audited and told why."""
    status, created = await cs.submit(BODY)
    assert status == 201, created
    posted = await cs.posted(created["id"])
    await cs.settled()
    entries = len(await cs.store.audit_log())
    assert await cs.click(OUTSIDER, "approve", posted.id) == 200
    await cs.settled()
    assert [e.event for e in (await cs.store.audit_log())[entries:]] == ["approve_refused"]
    assert cs.slack.ephemeral(OUTSIDER)
