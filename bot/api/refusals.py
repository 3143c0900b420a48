"""What the agent API turns away for its own bounds, told to whoever counts it.

Three refusals happen before the store is asked anything, and an operator needs to see each
apart from the rest of the 429s and 503s (the app's metrics count them,
bot/monitoring/metrics.py):

* an agent's read, long-poll start or withdrawal past its reads bucket (429,
  bot/api/quotas.py), by agent;
* an agent's request shed because the event loop is behind (503, bot/api/agent_requests.py),
  by what it asked: a submission or a read (reads, long-polls, withdrawals);
* a delegation token refused without a lookup (bot/delegations/commands.py): not shaped as
  minted (401), or past the bound on lookups of tokens never seen here (429).

What is told is bounded: an agent's name from the configuration, the kind of request, the
reason. Never a token, a hash or an id.
"""

from __future__ import annotations

from typing import Literal, Protocol

__all__ = ["UNCOUNTED", "Refusals", "Shed", "TokenRefusal"]

#: what a shed request asked for
Shed = Literal["submission", "read"]
#: why a delegation token was refused without a lookup: its shape, or the bound on unknown ones
TokenRefusal = Literal["malformed", "unknown_tokens_limit"]


class Refusals(Protocol):
    """Told of each refusal as it is made."""

    def read_limited(self, agent: str) -> None:
        """``agent``'s read (or long-poll start, or withdrawal) was refused past its reads
        bucket."""

    def shed(self, request: Shed) -> None:
        """An agent's ``request`` was answered 503 because the loop was behind."""

    def token_refused(self, reason: TokenRefusal) -> None:
        """A delegation token was refused, for ``reason``, without being looked up."""


class _Uncounted:
    """Refusals told to nobody (an app without metrics, a unit test)."""

    def read_limited(self, agent: str) -> None:
        pass

    def shed(self, request: Shed) -> None:
        pass

    def token_refused(self, reason: TokenRefusal) -> None:
        pass


#: refusals counted nowhere
UNCOUNTED: Refusals = _Uncounted()
