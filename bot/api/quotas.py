"""Per-agent quotas: one agent, however it floods, cannot starve the others.

An agent's token may be in the hands of a prompt-injected model. Each agent gets its own share
of Countersign (``[limits]``, bot/settings/limits.py), checked in this order on every submission:

* **rate**: a token bucket per agent (``submissions_per_second``, ``submissions_burst``), checked
  before the body is read; past it ``429`` with ``Retry-After`` computed from the bucket. Kept
  per instance: N instances let an agent submit N times the rate.
* **reads**: a second bucket per agent (``reads_per_second``, ``reads_burst``) for everything
  else an agent asks: reads of its proposals and escalations (a long-poll is charged once, as
  it starts) and withdrawals. Checked as soon as the caller is known, before the store is read
  (for a delegation token already seen, before its lookup: bot/delegations/lookups.py); past it
  ``429`` with ``Retry-After``. Reads are cheaper than submissions and clients poll, so the
  default is generous (a client's long-poll reads once every 25 s per proposal waited for), but
  an agent can no longer read as fast as it likes and take the loop from people's clicks.
* **pending**: proposals waiting for a person (``max_pending_proposals``), read from the count
  the store keeps per agent (migration 0016: one row on SQLite, eight on PostgreSQL, whatever
  the backlog), so the bound holds across instances, plus the agent's submissions in flight on
  this instance not stored yet (:class:`Claim`: a burst of concurrent submissions cannot all
  see the last free place). The store checks it as it stores the proposal (``PendingLimit``:
  on PostgreSQL in the insert's own statement), after the idempotency replay (a retry of a
  stored submission still gets its proposal), and only for what would wait for a person (an
  automatic or denied proposal waits for nobody). Across instances the bound can be overshot
  by what the other instances have in flight for the agent at that moment.
* **open escalations**: the same, for escalations nobody has taken (``max_open_escalations``).
* **long-polls**: ``?wait=`` reads held at once per agent (``max_long_polls``), per instance.

A refused request takes nothing: no slot, no row, no audit entry, no store read, and no token
from the bucket (a submission refused after taking one, at capacity or at one of these limits,
gives it back: a refused request is not throughput; so does a read or withdrawal refused
because the store is unavailable). Each refusal is told to the app's
:class:`~bot.api.refusals.Refusals` (its metrics) by the agent's configured name: reads past the
reads bucket as such, the others by the limit reached.
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field

from bot.api.buckets import TokenBucket
from bot.api.problems import Problem
from bot.api.refusals import UNCOUNTED, AgentLimit, Refusals
from bot.settings import AgentSettings
from contracts.base import FieldProblem
from store.escalations import EscalationStore
from store.proposals import NewProposal, PendingLimit, Status
from store.protocol import Store

__all__ = [
    "RETRY_WHEN_FULL",
    "Claim",
    "Quotas",
    "admit_pending",
    "over_limit",
]

#: Retry-After (seconds) when an agent's pending proposals or open escalations are at their
#: limit: places free up only as people decide or proposals expire, not within a second.
RETRY_WHEN_FULL = 30


def over_limit(
    agent: AgentSettings,
    what: str,
    setting: str,
    limit: float,
    *,
    retry_after: float,
    done: str = "nothing was stored",
) -> Problem:
    """429 naming the agent, the limit and the setting that raises it; ``done``: what came of
    the request (nothing)."""
    seconds = max(1, math.ceil(retry_after))
    return Problem(
        429,
        "Too many requests",
        f"agent {agent.name!r} has reached its limit of {limit:g} {what}; {done}. "
        f"Retry after {seconds} s (the operator can raise limits.{setting}).",
        problems=[FieldProblem(field=f"limits.{setting}", message=f"at most {limit:g} {what}")],
        headers={"Retry-After": str(seconds)},
    )


#: what each limit on in-flight submissions counts, as a refusal names it, by its setting
_CLAIMED: dict[AgentLimit, str] = {
    "max_pending_proposals": "proposals waiting for a decision",
    "max_open_escalations": "escalations nobody has taken yet",
}


class Quotas:
    """The per-instance part of the quotas: each agent's buckets and its long-polls in flight.
    Each request refused at one of an agent's limits is told to ``refusals``."""

    def __init__(
        self,
        monotonic: Callable[[], float] = time.monotonic,
        *,
        refusals: Refusals = UNCOUNTED,
    ) -> None:
        self._monotonic = monotonic
        self._refusals = refusals
        self._buckets: dict[str, TokenBucket] = {}
        self._read_buckets: dict[str, TokenBucket] = {}
        self._long_polls: dict[str, int] = {}
        self._pending_claims: dict[str, int] = {}
        self._pending_proposals: dict[str, dict[int, str]] = {}
        self._escalation_claims: dict[str, int] = {}

    def admit_submission(self, agent: AgentSettings) -> None:
        """Take a token from ``agent``'s bucket, or raise 429 with the wait until the next one."""
        limits = agent.limits
        wait = self._take(
            self._buckets, agent, limits.submissions_per_second, limits.submissions_burst
        )
        if wait > 0:
            self._refusals.limited(agent.name, "submissions_per_second")
            raise over_limit(
                agent,
                f"submissions per second (burst {limits.submissions_burst})",
                "submissions_per_second",
                limits.submissions_per_second,
                retry_after=wait,
            )

    def admit_read(self, agent: AgentSettings) -> None:
        """Take a token from ``agent``'s reads bucket (a read, the start of a long-poll, a
        withdrawal), or raise 429 with the wait until the next one."""
        limits = agent.limits
        wait = self._take(self._read_buckets, agent, limits.reads_per_second, limits.reads_burst)
        if wait > 0:
            self._refusals.read_limited(agent.name)
            raise over_limit(
                agent,
                f"reads per second (burst {limits.reads_burst})",
                "reads_per_second",
                limits.reads_per_second,
                retry_after=wait,
                done="nothing was read or changed",
            )

    def _take(
        self, buckets: dict[str, TokenBucket], agent: AgentSettings, rate: float, burst: int
    ) -> float:
        """A token from ``agent``'s bucket among ``buckets`` (made full at first use): 0.0 when
        taken, else the seconds until the next one."""
        now = self._monotonic()
        bucket = buckets.get(agent.name)
        if bucket is None:
            bucket = buckets[agent.name] = TokenBucket.filled(rate, burst, now)
        return bucket.take(now)

    def refund(self, agent: AgentSettings) -> None:
        """Give back the token of a submission Countersign then refused for its own reasons (at
        capacity, busy, store unavailable): a request refused so was not served, so it does not
        count against the agent's rate. A refusal for one of the agent's own limits (its pending
        proposals, its open escalations) keeps the token: it comes after the request was served
        up to the store, and the agent filled those places itself."""
        bucket = self._buckets.get(agent.name)
        if bucket is not None:
            bucket.give_back()

    def refund_read(self, agent: AgentSettings) -> None:
        """Give back the token of a read or withdrawal refused because the store was
        unavailable (503): not served, so not charged, as for a submission (:meth:`refund`)."""
        bucket = self._read_buckets.get(agent.name)
        if bucket is not None:
            bucket.give_back()

    @contextmanager
    def long_poll(self, agent: AgentSettings) -> Iterator[None]:
        """Hold one of ``agent``'s long-poll places for the block, or raise 429 when all are
        taken."""
        held = self._long_polls.get(agent.name, 0)
        limit = agent.limits.max_long_polls
        if held >= limit:
            self._refusals.limited(agent.name, "max_long_polls")
            raise over_limit(
                agent, "long-polls held at once", "max_long_polls", limit, retry_after=1
            )
        self._long_polls[agent.name] = held + 1
        try:
            yield
        finally:
            left = self._long_polls[agent.name] - 1
            if left:
                self._long_polls[agent.name] = left
            else:
                del self._long_polls[agent.name]

    def long_polls(self, agent: str) -> int:
        """How many long-polls of ``agent`` are held now."""
        return self._long_polls.get(agent, 0)

    def pending_claim(self, store: Store, agent: AgentSettings) -> AbstractContextManager[Claim]:
        """A claim for one proposal submission, released when the block ends (stored or not:
        once stored, the store's count has it)."""
        count = store.count_pending
        return self._claim(
            self._pending_claims,
            agent,
            count,
            "max_pending_proposals",
            proposals=self._pending_proposals,
        )

    def escalation_claim(
        self, store: EscalationStore, agent: AgentSettings
    ) -> AbstractContextManager[Claim]:
        """A claim for one escalation submission, released when the block ends."""
        count = store.count_open
        return self._claim(self._escalation_claims, agent, count, "max_open_escalations")

    @contextmanager
    def _claim(
        self,
        claims: dict[str, int],
        agent: AgentSettings,
        count: Callable[[str], Awaitable[int]],
        setting: AgentLimit,
        *,
        proposals: dict[str, dict[int, str]] | None = None,
    ) -> Iterator[Claim]:
        claim = Claim(
            claims,
            agent,
            lambda: count(agent.name),
            limit=getattr(agent.limits, setting),
            what=_CLAIMED[setting],
            setting=setting,
            proposals={} if proposals is None else proposals,
            refusals=self._refusals,
        )
        try:
            yield claim
        finally:
            claim.release()


