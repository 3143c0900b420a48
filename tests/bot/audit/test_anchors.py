"""Audit anchors: ``countersign audit anchor`` and ``audit verify --anchors``, on a real store.

The attacker here owns the database: they drop (or disable) the append-only triggers and
rewrite the log with every later hash and the head recomputed, or cut its end and move the head
back. ``audit verify`` alone cannot tell; the anchors written before it can.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import sqlite3
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TypeVar

import asyncpg
import pytest

from bot.audit.anchoring import Anchorer, AnchorFailed, anchor_forever
from bot.audit.anchors import (
    Anchor,
    AnchorFileError,
    anchor_line,
    check_anchors,
    make_anchor,
    read_anchors,
)
from bot.cli import main
from bot.settings.audit import AnchorSettings
from bot.slack.local import running_local_slack
from bot.slack.publish import make_web_client
from store.audit import AuditEntry, AuditHead, entry_hash
from store.open import open_store
from store.protocol import Store
from tests.e2e.harness import BOT_TOKEN, ENV, config_text, eventually, running_countersign
from tests.store.conformance import new_proposal

T = TypeVar("T")
KEY_ENV = "COUNTERSIGN_ANCHOR_KEY"
KEY = "k" * 16 + secrets.token_hex(16)
PG_URL = "postgresql://postgres@127.0.0.1:5432/test"
START = datetime(2031, 3, 14, 9, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in ENV.items():
        if not name.startswith("SLACK_"):
            monkeypatch.setenv(name, value)
    monkeypatch.setenv(KEY_ENV, KEY)


# --- the backends, as their owner can change them ------------------------------------------------


@dataclass
class Backend:
    url: str
    #: runs SQL statements with the audit triggers off, as the database's owner can
    rewrite: Callable[[list[tuple[str, tuple[object, ...]]]], None]


def _sqlite_backend(tmp_path: Path) -> Backend:
    path = tmp_path / "countersign.sqlite"

    def rewrite(statements: list[tuple[str, tuple[object, ...]]]) -> None:
        db = sqlite3.connect(path, isolation_level=None)
        try:
            triggers = db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'trigger' "
                "AND tbl_name IN ('audit_log', 'audit_head')"
            ).fetchall()
            for (name,) in triggers:
                db.execute(f"DROP TRIGGER {name}")
            for statement, parameters in statements:
                db.execute(
                    statement.replace("$1", "?1").replace("$2", "?2").replace("$3", "?3"),
                    parameters,
                )
        finally:
            db.close()

    return Backend(f"sqlite:///{path}", rewrite)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "sqlite":
        yield _sqlite_backend(tmp_path)
        return
    schema = f"countersign_test_{secrets.token_hex(6)}"

    async def admin(statement: str) -> None:
        db = await asyncpg.connect(PG_URL)
        try:
            await db.execute(statement)
        finally:
            await db.close()

    async def pg_rewrite(statements: list[tuple[str, tuple[object, ...]]]) -> None:
        db = await asyncpg.connect(PG_URL, server_settings={"search_path": schema})
        try:
            async with db.transaction():
                await db.execute("ALTER TABLE audit_log DISABLE TRIGGER USER")
                await db.execute("ALTER TABLE audit_head DISABLE TRIGGER USER")
                for statement, parameters in statements:
                    await db.execute(statement.replace("$2", "$2::json"), *parameters)
        finally:
            await db.close()

    asyncio.run(admin(f'CREATE SCHEMA "{schema}"'))
    try:
        yield Backend(f"{PG_URL}?search_path={schema}", lambda s: asyncio.run(pg_rewrite(s)))
    finally:
        asyncio.run(admin(f'DROP SCHEMA "{schema}" CASCADE'))


def write_config(tmp_path: Path, url: str, audit: str) -> Path:
    config = tmp_path / "countersign.toml"
    text = config_text("http://127.0.0.1:9")
    config.write_text(f'{text}\n[audit]\n{audit}\n[store]\nurl = "{url}"\n', encoding="utf-8")
    return config


async def _with_store(url: str, work: Callable[[Store], Awaitable[T]]) -> T:
    store = await open_store(url)
    try:
        return await work(store)
    finally:
        await store.close()


def add_entries(url: str, count: int, *, start: datetime = START) -> None:
    """``count`` proposals, each with a submitted entry and a note about it."""

    async def work(store: Store) -> None:
        for n in range(count):
            at = start + timedelta(minutes=n)
            proposal = new_proposal(at)
            await store.create_proposal(proposal)
            await store.record_event(
                proposal.id, actor="U0NOTE", event="note", detail={"n": n}, now=at
            )

    asyncio.run(_with_store(url, work))


def audit_log(url: str) -> list[AuditEntry]:
    async def work(store: Store) -> list[AuditEntry]:
        return await store.audit_log()

    return asyncio.run(_with_store(url, work))


def rewrite_from(backend: Backend, seq: int) -> None:
    """Change entry ``seq``'s detail and recompute every later hash and the head, so the chain
    (and so ``audit verify``) is consistent again."""
    entries = audit_log(backend.url)
    statements: list[tuple[str, tuple[object, ...]]] = []
    prev_hash = entries[seq - 2].hash if seq > 1 else "0" * 64
    for entry in entries[seq - 1 :]:
        detail = {**entry.detail, "rewritten": True} if entry.seq == seq else entry.detail
        digest = entry_hash(
            prev_hash,
            seq=entry.seq,
            at=entry.at,
            proposal_id=entry.proposal_id,
            actor=entry.actor,
            event=entry.event,
            detail=detail,
        )
        statements.append(
            (
                "UPDATE audit_log SET prev_hash = $1, detail = $2, hash = $3 WHERE seq = "
                + str(entry.seq),
                (prev_hash, json.dumps(detail), digest),
            )
        )
        prev_hash = digest
    statements.append((f"UPDATE audit_head SET hash = '{prev_hash}' WHERE id = 1", ()))
    backend.rewrite(statements)


def truncate_to(backend: Backend, seq: int) -> None:
    """Remove every entry after ``seq`` and move the head back to it."""
    kept = audit_log(backend.url)[seq - 1]
    backend.rewrite(
        [
            (f"DELETE FROM audit_log WHERE seq > {seq}", ()),
            (f"UPDATE audit_head SET seq = {seq}, hash = '{kept.hash}' WHERE id = 1", ()),
        ]
    )


def run(config: Path, *args: str) -> int:
    return main(["--config", str(config), "audit", *args])


@pytest.fixture
def anchored(
    tmp_path: Path, backend: Backend, capsys: pytest.CaptureFixture[str]
) -> tuple[Path, Path, Backend]:
    """A log of 20 entries anchored at entry 8 and at entry 20; returns (config, anchors)."""
    anchors = tmp_path / "anchors.jsonl"
    config = write_config(
        tmp_path, backend.url, f'anchor_file = "{anchors}"\nanchor_key_env = "{KEY_ENV}"'
    )
    add_entries(backend.url, 4)
    assert run(config, "anchor") == 0
    add_entries(backend.url, 6, start=START + timedelta(hours=1))
    assert run(config, "anchor") == 0
    capsys.readouterr()
    return config, anchors, backend


# --- anchoring -----------------------------------------------------------------------------------


def test_anchor_appends_the_head_signed_to_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    backend = _sqlite_backend(tmp_path)
    anchors = tmp_path / "anchors.jsonl"
    config = write_config(
        tmp_path, backend.url, f'anchor_file = "{anchors}"\nanchor_key_env = "{KEY_ENV}"'
    )
    add_entries(backend.url, 3)
    last = audit_log(backend.url)[-1]

    code = run(config, "anchor")

    out, err = capsys.readouterr()
    assert code == 0, err
    [line] = anchors.read_text(encoding="utf-8").splitlines()
    row = json.loads(line)
    assert list(row) == ["sequence", "hash", "at", "mac"]
    assert (row["sequence"], row["hash"]) == (6, last.hash)
    assert abs(datetime.fromisoformat(row["at"]) - datetime.now(UTC)) < timedelta(minutes=1)
    [anchor] = read_anchors(line, source="anchors.jsonl")
    assert anchor.mac_verifies(KEY.encode())
    assert not anchor.mac_verifies(b"another key of thirty-two characters")
    assert out.startswith(f"anchored entry 6 (hash {last.hash}) at ")
    assert f"signed with ${KEY_ENV}, to file {anchors}" in out


def test_a_relative_anchor_file_is_beside_the_configuration_wherever_the_command_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """As store.url and retention.archive_dir are: serve (run by systemd in its working folder)
    and an operator's `audit anchor` (run from their shell) append to the same file."""
    backend = _sqlite_backend(tmp_path)
    config = write_config(tmp_path, backend.url, 'anchor_file = "anchors.jsonl"')
    add_entries(backend.url, 3)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)

    code = run(config, "anchor")

    out, err = capsys.readouterr()
    assert code == 0, err
    assert len((tmp_path / "anchors.jsonl").read_text(encoding="utf-8").splitlines()) == 1
    assert not (elsewhere / "anchors.jsonl").exists()
    assert f"to file {tmp_path / 'anchors.jsonl'}" in out


