"""``countersign sandbox``: the real Countersign, a local Slack and a page showing it, one process.

Two HTTP servers run on loopback:

- the sandbox (``--port``): the page and its JSON endpoints, the local Slack Web API at
  ``/slack/api/<method>`` (:mod:`bot.localslack`, the one the tests use), and the demo execution
  target at ``/demo-target/``;
- Countersign itself (``--api-port``), built by :func:`bot.app.build_app` from the demo
  configuration with a SQLite store: the agent API and the Slack request URL ``/slack/events``.

Countersign talks to the local Slack through ``SLACK_API_URL``; the page's clicks reach it as
signed Slack payloads over HTTP (:mod:`bot.sandbox.forwarder`). Nothing in it knows it is in a
sandbox.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import signal
import socket
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Final

import aiohttp
from aiohttp import web
from aiohttp.abc import AbstractAccessLogger

from bot import localslack
from bot.app import build_app
from bot.localslack import LocalSlack, LocalUser
from bot.sandbox.demo import (
    CHANNELS,
    DEMO_PROPOSALS,
    PEOPLE,
    Secrets,
    demo_config_text,
)
from bot.sandbox.forwarder import Forwarded, Refused, SlackForwarder
from bot.sandbox.state import workspace_view
from bot.sandbox.target import DemoTarget
from bot.settings import ConfigError, Settings, load_settings
from store.open import open_store

__all__ = ["DEFAULT_PORT", "Sandbox", "Submission", "run_sandbox", "running_sandbox"]

DEFAULT_PORT: Final = 8800
#: The sandbox's own requests to Countersign (the page's polling, forwarded clicks) say so.
USER_AGENT: Final = "countersign-sandbox"
_STATIC = resources.files("bot.sandbox").joinpath("static")
_SANDBOX: web.AppKey[Sandbox] = web.AppKey("sandbox")
_FINAL = {
    "denied",
    "rejected",
    "expired",
    "succeeded",
    "needs_reconciliation",
    "revision_required",
    "failed",
}


@dataclass
class Submission:
    """A proposal submitted from the sandbox, and the agent API's latest answer about it."""

    label: str
    id: str
    answer: dict[str, Any]


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
    submissions: list[Submission] = field(default_factory=list)

    # --- the agent's side -------------------------------------------------------------------------

    async def submit_demo(self) -> list[Submission]:
        """Submit one proposal for every path of the demo policy, through the real agent API."""
        batch = secrets.token_hex(3)
        made = []
        for number, demo in enumerate(DEMO_PROPOSALS, start=1):
            body = {**demo.body, "run_id": f"sandbox-demo-{batch}-{number}"}
            status, answer = await self._agent_call("POST", "/v1/proposals", body)
            if status not in (200, 201):
                raise RuntimeError(f"the agent API refused demo proposal {demo.label!r}: {answer}")
            made.append(Submission(demo.label, str(answer["id"]), answer))
        self.submissions += made
        return made

    async def agent_view(self) -> list[dict[str, Any]]:
        """The sandbox's proposals as the agent API shows them now (newest first)."""
        for submission in self.submissions:
            if submission.answer.get("status") not in _FINAL:
                status, answer = await self._agent_call("GET", f"/v1/proposals/{submission.id}")
                if status == 200:
                    submission.answer = answer
        return [{"label": s.label, **_summary(s.answer)} for s in reversed(self.submissions)]

    async def _agent_call(
        self, method: str, path: str, body: dict[str, Any] | None = None
    ) -> tuple[int, Any]:
        headers = {"Authorization": f"Bearer {self.secrets.agent_token}"}
        async with self.session.request(
            method, f"{self.api_url}{path}", json=body, headers=headers
        ) as response:
            return response.status, await response.json(content_type=None)

    def curl_example(self) -> str:
        body = {
            "operation": "payments.refund",
            "request": {"payment_id": "pay_1005"},
            "requested_by": "U0DANA",
            "run_id": "my-first-run",
            "reason": "The customer returned the item.",
        }
        return (
            f"curl -s {self.api_url}/v1/proposals \\\n"
            f"  -H 'Authorization: Bearer {self.secrets.agent_token}' \\\n"
            "  -H 'Content-Type: application/json' \\\n"
            f"  -d '{json.dumps(body)}'"
        )

    def banner(self) -> str:
        lines = [
            "Countersign sandbox is running.",
            "",
            f"  Open {self.url} in your browser.",
            "",
            f"  Agent API    {self.api_url}  (POST /v1/proposals, GET /v1/proposals/{{id}})",
            f"  Agent token  {self.secrets.agent_token}",
            f"  Data         {self.data_dir}  (countersign.toml, countersign.sqlite)",
            "",
            "Propose something as an agent would:",
            "",
            *("  " + line for line in self.curl_example().splitlines()),
            "",
            "Press Ctrl-C to stop.",
        ]
        return "\n".join(lines)


