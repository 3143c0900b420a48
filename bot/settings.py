"""Settings: the TOML file (agents, roles, operations, policy) plus secrets from the environment.

Everything is checked when it is loaded, and every problem is reported at once, each naming the
file, the key and what was expected. Secrets never live in the file: it names the environment
variables that hold them.
"""

from __future__ import annotations

import hmac
import os
import re
import tomllib
import types
from collections.abc import Collection, Iterator, Mapping
from copy import deepcopy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from bot.api.limit_settings import AgentLimitsSection, Limits
from bot.audit.settings import AnchorSettings, AuditSection, load_audit
from bot.config_lines import KeyLines, key_lines
from bot.config_problems import line_of_problem
from bot.delegations.settings import DelegationSettings
from bot.digests.settings import DigestSettings
from bot.escalations.settings import EscalationSection, load_escalation
from bot.flow.destinations import CallbackGuard, DestinationRefused, parse_prefix
from bot.monitoring.settings import MonitoringSettings
from bot.operators.settings import RetentionSettings
from contracts.base import Operation
from contracts.escalation import EscalationPolicy
from contracts.operations import decision, refund, webhook
from contracts.policy import PolicyError, PolicyTable
from contracts.redaction import shown_url
from contracts.registry import Registry
from contracts.reminders import DEFAULT_REMIND_AT, RemindAt, parse_remind_at

__all__ = [
    "DEFAULT_CONFIG_PATH",
    "ROLE_PREFIX",
    "AgentSettings",
    "ApprovalSettings",
    "ConfigError",
    "ServerSettings",
    "Settings",
    "SlackSettings",
    "is_user_group",
    "load_settings",
    "setting_keys",
    "slack_settings",
]

DEFAULT_CONFIG_PATH = Path("countersign.toml")
#: How an agent's acts_for names a role: "role:finance".
ROLE_PREFIX = "role:"
SLACK_API_DEFAULT = "https://slack.com/api/"
#: A SQLite store URL; the path follows (a fourth slash starts an absolute one).
_SQLITE_URL = "sqlite:///"


class ConfigError(Exception):
    """The configuration has problems; ``problems`` lists each one."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("\n".join(problems))


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ServerSettings(_Section):
    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=0, le=65535)
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


class StoreSettings(_Section):
    url: str = "sqlite:///countersign.sqlite"
    #: fsync every commit (synchronous=FULL); turning it off risks the last commits on power loss
    durable: bool = True


class ApprovalSettings(_Section):
    #: workspaces (team ids) whose people may decide; empty: the app's own workspace only
    allowed_teams: tuple[str, ...] = ()
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


class _AgentSection(_Section):
    token_env: str = Field(min_length=1)
    #: more environment variables, each holding another token the agent may use (a rotation)
    extra_token_envs: tuple[str, ...] = ()
    #: Slack user ids of the people who own the agent: they can never approve its proposals
    owners: tuple[str, ...] = ()
    #: whom the agent may name as requested_by: Slack user ids (U.../W...), user group ids
    #: (S...) and roles ("role:NAME"); empty: its owners only
    acts_for: tuple[str, ...] = ()
    #: people may let the agent act for them from Slack (/countersign delegate)
    delegation: bool = False
    callback_secret_env: str | None = None
    #: where its callback_url may point (bot/flow/destinations.py); empty: it may name none
    callback_url_prefixes: tuple[str, ...] = ()
    #: its callbacks may go to loopback, private, link-local and CGNAT addresses
    callback_allow_private: bool = False
    #: overrides of the [limits] defaults for this agent (bot/api/limit_settings.py)
    limits: AgentLimitsSection | None = None


class _FileModel(_Section):
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
    roles: dict[str, tuple[str, ...]] = {}
    agents: dict[str, _AgentSection] = {}
    operations: dict[str, dict[str, Any]] = {}
    policy: list[dict[str, Any]] = []


@dataclass(frozen=True, slots=True)
class AgentSettings:
    name: str
    token: str
    callback_secret: str
    #: a callback_url must fall under one of these (parsed; bot/flow/destinations.py); empty: none
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
            CallbackGuard().allowed_destination(self, url)
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
    #: the [slack] section: digests of similar proposals (bot/digests/settings.py)
    digests: DigestSettings = field(default_factory=DigestSettings)
    #: the [delegation] section: how long delegations from Slack last
    delegation: DelegationSettings = field(default_factory=DelegationSettings)
    #: the [audit] section: where the audit chain's head is anchored (bot/audit/settings.py)
    audit: AnchorSettings = field(default_factory=AnchorSettings)
    #: the [monitoring] section: the metrics' port, readiness (bot/monitoring/settings.py)
    monitoring: MonitoringSettings = field(default_factory=MonitoringSettings)
    #: the [retention] section: when decided proposals are archived (bot/operators/settings.py)
    retention: RetentionSettings = field(default_factory=RetentionSettings)
    _agents_by_token: Mapping[str, AgentSettings] = field(default_factory=dict, repr=False)

    def agent_for_token(self, token: str) -> AgentSettings | None:
        return self._agents_by_token.get(token)


def load_settings(path: Path | str | None = None, env: Mapping[str, str] | None = None) -> Settings:
    """Read and check the configuration; raise ConfigError listing every problem."""
    env = os.environ if env is None else env
    path = Path(path or env.get("COUNTERSIGN_CONFIG") or DEFAULT_CONFIG_PATH)
    try:
        text = path.read_text(encoding="utf-8")
        raw = tomllib.loads(text)
    except FileNotFoundError:
        raise ConfigError(
            [f"{path}: no such file (pass --config PATH or set COUNTERSIGN_CONFIG)"]
        ) from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError([f"{path}: cannot be read: {error}"]) from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError([_syntax_problem(error, path)]) from None
    try:
        return _checked(path, raw, env)
    except ConfigError as error:
        raise ConfigError(_placed(path, error.problems, raw, key_lines(text))) from None


def _placed(path: Path, problems: list[str], raw: dict[str, Any], lines: KeyLines) -> list[str]:
    """Each problem as ``file:line: key: ...``, where its key's line can be found."""
    placed = []
    prefix = f"{path}: "
    for problem in problems:
        about = problem.removeprefix(prefix)
        line = line_of_problem(about, raw, lines) if problem.startswith(prefix) else None
        placed.append(problem if line is None else f"{path}:{line}: {about}")
    return placed


