"""The ``[limits]`` section of countersign.toml: how much of Countersign one agent may use.

Every agent gets the defaults of ``[limits]``; ``[agents.NAME.limits]`` overrides any of them for
one agent (a batch agent that legitimately submits more, say). An agent holds a token a model
can misuse, so every limit is on by default and none can be switched off, only raised.

```toml
[limits]
max_pending_proposals = 100     # proposals waiting for a person, per agent (all instances)
submissions_per_second = 10     # token bucket refill, per agent and instance
submissions_burst = 20          # token bucket size
reads_per_second = 20           # reads (with or without ?wait=) and withdrawals, per agent
reads_burst = 100               #   and instance: their own token bucket
max_long_polls = 20             # ?wait= reads held at once, per agent and instance
max_open_escalations = 10       # escalations nobody has taken yet, per agent (all instances)
body_timeout_seconds = 5        # a request body must arrive within this

[agents.batch-bot.limits]
max_pending_proposals = 1000
```
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from bot.settings.section import Section

__all__ = ["AgentLimitsSection", "Limits"]


class Limits(Section):
    """One agent's limits (the ``[limits]`` defaults, or an agent's with its overrides)."""

    #: proposals of the agent waiting for a person at once; past it 429, nothing stored
    max_pending_proposals: int = Field(default=100, ge=1, le=10_000_000)
    #: the submissions token bucket's refill rate (proposals and escalations together)
    submissions_per_second: float = Field(default=10.0, gt=0, le=1_000_000, allow_inf_nan=False)
    #: the bucket's size: submissions the agent may send at once after being idle
    submissions_burst: int = Field(default=20, ge=1, le=10_000_000)
    #: the reads token bucket's refill rate: reads of proposals and escalations (a long-poll
    #: is charged once, when it starts) and withdrawals; a bucket of its own, so that polling
    #: never spends the submissions' tokens
    reads_per_second: float = Field(default=20.0, gt=0, le=1_000_000, allow_inf_nan=False)
    #: the reads bucket's size: reads the agent may send at once after being idle
    reads_burst: int = Field(default=100, ge=1, le=10_000_000)
    #: long-polls (``?wait=``) of the agent held at once; past it 429
    max_long_polls: int = Field(default=20, ge=1, le=100_000)
    #: escalations of the agent that nobody has taken yet; past it 429, nothing stored
    max_open_escalations: int = Field(default=10, ge=1, le=1_000_000)
    #: a submission's body must arrive whole within this many seconds, else 408
    body_timeout_seconds: float = Field(default=5.0, gt=0, le=300, allow_inf_nan=False)

    def overridden(self, section: AgentLimitsSection | None) -> Limits:
        """These limits with the values ``section`` sets instead."""
        if section is None:
            return self
        changes: dict[str, Any] = section.model_dump(exclude_none=True)
        return self.model_validate({**self.model_dump(), **changes})


class AgentLimitsSection(Section):
    """``[agents.NAME.limits]``: any of the ``[limits]`` keys, for this agent only."""

    max_pending_proposals: int | None = Field(default=None, ge=1, le=10_000_000)
    submissions_per_second: float | None = Field(
        default=None, gt=0, le=1_000_000, allow_inf_nan=False
    )
    submissions_burst: int | None = Field(default=None, ge=1, le=10_000_000)
    reads_per_second: float | None = Field(default=None, gt=0, le=1_000_000, allow_inf_nan=False)
    reads_burst: int | None = Field(default=None, ge=1, le=10_000_000)
    max_long_polls: int | None = Field(default=None, ge=1, le=100_000)
    max_open_escalations: int | None = Field(default=None, ge=1, le=1_000_000)
    body_timeout_seconds: float | None = Field(default=None, gt=0, le=300, allow_inf_nan=False)
