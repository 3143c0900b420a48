"""Several real `countersign serve` processes on one real PostgreSQL database.

Each test gets a database of its own (``cs_<random>`` on the server at 127.0.0.1:5432), dropped
afterwards. The instances are subprocesses (``python -m bot.cli serve``) that share it, one local
Slack and one execution target, both served by the test process on loopback. Agents and
approvers are played by the test over HTTP: submissions with the agent's bearer token, clicks as
Slack's signed ``block_actions`` payloads.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import secrets
import signal
import socket
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg
from aiohttp import web

from bot.slack.local import LocalSlack, running_local_slack
from store.postgres import PostgresStore
from store.proposals import Status
from tests.e2e.harness import (
    AGENT_TOKEN,
    APPROVER,
    APPROVER_2,
    BOT_TOKEN,
    CAMPAIGN_CHANNEL,
    ENV,
    FINANCE_GROUP,
    REQUESTER,
    SIGNING_SECRET,
    Answer,
    config_text,
)
from tests.resend import resent_while_busy
from tests.slack_requests import block_action_body, signed_headers

__all__ = [
    "ADMIN_URL",
    "APPROVERS",
    "CAMPAIGN_CHANNEL",
    "ENV",
    "TRACEBACK",
    "Cluster",
    "CountingTarget",
    "Instance",
    "campaign",
    "click",
    "env_size",
    "fresh_database",
    "on_course",
    "posted_messages",
    "running_cluster",
    "running_target",
    "scale_config",
    "status_counts",
    "submit",
    "undelivered",
    "wait_for",
]

REPO = Path(__file__).parents[2]
ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/test"
STARTUP_SECONDS = 30.0
STOP_SECONDS = 10.0

#: Members of the campaigns rule's role who are not the accountable human.
APPROVERS = (APPROVER, APPROVER_2)

#: What the processes must never log; a SIGKILL leaves no traceback, a bug does.
TRACEBACK = "Traceback"


def env_size(name: str, default: int, *, at_least: int = 1) -> int:
    """A size a person may raise by hand with an environment variable.

    Read at import (collection): the autouse fixture scrubs ``COUNTERSIGN_*`` before tests run.
    """
    raw = os.environ.get(name, str(default))
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name}: expected a whole number, got {raw!r}") from None
    if value < at_least:
        raise ValueError(f"{name}: expected at least {at_least}, got {value}")
    return value


# --- the database -------------------------------------------------------------------------------


@asynccontextmanager
async def fresh_database() -> AsyncIterator[str]:
    """A new, empty database on the test server; yields its URL, drops it afterwards."""
    name = f"cs_{secrets.token_hex(6)}"
    admin = await asyncpg.connect(ADMIN_URL)
    try:
        for attempt in range(20):  # CREATE DATABASE fails while another one copies template1
            try:
                await admin.execute(f'CREATE DATABASE "{name}"')
                break
            except asyncpg.ObjectInUseError:
                if attempt == 19:
                    raise
                await asyncio.sleep(0.2)
        yield f"postgresql://postgres@127.0.0.1:5432/{name}"
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


def scale_config(
    store_url: str, target_url: str, *, digests: bool = False, **server: float | int
) -> str:
    """The e2e configuration on ``store_url``, with ``server`` settings replacing its own.

    Without ``digests`` each proposal keeps its own message (most tests click and count them
    one by one); with it, similar proposals due together share a digest message."""
    text = config_text(target_url).replace(
        "\ntimeout_seconds = 2\n", f"\ntimeout_seconds = {EXECUTION_TIMEOUT_SECONDS}\n"
    )
    assert "\ntimeout_seconds = 2\n" not in text
    head, rest = text.split("[server]\n", 1)
    lines, _, tail = rest.partition("\n\n")
    kept = {line.split(" = ", 1)[0]: line for line in lines.splitlines()}
    kept.update({key: f"{key} = {value}" for key, value in server.items()})
    body = "\n".join(kept.values())
    slack = f"[slack]\ndigests = {'true' if digests else 'false'}\n"
    return f'{head}[server]\n{body}\n\n{tail}\n[store]\nurl = "{store_url}"\n\n{slack}\n{UNLIMITED}'


#: How long an execution may wait for the target. The e2e configuration's 2 s is meant for
#: one proposal at a time; these tests keep thousands of clicks in flight on purpose, and an
#: instance that busy may read the target's prompt answer seconds late. Its webhook then times
#: out and the proposal (rightly) needs reconciliation, which these tests are not about: the
#: crash loop covers that outcome, tests/e2e the timeout itself.
EXECUTION_TIMEOUT_SECONDS = 60

#: The scale tests drive one agent far past its default per-agent limits on purpose (they
#: measure the instances, not the quota): raised out of the way.
UNLIMITED = """[limits]
max_pending_proposals = 10000000
submissions_per_second = 1000000
submissions_burst = 10000000
reads_per_second = 1000000
reads_burst = 10000000
max_long_polls = 100000
max_open_escalations = 1000000
"""


# --- the server processes -----------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class Instance:
    """One `countersign serve` process, restartable on the same port; logs kept across runs."""

    def __init__(self, name: str, config: Path, env: Mapping[str, str], logs: Path) -> None:
        self.name = name
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._config = config
        self._env = dict(env)
        self._out = logs / f"{name}.stdout"
        self._err = logs / f"{name}.stderr"
        self._process: asyncio.subprocess.Process | None = None
        self.starts = 0
        self.kills = 0

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.returncode is None

    async def start(self) -> None:
        """Start the process and wait until it answers /healthz."""
        with self._out.open("ab") as stdout, self._err.open("ab") as stderr:
            self._process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "bot.cli",
                "--config",
                str(self._config),
                "serve",
                "--port",
                str(self.port),
                env=self._env,
                cwd=REPO,
                stdout=stdout,
                stderr=stderr,
            )
        self.starts += 1
        await self._wait_until_healthy()

    async def _wait_until_healthy(self) -> None:
        deadline = asyncio.get_running_loop().time() + STARTUP_SECONDS
        async with aiohttp.ClientSession() as http:
            while asyncio.get_running_loop().time() < deadline:
                if not self.running:
                    raise AssertionError(f"{self.name} exited while starting\n{self.output()}")
                with contextlib.suppress(aiohttp.ClientError, OSError):
                    async with http.get(f"{self.url}/healthz") as answer:
                        if answer.status == 200:
                            return
                await asyncio.sleep(0.05)
        raise AssertionError(f"{self.name} did not answer in {STARTUP_SECONDS} s\n{self.output()}")

    async def kill(self) -> None:
        """SIGKILL: no cleanup, no goodbye; whatever was in flight is cut off."""
        assert self._process is not None and self.running, f"{self.name} is not running"
        self._process.send_signal(signal.SIGKILL)
        await self._process.wait()
        self.kills += 1

    async def stop(self) -> None:
        """SIGTERM, then SIGKILL if it does not stop in time."""
        process = self._process
        if process is None or process.returncode is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(process.wait(), timeout=STOP_SECONDS)
        except TimeoutError:
            process.kill()
            await process.wait()

    def stderr(self) -> str:
        return self._err.read_text(errors="replace") if self._err.exists() else ""

    def output(self) -> str:
        return f"--- {self.name} stderr (last 6000 characters) ---\n{self.stderr()[-6000:]}"


# --- the execution target -----------------------------------------------------------------------


@dataclass
class CountingTarget:
    """The webhook operation's target: counts executions per Idempotency-Key, on arrival."""

    delay: tuple[float, float] = (0.0, 0.0)  #: each execution takes a time in this range
    executions: Counter[str] = field(default_factory=Counter)
    held: asyncio.Event | None = None  #: when set, executions wait for it before answering
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    async def handle(self, request: web.Request) -> web.Response:
        key = request.headers.get("Idempotency-Key", "")
        self.executions[key] += 1  # counted before answering: a cut-off caller still counts
        self.arrived.set()
        await request.read()
        if self.held is not None:
            await self.held.wait()
        low, high = self.delay
        if high > 0:
            await asyncio.sleep(random.uniform(low, high))
        return web.json_response({"campaign_id": f"cmp_{key[-8:]}", "queued": True})

    def twice(self) -> dict[str, int]:
        """Idempotency keys executed more than once."""
        return {key: n for key, n in self.executions.items() if n > 1}


