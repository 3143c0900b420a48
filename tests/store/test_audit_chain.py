"""The audit log in a SQLite file: append-only in the database, and any tampering detected."""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from store.audit import AuditReport
from store.proposals import Status
from store.sqlite import SqliteStore
from tests.store.conformance import LEASE, OUTCOME_EXAMPLES, new_proposal

NOW = datetime(2031, 3, 14, 15, 9, 26, 535897, tzinfo=UTC)
COLUMNS = ("seq", "at", "proposal_id", "actor", "event", "detail", "prev_hash", "hash")


async def _fill(path: Path) -> int:
    """A store with a dozen audit entries of every kind; returns how many."""
    store = await SqliteStore.open(path)
    try:
        for minute in range(3):
            now = NOW + timedelta(minutes=minute)
            asked = new_proposal(now)
            await store.create_proposal(asked)
            await store.attach_message(asked.id, "C1", f"{minute}.1")
            await store.claim_for_execution(
                asked.id,
                actor="U1",
                now=now,
                binding_hash=asked.binding_hash,
                lease_until=now + LEASE,
            )
            await store.record_outcome(asked.id, OUTCOME_EXAMPLES[minute], now=now)
        await store.create_proposal(new_proposal(NOW, decision="deny", status=Status.DENIED))
        await store.record_event(None, actor="bot", event="note", detail={"é": [1, 2]}, now=NOW)
        return len(await store.audit_log())
    finally:
        await store.close()


@contextmanager
def raw(path: Path) -> Iterator[sqlite3.Connection]:
    db = sqlite3.connect(path, isolation_level=None)
    try:
        yield db
    finally:
        db.close()


def drop_audit_triggers(db: sqlite3.Connection) -> None:
    """What someone with write access to the file can do first."""
    names = db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'audit_log'"
    ).fetchall()
    for (name,) in names:
        db.execute(f"DROP TRIGGER {name}")


def tamper(path: Path, *statements: str) -> None:
    with raw(path) as db:
        drop_audit_triggers(db)
        for statement in statements:
            db.execute(statement)


async def verify(path: Path) -> AuditReport:
    store = await SqliteStore.open(path)
    try:
        return await store.verify_audit()
    finally:
        await store.close()


@pytest.fixture
async def filled(tmp_path: Path) -> tuple[Path, int]:
    path = tmp_path / "countersign.sqlite"
    return path, await _fill(path)


# --- the database refuses -----------------------------------------------------------------------


async def test_database_refuses_to_update_an_audit_entry(filled: tuple[Path, int]) -> None:
    path, _ = filled
    with raw(path) as db, pytest.raises(sqlite3.IntegrityError, match="append-only"):
        db.execute("UPDATE audit_log SET actor = 'someone else' WHERE seq = 2")

    assert (await verify(path)).ok


async def test_database_refuses_to_delete_an_audit_entry(filled: tuple[Path, int]) -> None:
    path, count = filled
    with raw(path) as db:
        for where in ("seq = 2", f"seq = {count}", "1 = 1"):
            with pytest.raises(sqlite3.IntegrityError, match="append-only"):
                db.execute(f"DELETE FROM audit_log WHERE {where}")

    assert (await verify(path)).checked == count


async def test_database_refuses_an_entry_that_does_not_follow_the_head(
    filled: tuple[Path, int],
) -> None:
    path, count = filled
    with raw(path) as db:
        [(last_hash,)] = db.execute("SELECT hash FROM audit_log ORDER BY seq DESC LIMIT 1")
        insert = (
            "INSERT INTO audit_log VALUES "
            "(?, '2031-01-01T00:00:00.000000Z', NULL, 'x', 'x', '{}', ?, 'h')"
        )
        for seq, prev_hash in [(count + 2, last_hash), (count + 1, "f" * 64), (count, last_hash)]:
            with pytest.raises(sqlite3.IntegrityError, match="must follow the head"):
                db.execute(insert, (seq, prev_hash))


async def test_database_refuses_to_rewind_or_delete_the_head(filled: tuple[Path, int]) -> None:
    path, count = filled
    with raw(path) as db:
        with pytest.raises(sqlite3.IntegrityError, match="only moves forward"):
            db.execute("UPDATE audit_head SET seq = ?", (count - 1,))
        with pytest.raises(sqlite3.IntegrityError, match="cannot be deleted"):
            db.execute("DELETE FROM audit_head")


# --- tampering is detected ----------------------------------------------------------------------


