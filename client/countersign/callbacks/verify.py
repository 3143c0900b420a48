"""Checking that a callback came from Countersign, with the verification the server's own
signing module defines (countersign.wire.signing), never a second copy of it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from pydantic import ValidationError

from countersign.errors import InvalidCallback
from countersign.wire.api import EscalationOut, ProposalOut
from countersign.wire.signing import CALLBACK, TIMESTAMP_HEADER, verify

__all__ = ["ESCALATION_HEADER", "verify_callback"]

#: Set on an escalation's callbacks (with its id); a proposal's carry X-Countersign-Proposal.
ESCALATION_HEADER = "X-Countersign-Escalation"


def verify_callback(
    headers: Mapping[str, str],
    body: bytes,
    secret: str | Sequence[str],
    *,
    now: datetime | None = None,
    tolerance: int = 300,
) -> ProposalOut | EscalationOut:
    """The document a signed callback carries, once its signature and timestamp verify.

    ``headers`` as received (any case), ``body`` the raw bytes, ``secret`` the agent's callback
    secret (its token unless ``callback_secret_env`` is set), or several while it is being
    replaced (the new one and the old one; either verifies). A forged, altered or stale callback
    (timestamp more than ``tolerance`` seconds away) raises InvalidCallback.
    """
    folded = {name.lower(): value for name, value in headers.items()}
    timestamp = folded.get(TIMESTAMP_HEADER.lower())
    signature = folded.get(CALLBACK.header.lower())
    if timestamp is None or signature is None:
        raise InvalidCallback(
            f"not a signed callback: expected the {TIMESTAMP_HEADER} and {CALLBACK.header} headers"
        )
    checked_at = now or datetime.now(UTC)
    if not verify(
        secret, timestamp, body, signature, now=checked_at, purpose=CALLBACK, tolerance=tolerance
    ):
        raise InvalidCallback(
            f"the callback's signature does not verify, or its timestamp {timestamp!r} is more "
            f"than {tolerance} s from now: it did not come from Countersign, or came too late"
        )
    try:
        if ESCALATION_HEADER.lower() in folded:
            return EscalationOut.model_validate_json(body)
        return ProposalOut.model_validate_json(body)
    except ValidationError as error:
        raise InvalidCallback(f"the signed body is not a Countersign document: {error}") from None
