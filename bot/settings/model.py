"""The settings as Countersign reads them: the file's sections (``server``, ``store``,
``approvals``, each agent), the whole file's model, and what loading makes of them (``Settings``,
``AgentSettings``, ``SlackSettings``). The sections the features and edges read have a module
of this package each (bot/settings/digests.py, bot/settings/escalation.py, ...) and are fields
here.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator

from bot.settings.audit import AnchorSettings, AuditSection
from bot.settings.callback_urls import DestinationRefused, allowed_destination
from bot.settings.delegation import DelegationSettings
from bot.settings.digests import DigestSettings
from bot.settings.escalation import EscalationSection
from bot.settings.limits import AgentLimitsSection, Limits
from bot.settings.monitoring import MonitoringSettings
from bot.settings.retention import RetentionSettings
from bot.settings.section import Array, Section
from contracts.escalation import EscalationPolicy
from contracts.policy import PolicyTable
from contracts.registry import Registry
from contracts.reminders import DEFAULT_REMIND_AT, RemindAt, parse_remind_at
from store.postgres import KEPT_FOR_PEOPLE, POOL_SIZE, POOL_SIZE_MAX, POOL_SIZE_MIN

__all__ = [
    "DEFAULT_CONFIG_PATH",
    "ROLE_PREFIX",
    "SLACK_API_DEFAULT",
    "AgentSection",
    "AgentSettings",
    "ApprovalSettings",
    "ConfigError",
    "ConfigFileMissing",
    "FileModel",
    "ServerSettings",
    "Settings",
    "SlackSettings",
    "StoreSettings",
    "is_user_group",
    "looks_like_user_id",
]


DEFAULT_CONFIG_PATH = Path("countersign.toml")
#: How an agent's acts_for names a role: "role:finance".
ROLE_PREFIX = "role:"
SLACK_API_DEFAULT = "https://slack.com/api/"


class ConfigError(Exception):
    """The configuration has problems; ``problems`` lists each one."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("\n".join(problems))


class ConfigFileMissing(ConfigError):
    """The configuration file does not exist (its one problem says so, naming it)."""

    def __init__(self, path: Path, problem: str) -> None:
        self.path = path
        super().__init__([problem])


class ServerSettings(Section):
    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=0, le=65535)
    #: also serve Slack's ``/slack/events`` (alone) on this port of the same host, a listening
    #: socket of its own so people's clicks never queue behind agents' connections; None: only
    #: on the main port (which serves Slack either way)
    slack_port: int | None = Field(default=None, ge=0, le=65535)
    #: how often overdue proposals are expired
    sweep_interval_seconds: float = Field(default=5.0, gt=0, le=3600)
    #: the longest ``GET /v1/proposals/{id}?wait=`` may hold a request
    long_poll_max_seconds: float = Field(default=60.0, gt=0, le=600)
    #: attempts to deliver a callback to an agent before giving up
    callback_attempts: int = Field(default=6, ge=1, le=20)
    #: how long an executor may take to record an outcome before the execution is taken for
    #: abandoned (a crash) and handed to a person as needs_reconciliation
    execution_lease_seconds: float = Field(default=300, gt=0, le=86400)
    #: agent submissions handled at once; past it agents get 503 with Retry-After at once
    max_in_flight_submissions: int = Field(default=64, ge=1, le=10000)
    #: recorded decision clicks an instance applies at once (no click is held to it on arrival)
    max_in_flight_clicks: int = Field(default=64, ge=1, le=10000)
    #: how far behind the event loop may fall (ms) before new agent submissions are answered
    #: 503 with Retry-After at once, so people's clicks keep the loop (only while 8 or more
    #: agent submissions are in progress: bot/api/loop_lag.py); 0: never shed
    shed_agents_at_loop_lag_ms: float = Field(default=50, ge=0, le=10000, allow_inf_nan=False)
    #: Slack Web API call timeout
    slack_timeout_seconds: float = Field(default=10, gt=0, le=120)
    #: how long a callback to an agent may take before it counts as failed (and is retried)
    callback_timeout_seconds: float = Field(default=5, gt=0, le=30)
    #: callbacks delivered at once to one destination (scheme, host and port)
    callback_concurrency: int = Field(default=2, ge=1, le=64)
    #: one log line per HTTP request (logger ``aiohttp.access``): off by default, as /metrics
    #: counts requests by route and status and every proposal's events are logged anyway; on,
    #: it took about 8% of the server's CPU in the benchmark's ingest
    access_log: bool = False


