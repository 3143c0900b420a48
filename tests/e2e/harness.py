"""A running Countersign over real HTTP: SQLite file, local Slack, an execution target.

Everything talks over loopback the way it would in production: agents POST to the agent API,
Slack interactions are real payload bodies signed with the signing secret, Countersign calls
the local Slack Web API and the webhook target.
"""

from __future__ import annotations

import asyncio
import json
import re
import textwrap
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import aiosqlite
from aiohttp import web
from aiohttp.test_utils import TestServer
from slack_sdk.http_retry.builtin_interval_calculators import (
    FixedValueRetryIntervalCalculator,
)

from bot.api.proposals import SERVICE
from bot.app import DECISIONS, OUTBOX, build_app
from bot.flow.destinations import Resolve, system_resolve
from bot.settings import load_settings
from bot.slack.local import LocalSlack, running_local_slack
from bot.slack.local_socket import LocalSocketMode
from store.open import open_store
from store.rows import db_time
from store.sqlite import SqliteStore
from tests.resend import resent_while_busy
from tests.slack_requests import block_action_body, signed_headers, view_submission_body

SIGNING_SECRET = "e2e-signing-secret-0123456789abcdef"
BOT_TOKEN = "xoxb-e2e-bot-token"
AGENT_TOKEN = "agent-token-support-bot-0123456789"
OTHER_AGENT_TOKEN = "agent-token-ops-bot-9876543210abc"
WEBHOOK_SECRET = "webhook-secret-for-the-crm-target"

REQUESTER = "U0REQUESTER"  #: accountable human; also holds the finance role
APPROVER = "U0APPROVER"  #: finance
APPROVER_2 = "U0APPROVER2"  #: finance
OUTSIDER = "U0OUTSIDER"  #: holds no approver role
#: a Slack user group in the finance role (empty unless a test fills it)
FINANCE_GROUP = "S0FINANCE"
REFUNDS_CHANNEL = "C0REFUNDS"
CAMPAIGN_CHANNEL = "C0CAMPAIGNS"
ESCALATION_CHANNEL = "C0ESCALATIONS"  #: the default escalation route
LEGAL_CHANNEL = "C0LEGAL"  #: escalations on the reserved topic "legal"
#: Where the agents' callback endpoints live, on the target's server (their callback_url_prefixes;
#: loopback, so the agents are configured with callback_allow_private)
AGENT_HOOKS = "/agent-hooks"


class FakeClock:
    """The app's clock: starts at real time (Slack signatures use it too) and can jump ahead."""

    def __init__(self) -> None:
        self.offset = timedelta()

    def __call__(self) -> datetime:
        return datetime.now(UTC) + self.offset

    def advance(self, delta: timedelta) -> None:
        self.offset += delta


@dataclass
class Target:
    """The webhook operation's execution target: records requests, answers as scripted."""

    requests: list[dict[str, Any]] = field(default_factory=list)
    #: the agents' callback endpoints under AGENT_HOOKS, by name (never in ``requests``)
    hooks: dict[str, Callable[[web.Request], Awaitable[web.StreamResponse]]] = field(
        default_factory=dict
    )
    status: int = 200
    body: dict[str, Any] = field(default_factory=lambda: {"campaign_id": "cmp_1", "queued": True})
    delay: float = 0.0
    #: (seconds, status) for the next requests, one each in order; then ``delay`` and ``status``
    answers: list[tuple[float, int]] = field(default_factory=list)

    async def hook(self, request: web.Request) -> web.StreamResponse:
        handler = self.hooks.get(request.match_info["name"])
        if handler is None:
            raise web.HTTPNotFound()
        return await handler(request)

    async def handle(self, request: web.Request) -> web.Response:
        raw = await request.read()
        self.requests.append({"path": request.path, "headers": dict(request.headers), "body": raw})
        delay, status = self.answers.pop(0) if self.answers else (self.delay, self.status)
        if delay:
            await asyncio.sleep(delay)
        return web.json_response(self.body, status=status)

    def executions(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["path"] == "/campaigns/send"]

    def taggings(self) -> list[dict[str, Any]]:
        """The executions of the reversible operation crm.tag_customers."""
        return [r for r in self.requests if r["path"] == "/customers/tag"]


