"""The scenarios, each driving the running Countersign over HTTP for a bounded time: agents'
requests on its main port, Slack's (the approvers' clicks) on its Slack port
(``server.slack_port``), as a deployment's proxy routes them (:attr:`Stage.slack_url`)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from bot.bench.load import LoadResult, at_rate, back_to_back, steady_heap
from bot.bench.report import Measurement
from bot.bench.stage import APPROVER, CLICK_REQUESTERS, SPREAD_LANES, Stage
from bot.digests.outbox import shown_in
from bot.flow.executor import idempotency_key
from bot.slack.local import StoredMessage

__all__ = [
    "AGENTS",
    "STEADY_CLICKS_PER_SECOND",
    "Clicks",
    "auto_path",
    "burst",
    "channels",
    "clicks",
    "ingest",
    "mixed",
    "overload",
    "paced_decisions",
    "prepare_clicks",
    "steady_clicks",
]

#: concurrent agent clients
AGENTS = 16
#: the click rate at which the acknowledgement's p99 is judged
STEADY_CLICKS_PER_SECOND = 100.0
#: approvers' clicks per second in the mixed scenario, under the agents' overload
MIXED_CLICKS_PER_SECOND = 20.0
#: long-polls (``?wait=``) the agents hold open throughout the mixed scenario
MIXED_LONG_POLLS = 8


async def ingest(stage: Stage, duration: float, *, backend: str) -> Measurement:
    """16 agents submit proposals that need approval, back to back."""
    what = f"{AGENTS} agents submitting proposals that ask a person"
    return await _submitting(stage, "ingest", "ingest", what, duration, backend=backend)


async def auto_path(stage: Stage, duration: float, *, backend: str) -> Measurement:
    """16 agents submit proposals the policy runs at once (executed at the target)."""
    before = len(stage.target.executed)
    what = f"{AGENTS} agents, auto-approved proposals executed at the target"
    row = await _submitting(stage, "auto", "auto path", what, duration, backend=backend)
    row.details["executed_at_target"] = len(stage.target.executed) - before
    row.note = f"{row.details['executed_at_target']} executed"
    return row


async def _submitting(
    stage: Stage, kind: str, name: str, what: str, duration: float, *, backend: str
) -> Measurement:
    """The row ``name``: AGENTS agents submitting ``kind`` proposals back to back for
    ``duration`` seconds, timed by the 201s, with every status answered."""
    steady_heap()
    result = await back_to_back(lambda n: stage.submit(kind), clients=AGENTS, duration=duration)
    row = Measurement.timed(name, "scenario", what, result.of(201), result.elapsed, backend=backend)
    row.details["statuses"] = dict(result.statuses)
    return row


@dataclass(frozen=True, slots=True)
class Clicks:
    """Signed Approve clicks on posted proposals, built before any click is sent."""

    back_to_back: list[tuple[str, bytes]]
    steady: list[tuple[str, bytes]]
    #: the proposal id and message ts each back-to-back click approves, in the same order
    clicked: list[tuple[str, str]]
    #: how many of the click proposals were posted in time, of how many submitted
    posted: tuple[int, int]
    #: clicks sent at the decisions' target rate, and what each approves (as ``clicked``)
    paced: list[tuple[str, bytes]] = field(default_factory=list)
    paced_clicked: list[tuple[str, str]] = field(default_factory=list)
    #: clicks for the mixed scenario, and what each approves (as ``clicked``)
    mixed: list[tuple[str, bytes]] = field(default_factory=list)
    mixed_clicked: list[tuple[str, str]] = field(default_factory=list)


async def prepare_clicks(
    stage: Stage, count: int, steady: int, *, paced: int = 0, mixed: int = 0, timeout: float = 120
) -> Clicks:
    """Submit ``count + steady + paced + mixed`` proposals, wait up to ``timeout`` s until they
    are posted, and build their clicks: every one when all were posted in time, otherwise the
    posted ones, shared in the same proportions (``Clicks.posted`` says how many of how many).
    Only the proposals submitted here are clicked: the channel also holds those of an earlier
    call (``--only clicks --only mixed`` prepares twice), decided by then."""
    total = count + steady + paced + mixed
    if total > CLICK_REQUESTERS:
        raise ValueError(
            f"{total} click proposals: at most {CLICK_REQUESTERS} (each needs its own requester)"
        )
    made: set[str] = set()

    async def submit(n: int) -> int:
        status, proposal_id = await stage.propose_taken("click")
        if proposal_id is not None:
            made.add(proposal_id)
        return status

    await back_to_back(submit, clients=AGENTS, duration=3600, limit=total)
    messages = (await stage.wait_posted("click", made, timeout=timeout))[:total]
    kept = min(mixed, len(messages) * mixed // total)  # the mixed scenario's share, from the end
    for_mixed, messages = messages[len(messages) - kept :], messages[: len(messages) - kept]
    total -= mixed
    if len(messages) < 3:
        raise RuntimeError(
            f"only {len(messages)} of {total} click proposals were posted in {timeout:g} s"
        )
    first = min(len(messages) - 2, max(1, round(len(messages) * count / total)))
    second = min(len(messages) - 1, first + max(1, round(len(messages) * steady / total)))
    if paced == 0:
        second = len(messages)
    bodies = [stage.approve_click(message) for message in messages]
    targets = [(_proposal_of(message), message.ts) for message in messages]
    return Clicks(
        back_to_back=bodies[:first],
        steady=bodies[first:second],
        clicked=targets[:first],
        posted=(len(messages), total),
        paced=bodies[second:],
        paced_clicked=targets[second:],
        mixed=[stage.approve_click(message) for message in for_mixed],
        mixed_clicked=[(_proposal_of(message), message.ts) for message in for_mixed],
    )


def _proposal_of(message: StoredMessage) -> str:
    [proposal_id] = shown_in(message.to_api())  # a click proposal has its own message
    return proposal_id


async def clicks(stage: Stage, prepared: Clicks, duration: float) -> list[Measurement]:
    """16 approvers click Approve back to back. Two rows: the clicks served (acknowledged and
    not told "busy, try again") per second and their time to Slack's acknowledgement; and the
    decisions applied per second (claimed, revalidated, executed at the target, outcome stored,
    message updated), each timed from its click to its message's last update."""
    bodies = prepared.back_to_back
    before, busy_before = len(stage.target.executed), _busy(stage)
    sent: dict[int, float] = {}
    steady_heap()
    start = time.perf_counter()

    async def click(n: int) -> int:
        sent[n] = time.perf_counter()
        return await stage.post_click(*bodies[n])

    result = await back_to_back(click, clients=AGENTS, duration=duration, limit=len(bodies))
    acked = result.of(200)
    executed = await _settle(stage, before, expected=len(acked))
    await _slack_quiet(stage, limit=30)  # the outcomes' message updates delivered
    told_busy = _busy(stage) - busy_before
    served = len(acked) - told_busy
    what = f"{AGENTS} approvers clicking Approve back to back (signed block_actions, Slack's port)"
    row = Measurement.timed("clicks", "scenario", what, acked, result.elapsed, count=max(0, served))
    row.details.update(
        statuses=dict(result.statuses),
        acknowledged=len(acked),
        told_busy=told_busy,
        served=served,
        executions=executed,
    )
    row.note = f"{told_busy} told busy (not served)" + _short(prepared)
    row.details["click_proposals_posted"] = list(prepared.posted)
    applied = _applied(stage, prepared.clicked, sent, start)
    elapsed = max(applied.values(), default=result.elapsed)
    latencies = [applied[n] - sent[n] + start for n in applied]
    decided = Measurement.timed(
        "decisions applied",
        "scenario",
        "Approve clicks of that run applied: claimed, executed at the target, outcome in the "
        "message",
        sorted(latencies),
        elapsed,
    )
    decided.details.update(clicked=len(sent), applied=len(applied), told_busy=told_busy)
    decided.note = f"{len(applied)} of {len(sent)} clicks"
    return [row, decided]


