"""The Python client for Countersign's agent API.

    import countersign
    client = countersign.Client("http://127.0.0.1:8801", token, requested_by="U0DANA")
    answer = client.approve("Deploy v2 to production", "All checks passed on main.")

``answer`` is exactly one of Approved, Rejected, TimedOut or Cancelled. ``AsyncClient`` is the
same for asyncio; ``requires_approval`` guards a function; ``verify_callback`` checks a callback.
The documents it returns are the models the server answers with (countersign.wire.api).

Importing the package imports none of this: each name is loaded on first use, so the Claude Code
hook (``countersign.claude_hook``, a new process per tool call) pays only for what it uses.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from countersign.answers import Answer, Approved, Cancelled, Rejected, TimedOut
    from countersign.callbacks.verify import verify_callback
    from countersign.client import GENERIC_DECISION, AsyncClient
    from countersign.decorator import requires_approval
    from countersign.errors import (
        CancelUnavailable,
        CountersignError,
        InvalidCallback,
        NotApproved,
        NotAsked,
        OutcomeUnknown,
        ProblemError,
        Unreachable,
        WaitInterrupted,
    )
    from countersign.sync import Client
    from countersign.wire.api import EscalationOut, ProblemOut, ProposalOut

#: each public name, and the module that defines it
_HOMES = {
    "GENERIC_DECISION": "countersign.client",
    "Answer": "countersign.answers",
    "Approved": "countersign.answers",
    "AsyncClient": "countersign.client",
    "CancelUnavailable": "countersign.errors",
    "Cancelled": "countersign.answers",
    "Client": "countersign.sync",
    "CountersignError": "countersign.errors",
    "EscalationOut": "countersign.wire.api",
    "InvalidCallback": "countersign.errors",
    "NotApproved": "countersign.errors",
    "NotAsked": "countersign.errors",
    "OutcomeUnknown": "countersign.errors",
    "ProblemError": "countersign.errors",
    "ProblemOut": "countersign.wire.api",
    "ProposalOut": "countersign.wire.api",
    "Rejected": "countersign.answers",
    "TimedOut": "countersign.answers",
    "Unreachable": "countersign.errors",
    "WaitInterrupted": "countersign.errors",
    "requires_approval": "countersign.decorator",
    "verify_callback": "countersign.callbacks.verify",
}

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
    "NotAsked",
    "OutcomeUnknown",
    "ProblemError",
    "ProblemOut",
    "ProposalOut",
    "Rejected",
    "TimedOut",
    "Unreachable",
    "WaitInterrupted",
    "requires_approval",
    "verify_callback",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'countersign' has no attribute {name!r}")
    value = getattr(import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})
