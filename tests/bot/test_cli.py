"""The ``countersign`` command, run in-process: check-config, serve's preflight, audit verify."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.cli import READER_GONE, main
from contracts.outcomes import Succeeded
from store.sqlite import SqliteStore
from tests.e2e.harness import ENV, config_text
from tests.store.conformance import LEASE, new_proposal

#: The trigger in store/sql/sqlite/0001_init.sql that keeps audit entries from being changed.
AUDIT_UPDATE_TRIGGER = "audit_log_refuses_update"
SLACK_SECRETS = ("SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET")


def line_of(config: Path, start: str, after: str | None = None) -> int:
    """The number of the first line of ``config`` starting with ``start`` (past ``after``)."""
    lines = config.read_text(encoding="utf-8").splitlines()
    first = 0 if after is None else lines.index(after)
    return next(n for n, line in enumerate(lines, 1) if n > first and line.startswith(start))


def write_config(tmp_path: Path, text: str | None = None) -> tuple[Path, Path]:
    """A valid configuration whose store is a SQLite file in tmp_path; returns (config, db)."""
    db = tmp_path / "data" / "countersign.sqlite"
    db.parent.mkdir(exist_ok=True)
    config = tmp_path / "countersign.toml"
    if text is None:
        text = config_text("http://127.0.0.1:9")
    config.write_text(f'{text}\n[store]\nurl = "sqlite:///{db}"\n', encoding="utf-8")
    return config, db


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The variables the configuration names, without the Slack secrets."""
    for name, value in ENV.items():
        if name not in SLACK_SECRETS:
            monkeypatch.setenv(name, value)


# --- check-config ---------------------------------------------------------------------------------


@pytest.mark.usefixtures("environment")
def test_check_config_on_a_valid_file_prints_a_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config, _ = write_config(tmp_path)

    code = main(["--config", str(config), "check-config"])

    out, err = capsys.readouterr()
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == f"{config}: OK"
    assert "  operations: payments.refund, crm.send_campaign, crm.tag_customers" in lines
    assert "  agents: support-bot, ops-bot" in lines
    assert "  roles: finance (3 people, 1 user group), support (1 person)" in lines
    assert "  policy rules: 4 (no match denies)" in lines
    assert "  audit anchors: none (the hash chain alone; see docs/audit.md)" in lines
    # the Slack secrets are not needed to check a file, but their absence is noted
    notes = [line for line in lines if line.startswith("  note: ")]
    assert [note.split()[1] for note in notes] == list(SLACK_SECRETS)


@pytest.mark.usefixtures("environment")
def test_check_config_reads_the_path_from_countersign_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    config, _ = write_config(tmp_path)
    monkeypatch.setenv("COUNTERSIGN_CONFIG", str(config))

    code = main(["check-config"])

    assert code == 0
    assert capsys.readouterr().out.startswith(f"{config}: OK\n")


@pytest.mark.usefixtures("environment")
def test_check_config_on_a_broken_file_prints_each_problem_on_its_own_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    text = config_text("http://127.0.0.1:9").replace('field = "amount_cents"', 'field = "amount"')
    config, _ = write_config(tmp_path, f"colour = 'blue'\n{text}")
    monkeypatch.delenv("E2E_WEBHOOK_SECRET")

    code = main(["--config", str(config), "check-config"])

    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    # one pass: an unknown key is one problem among the others, not a stop
    [header, unknown, *problems] = err.splitlines()
    assert header == "The configuration has problems:"
    assert unknown == (
        f"  - {config}:1: colour: unknown key (expected one of: server, store, approvals, "
        "escalation, audit, slack, delegation, limits, monitoring, retention, roles, agents, "
        "operations, policy)"
    )
    assert len(problems) == 3, problems
    webhooks = ["crm.send_campaign", "crm.tag_customers"]
    for problem, operation in zip(problems[:2], webhooks, strict=True):
        line = line_of(config, "secret_env = ", after=f'[operations."{operation}"]')
        assert problem.startswith(f"  - {config}:{line}: operations.{operation}.secret_env: ")
        assert "'E2E_WEBHOOK_SECRET', which is not set" in problem
    when = line_of(config, "when = ", after='id = "refunds"')  # the condition naming 'amount'
    assert problems[2].startswith(
        f"  - {config}:{when}: policy rule 'refunds': field 'amount' is not an argument"
    )


