"""``/countersign``: what waits for me (``list``), one proposal (``show <id>``), the active
standing rules (``standing``, admins only), ``help``.

Answers are ephemeral (only the person who typed the command sees them) and travel in the
command's own HTTP response, Slack's immediate response: it works in every conversation, also
those the bot is not a member of (where chat.postEphemeral cannot post), and needs no outbound
call. Building the answer reads the store and, for ``list``, the same click-time checks as the
App Home; it is bounded by :data:`ANSWER_WITHIN` seconds so the answer always arrives within
Slack's three seconds (past it the person is asked to try again). ``show`` of a pending proposal
includes its current state, as the App Home does, waiting at most :data:`STATE_WITHIN` seconds
for the operation's revalidation.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any, Final

from slack_bolt.app.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck

from bot.delegations.commands import Delegations
from bot.flow.service import Service
from bot.render.blocks import FALLBACK_MAX, escape
from bot.render.home import help_blocks, proposal_detail_blocks, waiting_blocks
from bot.render.inert import inert
from bot.slack.home import HomeTab
from bot.slack.publish import SlackPublisher
from bot.standing.admin import StandingAdmin
from contracts.policy import AskRule
from store.proposals import Proposal, ProposalNotFound, Status

__all__ = ["ANSWER_WITHIN", "COMMAND", "STATE_WITHIN", "SlashCommand", "register_slash_command"]

log = logging.getLogger(__name__)

COMMAND: Final = "/countersign"
#: Seconds to build an answer before giving up (Slack waits three for the response).
ANSWER_WITHIN: Final = 2.5
#: Seconds ``show`` waits for the current state of a pending proposal (within ANSWER_WITHIN).
STATE_WITHIN: Final = 1.5

Answer = tuple[str, list[dict[str, Any]]]


class SlashCommand:
    def __init__(
        self,
        service: Service,
        home: HomeTab,
        clock: Callable[[], datetime],
        delegations: Delegations | None = None,
        *,
        publisher: SlackPublisher,
    ) -> None:
        self._service = service
        self._publisher = publisher
        self._home = home
        self._clock = clock
        self._delegations = delegations or Delegations(service, clock)

    async def answer(self, user: str, text: str) -> Answer:
        """The fallback text and the blocks of the answer to ``/countersign text``."""
        verb, _, rest = text.strip().partition(" ")
        verb = verb.lower()
        verbs = self._verbs()
        command = verbs.get(verb or "help")
        if command is None:
            # the verbs as they are registered above, so a new one cannot be left out
            written = [f"`{usage}`" for usage, _ in verbs.values()]
            return _plain(
                f"`{escape(verb[:40])}` is not a /countersign command. "
                f"Try {', '.join(written[:-1])} or {written[-1]}."
            )
        _, answer = command
        return await answer(user, rest.strip())

    def _verbs(self) -> dict[str, tuple[str, Callable[[str, str], Awaitable[Answer]]]]:
        """Each verb of ``/countersign``: how it is written, and what answers it (given the
        person and the rest of the text); ``help`` last."""
        return {
            "list": ("list", self._list),
            "show": ("show <id>", self._show_verb),
            "standing": ("standing", self._standing),
            "delegate": ("delegate <agent>", self._delegations.delegate),
            "delegations": ("delegations", self._delegation_list),
            "revoke-delegation": ("revoke-delegation <id>", self._revoke_delegation),
            "help": ("help", _help),
        }

    async def _list(self, user: str, rest: str) -> Answer:
        """The App Home's page: each agent gets a share of it."""
        page = await self._home.waiting_page(user)
        waiting = list(page.shown)
        text = f"{len(waiting)} proposal(s) wait for your decision"
        if page.more:
            text += f", and {page.more} more pending beyond this page"
        previous = await self._home.previous_versions(waiting)
        blocks = waiting_blocks(
            waiting,
            now=self._clock(),
            previous=previous,
            beyond=page.beyond,
            formats_of=self._publisher.formats_of,
            agent_acts_of=self._publisher.agent_acts,
        )
        return text, blocks

    async def _show_verb(self, user: str, rest: str) -> Answer:
        if not rest:
            return _plain("Say which proposal: `/countersign show <id>`.")
        return await self._show(user, rest.split()[0])

    async def _standing(self, user: str, rest: str) -> Answer:
        """The active standing rules, each with Revoke (admins only)."""
        return await StandingAdmin(self._service, self._clock, publisher=self._publisher).listing(
            user
        )

    async def _delegation_list(self, user: str, rest: str) -> Answer:
        return await self._delegations.listing(user)

    async def _revoke_delegation(self, user: str, rest: str) -> Answer:
        if not rest:
            return _plain("Say which: `/countersign revoke-delegation <id>` (see `delegations`).")
        return _plain(await self._delegations.revoke(user, rest.split()[0]))

    async def _show(self, user: str, proposal_id: str) -> Answer:
        store = self._service.store
        try:
            proposal = await store.get_proposal(proposal_id)
        except ProposalNotFound:
            proposal = None
        if proposal is None or not await self._may_see(proposal, user):
            # the same answer for a proposal that exists and one that does not
            return _plain(
                f"No proposal `{escape(proposal_id[:60])}` that you asked for, may decide or "
                "decided."
            )
        trail = await store.audit_log(proposal.id)
        # an edit shows what changed from the version it replaced, as in the App Home
        previous = (await self._home.previous_versions([proposal])).get(proposal.id)
        current = None  # what the operation's revalidation finds now, as in the App Home
        if proposal.status is Status.PENDING:
            current = await self._home.current_state(proposal, within=STATE_WITHIN)
        blocks = proposal_detail_blocks(
            proposal,
            trail,
            now=self._clock(),
            previous=previous,
            formats=self._publisher.formats_of(proposal.operation),
            current=current,
            agent_acts=self._publisher.agent_acts(proposal.operation),
        )
        return inert(proposal.preview.title)[:FALLBACK_MAX], blocks

    async def _may_see(self, proposal: Proposal, user: str) -> bool:
        """The accountable human, the decider, the agent's owners and the rule's approvers."""
        settings = self._service.settings
        agent = settings.agents.get(proposal.agent)
        if user in (proposal.requested_by, proposal.decided_by):
            return True
        if agent is not None and user in agent.owners:
            return True
        rule = next((r for r in settings.policy.rules if r.id == proposal.rule_id), None)
        if not isinstance(rule, AskRule):
            return False
        members = await self._service.directory.role_members(settings.roles)
        return any(user in members.get(role, frozenset()) for role in rule.approvers)


async def _help(user: str, rest: str) -> Answer:
    return "How to use /countersign", help_blocks()


def _plain(text: str) -> Answer:
    return text, [{"type": "section", "text": {"type": "mrkdwn", "text": text}}]


def register_slash_command(app: AsyncApp, command: SlashCommand) -> None:
    @app.command(COMMAND)
    async def on_command(ack: AsyncAck, body: dict[str, Any]) -> None:
        user = str(body.get("user_id") or "")
        try:
            async with asyncio.timeout(ANSWER_WITHIN):
                text, blocks = await command.answer(user, str(body.get("text") or ""))
        except TimeoutError:
            text, blocks = _plain("Countersign is busy right now; please try again.")
        except Exception:
            log.exception("/countersign failed for %s", user)
            text, blocks = _plain("Countersign could not answer that; please try again.")
        await ack(response_type="ephemeral", text=text, blocks=blocks)