def _applied(
    stage: Stage, clicked: list[tuple[str, str]], sent: dict[int, float], start: float
) -> dict[int, float]:
    """For each click sent whose proposal was executed, when (seconds after ``start``) its
    message was last updated: the outcome shown, so the decision applied."""
    to_perf = time.perf_counter() - time.time()
    updated: dict[str, float] = {}  # message ts -> its last update, Unix seconds
    for call in stage.slack.calls("chat.update"):
        if call.status == 200 and call.response.get("ok", True):
            updated[str(call.args.get("ts"))] = call.at.timestamp()
    applied = {}
    for n in sent:
        proposal_id, ts = clicked[n]
        done = stage.target.executed.get(str(idempotency_key(proposal_id)))
        if done is not None and ts in updated and updated[ts] >= done:
            applied[n] = updated[ts] + to_perf - start
    return applied


async def steady_clicks(stage: Stage, prepared: Clicks, duration: float) -> Measurement:
    """Approve clicks at a steady 100 per second: the acknowledgement's latency."""
    bodies = prepared.steady
    before, busy_before = len(stage.target.executed), _busy(stage)
    rate = STEADY_CLICKS_PER_SECOND
    steady_heap()
    result = await at_rate(
        lambda n: stage.post_click(*bodies[n]), rate=rate, duration=len(bodies) / rate
    )
    executed = await _settle(stage, before, expected=len(result.of(200)))
    what = f"Approve clicks at {rate:g}/s on Slack's port: time to Slack's acknowledgement"
    row = Measurement.timed("clicks at 100/s", "scenario", what, result.of(200), result.elapsed)
    row.details.update(
        statuses=dict(result.statuses), executions=executed, told_busy=_busy(stage) - busy_before
    )
    row.note = f"{executed} executed" + _short(prepared)
    return row


