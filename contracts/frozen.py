"""The base of every value that crosses a layer: immutable, strict, no unknown fields.

One definition with the wire documents' base, which the agent's side ships
(countersign.wire.base): a value of either is the same kind of value.
"""

from __future__ import annotations

from countersign.wire.base import Frozen

__all__ = ["Frozen"]
