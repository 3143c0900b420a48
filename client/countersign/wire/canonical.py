"""Canonical JSON: one byte string per JSON value, the same on both sides."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["canonical_json"]


#: the encoder, made once (json.dumps with these options makes one at every call)
_ENCODE = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
).encode


def canonical_json(value: Any) -> bytes:
    """One byte string per JSON value: sorted keys, no spaces, UTF-8, no NaN."""
    return _ENCODE(value).encode()