def _checked(path: Path, raw: dict[str, Any], env: Mapping[str, str]) -> Settings:
    problems: list[str] = []
    left_out: list[tuple[int | str, ...]] = []
    try:
        model = _FileModel.model_validate(raw)
    except ValidationError as error:
        problems = [_describe(path, item) for item in error.errors(include_url=False)]
        # an unknown key or a bad value must not hide the file's other problems: check the rest
        # without it (a bad value's default in its place), unless leaving it out would cause
        # problems of its own (a required key, or a role, agent or operation named elsewhere)
        skippable = [_skippable(item) for item in error.errors()]
        left_out = [loc for loc in skippable if loc is not None]
        if len(left_out) < len(skippable):
            raise ConfigError(problems) from None
        try:
            model = _FileModel.model_validate(_without(raw, left_out))
        except ValidationError:
            raise ConfigError(problems) from None
    reported = len(problems)

    roles = {name: frozenset(members) for name, members in model.roles.items()}
    for name, members in model.roles.items():
        bad = [m for m in members if not (_looks_like_user_id(m) or is_user_group(m))]
        if bad:
            problems.append(
                f"{path}: roles.{name}: {bad!r} are not Slack user ids or user group ids "
                "(expected U... or W... for people, S... for a user group)"
            )

    agents, by_token = _load_agents(path, model, env, problems)
    if model.approvals.review_sample > 0 and model.approvals.review_channel is None:
        problems.append(
            f"{path}: approvals.review_channel: required when approvals.review_sample is above "
            f"0 (it is {model.approvals.review_sample}): the Slack channel id, such as "
            "'C0REVIEWS', where sampled automatic approvals are posted for review"
        )
    escalation = load_escalation(path, model.escalation, model.roles.keys(), problems)
    audit = load_audit(path, model.audit, env, problems)
    operations = _load_operations(path, model, env, problems)
    try:
        registry = Registry(operations)
    except ValueError as error:
        problems.append(f"{path}: operations: {error}")
        registry = Registry([])

    policy = PolicyTable.load([], registry=registry, roles=roles)
    # The policy is checked even when other parts have problems, so one run shows them all. A rule
    # for an operation that is configured but could not be built is not called unknown: the
    # operation's own problem is already listed.
    unbuilt = [name for name in model.operations if name not in registry]
    try:
        policy = PolicyTable.load(
            model.policy, registry=registry, roles=roles, agents=model.agents.keys()
        )
    except PolicyError as error:
        problems += [
            f"{path}: {problem}"
            for problem in error.problems
            if not _names_unbuilt_operation(problem, unbuilt)
        ]
    if problems:
        # a key left out above is reported once: not again as missing where it is required
        left = tuple(f"{path}: {'.'.join(str(part) for part in loc)}:" for loc in left_out)
        raise ConfigError(
            problems[:reported] + [p for p in problems[reported:] if not p.startswith(left)]
        )

    return Settings(
        path=path,
        server=model.server,
        store=_store_beside(path, model.store),
        approvals=model.approvals,
        escalation=escalation,
        digests=model.slack,
        delegation=model.delegation,
        audit=audit,
        monitoring=model.monitoring,
        retention=model.retention,
        slack=slack_settings(env),
        roles=roles,
        agents=agents,
        registry=registry,
        policy=policy,
        _agents_by_token=by_token,
    )


