"""The audit log outside the service: exporting it, verifying its hash chain, and anchoring
its head elsewhere.

- ``export``: ``countersign audit export`` (JSON Lines or CSV)
- ``commands``: ``countersign audit verify`` and ``countersign audit anchor``
- ``anchors``, ``anchoring``: anchor files, and writing anchors (also periodically from serve)

The names below are imported from their module when first asked for, so that importing one
module of this package imports neither the others nor the app they need.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot import exported_from

if TYPE_CHECKING:
    from bot.audit.anchoring import Anchorer, anchor_forever
    from bot.audit.commands import audit_anchor, audit_verify
    from bot.audit.export import ExportFormat, parse_since, write_export

__all__ = [
    "Anchorer",
    "ExportFormat",
    "anchor_forever",
    "audit_anchor",
    "audit_verify",
    "parse_since",
    "write_export",
]

#: the module of this package that defines each public name
_DEFINED_IN = {
    "Anchorer": "anchoring",
    "ExportFormat": "export",
    "anchor_forever": "anchoring",
    "audit_anchor": "commands",
    "audit_verify": "commands",
    "parse_since": "export",
    "write_export": "export",
}

__getattr__ = exported_from(__name__, _DEFINED_IN)
