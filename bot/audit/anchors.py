"""Audit anchors: the head of the audit chain, copied outside the database, and checked later.

An anchor file holds one JSON object per line, oldest first::

    {"sequence": 340, "hash": "9f2c…", "at": "2026-12-01T14:00:00.123456+00:00", "mac": "51d0…"}

``sequence`` and ``hash`` are the chain's last entry when the anchor was made (0 and 64 zeros
for an empty log), ``at`` is when (ISO 8601, UTC). ``mac`` is null, or the hex HMAC-SHA256,
under the anchor key, of ``"countersign audit anchor v1\\n"`` followed by the canonical JSON of
``{"at", "hash", "sequence"}`` (keys sorted, no spaces, UTF-8), so a line cannot be forged or
edited without the key.

The chain alone cannot show a log rewritten from some entry on with every later hash (and the
head) recomputed: it is consistent again. An anchor made before the rewrite still holds the old
hash of its entry, so :func:`check_anchors` finds the difference, and an anchor beyond the
log's end shows that entries were removed. What this does and does not protect against:
docs/audit.md.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from contracts.canonical import canonical_json
from store.audit import GENESIS, AuditEntry, AuditHead

__all__ = [
    "Anchor",
    "AnchorFileError",
    "AnchorReport",
    "anchor_line",
    "check_anchors",
    "make_anchor",
    "read_anchors",
]

#: What the MAC covers begins with this, so an anchor's MAC means nothing anywhere else.
MAC_CONTEXT: Final = b"countersign audit anchor v1\n"
_HEX64: Final = re.compile(r"[0-9a-f]{64}")
_KEYS: Final = ("sequence", "hash", "at", "mac")


class AnchorFileError(ValueError):
    """The anchor file cannot be read as anchors (the message names the line and the field)."""


@dataclass(frozen=True, slots=True)
class Anchor:
    sequence: int
    hash: str
    at: datetime
    mac: str | None
    line: int = 0  #: where it was read from (0: made here)

    def signed_content(self) -> bytes:
        content = {"sequence": self.sequence, "hash": self.hash, "at": _time_text(self.at)}
        return MAC_CONTEXT + canonical_json(content)

    def mac_verifies(self, key: bytes) -> bool:
        expected = hmac.new(key, self.signed_content(), hashlib.sha256).hexdigest()
        return self.mac is not None and hmac.compare_digest(expected, self.mac)


@dataclass(frozen=True, slots=True)
class AnchorReport:
    ok: bool
    checked: int
    first_bad_seq: int | None = None
    #: one line per anchor that does not hold, the lowest entry first
    problems: tuple[str, ...] = ()


def make_anchor(head: AuditHead, *, at: datetime, key: bytes | None) -> Anchor:
    unsigned = Anchor(sequence=head.seq, hash=head.hash, at=at.astimezone(UTC), mac=None)
    if key is None:
        return unsigned
    mac = hmac.new(key, unsigned.signed_content(), hashlib.sha256).hexdigest()
    return Anchor(sequence=unsigned.sequence, hash=unsigned.hash, at=unsigned.at, mac=mac)


def anchor_line(anchor: Anchor) -> str:
    """The anchor as one line of an anchor file (without the newline)."""
    row = {"sequence": anchor.sequence, "hash": anchor.hash, "at": _time_text(anchor.at)}
    return json.dumps({**row, "mac": anchor.mac}, separators=(",", ":"))


def read_anchors(text: str, *, source: str) -> list[Anchor]:
    """Every anchor of an anchor file's ``text``; blank lines are skipped.

    Raise AnchorFileError naming ``source``, the line and the field at the first line that is
    not an anchor, or when there is none (checking against no anchor would prove nothing).
    """
    anchors = [
        _parse(line, f"{source} line {number}", number)
        for number, line in enumerate(text.splitlines(), start=1)
        if line.strip()
    ]
    if not anchors:
        raise AnchorFileError(f"{source}: no anchors in it (expected one JSON object per line)")
    return anchors


def check_anchors(
    anchors: Iterable[Anchor],
    entries: Sequence[AuditEntry],
    *,
    key: bytes | None,
    source: str,
) -> AnchorReport:
    """Does every anchor hold: signed with ``key`` (when there is one), and its entry in the log
    with that hash? ``entries`` is the whole log as stored."""
    hashes = {entry.seq: entry.hash for entry in entries}
    last = max(hashes, default=0)
    found: list[tuple[int, str]] = []
    checked = 0
    for anchor in anchors:
        checked += 1
        where = f"anchor of {_time_text(anchor.at)} ({source} line {anchor.line})"
        if key is not None and anchor.mac is None:
            found.append((anchor.sequence, f"{where}: it has no MAC, but anchors are signed"))
            continue
        if key is not None and not anchor.mac_verifies(key):
            found.append(
                (
                    anchor.sequence,
                    f"{where}: its MAC does not verify with the anchor key: the line was not "
                    "written with this key (forged or edited), so it proves nothing",
                )
            )
            continue
        stored = GENESIS if anchor.sequence == 0 else hashes.get(anchor.sequence)
        if stored is None:
            found.append(
                (
                    anchor.sequence,
                    f"entry {anchor.sequence}: missing, but the {where} names it; the log ends "
                    f"at entry {last} (entries were removed from the end)",
                )
            )
        elif stored != anchor.hash:
            found.append(
                (
                    anchor.sequence,
                    f"entry {anchor.sequence}: its hash {stored[:16]}… differs from the "
                    f"{anchor.hash[:16]}… of the {where}: the log was rewritten at or before "
                    f"entry {anchor.sequence} since it was anchored",
                )
            )
    if not found:
        return AnchorReport(ok=True, checked=checked)
    found.sort(key=lambda problem: problem[0])
    return AnchorReport(
        ok=False,
        checked=checked,
        first_bad_seq=found[0][0],
        problems=tuple(problem for _, problem in found),
    )


def _parse(line: str, where: str, number: int) -> Anchor:
    try:
        row: Any = json.loads(line)
    except ValueError:
        raise AnchorFileError(f"{where}: not JSON (expected one JSON object per line)") from None
    if not isinstance(row, dict):
        raise AnchorFileError(f"{where}: expected a JSON object, got {type(row).__name__}")
    unknown = sorted(set(row) - set(_KEYS))
    missing = [key for key in _KEYS if key not in row]
    if unknown or missing:
        raise AnchorFileError(
            f"{where}: expected exactly the keys {', '.join(_KEYS)} "
            f"(missing: {', '.join(missing) or 'none'}; unknown: {', '.join(unknown) or 'none'})"
        )
    sequence, digest, at, mac = (row[key] for key in _KEYS)
    if not isinstance(sequence, int) or isinstance(sequence, bool) or sequence < 0:
        raise AnchorFileError(
            f"{where}: 'sequence': expected a whole number >= 0, got {sequence!r}"
        )
    if not isinstance(digest, str) or not _HEX64.fullmatch(digest):
        raise AnchorFileError(f"{where}: 'hash': expected 64 lowercase hex digits, got {digest!r}")
    if mac is not None and (not isinstance(mac, str) or not _HEX64.fullmatch(mac)):
        raise AnchorFileError(
            f"{where}: 'mac': expected null or 64 lowercase hex digits, got {mac!r}"
        )
    return Anchor(sequence=sequence, hash=digest, at=_parse_time(at, where), mac=mac, line=number)


def _parse_time(value: Any, where: str) -> datetime:
    expected = (
        "expected an ISO 8601 date and time with its offset, such as 2026-12-01T14:00:00+00:00"
    )
    if not isinstance(value, str):
        raise AnchorFileError(f"{where}: 'at': {expected}, got {value!r}")
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise AnchorFileError(f"{where}: 'at': {expected}, got {value!r}") from None
    if moment.tzinfo is None:
        raise AnchorFileError(f"{where}: 'at': {expected}, got {value!r} (no offset)")
    return moment.astimezone(UTC)


def _time_text(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat()
