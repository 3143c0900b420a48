"""What the agent API turns away for its own bounds, told to whoever counts it.

An operator needs to see each of these refusals apart from the rest of the 429s and 503s (the
app's metrics count them, bot/monitoring/metrics.py):

* an agent's read, long-poll start or withdrawal past its reads bucket (429,
  bot/api/quotas.py), by agent;
* an agent's submission or long-poll refused at one of its other limits (429,
  bot/api/quotas.py), by agent and limit: its submission rate, its pending proposals, its open
  escalations, its long-polls held at once;
* an agent's request shed because the event loop is behind (503, bot/api/agent_requests.py),
  by what it asked: a submission or a read (reads, long-polls, withdrawals);
* a delegation token refused without a lookup (bot/delegations/commands.py): not shaped as
  minted (401), or past the bound on lookups of tokens never seen here (429).

What is told is bounded: an agent's name from the configuration (never one a token holder
wrote), the kind of request, the limit or the reason. Never a token, a hash or an id.
"""

from __future__ import annotations

from typing import Literal, Protocol

__all__ = ["UNCOUNTED", "AgentLimit", "Refusals", "Shed", "TokenRefusal"]

#: what a shed request asked for
Shed = Literal["submission", "read"]
#: why a delegation token was refused without a lookup: its shape, or the bound on unknown ones
TokenRefusal = Literal["malformed", "unknown_tokens_limit"]
#: the limit of its own an agent's submission or long-poll was refused at: its key in [limits]
AgentLimit = Literal[
    "submissions_per_second", "max_pending_proposals", "max_open_escalations", "max_long_polls"
]


class Refusals(Protocol):
    """Told of each refusal as it is made."""

    def read_limited(self, agent: str) -> None:
        """``agent``'s read (or long-poll start, or withdrawal) was refused past its reads
        bucket."""

    def limited(self, agent: str, limit: AgentLimit) -> None:
        """``agent``'s submission (or long-poll) was refused at its ``limit``."""

    def shed(self, request: Shed) -> None:
        """An agent's ``request`` was answered 503 because the loop was behind."""

    def token_refused(self, reason: TokenRefusal) -> None:
        """A delegation token was refused, for ``reason``, without being looked up."""


class _Uncounted:
    """Refusals told to nobody (an app without metrics, a unit test)."""

    def read_limited(self, agent: str) -> None:
        pass

    def limited(self, agent: str, limit: AgentLimit) -> None:
        pass

    def shed(self, request: Shed) -> None:
        pass

    def token_refused(self, reason: TokenRefusal) -> None:
        pass


#: refusals counted nowhere
UNCOUNTED: Refusals = _Uncounted()
