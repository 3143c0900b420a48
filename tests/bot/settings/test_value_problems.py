"""A value of the file that cannot be read is told in the file's terms: the key, what was
expected there and what was written, as TOML writes it; not in pydantic's words ("Input should
be a valid integer", "Field required", "Value error, ...")."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bot.settings.test_settings import only_problem, valid_sections, write


@pytest.mark.parametrize(
    ("section", "expected"),
    [
        (
            "[limits]\nsubmissions_per_second = -1",
            "limits.submissions_per_second: expected a number greater than 0, got -1",
        ),
        (
            "[limits]\nmax_pending_proposals = 1.5",
            "limits.max_pending_proposals: expected a whole number, got 1.5",
        ),
        (
            "[limits]\nbody_timeout_seconds = nan",
            "limits.body_timeout_seconds: expected a finite number, got nan",
        ),
        ("[slack]\ndigest_min = 1", "slack.digest_min: expected a number of at least 2, got 1"),
        (
            '[store]\ndurable = "sometimes"',
            "store.durable: expected true or false, got 'sometimes'",
        ),
        ("[store]\nurl = 5", "store.url: expected text in quotes, got 5"),
        ('[audit]\nanchor_file = ""', "audit.anchor_file: expected text that is not empty, got ''"),
        ("retention = 5", "retention: expected a table, got 5"),
        (
            "[delegation]\nmax = 3",
            "delegation.max: a duration is text in quotes; expected whole numbers with units "
            "d, h, m or s, largest first, such as '90s', '30m', '2h', '1d' or '1h30m', got 3",
        ),
    ],
)
def test_a_bad_value_names_its_key_what_was_expected_and_what_was_written(
    tmp_path: Path, section: str, expected: str
) -> None:
    path = write(tmp_path, section, *valid_sections())

    assert only_problem(path) == f"{path}: {expected}"


def test_a_list_written_where_text_is_expected_is_shown_as_toml_writes_it(tmp_path: Path) -> None:
    path = write(tmp_path, '[store]\nurl = ["a", true, 1.0]', *valid_sections())

    assert only_problem(path) == f"{path}: store.url: expected text in quotes, got ['a', true, 1.0]"


def test_a_missing_required_key_is_named_as_missing(tmp_path: Path) -> None:
    path = write(tmp_path, *valid_sections(), "[agents.new-bot]\nowners = []")

    assert only_problem(path) == f"{path}: agents.new-bot.token_env: required key is missing"
