"""A realistic day of calls from a support and operations agent fleet, seeded.

``python examples/callmix/callmix.py --seed 7 --output CALLS.jsonl`` writes one working day of
about 10,000 calls in the format ``countersign policy simulate`` reads (one JSON object per
line: agent, operation, requested_by, request, at, and for the kinds a careful policy asks about,
``verdict``: what the approvers would decide, and ``decided_at``: when). The same seed always
gives the same day; each seed gives another day, so a policy can be judged on days it was not
tuned on. README.md in this folder says what is in a day and why.

Pure Python (the standard library only); :func:`day` is the generator, :func:`write` the file.
It lives in the package so that ``countersign bench --only callmix`` can replay a day; the
documented entry stays ``examples/callmix/callmix.py``, which runs :func:`main`.
"""

from __future__ import annotations

import argparse
import json
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

__all__ = ["DEFAULT_CALLS", "MIX", "Fleet", "day", "write"]

#: Calls in a day, on average (each day draws its own count around it).
DEFAULT_CALLS = 10_000

#: The share of each kind of call (the rest of 1.0 are calls the API refuses).
MIX: dict[str, float] = {
    "lookup_customer": 0.40,
    "lookup_order": 0.16,
    "ticket": 0.12,
    "tag": 0.10,
    "refund": 0.09,
    "email": 0.08,
    "account": 0.035,
    "export": 0.008,
}
#: Of the rest: a requester the agent may not act for, a request its contract refuses, an
#: operation nobody configured.
REFUSED = {"stranger": 0.5, "malformed": 0.35, "unknown_operation": 0.15}

ROUTINE_TAGS = ("vip", "churn-risk", "follow-up", "billing-issue", "winback")
RARE_TAGS = ("do-not-contact", "fraud-suspect", "legal-hold")
TEMPLATES = (
    "tmpl_refund_issued",
    "tmpl_order_delayed",
    "tmpl_password_help",
    "tmpl_plan_changed",
    "tmpl_ticket_solved",
    "tmpl_apology",
    "tmpl_shipping_update",
    "tmpl_survey",
)
REASONS = ("duplicate", "damaged", "late", "goodwill", "cancelled")


@dataclass(frozen=True)
class Fleet:
    """Who is in the mix: the agents and the people each acts for (examples/callmix/
    countersign.toml configures the same)."""

    support: tuple[str, ...] = tuple(f"U0SUP{n:02d}" for n in range(1, 17))
    billing: tuple[str, ...] = tuple(f"U0BIL{n:02d}" for n in range(1, 7))
    ops: tuple[str, ...] = tuple(f"U0OPS{n}" for n in range(1, 7))
    analysts: tuple[str, ...] = tuple(f"U0ANA{n}" for n in range(1, 5))

    def acts_for(self, agent: str) -> tuple[str, ...]:
        return {
            "support-bot": self.support,
            "billing-bot": self.billing + self.support,
            "ops-bot": self.ops,
            "reports-bot": self.analysts,
        }[agent]


#: Which agents make each kind of call, and how often.
AGENTS: dict[str, tuple[tuple[str, float], ...]] = {
    "lookup_customer": (("support-bot", 0.6), ("ops-bot", 0.25), ("billing-bot", 0.15)),
    "lookup_order": (("support-bot", 0.7), ("billing-bot", 0.3)),
    "ticket": (("support-bot", 0.5), ("ops-bot", 0.5)),
    "tag": (("support-bot", 0.8), ("ops-bot", 0.2)),
    "refund": (("billing-bot", 0.7), ("support-bot", 0.3)),
    "email": (("support-bot", 1.0),),
    "account": (("ops-bot", 0.6), ("billing-bot", 0.4)),
    "export": (("reports-bot", 1.0),),
}