def _store_beside(config: Path, store: StoreSettings) -> StoreSettings:
    """``store`` with a relative SQLite path made absolute from the configuration file's folder.

    ``sqlite:///countersign.sqlite`` (the default) then names the same file whichever folder
    Countersign is started from: a shell's, a service manager's or a container's. Absolute
    paths, PostgreSQL URLs and URLs that name no file are kept as written; opening the store
    says what is wrong with the last (store/open.py).
    """
    url = store.url
    if url.startswith(_SQLITE_URL):
        scheme, file = _SQLITE_URL, url.removeprefix(_SQLITE_URL)
    elif "://" in url:
        return store
    else:
        scheme, file = "", url  # a bare file path, as store/open.py reads one
    if not file or file == ":memory:" or Path(file).is_absolute():
        return store
    absolute = os.path.abspath(config.parent / file)
    return store.model_copy(update={"url": f"{scheme}{absolute}"})


def slack_settings(env: Mapping[str, str]) -> SlackSettings:
    """The Slack credentials and API address, from the environment only."""
    return SlackSettings(
        bot_token=env.get("SLACK_BOT_TOKEN") or None,
        signing_secret=env.get("SLACK_SIGNING_SECRET") or None,
        app_token=env.get("SLACK_APP_TOKEN") or None,
        api_url=_with_slash(env.get("SLACK_API_URL") or SLACK_API_DEFAULT),
    )


def _names_unbuilt_operation(problem: str, unbuilt: list[str]) -> bool:
    return any(f"field 'operation': unknown operation {name!r}" in problem for name in unbuilt)


def _load_agents(
    path: Path, model: _FileModel, env: Mapping[str, str], problems: list[str]
) -> tuple[dict[str, AgentSettings], dict[str, AgentSettings]]:
    agents: dict[str, AgentSettings] = {}
    by_token: dict[str, AgentSettings] = {}
    for name, section in model.agents.items():
        token = env.get(section.token_env, "")
        if not token:
            problems.append(
                f"{path}: agents.{name}.token_env: environment variable "
                f"{section.token_env} is not set (it holds the agent's bearer token)"
            )
            continue
        if len(token) < 16:
            problems.append(
                f"{path}: agents.{name}.token_env: the token in {section.token_env} is too "
                "short (at least 16 characters)"
            )
            continue
        secret = token
        if section.callback_secret_env:
            secret = env.get(section.callback_secret_env, "")
            if not secret:
                problems.append(
                    f"{path}: agents.{name}.callback_secret_env: environment variable "
                    f"{section.callback_secret_env} is not set"
                )
                continue
        if token in by_token:
            problems.append(
                f"{path}: agents.{name}.token_env: agents {by_token[token].name!r} and "
                f"{name!r} share a token; each agent needs its own"
            )
            continue
        extra = _extra_tokens(path, name, section, env, by_token, problems)
        if extra is None:
            continue
        bad = [owner for owner in section.owners if not _looks_like_user_id(owner)]
        if bad:
            problems.append(
                f"{path}: agents.{name}.owners: {bad!r} are not Slack user ids (expected U... "
                "or W...)"
            )
        _check_acts_for(path, name, section, model.roles.keys(), problems)
        _check_callback_prefixes(path, name, section.callback_url_prefixes, problems)
        agent = AgentSettings(
            name,
            token,
            secret,
            section.callback_url_prefixes,
            tuple(section.owners),
            acts_for=tuple(section.acts_for),
            delegation=section.delegation,
            limits=model.limits.overridden(section.limits),
            callback_allow_private=section.callback_allow_private,
            tokens=(token, *extra),
        )
        agents[name] = agent
        for held in agent.tokens:
            by_token[held] = agent
    return agents, by_token


