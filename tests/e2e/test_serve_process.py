"""`countersign serve` as a real process: starts, serves the loop, stops cleanly on SIGTERM."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import socket
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.slack.local import LocalSlack, running_local_slack
from store.proposals import Status
from store.sqlite import SqliteStore
from tests.e2e.harness import (
    AGENT_TOKEN,
    APPROVER,
    BOT_TOKEN,
    ENV,
    REFUNDS_CHANNEL,
    REQUESTER,
    SIGNING_SECRET,
    config_text,
)
from tests.slack_requests import block_action_body, signed_headers

REPO = Path(__file__).parents[2]
STARTUP_SECONDS = 20.0
STOP_SECONDS = 5.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def write_config(tmp_path: Path, db: Path, *, server: str = "") -> Path:
    """The e2e configuration on the SQLite file ``db``, with ``server`` lines added to its
    [server] table."""
    config = tmp_path / "countersign.toml"
    # the refund operation runs in-process; the webhook target is never called here
    text = config_text("http://127.0.0.1:9").replace("[server]\n", f"[server]\n{server}", 1)
    config.write_text(f'{text}\n[store]\nurl = "sqlite:///{db}"\n', encoding="utf-8")
    return config


class Server:
    """A `countersign serve` subprocess whose output goes to files in tmp_path."""

    def __init__(self, process: asyncio.subprocess.Process, out: Path, err: Path) -> None:
        self.process = process
        self.out = out
        self.err = err

    def output(self) -> str:
        return (
            f"exit code: {self.process.returncode}\n"
            f"--- stdout ---\n{self.out.read_text(errors='replace')}\n"
            f"--- stderr ---\n{self.err.read_text(errors='replace')}"
        )


async def start(tmp_path: Path, config: Path, port: int, env: dict[str, str]) -> Server:
    out, err = tmp_path / "serve.stdout", tmp_path / "serve.stderr"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot.cli",
            "--config",
            str(config),
            "serve",
            "--port",
            str(port),
            env=env,
            cwd=REPO,
            stdout=stdout,
            stderr=stderr,
        )
    return Server(process, out, err)


async def wait_until_healthy(http: aiohttp.ClientSession, url: str, server: Server) -> None:
    deadline = asyncio.get_running_loop().time() + STARTUP_SECONDS
    while asyncio.get_running_loop().time() < deadline:
        if server.process.returncode is not None:
            pytest.fail(f"countersign serve exited before answering /healthz\n{server.output()}")
        with contextlib.suppress(aiohttp.ClientError):
            async with http.get(f"{url}/healthz") as response:
                if response.status == 200 and await response.json() == {"ok": True}:
                    return
        await asyncio.sleep(0.05)
    pytest.fail(
        f"countersign serve did not answer /healthz in {STARTUP_SECONDS} s\n{server.output()}"
    )


async def posted_message(slack: LocalSlack) -> dict[str, Any]:
    """The first successful chat.postMessage the local Slack received."""
    for _ in range(200):
        for call in slack.calls("chat.postMessage"):
            if call.response.get("ok"):
                return call.response
        await asyncio.sleep(0.05)
    raise AssertionError(f"no chat.postMessage arrived; calls: {[c.method for c in slack.calls()]}")


async def run_cli(config: Path, env: dict[str, str], *args: str) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot.cli",
        "--config",
        str(config),
        *args,
        env=env,
        cwd=REPO,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(process.communicate(), timeout=20)
    assert process.returncode is not None
    return process.returncode, out.decode()


@pytest.mark.timeout(60)
async def test_serve_process_runs_the_loop_and_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    db = tmp_path / "countersign.sqlite"
    config = write_config(tmp_path, db)
    port = free_port()
    url = f"http://127.0.0.1:{port}"

    async with (
        running_local_slack(BOT_TOKEN) as (slack, slack_url),
        aiohttp.ClientSession() as http,
    ):
        env = {**os.environ, **ENV, "SLACK_API_URL": slack_url}
        server = await start(tmp_path, config, port, env)
        try:
            await wait_until_healthy(http, url, server)

            # the agent proposes a refund that the policy asks finance about
            async with http.post(
                f"{url}/v1/proposals",
                json={
                    "operation": "payments.refund",
                    "request": {"payment_id": "pay_1002"},
                    "requested_by": REQUESTER,
                    "reason": "Charged twice.",
                },
                headers={"Authorization": f"Bearer {AGENT_TOKEN}"},
            ) as response:
                created = await response.json()
                assert response.status == 201, created
            assert created["status"] == "pending"
            proposal_id = created["id"]

            # the local Slack received the approval message with the proposal's blocks
            posted = await posted_message(slack)
            assert posted["channel"] == REFUNDS_CHANNEL
            blocks = json.dumps(posted["message"]["blocks"])
            assert created["preview"]["title"] in blocks
            assert proposal_id in blocks

            # an approver clicks Approve; Slack's request is signed with the signing secret
            body = block_action_body(
                user_id=APPROVER,
                action_id="approve",
                value=proposal_id,
                channel_id=posted["channel"],
                message_ts=posted["ts"],
                trigger_id=slack.issue_trigger(APPROVER),
            )
            async with http.post(
                f"{url}/slack/events", data=body, headers=signed_headers(SIGNING_SECRET, body)
            ) as response:
                assert response.status == 200

            # the agent's long poll returns the final outcome
            async with http.get(
                f"{url}/v1/proposals/{proposal_id}",
                params={"wait": "10"},
                headers={"Authorization": f"Bearer {AGENT_TOKEN}"},
            ) as response:
                final = await response.json()
                assert response.status == 200, final
            assert final["status"] == "succeeded", final
            assert final["outcome"]["kind"] == "succeeded"
            assert final["decision"]["by"] == APPROVER

            server.process.send_signal(signal.SIGTERM)
            try:
                code = await asyncio.wait_for(server.process.wait(), timeout=STOP_SECONDS)
            except TimeoutError:
                pytest.fail(f"countersign serve ignored SIGTERM for {STOP_SECONDS} s")
            assert code == 0, server.output()
            assert "Traceback" not in server.err.read_text(), server.output()
            assert "event loop: uvloop" in server.output()  # serve runs on uvloop (not Windows)
            # what startup built is out of the garbage collector's full passes (their pauses)
            settled = re.search(r"(\d+) startup objects kept out of", server.output())
            assert settled and int(settled[1]) > 10_000, server.output()
            assert "POST /v1/proposals" not in server.output()  # no access log unless asked
        finally:
            if server.process.returncode is None:
                server.process.kill()
                await server.process.wait()

    # what the process wrote survives it
    store = await SqliteStore.open(db)
    try:
        stored = await store.get_proposal(proposal_id)
        events = [entry.event for entry in await store.audit_log(proposal_id)]
        report = await store.verify_audit()
    finally:
        await store.close()
    assert stored.status is Status.SUCCEEDED
    assert stored.decided_by == APPROVER
    assert "approved" in events
    assert report.ok, report

    code, out = await run_cli(config, env, "audit", "verify")
    assert code == 0, out
    assert f"audit log OK: {report.checked} entries verified" in out


@pytest.mark.timeout(60)
async def test_serve_writes_an_access_log_line_per_request_when_asked(tmp_path: Path) -> None:
    config = write_config(tmp_path, tmp_path / "countersign.sqlite", server="access_log = true\n")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    async with (
        running_local_slack(BOT_TOKEN) as (_, slack_url),
        aiohttp.ClientSession() as http,
    ):
        server = await start(
            tmp_path, config, port, {**os.environ, **ENV, "SLACK_API_URL": slack_url}
        )
        try:
            await wait_until_healthy(http, url, server)
            async with http.get(f"{url}/v1/proposals/cs_nothing") as response:
                assert response.status == 401  # no token: refused, and logged all the same
        finally:
            server.process.send_signal(signal.SIGTERM)
            await asyncio.wait_for(server.process.wait(), timeout=STOP_SECONDS)

    lines = [
        json.loads(line) for line in server.err.read_text().splitlines() if line.startswith("{")
    ]
    access = [line for line in lines if line["logger"] == "aiohttp.access"]
    assert any('"GET /v1/proposals/cs_nothing HTTP/1.1" 401' in line["message"] for line in access)


@pytest.mark.timeout(60)
async def test_a_clean_start_and_stop_print_only_countersigns_own_structured_lines(
    tmp_path: Path,
) -> None:
    config = write_config(tmp_path, tmp_path / "countersign.sqlite")
    port = free_port()
    async with (
        running_local_slack(BOT_TOKEN) as (_, slack_url),
        aiohttp.ClientSession() as http,
    ):
        server = await start(
            tmp_path, config, port, {**os.environ, **ENV, "SLACK_API_URL": slack_url}
        )
        try:
            await wait_until_healthy(http, f"http://127.0.0.1:{port}", server)
        finally:
            server.process.send_signal(signal.SIGTERM)
            code = await asyncio.wait_for(server.process.wait(), timeout=STOP_SECONDS)

    assert code == 0, server.output()
    assert server.out.read_text() == "", server.output()  # no "Running on" banner
    lines = [json.loads(line) for line in server.err.read_text().splitlines()]  # all JSON
    assert {line["logger"].split(".")[0] for line in lines} == {"bot"}, server.output()
    messages = [line["message"] for line in lines]
    assert not [m for m in messages if "`token` will be unused" in m]  # bolt's, meaningless here
    assert f"Countersign listening on http://127.0.0.1:{port}" in messages
    assert messages[-2:] == [
        "Countersign stopping: finishing the requests under way",
        "Countersign stopped",
    ]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("offline", [[], ["--allow-offline"]], ids=["", "allow-offline"])
async def test_serve_with_postgresql_unreachable_says_so_in_one_line_and_exits_2(
    tmp_path: Path, offline: list[str]
) -> None:
    closed = free_port()  # nothing listens there: PostgreSQL refuses every connection
    config = tmp_path / "countersign.toml"
    text = config_text("http://127.0.0.1:9")
    store = f'[store]\nurl = "postgresql://postgres@127.0.0.1:{closed}/test"\n'
    config.write_text(f"{text}\n{store}", encoding="utf-8")
    env = {**os.environ, **ENV, "SLACK_API_URL": "http://127.0.0.1:9/api/"}

    code, out = await run_cli(config, env, "serve", "--port", str(free_port()), *offline)

    assert code == 2, out
    problems = [line for line in out.splitlines() if not line.startswith("{")]
    [problem] = problems  # one line, no traceback
    assert problem.startswith(
        "countersign serve cannot start: cannot open PostgreSQL database "
        f"postgresql://postgres@127.0.0.1:{closed}/test: cannot reach PostgreSQL: "
    ), out
