"""A submission turned away as busy is sent again, the way an agent's client sends it.

Countersign answers an agent's submission ``503`` with ``Retry-After`` when it is busy: its
event loop is behind while agents' submissions pile up on it (bot/api/loop_lag.py), or its
submissions in flight are at their bound (bot/api/admission.py). Nothing is read or stored for
such a request and the agent's rate is not charged (bot/api/agent_requests.py), so the same
request may be sent again. A real agent's client does exactly that (client/countersign/
transport.py): it waits the delay asked for and sends the same request, with the same
Idempotency-Key.

Tests that send bursts of submissions play such an agent through :func:`resent_while_busy`: on
a loaded machine (a loop 50 ms late is easily had there) a busy answer then changes when a
submission is taken, never what it is answered. Only the busy answer is sent again: any other
answer, a ``503`` for a store that is away included, comes back as it was given. Tests of the
busy answer itself send once.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Protocol, TypeVar

from bot.api.agent_requests import busy

__all__ = ["TRIES", "is_busy", "resent_while_busy"]

#: How many times one request is sent before its busy answer is given back as it is.
TRIES = 20
#: The longest wait honoured between two sends (the client's RETRY_AFTER_MAX).
LONGEST_WAIT = 30.0

_BUSY = busy()


class Answered(Protocol):
    """What an answer must show to be told busy: its status, headers and body."""

    @property
    def status(self) -> int: ...

    @property
    def headers(self) -> Mapping[str, str]: ...

    @property
    def body(self) -> bytes: ...


AnswerT = TypeVar("AnswerT", bound=Answered)


def is_busy(answer: Answered) -> bool:
    """Whether ``answer`` is Countersign's busy answer: 503, Retry-After, titled as
    bot/api/agent_requests.py's ``busy()`` is."""
    if answer.status != _BUSY.status or "Retry-After" not in answer.headers:
        return False
    try:
        problem = json.loads(answer.body)
    except ValueError:
        return False
    return isinstance(problem, dict) and problem.get("title") == _BUSY.title


async def resent_while_busy(
    send: Callable[[], Awaitable[AnswerT]], *, tries: int = TRIES
) -> AnswerT:
    """``send()``'s answer, sent again (the same request, each ``send()``) after the
    ``Retry-After`` it names while it is busy, at most ``tries`` times in all; the last busy
    answer is given back when every try was."""
    if tries < 1:
        raise ValueError(f"tries: got {tries}; expected at least 1")
    for _ in range(tries - 1):
        answer = await send()
        if not is_busy(answer):
            return answer
        await asyncio.sleep(min(float(answer.headers["Retry-After"]), LONGEST_WAIT))
    return await send()