async def paced_decisions(stage: Stage, prepared: Clicks, rate: float) -> Measurement:
    """Approve clicks at ``rate`` per second (the decisions' target rate): how many were told
    busy, how many decisions were applied and how fast, each timed from when its click was due
    to its message's last update after the execution."""
    bodies = prepared.paced
    before, busy_before = len(stage.target.executed), _busy(stage)
    due: dict[int, float] = {}
    steady_heap()
    start = time.perf_counter()

    async def click(n: int) -> int:
        due[n] = start + n / rate
        return await stage.post_click(*bodies[n])

    result = await at_rate(click, rate=rate, duration=len(bodies) / rate)
    await _settle(stage, before, expected=len(result.of(200)))
    await _slack_quiet(stage, limit=30)
    told_busy = _busy(stage) - busy_before
    applied = _applied(stage, prepared.paced_clicked, due, start)
    elapsed = max(applied.values(), default=result.elapsed)
    latencies = sorted(applied[n] - due[n] + start for n in applied)
    what = f"Approve clicks at {rate:,.0f}/s (0.3x floor a): decisions applied, from click due"
    row = Measurement.timed("decisions at 0.3x a", "scenario", what, latencies, elapsed)
    row.details.update(
        offered_per_second=round(rate, 1),
        statuses=dict(result.statuses),
        clicked=len(due),
        applied=len(applied),
        told_busy=told_busy,
    )
    row.note = f"{len(applied)} of {len(due)} applied, {told_busy} told busy" + _short(prepared)
    return row


async def mixed(
    stage: Stage, prepared: Clicks, *, agent_rate: float, duration: float, backend: str
) -> list[Measurement]:
    """People's clicks under the agents' overload. Agents submit at ``agent_rate`` (twice the
    sustainable ingest rate; one in four run at once by the policy, executed at the target)
    while holding :data:`MIXED_LONG_POLLS` long-polls open, and approvers click Approve at
    :data:`MIXED_CLICKS_PER_SECOND`. Two rows: the clicks (acknowledgement latency from when
    each was due, how many were told busy, how many were applied: executed and shown in their
    message) and the agents (every answer's latency, accepted, turned away with 503). The clicks
    go to Slack's port, the agents to the main port: one process, one loop, one store, but not
    one listen queue."""
    bodies = prepared.mixed
    rate = MIXED_CLICKS_PER_SECOND
    count = min(len(bodies), max(1, round(rate * duration)))
    before, busy_before = len(stage.target.executed), _busy(stage)
    due: dict[int, float] = {}
    polls = {"answered": 0, "refused": 0}
    done = asyncio.Event()
    steady_heap()
    start = time.perf_counter()

    async def click(n: int) -> int:
        due[n] = start + n / rate
        return await stage.post_click(*bodies[n])

    async def submit(n: int) -> int:
        return await stage.submit("auto" if n % 4 == 0 else "ingest")

    async def long_poll() -> None:
        while not done.is_set():
            status = await stage.long_poll("ingest", wait=2.0)
            polls["answered" if status == 200 else "refused"] += 1

    pollers = [asyncio.create_task(long_poll()) for _ in range(MIXED_LONG_POLLS)]
    try:
        clicked, agents = await asyncio.gather(
            at_rate(click, rate=rate, duration=count / rate),
            at_rate(submit, rate=agent_rate, duration=duration),
        )
    finally:
        done.set()
        await asyncio.gather(*pollers, return_exceptions=True)
    await _settle(stage, before, expected=len(clicked.of(200)))
    await _slack_quiet(stage, limit=30)
    told_busy = _busy(stage) - busy_before
    applied = _applied(stage, prepared.mixed_clicked, due, start)
    people = Measurement.timed(
        "mixed: clicks",
        "scenario",
        f"Approve clicks at {rate:g}/s on Slack's port while agents overload the main port: "
        "time to Slack's acknowledgement",
        clicked.of(200),
        clicked.elapsed,
        backend=backend,
    )
    outcome = sorted(applied[n] - due[n] + start for n in applied)
    people.details.update(
        statuses=dict(clicked.statuses),
        clicked=len(due),
        told_busy=told_busy,
        applied=len(applied),
        click_to_outcome_p50_ms=Measurement.timed("", "", "", outcome, 1).p50_ms,
        click_to_outcome_p99_ms=Measurement.timed("", "", "", outcome, 1).p99_ms,
    )
    people.note = f"{len(applied)} of {len(due)} applied, {told_busy} told busy" + _short(prepared)
    kept_up = told_busy == 0 and len(applied) == len(due) and clicked.statuses.get(200) == len(due)
    people.judge(
        "ack p99 < 100 ms, none busy, all applied",
        kept_up and people.p99_ms is not None and people.p99_ms < 100,
    )
    accepted = agents.of(201)
    load = Measurement.timed(
        "mixed: agents",
        "scenario",
        f"agents submitting at {agent_rate:,.0f}/s (a quarter run at once) with "
        f"{MIXED_LONG_POLLS} long-polls held, on the main port, beside those clicks",
        agents.every(),
        agents.elapsed,
        count=len(accepted),
        backend=backend,
    )
    load.details.update(
        offered_per_second=round(agent_rate, 1),
        statuses=dict(agents.statuses),
        accepted_p99_ms=Measurement.timed("", "", "", accepted, 1).p99_ms,
        long_polls=dict(polls),
    )
    load.note = f"{agents.statuses.get(503, 0)} got 503, {polls['answered']} long-polls answered"
    return [people, load]


