"""Identifiers Countersign gives what it stores (proposals, escalations, delegations)."""

from __future__ import annotations

import base64
import secrets

__all__ = ["opaque_id"]


def opaque_id(prefix: str) -> str:
    """``prefix`` and 128 random bits in lowercase base32: opaque, unguessable, safe in a Slack
    button value."""
    return prefix + base64.b32encode(secrets.token_bytes(16)).decode().rstrip("=").lower()
