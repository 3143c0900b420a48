"""With an app-level token, Slack interactions arrive over Socket Mode instead of HTTP."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import unquote

from bot.slack.local_socket import LocalSocketMode
from tests.e2e.harness import APPROVER, CAMPAIGN_CHANNEL, REQUESTER, running_countersign
from tests.slack_requests import block_action_body

CAMPAIGN = {
    "operation": "crm.send_campaign",
    "request": {"segment": "vip", "template": "tmpl_thanks", "recipients": 40},
    "requested_by": REQUESTER,
}


def _payload(form_body: str) -> dict[str, object]:
    """The JSON inside a form-encoded interaction: what a Socket Mode envelope carries."""
    loaded: dict[str, object] = json.loads(unquote(form_body.removeprefix("payload=")))
    return loaded


async def test_approval_over_socket_mode_executes_and_http_endpoint_is_off(
    tmp_path: Path,
) -> None:
    socket_mode = LocalSocketMode()
    async with running_countersign(tmp_path, socket_mode=socket_mode) as cs:
        await socket_mode.wait_connected()
        assert socket_mode.opened == 1
        _, created = await cs.submit(CAMPAIGN)
        proposal = await cs.posted(created["id"])
        assert proposal.slack_channel == CAMPAIGN_CHANNEL

        # no HTTP endpoint for Slack in Socket Mode
        async with cs.http.post(f"{cs.url}/slack/events", data="payload=%7B%7D") as response:
            assert response.status in (404, 405)

        click = _payload(
            block_action_body(
                user_id=APPROVER,
                action_id="approve",
                value=created["id"],
                channel_id=proposal.slack_channel or "",
                message_ts=proposal.slack_ts or "",
            )
        )
        ack = await socket_mode.send("interactive", click)

        assert "envelope_id" in ack
        _, final = await cs.read(created["id"], wait=10)
        assert final["status"] == "succeeded"
        assert len(cs.target.executions()) == 1
