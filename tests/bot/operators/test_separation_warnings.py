"""``countersign check-config`` warns when someone an agent may act for can also approve a rule
alone (quorum 1): separation of duties then rests on the agent's word about who asked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.cli import main
from tests.bot.test_cli import write_config
from tests.e2e.harness import (
    APPROVER,
    APPROVER_2,
    FINANCE_GROUP,
    OUTSIDER,
    REQUESTER,
    config_text,
    replace_rule,
)

pytestmark = pytest.mark.usefixtures("environment")
from tests.bot.test_cli import environment  # noqa: E402, F401 (fixture)


def warnings(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str) -> list[str]:
    config, _ = write_config(tmp_path, text)
    code = main(["--config", str(config), "check-config"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return [line.removeprefix("  warning: ") for line in out.splitlines() if "warning:" in line]


def configured(**agent: Any) -> str:
    # ops-bot acts for the outsider only, who approves nothing: it never warns
    return config_text(
        "http://127.0.0.1:9", {"support-bot": agent, "ops-bot": {"acts_for": [OUTSIDER]}}
    )


def test_a_person_the_agent_acts_for_who_approves_alone_is_named_with_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    found = warnings(tmp_path, capsys, configured(acts_for=[APPROVER, OUTSIDER]))

    # both finance rules ask with quorum 1: refunds and campaigns
    assert len(found) == 2
    refunds = next(w for w in found if "rule 'refunds'" in w)
    assert refunds.startswith(f"agent 'support-bot' may act for {APPROVER} (")
    assert OUTSIDER not in refunds  # who approves nothing is no risk
    assert "quorum = 2 on rule 'refunds'" in refunds
    assert "remove them from agents.support-bot.acts_for" in refunds


def test_people_reached_through_a_role_name_the_role_to_remove_them_from(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    found = warnings(tmp_path, capsys, configured(acts_for=["role:support"]))  # REQUESTER

    assert found and all(f"{REQUESTER} (acts_for: role 'support'" in w for w in found)
    assert all("(or from the role 'support')" in w for w in found)


def test_a_user_group_in_both_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    found = warnings(tmp_path, capsys, configured(acts_for=[FINANCE_GROUP]))

    assert found and all(f"{FINANCE_GROUP} (user group, acts_for: user group" in w for w in found)


def test_owners_are_never_approvers_so_they_raise_no_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    found = warnings(tmp_path, capsys, configured(acts_for=[APPROVER_2], owners=[APPROVER_2]))

    assert found == []


def test_a_quorum_of_two_removes_the_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = configured(acts_for=[APPROVER])
    for rule, operation, when in (
        ("refunds", "payments.refund", '[{ field = "amount_cents", lte = 200000 }]'),
        ("campaigns", "crm.send_campaign", "[]"),
    ):
        text = replace_rule(
            rule,
            f"""
            [[policy]]
            id = "{rule}"
            operation = "{operation}"
            when = {when}
            decision = "ask"
            approvers = ["finance"]
            quorum = 2
            channel = "C0ASK"
            expires_after = "1h"
            """,
        )(text)

    assert warnings(tmp_path, capsys, text) == []


def test_the_shipped_example_configuration_draws_no_warning(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    example = Path(__file__).parents[3] / "examples" / "countersign.toml"
    monkeypatch.setenv("COUNTERSIGN_TOKEN_SUPPORT_BOT", "support-bot-token-0123456789")
    monkeypatch.setenv("COUNTERSIGN_WEBHOOK_SECRET_CRM", "crm-secret-0123456789")

    code = main(["--config", str(example), "check-config"])

    out, err = capsys.readouterr()
    assert code == 0, err
    assert f"{example}: OK" in out
    assert "warning" not in out + err
