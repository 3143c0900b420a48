"""The gate in front of bolt on ``POST /slack/events``: the signature first, then the body's shape.

Bolt reads a request's body before it checks the signature, so bytes that are not JSON made it
fail for anyone; and a signed body shaped unlike anything Slack sends (a list where an object
belongs, an action that is a number) made it answer 500. Here nothing reads the body until its
signature verifies (Slack's v0 scheme: HMAC-SHA256 of ``v0:{timestamp}:{body}``, timestamp within
five minutes), and the body is then read exactly as bolt will read it, every payload accessor
included, so a body bolt cannot read is refused as the client's error before bolt dispatches it.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Mapping
from typing import Any, Final

from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.request.payload_utils import (
    to_action,
    to_command,
    to_event,
    to_message,
    to_options,
    to_shortcut,
    to_step,
    to_view,
)

__all__ = [
    "MAX_SKEW_SECONDS",
    "PAYLOAD_ERRORS",
    "MalformedSlackRequest",
    "bolt_request",
    "signature_verifies",
]

#: How far a request's timestamp may be from now, either way (as Slack and bolt allow).
MAX_SKEW_SECONDS: Final = 300

#: What reading a payload raises when its fields have other types or shapes than Slack's.
PAYLOAD_ERRORS: Final = (
    KeyError,
    TypeError,
    AttributeError,
    IndexError,
    ValueError,
    RecursionError,
)

#: The accessors bolt applies to every payload before any listener or error handler runs.
_BOLT_READERS: Final[tuple[Callable[[dict[str, Any]], Any], ...]] = (
    to_options,
    to_shortcut,
    to_action,
    to_view,
    to_command,
    to_event,
    to_message,
    to_step,
)


class MalformedSlackRequest(Exception):
    """A signed body that is not what Slack sends: the message says what is wrong with it."""


def signature_verifies(secret: str, body: bytes, headers: Mapping[str, str], *, now: float) -> bool:
    """Whether ``body`` carries a valid, fresh Slack signature made with ``secret``."""
    timestamp = headers.get("X-Slack-Request-Timestamp", "")
    signature = headers.get("X-Slack-Signature", "")
    if not (timestamp.isascii() and timestamp.isdigit() and len(timestamp) <= 12):
        return False
    if abs(now - int(timestamp)) > MAX_SKEW_SECONDS:
        return False
    base = b"v0:" + timestamp.encode() + b":" + body
    expected = "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected.encode(), signature.encode("utf-8", "surrogateescape"))


def bolt_request(body: bytes, query: str, headers: Mapping[str, str]) -> AsyncBoltRequest:
    """The request as bolt reads it; MalformedSlackRequest when bolt could not read it.

    Slack sends UTF-8: a JSON object (Events API), a form whose ``payload`` field is a JSON
    object (interactivity), or a plain form (slash commands).
    """
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise MalformedSlackRequest("the body is not UTF-8") from None
    try:
        request = AsyncBoltRequest(body=text, query=query, headers=dict(headers))
        if not isinstance(request.body, dict):
            raise MalformedSlackRequest(
                f"expected a JSON object, got {type(request.body).__name__}"
            )
        for read in _BOLT_READERS:
            read(request.body)
    except PAYLOAD_ERRORS as error:
        raise MalformedSlackRequest(f"{type(error).__name__}: {error}") from None
    return request
