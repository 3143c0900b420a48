"""Fixtures every test may use. The environment is scrubbed: no test reads the developer's."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

_SCRUBBED_PREFIXES = ("SLACK_", "COUNTERSIGN_")


@pytest.fixture(autouse=True)
def _scrub_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in list(os.environ):
        if name.startswith(_SCRUBBED_PREFIXES):
            monkeypatch.delenv(name)
    yield
