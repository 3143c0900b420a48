"""The App Home tab: what waits for the person who opens it, published with views.publish.

It lists the pending proposals that person may decide (every click-time check applied:
separation of duties, roles as configured now, the person's Slack profile; not those they
already approved), each agent getting a fair share of the page (bot/slack/waiting_page.py: one
agent's flood cannot crowd the others out), grouped by agent, riskiest first, then soonest
expiry, with how many are beyond the page; the escalations they own and their recent
decisions. When something changes for someone (a proposal of a rule they approve, an
escalation they own or owned), their tab is published
again in the background, if they opened it since this process started (the others see a fresh
tab whenever they open it): at most :data:`REFRESH_MAX` people per change, each once however
many changes pile up meanwhile. Each waiting proposal shows the current state its
operation's revalidation found, checked in the background (bot/slack/current_state.py): the
tab is published at once and again when a check it asked for is done.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any, Final

from slack_bolt.app.async_app import AsyncApp
from slack_sdk.errors import SlackApiError, SlackClientError

from bot.delegations.commands import Delegations
from bot.escalations.flow import EscalationService
from bot.flow.service import Service
from bot.render.home import WAITING_SHOWN, StateCheck, home_view
from bot.settings import is_user_group
from bot.slack.current_state import CurrentState
from bot.slack.publish import SlackPublisher
from bot.slack.tasks import BackgroundTasks
from bot.slack.waiting_page import WaitingPage, fair_page
from store.escalations import Escalation
from store.proposals import Proposal, ProposalNotFound

__all__ = ["REFRESH_MAX", "SUBSCRIBED_EVENTS", "HomeTab", "register_home_listener"]

log = logging.getLogger(__name__)

#: The events the app subscribes to (manifest.yml), each with its listener below.
SUBSCRIBED_EVENTS: Final = ("app_home_opened",)
#: The most people whose tabs one change republishes.
REFRESH_MAX: Final = 25
#: The most people whose opened tabs this process remembers (to refresh them).
REMEMBERED_MAX: Final = 10_000
#: Pending proposals read to find the ones a person may decide.
PENDING_READ: Final = 100


class HomeTab:
    def __init__(
        self,
        service: Service,
        escalations: EscalationService,
        clock: Callable[[], datetime],
        delegations: Delegations | None = None,
        *,
        publisher: SlackPublisher,
    ) -> None:
        self._service = service
        self._publisher = publisher
        self._escalations = escalations
        self._clock = clock
        self._delegations = delegations
        self._dirty: set[str] = set()
        self._opened: set[str] = set()  #: who opened their tab since this process started
        self._tasks = BackgroundTasks()
        self._draining = False
        self._current = CurrentState(
            service.settings.registry,
            lambda now: service.operation_context("home", now),
            clock,
            self._checked,
        )
        #: for each proposal being checked, the people whose tab waits for it
        self._checking_for: dict[str, set[str]] = {}

    async def waiting_for(self, user: str) -> list[Proposal]:
        """The page of pending proposals ``user`` may decide now (see :meth:`waiting_page`)."""
        return list((await self.waiting_page(user)).shown)

    async def waiting_page(self, user: str) -> WaitingPage:
        """The pending proposals ``user`` may decide now, a fair share of the page for each
        agent (bot/slack/waiting_page.py), and how many of each agent's are beyond the page.

        Each agent's pending proposals are read in the store's order (riskiest first, then
        soonest expiry), at most :data:`PENDING_READ`, and checked until a page's worth is
        found: one agent's flood costs no more to list than a page."""
        store = self._service.store
        decidable: dict[str, list[Proposal]] = {}
        unchecked: dict[str, int] = {}
        for agent, count in sorted((await store.pending_by_agent()).items()):
            found = decidable[agent] = []
            checked = 0
            for proposal in await store.pending_proposals(agent=agent, limit=PENDING_READ):
                if len(found) == WAITING_SHOWN:
                    break
                checked += 1
                if await self._service.refusal_for(proposal, user) is None:
                    found.append(proposal)
            unchecked[agent] = max(0, count - checked)
        return fair_page(decidable, unchecked, size=WAITING_SHOWN)

    async def previous_versions(self, proposals: Sequence[Proposal]) -> dict[str, Proposal]:
        """For each edit among ``proposals``, the version it replaced (to show what changed)."""
        found: dict[str, Proposal] = {}
        for proposal in proposals:
            if proposal.supersedes is not None:
                with contextlib.suppress(ProposalNotFound):
                    found[proposal.id] = await self._service.store.get_proposal(proposal.supersedes)
        return found

    async def current_state(self, proposal: Proposal, *, within: float) -> StateCheck | None:
        """What the operation's revalidation finds for ``proposal`` now, the same check the tab
        shows (bot/slack/current_state.py), waited for at most ``within`` seconds."""
        return await self._current.check(proposal, within=within)

    async def publish(self, user: str, *, notice: str | None = None) -> None:
        """Build and publish ``user``'s tab; a failure is logged (the tab is not state)."""
        store = self._service.store
        page = await self.waiting_page(user)
        waiting = list(page.shown)
        current = self._current.known(waiting)
        for proposal_id in self._current.request(waiting):
            self._checking_for.setdefault(proposal_id, set()).add(user)
        view = home_view(
            waiting=waiting,
            beyond=page.beyond,
            owned=await self._escalations.store.owned_by(user, limit=10),
            decisions=await store.decisions_by(user, limit=10),
            now=self._clock(),
            notice=notice,
            delegations=await self._delegations.active_of(user) if self._delegations else (),
            previous=await self.previous_versions(waiting),
            formats_of=self._publisher.formats_of,
            current=current,
            agent_acts_of=self._publisher.agent_acts,
        )
        try:
            await self._publisher.client.views_publish(user_id=user, view=view)
        except (SlackApiError, SlackClientError, OSError, TimeoutError) as error:
            log.warning("views.publish for %s failed: %s", user, error)

    async def opened(self, user: str) -> None:
        """``user`` opened their tab: publish it, and keep it fresh from now on."""
        if len(self._opened) < REMEMBERED_MAX:
            self._opened.add(user)
        await self.publish(user)

    async def notice(self, user: str, text: str) -> None:
        """The answer to a click made on the tab, shown at its top."""
        await self.publish(user, notice=text)

    def _checked(self, proposal: Proposal) -> None:
        """A check of the current state is done: show it to those whose tab asked for it."""
        self.refresh(self._checking_for.pop(proposal.id, set()))

    def refresh(self, users: Iterable[str]) -> None:
        """Publish these people's tabs again soon, in the background (those who opened it)."""
        self._dirty.update(user for user in users if user in self._opened)
        if self._dirty and not self._draining:
            self._draining = True
            self._tasks.spawn(self._drain(), name="home-refresh")

    async def _drain(self) -> None:
        try:
            while self._dirty:
                await self.publish(self._dirty.pop())
        finally:
            self._draining = False

    # --- as a subscriber of the services (bot/flow/subscribers.py, added by bot/app.py) -----------

    def proposal_changed(self, proposal: Proposal) -> None:
        people = {proposal.decided_by} if proposal.decided_by else set()
        people |= self._approvers(proposal)
        self.refresh(sorted(people & self._opened)[:REFRESH_MAX])

    def escalation_changed(self, escalation: Escalation, previous_owner: str | None) -> None:
        self.refresh(u for u in (escalation.owner, previous_owner) if u is not None)

    def _approvers(self, proposal: Proposal) -> set[str]:
        """The people named in the roles that may decide the proposal now: its rule's approver
        roles, and its backup roles once it was handed over (user groups are not expanded here:
        their members see the change when they next open the tab)."""
        settings = self._service.settings
        return {
            member
            for role in self._service.deciding_roles(proposal)
            for member in settings.roles.get(role, ())
            if not is_user_group(member) and member != proposal.requested_by
        }

    async def close(self) -> None:
        await self._current.close()
        await self._tasks.drain(timeout=5)


def register_home_listener(app: AsyncApp, home: HomeTab) -> None:
    @app.event("app_home_opened")
    async def on_home_opened(event: dict[str, Any]) -> None:
        user = event.get("user")
        if event.get("tab", "home") != "home" or not isinstance(user, str):
            return
        await home.opened(user)
