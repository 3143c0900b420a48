"""Slack listeners (slack-bolt AsyncApp): acknowledge first, decode, call the service.

Bolt verifies every request's signature with the signing secret before any listener runs; a
forged, stale or unsigned request gets 401 and changes nothing.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

from aiohttp import web
from pydantic import BaseModel, ConfigDict, ValidationError
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.app.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.response import BoltResponse
from slack_sdk.web.async_client import AsyncWebClient

from bot.flow.clicks import NotRecorded, RecordedDecisions
from bot.flow.core import APP_HOME
from bot.flow.edits import EditFlow
from bot.flow.service import Service
from bot.render import actions
from bot.slack.at_once import ClicksAtOnce
from bot.slack.bolt_app import bolt_app
from bot.slack.gate import PAYLOAD_ERRORS, MalformedSlackRequest, bolt_request, signature_verifies
from bot.slack.ids import SlackChannel, SlackUser, TriggerId
from bot.slack.publish import SlackPublisher
from bot.slack.show_full import ShowFull
from store.base import StoreUnavailable
from store.lanes import people_first
from store.proposals.clicks import Clicked, ClickVerb

__all__ = [
    "BOLT",
    "SIGNING_SECRET",
    "BeginsModal",
    "Click",
    "EditSubmitted",
    "TextSubmitted",
    "ValueClick",
    "build_bolt",
    "click_listener",
    "clicked_in",
    "decoded",
    "modal_text",
    "opening_modal",
    "recorded_submission",
    "slack_events",
    "text_problems",
    "text_submission_listener",
    "worked_click",
]

log = logging.getLogger(__name__)


def _client_given_warning(record: logging.LogRecord) -> bool:
    """Drop bolt's "As you gave `client` as well, `token` will be unused": bolt reads
    SLACK_BOT_TOKEN from the environment by itself and warns when a client comes too, as
    Countersign's always does (it carries that same token)."""
    return "`token` will be unused" not in record.getMessage()


BOLT: web.AppKey[AsyncApp] = web.AppKey("bolt", AsyncApp)
#: The signing secret /slack/events verifies requests with (the one bolt was built with).
SIGNING_SECRET: web.AppKey[str] = web.AppKey("slack_signing_secret", str)

REASON_MAX = 1000

#: How long a deciding modal's submission waits for its click to be recorded before Slack is
#: answered (Slack waits 3 s for the answer, then tells the person it failed).
RECORD_WITHIN = 2.0

#: What a deciding modal shows, kept open with what was typed, when the click could not be
#: recorded.
SUBMIT_AGAIN = (
    "Countersign could not record this just now: its database is not answering. Submit again "
    "in a moment (a decision recorded already is not recorded twice)."
)

PayloadT = TypeVar("PayloadT")


class Click(BaseModel):
    """A button click, decoded from a block_actions payload."""

    model_config = ConfigDict(frozen=True)

    user: SlackUser
    proposal_id: str
    channel: SlackChannel | None
    trigger_id: TriggerId

    @classmethod
    def of(cls, body: dict[str, Any], action: dict[str, Any]) -> Click:
        return cls(
            user=body["user"]["id"],
            proposal_id=action["value"],
            channel=clicked_in(body) or (APP_HOME if _clicked_on_home_tab(body) else None),
            trigger_id=body["trigger_id"],
        )


class ValueClick(BaseModel):
    """A click on a button whose value is one id (a standing rule's, a delegation's, a reviewed
    proposal's), and where the button was: a message (its channel and ts) or the Home tab."""

    model_config = ConfigDict(frozen=True)

    user: SlackUser
    value: str
    channel: SlackChannel | None
    message_ts: str | None
    on_home_tab: bool

    @classmethod
    def of(cls, body: dict[str, Any], action: dict[str, Any]) -> ValueClick:
        return cls(
            user=body["user"]["id"],
            value=action["value"],
            channel=clicked_in(body),
            message_ts=(body.get("container") or {}).get("message_ts"),
            on_home_tab=_clicked_on_home_tab(body),
        )


