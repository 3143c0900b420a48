"""A configuration whose store is a SQLite file in the test's folder."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from bot.settings import Settings, load_settings

MakeSettings = Callable[..., Settings]


@pytest.fixture
def make_settings(tmp_path: Path) -> MakeSettings:
    """Settings with the store at ``tmp_path / name`` (or ``url``) and ``extra`` TOML."""

    def make(
        name: str = "countersign.sqlite", *, url: str | None = None, extra: str = ""
    ) -> Settings:
        config = tmp_path / f"{name}.toml"
        store = url or f"sqlite:///{tmp_path / name}"
        config.write_text(f'[store]\nurl = "{store}"\n{extra}', encoding="utf-8")
        return load_settings(config, {})

    return make
