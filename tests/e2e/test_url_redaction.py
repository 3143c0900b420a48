"""A webhook target's URL may carry credentials (userinfo, a query token, a token in the path).
They never reach the agent, Slack, the audit log or the logs: only ``scheme://host[:port]/…``."""

from __future__ import annotations

import json
import logging
import re
import socket
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import APPROVER, REQUESTER, Countersign, eventually, running_countersign
from tests.e2e.test_callback_lane import silent_server

SECRETS = ("s3cr3t-user", "s3cr3t-pass", "T0SECRETPATH", "B0SECRETHOOK", "q-s3cr3t-token")
CAMPAIGN: dict[str, Any] = {
    "operation": "crm.send_campaign",
    "request": {"segment": "churn-risk", "template": "tmpl_winback", "recipients": 1200},
    "requested_by": REQUESTER,
}


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def campaign_target(port: int) -> Callable[[str], str]:
    """A config_edit: the campaign operation's URL, with credentials in every part."""
    url = (
        f"http://s3cr3t-user:s3cr3t-pass@127.0.0.1:{port}/services/T0SECRETPATH/B0SECRETHOOK"
        "?token=q-s3cr3t-token"
    )

    def edit(text: str) -> str:
        text = re.sub(
            r'url = "http://127\.0\.0\.1:\d+/campaigns/send"', f'url = "{url}"', text, count=1
        )
        return text.replace("timeout_seconds = 2", "timeout_seconds = 0.5", 1)

    return edit


@asynccontextmanager
async def approved(tmp_path: Path, port: int) -> AsyncIterator[tuple[Countersign, dict[str, Any]]]:
    """A campaign proposal approved in Slack, run against the target at ``port``, with its
    outcome."""
    async with running_countersign(tmp_path, config_edit=campaign_target(port)) as cs:
        _, created = await cs.submit(CAMPAIGN)
        await cs.posted(created["id"])
        await cs.click(APPROVER, "approve", created["id"])

        async def final_state() -> dict[str, Any] | None:
            _, read = await cs.read(created["id"])
            return None if read["status"] in ("pending", "executing") else read

        final = await eventually(final_state)
        await cs.settled()
        yield cs, final


def assert_no_secret(where: str, text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{secret!r} appears in {where}: {text[:2000]}"


async def assert_nowhere(cs: Countersign, final: dict[str, Any], caplog: Any) -> None:
    assert_no_secret("the agent's answer", json.dumps(final))
    _, read = await cs.read(final["id"])
    assert_no_secret("the agent's read", json.dumps(read))
    calls = [json.dumps(call.args, default=str) for call in cs.slack.calls()]
    assert calls, "Slack was called"
    assert_no_secret("Slack calls", "\n".join(calls))
    audit = [json.dumps(entry.detail, default=str) for entry in await cs.store.audit_log()]
    assert_no_secret("the audit log", "\n".join(audit))
    assert_no_secret("the logs", caplog.text)


async def test_a_refused_connection_to_a_secret_url_shows_only_scheme_and_host(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    port = closed_port()
    async with approved(tmp_path, port) as (cs, final):
        assert final["outcome"]["kind"] == "terminal_failure"
        assert f"http://127.0.0.1:{port}/…" in final["outcome"]["detail"]
        await assert_nowhere(cs, final, caplog)


async def test_a_timeout_at_a_secret_url_names_the_target_not_its_address(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    async with silent_server() as silent, approved(tmp_path, silent.port) as (cs, final):
        assert final["outcome"]["kind"] == "needs_reconciliation"
        # the target, not its address: the approver reads what happened
        assert final["outcome"]["detail"].startswith("the target did not answer in full within")
        await assert_nowhere(cs, final, caplog)


#: What a Python operation's backend might say when it fails: its URL, credentials and all.
LEDGER_URL = "https://user:secret@ledger.example/path/tok_secret?key=secret"


async def test_a_python_operation_raising_with_a_secret_url_shows_only_scheme_and_host(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """payments.refund is written in Python; its ledger raises an error that quotes the
    ledger's URL. The executor turns the exception into the outcome: no credential in it."""
    caplog.set_level(logging.INFO)

    async def unreachable(*_: Any) -> Any:
        raise ConnectionError(f"could not reach {LEDGER_URL}: connection reset")

    async with running_countersign(tmp_path) as cs:
        ledger = cs.service.settings.registry.get("payments.refund").ledger
        monkeypatch.setattr(ledger, "refund", unreachable)
        _, created = await cs.submit(
            {
                "operation": "payments.refund",
                "request": {"payment_id": "pay_1002", "amount_cents": 50_000},
                "requested_by": REQUESTER,
            }
        )
        await cs.posted(created["id"])
        await cs.click(APPROVER, "approve", created["id"])

        async def final_state() -> dict[str, Any] | None:
            _, read = await cs.read(created["id"])
            return None if read["status"] in ("pending", "executing") else read

        final = await eventually(final_state)
        await cs.settled()

        assert final["outcome"]["kind"] == "needs_reconciliation", final
        assert "ConnectionError" in final["outcome"]["detail"]
        assert "https://ledger.example/…" in final["outcome"]["detail"]
        stored = await cs.store.get_proposal(created["id"])
        assert "secret" not in json.dumps(stored.outcome, default=str)
        for where, text in [
            ("the agent's read", json.dumps(final)),
            ("Slack calls", "\n".join(json.dumps(c.args, default=str) for c in cs.slack.calls())),
            (
                "the audit log",
                "\n".join(json.dumps(e.detail, default=str) for e in await cs.store.audit_log()),
            ),
            ("the logs", caplog.text),
        ]:
            assert "secret" not in text, f"'secret' appears in {where}: {text[:2000]}"
