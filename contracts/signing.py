"""HMAC signatures on the requests Countersign sends to targets and agents.

A signed request carries two headers:

``X-Countersign-Timestamp``
    Unix seconds when the request was signed.
``X-Countersign-Signature``
    ``v1=<hex HMAC-SHA256(secret, "v1:" + timestamp + ":" + body)>``.

The receiver recomputes the signature over the raw body it read, compares it in constant time and
refuses timestamps outside a tolerance window, so a captured request cannot be replayed later.
"""

from __future__ import annotations

import hashlib
import hmac
from datetime import datetime
from typing import Final

__all__ = [
    "SIGNATURE_HEADER",
    "SIGNATURE_VERSION",
    "TIMESTAMP_HEADER",
    "sign",
    "signed_headers",
    "verify",
]

SIGNATURE_VERSION: Final = "v1"
TIMESTAMP_HEADER: Final = "X-Countersign-Timestamp"
SIGNATURE_HEADER: Final = "X-Countersign-Signature"


def _digest(secret: str, timestamp: str, body: bytes) -> str:
    message = f"{SIGNATURE_VERSION}:{timestamp}:".encode() + body
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def sign(secret: str, timestamp: int | str, body: bytes) -> str:
    """The signature header value for ``body`` signed at ``timestamp`` (Unix seconds)."""
    if not secret:
        raise ValueError("signing secret is empty; expected a non-empty shared secret")
    return f"{SIGNATURE_VERSION}={_digest(secret, str(timestamp), body)}"


def signed_headers(secret: str, body: bytes, *, now: datetime) -> dict[str, str]:
    """The timestamp and signature headers for ``body``, signed at ``now``."""
    if now.tzinfo is None:
        raise ValueError(f"now must be timezone-aware, got naive datetime {now.isoformat()}")
    timestamp = str(int(now.timestamp()))
    return {TIMESTAMP_HEADER: timestamp, SIGNATURE_HEADER: sign(secret, timestamp, body)}


def verify(
    secret: str,
    timestamp: int | str,
    body: bytes,
    signature: str,
    *,
    now: datetime,
    tolerance: int = 300,
) -> bool:
    """True when ``signature`` signs ``body`` at ``timestamp`` and the timestamp is fresh.

    ``timestamp`` and ``signature`` are the header values as received; ``tolerance`` is how many
    seconds the timestamp may differ from ``now`` either way.
    """
    if now.tzinfo is None:
        raise ValueError(f"now must be timezone-aware, got naive datetime {now.isoformat()}")
    if not secret:
        return False
    text = str(timestamp)
    if not text.isascii() or not text.isdigit():
        return False
    if abs(now.timestamp() - int(text)) > tolerance:
        return False
    expected = f"{SIGNATURE_VERSION}={_digest(secret, text, body)}"
    return hmac.compare_digest(expected.encode(), signature.encode())
