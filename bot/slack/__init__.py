"""The Slack edges: listeners and the signature gate, the slash command, the App Home tab,
publishing messages, reading people's profiles, and a local Slack-compatible server.

- ``listeners``: the bolt app and the click listeners of proposals (``bolt_app``: how it is built)
- ``gate``: Slack's request signature, checked before anything else
- ``slash``, ``home``, ``show_full``, ``waiting_page``, ``current_state``: ``/countersign``,
  the Home tab, the read-only "Show full" modal, one fairly shared page of what waits, and the
  current state of what waits (each operation's revalidation, run in the background)
- ``publish``: messages posted and updated (through the outbox)
- ``tasks``: the background work the Home tab and the current state start, drained at shutdown
- ``directory``: who people are in Slack, read at click time
- ``local``, ``local_socket``: a local Slack Web API (and Socket Mode) for tests and the sandbox

The names below are imported from their module when first asked for, so that importing one
module of this package imports neither the others nor the app they need.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot import exported_from

if TYPE_CHECKING:
    from bot.slack.directory import SlackDirectory
    from bot.slack.home import HomeTab, register_home_listener
    from bot.slack.listeners import (
        BOLT,
        SIGNING_SECRET,
        Click,
        build_bolt,
        click_listener,
        slack_events,
    )
    from bot.slack.local import (
        EphemeralMessage,
        LocalSlack,
        LocalUser,
        StoredMessage,
        running_local_slack,
    )
    from bot.slack.publish import METADATA_EVENT, DeliveryFailed, SlackPublisher, make_web_client
    from bot.slack.slash import SlashCommand, register_slash_command

__all__ = [
    "BOLT",
    "METADATA_EVENT",
    "SIGNING_SECRET",
    "Click",
    "DeliveryFailed",
    "EphemeralMessage",
    "HomeTab",
    "LocalSlack",
    "LocalUser",
    "SlackDirectory",
    "SlackPublisher",
    "SlashCommand",
    "StoredMessage",
    "build_bolt",
    "click_listener",
    "make_web_client",
    "register_home_listener",
    "register_slash_command",
    "running_local_slack",
    "slack_events",
]

#: the module of this package that defines each public name
_DEFINED_IN = {
    "BOLT": "listeners",
    "Click": "listeners",
    "DeliveryFailed": "publish",
    "EphemeralMessage": "local",
    "HomeTab": "home",
    "LocalSlack": "local",
    "LocalUser": "local",
    "METADATA_EVENT": "publish",
    "SIGNING_SECRET": "listeners",
    "SlackDirectory": "directory",
    "SlackPublisher": "publish",
    "SlashCommand": "slash",
    "StoredMessage": "local",
    "build_bolt": "listeners",
    "click_listener": "listeners",
    "make_web_client": "publish",
    "register_home_listener": "home",
    "register_slash_command": "slash",
    "running_local_slack": "local",
    "slack_events": "listeners",
}

__getattr__ = exported_from(__name__, _DEFINED_IN)