async def test_changed_detail_is_detected_at_that_entry(filled: tuple[Path, int]) -> None:
    path, _ = filled
    tamper(path, """UPDATE audit_log SET detail = '{"reason":"approved, honest"}' WHERE seq = 3""")

    report = await verify(path)

    assert (report.ok, report.first_bad_seq, report.checked) == (False, 3, 2)
    assert report.problem is not None and "entry 3" in report.problem


async def test_deleted_middle_entry_is_detected_at_the_gap(filled: tuple[Path, int]) -> None:
    path, _ = filled
    tamper(path, "DELETE FROM audit_log WHERE seq = 4")

    report = await verify(path)

    assert (report.ok, report.first_bad_seq) == (False, 5)


async def test_swapped_entries_are_detected_at_the_first_of_them(filled: tuple[Path, int]) -> None:
    path, _ = filled
    columns = ", ".join(f"{c} = other.{c}" for c in COLUMNS[1:])
    tamper(
        path,
        "CREATE TEMP TABLE other AS SELECT * FROM audit_log WHERE seq IN (2, 6)",
        f"UPDATE audit_log SET {columns} FROM other "
        "WHERE other.seq = CASE audit_log.seq WHEN 2 THEN 6 ELSE 2 END AND audit_log.seq IN (2, 6)",
    )

    report = await verify(path)

    assert (report.ok, report.first_bad_seq) == (False, 2)


async def test_deleted_tail_entry_is_detected_by_the_head(filled: tuple[Path, int]) -> None:
    path, count = filled
    tamper(path, f"DELETE FROM audit_log WHERE seq = {count}")

    report = await verify(path)

    assert (report.ok, report.first_bad_seq, report.checked) == (False, count, count - 1)
    assert report.problem is not None and "removed from the end" in report.problem


async def test_every_entry_deleted_is_detected_by_the_head(filled: tuple[Path, int]) -> None:
    path, _ = filled
    tamper(path, "DELETE FROM audit_log")

    report = await verify(path)

    assert (report.ok, report.first_bad_seq) == (False, 1)


# --- many random tamperings ----------------------------------------------------------------------

Row = dict[str, Any]


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("audit") / "template.sqlite"
    asyncio.run(_fill(path))
    return path


def _changed(row: Row, column: str) -> Row:
    value = row[column]
    if column == "at":
        shifted = datetime.fromisoformat(value) + timedelta(microseconds=1)
        new = shifted.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"
    elif column == "detail":
        new = value[:-1] + (',"x":1}' if value != "{}" else '"x":1}')
    elif column in ("prev_hash", "hash"):
        new = ("1" if value[0] != "1" else "2") + value[1:]
    else:
        new = (value or "") + "x"
    return {**row, column: new}


tampering = st.one_of(
    st.tuples(st.just("change"), st.integers(0, 999), st.sampled_from(COLUMNS[1:])),
    st.tuples(st.just("delete"), st.integers(0, 999)),
    st.tuples(st.just("swap"), st.integers(0, 999), st.integers(0, 999)),
)


@settings(max_examples=60, deadline=None)
@given(tamperings=st.lists(tampering, min_size=1, max_size=3))
def test_any_tampering_is_reported_at_the_first_entry_it_touches(
    template: Path, tamperings: list[tuple[Any, ...]]
) -> None:
    with raw(template) as db:
        db.row_factory = sqlite3.Row
        original = {row["seq"]: dict(row) for row in db.execute("SELECT * FROM audit_log")}
    rows = dict(original)
    for kind, *where in tamperings:
        seqs = sorted(rows)
        if not seqs:
            break
        if kind == "change":
            seq = seqs[where[0] % len(seqs)]
            rows[seq] = _changed(rows[seq], where[1])
        elif kind == "delete":
            del rows[seqs[where[0] % len(seqs)]]
        else:
            a, b = seqs[where[0] % len(seqs)], seqs[where[1] % len(seqs)]
            rows[a], rows[b] = {**rows[b], "seq": a}, {**rows[a], "seq": b}
    differing = [seq for seq in original if rows.get(seq) != original[seq]]
    assume(differing)
    first = min(differing)
    expected = first if first in rows else min((s for s in rows if s > first), default=first)

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "tampered.sqlite"
        shutil.copyfile(template, path)
        with raw(path) as db:
            drop_audit_triggers(db)
            db.execute("DELETE FROM audit_log")
            db.executemany(
                f"INSERT INTO audit_log VALUES ({', '.join('?' * len(COLUMNS))})",
                [tuple(row[c] for c in COLUMNS) for row in rows.values()],
            )
        report = asyncio.run(verify(path))

    assert not report.ok
    assert report.first_bad_seq == expected, report.problem
