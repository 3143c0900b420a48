"""Metrics scraped over HTTP after a real flow, readiness, and Slack's answer to the bot token at
start, against a running app with the local Slack."""

from __future__ import annotations

import socket
from pathlib import Path

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from bot.monitoring.health import SlackUnusable
from bot.monitoring.version import countersign_version
from store.proposals import Status
from tests.e2e.harness import (
    AGENT_TOKEN,
    APPROVER,
    OUTSIDER,
    REQUESTER,
    Countersign,
    eventually,
    running_countersign,
)

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]

REFUND = {
    "operation": "payments.refund",
    "request": {"payment_id": "pay_1002"},
    "requested_by": REQUESTER,
}
TAGGING = {
    "operation": "crm.tag_customers",
    "request": {"segment": "vip", "tag": "gold", "customers": 5},
    "requested_by": REQUESTER,
}


def parsed(text: str) -> Samples:
    """Every sample of a Prometheus text page, by name and labels (prometheus_client's parser)."""
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


async def scrape(http: aiohttp.ClientSession, url: str) -> Samples:
    async with http.get(f"{url}/metrics") as answer:
        assert answer.status == 200
        assert answer.headers["Content-Type"].startswith("text/plain; version=")
        return parsed(await answer.text())


async def test_metrics_count_a_real_flow_with_bounded_labels(tmp_path: Path) -> None:
    async with running_countersign(tmp_path) as cs:
        cs.slack.fail_next("chat.postMessage", status=429, retry_after=0)
        status, created = await cs.submit(REFUND)
        assert status == 201, created
        await cs.posted(created["id"])
        assert await cs.click(OUTSIDER, "approve", created["id"]) == 200  # refused
        assert await cs.click(APPROVER, "approve", created["id"]) == 200
        _, final = await cs.read(created["id"], wait=10)
        assert final["status"] == "succeeded", final
        status, tagged = await cs.submit(TAGGING)  # the policy runs it at once
        assert tagged["status"] == "succeeded", tagged
        await cs.settled()

        async def drained() -> bool:
            """After the injected 429, Slack's pace defers the next posts to the channel by a
            moment: nothing is due, but an entry may still wait for its turn."""
            scraped = await scrape(cs.http, cs.url)
            return value(scraped, "countersign_outbox_pending", outbox="proposals") == 0

        await eventually(drained, timeout=30)
        samples = await scrape(cs.http, cs.url)

    refund = {"operation": "payments.refund", "decision": "ask"}
    for entered in ("pending", "executing", "succeeded"):
        assert value(samples, "countersign_proposals_total", **refund, status=entered) == 1
    tag = {"operation": "crm.tag_customers", "decision": "auto"}
    assert value(samples, "countersign_proposals_total", **tag, status="executing") == 1
    assert value(samples, "countersign_proposals_total", **tag, status="pending") == 0
    for operation in ("payments.refund", "crm.tag_customers"):
        executions = {"operation": operation, "outcome": "succeeded"}
        assert value(samples, "countersign_executions_total", **executions) == 1
    decided = {"operation": "payments.refund", "result": "approved"}
    assert value(samples, "countersign_decision_seconds_count", **decided) == 1
    assert value(samples, "countersign_slack_ack_seconds_count") >= 2  # both clicks
    slack = "countersign_slack_api_requests_total"
    assert value(samples, slack, method="auth.test", code="200") >= 1
    assert value(samples, slack, method="chat.postMessage", code="429") == 1
    assert value(samples, slack, method="chat.postMessage", code="200") >= 1
    assert value(samples, slack, method="chat.postEphemeral", code="200") == 1
    assert value(samples, "countersign_slack_auth_ok") == 1
    delivered = {"outbox": "proposals", "lane": "slack", "result": "delivered"}
    assert value(samples, "countersign_outbox_deliveries_total", **delivered) >= 2
    assert value(samples, "countersign_outbox_pending", outbox="proposals") == 0
    assert value(samples, "countersign_outbox_pending", outbox="escalations") == 0
    assert value(samples, "countersign_clicks_recorded") == 0  # the click was applied
    assert value(samples, "countersign_outbox_wait_seconds_count", outbox="proposals", lane="slack")
    assert value(samples, "countersign_outbox_last_delivery_timestamp_seconds") > 0
    assert value(samples, "countersign_store_call_seconds_count", verb="create_proposal") == 2
    assert value(samples, "countersign_store_call_seconds_count", verb="claim_for_execution") == 1
    # the stores the store hands out are counted by verb too: both clicks were recorded there
    assert value(samples, "countersign_store_call_seconds_count", verb="clicks.record_click") == 2
    assert value(samples, "countersign_store_call_seconds_count", verb="complete_deliveries") >= 1
    assert value(samples, "countersign_long_polls_open", agent="support-bot") == 0
    assert value(samples, "countersign_audit_entries") >= 5
    assert value(samples, "countersign_store_up") == 1
    assert value(samples, "countersign_build_info", version=countersign_version()) == 1
    route = {"route": "/v1/proposals", "method": "POST", "code": "201"}
    assert value(samples, "countersign_http_requests_total", **route) == 2
    # no label value names a proposal, a person or a request
    values = {v for _, labels in samples for _, v in labels}
    assert not [v for v in values if v.startswith(("cs_", "U0", "esc_"))], sorted(values)


