"""``countersign backup`` and ``restore``: a SQLite store copied while proposals are written to
it, restored elsewhere, and its audit chain verified; what restore refuses; PostgreSQL's advice."""

from __future__ import annotations

import asyncio
import io
import os
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.operators.backup import backup_command, restore_command
from store.sqlite import SqliteStore
from tests.bot.operators.conftest import MakeSettings
from tests.store.conformance import new_proposal

NOW = datetime(2031, 3, 14, 15, 9, 26, tzinfo=UTC)


async def _write_until(store: SqliteStore, stop: asyncio.Event) -> int:
    """Proposals and rejections, one after another, until ``stop``; how many were made."""
    made = 0
    while not stop.is_set():
        now = NOW + timedelta(seconds=made)
        new = new_proposal(now)
        await store.create_proposal(new)
        await store.reject(new.id, actor="U0APPROVER", reason="no", now=now)
        made += 1
        await asyncio.sleep(0)
    return made


async def test_a_backup_taken_under_writes_restores_and_its_chain_verifies(
    tmp_path: Path, make_settings: MakeSettings
) -> None:
    live = make_settings("live.sqlite")
    store = await SqliteStore.open(tmp_path / "live.sqlite")
    stop = asyncio.Event()
    writer = asyncio.create_task(_write_until(store, stop))
    try:
        await asyncio.sleep(0.2)  # some history first
        outs = [io.StringIO() for _ in range(3)]
        codes = []
        for number, out in enumerate(outs):
            codes.append(
                await backup_command(live, tmp_path / f"backup-{number}.sqlite", out, io.StringIO())
            )
    finally:
        stop.set()
        made = await writer
        await store.close()

    assert codes == [0, 0, 0], [out.getvalue() for out in outs]
    assert "audit log of the backup OK" in outs[-1].getvalue()
    names = await asyncio.to_thread(os.listdir, tmp_path)
    assert not [name for name in names if name.endswith(".partial")]
    # the last backup, restored into a new store, verifies; it holds a prefix of what was written
    restored = make_settings("restored.sqlite")
    out = io.StringIO()
    assert (
        await restore_command(
            restored, tmp_path / "backup-2.sqlite", force=False, out=out, err=io.StringIO()
        )
        == 0
    ), out.getvalue()
    assert "audit log OK" in out.getvalue()
    with sqlite3.connect(tmp_path / "restored.sqlite") as db:
        [(proposals,)] = db.execute("SELECT count(*) FROM proposals").fetchall()
        [(undecided,)] = db.execute(
            "SELECT count(*) FROM proposals WHERE status = 'pending'"
        ).fetchall()
    assert 0 < proposals <= made
    assert undecided <= 1  # a backup falls between transactions, never inside one


async def test_restore_refuses_an_existing_store_without_force_and_one_in_use_always(
    tmp_path: Path, make_settings: MakeSettings
) -> None:
    settings = make_settings()
    store = await SqliteStore.open(tmp_path / "countersign.sqlite")
    await store.create_proposal(new_proposal(NOW))
    assert await backup_command(settings, tmp_path / "b.sqlite", io.StringIO(), io.StringIO()) == 0

    err = io.StringIO()
    assert (
        await restore_command(
            settings, tmp_path / "b.sqlite", force=True, out=io.StringIO(), err=err
        )
        == 2
    )
    assert "in use" in err.getvalue()
    await store.close()

    err = io.StringIO()
    assert (
        await restore_command(
            settings, tmp_path / "b.sqlite", force=False, out=io.StringIO(), err=err
        )
        == 2
    )
    assert "--force" in err.getvalue()
    out = io.StringIO()
    assert (
        await restore_command(
            settings, tmp_path / "b.sqlite", force=True, out=out, err=io.StringIO()
        )
        == 0
    )
    assert "audit log OK: 1 entries verified" in out.getvalue()


async def test_a_backup_never_overwrites_a_file(
    tmp_path: Path, make_settings: MakeSettings
) -> None:
    settings = make_settings()
    await (await SqliteStore.open(tmp_path / "countersign.sqlite")).close()
    (tmp_path / "taken.sqlite").write_text("keep me")
    err = io.StringIO()

    assert await backup_command(settings, tmp_path / "taken.sqlite", io.StringIO(), err) == 2

    assert "exists" in err.getvalue()
    assert (tmp_path / "taken.sqlite").read_text() == "keep me"


async def test_a_backup_into_a_folder_that_does_not_exist_names_the_folder(
    tmp_path: Path, make_settings: MakeSettings
) -> None:
    settings = make_settings()
    await (await SqliteStore.open(tmp_path / "countersign.sqlite")).close()
    missing = tmp_path / "backups" / "2031-03-14"
    err = io.StringIO()

    assert await backup_command(settings, missing / "cs.sqlite", io.StringIO(), err) == 2

    assert err.getvalue() == (
        f"backup refused: the folder {missing} does not exist; create it, or choose another path\n"
    )
    assert not missing.exists()


async def test_restore_refuses_a_file_that_is_not_a_countersign_database(
    tmp_path: Path, make_settings: MakeSettings
) -> None:
    (tmp_path / "junk.sqlite").write_bytes(b"not a database at all" * 100)
    err = io.StringIO()

    code = await restore_command(
        make_settings(), tmp_path / "junk.sqlite", force=True, out=io.StringIO(), err=err
    )

    assert code == 2 and "junk.sqlite" in err.getvalue()
    assert not (tmp_path / "countersign.sqlite").exists()


@pytest.mark.parametrize("command", ["backup", "restore"])
async def test_postgresql_is_told_to_use_pg_dump_and_nothing_is_written(
    tmp_path: Path, make_settings: MakeSettings, command: str
) -> None:
    settings = make_settings(url="postgresql://countersign:s3cret@db.internal:5432/countersign")
    err = io.StringIO()
    if command == "backup":
        code = await backup_command(settings, tmp_path / "dump", io.StringIO(), err)
    else:
        code = await restore_command(
            settings, tmp_path / "dump", force=True, out=io.StringIO(), err=err
        )

    assert code == 2
    assert ("pg_dump" if command == "backup" else "pg_restore") in err.getvalue()
    assert "s3cret" not in err.getvalue()
    assert not (tmp_path / "dump").exists()
