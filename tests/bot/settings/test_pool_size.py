"""``store.pool_size``: the PostgreSQL pool's size, checked when the file is loaded; a SQLite store
takes no notice of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.settings import load_settings
from store.open import open_store
from store.postgres import KEPT_FOR_PEOPLE
from tests.bot.settings.test_settings import ENV, only_problem, valid_sections, write


def config_with(folder: Path, store: str) -> Path:
    return write(folder, *valid_sections(), f"[store]\n{store}\n")


def test_the_pool_size_is_ten_unless_set(tmp_path: Path) -> None:
    assert load_settings(write(tmp_path, *valid_sections()), ENV).store.pool_size == 10


@pytest.mark.parametrize("size", [KEPT_FOR_PEOPLE + 1, 25, 100])
def test_a_pool_size_from_three_to_a_hundred_is_taken(tmp_path: Path, size: int) -> None:
    path = config_with(tmp_path, f"pool_size = {size}")

    assert load_settings(path, ENV).store.pool_size == size


@pytest.mark.parametrize("size", [KEPT_FOR_PEOPLE, 1, 0, -4, 101, 1000])
def test_a_pool_size_out_of_range_names_the_range_why_and_the_value(
    tmp_path: Path, size: int
) -> None:
    path = config_with(tmp_path, f"pool_size = {size}")

    assert only_problem(path) == (
        f"{path}: store.pool_size: expected 3 to 100 connections: 2 are kept for "
        "people's clicks, and agents' work and the sweeps share the rest, at least one; 100 is "
        f"PostgreSQL's default max_connections (got {size})"
    )


@pytest.mark.parametrize(
    ("written", "shown"), [("2.5", "2.5"), ('"ten"', "'ten'"), ('"10"', "'10'"), ("true", "true")]
)
def test_a_pool_size_that_is_not_a_whole_number_is_refused(
    tmp_path: Path, written: str, shown: str
) -> None:
    path = config_with(tmp_path, f"pool_size = {written}")

    assert only_problem(path) == (f"{path}: store.pool_size: expected a whole number, got {shown}")


async def test_a_sqlite_store_ignores_the_pool_size(tmp_path: Path) -> None:
    path = config_with(tmp_path, 'url = "sqlite:///countersign.sqlite"\npool_size = 3')
    settings = load_settings(path, ENV)

    store = await open_store(settings.store.url, pool_size=settings.store.pool_size)
    try:
        assert await store.audit_log() == []
    finally:
        await store.close()
    assert (tmp_path / "countersign.sqlite").exists()