def _summary(answer: dict[str, Any]) -> dict[str, Any]:
    outcome = answer.get("outcome") or {}
    policy = answer.get("policy") or {}
    preview = answer.get("preview") or {}
    return {
        "id": answer.get("id"),
        "status": answer.get("status"),
        "operation": answer.get("operation"),
        "title": preview.get("title"),
        "decision": policy.get("decision"),
        "rule": policy.get("rule_id"),
        "note": policy.get("note"),
        "expires_at": answer.get("expires_at"),
        "outcome": outcome.get("kind"),
    }


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
        app_runner = web.AppRunner(build_app(settings, store), access_log_class=_AgentAccessLog)
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
                )
                page_runner = web.AppRunner(_page_app(sandbox), access_log=None)
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
def _bound(host: str, port: int) -> Any:
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


# --- the page and its endpoints -------------------------------------------------------------------


def _page_app(sandbox: Sandbox) -> web.Application:
    app = web.Application(middlewares=[_refusals])
    app[_SANDBOX] = sandbox
    app.add_subapp("/slack", localslack.build_app(sandbox.slack))
    app.router.add_get("/", _index)
    app.router.add_static("/static/", Path(str(_STATIC)))
    app.router.add_get("/sandbox/state", _state)
    app.router.add_post("/sandbox/click", _click)
    app.router.add_post("/sandbox/submit", _submit)
    app.router.add_post("/sandbox/cancel", _cancel)
    app.router.add_post("/sandbox/home", _home)
    app.router.add_post("/sandbox/demo", _demo)
    app.add_routes(sandbox.target.routes())
    return app


