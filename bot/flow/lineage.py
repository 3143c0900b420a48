"""The edit lineage of a proposal: everyone who edited it or any version it replaced.

None of them may decide it (contracts.authority.DecisionChain.editors): an approver who edits a
proposal hands the decision on the edit, and on every later edit of it, to someone else.
"""

from __future__ import annotations

from typing import Final

from store.proposals import Proposal
from store.protocol import Store

__all__ = ["MAX_LINEAGE", "editors_of"]

#: How many versions back the walk goes at most (a guard; real lineages are a few edits long).
MAX_LINEAGE: Final = 100


async def editors_of(store: Store, proposal: Proposal) -> tuple[str, ...]:
    """The editors along ``proposal``'s ``supersedes`` lineage, latest first, each once.

    Raises ProposalNotFound if a version it names is missing, ValueError if the lineage loops
    or is absurdly long: the decision is then refused, never allowed without knowing.
    """
    editors: list[str] = []
    current, seen = proposal, {proposal.id}
    while current.supersedes is not None:
        if current.edited_by is not None and current.edited_by not in editors:
            editors.append(current.edited_by)
        current = await store.get_proposal(current.supersedes)
        if current.id in seen or len(seen) >= MAX_LINEAGE:  # fail closed: nobody decides it
            raise ValueError(
                f"proposal {proposal.id!r}: its edit lineage loops or is longer than "
                f"{MAX_LINEAGE} versions; its editors cannot be known"
            )
        seen.add(current.id)
    return tuple(editors)