def config_text(
    target_url: str, agent_settings: Mapping[str, Mapping[str, Any]] | None = None
) -> str:
    """The e2e configuration; ``agent_settings`` adds keys to agents' tables (name -> key -> value)."""
    return _with_agent_settings(_base_config_text(target_url), agent_settings or {})


def replace_rule(rule_id: str, toml: str) -> Callable[[str], str]:
    """A ``config_edit`` that replaces the ``[[policy]]`` table with id ``rule_id`` by ``toml``
    (one or more ``[[policy]]`` tables, or other tables to add at that place)."""

    def edit(text: str) -> str:
        pattern = re.compile(
            r"\[\[policy\]\]\nid = " + re.escape(json.dumps(rule_id)) + r"\n.*?(?=\n\[|\Z)", re.S
        )
        if not pattern.search(text):
            raise ValueError(f"replace_rule: no policy rule {rule_id!r} in the e2e configuration")
        return pattern.sub(lambda _: textwrap.dedent(toml).strip() + "\n", text, count=1)

    return edit


def _with_agent_settings(text: str, agent_settings: Mapping[str, Mapping[str, Any]]) -> str:
    for name, options in agent_settings.items():
        header = f"[agents.{name}]\n"
        if header not in text:
            raise ValueError(f"agent_settings: no agent {name!r} in the e2e configuration")
        start = text.index(header) + len(header)
        end = text.find("\n[", start)
        end = len(text) if end == -1 else end
        table = text[start:end].split("\n")
        for key, value in options.items():
            # JSON strings, booleans and arrays of strings are valid TOML values; a key the
            # base configuration sets already (acts_for) is replaced
            table = [f"{key} = {json.dumps(value)}"] + [
                line for line in table if not line.startswith(f"{key} = ")
            ]
        text = text[:start] + "\n".join(table) + text[end:]
    return text


def _base_config_text(target_url: str) -> str:
    return textwrap.dedent(
        f"""
        [server]
        sweep_interval_seconds = 0.05
        slack_timeout_seconds = 1
        long_poll_max_seconds = 30
        callback_attempts = 3

        [roles]
        finance = ["{REQUESTER}", "{APPROVER}", "{APPROVER_2}", "{FINANCE_GROUP}"]
        support = ["{REQUESTER}"]

        [agents.support-bot]
        token_env = "E2E_AGENT_TOKEN"
        callback_url_prefixes = ["{target_url}{AGENT_HOOKS}"]
        callback_allow_private = true
        acts_for = ["{REQUESTER}", "{APPROVER}", "{APPROVER_2}", "{OUTSIDER}"]

        [agents.ops-bot]
        token_env = "E2E_OTHER_AGENT_TOKEN"
        callback_url_prefixes = ["{target_url}{AGENT_HOOKS}"]
        callback_allow_private = true
        acts_for = ["{REQUESTER}"]

        [operations."payments.refund"]
        kind = "refund"
        payments = [
          {{ payment_id = "pay_1001", customer = "cus_ada", amount_cents = 4500, currency = "USD" }},
          {{ payment_id = "pay_1002", customer = "cus_grace", amount_cents = 120000, currency = "USD" }},
          {{ payment_id = "pay_1003", customer = "cus_alan", amount_cents = 1500, currency = "USD" }},
          {{ payment_id = "pay_1004", customer = "cus_edsger", amount_cents = 300000, currency = "USD" }},
        ]

        [operations."crm.send_campaign"]
        kind = "webhook"
        description = "Email a campaign to a customer segment"
        url = "{target_url}/campaigns/send"
        secret_env = "E2E_WEBHOOK_SECRET"
        timeout_seconds = 2
        defaults = {{ send_at = "now" }}
        request_schema = {{ type = "object", required = ["segment", "template", "recipients"], properties = {{ segment = {{ type = "string", minLength = 1 }}, template = {{ type = "string", pattern = "^tmpl_[a-z0-9_]+$" }}, recipients = {{ type = "integer", minimum = 1 }}, send_at = {{ type = "string" }} }} }}
        preview = {{ title = "Email {{recipients}} customers in segment {{segment}}", fields = [ {{ label = "Template", value = "{{template}}" }}, {{ label = "Send at", value = "{{send_at}}" }} ] }}

        [operations."crm.tag_customers"]
        kind = "webhook"
        description = "Tag the customers of a segment (a tag can be removed again)"
        url = "{target_url}/customers/tag"
        secret_env = "E2E_WEBHOOK_SECRET"
        timeout_seconds = 2
        risk = "reversible"
        request_schema = {{ type = "object", required = ["segment", "tag", "customers"], properties = {{ segment = {{ type = "string", minLength = 1 }}, tag = {{ type = "string", minLength = 1 }}, customers = {{ type = "integer", minimum = 1 }} }} }}
        preview = {{ title = "Tag {{customers}} customers in segment {{segment}} with {{tag}}" }}

        [[policy]]
        id = "small-tags"
        operation = "crm.tag_customers"
        when = [{{ field = "customers", lte = 100 }}]
        decision = "auto"

        [[policy]]
        id = "refunds"
        operation = "payments.refund"
        when = [{{ field = "amount_cents", lte = 200000 }}]
        decision = "ask"
        approvers = ["finance"]
        channel = "{REFUNDS_CHANNEL}"
        expires_after = "1h"

        [[policy]]
        id = "huge-refunds"
        operation = "payments.refund"
        decision = "deny"
        reason = "Refunds over 2,000.00 go through the manual process."

        [[policy]]
        id = "campaigns"
        operation = "crm.send_campaign"
        decision = "ask"
        approvers = ["finance"]
        channel = "{CAMPAIGN_CHANNEL}"
        expires_after = "30m"

        [escalation]
        repeated_failure_turns = 3
        sentiment_threshold = -0.5
        reserved_topics = ["legal", "safety"]
        confidence_threshold = 0.4
        reannounce_after = "10m"
        responders = ["finance"]
        routes = [
          {{ topic = "legal", channel = "{LEGAL_CHANNEL}" }},
          {{ channel = "{ESCALATION_CHANNEL}" }},
        ]
        """
    )