def _short(prepared: Clicks) -> str:
    posted, wanted = prepared.posted
    return "" if posted == wanted else f"; {posted} of {wanted} proposals posted in time"


async def overload(
    stage: Stage, rate: float, duration: float, *, backend: str, sustainable: float
) -> Measurement:
    """Agents submitting at ``rate`` (twice the sustainable ingest rate): latency must stay
    bounded, with the excess turned away at once (503 and Retry-After)."""
    retry_after = 0

    async def submit(n: int) -> int:
        nonlocal retry_after
        status, headers = await stage.submit_answer("ingest")
        if status == 503 and "Retry-After" in headers:
            retry_after += 1
        return status

    steady_heap()
    result = await at_rate(submit, rate=rate, duration=duration)
    what = f"agents submitting at {rate:,.0f}/s, twice the sustainable ingest rate"
    row = Measurement.timed(
        "overload",
        "scenario",
        what,
        result.every(),
        result.elapsed,
        count=len(result.of(201)),
        backend=backend,
    )
    accepted = result.of(201)
    row.details.update(
        offered_per_second=round(rate, 1),
        sustainable_per_second=round(sustainable, 1),
        statuses=dict(result.statuses),
        busy_503_with_retry_after=retry_after,
        accepted_p50_ms=Measurement.timed("", "", "", accepted, 1).p50_ms,
        accepted_p99_ms=Measurement.timed("", "", "", accepted, 1).p99_ms,
    )
    row.note = f"{retry_after} got 503 + Retry-After"
    return row


async def burst(stage: Stage, count: int, timeout: float, *, backend: str) -> Measurement:
    """``count`` proposals for one channel while Slack allows one message per second there:
    how long until every one is in front of a person (in its own message or a digest's)."""
    drained = await _slack_quiet(stage, limit=timeout)
    latencies, submitted, elapsed = await _until_shown(
        stage,
        count,
        timeout,
        lane_of=lambda n: "burst",
        shown=lambda: (  # in a proposal's own message, or in a digest
            proposal_id
            for message in stage.posted("burst")
            for proposal_id in shown_in(message.to_api())
        ),
    )
    what = f"{count} proposals for one channel, Slack allowing 1 message/s per channel"
    row = Measurement.timed(
        "burst",
        "scenario",
        what,
        latencies,
        latencies[-1] if len(latencies) == count else elapsed,
        backend=backend,
    )
    row.details.update(
        proposals=count,
        submitted=len(submitted.of(201)),
        visible=len(latencies),
        messages=len(stage.posted("burst")),
        all_visible_after_seconds=round(latencies[-1], 2) if len(latencies) == count else None,
        budget_seconds=timeout,
        waited_for_earlier_posts_seconds=round(drained, 1),
        slack_messages_per_second=1,
    )
    row.note = f"{len(latencies)}/{count} visible"
    if len(latencies) == count:
        row.note += f" after {latencies[-1]:.1f} s"
    else:
        row.note += f" in {timeout:g} s"
    return row