async def test_metrics_can_have_their_own_port(tmp_path: Path) -> None:
    port = _free_port()

    def own_port(text: str) -> str:
        return f"{text}\n[monitoring]\nmetrics_port = {port}\n"

    async with running_countersign(tmp_path, config_edit=own_port) as cs:
        status, _ = await cs.submit(TAGGING)
        assert status == 201
        samples = await scrape(cs.http, f"http://127.0.0.1:{port}")
        main_port = await cs.request("GET", "/metrics")
    tag = {"operation": "crm.tag_customers", "decision": "auto", "status": "executing"}
    assert value(samples, "countersign_proposals_total", **tag) == 1
    assert main_port.status == 404  # kept off the address Slack and the agents use


async def test_two_apps_in_one_process_keep_their_own_metrics(tmp_path: Path) -> None:
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    async with (
        running_countersign(tmp_path / "one") as one,
        running_countersign(tmp_path / "two") as two,
    ):
        await one.submit(TAGGING)
        first, second = await scrape(one.http, one.url), await scrape(two.http, two.url)
    tag = {"operation": "crm.tag_customers", "decision": "auto", "status": "executing"}
    assert value(first, "countersign_proposals_total", **tag) == 1
    assert value(second, "countersign_proposals_total", **tag) == 0


async def test_readyz_is_ready_with_the_version_and_every_check(tmp_path: Path) -> None:
    async with running_countersign(tmp_path) as cs:
        answer = await cs.request("GET", "/readyz")
        health = await cs.request("GET", "/healthz")
    assert answer.status == 200, answer.body
    body = answer.json()
    assert body["ready"] is True
    assert body["version"] == countersign_version()
    assert set(body["checks"]) == {"store", "migrations", "slack", "outbox"}
    assert all(check["ok"] for check in body["checks"].values()), body
    assert "auth.test succeeded" in body["checks"]["slack"]["detail"]
    assert health.status == 200 and health.json() == {"ok": True}
    assert answer.headers["X-Request-Id"]


async def test_readyz_fails_when_the_database_is_gone(tmp_path: Path) -> None:
    async with running_countersign(tmp_path) as cs:
        await cs.store.close()  # what the app holds no longer answers
        answer = await cs.request("GET", "/readyz")
        health = await cs.request("GET", "/healthz")
        samples = await scrape(cs.http, cs.url)
    assert answer.status == 503
    checks = answer.json()["checks"]
    assert checks["store"]["ok"] is False
    assert "does not answer" in checks["store"]["detail"]
    assert checks["migrations"]["ok"] is False
    assert checks["slack"]["ok"] is True
    assert health.status == 200  # alive, only not ready
    assert value(samples, "countersign_store_up") == 0