def test_anchor_without_a_destination_writes_nothing_and_says_what_to_set(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path, _sqlite_backend(tmp_path).url, "")

    code = run(config, "anchor")

    assert code == 2
    assert "set audit.anchor_file and/or audit.anchor_channel" in capsys.readouterr().err


async def test_anchor_posts_the_line_to_the_slack_channel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = _sqlite_backend(tmp_path)
    config = write_config(
        tmp_path, backend.url, f'anchor_channel = "C0AUDIT"\nanchor_key_env = "{KEY_ENV}"'
    )
    await asyncio.to_thread(add_entries, backend.url, 2)
    async with running_local_slack(BOT_TOKEN) as (slack, slack_url):
        monkeypatch.setenv("SLACK_BOT_TOKEN", BOT_TOKEN)
        monkeypatch.setenv("SLACK_API_URL", slack_url)

        code = await asyncio.to_thread(run, config, "anchor")

        assert code == 0
        [message] = slack.messages("C0AUDIT")
    line = message.text.split("```")[1]
    [anchor] = read_anchors(line, source="Slack")
    assert anchor.sequence == 4
    assert anchor.hash == (await asyncio.to_thread(audit_log, backend.url))[-1].hash
    assert anchor.mac_verifies(KEY.encode())
    assert message.text.startswith(
        f"Audit anchor: entry 4 of the audit log has hash `{anchor.hash}`"
    )