def _extra_tokens(
    path: Path,
    name: str,
    section: _AgentSection,
    env: Mapping[str, str],
    by_token: Mapping[str, AgentSettings],
    problems: list[str],
) -> tuple[str, ...] | None:
    """The tokens in ``extra_token_envs`` (a rotation's old or new one); None after a problem."""
    tokens: list[str] = []
    where = f"{path}: agents.{name}.extra_token_envs"
    for variable in section.extra_token_envs:
        token = env.get(variable, "")
        if not token:
            problems.append(f"{where}: environment variable {variable} is not set")
            return None
        if len(token) < 16:
            problems.append(
                f"{where}: the token in {variable} is too short (at least 16 characters)"
            )
            return None
        if token in by_token:
            problems.append(
                f"{where}: agents {by_token[token].name!r} and {name!r} share the token in "
                f"{variable}; each agent needs its own"
            )
            return None
        tokens.append(token)
    return tuple(tokens)


def _check_acts_for(
    path: Path,
    name: str,
    section: _AgentSection,
    roles: Collection[str],
    problems: list[str],
) -> None:
    """Whom the agent may name as requested_by: people, user groups or existing roles; an agent
    naming nobody (no acts_for, no owners) is refused with what to add."""
    where = f"{path}: agents.{name}"
    for entry in section.acts_for:
        if entry.startswith(ROLE_PREFIX):
            role = entry.removeprefix(ROLE_PREFIX)
            if role not in roles:
                known = ", ".join(sorted(roles)) or "none are configured"
                problems.append(
                    f"{where}.acts_for: {entry!r} names role {role!r}, which is not in [roles] "
                    f"(roles: {known})"
                )
        elif not (_looks_like_user_id(entry) or is_user_group(entry)):
            problems.append(
                f"{where}.acts_for: {entry!r} is not a Slack user id (U... or W...), a user "
                "group id (S...) or a role written 'role:NAME'"
            )
    if not section.acts_for and not section.owners and not section.delegation:
        problems.append(
            f"{where}: says nobody it may act for, so every proposal it sends would be refused. "
            'Add acts_for = ["U..."] with the Slack user ids, user group ids (S...) or roles '
            '("role:NAME") it may name as requested_by (or owners = ["U..."]: an agent '
            "without acts_for may name only its owners), or delegation = true to let people "
            "delegate to it from Slack"
        )


def _check_callback_prefixes(
    path: Path, name: str, prefixes: tuple[str, ...], problems: list[str]
) -> None:
    for prefix in prefixes:
        try:
            parse_prefix(prefix)
        except ValueError as error:
            problems.append(
                f"{path}: agents.{name}.callback_url_prefixes: {shown_url(prefix)} {error} "
                '(expected e.g. "https://agents.example.com/countersign")'
            )


def _load_operations(
    path: Path, model: _FileModel, env: Mapping[str, str], problems: list[str]
) -> list[Operation[Any, Any]]:
    operations: list[Operation[Any, Any]] = []
    for name, section in model.operations.items():
        where = f"{path}: operations.{name}"
        options = {k: v for k, v in section.items() if k != "kind"}
        kind = section.get("kind")
        try:
            if kind == "refund":
                operations.append(refund.from_config(name, options))
            elif kind == "webhook":
                secret_env = options.pop("secret_env", None)
                secret = env.get(secret_env, "") if isinstance(secret_env, str) else ""
                if not secret:
                    problems.append(
                        f"{where}.secret_env: expected the name of an environment variable "
                        f"holding the HMAC secret for the target (got {secret_env!r}, "
                        "which is not set)"
                    )
                    continue
                operations.append(webhook.from_config({"name": name, **options}, secret=secret))
            elif kind == "decision":
                operations.append(decision.from_config({"name": name, **options}))
            else:
                problems.append(
                    f"{where}.kind: expected 'refund', 'webhook' or 'decision' (got {kind!r})"
                )
        except ValueError as error:
            problems.append(f"{where}: {error}")
    return operations


#: tables whose entries are named elsewhere (a rule's approvers, agents and operation)
_NAMED = frozenset({"roles", "agents", "operations"})


def _skippable(item: Any) -> tuple[int | str, ...] | None:
    """Where a key the file may be checked without is (pydantic's error ``item``), or None."""
    loc: tuple[int | str, ...] = tuple(item["loc"])
    if item["type"] == "extra_forbidden":
        return loc
    if item["type"] == "missing":
        return None
    cut = next((at for at, part in enumerate(loc) if isinstance(part, int)), len(loc))
    loc = loc[:cut]  # a bad element of a list: the list is left out
    if len(loc) < 2 or (loc[0] in _NAMED and len(loc) < 3):
        return None
    if loc[0] == "agents" and loc[2] != "limits":  # its owners and acts_for are read together
        return None
    return loc


