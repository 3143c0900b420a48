"""bot/'s feature packages: each lists its public names in ``__all__``, every one of them is there,
and importing a package (or one of its modules) does not drag in its siblings or the app."""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
#: bot/cli/'s package is the command line's entry itself (``countersign = "bot.cli:main"``): it
#: defines main and imports nothing else, as the hook path needs (tests/e2e/test_claude_hook.py)
FEATURES = sorted(
    path.parent.name
    for path in (ROOT / "bot").glob("*/__init__.py")
    if path.parent.name not in {"sandbox", "bench", "cli"}
)


def test_the_feature_packages_are_the_ones_the_layout_names() -> None:
    assert FEATURES == [
        "api",
        "audit",
        "delegations",
        "digests",
        "escalations",
        "flow",
        "monitoring",
        "operators",
        "outbound",
        "render",
        "settings",
        "slack",
        "standing",
    ]


@pytest.mark.parametrize("name", FEATURES)
def test_every_public_name_of_a_package_is_defined_in_one_of_its_modules(name: str) -> None:
    package = importlib.import_module(f"bot.{name}")
    assert len(set(package.__all__)) == len(package.__all__)
    for public in package.__all__:
        value = getattr(package, public)
        if inspect.isclass(value) or inspect.isfunction(value):
            assert value.__module__.startswith(f"bot.{name}."), (public, value.__module__)
    missing = "nothing_here"
    with pytest.raises(AttributeError, match=f"no attribute '{missing}'"):
        getattr(package, missing)


def _imported_by(statement: str) -> set[str]:
    code = f"import sys; {statement}; print('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    return {module for module in out.split() if module.startswith("bot")}


@pytest.mark.parametrize("name", FEATURES)
def test_importing_a_package_imports_none_of_its_modules(name: str) -> None:
    # bot's own __init__ gives every package its lazy __getattr__ (and imports nothing of bot's)
    assert _imported_by(f"import bot.{name}") == {"bot", f"bot.{name}"}


def test_importing_one_module_of_a_package_leaves_its_siblings_and_the_app_alone() -> None:
    imported = _imported_by("import bot.api.problems")
    assert "bot.api.proposals" not in imported
    assert "bot.app" not in imported
