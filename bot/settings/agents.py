"""The ``[agents]`` and ``[operations]`` tables checked and built: each agent's tokens (from the
environment), whom it may act for, where its callbacks may go, and each configured operation.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any, Final

from bot.settings.callback_urls import parse_prefix
from bot.settings.model import (
    ROLE_PREFIX,
    AgentSection,
    AgentSettings,
    FileModel,
    is_user_group,
    looks_like_user_id,
)
from contracts.base import Operation
from contracts.operations import decision, refund, webhook
from contracts.redaction import shown_url
from contracts.toml_text import as_toml

__all__ = ["load_agents", "load_operations"]

#: The fewest characters an agent's bearer token may have.
TOKEN_LEAST: Final = 16


def load_agents(
    path: Path, model: FileModel, env: Mapping[str, str], problems: list[str]
) -> tuple[dict[str, AgentSettings], dict[str, AgentSettings]]:
    agents: dict[str, AgentSettings] = {}
    by_token: dict[str, AgentSettings] = {}
    for name, section in model.agents.items():
        where = f"{path}: agents.{name}"
        token = _token(
            f"{where}.token_env",
            section.token_env,
            env,
            problems,
            holds=" (it holds the agent's bearer token)",
        )
        if token is None:
            continue
        secret = token
        if section.callback_secret_env:
            secret = _from_env(
                f"{where}.callback_secret_env", section.callback_secret_env, env, problems
            )
            if not secret:
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
        bad = [owner for owner in section.owners if not looks_like_user_id(owner)]
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
    section: AgentSection,
    env: Mapping[str, str],
    by_token: Mapping[str, AgentSettings],
    problems: list[str],
) -> tuple[str, ...] | None:
    """The tokens in ``extra_token_envs`` (a rotation's old or new one); None after a problem."""
    tokens: list[str] = []
    where = f"{path}: agents.{name}.extra_token_envs"
    for variable in section.extra_token_envs:
        token = _token(where, variable, env, problems)
        if token is None:
            return None
        if token in by_token:
            problems.append(
                f"{where}: agents {by_token[token].name!r} and {name!r} share the token in "
                f"{variable}; each agent needs its own"
            )
            return None
        tokens.append(token)
    return tuple(tokens)


def _from_env(
    where: str, variable: str, env: Mapping[str, str], problems: list[str], *, holds: str = ""
) -> str:
    """Environment variable ``variable``'s value; "" after saying, at ``where``, that it is not
    set (and what it ``holds``)."""
    value = env.get(variable, "")
    if not value:
        problems.append(f"{where}: environment variable {variable} is not set{holds}")
    return value


def _token(
    where: str, variable: str, env: Mapping[str, str], problems: list[str], *, holds: str = ""
) -> str | None:
    """An agent's bearer token from ``variable``, set and at least :data:`TOKEN_LEAST`
    characters long; None after saying, at ``where``, why not."""
    token = _from_env(where, variable, env, problems, holds=holds)
    if not token:
        return None
    if len(token) < TOKEN_LEAST:
        problems.append(
            f"{where}: the token in {variable} is too short (at least {TOKEN_LEAST} characters)"
        )
        return None
    return token


def _check_acts_for(
    path: Path,
    name: str,
    section: AgentSection,
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
        elif not (looks_like_user_id(entry) or is_user_group(entry)):
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


def load_operations(
    path: Path, model: FileModel, env: Mapping[str, str], problems: list[str]
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
                    problems.append(f"{where}.secret_env: {_secret_env_problem(secret_env)}")
                    continue
                operations.append(webhook.from_config({"name": name, **options}, secret=secret))
            elif kind == "decision":
                operations.append(decision.from_config({"name": name, **options}))
            else:
                expected = "'refund', 'webhook' or 'decision'"
                problems.append(
                    f"{where}.kind: required key is missing (expected {expected})"
                    if kind is None
                    else f"{where}.kind: expected {expected} (got {as_toml(kind)})"
                )
        except ValueError as error:
            problems.append(f"{where}: {error}")
    return operations


def _secret_env_problem(secret_env: object) -> str:
    expected = "the name of an environment variable holding the HMAC secret for the target"
    if secret_env is None:
        return f"required key is missing (expected {expected})"
    if isinstance(secret_env, str):
        return f"expected {expected} (got {as_toml(secret_env)}, which is not set)"
    return f"expected {expected} (got {as_toml(secret_env)})"
