"""The ``[audit]`` section of countersign.toml: where the audit chain's head is anchored.

```toml
[audit]
anchor_file = "/mnt/worm/countersign-anchors.jsonl"  # appends one JSON line per anchor
anchor_channel = "C0AUDIT"                 # and/or posts each anchor in this Slack channel
anchor_key_env = "COUNTERSIGN_ANCHOR_KEY"  # signs anchors with HMAC-SHA256 (key from the env)
anchor_every = "1h"                        # serve anchors this often (default: never by itself)
```

An anchor copies the head of the audit chain (its last entry's number and hash, and the time)
somewhere the database's owner cannot rewrite; ``countersign audit verify --anchors FILE``
then detects a log rewritten together with its head (docs/audit.md). The key, like every secret,
lives in the environment; the file only names the variable.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Final

from pydantic import Field

from bot.settings.section import Section
from contracts.durations import format_duration, parse_duration

__all__ = ["MIN_ANCHOR_EVERY", "MIN_KEY_LENGTH", "AnchorSettings", "AuditSection", "load_audit"]

#: The shortest ``anchor_every``: anchors are for a person to keep, not a heartbeat.
MIN_ANCHOR_EVERY: Final = timedelta(minutes=1)
#: The shortest key accepted (``openssl rand -hex 32`` prints 64 characters).
MIN_KEY_LENGTH: Final = 32


class AuditSection(Section):
    anchor_file: str | None = Field(default=None, min_length=1)
    anchor_channel: str | None = Field(default=None, min_length=1)
    anchor_key_env: str | None = Field(default=None, min_length=1)
    anchor_every: str | None = Field(default=None, min_length=1)


@dataclass(frozen=True, slots=True)
class AnchorSettings:
    """Where anchors go, the key that signs them, and how often serve writes one."""

    file: Path | None = None
    channel: str | None = None
    #: the HMAC-SHA256 key (from the variable ``key_env``); None: anchors are not signed
    key: bytes | None = field(default=None, repr=False)
    key_env: str | None = None
    #: None: only ``countersign audit anchor`` writes anchors
    every: timedelta | None = None

    @property
    def destinations(self) -> list[str]:
        """Where an anchor is written, as a person reads it."""
        places = [] if self.file is None else [f"file {self.file}"]
        return places + ([] if self.channel is None else [f"Slack channel {self.channel}"])

    def summary(self) -> str:
        """One line for ``check-config``."""
        if not self.destinations:
            return "none (the hash chain alone; see docs/audit.md)"
        signed = "unsigned" if self.key_env is None else f"signed with ${self.key_env}"
        when = (
            "by `countersign audit anchor` only"
            if self.every is None
            else f"every {format_duration(self.every)} by serve"
        )
        return f"to {' and '.join(self.destinations)}, {signed}, {when}"


def load_audit(
    path: Path, section: AuditSection, env: Mapping[str, str], problems: list[str]
) -> AnchorSettings:
    """The checked settings; every problem is appended to ``problems``, naming the key."""
    where = f"{path}: audit"
    channel = section.anchor_channel
    if channel is not None and not (channel[0] in "CG" and channel.isalnum()):
        problems.append(
            f"{where}.anchor_channel: {channel!r} is not a Slack channel id (expected C... or "
            "G..., shown in the channel's details in Slack, not its name)"
        )
    key = None
    if section.anchor_key_env is not None:
        text = env.get(section.anchor_key_env, "")
        if not text:
            problems.append(
                f"{where}.anchor_key_env: the environment variable {section.anchor_key_env} is "
                "not set (expected the anchors' HMAC key, such as the output of "
                "`openssl rand -hex 32`)"
            )
        elif len(text) < MIN_KEY_LENGTH:
            problems.append(
                f"{where}.anchor_key_env: the key in {section.anchor_key_env} is {len(text)} "
                f"characters long; expected at least {MIN_KEY_LENGTH} (such as the output of "
                "`openssl rand -hex 32`)"
            )
        else:
            key = text.encode()
    every = None
    if section.anchor_every is not None:
        try:
            every = parse_duration(section.anchor_every)
        except ValueError as error:
            problems.append(f"{where}.anchor_every: {error}")
        else:
            if every < MIN_ANCHOR_EVERY:
                problems.append(
                    f"{where}.anchor_every: {section.anchor_every!r} is shorter than the "
                    "shortest allowed, '1m'"
                )
        if section.anchor_file is None and channel is None:
            problems.append(
                f"{where}.anchor_every: needs somewhere to write the anchors: set "
                "audit.anchor_file and/or audit.anchor_channel"
            )
    return AnchorSettings(
        # relative to the configuration file's folder, as store.url and retention.archive_dir
        file=None if section.anchor_file is None else path.parent / section.anchor_file,
        channel=channel,
        key=key,
        key_env=section.anchor_key_env,
        every=every,
    )
