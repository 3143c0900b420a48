"""The agent HTTP API: proposals submitted, read and long-polled over ``/v1``, with what guards it.

- ``proposals``: the routes (submit, read, wait) and the agent's authentication
- ``agent_requests``: what every agent endpoint shares: admission, the body within its limits,
  idempotency keys, the answer and the long poll
- ``admission``, ``quotas``: how much of the service one agent may use (its limits are the
  ``[limits]`` section, bot/settings/limits.py)
- ``refusals``: what the guards turn away before the store is asked, told to the metrics
- ``schemas``, ``openapi``, ``problems``: the wire format, its OpenAPI document, error answers
- ``waiters``: long polls woken by state changes
- ``callbacks``, ``callback_http``: how agents' callbacks are sent (which URLs an agent may
  name: bot/settings/callback_urls.py; which addresses they may reach: bot/flow/destinations.py)

The names below are imported from their module when first asked for, so that importing one
module of this package imports neither the others nor the app they need.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot import exported_from

if TYPE_CHECKING:
    from bot.api.admission import Admission
    from bot.api.callback_http import CallbackHttp
    from bot.api.callbacks import CallbackPoster, CallbackSender, DestinationSlots
    from bot.api.problems import Problem, problem_middleware
    from bot.api.proposals import agent_routes, authenticated_agent
    from bot.api.quotas import Quotas
    from bot.api.schemas import SLACK_USER_ID
    from bot.api.waiters import Waiters

__all__ = [
    "SLACK_USER_ID",
    "Admission",
    "CallbackHttp",
    "CallbackPoster",
    "CallbackSender",
    "DestinationSlots",
    "Problem",
    "Quotas",
    "Waiters",
    "agent_routes",
    "authenticated_agent",
    "problem_middleware",
]

#: the module of this package that defines each public name
_DEFINED_IN = {
    "Admission": "admission",
    "CallbackHttp": "callback_http",
    "CallbackPoster": "callbacks",
    "CallbackSender": "callbacks",
    "DestinationSlots": "callbacks",
    "Problem": "problems",
    "Quotas": "quotas",
    "SLACK_USER_ID": "schemas",
    "Waiters": "waiters",
    "agent_routes": "proposals",
    "authenticated_agent": "proposals",
    "problem_middleware": "problems",
}

__getattr__ = exported_from(__name__, _DEFINED_IN)
