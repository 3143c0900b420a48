"""``countersign audit export``: the audit log with its hash chain, as JSON Lines or CSV.

Every exported entry carries what its hash covers, exactly as hashed, so the file can be checked
anywhere without Countersign: for each entry, ``hash`` is the hex SHA-256 of
``prev_hash + "\\n" + canonical JSON of {seq, at, proposal_id, actor, event, detail}`` (keys
sorted, no spaces, UTF-8), and each ``prev_hash`` is the ``hash`` of the entry before it. The
first exported entry's ``prev_hash`` anchors the file to the rest of the chain (64 zeros when
the export starts at entry 1). ``proposal_id`` is the subject of the entry: a proposal
(``cs_...``), an escalation (``esc_...``) or nothing.

``at`` is written as the hash reads it (ISO 8601 in UTC, ``+00:00``); in CSV, ``detail`` is its
JSON text and an empty ``proposal_id`` stands for none.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Sequence
from datetime import UTC, date, datetime
from typing import Any, Final, Literal, TextIO

from store.audit import AuditEntry

__all__ = ["COLUMNS", "ExportFormat", "exported_row", "parse_since", "write_export"]

#: The exported fields, in order (the CSV header).
COLUMNS: Final = ("seq", "at", "proposal_id", "actor", "event", "detail", "prev_hash", "hash")

ExportFormat = Literal["jsonl", "csv"]


def parse_since(text: str) -> datetime:
    """``2026-11-30`` (midnight UTC) or an ISO 8601 date and time with its offset."""
    try:
        if len(text) == 10:
            day = date.fromisoformat(text)
            return datetime(day.year, day.month, day.day, tzinfo=UTC)
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"--since: {text!r} is not a date; expected YYYY-MM-DD or an ISO 8601 date and time "
            "with an offset, such as 2026-11-30T09:00:00+00:00"
        ) from None
    if moment.tzinfo is None:
        raise ValueError(
            f"--since: {text!r} has no UTC offset; add one (such as +00:00 or Z) or give a date"
        )
    return moment


def exported_row(entry: AuditEntry) -> dict[str, Any]:
    """One entry as exported: the hashed content, exactly as hashed, and the chain links."""
    return {
        "seq": entry.seq,
        "at": entry.at.astimezone(UTC).isoformat(),
        "proposal_id": entry.proposal_id,
        "actor": entry.actor,
        "event": entry.event,
        "detail": entry.detail,
        "prev_hash": entry.prev_hash,
        "hash": entry.hash,
    }


def write_export(
    entries: Iterable[AuditEntry], out: TextIO, *, since: datetime, fmt: ExportFormat
) -> int:
    """Write the chain from its first entry at or after ``since`` to its end; return how many.

    Everything after that first entry is written, whatever its time, so the file is one
    unbroken piece of the chain.
    """
    chain = list(entries)
    start = next((n for n, e in enumerate(chain) if e.at >= since), len(chain))
    rows: Sequence[dict[str, Any]] = [exported_row(e) for e in chain[start:]]
    if fmt == "jsonl":
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n")
    else:
        writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            detail = json.dumps(row["detail"], ensure_ascii=False, sort_keys=True)
            writer.writerow({**row, "detail": detail, "proposal_id": row["proposal_id"] or ""})
    return len(rows)
