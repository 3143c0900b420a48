"""One page of what waits for a person, shared fairly between the agents that asked.

An agent that floods Countersign with proposals must not crowd the others out of an approver's
App Home or ``/countersign list``. The page is filled round-robin: the agents take turns, each
adding its riskiest (then soonest to expire) proposal not yet on the page, the agent with the
riskiest proposal first; an agent with less than its share leaves the rest to the others. The
page is then shown grouped by agent, riskiest first within each group, with how many of each
agent's pending proposals are beyond the page. Pure: no store, clock or I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from store.proposals import Proposal

__all__ = ["WaitingPage", "fair_page"]


@dataclass(frozen=True, slots=True)
class WaitingPage:
    #: the proposals on the page, grouped by agent (groups riskiest first), store order within
    shown: tuple[Proposal, ...] = ()
    #: per agent, its pending proposals not on the page (agents with none left out)
    beyond: Mapping[str, int] = field(default_factory=dict)

    @property
    def more(self) -> int:
        """Pending proposals not on the page, all agents together."""
        return sum(self.beyond.values())


def fair_page(
    decidable: Mapping[str, Sequence[Proposal]],
    unchecked: Mapping[str, int],
    *,
    size: int,
) -> WaitingPage:
    """The page of at most ``size`` proposals from ``decidable`` (per agent, in the store's
    order: riskiest first, then soonest expiry), and per agent how many are not on it: its
    decidable ones left over, plus its ``unchecked`` pending ones (not read, or not checked,
    to keep the work bounded: they may or may not be the person's to decide)."""
    if size < 1:
        raise ValueError(f"size: got {size}; expected at least 1 proposal per page")
    queues = {agent: list(items) for agent, items in decidable.items() if items}
    # the agent whose best proposal is riskiest (then soonest to expire) goes first
    order = sorted(queues, key=lambda agent: (_rank(queues[agent][0]), agent))
    taken: dict[str, list[Proposal]] = {agent: [] for agent in order}
    filled = 0
    while filled < size and any(len(taken[a]) < len(queues[a]) for a in order):
        for agent in order:
            if filled == size:
                break
            if len(taken[agent]) < len(queues[agent]):
                taken[agent].append(queues[agent][len(taken[agent])])
                filled += 1
    shown = tuple(proposal for agent in order for proposal in taken[agent])
    on_page = {agent: len(items) for agent, items in taken.items()}
    beyond = {
        agent: left
        for agent in sorted(set(unchecked) | set(queues))
        if (left := len(queues.get(agent, ())) - on_page.get(agent, 0) + unchecked.get(agent, 0))
        > 0
    }
    return WaitingPage(shown=shown, beyond=beyond)


def _rank(proposal: Proposal) -> tuple[int, float, str]:
    """The store's order: riskiest first, then soonest expiry (none: last), then id."""
    risk = {"irreversible": 0, "reversible": 1, "read": 2}[proposal.risk]
    expires = proposal.expires_at.timestamp() if proposal.expires_at is not None else math.inf
    return risk, expires, proposal.id