async def channels(stage: Stage, per_channel: int, timeout: float, *, backend: str) -> Measurement:
    """``per_channel`` proposals for each of 20 channels at once, each with its own requester (so
    its own message), while Slack allows one message per second per channel: the posts per
    second across the channels, and when each proposal's message appeared."""
    drained = await _slack_quiet(stage, limit=timeout)
    lanes = SPREAD_LANES
    count = per_channel * len(lanes)
    posts_before = len(stage.slack.calls("chat.postMessage"))
    latencies, submitted, elapsed = await _until_shown(
        stage,
        count,
        timeout,
        lane_of=lambda n: lanes[n % len(lanes)],
        shown=lambda: (
            message.ts + message.channel for lane in lanes for message in stage.posted(lane)
        ),
    )
    posts = stage.slack.calls("chat.postMessage")[posts_before:]
    limited = sum(call.status == 429 for call in posts)
    everyone = len(latencies) == count
    what = (
        f"{per_channel} proposals for each of {len(lanes)} channels, Slack allowing 1 message/s "
        "per channel: messages posted per second across them"
    )
    row = Measurement.timed(
        "channels", "scenario", what, latencies, latencies[-1] if everyone else elapsed,
        backend=backend,
    )  # fmt: skip
    row.floor = f"slack {len(lanes)}x1/s"
    row.ratio = None if row.throughput is None else round(row.throughput / len(lanes), 3)
    row.details.update(
        channels=len(lanes),
        proposals=count,
        submitted=len(submitted.of(201)),
        posted=len(latencies),
        answered_429=limited,
        all_posted_after_seconds=round(latencies[-1], 2) if everyone else None,
        budget_seconds=timeout,
        waited_for_earlier_posts_seconds=round(drained, 1),
        slack_messages_per_second_per_channel=1,
    )
    row.note = f"{len(latencies)}/{count} posted"
    row.note += f" after {latencies[-1]:.1f} s" if everyone else f" in {timeout:g} s"
    row.note += f", {limited} told 429"
    return row


async def _until_shown(
    stage: Stage,
    count: int,
    timeout: float,
    *,
    lane_of: Callable[[int], str],
    shown: Callable[[], Iterable[str]],
) -> tuple[list[float], LoadResult, float]:
    """Submit ``count`` proposals (the n-th in ``lane_of(n)``) while Slack allows one message
    per second per channel, watching what Slack shows (``shown``: a key per proposal seen) for
    at most ``timeout`` s: the seconds after the start at which each key first appeared
    (sorted), what the submissions were answered, and the seconds it all took."""
    stage.slack.messages_per_second = 1
    seen: dict[str, float] = {}
    start = time.perf_counter()
    try:
        load = back_to_back(
            lambda n: stage.submit_taken(lane_of(n)), clients=AGENTS, duration=timeout, limit=count
        )
        submitting = asyncio.create_task(load)
        while len(seen) < count and time.perf_counter() - start < timeout:
            for key in shown():
                seen.setdefault(key, time.perf_counter() - start)
            await asyncio.sleep(0.05)
        submitted = await submitting
    finally:
        stage.slack.messages_per_second = None
    return sorted(seen.values()), submitted, time.perf_counter() - start


async def _slack_quiet(stage: Stage, *, limit: float, quiet: float = 2.0) -> float:
    """Wait until Countersign has made no Slack call for ``quiet`` s (earlier scenarios' posts
    delivered), at most ``limit`` s; the seconds waited."""
    start = time.perf_counter()
    calls, changed = len(stage.slack.calls()), start
    while time.perf_counter() - changed < quiet and time.perf_counter() - start < limit:
        await asyncio.sleep(0.1)
        if len(stage.slack.calls()) != calls:
            calls, changed = len(stage.slack.calls()), time.perf_counter()
    return time.perf_counter() - start


def _busy(stage: Stage) -> int:
    return sum("busy" in message.text.lower() for message in stage.slack.ephemeral(APPROVER))


async def _settle(stage: Stage, before: int, *, expected: int, quiet: float = 2.0) -> int:
    """Wait until ``expected`` executions arrived at the target, or none came for ``quiet`` s."""
    last, last_change = len(stage.target.executed), time.perf_counter()
    while len(stage.target.executed) - before < expected:
        await asyncio.sleep(0.05)
        now = len(stage.target.executed)
        if now != last:
            last, last_change = now, time.perf_counter()
        elif time.perf_counter() - last_change > quiet:
            break
    return len(stage.target.executed) - before