def clicked_in(body: dict[str, Any]) -> str | None:
    """The channel of the message a block_actions payload's button was on (None for a click in
    a modal or on the Home tab)."""
    channel: str | None = (body.get("channel") or {}).get("id") or (
        body.get("container") or {}
    ).get("channel_id")
    return channel


def _clicked_on_home_tab(body: dict[str, Any]) -> bool:
    """Whether a block_actions payload's button was on the App Home tab."""
    return bool((body.get("view") or {}).get("type") == "home")


class EditSubmitted(BaseModel):
    """The edit modal, submitted: who, which proposal, and the inputs' state."""

    model_config = ConfigDict(frozen=True)

    user: SlackUser
    proposal_id: str
    values: dict[str, dict[str, Any]]

    @classmethod
    def of(cls, body: dict[str, Any]) -> EditSubmitted:
        view = body["view"]
        return cls(
            user=body["user"]["id"],
            proposal_id=view["private_metadata"],
            values=view["state"]["values"],
        )


class TextSubmitted(BaseModel):
    """A deciding modal with one text input, submitted (the reject modal's reason, the hand-back's
    note): who, what it is about (its private_metadata) and what was typed."""

    model_config = ConfigDict(frozen=True)

    user: SlackUser
    about: str
    text: str

    @classmethod
    def reading(cls, block: str) -> Callable[[dict[str, Any]], TextSubmitted]:
        """The decoder of a modal whose text input is ``block``."""

        def of(body: dict[str, Any]) -> TextSubmitted:
            view = body["view"]
            return cls(
                user=body["user"]["id"],
                about=view["private_metadata"],
                text=modal_text(view, block),
            )

        return of


def modal_text(view: dict[str, Any], block: str) -> str:
    """What was typed into the text input ``block`` of a submitted modal, stripped ("" for
    nothing); the input's action id is its block id."""
    value: str = view["state"]["values"][block][block].get("value") or ""
    return value.strip()


def text_problems(text: str, *, block: str, empty: str, most: int) -> dict[str, str]:
    """What the person must fix in a required text input before anything is done: ``empty``
    when nothing was typed, the limit past ``most`` characters; by block id, as Slack shows it."""
    if not text:
        return {block: empty}
    if len(text) > most:
        return {block: f"At most {most} characters."}
    return {}


