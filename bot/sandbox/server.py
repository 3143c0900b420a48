"""``countersign sandbox``: the real Countersign, a local Slack and a page showing it, one process.

Two HTTP servers run on loopback:

- the sandbox (``--port``): the page and its JSON endpoints, the local Slack Web API at
  ``/slack/api/<method>`` (:mod:`bot.slack.local`, the one the tests use), and the demo execution
  target at ``/demo-target/``;
- Countersign itself (``--api-port``), built by :func:`bot.app.build_app` from the demo
  configuration with a SQLite store: the agent API and the Slack request URL ``/slack/events``.

Countersign talks to the local Slack through ``SLACK_API_URL``; the page's clicks reach it as
signed Slack payloads over HTTP (:mod:`bot.sandbox.forwarder`). Nothing in it knows it is in a
sandbox.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import shlex
import socket
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import aiohttp
from aiohttp import web
from aiohttp.abc import AbstractAccessLogger

from bot.app import build_app
from bot.sandbox.demo import (
    AGENT,
    CHANNELS,
    DEMO_PROPOSALS,
    PEOPLE,
    REQUESTER,
    SCENARIOS,
    DemoRefused,
    Secrets,
    demo_config_text,
)
from bot.sandbox.forwarder import SlackForwarder
from bot.sandbox.page import TOKEN_VARIABLE, page_app
from bot.sandbox.target import DemoTarget
from bot.settings import ConfigError, Settings, load_settings
from bot.slack.local import LocalSlack, LocalUser
from store.open import open_store
from store.protocol import Store

__all__ = ["USER_AGENT", "Escalated", "Sandbox", "Submission", "running_sandbox"]

#: The sandbox's own requests to Countersign (the page's polling, forwarded clicks) say so.
USER_AGENT: Final = "countersign-sandbox"


@dataclass
class Submission:
    """A proposal of the demo agent (submitted from the sandbox, with the printed curl or client,
    or an approver's edit), and the agent API's latest answer about it."""

    label: str  #: where it came from: a demo path, "your agent" or "an edit"
    id: str
    answer: dict[str, Any]

    def summary(self) -> dict[str, Any]:
        """What the page's agent panel shows of it: everything as the agent API says it now."""
        answer = self.answer
        outcome = answer.get("outcome") or {}
        policy = answer.get("policy") or {}
        preview = answer.get("preview") or {}
        decision = answer.get("decision") or {}
        return {
            "label": self.label,
            "id": answer.get("id", self.id),
            "status": answer.get("status"),
            "operation": answer.get("operation"),
            "title": preview.get("title"),
            "decision": policy.get("decision"),
            "rule": policy.get("rule_id"),
            "note": policy.get("note"),
            "created_at": answer.get("created_at"),
            "expires_at": answer.get("expires_at"),
            "shown_after": answer.get("shown_after"),
            "decided_by": decision.get("by"),
            "outcome": outcome.get("kind"),
            "superseded_by": answer.get("superseded_by"),
        }


@dataclass
class Escalated:
    """An escalation the demo agent raised from the sandbox, and the API's latest answer."""

    id: str
    answer: dict[str, Any]

    def summary(self) -> dict[str, Any]:
        answer = self.answer
        return {
            "id": self.id,
            "status": answer.get("status"),
            "goal": (answer.get("summary") or {}).get("goal"),
            "owner": answer.get("owner"),
            "note": answer.get("note"),
            "handed_off": answer.get("handed_off"),
        }


@dataclass
class Sandbox:
    url: str  #: the page
    api_url: str  #: Countersign: the agent API and /slack/events
    slack: LocalSlack
    secrets: Secrets
    settings: Settings
    data_dir: Path
    forwarder: SlackForwarder
    target: DemoTarget
    session: aiohttp.ClientSession
    store: Store
    submissions: list[Submission] = field(default_factory=list)
    escalations: list[Escalated] = field(default_factory=list)
    _audit_seen: int = 0  #: the audit log's last entry already read for new proposals

    # --- the agent's side -------------------------------------------------------------------------

    async def submit_demo(self) -> list[Submission]:
        """Submit one proposal for every path of the demo policy, through the real agent API."""
        batch = secrets.token_hex(3)
        made = []
        for number, demo in enumerate(DEMO_PROPOSALS, start=1):
            body = {**demo.body, "run_id": f"sandbox-demo-{batch}-{number}"}
            status, answer = await self._agent_call("POST", "/v1/proposals", body)
            if status not in (200, 201):
                raise DemoRefused(
                    f"the agent API answered {status} to demo proposal {demo.label!r}: {answer}"
                )
            made.append(self._record(Submission(demo.label, str(answer["id"]), answer)))
        return made

    async def submit_scenario(self, name: str) -> list[Submission]:
        """Submit one of the demo's other stories (:data:`bot.sandbox.demo.SCENARIOS`): similar
        refunds due together (a digest), an escalation, an execution left uncertain."""
        scenario = SCENARIOS.get(name)
        if scenario is None:
            raise DemoRefused(f"no scenario {name!r} (there are: {', '.join(SCENARIOS)})")
        batch = secrets.token_hex(3)
        made = []
        for number, demo in enumerate(scenario, start=1):
            body = {**demo.body, "run_id": f"sandbox-{name}-{batch}-{number}"}
            if demo.path == "/v1/escalations":
                body = {**demo.body, "conversation_id": f"sandbox-{batch}-{number}"}
            status, answer = await self._agent_call("POST", demo.path, body)
            if status not in (200, 201):
                raise DemoRefused(f"the agent API answered {status} to {demo.label!r}: {answer}")
            if demo.path == "/v1/escalations":
                self.escalations.append(Escalated(str(answer["id"]), answer))
            else:
                made.append(self._record(Submission(demo.label, str(answer["id"]), answer)))
        return made

    async def agent_view(self) -> list[dict[str, Any]]:
        """Every proposal of the demo agent as the agent API shows it now (newest first): those
        the sandbox submitted, and those the audit log says the agent submitted otherwise (the
        printed curl or client, an approver's edit)."""
        await self._discover()
        for submission in self.submissions:
            if not submission.answer.get("final"):
                status, answer = await self._agent_call("GET", f"/v1/proposals/{submission.id}")
                if status == 200:
                    submission.answer = answer
        newest = sorted(
            self.submissions, key=lambda s: str(s.answer.get("created_at", "")), reverse=True
        )
        return [s.summary() for s in newest]

    async def escalation_view(self) -> list[dict[str, Any]]:
        """The escalations the sandbox raised, as the agent API shows them now (newest first)."""
        for escalation in self.escalations:
            if not escalation.answer.get("final"):
                status, answer = await self._agent_call("GET", f"/v1/escalations/{escalation.id}")
                if status == 200:
                    escalation.answer = answer
        return [e.summary() for e in reversed(self.escalations)]

    def _record(self, submission: Submission) -> Submission:
        """Add a proposal the sandbox submitted, or name one a poll found while it was sent."""
        for known in self.submissions:
            if known.id == submission.id:
                known.label, known.answer = submission.label, submission.answer
                return known
        self.submissions.append(submission)
        return submission

    async def _discover(self) -> None:
        entries = [e for e in await self.store.audit_log() if e.seq > self._audit_seen]
        known = {s.id for s in self.submissions}  # read after the await: polls overlap
        edited = {e.proposal_id for e in entries if e.event == "edited"}
        for entry in entries:
            self._audit_seen = max(self._audit_seen, entry.seq)
            new = entry.proposal_id
            if entry.event != "submitted" or entry.actor != AGENT or not new or new in known:
                continue
            known.add(new)
            label = "an edit" if new in edited else "your agent"
            self.submissions.append(Submission(label, new, {"id": new}))

    async def _agent_call(
        self, method: str, path: str, body: dict[str, Any] | None = None
    ) -> tuple[int, Any]:
        headers = {"Authorization": f"Bearer {self.secrets.agent_token}"}
        async with self.session.request(
            method, f"{self.api_url}{path}", json=body, headers=headers
        ) as response:
            return response.status, await response.json(content_type=None)

    def curl_example(self, *, with_token: bool) -> str:
        """A proposal made with curl: with the agent token (the terminal's banner) or, for the
        page, with the shell variable ``$COUNTERSIGN_TOKEN`` in its place."""
        authorization = (
            shlex.quote(f"Authorization: Bearer {self.secrets.agent_token}")
            if with_token
            else f'"Authorization: Bearer ${TOKEN_VARIABLE}"'
        )
        body = {
            "operation": "payments.refund",
            "request": {"payment_id": "pay_1005"},
            "requested_by": "U0DANA",
            "run_id": "my-first-run",
            "reason": "The customer returned the item.",
        }
        return (
            f"curl -s {self.api_url}/v1/proposals \\\n"
            f"  -H {authorization} \\\n"
            "  -H 'Content-Type: application/json' \\\n"
            f"  -d '{json.dumps(body)}'"
        )

    def client_example(self) -> str:
        """A first approval asked with the Python client (``countersign``, installed with the
        project), for the terminal's banner: it holds the agent token."""
        token = self.secrets.agent_token
        return "\n".join(
            [
                "import countersign",
                f"client = countersign.Client({self.api_url!r}, {token!r}, "
                f"requested_by={REQUESTER!r})",
                'answer = client.approve("Restart the checkout service", '
                '"Errors are up 4% since 09:12.")',
                "print(answer.describe())  # approved by U0PRIYA (proposal cs_…)",
            ]
        )

    def banner(self) -> str:
        lines = [
            "Countersign sandbox is running.",
            "",
            f"  Open {self.url} in your browser.",
            "",
            f"  Agent API    {self.api_url}  (POST /v1/proposals, GET /v1/proposals/{{id}})",
            f"  Agent token  {self.secrets.agent_token}  (printed here only: the page shows "
            f"${TOKEN_VARIABLE} in its place)",
            f"  Data         {self.data_dir}  (countersign.toml, countersign.sqlite)",
            "",
            "Propose something as an agent would:",
            "",
            *("  " + line for line in self.curl_example(with_token=True).splitlines()),
            "",
            "Or ask a yes/no question with the Python client (in .venv/bin/python):",
            "",
            *("  " + line for line in self.client_example().splitlines()),
            "",
            "Press Ctrl-C to stop.",
        ]
        return "\n".join(lines)


# --- running it -----------------------------------------------------------------------------------


@asynccontextmanager
async def running_sandbox(
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    api_port: int = 0,
    data_dir: Path | None = None,
    agent_token: str | None = None,
) -> AsyncIterator[Sandbox]:
    """Start everything (port 0: any free port); yield the running sandbox; stop it all."""
    with contextlib.ExitStack() as stack:
        if data_dir is None:
            data_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="countersign-")))
        data_dir.mkdir(parents=True, exist_ok=True)
        page_socket = stack.enter_context(_bound(host, port))
        url = _url(host, page_socket.getsockname()[1])
        keys = Secrets.generate(agent_token)
        settings = _settings(data_dir, url, keys)
        slack = LocalSlack(
            token=keys.bot_token,
            users=[
                LocalUser(p.id, name=p.name.split()[0].lower(), real_name=p.name) for p in PEOPLE
            ],
            wall_clock=time.time,
        )
        slack.add_user(
            LocalUser(slack.bot_user_id, name="countersign", real_name="Countersign", is_bot=True)
        )
        for channel_id, name in CHANNELS:
            slack.add_channel(channel_id, name=name)

        store = await open_store(str(data_dir / "countersign.sqlite"))
        # its Slack is served by the page, which starts after it: auth.test is tried meanwhile
        app = build_app(settings, store, allow_offline=True)
        app_runner = web.AppRunner(app, access_log_class=_AgentAccessLog)
        await app_runner.setup()
        try:
            await web.TCPSite(app_runner, host, api_port).start()
            api_url = _url(host, app_runner.addresses[0][1])
            async with aiohttp.ClientSession(headers={"User-Agent": USER_AGENT}) as session:
                sandbox = Sandbox(
                    url=url,
                    api_url=api_url,
                    slack=slack,
                    secrets=keys,
                    settings=settings,
                    data_dir=data_dir,
                    forwarder=SlackForwarder(
                        slack=slack,
                        signing_secret=keys.signing_secret,
                        events_url=f"{api_url}/slack/events",
                        session=session,
                    ),
                    target=DemoTarget(keys.webhook_secret),
                    session=session,
                    store=store,
                )
                page_runner = web.AppRunner(page_app(sandbox), access_log=None)
                await page_runner.setup()
                try:
                    await web.SockSite(page_runner, page_socket).start()
                    slack.base_url = f"{url}/slack/api/"
                    yield sandbox
                finally:
                    await page_runner.cleanup()
        finally:
            await app_runner.cleanup()
            await store.close()


class _AgentAccessLog(AbstractAccessLogger):
    """Countersign's access log without the sandbox's own requests: what agents sent stands out."""

    def log(self, request: web.BaseRequest, response: web.StreamResponse, time: float) -> None:
        if request.headers.get("User-Agent") != USER_AGENT:
            self.logger.info(
                "%s %s %s -> %d", request.remote, request.method, request.path_qs, response.status
            )


def _settings(data_dir: Path, url: str, keys: Secrets) -> Settings:
    config = data_dir / "countersign.toml"
    config.write_text(demo_config_text(url), encoding="utf-8")
    try:
        return load_settings(config, keys.environment(f"{url}/slack/api/"))
    except ConfigError as error:  # the shipped demo is checked by the tests: this is a bug
        raise RuntimeError(f"the sandbox's demo configuration is broken: {error}") from None


@contextlib.contextmanager
def _bound(host: str, port: int) -> Iterator[socket.socket]:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
        sock.setblocking(False)
        yield sock
    finally:
        sock.close()


def _url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
