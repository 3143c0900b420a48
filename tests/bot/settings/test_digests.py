"""The [slack] section: digest settings, their defaults, and the problems that name the key."""

from __future__ import annotations

from pathlib import Path

from bot.settings import load_settings
from bot.settings.digests import DigestSettings
from tests.bot.settings.test_settings import ENV, only_problem, valid_sections, write


def test_digests_are_on_by_default_with_two_to_twenty_five_items() -> None:
    defaults = DigestSettings()

    assert (defaults.digests, defaults.digest_min, defaults.digest_max) == (True, 2, 25)
    assert defaults.digest_window_seconds == 0.3


def test_the_slack_section_sets_them(tmp_path: Path) -> None:
    section = """
    [slack]
    digests = true
    digest_min = 3
    digest_max = 10
    digest_window_seconds = 1.5
    """
    settings = load_settings(write(tmp_path, *valid_sections(), section), ENV)

    assert settings.digests == DigestSettings(
        digest_min=3, digest_max=10, digest_window_seconds=1.5
    )


def test_a_minimum_above_the_maximum_names_both(tmp_path: Path) -> None:
    section = "[slack]\ndigest_min = 30\ndigest_max = 20\n"

    problem = only_problem(write(tmp_path, *valid_sections(), section))

    assert "slack" in problem and "digest_min (30)" in problem and "digest_max (20)" in problem


def test_a_digest_bigger_than_a_message_holds_is_refused(tmp_path: Path) -> None:
    problem = only_problem(write(tmp_path, *valid_sections(), "[slack]\ndigest_max = 51\n"))

    assert "slack.digest_max" in problem and "50" in problem and "51" in problem


def test_an_unknown_key_lists_the_keys_the_section_has(tmp_path: Path) -> None:
    problem = only_problem(write(tmp_path, *valid_sections(), "[slack]\ndigest_size = 5\n"))

    assert "slack.digest_size: unknown key" in problem
    assert "digests, digest_min, digest_max, digest_window_seconds" in problem


def test_a_minimum_above_the_maximum_reads_as_one_sentence(tmp_path: Path) -> None:
    section = "[slack]\ndigest_min = 30\ndigest_max = 20\n"

    problem = only_problem(write(tmp_path, *valid_sections(), section))

    assert problem.endswith("slack: digest_min (30) must not be more than digest_max (20)")


def test_an_unknown_key_of_approvals_lists_the_keys_it_has(tmp_path: Path) -> None:
    problem = only_problem(write(tmp_path, *valid_sections(), '[approvals]\nremindat = "80%"\n'))

    assert "approvals.remindat: unknown key (expected one of: allowed_teams, remind_at" in problem