@pytest.mark.usefixtures("environment")
def test_check_config_names_a_batch_window_and_backup_role_that_cannot_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = config_text("http://127.0.0.1:9").replace(
        'expires_after = "30m"',
        'expires_after = "30m"\nbatch = { window = "45m", max = 10 }\n'
        'then = { after = "50%", approvers = ["finance-leads"] }',
    )
    config, _ = write_config(tmp_path, text)

    code = main(["--config", str(config), "check-config"])

    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    batch, then = line_of(config, "batch = "), line_of(config, "then = ")
    assert (
        f"  - {config}:{batch}: policy rule 'campaigns': field 'batch.window' is '45m', but the "
        "rule's proposals expire after 30m (field 'expires_after'); a window must be shorter "
        "than the expiry" in err.splitlines()
    )
    assert (
        f"  - {config}:{then}: policy rule 'campaigns': field 'then.approvers': unknown role "
        "'finance-leads' (configured roles: finance, support)" in err.splitlines()
    )


def test_missing_config_file_names_the_path_and_how_to_pass_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    absent = tmp_path / "nowhere" / "countersign.toml"

    code = main(["--config", str(absent), "check-config"])

    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    assert f"{absent}: no such file" in err
    assert "pass --config PATH or set COUNTERSIGN_CONFIG" in err


@pytest.mark.usefixtures("environment")
def test_simulate_with_a_new_config_that_does_not_exist_names_it_as_the_new_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """COUNTERSIGN_CONFIG names the current configuration: it is no way to give the new one."""
    config, _db = write_config(tmp_path)
    calls = tmp_path / "calls.jsonl"
    calls.write_text("", encoding="utf-8")
    absent = tmp_path / "NEW.toml"

    simulate = ["policy", "simulate", str(calls), "--without-store", "--config", str(absent)]
    code = main(["--config", str(config), *simulate])

    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    assert err == (
        f"--config {absent}: no such file (the new configuration to replay the calls through)\n"
    )


def test_a_command_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main([])

    assert exited.value.code == 2
    assert "serve" in capsys.readouterr().err


# --- serve's preflight ----------------------------------------------------------------------------


@pytest.mark.timeout(10)
@pytest.mark.usefixtures("environment")
def test_serve_without_slack_secrets_names_both_and_starts_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config, db = write_config(tmp_path)

    code = main(["--config", str(config), "serve", "--port", "0"])

    out, err = capsys.readouterr()
    assert code == 2
    assert "countersign serve cannot start:" in err
    assert "  - SLACK_BOT_TOKEN is not set: the Bot User OAuth Token" in err
    assert "'OAuth & Permissions'" in err
    assert "  - SLACK_SIGNING_SECRET is not set: the Signing Secret" in err
    assert "'Basic Information'" in err
    assert "manifest.yml" in err
    assert "Running on" not in out
    assert not db.exists()  # the store was never opened


