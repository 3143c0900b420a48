"""The version of Countersign that is running, as installed."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

__all__ = ["countersign_version"]


def countersign_version() -> str:
    """The installed server's version (countersign-server, pyproject.toml), or "unknown" when
    not installed."""
    try:
        return version("countersign-server")
    except PackageNotFoundError:
        return "unknown"