def test_anchor_to_slack_without_a_bot_token_refuses_before_writing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    anchors = tmp_path / "anchors.jsonl"
    config = write_config(
        tmp_path,
        _sqlite_backend(tmp_path).url,
        f'anchor_file = "{anchors}"\nanchor_channel = "C0AUDIT"',
    )

    code = run(config, "anchor")

    assert code == 2
    assert "SLACK_BOT_TOKEN is not set" in capsys.readouterr().err
    assert not anchors.exists()


# --- verifying against anchors -------------------------------------------------------------------


def test_an_untouched_log_matches_its_anchors(
    anchored: tuple[Path, Path, Backend], capsys: pytest.CaptureFixture[str]
) -> None:
    config, anchors, _ = anchored

    code = run(config, "verify", "--anchors", str(anchors))

    out = capsys.readouterr().out
    assert code == 0, out
    assert out.splitlines()[0] == "audit log OK: 20 entries verified"
    assert out.splitlines()[1].startswith(
        "anchors OK: 2 anchors match the log (the latest names entry 20, anchored "
    )


def test_a_log_rewritten_with_its_head_passes_the_chain_but_not_the_anchors(
    anchored: tuple[Path, Path, Backend], capsys: pytest.CaptureFixture[str]
) -> None:
    config, anchors, backend = anchored
    rewrite_from(backend, 5)

    alone = run(config, "verify")
    assert (alone, capsys.readouterr().out) == (0, "audit log OK: 20 entries verified\n")
    code = run(config, "verify", "--anchors", str(anchors))

    out = capsys.readouterr().out
    assert code == 1
    lines = out.splitlines()
    assert lines[0] == "audit log OK: 20 entries verified"
    assert lines[1].startswith("anchors BROKEN at entry 8: entry 8: its hash ")
    assert f"({anchors} line 1)" in lines[1]
    assert "the log was rewritten at or before entry 8" in lines[1]
    assert lines[2].startswith("  also: entry 20: its hash ")
    assert lines[3] == (
        "2 of 2 anchors do not hold: the audit log was changed after they were made "
        "(see docs/audit.md)"
    )


def test_a_rewrite_after_the_last_anchor_is_beyond_what_anchors_show(
    anchored: tuple[Path, Path, Backend], capsys: pytest.CaptureFixture[str]
) -> None:
    config, anchors, backend = anchored
    add_entries(backend.url, 2, start=START + timedelta(hours=2))
    rewrite_from(backend, 21)

    code = run(config, "verify", "--anchors", str(anchors))

    assert code == 0, capsys.readouterr().out