class StoreSettings(Section):
    url: str = "sqlite:///countersign.sqlite"
    #: fsync every commit (synchronous=FULL); turning it off risks the last commits on power loss
    durable: bool = True
    #: PostgreSQL only: the most connections an instance's pool holds at once, of which
    #: KEPT_FOR_PEOPLE are kept for people's clicks (store/lanes.py); a SQLite store ignores it
    pool_size: int = Field(default=POOL_SIZE, strict=True)

    @field_validator("pool_size")
    @classmethod
    def _pool_size(cls, value: int) -> int:
        if not POOL_SIZE_MIN <= value <= POOL_SIZE_MAX:
            raise ValueError(
                f"expected {POOL_SIZE_MIN} to {POOL_SIZE_MAX} connections: {KEPT_FOR_PEOPLE} are "
                "kept for people's clicks, and agents' work and the sweeps share the rest, at "
                f"least one; {POOL_SIZE_MAX} is PostgreSQL's default max_connections"
            )
        return value


class ApprovalSettings(Section):
    #: workspaces (team ids) whose people may decide; empty: the app's own workspace only
    allowed_teams: Array[str] = ()
    #: when to remind the approvers of a pending proposal, as a percentage of its lifetime
    #: ("80%"), or "off"; a policy rule's own remind_at overrides it (contracts/reminders.py)
    remind_at: RemindAt = DEFAULT_REMIND_AT

    @field_validator("remind_at", mode="before")
    @classmethod
    def _percentage(cls, value: object) -> RemindAt:
        return parse_remind_at(value)

    #: the share (0 to 1) of automatic approvals, by the policy or a standing rule, posted to
    #: review_channel for a person to review after the fact
    review_sample: float = Field(default=0.0, ge=0, le=1, allow_inf_nan=False)
    #: the Slack channel id sampled automatic approvals are posted to (required when sampling)
    review_channel: str | None = None

    @field_validator("review_channel")
    @classmethod
    def _channel_id(cls, value: str | None) -> str | None:
        if value is not None and (not value or value.startswith("#") or not value.isalnum()):
            raise ValueError(
                "expected a Slack channel id such as 'C0REVIEWS' (shown in the channel's "
                "details in Slack), not a name"
            )
        return value


class AgentSection(Section):
    token_env: str = Field(min_length=1)
    #: more environment variables, each holding another token the agent may use (a rotation)
    extra_token_envs: Array[str] = ()
    #: Slack user ids of the people who own the agent: they can never approve its proposals
    owners: Array[str] = ()
    #: whom the agent may name as requested_by: Slack user ids (U.../W...), user group ids
    #: (S...) and roles ("role:NAME"); empty: its owners only
    acts_for: Array[str] = ()
    #: people may let the agent act for them from Slack (/countersign delegate)
    delegation: bool = False
    callback_secret_env: str | None = None
    #: where its callback_url may point (bot/settings/callback_urls.py); empty: it may name none
    callback_url_prefixes: Array[str] = ()
    #: its callbacks may go to loopback, private, link-local and CGNAT addresses
    callback_allow_private: bool = False
    #: overrides of the [limits] defaults for this agent (bot/settings/limits.py)
    limits: AgentLimitsSection | None = None


class FileModel(Section):
    server: ServerSettings = ServerSettings()
    store: StoreSettings = StoreSettings()
    approvals: ApprovalSettings = ApprovalSettings()
    escalation: EscalationSection = EscalationSection()
    audit: AuditSection = AuditSection()
    slack: DigestSettings = DigestSettings()
    delegation: DelegationSettings = DelegationSettings()
    limits: Limits = Limits()
    monitoring: MonitoringSettings = MonitoringSettings()
    retention: RetentionSettings = RetentionSettings()
    roles: dict[str, Array[str]] = Field(default_factory=dict)
    agents: dict[str, AgentSection] = Field(default_factory=dict)
    operations: dict[str, dict[str, Any]] = Field(default_factory=dict)
    policy: list[dict[str, Any]] = Field(default_factory=list)


