"""Countersign's server: the proposal's flow (bot/flow/) at the centre, the edges that call into
it (the agent API, Slack, the sandbox, operators' commands, the bench, monitoring), the feature
packages, the app factory (bot/app.py) and the command line (bot/cli/). docs/architecture.md draws
the rooms.

Each package of bot/ exports its public names without importing its modules: it lists them in
``__all__`` (and, for type checkers, imports them under ``TYPE_CHECKING``), maps each to the
module that defines it, and sets::

    __getattr__ = exported_from(__name__, {"DigestService": "decisions", ...})

The module is imported when a name is first asked for, so importing one module of a package
imports neither its siblings nor the app they need (tests/test_packages.py checks both).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any

__all__ = ["exported_from"]


def exported_from(package: str, defined_in: Mapping[str, str]) -> Callable[[str], Any]:
    """The package's module ``__getattr__``: each public name, from the module defining it."""
    where = dict(defined_in)

    def attribute(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(import_module(f"{package}.{where[name]}"), name)

    return attribute
