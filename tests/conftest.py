"""Fixtures every test may use. The environment is scrubbed: no test reads the developer's."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

# Timing is not what property tests check: a loaded 2-core machine (CI) must not turn a slow
# example into a failure. Benchmarks measure speed; these check behaviour.
# In CI (CI=true) every property test draws the same examples on every run, so a landing never
# hinges on a lucky or unlucky draw; run locally, they explore new ones each time.
settings.register_profile(
    "countersign",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=os.environ.get("CI") == "true",
)
settings.load_profile("countersign")

_SCRUBBED_PREFIXES = ("SLACK_", "COUNTERSIGN_")


@pytest.fixture(autouse=True)
def _scrub_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in list(os.environ):
        if name.startswith(_SCRUBBED_PREFIXES):
            monkeypatch.delenv(name)
    yield