def test_a_log_cut_below_an_anchor_passes_the_chain_but_not_the_anchors(
    anchored: tuple[Path, Path, Backend], capsys: pytest.CaptureFixture[str]
) -> None:
    config, anchors, backend = anchored
    truncate_to(backend, 12)

    alone = run(config, "verify")
    assert (alone, capsys.readouterr().out) == (0, "audit log OK: 12 entries verified\n")
    code = run(config, "verify", "--anchors", str(anchors))

    out = capsys.readouterr().out
    assert code == 1
    assert out.splitlines()[1].startswith(
        "anchors BROKEN at entry 20: entry 20: missing, but the anchor of "
    )
    assert "the log ends at entry 12 (entries were removed from the end)" in out


def test_a_forged_anchor_line_without_the_key_fails(
    anchored: tuple[Path, Path, Backend], capsys: pytest.CaptureFixture[str]
) -> None:
    """The attacker rewrites the log and then the anchor file to match, but has no key."""
    config, anchors, backend = anchored
    rewrite_from(backend, 5)
    forged = [
        anchor_line(Anchor(sequence=entry.seq, hash=entry.hash, at=datetime.now(UTC), mac="0" * 64))
        for entry in audit_log(backend.url)
        if entry.seq in (8, 20)
    ]
    anchors.write_text("\n".join(forged) + "\n", encoding="utf-8")

    code = run(config, "verify", "--anchors", str(anchors))

    out = capsys.readouterr().out
    assert code == 1
    assert "anchors BROKEN at entry 8: " in out
    assert "its MAC does not verify with the anchor key" in out


def test_an_unsigned_anchor_is_refused_when_anchors_are_signed(
    anchored: tuple[Path, Path, Backend], capsys: pytest.CaptureFixture[str]
) -> None:
    config, anchors, backend = anchored
    last = audit_log(backend.url)[-1]
    unsigned = Anchor(sequence=last.seq, hash=last.hash, at=datetime.now(UTC), mac=None)
    anchors.write_text(anchor_line(unsigned) + "\n", encoding="utf-8")

    code = run(config, "verify", "--anchors", str(anchors))

    assert code == 1
    assert "it has no MAC, but anchors are signed" in capsys.readouterr().out


def test_signed_anchors_without_a_key_cannot_be_checked(
    anchored: tuple[Path, Path, Backend],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    _, anchors, backend = anchored
    keyless = write_config(tmp_path, backend.url, "")

    code = run(keyless, "verify", "--anchors", str(anchors))

    assert code == 2
    assert "line 1 is signed, but no anchor key is configured" in capsys.readouterr().err


def test_an_unreadable_anchor_file_is_named_with_its_line_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path, _sqlite_backend(tmp_path).url, "")
    anchors = tmp_path / "anchors.jsonl"
    anchors.write_text(
        '{"sequence": 1, "hash": "' + "a" * 64 + '", "at": "2031-01-01T00:00:00+00:00", '
        '"mac": null}\n\n{"sequence": -1, "hash": "x", "at": "", "mac": null}\n',
        encoding="utf-8",
    )

    code = run(config, "verify", "--anchors", str(anchors))

    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    assert err == (
        f"--anchors: {anchors} line 3: 'sequence': expected a whole number >= 0, got -1\n"
    )


# --- the anchor file on its own ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "no anchors in it"),
        ("[1]", "line 1: expected a JSON object, got list"),
        ("{not json", "line 1: not JSON"),
        ('{"sequence": 1}', "missing: hash, at, mac; unknown: none"),
        (
            '{"sequence": 1, "hash": "'
            + "A" * 64
            + '", "at": "2031-01-01T00:00:00Z", "mac": null}',
            "'hash': expected 64 lowercase hex digits",
        ),
        (
            '{"sequence": 1, "hash": "' + "a" * 64 + '", "at": "2031-01-01T00:00:00", "mac": null}',
            "'at': expected an ISO 8601 date and time with its offset",
        ),
        (
            '{"sequence": 1, "hash": "' + "a" * 64 + '", "at": "2031-01-01T00:00:00Z", "mac": 5}',
            "'mac': expected null or 64 lowercase hex digits, got 5",
        ),
        (
            '{"sequence": true, "hash": "'
            + "a" * 64
            + '", "at": "2031-01-01T00:00Z", "mac": null}',
            "'sequence': expected a whole number >= 0, got True",
        ),
    ],
)
def test_read_anchors_refuses_what_is_not_an_anchor(text: str, expected: str) -> None:
    with pytest.raises(AnchorFileError, match=r"^anchors\.jsonl") as refused:
        read_anchors(text, source="anchors.jsonl")
    assert expected in str(refused.value)


