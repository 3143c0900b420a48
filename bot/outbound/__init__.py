"""What leaves the process: the outbox worker that delivers what transitions wrote (Slack posts,
updates and replies, agents' callbacks), and the HTTP client operations reach their targets with.

- ``outbox``: the worker, its retries and its queues (every instance at once, one lease each)
- ``http``: one aiohttp session for the operations' targets and the agents' callbacks

The names below are imported from their module when first asked for, so that importing one
module of this package imports neither the other nor the app they need.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot import exported_from

if TYPE_CHECKING:
    from bot.outbound.http import MAX_RESPONSE_BYTES, AiohttpClient
    from bot.outbound.outbox import (
        Coalescer,
        Deliverable,
        DeliverRun,
        DeliveryQueue,
        Interrupted,
        Job,
        OutboxWorker,
        RetryPolicy,
    )

__all__ = [
    "MAX_RESPONSE_BYTES",
    "AiohttpClient",
    "Coalescer",
    "DeliverRun",
    "Deliverable",
    "DeliveryQueue",
    "Interrupted",
    "Job",
    "OutboxWorker",
    "RetryPolicy",
]

#: the module of this package that defines each public name
_DEFINED_IN = {
    "MAX_RESPONSE_BYTES": "http",
    "AiohttpClient": "http",
    "Coalescer": "outbox",
    "DeliverRun": "outbox",
    "Deliverable": "outbox",
    "DeliveryQueue": "outbox",
    "Interrupted": "outbox",
    "Job": "outbox",
    "OutboxWorker": "outbox",
    "RetryPolicy": "outbox",
}

__getattr__ = exported_from(__name__, _DEFINED_IN)
