"""Show full: open the read-only modal with every frozen argument of a proposal (or of each
item of a digest) in full, for anyone who clicked the button.

The click needs no role: it changes nothing and shows only what the message it was clicked on
already shows in part. It must still be a real click: bolt verifies Slack's signature before any
listener runs, and the modal opens only with the click's own ``trigger_id``. An unknown id opens
nothing (logged).
"""

from __future__ import annotations

import logging

from bot.render.full import full_view, full_views
from bot.slack.publish import SlackPublisher
from store.digests import DigestNotFound
from store.proposals import ProposalNotFound
from store.protocol import Store

__all__ = ["ShowFull"]

log = logging.getLogger(__name__)


class ShowFull:
    def __init__(self, store: Store, publisher: SlackPublisher) -> None:
        self._store = store
        self._publisher = publisher

    async def proposal(self, proposal_id: str, *, user: str, trigger_id: str) -> bool:
        """Open the modal for one proposal; False when it does not exist or Slack refused."""
        try:
            proposal = await self._store.get_proposal(proposal_id)
        except ProposalNotFound:
            log.info("Show full on unknown proposal %r by %s", proposal_id, user)
            return False
        view = full_view(proposal, self._publisher.formats_of(proposal.operation))
        return await self._publisher.open_view(proposal, trigger_id, view)

    async def digest(self, digest_id: str, *, user: str, trigger_id: str) -> bool:
        """Open the modal for every item of a digest, in the digest's order."""
        try:
            digest = await self._store.digests().get_digest(digest_id)
        except DigestNotFound:
            log.info("Show full on unknown digest %r by %s", digest_id, user)
            return False
        view = full_views(
            digest.items, title="Full proposals", formats_of=self._publisher.formats_of
        )
        return await self._publisher.open_view(None, trigger_id, view)
