"""The Python client for Countersign's agent API.

    import countersign
    client = countersign.Client("http://127.0.0.1:8801", token, requested_by="U0DANA")
    answer = client.approve("Deploy v2 to production", "All checks passed on main.")

``answer`` is exactly one of Approved, Rejected, TimedOut or Cancelled. ``AsyncClient`` is the
same for asyncio; ``requires_approval`` guards a function; ``verify_callback`` checks a callback.
The documents it returns are the server's own models (contracts/api.py).
"""

from __future__ import annotations

from contracts.api import EscalationOut, ProblemOut, ProposalOut
from countersign.answers import Answer, Approved, Cancelled, Rejected, TimedOut
from countersign.callbacks import verify_callback
from countersign.client import GENERIC_DECISION, AsyncClient
from countersign.decorator import requires_approval
from countersign.errors import (
    CancelUnavailable,
    CountersignError,
    InvalidCallback,
    NotApproved,
    ProblemError,
    Unreachable,
)
from countersign.sync import Client

__all__ = [
    "GENERIC_DECISION",
    "Answer",
    "Approved",
    "AsyncClient",
    "CancelUnavailable",
    "Cancelled",
    "Client",
    "CountersignError",
    "EscalationOut",
    "InvalidCallback",
    "NotApproved",
    "ProblemError",
    "ProblemOut",
    "ProposalOut",
    "Rejected",
    "TimedOut",
    "Unreachable",
    "requires_approval",
    "verify_callback",
]
