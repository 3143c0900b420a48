"""Settings: the TOML file (agents, roles, operations, policy) plus secrets from the environment.

Everything is checked when it is loaded, and every problem is reported at once, each naming the
file, its line, the key and what was expected.

- ``model``: the file's sections and the ``Settings`` loading makes of them
- ``load``: ``load_settings`` (read, check, place each problem on its line), ``slack_settings``
  and ``port_clashes``
- ``agents``: the ``[agents]`` and ``[operations]`` tables checked and built
- ``callback_urls``: the callback URLs an agent's ``callback_url_prefixes`` allow (their form)
- ``keys``: every key the file accepts (docs/configuration.md lists exactly these)
- ``lines``, ``problems``: where in the file each key is written, and which key a problem is about
- ``section``: what every table is built on: immutable, no unknown keys, strict about TOML's
  types
- ``limits`` (``[limits]``: an agent's quotas), ``audit``, ``delegation``, ``digests``
  (``[slack]``), ``escalation``, ``monitoring``, ``retention``: the sections the features and
  edges read, one a module

Every section of the file lives here, so that the settings, which the proposal's flow reads,
import nothing of the features or edges that read them in turn. The names below are imported from
their module when first asked for, so that importing one module of this package imports none of
the others.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot import exported_from

if TYPE_CHECKING:
    from bot.settings.audit import AnchorSettings, AuditSection
    from bot.settings.delegation import DelegationSettings
    from bot.settings.digests import DigestSettings
    from bot.settings.escalation import EscalationSection
    from bot.settings.keys import setting_keys
    from bot.settings.limits import AgentLimitsSection, Limits
    from bot.settings.load import load_settings, port_clashes, slack_settings
    from bot.settings.model import (
        DEFAULT_CONFIG_PATH,
        ROLE_PREFIX,
        AgentSettings,
        ApprovalSettings,
        ConfigError,
        ConfigFileMissing,
        ServerSettings,
        Settings,
        SlackSettings,
        is_user_group,
    )
    from bot.settings.monitoring import MonitoringSettings
    from bot.settings.retention import RetentionSettings

__all__ = [
    "DEFAULT_CONFIG_PATH",
    "ROLE_PREFIX",
    "AgentLimitsSection",
    "AgentSettings",
    "AnchorSettings",
    "ApprovalSettings",
    "AuditSection",
    "ConfigError",
    "ConfigFileMissing",
    "DelegationSettings",
    "DigestSettings",
    "EscalationSection",
    "Limits",
    "MonitoringSettings",
    "RetentionSettings",
    "ServerSettings",
    "Settings",
    "SlackSettings",
    "is_user_group",
    "load_settings",
    "port_clashes",
    "setting_keys",
    "slack_settings",
]

#: the module of this package that defines each public name
_DEFINED_IN = {
    "AgentLimitsSection": "limits",
    "AgentSettings": "model",
    "AnchorSettings": "audit",
    "ApprovalSettings": "model",
    "AuditSection": "audit",
    "ConfigError": "model",
    "ConfigFileMissing": "model",
    "DEFAULT_CONFIG_PATH": "model",
    "DelegationSettings": "delegation",
    "DigestSettings": "digests",
    "EscalationSection": "escalation",
    "Limits": "limits",
    "MonitoringSettings": "monitoring",
    "ROLE_PREFIX": "model",
    "RetentionSettings": "retention",
    "ServerSettings": "model",
    "Settings": "model",
    "SlackSettings": "model",
    "is_user_group": "model",
    "load_settings": "load",
    "port_clashes": "load",
    "setting_keys": "keys",
    "slack_settings": "load",
}

__getattr__ = exported_from(__name__, _DEFINED_IN)
