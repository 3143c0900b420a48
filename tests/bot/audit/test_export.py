"""``countersign audit export``: the exported file verifies on its own, with nothing but the file,
hashlib and json; a changed line does not."""

from __future__ import annotations

import asyncio
import csv
import hashlib
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.audit.export import parse_since
from bot.cli import main
from store.sqlite import SqliteStore
from tests.bot.test_cli import write_config
from tests.e2e.harness import ENV
from tests.store.conformance import new_proposal
from tests.store.escalation_conformance import new_escalation

DAY_1 = datetime(2031, 3, 14, 9, 0, 0, 123456, tzinfo=UTC)
DAY_2 = DAY_1 + timedelta(days=1)


@pytest.fixture(autouse=True)
def environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)


async def _fill(db: Path) -> int:
    """Entries on two days: proposals, an escalation, a refusal with non-ASCII detail."""
    store = await SqliteStore.open(db)
    try:
        first, _ = await store.create_proposal(new_proposal(DAY_1))
        await store.reject(first.id, actor="U1", reason="nein, zu viel €", now=DAY_1)
        second, _ = await store.create_proposal(new_proposal(DAY_2))
        escalation, _ = await store.escalations().create_escalation(new_escalation(DAY_2))
        await store.escalations().take(escalation.id, actor="U2", now=DAY_2)
        await store.record_event(
            second.id, actor="U3", event="approve_refused", detail={"n": 1.5}, now=DAY_2
        )
        return len(await store.audit_log())
    finally:
        await store.close()


def verify_file_alone(rows: list[dict[str, Any]]) -> int:
    """Check an exported chain as someone without Countersign would; returns entries checked."""
    previous: str | None = None
    for row in rows:
        content = json.dumps(
            {key: row[key] for key in ("seq", "at", "proposal_id", "actor", "event", "detail")},
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
        ).encode()
        digest = hashlib.sha256(row["prev_hash"].encode() + b"\n" + content).hexdigest()
        assert digest == row["hash"], f"entry {row['seq']}: its content does not match its hash"
        if previous is not None:
            assert row["prev_hash"] == previous, f"entry {row['seq']}: broken link"
        previous = row["hash"]
    return len(rows)


def export(config: Path, *args: str) -> int:
    return main(["--config", str(config), "audit", "export", *args])


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _read_csv(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return [
            {
                **row,
                "seq": int(row["seq"]),
                "detail": json.loads(row["detail"]),
                "proposal_id": row["proposal_id"] or None,
            }
            for row in csv.DictReader(handle)
        ]


@pytest.mark.parametrize(("fmt", "read"), [("jsonl", _read_jsonl), ("csv", _read_csv)])
def test_an_export_since_a_date_verifies_from_the_file_alone(
    tmp_path: Path, fmt: str, read: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    config, db = write_config(tmp_path)
    total = asyncio.run(_fill(db))
    out = tmp_path / f"audit.{fmt}"

    code = export(config, "--since", "2031-03-15", "--format", fmt, "--output", str(out))

    assert code == 0, capsys.readouterr().err
    rows = read(out)
    assert rows[0]["seq"] == 3  # day 1 had two entries: the export starts at day 2
    assert rows[-1]["seq"] == total
    assert verify_file_alone(rows) == total - 2
    assert {row["event"] for row in rows} >= {"submitted", "escalated", "taken"}
    assert any(str(row["proposal_id"]).startswith("esc_") for row in rows)


def test_a_changed_line_in_the_export_no_longer_verifies(tmp_path: Path) -> None:
    config, db = write_config(tmp_path)
    asyncio.run(_fill(db))
    out = tmp_path / "audit.jsonl"
    assert export(config, "--since", "2031-03-14", "--output", str(out)) == 0
    rows = _read_jsonl(out)
    assert verify_file_alone(rows) == len(rows)

    rows[1]["detail"] = {"reason": "ja"}

    with pytest.raises(AssertionError, match="entry 2: its content does not match"):
        verify_file_alone(rows)


def test_export_starts_at_genesis_when_since_is_before_everything(tmp_path: Path) -> None:
    config, db = write_config(tmp_path)
    asyncio.run(_fill(db))
    out = tmp_path / "audit.jsonl"

    export(config, "--since", "2000-01-01", "--output", str(out))

    assert _read_jsonl(out)[0]["prev_hash"] == "0" * 64


@pytest.mark.parametrize("text", ["yesterday", "2031-03-14T09:00:00", "2031-13-01"])
def test_since_must_be_a_date_or_a_time_with_an_offset(text: str) -> None:
    with pytest.raises(ValueError, match="--since"):
        parse_since(text)


def test_a_bad_since_exits_2_naming_the_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config, _ = write_config(tmp_path)

    code = export(config, "--since", "soon")

    assert code == 2
    assert "'soon'" in capsys.readouterr().err


def test_an_output_that_cannot_be_written_exits_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config, _ = write_config(tmp_path)
    missing = tmp_path / "no-such-folder" / "audit.jsonl"

    code = export(config, "--since", "2026-01-01", "--output", str(missing))

    assert code == 2
    assert capsys.readouterr().err == (
        f"--output: cannot write {missing}: No such file or directory\n"
    )
