"""The ``[slack]`` section of countersign.toml: when similar proposals share one digest message.

```toml
[slack]
digests = true              # false: every proposal gets its own message
digest_min = 2              # similar proposals due together that make a digest
digest_max = 25             # items per digest message (a bigger group gets several)
digest_window_seconds = 0.3 # how long a new post waits for similar ones before it goes out
```

Similar means the same channel, operation and accountable human (``requested_by``). Secrets and
the API address of Slack come from the environment (bot/settings/load.py, ``slack_settings``).
"""

from __future__ import annotations

from typing import Self

from pydantic import Field, model_validator

from bot.settings.section import Section

__all__ = ["DIGEST_MAX", "DigestSettings"]

#: The most items one digest message lists: its rows and buttons stay within Block Kit's 50
#: blocks, and its "Choose…" modal within five checkbox groups of ten.
DIGEST_MAX = 50


class DigestSettings(Section):
    #: post similar proposals that are due together as one digest message
    digests: bool = True
    #: the smallest group of similar proposals posted as a digest (smaller ones: one message each)
    digest_min: int = Field(default=2, ge=2, le=DIGEST_MAX)
    #: the most proposals in one digest message
    digest_max: int = Field(default=25, ge=2, le=DIGEST_MAX)
    #: how long a post that found nothing else due waits for similar proposals to arrive (while
    #: the outbox is busy it never waits: what is due is grouped at once)
    digest_window_seconds: float = Field(default=0.3, ge=0, le=10, allow_inf_nan=False)

    @model_validator(mode="after")
    def _min_within_max(self) -> Self:
        if self.digest_min > self.digest_max:
            raise ValueError(
                f"digest_min ({self.digest_min}) must not be more than digest_max "
                f"({self.digest_max})"
            )
        return self