def build_bolt(
    *,
    signing_secret: str,
    client: AsyncWebClient,
    service: Service,
    publisher: SlackPublisher,
    decisions: RecordedDecisions,
) -> AsyncApp:
    """The bolt app; ``client`` carries the bot token and the Slack API base URL. Decision
    clicks (Approve, Extend, Retry, a reconciliation, the reject modal's reason) are recorded
    and applied after (``decisions``, never told busy); the buttons that open a modal or show
    something are worked on at once, bounded by nothing (nobody is turned away for reading)."""
    bolt_log = logging.getLogger("bot.slack.listeners.bolt")
    bolt_log.addFilter(_client_given_warning)
    app = bolt_app(signing_secret=signing_secret, client=client, logger=bolt_log)

    edits = EditFlow(service)
    full = ShowFull(service.store, publisher)
    recorded: dict[str, ClickVerb] = {
        actions.APPROVE: "approve",
        actions.EXTEND: "extend",
        actions.RECONCILE_SUCCEEDED: "reconcile_succeeded",
        actions.RECONCILE_FAILED: "reconcile_failed",
        actions.RECONCILE_RETRY: "retry",
    }
    # answered before bolt's listeners, in the turn their request is read (bot/slack/at_once.py)
    app.use(ClicksAtOnce(Click.of, {a: _recorder(decisions, v) for a, v in recorded.items()}))
    clicks: dict[str, Callable[[Click], Awaitable[object]]] = {
        # these open a modal (each checks the clicker first) or show something
        actions.EDIT: opening_modal(edits.begin),
        actions.REJECT: opening_modal(service.begin_reject),
        # read-only, no role needed: a signed click and its own trigger_id (bot/slack/show_full.py)
        actions.SHOW_FULL: lambda c: full.proposal(
            c.proposal_id, user=c.user, trigger_id=c.trigger_id
        ),
        actions.DIGEST_SHOW_FULL: lambda c: full.digest(
            c.proposal_id, user=c.user, trigger_id=c.trigger_id
        ),
    }
    for action_id, handle in clicks.items():
        app.action(action_id)(click_listener(handle, service))

    app.view(actions.REJECT_VIEW)(
        text_submission_listener(
            decisions,
            block=actions.REASON_INPUT,
            verb="reject",
            key="reason",
            empty="Say why you reject it.",
            most=REASON_MAX,
            what="reject submission",
        )
    )

    @app.view(actions.EDIT_VIEW)
    async def on_edit(ack: AsyncAck, body: dict[str, Any]) -> None:
        submitted = decoded(EditSubmitted.of, body)
        if submitted is None:
            await ack()
            return
        answer = await edits.submit(submitted)  # checks and stores; errors keep the modal open
        if answer.errors:
            await ack(response_action="errors", errors=dict(answer.errors))
            return
        await ack()
        await edits.finish(answer)

    @app.error
    async def on_error(error: Exception, response: BoltResponse | None) -> BoltResponse | None:
        if response is None and isinstance(error, StoreUnavailable):  # an outage, not a bug
            log.warning("a Slack listener could not finish: the store did not answer (%s)", error)
            return None
        if response is None:  # a listener failed after acknowledging: the answer is sent
            log.error(
                "a Slack listener failed: %s: %s", type(error).__name__, error, exc_info=error
            )
            return None
        if isinstance(error, PAYLOAD_ERRORS):
            # Listeners acknowledge first, so an error before the answer is bolt's own reading
            # of a signed body shaped unlike anything Slack sends: the request is at fault.
            log.warning(
                "refused a Slack payload bolt could not read: %s: %s", type(error).__name__, error
            )
            return BoltResponse(status=400, body={"error": "malformed request"})
        log.error("Slack request failed: %s: %s", type(error).__name__, error, exc_info=error)
        return None

    return app


def _recorder(
    decisions: RecordedDecisions, verb: ClickVerb
) -> Callable[[Click], Awaitable[object]]:
    async def record(click: Click) -> None:
        await decisions.record(click.proposal_id, user=click.user, channel=click.channel, verb=verb)

    return record


class BeginsModal(Protocol):
    """A flow's first step behind a button that opens a modal: check the clicker of the
    button of ``subject`` (a proposal, digest or escalation id), then open the modal."""

    def __call__(
        self, subject: str, /, *, user: str, channel: str | None, trigger_id: str
    ) -> Awaitable[None]: ...


def opening_modal(begin: BeginsModal) -> Callable[[Click], Awaitable[None]]:
    """A click's handler that hands ``begin`` the button's value, the clicker, the channel
    and the trigger id the modal opens with."""

    async def opening(click: Click) -> None:
        await begin(
            click.proposal_id, user=click.user, channel=click.channel, trigger_id=click.trigger_id
        )

    return opening


def click_listener(
    handle: Callable[[Click], Awaitable[object]], service: Service
) -> Callable[..., Awaitable[None]]:
    """A proposal button's listener that opens a modal or shows something (:func:`worked_click`:
    no bound). When the store stops answering past the first read, the clicker is told that
    nothing may have changed."""

    async def handled(click: Click) -> None:
        try:
            await handle(click)
        except StoreUnavailable as error:
            await service.store_away(
                click.proposal_id, user=click.user, channel=click.channel, error=error
            )

    return worked_click(Click.of, handled)