def test_a_changed_field_of_a_signed_anchor_no_longer_verifies() -> None:
    key = KEY.encode()
    head = AuditHead(seq=7, hash="b" * 64)
    anchor = make_anchor(head, at=START, key=key)
    [read_back] = read_anchors(anchor_line(anchor), source="f")

    assert read_back.mac_verifies(key)
    for changed in (
        {"sequence": 6},
        {"hash": "c" * 64},
        {"at": (START + timedelta(seconds=1)).isoformat()},
    ):
        row = {**json.loads(anchor_line(anchor)), **changed}
        [edited] = read_anchors(json.dumps(row), source="f")
        assert not edited.mac_verifies(key), changed


def test_an_anchor_of_the_empty_log_holds_only_for_the_genesis_hash() -> None:
    genesis = Anchor(sequence=0, hash="0" * 64, at=START, mac=None, line=1)
    other = Anchor(sequence=0, hash="1" * 64, at=START, mac=None, line=2)

    assert check_anchors([genesis], [], key=None, source="f").ok
    report = check_anchors([genesis, other], [], key=None, source="f")
    assert (report.ok, report.first_bad_seq, len(report.problems)) == (False, 0, 1)


# --- serve anchors by itself, and says when it cannot --------------------------------------------


async def test_serve_with_anchor_every_anchors_the_head_when_it_starts(tmp_path: Path) -> None:
    anchors = tmp_path / "anchors.jsonl"

    def with_anchors(text: str) -> str:
        return f'{text}\n[audit]\nanchor_file = "{anchors}"\nanchor_every = "1h"\n'

    async with running_countersign(tmp_path, config_edit=with_anchors) as countersign:

        async def written() -> list[Anchor]:
            if not anchors.exists():
                return []
            return read_anchors(anchors.read_text(encoding="utf-8"), source="f")

        [anchor] = await eventually(written)
        head = await countersign.store.audit_head()
    assert (anchor.sequence, anchor.hash, anchor.mac) == (head.seq, head.hash, None)


async def test_the_periodic_anchor_writes_only_when_the_head_moved(tmp_path: Path) -> None:
    anchors = tmp_path / "anchors.jsonl"
    store = await open_store(str(tmp_path / "countersign.sqlite"))
    anchorer = Anchorer(
        store, AnchorSettings(file=anchors), slack=None, clock=lambda: datetime.now(UTC)
    )

    def lines() -> list[str]:
        return anchors.read_text(encoding="utf-8").splitlines() if anchors.exists() else []

    task = asyncio.create_task(anchor_forever(anchorer, 0.02))
    try:
        await eventually(lambda: asyncio.sleep(0, lines()))
        await asyncio.sleep(0.2)  # ten periods: the head has not moved
        assert len(lines()) == 1
        await store.record_event(None, actor="ops", event="note", detail={}, now=START)

        await eventually(lambda: asyncio.sleep(0, len(lines()) == 2))
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await store.close()
    first, second = read_anchors("\n".join(lines()), source="f")
    assert (first.sequence, second.sequence) == (0, 1)


async def test_an_anchor_slack_refuses_is_reported_and_the_file_still_gets_it(
    tmp_path: Path,
) -> None:
    anchors = tmp_path / "anchors.jsonl"
    store = await open_store(str(tmp_path / "countersign.sqlite"))
    try:
        async with running_local_slack(BOT_TOKEN) as (slack, slack_url):
            slack.fail_next("chat.postMessage", status=200, error="not_in_channel")
            client = make_web_client(BOT_TOKEN, slack_url, retries=False)
            anchorer = Anchorer(
                store,
                AnchorSettings(file=anchors, channel="C0AUDIT"),
                slack=client,
                clock=lambda: START,
            )

            with pytest.raises(AnchorFailed) as failed:
                await anchorer.anchor()

            assert slack.messages("C0AUDIT") == []
    finally:
        await store.close()
    assert str(failed.value) == (
        "audit.anchor_channel: Slack refused the anchor in C0AUDIT: not_in_channel"
    )
    [anchor] = read_anchors(anchors.read_text(encoding="utf-8"), source="f")
    assert (anchor.sequence, anchor.at) == (0, START)
