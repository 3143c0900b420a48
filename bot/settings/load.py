"""Loading the settings: the TOML file read, every section checked, the secrets taken from the
environment, and every problem reported at once, each naming the file, its line, the key and
what was expected. Secrets never live in the file: it names the environment variables that hold
them.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from bot.settings.agents import load_agents, load_operations
from bot.settings.audit import load_audit
from bot.settings.escalation import load_escalation
from bot.settings.lines import KeyLines, key_lines
from bot.settings.model import (
    DEFAULT_CONFIG_PATH,
    SLACK_API_DEFAULT,
    ConfigError,
    ConfigFileMissing,
    FileModel,
    ServerSettings,
    Settings,
    SlackSettings,
    StoreSettings,
    is_user_group,
    looks_like_user_id,
)
from bot.settings.monitoring import MonitoringSettings
from bot.settings.problems import (
    line_of_problem,
    skippable_path,
    syntax_problem,
    validation_problem,
    without_paths,
)
from contracts.policy import PolicyError, PolicyTable
from contracts.registry import Registry

__all__ = ["load_settings", "slack_settings"]


#: A SQLite store URL; the path follows (a fourth slash starts an absolute one).
_SQLITE_URL = "sqlite:///"


def load_settings(path: Path | str | None = None, env: Mapping[str, str] | None = None) -> Settings:
    """Read and check the configuration; raise ConfigError listing every problem."""
    env = os.environ if env is None else env
    path = Path(path or env.get("COUNTERSIGN_CONFIG") or DEFAULT_CONFIG_PATH)
    try:
        text = path.read_text(encoding="utf-8")
        raw = tomllib.loads(text)
    except FileNotFoundError:
        raise ConfigFileMissing(
            path, f"{path}: no such file (pass --config PATH or set COUNTERSIGN_CONFIG)"
        ) from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError([f"{path}: cannot be read: {error}"]) from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError([syntax_problem(error, path)]) from None
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
        model = FileModel.model_validate(raw)
    except ValidationError as error:
        problems = [validation_problem(path, item) for item in error.errors(include_url=False)]
        # an unknown key or a bad value must not hide the file's other problems: check the rest
        # without it (a bad value's default in its place), unless leaving it out would cause
        # problems of its own (a required key, or a role, agent or operation named elsewhere)
        skippable = [skippable_path(item) for item in error.errors()]
        left_out = [loc for loc in skippable if loc is not None]
        if len(left_out) < len(skippable):
            raise ConfigError(problems) from None
        try:
            model = FileModel.model_validate(without_paths(raw, left_out))
        except ValidationError:
            raise ConfigError(problems) from None
    reported = len(problems)

    roles = {name: frozenset(members) for name, members in model.roles.items()}
    for name, members in model.roles.items():
        bad = [m for m in members if not (looks_like_user_id(m) or is_user_group(m))]
        if bad:
            problems.append(
                f"{path}: roles.{name}: {bad!r} are not Slack user ids or user group ids "
                "(expected U... or W... for people, S... for a user group)"
            )

    agents, by_token = load_agents(path, model, env, problems)
    if model.approvals.review_sample > 0 and model.approvals.review_channel is None:
        problems.append(
            f"{path}: approvals.review_channel: required when approvals.review_sample is above "
            f"0 (it is {model.approvals.review_sample}): the Slack channel id, such as "
            "'C0REVIEWS', where sampled automatic approvals are posted for review"
        )
    _check_ports(path, model.server, model.monitoring, problems)
    escalation = load_escalation(path, model.escalation, model.roles.keys(), problems)
    audit = load_audit(path, model.audit, env, problems)
    operations = load_operations(path, model, env, problems)
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


def _with_slash(url: str) -> str:
    return url if url.endswith("/") else url + "/"


def _check_ports(
    path: Path, server: ServerSettings, monitoring: MonitoringSettings, problems: list[str]
) -> None:
    problems.extend(f"{path}: {clash}" for clash in port_clashes(server, monitoring))


def port_clashes(server: ServerSettings, monitoring: MonitoringSettings) -> list[str]:
    """``server.slack_port`` is a listening socket of its own: not the main nor the metrics'.
    Checked when the file is loaded, and again by ``serve`` once ``--port`` and
    ``--slack-port`` are applied."""
    slack = server.slack_port
    if slack is None or slack == 0:  # 0: a free port, chosen when it is bound
        return []
    clashes = []
    if slack == server.port:
        clashes.append(
            f"server.slack_port: must differ from server.port (both are {slack}): "
            "Slack's port is a listening socket of its own; leave it out to serve Slack on the "
            "main port only"
        )
    if slack == monitoring.metrics_port:
        clashes.append(
            f"server.slack_port: must differ from monitoring.metrics_port (both are {slack})"
        )
    return clashes
