"""Waiting for people's decision and withdrawing the question, written once for both clients.

The light client (synchronous, the standard library alone) and the full one (asyncio, aiohttp)
wait the same way: long-poll until the decision or the caller's deadline, follow an approver's
edit, withdraw the proposal when the deadline passes (unless a decision won the race), and, when
Countersign fails once the proposal exists, withdraw it within a grace if it still can and say
whether it did. The generators here hold that logic and do no I/O: each yields the request it
needs (:class:`Read`, :class:`Cancel`) and is sent the proposal document the answer carried, or
thrown the CountersignError the request ended in. :func:`drive` runs one on a synchronous sender;
the full client drives the same generators with ``await``. Everything here is the standard
library, as the Claude Code hook needs.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any, Final, NamedTuple, TypeVar

from countersign.errors import CountersignError, ProblemError
from countersign.reading import UNDECIDED, Ending, Shown, ending_of, shown_of

__all__ = [
    "GRACE_SECONDS",
    "Asked",
    "Cancel",
    "Flow",
    "Interrupted",
    "Read",
    "StillPending",
    "answering",
    "drive",
    "settling",
]

#: Past the caller's wait, time left to withdraw the proposal and read what it came to.
GRACE_SECONDS: Final = 15.0

Document = dict[str, Any]
T = TypeVar("T")


class Read(NamedTuple):
    """Read the proposal, held by the server up to ``hold`` seconds while it is undecided;
    passing failures retried until ``deadline`` (the clock's time), or a few times without."""

    proposal_id: str
    hold: float = 0.0
    deadline: float | None = None


class Cancel(NamedTuple):
    """Withdraw the proposal; no retry waited for past ``latest`` (the clock's time)."""

    proposal_id: str
    latest: float


Step = Read | Cancel
#: A wait's logic: yields the requests it needs, is sent their documents, returns a ``T``.
Flow = Generator[Step, Document, T]


class StillPending(NamedTuple):
    """The wait ran out but the proposal could not be withdrawn (a Countersign older than the
    cancel endpoint answered ``status``): it is still pending there and may yet be approved."""

    proposal_id: str
    status: int


class Interrupted(NamedTuple):
    """Countersign failed after the proposal was made and before anyone had decided it: while
    the caller waited (``while_withdrawing`` False) or while it withdrew the proposal once its
    wait ran out (True). ``withdrawn``: the proposal was withdrawn after all, so nothing will
    come of it; otherwise it may still be pending there, and be decided later. ``shown``: whether
    people had been shown it, as its document last read said."""

    proposal_id: str
    failure: CountersignError
    withdrawn: bool
    while_withdrawing: bool = False
    shown: Shown | None = None


class Asked(NamedTuple):
    """What a question came to, and the proposal's document as last read."""

    came: Ending | StillPending | Interrupted
    document: Document


def settling(
    document: Document,
    deadline: float,
    *,
    clock: Callable[[], float],
    long_poll_seconds: float,
    follow_edits: bool = True,
) -> Flow[Document]:
    """The proposal once decided, or as it is at ``deadline``; an edit is followed (within the
    grace past the deadline) when ``follow_edits``. A failure is raised as it came."""
    while True:
        successor = document.get("superseded_by")
        if follow_edits and successor:
            document = yield Read(successor, deadline=deadline + GRACE_SECONDS)
            continue
        remaining = deadline - clock()
        if document.get("status") not in UNDECIDED or remaining <= 0:
            return document
        hold = min(remaining, long_poll_seconds)
        document = yield Read(document["id"], hold=hold, deadline=deadline)


def answering(
    document: Document, deadline: float, *, clock: Callable[[], float], long_poll_seconds: float
) -> Flow[Asked]:
    """Wait until ``deadline`` for the decision on a decision operation's proposal; when nobody
    decided by then, withdraw it (``Ending.kind == "deadline"``). Countersign failing meanwhile
    is :class:`Interrupted` (the proposal withdrawn within the grace if it still can be)."""
    try:
        document = yield from settling(
            document, deadline, clock=clock, long_poll_seconds=long_poll_seconds
        )
    except CountersignError as failure:
        return (yield from _interrupted(document, failure, clock, long_poll_seconds))
    ending = ending_of(document)
    if ending is not None:
        return Asked(ending, document)
    try:
        came, document = yield from _withdrawing(document, clock, long_poll_seconds)
    except CountersignError as failure:
        return Asked(
            Interrupted(document["id"], failure, False, True, shown_of(document)), document
        )
    return Asked(came, document)


def _interrupted(
    document: Document, failure: CountersignError, clock: Callable[[], float], long_poll: float
) -> Flow[Asked]:
    """Countersign failed with ``document``'s proposal undecided: withdraw it if that can still
    be done within the grace (a decision that won the race stands)."""
    try:
        came, latest = yield from _withdrawing(document, clock, long_poll)
    except CountersignError:
        return Asked(Interrupted(document["id"], failure, False), document)
    if isinstance(came, Ending) and came.kind != "deadline":
        return Asked(came, latest)  # decided meanwhile: that decision is the answer
    return Asked(Interrupted(document["id"], failure, isinstance(came, Ending)), latest)


def _withdrawing(
    document: Document, clock: Callable[[], float], long_poll: float
) -> Flow[tuple[Ending | StillPending, Document]]:
    """The caller's wait ran out: withdraw the proposal, unless a decision won the race."""
    try:
        withdrawn = yield Cancel(document["id"], latest=clock() + GRACE_SECONDS)
    except ProblemError as refused:
        if refused.status in (404, 405):
            return StillPending(document["id"], refused.status), document
        if refused.status != 409:
            raise
        # decided (or edited) meanwhile: a decision stands; an edit is withdrawn in turn
        read = yield Read(document["id"])
        withdrawn = yield from settling(read, clock(), clock=clock, long_poll_seconds=long_poll)
        if withdrawn["id"] != document["id"] and withdrawn.get("status") in UNDECIDED:
            return (yield from _withdrawing(withdrawn, clock, long_poll))
    if withdrawn.get("status") == "cancelled":
        return Ending("deadline", withdrawn["id"], shown=shown_of(withdrawn)), withdrawn
    ending = ending_of(withdrawn)
    if ending is None:
        raise CountersignError(
            f"proposal {document['id']} is still {withdrawn.get('status')!r} after it was withdrawn"
        )
    return ending, withdrawn


def drive(flow: Flow[T], send: Callable[[Step], Document]) -> T:
    """Run ``flow`` to its end, each request it yields answered by ``send`` (a failure thrown
    into it); the full client does the same with ``await``."""
    try:
        step = next(flow)
        while True:
            try:
                document = send(step)
            except CountersignError as failure:
                step = flow.throw(failure)
            else:
                step = flow.send(document)
    except StopIteration as stop:
        result: T = stop.value
        return result
