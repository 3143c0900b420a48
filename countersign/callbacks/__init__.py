"""Countersign's signed callbacks, on the agent's side.

``verify_callback`` checks one callback; ``CallbackReceiver`` serves handlers that are told each
verified callback exactly once (an aiohttp application or an ASGI one), recording what it handled
in a journal (``SqliteJournal`` for several processes, ``MemoryJournal`` for one).
"""

from __future__ import annotations

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