def text_submission_listener(
    decisions: RecordedDecisions,
    *,
    block: str,
    verb: ClickVerb,
    key: str,
    empty: str,
    most: int,
    what: str,
) -> Callable[..., Awaitable[None]]:
    """The listener of a deciding modal with one required text input ``block``: the text is
    checked (``empty`` when nothing was typed, at most ``most`` characters) and the decision
    recorded as ``verb`` with the text under ``key`` in its detail (:func:`recorded_submission`)."""

    async def listener(ack: AsyncAck, body: dict[str, Any]) -> None:
        submitted = decoded(TextSubmitted.reading(block), body, what=what)
        if submitted is None:
            await ack()
            return
        problems = text_problems(submitted.text, block=block, empty=empty, most=most)
        if problems:
            await ack(response_action="errors", errors=problems)
            return
        clicked = Clicked(
            subject=submitted.about,
            actor=submitted.user,
            verb=verb,
            channel=None,
            detail={key: submitted.text},
        )
        await recorded_submission(decisions, clicked, ack, block=block)

    return listener


async def recorded_submission(
    decisions: RecordedDecisions, clicked: Clicked, ack: AsyncAck, *, block: str
) -> None:
    """A deciding modal's submission: record it before answering Slack, then answer the
    clicker (bot/flow/clicks.py). When the store does not answer within :data:`RECORD_WITHIN`,
    the modal stays open with what was typed and says so at ``block`` (an input of the modal):
    submitting again is safe, as the same person's decision is recorded once."""
    taking = asyncio.ensure_future(decisions.take(clicked))
    try:
        taken = await asyncio.wait_for(asyncio.shield(taking), RECORD_WITHIN)
    except (NotRecorded, TimeoutError) as error:
        log.warning("a %s submitted by %s is not recorded: %r", clicked.verb, clicked.actor, error)
        taking.add_done_callback(_seen)  # a late record is applied; its outcome tells
        await ack(response_action="errors", errors={block: SUBMIT_AGAIN})
        return
    await ack()
    await decisions.answer(clicked, taken)


def _seen(task: asyncio.Future[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("a late record of a modal's decision failed: %r", task.exception())


def worked_click(
    decode: Callable[[dict[str, Any], dict[str, Any]], PayloadT],
    handle: Callable[[PayloadT], Awaitable[object]],
    *,
    what: str = "Slack click",
) -> Callable[..., Awaitable[None]]:
    """A button's listener: acknowledge at once, ``decode`` the click (a malformed one is
    logged and dropped), then ``handle`` it; no bound turns it away."""

    async def listener(ack: AsyncAck, body: dict[str, Any], action: dict[str, Any]) -> None:
        await ack()
        click = decoded(decode, body, action, what=what)
        if click is not None:
            await handle(click)

    return listener


def decoded(
    parse: Callable[..., PayloadT], *payload: dict[str, Any], what: str = "Slack payload"
) -> PayloadT | None:
    """The typed value ``parse`` makes of a Slack payload, or None (logged as a malformed
    ``what``) when the payload is not what Slack sends."""
    try:
        return parse(*payload)
    except (KeyError, TypeError, AttributeError, ValidationError) as error:
        log.warning("ignored a malformed %s: %s: %s", what, type(error).__name__, error)
        return None


async def slack_events(request: web.Request) -> web.Response:
    """``POST /slack/events``: events, interactivity and slash commands, through bolt.

    The signature is verified before anything reads the body (401, as bolt answers), and a
    signed body Slack would never send is refused (400) before bolt parses it. What a person
    did in Slack is handled in people's lane (store/lanes.py): the listeners bolt starts here,
    and their store calls, are served ahead of agents' work.
    """
    bolt = request.app[BOLT]
    body = await request.read()
    secret = request.app[SIGNING_SECRET]
    if not signature_verifies(secret, body, request.headers, now=time.time()):
        return web.json_response({"error": "invalid request"}, status=401)
    try:
        bolt_req = bolt_request(body, request.query_string, request.headers)
    except MalformedSlackRequest as error:
        log.warning("refused a signed Slack request: %s", error)
        return web.json_response({"error": f"malformed request: {error}"}, status=400)
    with people_first():
        response = await bolt.async_dispatch(bolt_req)
    return await to_aiohttp_response(response)
