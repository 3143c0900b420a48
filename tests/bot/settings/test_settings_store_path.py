"""A SQLite store named by a relative path lies beside the configuration file, not in the folder
Countersign happens to be started from (a service manager's or a container's)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bot.cli import main
from bot.settings import load_settings
from tests.bot.settings.test_settings import ENV, valid_sections, write


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The working directory: a folder that is not the configuration's."""
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    monkeypatch.chdir(folder)
    return folder


def config_in(folder: Path, store: str | None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    sections = valid_sections()
    if store is not None:
        sections.append(f'[store]\nurl = "{store}"\n')
    return write(folder, *sections)


@pytest.mark.usefixtures("elsewhere")
@pytest.mark.parametrize(
    ("written", "file"),
    [
        ("sqlite:///countersign.sqlite", "countersign.sqlite"),
        ("sqlite:///data/countersign.sqlite", "data/countersign.sqlite"),
        ("sqlite:///../shared/countersign.sqlite", "../shared/countersign.sqlite"),
        ("data/countersign.sqlite", "data/countersign.sqlite"),
        (None, "countersign.sqlite"),  # the default
    ],
)
def test_relative_sqlite_path_is_read_from_the_configuration_files_folder(
    tmp_path: Path, written: str | None, file: str
) -> None:
    config = config_in(tmp_path / "etc", written)

    url = load_settings(config, ENV).store.url

    expected = os.path.abspath(tmp_path / "etc" / file)
    assert url.removeprefix("sqlite:///") == expected
    assert url.startswith("sqlite:///") == (written != "data/countersign.sqlite")


def test_a_relative_configuration_path_still_places_the_store_beside_it(
    elsewhere: Path,
) -> None:
    config_in(elsewhere / "conf", "sqlite:///countersign.sqlite")

    url = load_settings(Path("conf/countersign.toml"), ENV).store.url

    assert url == f"sqlite:///{elsewhere / 'conf' / 'countersign.sqlite'}"


@pytest.mark.usefixtures("elsewhere")
@pytest.mark.parametrize(
    "written",
    [
        "sqlite:////var/lib/countersign/countersign.sqlite",
        "/var/lib/countersign/countersign.sqlite",
        "postgresql://countersign@db:5432/countersign",
        "postgres://countersign@db/countersign?sslmode=require",
        "sqlite:///:memory:",
        "sqlite://nopath",
    ],
)
def test_absolute_paths_and_other_urls_are_kept_as_written(tmp_path: Path, written: str) -> None:
    config = config_in(tmp_path / "etc", written)

    assert load_settings(config, ENV).store.url == written


def test_a_command_started_elsewhere_creates_the_store_beside_the_configuration(
    tmp_path: Path, elsewhere: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    config = config_in(tmp_path / "etc", "sqlite:///countersign.sqlite")

    assert main(["--config", str(config), "migrate"]) == 0

    assert (tmp_path / "etc" / "countersign.sqlite").is_file()
    assert list(elsewhere.iterdir()) == []
