"""HMAC signatures on the requests Countersign sends, each kind under its own name.

Countersign sends three kinds of signed request, and a signature made for one kind never verifies
as another, even when the receiver uses one secret for all of them:

- an execution, to an operation's target: header ``X-Countersign-Signature``, message
  ``"countersign-execution:v1:" + timestamp + ":" + body``;
- a revalidation, to an operation's ``revalidate_url``: header ``X-Countersign-Signature``,
  message ``"countersign-revalidation:v1:" + timestamp + ":" + body``;
- a callback, to an agent's ``callback_url``: header ``X-Countersign-Callback-Signature``,
  message ``"countersign-callback:v1:" + timestamp + ":" + body``.

Every signed request also carries ``X-Countersign-Timestamp`` (Unix seconds when it was signed).
The header's value is ``v1=<hex HMAC-SHA256(secret, message)>``. A receiver recomputes the
signature over the raw body for the one kind its endpoint accepts, compares in constant time and
refuses timestamps outside a tolerance window, so a captured request can neither be replayed later
nor replayed to an endpoint of another kind (a callback sent to an execution target fails there).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final

__all__ = [
    "CALLBACK",
    "CALLBACK_SIGNATURE_HEADER",
    "EXECUTION",
    "REVALIDATION",
    "SIGNATURE_HEADER",
    "SIGNATURE_VERSION",
    "TIMESTAMP_HEADER",
    "Purpose",
    "sign",
    "signed_headers",
    "verify",
]

SIGNATURE_VERSION: Final = "v1"
TIMESTAMP_HEADER: Final = "X-Countersign-Timestamp"
#: The signature header of requests to an operation's target (execution and revalidation).
SIGNATURE_HEADER: Final = "X-Countersign-Signature"
#: The signature header of callbacks to agents.
CALLBACK_SIGNATURE_HEADER: Final = "X-Countersign-Callback-Signature"


@dataclass(frozen=True, slots=True)
class Purpose:
    """What a signed request is for: the header it is sent in and the label it is signed under."""

    label: str  #: the signed message starts with "<label>:v1:"
    header: str


EXECUTION: Final = Purpose("countersign-execution", SIGNATURE_HEADER)
REVALIDATION: Final = Purpose("countersign-revalidation", SIGNATURE_HEADER)
CALLBACK: Final = Purpose("countersign-callback", CALLBACK_SIGNATURE_HEADER)


def _digest(secret: str, purpose: Purpose, timestamp: str, body: bytes) -> str:
    message = f"{purpose.label}:{SIGNATURE_VERSION}:{timestamp}:".encode() + body
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def sign(secret: str, timestamp: int | str, body: bytes, *, purpose: Purpose) -> str:
    """The signature header value for ``body`` signed at ``timestamp`` (Unix seconds)."""
    if not secret:
        raise ValueError("signing secret is empty; expected a non-empty shared secret")
    return f"{SIGNATURE_VERSION}={_digest(secret, purpose, str(timestamp), body)}"


def signed_headers(secret: str, body: bytes, *, now: datetime, purpose: Purpose) -> dict[str, str]:
    """The timestamp and signature headers for ``body``, signed at ``now`` for ``purpose``."""
    if now.tzinfo is None:
        raise ValueError(f"now must be timezone-aware, got naive datetime {now.isoformat()}")
    timestamp = str(int(now.timestamp()))
    return {
        TIMESTAMP_HEADER: timestamp,
        purpose.header: sign(secret, timestamp, body, purpose=purpose),
    }


def verify(
    secret: str | Sequence[str],
    timestamp: int | str,
    body: bytes,
    signature: str,
    *,
    now: datetime,
    purpose: Purpose,
    tolerance: int = 300,
) -> bool:
    """True when ``signature`` signs ``body`` at ``timestamp`` for ``purpose``, and the
    timestamp is fresh.

    ``timestamp`` and ``signature`` are the header values as received (``signature`` from
    ``purpose.header``); ``tolerance`` is how many seconds the timestamp may differ from ``now``.
    ``secret`` may be several secrets while one is being replaced (the new one and the old one):
    a signature under any of them verifies, each compared in constant time.
    """
    if now.tzinfo is None:
        raise ValueError(f"now must be timezone-aware, got naive datetime {now.isoformat()}")
    candidates = [secret] if isinstance(secret, str) else list(secret)
    text = str(timestamp)
    if not text.isascii() or not text.isdigit():
        return False
    if abs(now.timestamp() - int(text)) > tolerance:
        return False
    verified = False
    for candidate in candidates:
        if candidate:  # an empty secret verifies nothing
            expected = f"{SIGNATURE_VERSION}={_digest(candidate, purpose, text, body)}"
            verified |= hmac.compare_digest(expected.encode(), signature.encode())
    return verified
