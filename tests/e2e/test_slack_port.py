"""``[server] slack_port``: Slack's requests on a listening socket of their own, served by the
same handlers and store as the main port, which keeps serving Slack too."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.settings import ConfigError, load_settings
from tests.e2e.harness import (
    AGENT_TOKEN,
    APPROVER,
    ENV,
    REQUESTER,
    SIGNING_SECRET,
    running_countersign,
)
from tests.e2e.test_serve_process import free_port
from tests.slack_requests import block_action_body, signed_headers

REFUND = {
    "operation": "payments.refund",
    "request": {"payment_id": "pay_1002"},
    "requested_by": REQUESTER,
}


@pytest.mark.timeout(60)
async def test_slack_port_answers_clicks_and_nothing_else(tmp_path: Path) -> None:
    port = free_port()

    def own_port(text: str) -> str:
        return text.replace("[server]\n", f"[server]\nslack_port = {port}\n", 1)

    slack_url = f"http://127.0.0.1:{port}"
    async with running_countersign(tmp_path, config_edit=own_port) as cs:
        decided = []
        for where in (slack_url,):
            status, created = await cs.submit(REFUND)
            assert status == 201, created
            proposal = await cs.posted(created["id"])
            body = block_action_body(
                user_id=APPROVER,
                action_id="approve",
                value=created["id"],
                channel_id=proposal.slack_channel,
                message_ts=proposal.slack_ts,
                trigger_id=cs.slack.issue_trigger(APPROVER),
            )
            headers = signed_headers(SIGNING_SECRET, body)
            async with cs.http.post(f"{where}/slack/events", data=body, headers=headers) as r:
                assert r.status == 200, await r.text()
            _, read = await cs.read(created["id"], wait=10)
            decided.append(read["status"])
        for base in (slack_url, cs.url):  # both ports reach Slack's handler
            async with cs.http.post(f"{base}/slack/events", data="x=1") as unsigned:
                assert unsigned.status == 401
        headers = {"Authorization": f"Bearer {AGENT_TOKEN}"}
        async with cs.http.get(f"{slack_url}/v1/proposals", headers=headers) as agents:
            assert agents.status == 404
        async with cs.http.post(f"{slack_url}/v1/proposals", json=REFUND, headers=headers) as r:
            assert r.status == 404
    assert decided == ["succeeded"]


@pytest.mark.parametrize(
    ("server", "named"),
    [
        ("port = 8080\nslack_port = 8080", "must differ from server.port"),
        ("port = 8080\nslack_port = 9464", "must differ from monitoring.metrics_port"),
        ("slack_port = 70000", "server.slack_port"),
    ],
)
def test_a_bad_slack_port_is_refused_naming_the_field(
    tmp_path: Path, server: str, named: str
) -> None:
    config = tmp_path / "countersign.toml"
    config.write_text(f"[server]\n{server}\n\n[monitoring]\nmetrics_port = 9464\n")
    with pytest.raises(ConfigError) as refused:
        load_settings(config, ENV)
    assert any("server.slack_port" in p and named in p for p in refused.value.problems), (
        refused.value.problems
    )
