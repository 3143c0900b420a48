"""HMAC signatures on the requests Countersign sends, each kind under its own name.

The scheme is defined once, on the agent's side (countersign.wire.signing), where a receiver of
callbacks verifies them; Countersign signs with the same definition.
"""

from __future__ import annotations

from countersign.wire.signing import (
    CALLBACK,
    CALLBACK_SIGNATURE_HEADER,
    EXECUTION,
    REVALIDATION,
    SIGNATURE_HEADER,
    SIGNATURE_VERSION,
    TIMESTAMP_HEADER,
    Purpose,
    sign,
    signed_headers,
    verify,
)

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
