"""``countersign policy explain`` on the example configuration."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.cli import main

EXAMPLE = Path(__file__).parents[3] / "examples" / "countersign.toml"


@pytest.fixture(autouse=True)
def _example_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COUNTERSIGN_TOKEN_SUPPORT_BOT", "support-bot-token-0123456789")
    monkeypatch.setenv("COUNTERSIGN_WEBHOOK_SECRET_CRM", "crm-secret")


def _explain(tmp_path: Path, request: object, *extra: str) -> None:
    path = tmp_path / "request.json"
    path.write_text(json.dumps(request))
    args = ["--config", str(EXAMPLE), "policy", "explain", "--operation", "payments.refund"]
    assert main([*args, "--request", str(path), "--requester", "U0SUPPORT1", *extra]) == 0


def test_explain_names_the_deciding_rule_and_why_earlier_ones_did_not_match(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _explain(tmp_path, {"payment_id": "pay_1002", "amount_cents": 50000})

    lines = capsys.readouterr().out.splitlines()
    assert "frozen arguments:" in lines[2] and '"amount_cents": 50000' in lines[2]
    assert lines[4] == "  1. small-refunds  ask   no: Amount 500.00 USD is not ≤ 20.00 USD limit"
    assert lines[5].startswith(
        "  2. refunds        ask   DECIDES: rule 'refunds': Amount 500.00 USD ≤ 1,000.00 USD"
    )
    assert lines[6] == "  3. huge-refunds   deny  not reached"
    assert lines[-1].startswith("decision: ask (finance in C0APPROVALS")
    # the example's 'refunds' rule needs two people from finance
    assert lines[-1].endswith(", quorum 2: 2 distinct approvers needed)")


def test_explain_sees_the_amount_the_operation_computed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _explain(tmp_path, {"payment_id": "pay_1002"})  # no amount: the whole refundable 1,200.00

    out = capsys.readouterr().out
    assert "DECIDES: rule 'huge-refunds'" in out
    assert out.splitlines()[-1].startswith("decision: deny: Refunds over 1,000.00")


def test_explain_refuses_a_request_the_contract_refuses_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "request.json"
    path.write_text(json.dumps({"payment_id": "pay_1002", "amount_cents": -5}))

    code = main(
        ["--config", str(EXAMPLE), "policy", "explain", "--operation", "payments.refund",
         "--request", str(path), "--requester", "U0SUPPORT1"]
    )  # fmt: skip

    assert code == 2
    assert "request.amount_cents" in capsys.readouterr().out


def test_explain_says_when_a_batched_rule_shows_it_and_who_backs_it_up(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    text = EXAMPLE.read_text(encoding="utf-8")
    rule = 'id = "refunds"\n'
    assert rule in text
    config = tmp_path / "countersign.toml"
    config.write_text(
        text.replace(
            rule,
            rule + 'batch = { window = "30m", max = 10 }\n'
            'then = { after = "50%", approvers = ["support"] }\n',
            1,
        ),
        encoding="utf-8",
    )
    path = tmp_path / "request.json"
    path.write_text(json.dumps({"payment_id": "pay_1002", "amount_cents": 50000}))
    args = ["--config", str(config), "policy", "explain", "--operation", "payments.refund"]

    assert main([*args, "--request", str(path), "--requester", "U0SUPPORT1"]) == 0

    lines = capsys.readouterr().out.splitlines()
    assert lines[-2] == (
        "  batch: may wait up to 30 minutes to be shown in one digest with others (at most 10); "
        "the expiry counts from when it is shown"
    )
    assert lines[-1] == (
        "  backup: support may decide too if nobody has decided 50% of the way from showing to "
        "expiry"
    )


def _run(tmp_path: Path, *extra: str, config: Path = EXAMPLE) -> int:
    path = tmp_path / "request.json"
    path.write_text(json.dumps({"payment_id": "pay_1002", "amount_cents": 50000}))
    args = ["--config", str(config), "policy", "explain", "--operation", "payments.refund"]
    return main([*args, "--request", str(path), *extra])


def test_explain_refuses_an_agent_that_is_not_configured(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = _run(tmp_path, "--requester", "U0SUPPORT1", "--agent", "ghost-bot")

    assert code == 2
    assert capsys.readouterr().out == (
        "--agent: unknown agent 'ghost-bot' (configured: support-bot)\n"
    )


def test_explain_says_a_requester_the_agent_may_not_name_is_refused_before_the_policy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The API answers 403 for them and no rule is asked: explaining a rule for them would
    describe a submission that cannot happen."""
    code = _run(tmp_path, "--requester", "U0FINANCE1")

    out = capsys.readouterr().out
    assert code == 2
    assert out.startswith(
        "--requester: agent 'support-bot' may not act for U0FINANCE1: it may name holders of "
        "role 'support'; a submission naming them is refused (403)"
    )
    assert "DECIDES" not in out


def test_explain_notes_a_requester_a_user_group_or_a_delegation_may_admit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A group's members are read from Slack and a delegation is made there: the command cannot
    tell, so it says so and explains the policy anyway."""
    config = tmp_path / "countersign.toml"
    text = EXAMPLE.read_text(encoding="utf-8")
    config.write_text(text.replace('acts_for = ["role:support"]', "delegation = true", 1))

    code = _run(tmp_path, "--requester", "U0FINANCE1", config=config)

    out = capsys.readouterr().out
    assert code == 0
    assert "note: agent 'support-bot' may not act for U0FINANCE1" in out
    assert "unless through a Slack user group or a delegation" in out
    assert "DECIDES: rule 'refunds'" in out


def test_explain_says_the_expiry_in_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(tmp_path, "--requester", "U0SUPPORT1") == 0

    last = capsys.readouterr().out.splitlines()[-1]
    assert last == (
        "decision: ask (finance in C0APPROVALS, expires after 1 hour, quorum 2: "
        "2 distinct approvers needed)"
    )
