"""The shapes of the ids Slack puts in the payloads Countersign decodes.

A signed payload is Slack's, but a field that does not look like what Slack sends (an empty user
id, a channel that is a number) means the payload is not one Slack would send: it is ignored
before anything is looked up, told or audited, rather than turned into a Slack call that fails.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import StringConstraints

from contracts.api import SLACK_USER_ID

__all__ = ["SLACK_CHANNEL_ID", "SlackChannel", "SlackUser", "TriggerId"]

#: public channels (C), private channels and group DMs (G), direct messages (D)
SLACK_CHANNEL_ID = r"^[CGD][A-Z0-9]{2,}$"

#: a person's Slack user id (U..., or W... on Enterprise Grid)
SlackUser = Annotated[str, StringConstraints(pattern=SLACK_USER_ID)]
#: a conversation id; Countersign's own "app_home" marks a click on the Home tab
SlackChannel = Annotated[str, StringConstraints(pattern=SLACK_CHANNEL_ID + "|^app_home$")]
#: what views.open needs to answer a click with a modal
TriggerId = Annotated[str, StringConstraints(min_length=1, max_length=200)]
