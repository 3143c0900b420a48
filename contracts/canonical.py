"""Canonical JSON (one definition with the agent's side, countersign.wire.canonical) and the hash
that binds a frozen contract to what a human saw."""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

from pydantic import JsonValue

from countersign.wire.canonical import canonical_json

__all__ = ["binding_hash", "canonical_json", "finite_json"]


def binding_hash(operation: str, arguments: Any, preview: Any) -> str:
    """SHA-256 over the operation, its frozen arguments and the preview built from them.

    Stored with the proposal and recomputed before execution: if the stored arguments or preview
    were altered after a person saw them, the hashes differ and nothing runs.
    """
    body = canonical_json({"operation": operation, "arguments": arguments, "preview": preview})
    return hashlib.sha256(body).hexdigest()


def finite_json(text: str | bytes) -> JsonValue:
    """``text`` read as JSON that :func:`canonical_json` can write back; ValueError otherwise.
    Python's reader takes ``NaN`` and ``Infinity`` (not JSON at all) and reads a number past a
    float's range (``1e999``, valid JSON) as infinity: nothing can hash, sign or store those,
    so both are refused here, named, rather than failing later wherever they are written."""
    value: JsonValue = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)
    return value


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON value")


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"{text} is past the range of a finite number")
    return number