@asynccontextmanager
async def running_target(target: CountingTarget) -> AsyncIterator[str]:
    app = web.Application()
    app.router.add_post("/campaigns/send", target.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    try:
        yield f"http://{host}:{port}"
    finally:
        await runner.cleanup()


# --- everything together ------------------------------------------------------------------------


@dataclass
class Cluster:
    """The instances, what they share, and a store of the test's own on their database."""

    db_url: str
    slack: LocalSlack
    target: CountingTarget
    instances: list[Instance]
    store: PostgresStore
    http: aiohttp.ClientSession

    def instance(self, i: int) -> Instance:
        """Instances taken in turn: the i-th request goes to instance i mod their number."""
        return self.instances[i % len(self.instances)]

    def tracebacks(self) -> dict[str, str]:
        """The output of every instance that logged a traceback."""
        return {i.name: i.output() for i in self.instances if TRACEBACK in i.stderr()}


@asynccontextmanager
async def running_cluster(
    tmp_path: Path,
    *,
    target: CountingTarget | None = None,
    slack: LocalSlack | None = None,
    instances: int = 2,
    digests: bool = False,
    config_edit: Callable[[str], str] | None = None,
    **server: float | int,
) -> AsyncIterator[Cluster]:
    """``instances`` serve processes on a fresh database, started at once; stopped afterwards.

    ``server`` settings replace the e2e configuration's ([server] table); ``config_edit``
    rewrites the configuration text after that (tests/e2e/harness.py replace_rule).
    """
    target = target or CountingTarget()
    # message timestamps follow the clock, as Slack's do: searches by `oldest` then work
    if slack is None:
        slack = LocalSlack(token=BOT_TOKEN, wall_clock=time.time)
        slack.set_usergroup(FINANCE_GROUP, [])  # the configuration's finance role names it
    async with (
        fresh_database() as db_url,
        running_target(target) as target_url,
        running_local_slack(BOT_TOKEN, slack=slack) as (local_slack, slack_url),
    ):
        config = tmp_path / "countersign.toml"
        text = scale_config(db_url, target_url, digests=digests, **server)
        config.write_text(config_edit(text) if config_edit else text, encoding="utf-8")
        env = {**os.environ, **ENV, "SLACK_API_URL": slack_url}
        nodes = [Instance(f"instance-{n}", config, env, tmp_path) for n in range(instances)]
        try:
            # started together, so their migrations race: the advisory lock must hold
            await asyncio.gather(*(node.start() for node in nodes))
            store = await PostgresStore.open(db_url, max_size=4)
            try:
                async with aiohttp.ClientSession() as http:
                    yield Cluster(db_url, local_slack, target, nodes, store, http)
            finally:
                await store.close()
        finally:
            await asyncio.gather(*(node.stop() for node in nodes))


# --- agents and approvers -----------------------------------------------------------------------


def campaign(i: int) -> dict[str, Any]:
    """The i-th proposal of a run: a campaign the policy asks finance about."""
    return {
        "operation": "crm.send_campaign",
        "request": {"segment": f"segment-{i}", "template": "tmpl_scale", "recipients": i + 1},
        "requested_by": REQUESTER,
        "reason": f"Scale test proposal {i}.",
    }


async def submit(
    http: aiohttp.ClientSession, url: str, body: dict[str, Any], key: str
) -> tuple[int, dict[str, Any]]:
    """The agent's submission to the instance at ``url``; sent again, with the same key, while
    that instance answers busy, as an agent's client does (tests/resend.py)."""
    headers = {"Authorization": f"Bearer {AGENT_TOKEN}", "Idempotency-Key": key}

    async def once() -> Answer:
        async with http.post(f"{url}/v1/proposals", json=body, headers=headers) as answer:
            return Answer(answer.status, answer.headers.copy(), await answer.read())

    answer = await resent_while_busy(once)
    return answer.status, answer.json()


async def click(
    http: aiohttp.ClientSession,
    url: str,
    *,
    user: str,
    proposal_id: str,
    channel: str,
    ts: str,
    action_id: str = "approve",
) -> int:
    """One signed Approve click, as Slack POSTs it to /slack/events."""
    body = block_action_body(
        user_id=user, action_id=action_id, value=proposal_id, channel_id=channel, message_ts=ts
    )
    async with http.post(
        f"{url}/slack/events", data=body, headers=signed_headers(SIGNING_SECRET, body)
    ) as answer:
        await answer.read()
        return answer.status


def posted_messages(slack: LocalSlack, channel: str = CAMPAIGN_CHANNEL) -> Counter[str]:
    """How many top-level messages in ``channel`` carry each proposal id in their metadata."""
    found: Counter[str] = Counter()
    for message in slack.messages(channel):
        if message.is_reply or message.metadata is None:
            continue
        proposal_id = (message.metadata.get("event_payload") or {}).get("proposal_id")
        if proposal_id:
            found[str(proposal_id)] += 1
    return found


async def wait_for(
    check: Any,
    *,
    timeout: float,
    interval: float = 0.2,
    what: str = "",
    explain: Any = None,
) -> Any:
    """Poll the coroutine function ``check`` until it returns something truthy.

    ``explain``, a coroutine function, says on a timeout what was still missing."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        result = await check()
        if result:
            return result
        if asyncio.get_running_loop().time() > deadline:
            missing = f"; {await explain()}" if explain is not None else ""
            raise AssertionError(f"not within {timeout} s: {what or check}{missing}")
        await asyncio.sleep(interval)


#: The statuses a proposal passes through on its way to success in these tests.
ON_COURSE = frozenset({Status.PENDING, Status.EXECUTING, Status.SUCCEEDED})


def on_course(counts: Counter[str]) -> None:
    """Fail at once, rather than at a wait's deadline, when a proposal ended any other way."""
    strayed = {status: n for status, n in counts.items() if status not in ON_COURSE}
    assert not strayed, f"proposals that will never succeed: {strayed} (all: {dict(counts)})"


async def undelivered(db_url: str) -> list[dict[str, Any]]:
    """The outbox entries not delivered (nor given up), for failure messages."""
    db = await asyncpg.connect(db_url)
    try:
        rows = await db.fetch(
            "SELECT id, proposal_id, effect, status, attempts, next_attempt_at, leased_until,"
            " last_error FROM outbox WHERE delivered_at IS NULL AND abandoned_at IS NULL"
            " ORDER BY id"
        )
    finally:
        await db.close()
    return [dict(row) for row in rows]


async def status_counts(db_url: str) -> Counter[str]:
    """Proposals per status, straight from the database."""
    db = await asyncpg.connect(db_url)
    try:
        rows = await db.fetch("SELECT status, count(*) AS n FROM proposals GROUP BY status")
    finally:
        await db.close()
    return Counter({row["status"]: row["n"] for row in rows})