ENV = {
    "E2E_AGENT_TOKEN": AGENT_TOKEN,
    "E2E_OTHER_AGENT_TOKEN": OTHER_AGENT_TOKEN,
    "E2E_WEBHOOK_SECRET": WEBHOOK_SECRET,
    "SLACK_BOT_TOKEN": BOT_TOKEN,
    "SLACK_SIGNING_SECRET": SIGNING_SECRET,
}


@dataclass
class Countersign:
    url: str
    slack: LocalSlack
    target: Target
    clock: FakeClock
    store: SqliteStore
    app: web.Application
    http: aiohttp.ClientSession
    db_path: Path
    #: the execution target's server, which also serves the agents' callback endpoints
    target_url: str = ""

    @property
    def service(self) -> Any:
        return self.app[SERVICE]

    def agent_hook(
        self, name: str, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> str:
        """Serve an agent's callback endpoint; its URL (under the agents' callback prefix)."""
        self.target.hooks[name] = handler
        return f"{self.target_url}{AGENT_HOOKS}/{name}"

    # --- the agent's side ----------------------------------------------------------------------

    async def submit(
        self,
        body: dict[str, Any] | bytes,
        *,
        token: str | None = AGENT_TOKEN,
        key: str | None = None,
    ) -> tuple[int, dict[str, Any]]:
        """The agent's submission; sent again while Countersign answers busy, as an agent's
        client does (tests/resend.py)."""
        headers = {"Content-Type": "application/json"}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        if key is not None:
            headers["Idempotency-Key"] = key
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        answer = await self.agent_request("POST", "/v1/proposals", data=data, headers=headers)
        return answer.status, answer.json()

    async def read(
        self, proposal_id: str, *, wait: float | None = None, token: str = AGENT_TOKEN
    ) -> tuple[int, dict[str, Any]]:
        params = {} if wait is None else {"wait": str(wait)}
        headers = {"Authorization": f"Bearer {token}"}
        async with self.http.get(
            f"{self.url}/v1/proposals/{proposal_id}", params=params, headers=headers
        ) as r:
            return r.status, await r.json(content_type=None)

    # --- the approver's side -------------------------------------------------------------------

    async def post_slack(self, body: str, headers: dict[str, str] | None = None) -> int:
        headers = headers if headers is not None else signed_headers(SIGNING_SECRET, body)
        async with self.http.post(f"{self.url}/slack/events", data=body, headers=headers) as r:
            await r.read()
            return r.status

    async def click(self, user: str, action_id: str, proposal_id: str) -> int:
        # a message can be in Slack a moment before the store records where it is
        try:
            proposal = await self.posted(proposal_id)
        except AssertionError:
            raise AssertionError("the proposal was never posted") from None
        assert proposal.slack_channel and proposal.slack_ts, "the proposal was never posted"
        body = block_action_body(
            user_id=user,
            action_id=action_id,
            value=proposal_id,
            channel_id=proposal.slack_channel,
            message_ts=proposal.slack_ts,
            trigger_id=self.slack.issue_trigger(user),
        )
        return await self.post_slack(body)

    async def submit_reason(self, user: str, proposal_id: str, reason: str) -> int:
        body = view_submission_body(
            user_id=user,
            callback_id="reject_reason",
            private_metadata=proposal_id,
            values={"reason": {"reason": reason}},
        )
        return await self.post_slack(body)

    async def posted(self, proposal_id: str) -> Any:
        """Wait until the proposal's Slack message exists; return the stored proposal."""

        async def check() -> Any:
            proposal = await self.store.get_proposal(proposal_id)
            return proposal if proposal.slack_ts else None

        return await eventually(check)

    async def settled(self) -> None:
        """Wait for the app's background work (Slack updates, callbacks) to finish."""
        await eventually(self._idle)

    async def _idle(self) -> bool:
        """Nothing in the outboxes is due now, and no delivery is under way."""
        if self.app[DECISIONS].answering:  # clicks acknowledged, not yet recorded or refused
            return False
        if await self.store.clicks().waiting_clicks():  # recorded clicks not yet applied
            return False
        outbox = self.app[OUTBOX]
        # our own round finds nothing due, and no other round is claiming or delivering
        if await outbox.run_once() != 0 or outbox.in_flight != 0:
            return False
        # An entry waiting behind one another round delivered meanwhile is due but was not
        # claimable when we looked: count what is due (leased or waiting) in the database.
        return await self._due_entries() == 0

    async def _due_entries(self) -> int:
        """Undelivered entries due now, leased or not, except those waiting behind an entry of
        their lane that is scheduled for a later retry."""
        now = db_time(self.clock(), field="now")
        total = 0
        async with aiosqlite.connect(f"file:{self.db_path}?mode=ro", uri=True) as db:
            for table, key in (("outbox", "proposal_id"), ("escalation_outbox", "escalation_id")):
                query = f"""
                    SELECT count(*) FROM {table} AS o
                    WHERE o.delivered_at IS NULL AND o.abandoned_at IS NULL
                      AND o.next_attempt_at <= :now
                      AND NOT EXISTS (
                          SELECT 1 FROM {table} AS e
                          WHERE e.{key} = o.{key} AND e.lane = o.lane AND e.id < o.id
                            AND e.delivered_at IS NULL AND e.abandoned_at IS NULL
                            AND e.next_attempt_at > :now)
                """
                async with db.execute(query, {"now": now}) as cursor:
                    row = await cursor.fetchone()
                total += int(row[0]) if row is not None else 0
        return total

    # --- raw HTTP and inspection -----------------------------------------------------------------

    async def request(
        self,
        method: str,
        path: str,
        *,
        data: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        params: Mapping[str, str] | None = None,
    ) -> Answer:
        """Any request to the app, sent exactly as given; the whole answer comes back."""
        async with self.http.request(
            method, f"{self.url}{path}", data=data, headers=headers, params=params
        ) as r:
            return Answer(r.status, r.headers.copy(), await r.read())

    async def agent_request(
        self,
        method: str,
        path: str,
        *,
        data: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        params: Mapping[str, str] | None = None,
    ) -> Answer:
        """As :meth:`request`, sent again as an agent's client sends it while Countersign
        answers busy (tests/resend.py)."""
        return await resent_while_busy(
            lambda: self.request(method, path, data=data, headers=headers, params=params)
        )

    async def proposal_count(self) -> int:
        """Rows in the proposals table, read through a separate read-only connection."""
        async with (
            aiosqlite.connect(f"file:{self.db_path}?mode=ro", uri=True) as db,
            db.execute("SELECT count(*) FROM proposals") as cursor,
        ):
            row = await cursor.fetchone()
        assert row is not None
        return int(row[0])

    async def traced(self) -> list[str]:
        """Every SQL statement the app's store runs from now on, on any of its connections (the
        writer and each reader), as SQLite reports it: what reached the store, counted."""
        seen: list[str] = []
        for db in (self.store._db, *self.store._all_readers):
            await db.worker.set_trace_callback(seen.append)
        return seen

    def fast_slack_retries(self, interval: float = 0.01) -> None:
        """Shorten the backoff between retries of transient failures (Slack 5xx, callbacks).

        429 retries still wait for the Retry-After the local Slack sends.
        """
        for handler in self.service.publisher.client.retry_handlers:
            handler.interval_calculator = FixedValueRetryIntervalCalculator(interval)
        self.app[OUTBOX].policy.base_delay = interval


@dataclass(frozen=True)
class Answer:
    """One HTTP answer: status, headers (case-insensitive), raw body."""

    status: int
    headers: Mapping[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


async def eventually(
    check: Callable[[], Awaitable[Any]], *, timeout: float = 10.0, interval: float = 0.02
) -> Any:
    """Poll ``check`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        result = await check()
        if result:
            return result
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"condition not met within {timeout} s: {check}")
        await asyncio.sleep(interval)


@asynccontextmanager
async def running_countersign(
    tmp_path: Path,
    *,
    env: dict[str, str] | None = None,
    agent_settings: Mapping[str, Mapping[str, Any]] | None = None,
    socket_mode: LocalSocketMode | None = None,
    usergroups_allowed: bool = True,
    config_edit: Callable[[str], str] | None = None,
    resolve: Resolve | None = None,
    allow_offline: bool = False,
    store_url: str | None = None,
) -> AsyncIterator[Countersign]:
    """The app, the local Slack and the target, running; with ``socket_mode``, Slack
    interactions go over a WebSocket (``SLACK_APP_TOKEN`` set) instead of ``/slack/events``.
    ``config_edit`` rewrites the configuration text first (a test's own policy rules or
    settings; see :func:`replace_rule`); ``resolve`` answers the app's DNS lookups of callback
    hosts (the system resolver otherwise); ``allow_offline`` starts it although Slack refuses
    its bot token (``serve --allow-offline``); ``store_url`` opens that store (a PostgreSQL
    one, say) instead of a SQLite file in ``tmp_path``."""
    if socket_mode is not None:
        env = {"SLACK_APP_TOKEN": socket_mode.app_token, **(env or {})}
    target = Target()
    target_app = web.Application()
    target_app.router.add_route("*", AGENT_HOOKS + "/{name}", target.hook)
    target_app.router.add_route("*", "/{tail:.*}", target.handle)
    target_server = TestServer(target_app, host="127.0.0.1")
    await target_server.start_server()
    target_url = str(target_server.make_url("")).rstrip("/")
    local = LocalSlack(token=BOT_TOKEN)
    local.set_usergroup(FINANCE_GROUP, [])
    local.usergroups_allowed = usergroups_allowed
    async with running_local_slack(slack=local, socket_mode=socket_mode) as (slack, slack_url):
        config = tmp_path / "countersign.toml"
        text = config_text(target_url, agent_settings)
        config.write_text(config_edit(text) if config_edit is not None else text)
        settings = load_settings(config, {**ENV, "SLACK_API_URL": slack_url, **(env or {})})
        db_path = tmp_path / "countersign.sqlite"
        store = await (SqliteStore.open(db_path) if store_url is None else open_store(store_url))
        clock = FakeClock()
        app = build_app(
            settings,
            store,
            clock=clock,
            resolve=resolve or system_resolve,
            allow_offline=allow_offline,
        )
        server = TestServer(app, host="127.0.0.1")
        try:
            await server.start_server()
            async with aiohttp.ClientSession() as http:
                yield Countersign(
                    url=str(server.make_url("")).rstrip("/"),
                    slack=slack,
                    target=target,
                    clock=clock,
                    store=store,
                    app=app,
                    http=http,
                    db_path=db_path,
                    target_url=target_url,
                )
        finally:
            await server.close()
            await store.close()
            await target_server.close()
