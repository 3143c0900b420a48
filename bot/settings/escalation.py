"""The ``[escalation]`` section of countersign.toml: trigger thresholds, responders and routes.

```toml
[escalation]
repeated_failure_turns = 3        # repeated_failure: this many failed turns (or one error)
sentiment_threshold = -0.5        # negative_sentiment: latest score at or below this
reserved_topics = ["legal", "safety"]
confidence_threshold = 0.4        # low_confidence: below this AND a measurable signal agrees
reannounce_after = "15m"          # unclaimed escalations are announced again after this
reannounce_max = 3                # ... at most this many times (only the first says @here)
responders = ["support"]          # roles who may take, hand back and resolve (required)
routes = [
  { topic = "legal", channel = "C0LEGAL" },
  { team = "billing", channel = "C0BILLING" },
  { channel = "C0SUPPORT" },      # neither topic nor team: everything else
]
```
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from pydantic import Field

from bot.settings.section import Array, Section
from contracts.durations import parse_duration
from contracts.escalation import EscalationPolicy, Route

__all__ = ["EscalationSection", "RouteSection", "load_escalation"]


class RouteSection(Section):
    channel: str = Field(min_length=1)
    topic: str | None = Field(default=None, min_length=1)
    team: str | None = Field(default=None, min_length=1)


class EscalationSection(Section):
    repeated_failure_turns: int = Field(default=3, ge=1, le=1000)
    sentiment_threshold: float = Field(default=-0.5, ge=-1, le=1)
    reserved_topics: Array[str] = ()
    confidence_threshold: float = Field(default=0.5, ge=0, le=1)
    reannounce_after: str = "15m"
    reannounce_max: int = Field(default=3, ge=0, le=100)
    responders: Array[str] = ()
    routes: Array[RouteSection] = ()


def load_escalation(
    path: Path, section: EscalationSection, roles: Collection[str], problems: list[str]
) -> EscalationPolicy:
    """The checked policy; every problem is appended to ``problems``, naming the key."""
    where = f"{path}: escalation"
    try:
        reannounce_after = parse_duration(section.reannounce_after)
        if reannounce_after.total_seconds() < 1:
            problems.append(f"{where}.reannounce_after: must be at least 1s")
    except ValueError as error:
        problems.append(f"{where}.reannounce_after: {error}")
        reannounce_after = parse_duration("15m")
    unknown = [role for role in section.responders if role not in roles]
    if unknown:
        problems.append(
            f"{where}.responders: unknown role(s) {unknown!r} (configured roles: {sorted(roles)!r})"
        )
    if section.routes and not section.responders:
        problems.append(
            f"{where}.responders: required when escalation routes are configured; name the "
            "role(s) whose members may take, hand back and resolve escalations, such as "
            'responders = ["support"] (configured roles: '
            f"{sorted(roles)!r})"
        )
    routes = []
    for index, route in enumerate(section.routes):
        if not _looks_like_channel_id(route.channel):
            problems.append(
                f"{where}.routes[{index}].channel: {route.channel!r} is not a Slack channel id "
                "(expected C... or G...)"
            )
        if route.topic is not None and route.team is not None:
            problems.append(
                f"{where}.routes[{index}]: name a topic or a team, not both "
                f"(got topic {route.topic!r} and team {route.team!r})"
            )
        routes.append(Route(channel=route.channel, topic=route.topic, team=route.team))
    # the thresholds and responders are the policy's as written; the duration is parsed and the
    # routes checked above
    return EscalationPolicy(
        **section.model_dump(exclude={"reannounce_after", "routes"}),
        reannounce_after=reannounce_after,
        routes=tuple(routes),
    )


def _looks_like_channel_id(value: str) -> bool:
    return len(value) >= 3 and value[0] in "CG" and value[1:].isalnum() and value.isupper()
