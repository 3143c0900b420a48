"""Countersign's signed callbacks, on the agent's side.

``verify_callback`` checks one callback; ``CallbackReceiver`` serves handlers that are told each
verified callback exactly once (an aiohttp application or an ASGI one), recording what it handled
in a journal (``SqliteJournal`` for several processes, ``MemoryJournal`` for one).

Each name is imported from its module when first asked for: verifying a callback needs neither
the receiver's web server nor the journal's SQLite.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from countersign.callbacks.journal import Claim, Journal, MemoryJournal, SqliteJournal
    from countersign.callbacks.receiver import CallbackReceiver, Document, Handler, NotYet, Reply
    from countersign.callbacks.verify import ESCALATION_HEADER, verify_callback

__all__ = [
    "ESCALATION_HEADER",
    "CallbackReceiver",
    "Claim",
    "Document",
    "Handler",
    "Journal",
    "MemoryJournal",
    "NotYet",
    "Reply",
    "SqliteJournal",
    "verify_callback",
]

_HOMES = {
    "ESCALATION_HEADER": "verify",
    "CallbackReceiver": "receiver",
    "Claim": "journal",
    "Document": "receiver",
    "Handler": "receiver",
    "Journal": "journal",
    "MemoryJournal": "journal",
    "NotYet": "receiver",
    "Reply": "receiver",
    "SqliteJournal": "journal",
    "verify_callback": "verify",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{home}"), name)
