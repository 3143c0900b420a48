"""Canonical JSON (one definition with the agent's side, countersign.wire.canonical) and the hash
that binds a frozen contract to what a human saw."""

from __future__ import annotations

import hashlib
from typing import Any

from countersign.wire.canonical import canonical_json

__all__ = ["binding_hash", "canonical_json"]


def binding_hash(operation: str, arguments: Any, preview: Any) -> str:
    """SHA-256 over the operation, its frozen arguments and the preview built from them.

    Stored with the proposal and recomputed before execution: if the stored arguments or preview
    were altered after a person saw them, the hashes differ and nothing runs.
    """
    body = canonical_json({"operation": operation, "arguments": arguments, "preview": preview})
    return hashlib.sha256(body).hexdigest()