@pytest.mark.timeout(10)
@pytest.mark.usefixtures("environment")
def test_serve_names_only_the_missing_slack_secret(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    config, db = write_config(tmp_path)
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-present")

    code = main(["--config", str(config), "serve"])

    err = capsys.readouterr().err
    assert code == 2
    assert "SLACK_SIGNING_SECRET is not set" in err
    assert "SLACK_BOT_TOKEN" not in err
    assert not db.exists()


@pytest.mark.timeout(10)
@pytest.mark.usefixtures("environment")
def test_serve_with_a_broken_config_and_no_slack_secrets_reports_both_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    config, db = write_config(tmp_path)
    monkeypatch.delenv("E2E_AGENT_TOKEN")

    code = main(["--config", str(config), "serve"])

    err = capsys.readouterr().err
    assert code == 2
    assert "The configuration has problems:" in err
    assert "agents.support-bot.token_env: environment variable E2E_AGENT_TOKEN is not set" in err
    assert "countersign serve cannot start:" in err
    assert "SLACK_BOT_TOKEN is not set" in err
    assert "SLACK_SIGNING_SECRET is not set" in err
    assert not db.exists()


@pytest.mark.timeout(10)
@pytest.mark.parametrize(
    ("server", "flags"),
    [
        ("", ["--port", "8093", "--slack-port", "8093"]),  # both given on the command line
        ("slack_port = 8093\n", ["--port", "8093"]),  # the file's Slack port, --port onto it
    ],
)
@pytest.mark.usefixtures("environment")
def test_serve_refuses_a_slack_port_equal_to_the_port_it_serves_on_and_starts_nothing(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    server: str,
    flags: list[str],
) -> None:
    text = config_text("http://127.0.0.1:9").replace("[server]\n", f"[server]\n{server}", 1)
    config, db = write_config(tmp_path, text)
    for name in SLACK_SECRETS:
        monkeypatch.setenv(name, ENV[name])

    code = main(["--config", str(config), "serve", *flags])

    err = capsys.readouterr().err
    assert code == 2
    assert "countersign serve: server.slack_port: must differ from server.port (both are 8093)" in (
        err
    )
    assert not db.exists()


@pytest.mark.usefixtures("environment")
def test_check_config_with_a_broken_file_does_not_ask_for_slack_secrets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    config, _ = write_config(tmp_path)
    monkeypatch.delenv("E2E_AGENT_TOKEN")

    code = main(["--config", str(config), "check-config"])

    err = capsys.readouterr().err
    assert code == 2
    assert "E2E_AGENT_TOKEN is not set" in err
    assert "SLACK_" not in err


# --- audit verify ---------------------------------------------------------------------------------


async def populate(db: Path) -> int:
    """Two proposals through their lifecycle, written through the store; returns the entry count."""
    now = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
    store = await SqliteStore.open(db)
    try:
        approved = new_proposal(now)
        await store.create_proposal(approved)
        await store.attach_message(approved.id, "C0REFUNDS", "1700000000.000100")
        await store.claim_for_execution(
            approved.id,
            actor="U0APPROVER",
            now=now + timedelta(minutes=1),
            binding_hash=approved.binding_hash,
            lease_until=now + timedelta(minutes=1) + LEASE,
        )
        await store.record_outcome(
            approved.id, Succeeded(result={"refund_id": "re_1"}), now=now + timedelta(minutes=2)
        )
        rejected = new_proposal(now)
        await store.create_proposal(rejected)
        await store.reject(
            rejected.id, actor="U0APPROVER", reason="not ours", now=now + timedelta(minutes=3)
        )
        return len(await store.audit_log())
    finally:
        await store.close()


def tamper(db: Path, seq: int) -> None:
    """Rewrite one audit entry's detail the way someone with the database file could."""
    with sqlite3.connect(db) as connection:
        connection.execute(f"DROP TRIGGER {AUDIT_UPDATE_TRIGGER}")
        [(detail,)] = connection.execute("SELECT detail FROM audit_log WHERE seq = ?", (seq,))
        changed = {**json.loads(detail), "actor_note": "nothing to see here"}
        connection.execute(
            "UPDATE audit_log SET detail = ? WHERE seq = ?", (json.dumps(changed), seq)
        )
    connection.close()


@pytest.mark.usefixtures("environment")
def test_audit_verify_on_a_fresh_store_is_ok(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config, db = write_config(tmp_path)

    code = main(["--config", str(config), "audit", "verify"])

    out, err = capsys.readouterr()
    assert code == 0, err
    assert out == "audit log OK: 0 entries verified\n"
    assert db.exists()


@pytest.mark.usefixtures("environment")
def test_audit_verify_counts_every_entry_of_a_busy_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config, db = write_config(tmp_path)
    entries = asyncio.run(populate(db))

    code = main(["--config", str(config), "audit", "verify"])

    assert entries == 6
    assert code == 0
    assert capsys.readouterr().out == f"audit log OK: {entries} entries verified\n"


@pytest.mark.usefixtures("environment")
def test_audit_verify_on_a_tampered_log_names_the_first_bad_entry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config, db = write_config(tmp_path)
    asyncio.run(populate(db))
    tamper(db, seq=3)

    code = main(["--config", str(config), "audit", "verify"])

    out = capsys.readouterr().out
    assert code == 1
    assert out.startswith("audit log BROKEN at entry 3: ")
    assert out.endswith("(2 entries verified before it)\n")


def test_audit_verify_on_an_unusable_store_url_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "countersign.toml"
    config.write_text('[store]\nurl = "mysql://db/countersign"\n', encoding="utf-8")

    code = main(["--config", str(config), "audit", "verify"])

    err = capsys.readouterr().err
    assert code == 2
    assert "cannot open the store mysql://db/countersign" in err
    assert "unknown scheme 'mysql'" in err


@pytest.mark.usefixtures("environment")
def test_check_config_reports_independent_problems_at_once_and_no_follow_on_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = config_text("http://127.0.0.1:9").replace("[server]\n", "[server]\nprot = 8080\n", 1)
    text = text.replace('approvers = ["finance"]', 'approvers = ["finanse"]\nquorum = 2', 1)
    config, _ = write_config(tmp_path, text)

    code = main(["--config", str(config), "check-config"])

    err = capsys.readouterr().err
    assert code == 2
    problems = err.splitlines()[1:]
    assert len(problems) == 2, problems
    assert problems[0].startswith(
        f"  - {config}:{line_of(config, 'prot = ')}: server.prot: unknown key (expected one of: "
    )
    assert "'finanse'" in problems[1]
    assert "distinct people" not in err  # not a second problem caused by the unknown role


def test_a_toml_syntax_error_at_the_end_names_its_line_and_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "countersign.toml"
    config.write_text('[roles]\nfinance = ["U0FINANCE1",\n', encoding="utf-8")

    code = main(["--config", str(config), "check-config"])

    err = capsys.readouterr().err
    assert code == 2
    assert "(at line 2, column 25, the end of the document)" in err, err


@pytest.mark.parametrize("big", [False, True], ids=["at-exit", "while-printing"])
def test_a_reader_that_closes_stdout_early_ends_the_command_quietly(
    tmp_path: Path, big: bool
) -> None:
    """`countersign audit export ... | head` printed a BrokenPipeError traceback: a command whose
    reader went away stops without one, with the exit code of a program killed by SIGPIPE,
    whether the pipe breaks when its output is flushed at the end or while it prints."""
    config, _db = write_config(tmp_path)
    command = ["check-config"]
    if big:  # more than a pipe's buffer: each call refused with a reason of its own
        calls = tmp_path / "calls.jsonl"
        lines = (
            json.dumps(
                {"agent": f"ghost-{n}", "operation": "x", "requested_by": "U0X", "request": {}}
            )
            for n in range(3000)
        )
        calls.write_text("\n".join(lines), encoding="utf-8")
        command = ["policy", "simulate", str(calls), "--without-store", "--json"]
    env = {**{k: v for k, v in os.environ.items() if k in ("PATH", "PYTHONPATH")}, **ENV}
    with subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "--config", str(config), *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=Path(__file__).parents[2],
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        process.stdout.close()  # the reader is gone before the command writes anything
        err = process.stderr.read().decode()
        code = process.wait(timeout=60)

    assert err == ""
    assert code == READER_GONE == 141
