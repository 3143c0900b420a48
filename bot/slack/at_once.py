"""Decision clicks answered in the turn of the event loop their request is read in.

A person's decision click (Approve, Extend, Retry, a reconciliation) is acknowledged first and
recorded after (bot/flow/clicks.py). Through a bolt listener the acknowledgement takes three
turns of the loop and a timer: bolt's listener runner starts the listener as a task of its own,
then polls every 10 ms until the listener has called ``ack()``, and only then answers. On a loop
kept busy by agents' submissions every turn waits behind all the work ready on it, so each of
those turns, and the timer's, is paid again at the busy loop's pace.

:class:`ClicksAtOnce` is a bolt middleware that answers such a click itself, before bolt's
listeners: it decodes the click, starts its handling in a task of its own (which inherits the
request's lane, store/lanes.py) and returns the acknowledgement at once, so the answer is written
in the same turn as the request was read. The handling is what the listener did after its
``ack()``, unchanged; a click that does not decode is logged and dropped, acknowledged as before.
Every other request goes on to bolt's listeners.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from pydantic import ValidationError
from slack_bolt.middleware.async_middleware import AsyncMiddleware
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse

from store.base import StoreUnavailable

__all__ = ["ClicksAtOnce"]

log = logging.getLogger(__name__)

#: decodes a block_actions payload's body and its action into the value a handler takes
Decode = Callable[[dict[str, Any], dict[str, Any]], Any]


class ClicksAtOnce(AsyncMiddleware):
    """bolt middleware (``app.use``): a click of one of ``handlers``' action ids is decoded with
    ``decode``, acknowledged at once, and handled by its handler in a task of its own."""

    def __init__(
        self,
        decode: Decode,
        handlers: Mapping[str, Callable[[Any], Awaitable[object]]],
        *,
        what: str = "Slack click",
    ) -> None:
        self._decode = decode
        self._handlers = dict(handlers)
        self._what = what
        self._running: set[asyncio.Task[None]] = set()  #: handlings under way (kept referenced)

    async def async_process(
        self,
        *,
        req: AsyncBoltRequest,
        resp: BoltResponse,
        next: Callable[[], Awaitable[BoltResponse]],  # bolt's name for it
    ) -> BoltResponse | None:
        action = _first_action(req.body)
        handle = None if action is None else self._handlers.get(str(action.get("action_id")))
        if action is None or handle is None:
            return await next()
        try:
            click = self._decode(req.body, action)
        except (KeyError, TypeError, AttributeError, ValidationError) as error:
            log.warning("ignored a malformed %s: %s: %s", self._what, type(error).__name__, error)
        else:
            task = asyncio.create_task(_handled(handle(click)), name=f"{self._what} {click!r}")
            self._running.add(task)
            task.add_done_callback(self._running.discard)
        return BoltResponse(status=200, body="")


def _first_action(body: dict[str, Any]) -> dict[str, Any] | None:
    """The action a block_actions payload carries (the one bolt's action listeners match on)."""
    if body.get("type") != "block_actions":
        return None
    actions = body.get("actions")
    if not isinstance(actions, list) or not actions or not isinstance(actions[0], dict):
        return None
    return actions[0]


async def _handled(handling: Awaitable[object]) -> None:
    """Run a click's handling after its acknowledgement; what it raises is logged, as bolt's
    error handler logs a listener's error after its ack (bot/slack/listeners.py)."""
    try:
        await handling
    except StoreUnavailable as error:  # an outage, not a bug
        log.warning("a Slack listener could not finish: the store did not answer (%s)", error)
    except Exception as error:
        log.error("a Slack listener failed: %s: %s", type(error).__name__, error, exc_info=error)
