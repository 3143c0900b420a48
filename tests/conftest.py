"""Fixtures every test may use. The environment is scrubbed: no test reads the developer's."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

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

# The processes tests start (the hook, the MCP server, `python -c` probes) import this checkout's
# code, as the tests themselves do (pyproject.toml's pythonpath puts client/ first), whichever
# copy of the two distributions is installed.
_REPO = Path(__file__).parents[1]
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(_REPO / "client"), str(_REPO), *filter(None, [os.environ.get("PYTHONPATH")])]
)

_SCRUBBED_PREFIXES = ("SLACK_", "COUNTERSIGN_")


@pytest.fixture(autouse=True)
def _scrub_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in list(os.environ):
        if name.startswith(_SCRUBBED_PREFIXES):
            monkeypatch.delenv(name)
    yield