@dataclass(eq=False)
class Claim:
    """One submission's claim on a place among its agent's pending proposals (or open
    escalations): taken before the store is counted, given back when the request ends.

    Counting alone is not enough: an agent sending 20 submissions at once would have each one
    count the store before any of them is stored, and all 20 would pass a limit of 3. A claim
    counts itself in first, so each submission also sees those of the same agent still in
    flight on this instance (a stored one may be counted twice for a moment: the check errs on
    the side of refusing). Across instances, each instance's in-flight submissions can still
    overshoot by what the others have in flight.
    """

    claims: dict[str, int]  #: the agents' claims in flight on this instance, by agent
    agent: AgentSettings
    count: Callable[[], Awaitable[int]]  #: the agent's stored ones
    limit: int = field(kw_only=True)
    what: str = field(kw_only=True)  #: what is counted, as the refusal names it
    setting: AgentLimit = field(kw_only=True)  #: the limit's key in the agent's settings
    held: bool = field(default=False, init=False)
    #: the proposals of the agents' claims in flight on this instance (by claim), when the
    #: store checks the limit (:meth:`bound`)
    proposals: dict[str, dict[int, str]] = field(default_factory=dict, kw_only=True)
    refusals: Refusals = field(default=UNCOUNTED, kw_only=True)  #: told of each refusal

    async def take(self) -> None:
        """Claim a place, or raise 429 when the agent's stored and in-flight ones fill them."""
        if self.held:  # asked again for the same submission (a re-classification)
            return
        name = self.agent.name
        others = self.claims.get(name, 0)
        self.claims[name] = others + 1  # counted in before the await: the next one sees it
        self.held = True
        try:
            full = await self.count() + others >= self.limit
        except BaseException:
            self.release()
            raise
        if full:
            raise self.refused()

    def bound(self, proposal_id: str) -> PendingLimit:
        """Claim a place for the proposal ``proposal_id`` without counting the store here: the
        limit, and the proposals of the agent's other submissions in flight on this instance,
        which the store counts with the stored ones as it stores this one (on PostgreSQL in the
        insert's own statement), each once whether stored yet or not; when it refuses,
        :meth:`refused`. Asked again (a re-classification), the claim names its new proposal."""
        name = self.agent.name
        if not self.held:
            self.claims[name] = self.claims.get(name, 0) + 1
            self.held = True
        mine = self.proposals.setdefault(name, {})
        mine[id(self)] = proposal_id
        others = tuple(other for claim, other in mine.items() if claim != id(self))
        return PendingLimit(self.limit, others)

    def refused(self) -> Problem:
        """Give the place back: the 429 of a submission that found no room (told to
        ``refusals``), by this count or the store's."""
        self.release()
        self.refusals.limited(self.agent.name, self.setting)
        return over_limit(
            self.agent, self.what, self.setting, self.limit, retry_after=RETRY_WHEN_FULL
        )

    def release(self) -> None:
        if not self.held:
            return
        self.held = False
        mine = self.proposals.get(self.agent.name)
        if mine is not None:
            mine.pop(id(self), None)
            if not mine:
                del self.proposals[self.agent.name]
        left = self.claims[self.agent.name] - 1
        if left:
            self.claims[self.agent.name] = left
        else:
            del self.claims[self.agent.name]


async def admit_pending(claim: Claim, new: NewProposal) -> PendingLimit | None:
    """Claim a place among the agent's pending proposals when ``new`` would wait for a person:
    the bound the store holds it to (:meth:`Claim.bound`; past it the store refuses it, and
    :meth:`Claim.refused` is the 429). An automatic or denied proposal waits for nobody: None."""
    if new.status is Status.PENDING:
        return claim.bound(new.id)
    return None
