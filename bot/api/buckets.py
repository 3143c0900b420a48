"""A token bucket: ``burst`` tokens, refilled at ``rate`` per second; each request takes one.

Kept apart from the quotas that use it (bot/api/quotas.py: each agent's submissions and reads;
bot/delegations/lookups.py: lookups of delegation tokens nobody has seen) so that either can
hold one without importing the other.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["TokenBucket"]


@dataclass
class TokenBucket:
    """``burst`` tokens, refilled at ``rate`` per second; a request takes one."""

    rate: float
    burst: int
    tokens: float
    updated: float  #: the monotonic time ``tokens`` was last brought up to date

    @classmethod
    def filled(cls, rate: float, burst: int, now: float) -> TokenBucket:
        """A bucket with all its ``burst`` tokens, as of the monotonic time ``now``."""
        return cls(rate, burst, float(burst), now)

    def take(self, now: float) -> float:
        """Take a token: 0.0 when taken, otherwise the seconds until one is there (nothing is
        taken then)."""
        self.tokens = min(self.burst, self.tokens + (now - self.updated) * self.rate)
        self.updated = now
        if self.tokens >= 1:
            self.tokens -= 1
            return 0.0
        return (1 - self.tokens) / self.rate

    def give_back(self) -> None:
        """Return a token taken for a request that was then not served."""
        self.tokens = min(self.burst, self.tokens + 1)