def day(seed: int, *, calls: int = DEFAULT_CALLS, on: date | None = None) -> list[dict[str, Any]]:
    """One working day of calls, in arrival order. ``seed`` decides everything; ``on`` is the
    day (default: a weekday derived from the seed); ``calls`` the average count."""
    rng = random.Random(seed)
    if on is None:
        on = date(2031, 3, 3) + timedelta(days=7 * (seed % 50) + seed % 5)  # a weekday
    count = max(1, round(rng.gauss(calls, calls * 0.03)))
    fleet = Fleet()
    times = _arrivals(rng, on, count)
    customers = [f"cus_{rng.getrandbits(40):010x}" for _ in range(max(50, count // 4))]
    out = []
    bursts = _bursts(rng, on, count)
    answers = random.Random(f"{seed}:answers")  # its own stream: the calls stay as they were
    for number, (at, kind) in enumerate(_kinds(rng, times, bursts)):
        call = _call(rng, fleet, kind, at, customers)
        # each call is its own submission: without a key, the server would take two lookups
        # of a customer by one agent for the same submission sent again
        call["idempotency_key"] = f"mix-{seed}-{number}"
        if call.get("verdict") in ("approved", "rejected"):
            call["decided_at"] = _stamp(at + _response_time(answers))
        out.append(call)
    return out


def _response_time(rng: random.Random) -> timedelta:
    """How long a person takes to decide once asked: a median of about 14 minutes, minutes to
    a couple of hours (log-normal), as people who have other work do."""
    return timedelta(seconds=round(min(7200.0, math.exp(rng.gauss(math.log(840), 0.8)))))


def _stamp(at: datetime) -> str:
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _arrivals(rng: random.Random, on: date, count: int) -> list[datetime]:
    """Arrival times over a working day (08:00 to 18:00 UTC): a morning ramp, a lunch dip and
    an afternoon peak, drawn by rejection from that profile."""
    start = datetime(on.year, on.month, on.day, 8, tzinfo=UTC)
    profile = (0.5, 0.9, 1.0, 1.0, 0.6, 0.8, 1.0, 0.9, 0.7, 0.4)  # per hour from 08:00
    times: list[datetime] = []
    while len(times) < count:
        hours = rng.uniform(0, 10)
        if rng.random() < profile[int(hours)]:
            times.append(start + timedelta(seconds=round(hours * 3600, 3)))
    return times


def _bursts(rng: random.Random, on: date, count: int) -> list[tuple[datetime, str, int]]:
    """A few bursts a day: an agent working through a queue (after an outage: refunds and
    apology emails; a cleanup: ticket updates and tags), 40 to 250 calls within minutes."""
    start = datetime(on.year, on.month, on.day, 8, tzinfo=UTC)
    bursts = []
    for _ in range(rng.randint(3, 7)):
        at = start + timedelta(minutes=rng.uniform(30, 570))
        kind = rng.choice(("refund", "email", "ticket", "tag", "lookup_customer"))
        size = min(count // 20, rng.randint(40, 250))
        bursts.append((at, kind, size))
    return bursts


def _kinds(
    rng: random.Random, times: list[datetime], bursts: list[tuple[datetime, str, int]]
) -> list[tuple[datetime, str]]:
    """Each arrival's kind: burst calls take their burst's kind and time (spread over a few
    minutes); the others are drawn from MIX."""
    kinds, weights = zip(*MIX.items(), strict=True)
    rest = 1.0 - sum(weights)
    chosen: list[tuple[datetime, str]] = []
    burst_calls = [
        (at + timedelta(seconds=rng.expovariate(1 / 90)), kind)
        for at, kind, size in bursts
        for _ in range(size)
    ]
    for at in rng.sample(times, max(0, len(times) - len(burst_calls))):
        if rng.random() < rest:
            chosen.append((at, rng.choices(list(REFUSED), list(REFUSED.values()))[0]))
        else:
            chosen.append((at, rng.choices(kinds, weights)[0]))
    chosen += burst_calls
    chosen.sort(key=lambda item: item[0])
    return chosen


def _pick(rng: random.Random, options: Sequence[str]) -> str:
    """Some people ask far more than others (Zipf-like)."""
    weights = [1 / (rank + 1) for rank in range(len(options))]
    return rng.choices(list(options), weights)[0]


def _agent(rng: random.Random, kind: str) -> str:
    names, weights = zip(*AGENTS[kind], strict=True)
    name: str = rng.choices(names, weights)[0]
    return name


def _refund_cents(rng: random.Random) -> int:
    """Mostly small (median about 24.00 USD), with a long tail: 1 in 100 from a Pareto tail
    reaching past 5,000.00 USD."""
    if rng.random() < 0.01:
        return round(50_000 * rng.paretovariate(1.2))
    return max(100, round(math.exp(rng.gauss(math.log(2400), 1.0))))


def _verdict(rng: random.Random, approve: float, reject: float) -> str:
    draw = rng.random()
    if draw < approve:
        return "approved"
    return "rejected" if draw < approve + reject else "expired"


def _call(
    rng: random.Random, fleet: Fleet, kind: str, at: datetime, customers: list[str]
) -> dict[str, Any]:
    customer = rng.choice(customers)
    stamp = _stamp(at)
    if kind in REFUSED:
        return _refused(rng, fleet, kind, stamp, customer)
    agent = _agent(rng, kind)
    call: dict[str, Any] = {
        "agent": agent,
        "requested_by": _pick(rng, fleet.acts_for(agent)),
        "at": stamp,
    }
    if kind == "lookup_customer":
        call |= {"operation": "crm.lookup_customer", "request": {"customer": customer}}
    elif kind == "lookup_order":
        order = f"ord_{rng.randint(100000, 999999)}"
        call |= {"operation": "orders.lookup_order", "request": {"order": order}}
    elif kind == "ticket":
        status = rng.choices(
            ("open", "pending", "solved", "closed", "spam"), (0.15, 0.3, 0.35, 0.18, 0.02)
        )[0]
        ticket = f"T{rng.randint(10000, 99999)}"
        call |= {"operation": "tickets.update", "request": {"ticket": ticket, "status": status}}
        if status == "spam":
            call["verdict"] = _verdict(rng, 0.97, 0.02)
    elif kind == "tag":
        rare = rng.random() < 0.03
        tag = rng.choice(RARE_TAGS if rare else ROUTINE_TAGS)
        call |= {"operation": "crm.tag_customer", "request": {"customer": customer, "tag": tag}}
        if rare:
            call["verdict"] = _verdict(rng, 0.9, 0.08)
    elif kind == "refund":
        cents = _refund_cents(rng)
        request = {
            "payment_id": f"pay_{rng.randint(1000000, 9999999)}",
            "customer": customer,
            "amount_cents": cents,
            "currency": "USD",
            "reason": rng.choice(REASONS),
        }
        call |= {"operation": "payments.refund", "request": request}
        if cents <= 5_000:
            call["verdict"] = _verdict(rng, 0.995, 0.004)
        else:
            call["verdict"] = _verdict(rng, 0.95, 0.035)
    elif kind == "email":
        custom = rng.random() < 0.02
        template = "tmpl_free_text" if custom else rng.choice(TEMPLATES)
        request = {"customer": customer, "template": template}
        call |= {"operation": "email.send_customer", "request": request}
        call["verdict"] = _verdict(rng, 0.985, 0.01)
    elif kind == "account":
        change = rng.choices(("email", "plan", "address", "close"), (0.4, 0.35, 0.2, 0.05))[0]
        value = {
            "email": f"{customer}@example.net",
            "plan": rng.choice(("basic", "plus", "pro")),
            "address": f"{rng.randint(1, 400)} Market Street",
            "close": "customer request",
        }[change]
        request = {"customer": customer, "change": change, "value": value}
        call |= {"operation": "accounts.update", "request": request}
        call["verdict"] = _verdict(rng, 0.92 if change == "close" else 0.97, 0.04)
    else:  # export
        rows = max(10, round(math.exp(rng.gauss(math.log(2000), 1.6))))
        request = {"segment": rng.choice(("churn-risk", "vip", "trial", "eu")), "rows": rows}
        call |= {"operation": "exports.customer_data", "request": request}
        call["verdict"] = _verdict(rng, 0.94, 0.05)
    return call


def _refused(
    rng: random.Random, fleet: Fleet, kind: str, stamp: str, customer: str
) -> dict[str, Any]:
    """A call the API refuses before the policy: it names someone the agent may not act for,
    its request does not fit the contract, or its operation is not configured."""
    agent = rng.choice(("support-bot", "billing-bot", "ops-bot", "reports-bot"))
    requester = _pick(rng, fleet.acts_for(agent))
    request: dict[str, Any] = {"customer": customer}
    if kind == "stranger":  # an ops person named by the support agent, and the like
        everyone = fleet.support + fleet.ops + fleet.analysts
        strangers = [p for p in everyone if p not in fleet.acts_for(agent)]
        requester = rng.choice(strangers)
        operation = "crm.lookup_customer"
    elif kind == "malformed":  # a negative amount, or a field the model made up
        request = rng.choice(
            (
                {
                    "payment_id": "pay_1000001",
                    "customer": customer,
                    "amount_cents": -500,
                    "currency": "USD",
                    "reason": "goodwill",
                },
                {"customer": customer, "tag": "vip", "note": "from the model"},
            )
        )
        operation = "payments.refund" if "amount_cents" in request else "crm.tag_customer"
    else:  # unknown_operation
        operation = "crm.merge_customers"
    return {
        "agent": agent,
        "requested_by": requester,
        "at": stamp,
        "operation": operation,
        "request": request,
    }


def write(calls: list[dict[str, Any]], path: Path) -> None:
    """The calls as JSON Lines."""
    path.write_text("".join(json.dumps(call) + "\n" for call in calls), encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1, help="which day (default 1)")
    parser.add_argument("--calls", type=int, default=DEFAULT_CALLS, help="calls in a day")
    parser.add_argument("--output", type=Path, required=True, help="the JSON Lines file")
    args = parser.parse_args(argv)
    calls = day(args.seed, calls=args.calls)
    write(calls, args.output)
    print(f"wrote {len(calls):,} calls (seed {args.seed}) to {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
