"""``countersign policy simulate``: the counts on a known call set through a known policy,
what changes under a new configuration, and export-calls writing what simulate reads."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.operators.simulate import export_calls_command, read_calls, simulate, simulate_command
from bot.settings import Settings, load_settings
from store.sqlite import SqliteStore
from tests.store.conformance import new_proposal

CONFIG = """
[store]
url = "sqlite:///{store}"

[roles]
support = ["U0SUPPORT1"]
marketing = ["U0MARKETING1"]

[agents.support-bot]
token_env = "COUNTERSIGN_TOKEN_SUPPORT_BOT"
acts_for = ["role:support"]

[operations."crm.send_campaign"]
kind = "webhook"
description = "Email a campaign to a customer segment"
url = "http://127.0.0.1:9/campaigns/send"
secret_env = "COUNTERSIGN_WEBHOOK_SECRET_CRM"
preview = {{ title = "Email {{recipients}} customers in segment {{segment}}" }}

[operations."crm.send_campaign".request_schema]
type = "object"
required = ["segment", "recipients"]
properties = {{ segment = {{ type = "string" }}, recipients = {{ type = "integer" }} }}

[[policy]]
id = "small-campaigns"
operation = "crm.send_campaign"
when = [{{ field = "recipients", lte = 100 }}]
decision = "ask"
approvers = ["support"]
channel = "C0APPROVALS"

[[policy]]
id = "campaigns"
operation = "crm.send_campaign"
when = [{{ field = "recipients", lte = {limit} }}]
decision = "ask"
approvers = ["marketing"]
channel = "C0APPROVALS"

[[policy]]
id = "huge-campaigns"
operation = "crm.send_campaign"
decision = "deny"
reason = "Campaigns this large go through marketing's own process."
"""
ENV = {
    "COUNTERSIGN_TOKEN_SUPPORT_BOT": "support-bot-token-0123456789",
    "COUNTERSIGN_WEBHOOK_SECRET_CRM": "crm-secret",
}
NOW = datetime(2031, 3, 14, 15, 9, 26, tzinfo=UTC)


def _call(recipients: int, operation: str = "crm.send_campaign") -> str:
    call = {"agent": "support-bot", "operation": operation, "requested_by": "U0SUPPORT1"}
    return json.dumps({**call, "request": {"segment": "churn-risk", "recipients": recipients}})


CALLS = "\n".join(
    [
        _call(40),  # small-campaigns
        _call(800),  # campaigns (up to 1,000; the new configuration: up to 500)
        _call(5000),  # huge-campaigns
        _call(2000),  # huge-campaigns
        _call(40, operation="crm.delete_everything"),  # no such operation
    ]
)


def _settings(tmp_path: Path, name: str, limit: int = 1000) -> Settings:
    path = tmp_path / name
    path.write_text(CONFIG.format(store=tmp_path / "cs.sqlite", limit=limit), encoding="utf-8")
    return load_settings(path, ENV)


async def test_counts_per_rule_and_overall_on_a_known_call_set(tmp_path: Path) -> None:
    calls = read_calls(CALLS, source="calls.jsonl")

    tally = await simulate(_settings(tmp_path, "a.toml"), calls, store=None, now=NOW)

    assert [(o.kind, o.rule) for o in tally.outcomes] == [
        ("ask", "small-campaigns"),
        ("ask", "campaigns"),
        ("deny", "huge-campaigns"),
        ("deny", "huge-campaigns"),
        ("invalid", None),
    ]
    assert dict(tally.total) == {"ask": 2, "deny": 2}
    assert tally.invalid == 1


async def test_the_report_shows_shares_and_the_calls_that_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in ENV.items():  # the new configuration is read with the environment
        monkeypatch.setenv(name, value)
    (tmp_path / "calls.jsonl").write_text(CALLS, encoding="utf-8")
    current = _settings(tmp_path, "current.toml")
    _settings(tmp_path, "new.toml", limit=500)
    out = io.StringIO()

    code = await simulate_command(
        current, tmp_path / "calls.jsonl", tmp_path / "new.toml", out, io.StringIO()
    )

    assert code == 0
    lines = out.getvalue().splitlines()
    totals = [line.split() for line in lines if line.strip().startswith("total")]
    # calls, auto, standing, ask, deny, to a person
    assert totals == [
        ["total", "4", "0", "0", "2", "2", "50.0%"],
        ["total", "4", "0", "0", "1", "3", "25.0%"],
    ]
    rule = [line.split() for line in lines if line.strip().startswith("campaigns")]
    assert rule[0] == ["campaigns", "1", "0", "0", "1", "0", "100.0%"]
    assert "1 of 5 calls decide differently" in lines
    assert "  call 2 (crm.send_campaign): ask (campaigns) -> deny (huge-campaigns)" in lines


async def test_export_calls_writes_what_simulate_reads(tmp_path: Path) -> None:
    settings = _settings(tmp_path, "a.toml")
    store = await SqliteStore.open(tmp_path / "cs.sqlite")
    stored = new_proposal(
        NOW,
        agent="support-bot",
        operation="crm.send_campaign",
        arguments={"segment": "churn-risk", "recipients": 40},
        rule_id="small-campaigns",
    )
    await store.create_proposal(stored)
    await store.close()

    code = await export_calls_command(
        settings, "2031-03-01", tmp_path / "calls.jsonl", io.StringIO(), io.StringIO()
    )

    assert code == 0
    [call] = read_calls((tmp_path / "calls.jsonl").read_text(encoding="utf-8"), source="x")
    assert (call.id, call.agent, call.decision, call.rule_id) == (
        stored.id,
        "support-bot",
        "ask",
        "small-campaigns",
    )
    assert call.arguments == stored.arguments
