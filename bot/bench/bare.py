"""The bare servers the floors measure, each run as its own process the way Countersign runs:

``python -m bot.bench.bare aiohttp --port P``: an aiohttp application whose ``POST /echo``
answers a small JSON document at once.

``python -m bot.bench.bare bolt --port P``: a slack-bolt AsyncApp (built as Countersign's is,
bot/slack/bolt_app.py, with the signing secret and bot token of ``SLACK_SIGNING_SECRET`` /
``SLACK_BOT_TOKEN`` and the Web API at ``SLACK_API_URL``) on ``POST /slack/events``, whose block
action listener only acknowledges.

Both log like ``countersign serve`` (INFO, with aiohttp's access log), so a floor pays the same
per-request costs Countersign pays and a ratio compares like with like.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_sdk.web.async_client import AsyncWebClient

from bot.render.actions import APPROVE
from bot.slack.bolt_app import bolt_app

__all__ = ["bare_aiohttp", "bare_bolt", "main"]


async def _healthz(request: web.Request) -> web.Response:
    return web.json_response({"ok": True})


def bare_aiohttp() -> web.Application:
    async def echo(request: web.Request) -> web.Response:
        await request.read()
        return web.json_response({"ok": True, "id": "bare"}, status=201)

    app = web.Application()
    app.add_routes([web.post("/echo", echo), web.get("/healthz", _healthz)])
    return app


def bare_bolt(signing_secret: str, token: str, api_url: str) -> web.Application:
    bolt = bolt_app(
        signing_secret=signing_secret,
        client=AsyncWebClient(token=token, base_url=api_url),
        logger=logging.getLogger("bare.bolt"),
    )

    @bolt.action(APPROVE)
    async def approve(ack: AsyncAck) -> None:
        await ack()

    async def events(request: web.Request) -> web.Response:
        return await to_aiohttp_response(await bolt.async_dispatch(await to_bolt_request(request)))

    app = web.Application()
    app.add_routes([web.post("/slack/events", events), web.get("/healthz", _healthz)])
    return app


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bot.bench.bare")
    parser.add_argument("kind", choices=["aiohttp", "bolt"])
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    if args.kind == "aiohttp":
        app = bare_aiohttp()
    else:
        app = bare_bolt(
            os.environ["SLACK_SIGNING_SECRET"],
            os.environ["SLACK_BOT_TOKEN"],
            os.environ["SLACK_API_URL"],
        )
    web.run_app(app, host="127.0.0.1", port=args.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
