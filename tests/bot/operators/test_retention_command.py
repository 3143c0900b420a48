"""``countersign retention run``: old decided proposals go to an archive file and leave the
store; ``audit verify`` passes before and after, and the archive's lines match the chain."""

from __future__ import annotations

import hashlib
import io
import json
import re
from datetime import timedelta
from pathlib import Path

import pytest

from bot.audit.commands import audit_verify
from bot.cli import main
from bot.operators.retention import retention_command
from bot.settings.retention import parse_age
from store.proposals import ProposalNotFound
from store.retention import ARCHIVED_EVENT
from store.sqlite import SqliteStore
from tests.bot.operators.conftest import MakeSettings
from tests.store.retention_conformance import NOW, _decided_old


async def test_retention_archives_removes_and_the_audit_log_still_verifies(
    tmp_path: Path, make_settings: MakeSettings
) -> None:
    settings = make_settings(extra='[retention]\narchive_after = "90d"\n')
    store = await SqliteStore.open(tmp_path / "countersign.sqlite")
    old = [await _decided_old(store) for _ in range(3)]
    recent = await _decided_old(store, NOW - timedelta(days=10))
    await store.close()
    out = io.StringIO()

    code = await retention_command(
        settings, older_than=None, archive_dir=None, out=out, err=io.StringIO(), now=NOW
    )

    assert code == 0, out.getvalue()
    assert "archived 3 decided proposals" in out.getvalue()
    assert "audit log OK" in out.getvalue()
    [archive] = list((tmp_path / "archive").iterdir())
    text = archive.read_text(encoding="utf-8")
    lines = [json.loads(line) for line in text.splitlines()]
    assert sorted(line["proposal"]["id"] for line in lines) == sorted(old)
    assert all(line["audit"] and line["proposal"]["approvals"] for line in lines)
    verify = io.StringIO()
    assert await audit_verify(settings, None, verify, io.StringIO()) == 0
    store = await SqliteStore.open(tmp_path / "countersign.sqlite")
    try:
        for proposal_id in old:
            try:
                await store.get_proposal(proposal_id)
            except ProposalNotFound:
                continue
            raise AssertionError(f"{proposal_id} is still in the store")
        assert (await store.get_proposal(recent)).id == recent
        log = await store.audit_log()
        # each archived proposal's entries are still in the chain, as the archive copied them
        by_seq = {entry.seq: entry for entry in log}
        for line in lines:
            for entry in line["audit"]:
                assert by_seq[entry["seq"]].hash == entry["hash"]
        [removal] = [entry for entry in log if entry.event == ARCHIVED_EVENT]
        assert removal.detail["archive"] == archive.name
        assert removal.detail["sha256"] == hashlib.sha256(text.encode()).hexdigest()
    finally:
        await store.close()


async def test_with_nothing_to_archive_no_archive_folder_is_made(
    tmp_path: Path, make_settings: MakeSettings
) -> None:
    settings = make_settings(extra='[retention]\narchive_after = "90d"\n')
    store = await SqliteStore.open(tmp_path / "countersign.sqlite")
    await _decided_old(store, NOW - timedelta(days=10))  # decided, but not old enough
    await store.close()
    out = io.StringIO()
    given = tmp_path / "archives" / "countersign"

    for archive_dir in (None, given):  # [retention] archive_dir's, and --archive-dir's
        code = await retention_command(
            settings, older_than=None, archive_dir=archive_dir, out=out, err=io.StringIO(), now=NOW
        )
        assert code == 0, out.getvalue()

    assert out.getvalue().count("nothing to archive") == 2
    assert not (tmp_path / "archive").exists()
    assert not (tmp_path / "archives").exists()


async def test_an_archive_folder_that_cannot_be_made_is_named_and_nothing_is_removed(
    tmp_path: Path, make_settings: MakeSettings
) -> None:
    settings = make_settings(extra='[retention]\narchive_after = "90d"\n')
    store = await SqliteStore.open(tmp_path / "countersign.sqlite")
    old = await _decided_old(store)
    await store.close()
    (tmp_path / "taken").write_text("a file where the folder would go", encoding="utf-8")
    folder = tmp_path / "taken" / "archive"
    out, err = io.StringIO(), io.StringIO()

    code = await retention_command(
        settings, older_than=None, archive_dir=folder, out=out, err=err, now=NOW
    )

    assert code == 2
    assert out.getvalue() == ""
    assert err.getvalue().startswith(f"retention: cannot write the archive {folder}/countersign-")
    store = await SqliteStore.open(tmp_path / "countersign.sqlite")
    try:
        assert (await store.get_proposal(old)).id == old
    finally:
        await store.close()


async def test_without_an_age_nothing_runs(tmp_path: Path, make_settings: MakeSettings) -> None:
    err = io.StringIO()

    code = await retention_command(
        make_settings(), older_than=None, archive_dir=None, out=io.StringIO(), err=err
    )

    assert code == 2 and "archive_after" in err.getvalue()
    assert not (tmp_path / "countersign.sqlite").exists()


async def test_an_age_under_a_day_is_refused(tmp_path: Path, make_settings: MakeSettings) -> None:
    err = io.StringIO()

    code = await retention_command(
        make_settings(), older_than="2h", archive_dir=None, out=io.StringIO(), err=err
    )

    assert code == 2 and "at least '1d'" in err.getvalue()


def test_the_ages_the_help_gives_as_examples_are_accepted(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`retention run --help` once offered '12h', which the command then refused."""
    with pytest.raises(SystemExit):
        main(["retention", "run", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())

    examples = re.findall(r"such as ((?:\d+[dhms])(?: or \d+[dhms])*)", help_text)
    assert examples, help_text
    for age in examples[0].split(" or "):
        assert parse_age(age) >= timedelta(days=1)