async def test_readyz_says_when_the_outbox_is_stuck(tmp_path: Path) -> None:
    def stuck_fast(text: str) -> str:
        return f"{text}\n[monitoring]\noutbox_stuck_seconds = 0.2\n"

    async with running_countersign(tmp_path, config_edit=stuck_fast) as cs:
        cs.slack.fail_next("chat.postMessage", status=500, times=100)
        status, _ = await cs.submit(REFUND)
        assert status == 201

        async def stuck() -> dict[str, object] | None:
            answer = await cs.request("GET", "/readyz")
            outbox = answer.json()["checks"]["outbox"]
            return outbox if answer.status == 503 and not outbox["ok"] else None

        outbox = await eventually(stuck)
    assert str(outbox["detail"]).startswith("stuck: 1 entries wait")


async def test_a_wrong_bot_token_stops_the_start_naming_the_token(tmp_path: Path) -> None:
    with pytest.raises(SlackUnusable) as refused:
        async with running_countersign(tmp_path, env={"SLACK_BOT_TOKEN": "xoxb-wrong"}):
            pytest.fail("started with a token Slack refuses")
    message = str(refused.value)
    assert "SLACK_BOT_TOKEN" in message
    assert "invalid_auth" in message
    assert "OAuth & Permissions" in message
    assert "--allow-offline" in message


async def test_allow_offline_starts_unready_until_auth_test_succeeds(tmp_path: Path) -> None:
    def retry_fast(text: str) -> str:
        return f"{text}\n[monitoring]\nslack_check_seconds = 0.05\n"

    wrong = "xoxb-rotated-token"
    async with running_countersign(
        tmp_path, env={"SLACK_BOT_TOKEN": wrong}, allow_offline=True, config_edit=retry_fast
    ) as cs:
        answer = await cs.request("GET", "/readyz")
        assert answer.status == 503
        slack = answer.json()["checks"]["slack"]
        assert slack["ok"] is False
        assert "invalid_auth" in slack["detail"]
        # the agents are served meanwhile
        status, tagged = await cs.submit(TAGGING)
        assert status == 201 and tagged["status"] == "succeeded"

        cs.slack.token = wrong  # Slack now accepts the token the app has

        async def ready() -> bool:
            return (await cs.request("GET", "/readyz")).status == 200

        await eventually(ready)


async def test_the_request_id_comes_back_and_names_the_request(cs: Countersign) -> None:
    headers = {"Authorization": f"Bearer {AGENT_TOKEN}", "X-Request-Id": "req-42.a"}
    given = await cs.request("GET", "/v1/proposals/cs_nothing", headers=headers)
    spaced = {**headers, "X-Request-Id": "no spaces allowed"}
    made = await cs.request("GET", "/v1/proposals/cs_nothing", headers=spaced)
    assert given.headers["X-Request-Id"] == "req-42.a"
    assert made.headers["X-Request-Id"] != "no spaces allowed"
    assert len(made.headers["X-Request-Id"]) == 16


async def test_an_executed_proposal_is_not_counted_again_when_read(cs: Countersign) -> None:
    status, created = await cs.submit(TAGGING)
    assert status == 201
    assert (await cs.store.get_proposal(created["id"])).status is Status.SUCCEEDED
    await cs.read(created["id"])
    await cs.submit(TAGGING)  # a replay of the same submission: nothing new
    samples = await scrape(cs.http, cs.url)
    tag = {"operation": "crm.tag_customers", "decision": "auto", "status": "succeeded"}
    assert value(samples, "countersign_proposals_total", **tag) == 1


@pytest.fixture
async def cs(tmp_path: Path):  # type: ignore[no-untyped-def]
    async with running_countersign(tmp_path) as running:
        yield running


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port
