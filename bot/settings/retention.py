"""The ``[retention]`` section of countersign.toml: when decided proposals leave the hot tables.

```toml
[retention]
archive_after = "180d"      # decided proposals unchanged this long are archived, then removed
archive_dir = "archive"     # where the archive files go (relative to the configuration file)
```

Nothing is archived unless ``archive_after`` is set (or ``countersign retention run`` is given
``--older-than``); retention runs only when that command runs (from cron or a systemd timer).
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from pydantic import field_validator

from bot.settings.section import Section
from contracts.durations import parse_duration

__all__ = ["MIN_AGE", "RetentionSettings", "parse_age"]

#: The shortest age retention accepts: decided proposals stay at least this long, so a late
#: click, a review or a reconciliation still finds them.
MIN_AGE = timedelta(days=1)


def parse_age(text: str) -> timedelta:
    """An age such as ``90d``; ValueError saying what was expected."""
    age = parse_duration(text)
    if age < MIN_AGE:
        raise ValueError(f"{text!r} is shorter than a day; expected e.g. '90d' (at least '1d')")
    return age


class RetentionSettings(Section):
    #: decided proposals whose last change is older than this are archived and removed
    #: (a duration such as "180d"); None: only when `retention run --older-than` says so
    archive_after: str | None = None
    #: the folder the archive files are written to; relative to the configuration file's folder
    archive_dir: str = "archive"

    @field_validator("archive_after")
    @classmethod
    def _age(cls, value: str | None) -> str | None:
        if value is not None:
            parse_age(value)
        return value

    @property
    def age(self) -> timedelta | None:
        return None if self.archive_after is None else parse_age(self.archive_after)

    def directory(self, config_path: Path) -> Path:
        """``archive_dir``, relative to the folder of the configuration file."""
        return config_path.parent / self.archive_dir