@web.middleware
async def _refusals(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    try:
        return await handler(request)
    except Refused as refused:
        return web.json_response({"error": str(refused)}, status=409)
    except _BadInput as bad:
        return web.json_response({"error": str(bad)}, status=400)


class _BadInput(Exception):
    """The page sent something the endpoint cannot read."""


async def _index(request: web.Request) -> web.FileResponse:
    return web.FileResponse(
        Path(str(_STATIC.joinpath("index.html"))), headers={"Cache-Control": "no-store"}
    )


async def _state(request: web.Request) -> web.Response:
    sandbox = request.app[_SANDBOX]
    user = request.query.get("user") or PEOPLE[0].id
    view = workspace_view(sandbox.slack, PEOPLE, user)
    view["agent"] = {
        "api_url": sandbox.api_url,
        "token": sandbox.secrets.agent_token,
        "curl": sandbox.curl_example(),
        "proposals": await sandbox.agent_view(),
    }
    view["target"] = [
        {
            "at": d.at.isoformat(timespec="seconds"),
            "arguments": d.arguments,
            "answer": d.answer,
            "replayed": d.replayed,
        }
        for d in reversed(sandbox.target.deliveries)
    ]
    return web.json_response(view, headers={"Cache-Control": "no-store"})


async def _click(request: web.Request) -> web.Response:
    sandbox = request.app[_SANDBOX]
    body = await _json(request)
    user, action_id = _text(body, "user"), _text(body, "action_id")
    block_index = _integer(body, "block_index")
    if "view_id" in body:
        answer = await sandbox.forwarder.click_in_view(
            user, view_id=_text(body, "view_id"), block_index=block_index, action_id=action_id
        )
    else:
        answer = await sandbox.forwarder.click(
            user,
            channel=_text(body, "channel"),
            ts=_text(body, "ts"),
            block_index=block_index,
            action_id=action_id,
        )
    return _forwarded(answer)


async def _submit(request: web.Request) -> web.Response:
    sandbox = request.app[_SANDBOX]
    body = await _json(request)
    values = body.get("values", {})
    if not isinstance(values, dict) or not all(
        isinstance(v, dict) and all(isinstance(t, str) for t in v.values()) for v in values.values()
    ):
        raise _BadInput("values: expected {block_id: {action_id: text}}")
    answer = await sandbox.forwarder.submit(
        _text(body, "user"), view_id=_text(body, "view_id"), values=values
    )
    return _forwarded(answer)


async def _cancel(request: web.Request) -> web.Response:
    body = await _json(request)
    request.app[_SANDBOX].forwarder.cancel(_text(body, "user"), view_id=_text(body, "view_id"))
    return web.json_response({"closed": True})


async def _home(request: web.Request) -> web.Response:
    body = await _json(request)
    return _forwarded(await request.app[_SANDBOX].forwarder.open_home(_text(body, "user")))


async def _demo(request: web.Request) -> web.Response:
    made = await request.app[_SANDBOX].submit_demo()
    return web.json_response(
        {"proposals": [{"label": s.label, **_summary(s.answer)} for s in made]}, status=201
    )


def _forwarded(answer: Forwarded) -> web.Response:
    return web.json_response(
        {"status": answer.status, "errors": answer.errors, "closed": answer.closed}
    )


async def _json(request: web.Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except ValueError:
        raise _BadInput("the body must be a JSON object") from None
    if not isinstance(body, dict):
        raise _BadInput("the body must be a JSON object")
    return body


def _text(body: dict[str, Any], key: str) -> str:
    value = body.get(key)
    if not isinstance(value, str) or not value:
        raise _BadInput(f"{key}: expected a non-empty string, got {value!r}")
    return value


def _integer(body: dict[str, Any], key: str) -> int:
    value = body.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise _BadInput(f"{key}: expected an integer, got {value!r}")
    return value


# --- the command ----------------------------------------------------------------------------------


def run_sandbox(
    *,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    api_port: int | None = None,
    data_dir: Path | None = None,
    agent_token: str | None = None,
    demo: bool = False,
) -> int:
    """Run until Ctrl-C or SIGTERM; the exit status of ``countersign sandbox``."""
    if api_port is None:
        api_port = port + 1 if port else 0
    try:
        asyncio.run(_serve(host, port, api_port, data_dir, agent_token, demo))
    except KeyboardInterrupt:
        pass
    except OSError as error:
        print(
            f"countersign sandbox cannot listen on {host} (ports {port} and {api_port}): {error}."
            " Pass --port (and --api-port) to use others; 0 picks free ones.",
            file=sys.stderr,
        )
        return 2
    return 0


async def _serve(
    host: str, port: int, api_port: int, data_dir: Path | None, token: str | None, demo: bool
) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    with contextlib.suppress(NotImplementedError):
        loop.add_signal_handler(signal.SIGTERM, stop.set)
    async with running_sandbox(
        host=host, port=port, api_port=api_port, data_dir=data_dir, agent_token=token
    ) as sandbox:
        print(sandbox.banner(), flush=True)
        if host not in ("127.0.0.1", "localhost", "::1"):
            print(
                f"\nWarning: listening on {host}. The sandbox has no login: anyone who can reach"
                " it can act as anyone.",
                flush=True,
            )
        if demo:
            made = await sandbox.submit_demo()
            print(f"\nSubmitted {len(made)} demo proposals: open the page to see them.", flush=True)
        await stop.wait()
