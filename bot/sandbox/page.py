"""The sandbox page and the JSON endpoints it calls: state to draw, clicks, modals, the demo."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any, Final, Protocol

from aiohttp import web

from bot.sandbox.demo import PEOPLE, DemoRefused
from bot.sandbox.forwarder import Forwarded, Refused, SlackForwarder
from bot.sandbox.origin import own_origin_only
from bot.sandbox.state import workspace_view
from bot.sandbox.target import DemoTarget
from bot.slack import local as localslack

__all__ = ["TOKEN_VARIABLE", "Made", "PageSandbox", "page_app"]

#: Where the page's curl example takes the agent token from: the page never holds the token
#: itself (a page that did could hand it to any script that reads it); the terminal banner
#: prints it.
TOKEN_VARIABLE: Final = "COUNTERSIGN_TOKEN"


class Made(Protocol):
    """A proposal the demo submitted, as the page lists it."""

    def summary(self) -> dict[str, Any]: ...


class PageSandbox(Protocol):
    """What the page needs of the sandbox it shows (bot/sandbox/server.py's ``Sandbox``)."""

    @property
    def url(self) -> str: ...
    @property
    def api_url(self) -> str: ...
    @property
    def slack(self) -> localslack.LocalSlack: ...
    @property
    def forwarder(self) -> SlackForwarder: ...
    @property
    def target(self) -> DemoTarget: ...

    def curl_example(self, *, with_token: bool) -> str: ...
    async def agent_view(self) -> list[dict[str, Any]]: ...
    async def escalation_view(self) -> list[dict[str, Any]]: ...
    async def submit_demo(self) -> Sequence[Made]: ...
    async def submit_scenario(self, name: str) -> Sequence[Made]: ...


_STATIC = resources.files("bot.sandbox").joinpath("static")
_SANDBOX: web.AppKey[PageSandbox] = web.AppKey("sandbox")


def page_app(sandbox: PageSandbox) -> web.Application:
    app = web.Application(middlewares=[own_origin_only(sandbox.url), _refusals])
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
    app.router.add_post("/sandbox/scenario/{name}", _scenario)
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
    except DemoRefused as refused:
        return web.json_response({"error": str(refused)}, status=502)


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
    # The agent token is printed in the terminal only: the page shows where to put it.
    view["agent"] = {
        "api_url": sandbox.api_url,
        "token_variable": TOKEN_VARIABLE,
        "curl": sandbox.curl_example(with_token=False),
        "proposals": await sandbox.agent_view(),
        "escalations": await sandbox.escalation_view(),
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
            user,
            view_id=_text(body, "view_id"),
            block_index=block_index,
            action_id=action_id,
            values=_values(body) if "values" in body else None,
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
    answer = await sandbox.forwarder.submit(
        _text(body, "user"), view_id=_text(body, "view_id"), values=_values(body)
    )
    return _forwarded(answer)


def _values(body: dict[str, Any]) -> dict[str, dict[str, str | list[str]]]:
    """What the person entered in a modal's inputs, as the page sends it."""
    values = body.get("values", {})
    if not isinstance(values, dict) or not all(
        isinstance(v, dict) and all(_typed(t) for t in v.values()) for v in values.values()
    ):
        raise _BadInput(
            "values: expected {block_id: {action_id: text, or a list of chosen option values}}"
        )
    return values


async def _cancel(request: web.Request) -> web.Response:
    body = await _json(request)
    request.app[_SANDBOX].forwarder.cancel(_text(body, "user"), view_id=_text(body, "view_id"))
    return web.json_response({"closed": True})


async def _home(request: web.Request) -> web.Response:
    body = await _json(request)
    return _forwarded(await request.app[_SANDBOX].forwarder.open_home(_text(body, "user")))


async def _demo(request: web.Request) -> web.Response:
    made = await request.app[_SANDBOX].submit_demo()
    return web.json_response({"proposals": [s.summary() for s in made]}, status=201)


async def _scenario(request: web.Request) -> web.Response:
    made = await request.app[_SANDBOX].submit_scenario(request.match_info["name"])
    return web.json_response({"proposals": [s.summary() for s in made]}, status=201)


def _typed(value: object) -> bool:
    """What the page sends for one input: its text (or chosen option), or the chosen options."""
    return isinstance(value, str) or (
        isinstance(value, list) and all(isinstance(v, str) for v in value)
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
