"""The [approvals] remind_at default: read as a share of the lifetime, refused when malformed."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.settings import load_settings
from contracts.reminders import OFF
from tests.bot.settings.test_settings import ENV, only_problem, valid_sections, write


def test_remind_at_defaults_to_80_percent(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path, *valid_sections()), ENV)

    assert settings.approvals.remind_at == 0.8


@pytest.mark.parametrize(("text", "share"), [("75%", 0.75), ("off", OFF)])
def test_remind_at_is_read_from_the_approvals_section(
    tmp_path: Path, text: str, share: float | str
) -> None:
    path = write(tmp_path, *valid_sections(), f'[approvals]\nremind_at = "{text}"\n')

    assert load_settings(path, ENV).approvals.remind_at == share


@pytest.mark.parametrize("value", ['"80"', "0.8", '"100%"'])
def test_malformed_remind_at_names_the_key_and_what_is_expected(tmp_path: Path, value: str) -> None:
    path = write(tmp_path, *valid_sections(), f"[approvals]\nremind_at = {value}\n")

    problem = only_problem(path)

    assert f"{path}: approvals.remind_at: " in problem
    assert "expected a percentage of the proposal's lifetime" in problem
    assert "such as '80%', or 'off'" in problem
