"""The ``[monitoring]`` section of countersign.toml: where metrics are served, and what readiness
means.

```toml
[monitoring]
metrics_port = 9464         # serve /metrics on its own port (default: on the main port)
metrics_host = "127.0.0.1"  # where that port listens
outbox_stuck_seconds = 300  # /readyz fails when deliveries wait and none went out this long
slack_check_seconds = 30    # how often auth.test is tried again until it has succeeded once
```
"""

from __future__ import annotations

from pydantic import Field

from bot.settings.section import Section

__all__ = ["MonitoringSettings"]


class MonitoringSettings(Section):
    #: serve /metrics on this port only, apart from Slack and the agents; None: on the main port
    metrics_port: int | None = Field(default=None, ge=0, le=65535)
    #: the address the metrics port listens on
    metrics_host: str = "127.0.0.1"
    #: the outbox counts as stuck when entries wait and this instance delivered none for so long
    outbox_stuck_seconds: float = Field(default=300, gt=0, le=86400, allow_inf_nan=False)
    #: how often ``auth.test`` is tried again while it has never succeeded (--allow-offline)
    slack_check_seconds: float = Field(default=30, gt=0, le=3600, allow_inf_nan=False)