def _without(raw: dict[str, Any], paths: list[tuple[int | str, ...]]) -> dict[str, Any]:
    """A copy of ``raw`` without the keys at ``paths`` (pydantic's error locations)."""
    copy = deepcopy(raw)
    for path in paths:
        table: Any = copy
        for part in path[:-1]:
            if isinstance(table, dict):
                table = table.get(part)
            elif isinstance(table, list) and isinstance(part, int) and part < len(table):
                table = table[part]
            else:
                table = None
        if isinstance(table, dict):
            table.pop(path[-1], None)
    return copy


def _syntax_problem(error: tomllib.TOMLDecodeError, path: Path) -> str:
    """``file:line: not valid TOML: ...``, with the line and column where tomllib says only
    "at end of document"."""
    message = str(error)
    try:
        lines = path.read_text(encoding="utf-8").rstrip("\n").split("\n")
    except (OSError, UnicodeDecodeError):
        return f"{path}: not valid TOML: {message}"
    line = len(lines)
    if "(at end of document)" in message:
        where = f"(at line {line}, column {len(lines[-1]) + 1}, the end of the document)"
        message = message.replace("(at end of document)", where)
    else:
        given = re.search(r"\(at line (\d+), column \d+\)", message)
        if given is None:
            return f"{path}: not valid TOML: {message}"
        line = int(given.group(1))
    return f"{path}:{line}: not valid TOML: {message}"


def _describe(path: Path, item: Any) -> str:
    loc = tuple(str(part) for part in item["loc"])
    location = ".".join(loc)
    if item["type"] == "extra_forbidden":
        allowed = _keys_allowed_at(loc[:-1])
        expected = f" (expected one of: {', '.join(allowed)})" if allowed else ""
        return f"{path}: {location}: unknown key{expected}"
    if item["type"] == "missing":
        return f"{path}: {location}: {item['msg']}"
    return f"{path}: {location}: {item['msg']} (got {item['input']!r})"


def _keys_allowed_at(parent: tuple[str, ...]) -> tuple[str, ...]:
    """The keys a table of the file may hold, for naming them when an unknown one appears."""
    sections: dict[str, type[BaseModel]] = {
        "server": ServerSettings,
        "store": StoreSettings,
        "escalation": EscalationSection,
        "slack": DigestSettings,
        "limits": Limits,
        "delegation": DelegationSettings,
        "audit": AuditSection,
        "monitoring": MonitoringSettings,
        "retention": RetentionSettings,
    }
    if not parent:
        return tuple(_FileModel.model_fields)
    if len(parent) == 1 and parent[0] in sections:
        return tuple(sections[parent[0]].model_fields)
    if len(parent) == 2 and parent[0] == "agents":
        return tuple(_AgentSection.model_fields)
    if len(parent) == 3 and parent[0] == "agents" and parent[2] == "limits":
        return tuple(AgentLimitsSection.model_fields)
    return ()


def setting_keys() -> list[str]:
    """Every key the file accepts, dotted as the configuration reference lists them.

    ``server.port``; a table of names of your choosing as ``<name>`` (``agents.<name>.acts_for``);
    an array of tables as ``[]`` (``escalation.routes[].channel``). ``operations.<name>`` and
    ``policy`` end here: their keys are checked by the operations and the policy table.
    """
    return sorted(_keys_under(_FileModel, ""))


def _keys_under(model: type[BaseModel], prefix: str) -> Iterator[str]:
    for name, info in model.model_fields.items():
        yield from _keys_of(info.annotation, f"{prefix}{name}")


def _keys_of(annotation: Any, key: str) -> Iterator[str]:
    origin, args = get_origin(annotation), get_args(annotation)
    present = [arg for arg in args if arg is not type(None)]
    if origin in (Union, types.UnionType) and len(present) == 1:
        yield from _keys_of(present[0], key)
    elif _is_model(annotation):
        yield from _keys_under(annotation, f"{key}.")
    elif origin is dict and _is_model(args[1]):
        yield from _keys_under(args[1], f"{key}.<name>.")
    elif origin is dict:
        yield f"{key}.<name>"
    elif origin in (tuple, list) and _is_model(args[0]):
        yield from _keys_under(args[0], f"{key}[].")
    else:
        yield key


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def is_user_group(value: str) -> bool:
    """A Slack user group id (S...), whose members are read from Slack when needed."""
    return len(value) >= 3 and value[0] == "S" and value[1:].isalnum() and value.isupper()


def _looks_like_user_id(value: str) -> bool:
    return len(value) >= 3 and value[0] in "UW" and value[1:].isalnum() and value.isupper()


def _with_slash(url: str) -> str:
    return url if url.endswith("/") else url + "/"