@dataclass(frozen=True, slots=True)
class AgentSettings:
    name: str
    token: str
    callback_secret: str
    #: a callback_url must fall under one of these (bot/settings/callback_urls.py); empty: none
    callback_url_prefixes: tuple[str, ...] = ()
    #: the agent's owners: part of the chain behind its proposals, so never approvers
    owners: tuple[str, ...] = ()
    #: whom it may name as requested_by: user ids, user group ids (S...) and "role:NAME";
    #: empty: its owners only (bot/flow/requesters.py)
    acts_for: tuple[str, ...] = ()
    #: people may let it act for them from Slack (/countersign delegate)
    delegation: bool = False
    #: how much of Countersign it may use: [limits] with its own overrides
    limits: Limits = field(default_factory=Limits)
    #: its callbacks may go to internal addresses (loopback, private, link-local, CGNAT)
    callback_allow_private: bool = False
    #: every token it may authenticate with: ``token`` first, then extra_token_envs' (rotation)
    tokens: tuple[str, ...] = ()

    def holds(self, token: str) -> bool:
        """``token`` is one of the agent's, compared in constant time with each of them."""
        held = False
        for candidate in self.tokens or (self.token,):
            held |= hmac.compare_digest(candidate.encode(), token.encode())
        return held

    def allows_callback(self, url: str) -> bool:
        """``url`` is well-formed and under one of the prefixes (addresses are checked apart)."""
        try:
            allowed_destination(self, url)
        except DestinationRefused:
            return False
        return True


@dataclass(frozen=True, slots=True)
class SlackSettings:
    bot_token: str | None
    signing_secret: str | None
    app_token: str | None
    api_url: str

    def missing(self) -> list[str]:
        """What `countersign serve` needs and does not have, with where to get it."""
        problems = []
        if not self.bot_token:
            problems.append(
                "SLACK_BOT_TOKEN is not set: the Bot User OAuth Token (xoxb-...) from your "
                "Slack app's 'OAuth & Permissions' page, after installing the app"
            )
        if not self.signing_secret:
            problems.append(
                "SLACK_SIGNING_SECRET is not set: the Signing Secret from your Slack app's "
                "'Basic Information' page (Countersign never starts without it: every click "
                "is verified with it)"
            )
        return problems


@dataclass(frozen=True, slots=True)
class Settings:
    path: Path
    server: ServerSettings
    store: StoreSettings
    approvals: ApprovalSettings
    slack: SlackSettings
    roles: Mapping[str, frozenset[str]]
    agents: Mapping[str, AgentSettings]
    registry: Registry
    policy: PolicyTable
    #: the [escalation] section: trigger thresholds, responders, routes
    escalation: EscalationPolicy = field(default_factory=EscalationPolicy)
    #: the [slack] section: digests of similar proposals (bot/settings/digests.py)
    digests: DigestSettings = field(default_factory=DigestSettings)
    #: the [delegation] section: how long delegations from Slack last
    delegation: DelegationSettings = field(default_factory=DelegationSettings)
    #: the [audit] section: where the audit chain's head is anchored (bot/settings/audit.py)
    audit: AnchorSettings = field(default_factory=AnchorSettings)
    #: the [monitoring] section: the metrics' port, readiness (bot/settings/monitoring.py)
    monitoring: MonitoringSettings = field(default_factory=MonitoringSettings)
    #: the [retention] section: when decided proposals are archived (bot/settings/retention.py)
    retention: RetentionSettings = field(default_factory=RetentionSettings)
    _agents_by_token: Mapping[str, AgentSettings] = field(default_factory=dict, repr=False)

    def agent_for_token(self, token: str) -> AgentSettings | None:
        return self._agents_by_token.get(token)


def is_user_group(value: str) -> bool:
    """A Slack user group id (S...), whose members are read from Slack when needed."""
    return len(value) >= 3 and value[0] == "S" and value[1:].isalnum() and value.isupper()


def looks_like_user_id(value: str) -> bool:
    return len(value) >= 3 and value[0] in "UW" and value[1:].isalnum() and value.isupper()
