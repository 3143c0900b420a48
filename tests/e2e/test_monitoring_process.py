"""`countersign serve` as a real process: its log lines are JSON with the event's fields, a wrong
bot token stops it with a message naming the token, and --allow-offline starts it unready."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.cli import main
from bot.monitoring.version import countersign_version
from bot.slack.local import running_local_slack
from tests.e2e.harness import AGENT_TOKEN, APPROVER, BOT_TOKEN, ENV, REQUESTER, SIGNING_SECRET
from tests.e2e.test_serve_process import free_port, posted_message, write_config
from tests.slack_requests import block_action_body, signed_headers

REPO = Path(__file__).parents[2]


async def serve(tmp_path: Path, env: dict[str, str], *args: str) -> asyncio.subprocess.Process:
    config = write_config(tmp_path, tmp_path / "countersign.sqlite")
    with (tmp_path / "stderr").open("wb") as stderr:
        return await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot.cli",
            "--config",
            str(config),
            *args,
            env=env,
            cwd=REPO,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=stderr,
        )


async def answered(http: aiohttp.ClientSession, url: str, process: Any) -> None:
    for _ in range(400):
        assert process.returncode is None, "countersign serve exited"
        with contextlib.suppress(aiohttp.ClientError):
            async with http.get(f"{url}/healthz") as answer:
                if answer.status == 200:
                    return
        await asyncio.sleep(0.05)
    pytest.fail("countersign serve did not answer /healthz")


async def stop(process: Any) -> None:
    if process.returncode is None:
        process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(process.wait(), timeout=5)
        except TimeoutError:
            process.kill()
            await process.wait()


def log_lines(tmp_path: Path) -> list[dict[str, Any]]:
    """Every line serve wrote to stderr, each parsed as JSON (fails on one that is not)."""
    text = (tmp_path / "stderr").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.mark.timeout(60)
async def test_every_log_line_is_json_with_the_events_fields(tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    async with (
        running_local_slack(BOT_TOKEN) as (slack, slack_url),
        aiohttp.ClientSession() as http,
    ):
        env = {**os.environ, **ENV, "SLACK_API_URL": slack_url, "COUNTERSIGN_LOG_LEVEL": "info"}
        process = await serve(tmp_path, env, "serve", "--port", str(port))
        try:
            await answered(http, url, process)
            async with http.post(
                f"{url}/v1/proposals",
                json={
                    "operation": "payments.refund",
                    "request": {"payment_id": "pay_1002"},
                    "requested_by": REQUESTER,
                },
                headers={"Authorization": f"Bearer {AGENT_TOKEN}", "X-Request-Id": "req-7"},
            ) as answer:
                created = await answer.json()
                assert answer.status == 201, created
            posted = await posted_message(slack)
            for user in (REQUESTER, APPROVER):  # the requester is refused, then it is approved
                body = block_action_body(
                    user_id=user,
                    action_id="approve",
                    value=created["id"],
                    channel_id=posted["channel"],
                    message_ts=posted["ts"],
                    trigger_id=slack.issue_trigger(user),
                )
                headers = signed_headers(SIGNING_SECRET, body)
                async with http.post(f"{url}/slack/events", data=body, headers=headers) as answer:
                    assert answer.status == 200
            async with http.get(
                f"{url}/v1/proposals/{created['id']}",
                params={"wait": "10"},
                headers={"Authorization": f"Bearer {AGENT_TOKEN}"},
            ) as answer:
                assert (await answer.json())["status"] == "succeeded"
        finally:
            await stop(process)

    lines = log_lines(tmp_path)
    assert all({"time", "level", "logger", "message"} <= line.keys() for line in lines)
    assert not [line for line in lines if "traceback" in line], lines
    events = {line.get("event"): line for line in lines if line.get("proposal_id") == created["id"]}
    about = {"proposal_id": created["id"], "agent": "support-bot", "operation": "payments.refund"}
    for event in (
        "proposal.pending",
        "proposal.approve_refused",
        "proposal.executing",
        "proposal.succeeded",
    ):
        assert event in events, sorted(e for e in events if e)
        assert events[event].items() >= about.items(), events[event]
        assert events[event]["level"] == "info"
    assert events["proposal.pending"]["request_id"] == "req-7"  # logged while answering it
    assert events["proposal.approve_refused"]["user"] == REQUESTER
    assert events["proposal.executing"]["by"] == APPROVER
    assert events["proposal.succeeded"]["outcome"] == "succeeded"
    connected = [line for line in lines if "connected to Slack" in line["message"]]
    assert connected and countersign_version() in connected[0]["message"]


@pytest.mark.timeout(60)
async def test_a_wrong_bot_token_stops_serve_and_says_which_and_where(tmp_path: Path) -> None:
    async with running_local_slack(BOT_TOKEN) as (_, slack_url):
        env = {
            **os.environ,
            **ENV,
            "SLACK_API_URL": slack_url,
            "SLACK_BOT_TOKEN": "xoxb-not-the-one",
        }
        process = await serve(tmp_path, env, "serve", "--port", str(free_port()))
        code = await asyncio.wait_for(process.wait(), timeout=30)
    err = (tmp_path / "stderr").read_text(encoding="utf-8")
    assert code == 2, err
    assert "countersign serve cannot start" in err
    assert "SLACK_BOT_TOKEN" in err and "invalid_auth" in err
    assert "OAuth & Permissions" in err and "--allow-offline" in err
    assert "Traceback" not in err


@pytest.mark.timeout(60)
async def test_allow_offline_serves_and_readyz_says_slack_is_not_confirmed(tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    async with (
        running_local_slack(BOT_TOKEN) as (_, slack_url),
        aiohttp.ClientSession() as http,
    ):
        env = {**os.environ, **ENV, "SLACK_API_URL": slack_url, "SLACK_BOT_TOKEN": "xoxb-no"}
        process = await serve(tmp_path, env, "serve", "--port", str(port), "--allow-offline")
        try:
            await answered(http, url, process)
            async with http.get(f"{url}/readyz") as answer:
                status, ready = answer.status, await answer.json()
        finally:
            await stop(process)
    assert status == 503
    assert ready["ready"] is False and ready["version"] == countersign_version()
    assert ready["checks"]["slack"]["ok"] is False
    assert "SLACK_BOT_TOKEN" in ready["checks"]["slack"]["detail"]
    # it runs with --allow-offline already: the advice is what to do now, not how to start
    assert "--allow-offline" not in ready["checks"]["slack"]["detail"]
    assert ready["checks"]["slack"]["detail"].endswith("then restart Countersign.")
    assert ready["checks"]["store"]["ok"] is True
    starting = [line for line in log_lines(tmp_path) if "--allow-offline" in line["message"]]
    assert starting and starting[0]["level"] == "error"


def test_version_prints_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"countersign {countersign_version()}"
    assert countersign_version() != "unknown"


def test_a_bad_log_level_is_refused_naming_where_it_came_from(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setenv("COUNTERSIGN_LOG_LEVEL", "chatty")
    assert main(["--config", str(tmp_path / "absent.toml"), "check-config"]) == 2
    assert "COUNTERSIGN_LOG_LEVEL: expected one of debug, info, warning, error (got 'chatty')" in (
        capsys.readouterr().err
    )
    with pytest.raises(SystemExit) as done:
        main(["--log-level", "loud", "check-config"])
    assert done.value.code == 2
