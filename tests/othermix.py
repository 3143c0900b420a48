"""A second generator of agent calls, written apart from bot/operators/callmix.py and shaped
otherwise, so that ``policy simulate``, ``policy suggest`` and the server are tried on days they
were not written against. It writes the documented call format (docs/operators.md, as
``export-calls`` writes it) for the fleet of examples/callmix/countersign.toml, and reaches past
it on purpose:

- other shares: refunds and account changes heavy, few reads; requesters drawn evenly, and
  billing-bot acting for support people as well as billing;
- a night shift: from 20:00 UTC for ``hours`` hours (over midnight, or over several days), its
  times written in several zones, a share of them out of order and a late batch at the end;
- bursts of other kinds: a retry storm (one refund sent again and again under its run_id), a
  queue of account closures, exports at night, refunds at the policy's exact thresholds;
- unusual but valid values: amounts at 50.00, 1,000.00 and 5,000.00 USD and one cent past,
  unicode (and raw line separators) in free text, reasons of exactly 2,000 characters, urgent
  calls, calls with no ``at``, verdicts without ``decided_at``, asked calls without a verdict,
  exported calls with their ``arguments``;
- calls the API refuses: an agent nobody configured, a requester the agent may not act for, none
  at all, a currency the contract does not take, an amount that is text or true, a reason or
  run_id past its length, a callback URL the agent may not name, an unknown operation.

People's verdicts follow the money (larger refunds are rejected more often), so that a rule
drawn from one day can be tried for what people would reject on another.
"""

from __future__ import annotations

import json
import math
import random
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

__all__ = ["THRESHOLDS", "ZONES", "day", "lines", "refusals"]

#: the key a refused call carries while it is made: the field it is refused for
_WHY = "__refused_for"
_RETRY = "__sent_again"

#: the careful policy's refund thresholds, in cents, and one cent past each
THRESHOLDS = (5_000, 5_001, 100_000, 100_001, 500_000, 500_001)
#: the zones times are written in (each a valid way to write the same instant)
ZONES = (UTC, timezone(timedelta(hours=5, minutes=30)), timezone(timedelta(hours=-8)))

SUPPORT = tuple(f"U0SUP{n:02d}" for n in range(1, 17))
BILLING = tuple(f"U0BIL{n:02d}" for n in range(1, 7))
OPS = tuple(f"U0OPS{n}" for n in range(1, 7))
ANALYSTS = tuple(f"U0ANA{n}" for n in range(1, 5))
#: whom each agent may name (the example's acts_for)
ACTS_FOR = {
    "support-bot": SUPPORT,
    "billing-bot": BILLING + SUPPORT,
    "ops-bot": OPS,
    "reports-bot": ANALYSTS,
}
#: people no agent may name: leads, finance, security, data owners
NOBODYS = ("U0LEAD1", "U0FIN2", "U0FINLEAD1", "U0SEC3", "U0DATA2")

SHARES = {
    "refund": 0.30,
    "account": 0.12,
    "email": 0.12,
    "tag": 0.10,
    "ticket": 0.08,
    "export": 0.05,
    "lookup": 0.13,
    "refused": 0.10,
}
FREE_TEXT = (
    "Kunde wartet seit März — Rückerstattung bitte 🙏",
    "客户要求退款\uff0c订单已损坏",
    "عميل غاضب\u200f، الطلب متأخر",
    "line one\nline two\ttabbed",
    "separator\u2028inside\u2029the text",
    "emoji only 🧾💸🔁",
)


def day(seed: int, *, calls: int = 2_000, hours: float = 10.0) -> list[dict[str, Any]]:
    """The calls of one shift from 20:00 UTC lasting ``hours`` (over midnight; more than 28
    hours spans several days), in the order an agent fleet's log would list them (mostly by
    time, some not)."""
    return refusals(seed, calls=calls, hours=hours)[0]


def refusals(
    seed: int, *, calls: int = 2_000, hours: float = 10.0
) -> tuple[list[dict[str, Any]], list[str | None]]:
    """:func:`day`'s calls, and for each the field the API is meant to refuse it for (``agent``
    for an agent nobody configured; None: not refused), as this generator meant it."""
    rng = random.Random(f"othermix:{seed}")
    start = datetime(2032, 1, 5, 20, tzinfo=UTC) + timedelta(days=3 * (seed % 7))
    customers = [f"cus_{rng.randrange(36**8):x}" for _ in range(max(40, calls // 5))]
    timed: list[tuple[datetime, dict[str, Any]]] = []
    bursts = _bursts(rng, start, hours, calls)
    for _ in range(max(0, calls - sum(len(b) for b in bursts))):
        at = start + timedelta(seconds=rng.uniform(0, hours * 3600))
        kind = rng.choices(list(SHARES), list(SHARES.values()))[0]
        timed.append((at, _call(rng, kind, customers)))
    for burst in bursts:
        timed += burst
    timed.sort(key=lambda item: item[0])
    for n in range(len(timed) - 1):  # some neighbours swap: logs from several workers
        if rng.random() < 0.15:
            timed[n], timed[n + 1] = timed[n + 1], timed[n]
    late = [timed.pop(rng.randrange(len(timed))) for _ in range(len(timed) // 50)]
    timed += late  # a batch of calls logged late, at the end with their earlier times
    out, why = [], []
    for number, (at, call) in enumerate(timed):
        why.append(call.pop(_WHY, None))
        if not call.pop(_RETRY, False):  # each call its own submission, but the retry storm's
            call["idempotency_key"] = f"other-{seed}-{number}"
        _stamp(rng, call, at)
        out.append(call)
    return out, why


def lines(calls: list[dict[str, Any]], seed: int = 0) -> str:
    """The calls as JSON Lines, some written with raw unicode (as many writers do), some
    escaped, with CRLF line ends here and there and a blank line or two."""
    rng = random.Random(f"othermix-lines:{seed}")
    out = []
    for call in calls:
        text = json.dumps(call, ensure_ascii=rng.random() < 0.5)
        out.append(text + ("\r\n" if rng.random() < 0.1 else "\n"))
        if rng.random() < 0.002:
            out.append("\n")
    return "".join(out)


# --- the calls --------------------------------------------------------------------------------


def _bursts(
    rng: random.Random, start: datetime, hours: float, calls: int
) -> list[list[tuple[datetime, dict[str, Any]]]]:
    bursts = []
    customers = [f"cus_burst{n}" for n in range(30)]
    for kind in ("retry", "closures", "exports", "thresholds"):
        at = start + timedelta(seconds=rng.uniform(0, hours * 3600 * 0.9))
        size = max(3, min(calls // 25, rng.randint(10, 60)))
        burst: list[tuple[datetime, dict[str, Any]]] = []
        if kind == "retry":
            call = _refund(rng, customers, cents=rng.choice((4_200, 99_999, 250_000)))
            call["run_id"] = f"run-retry-{rng.randrange(10**6)}"
            call[_RETRY] = True  # sent again without an Idempotency-Key: a replay of the first
            for n in range(size):  # the same call sent again, its verdict the same
                burst.append((at + timedelta(seconds=n * rng.uniform(0.2, 3)), dict(call)))
        elif kind == "closures":
            for n in range(size):
                call = _account(rng, customers, change="close")
                burst.append((at + timedelta(seconds=n * rng.uniform(1, 20)), call))
        elif kind == "exports":
            for n in range(size):
                call = _export(rng)
                burst.append((at + timedelta(seconds=n * rng.uniform(1, 30)), call))
        else:
            for n in range(size):
                call = _refund(rng, customers, cents=rng.choice(THRESHOLDS))
                burst.append((at + timedelta(seconds=n * rng.uniform(1, 10)), call))
        bursts.append(burst)
    return bursts


def _call(rng: random.Random, kind: str, customers: list[str]) -> dict[str, Any]:
    if kind == "refund":
        return _refund(rng, customers)
    if kind == "account":
        return _account(rng, customers)
    if kind == "export":
        return _export(rng)
    if kind == "refused":
        return _refused(rng, customers)
    customer = rng.choice(customers)
    if kind == "email":
        template = rng.choice(("tmpl_apology", "tmpl_survey", "tmpl_refund_issued", "tmpl_free"))
        call = _by(rng, "support-bot", "email.send_customer")
        call["request"] = {"customer": customer, "template": template}
        call["verdict"] = _verdict(rng, 0.05)
        return call
    if kind == "tag":
        agent = rng.choice(("support-bot", "ops-bot"))
        tag = rng.choice(("vip", "winback", "legal-hold", "ВИП-клиент", "x" * 300))
        call = _by(rng, agent, "crm.tag_customer")
        call["request"] = {"customer": customer, "tag": tag}
        if tag not in ("vip", "winback"):
            call["verdict"] = _verdict(rng, 0.3)
        return call
    if kind == "ticket":
        status = rng.choice(("solved", "spam", "closed"))
        call = _by(rng, rng.choice(("support-bot", "ops-bot")), "tickets.update")
        call["request"] = {"ticket": f"T{rng.randrange(10**7)}", "status": status}
        if status == "spam":
            call["verdict"] = _verdict(rng, 0.1)
        return call
    agent = rng.choice(("support-bot", "ops-bot", "billing-bot"))
    call = _by(rng, agent, "crm.lookup_customer")
    call["request"] = {"customer": customer}
    if rng.random() < 0.05:  # a verdict on a call nobody was asked about
        call["verdict"] = "approved"
    return call


def _by(rng: random.Random, agent: str, operation: str) -> dict[str, Any]:
    """A call's agent, operation and requester (drawn evenly among those it acts for)."""
    call: dict[str, Any] = {
        "agent": agent,
        "operation": operation,
        "requested_by": rng.choice(ACTS_FOR[agent]),
    }
    if rng.random() < 0.3:
        call["run_id"] = f"run-{rng.randrange(500)}"  # run ids are shared by many calls
    if rng.random() < 0.2:
        call["reason"] = rng.choice(FREE_TEXT)
    if rng.random() < 0.02:
        call["reason"] = "é" * 2_000  # the longest reason allowed, in characters
    if rng.random() < 0.03:
        call["urgent"] = True
    return call


def _refund(
    rng: random.Random, customers: list[str], *, cents: int | None = None
) -> dict[str, Any]:
    agent = rng.choice(("billing-bot", "billing-bot", "support-bot"))
    call = _by(rng, agent, "payments.refund")
    if cents is None:  # spread evenly over the orders of magnitude: 1 cent to 10,000.00 USD
        cents = max(1, round(10 ** rng.uniform(0, 6)))
    amount: Any = cents
    if rng.random() < 0.02:
        amount = float(cents)  # 2500.0: an integer written as a JSON number with a point
    request = {
        "payment_id": f"pay_{rng.randrange(10**9)}",
        "customer": rng.choice(customers),
        "amount_cents": amount,
        "currency": "USD",
        "reason": rng.choice(("duplicate", "damaged", "late", "goodwill", "cancelled")),
    }
    call["request"] = request
    # people reject more as the money grows: 0.5% of a few dollars, 25% of thousands
    call["verdict"] = _verdict(rng, min(0.25, 0.002 * math.log10(cents + 1) ** 2.5))
    if rng.random() < 0.05:  # as export-calls writes it: the frozen arguments too
        call["arguments"] = dict(request)
    return call


def _account(
    rng: random.Random, customers: list[str], *, change: str | None = None
) -> dict[str, Any]:
    agent = rng.choice(("ops-bot", "billing-bot"))
    change = change or rng.choice(("email", "plan", "address", "close"))
    value = {
        "email": "名前@example.jp",
        "plan": rng.choice(("basic", "pro")),
        "address": "Straße 7, 東京 🏠\u2028second line",
        "close": "customer asked 🙁",
    }[change]
    call = _by(rng, agent, "accounts.update")
    call["request"] = {"customer": rng.choice(customers), "change": change, "value": value}
    call["verdict"] = _verdict(rng, 0.2 if change == "close" else 0.05)
    return call


def _export(rng: random.Random) -> dict[str, Any]:
    rows = rng.choice((1, 50_000, 50_001, 1_000_000, 1_000_001, rng.randrange(1, 3_000_000)))
    call = _by(rng, "reports-bot", "exports.customer_data")
    call["request"] = {"segment": rng.choice(("eu", "trial", "Ω-segment")), "rows": rows}
    call["verdict"] = _verdict(rng, 0.4 if rows > 50_000 else 0.1)
    return call


def _refused(rng: random.Random, customers: list[str]) -> dict[str, Any]:
    """A call the API refuses, each for its own reason."""
    customer = rng.choice(customers)
    lookup = {"customer": customer}
    refund = {
        "payment_id": "pay_7",
        "customer": customer,
        "amount_cents": 1_500,
        "currency": "USD",
        "reason": "late",
    }
    why = rng.choice(
        (
            "agent",
            "stranger",
            "nobody",
            "not_a_user",
            "currency",
            "text_amount",
            "bool_amount",
            "long_reason",
            "long_run_id",
            "callback",
            "operation",
            "not_an_object",
        )
    )
    call = _by(rng, "billing-bot", "payments.refund")
    call["request"] = refund
    call[_WHY] = {
        "agent": "agent",
        "stranger": "requested_by",
        "nobody": "requested_by",
        "not_a_user": "requested_by",
        "currency": "request.currency",
        "text_amount": "request.amount_cents",
        "bool_amount": "request.amount_cents",
        "long_reason": "reason",
        "long_run_id": "run_id",
        "callback": "callback_url",
        "operation": "operation",
        "not_an_object": "request",
    }[why]
    if why == "agent":
        call["agent"] = "marketing-bot"
    elif why == "stranger":
        call["requested_by"] = rng.choice(NOBODYS + OPS)
    elif why == "nobody":
        del call["requested_by"]
    elif why == "not_a_user":
        call["requested_by"] = "dana@example.com"
    elif why == "currency":
        call["request"] = refund | {"currency": rng.choice(("EUR", "usd", "€"))}
    elif why == "text_amount":
        call["request"] = refund | {"amount_cents": "15.00"}
    elif why == "bool_amount":
        call["request"] = refund | {"amount_cents": True}
    elif why == "long_reason":
        call["reason"] = "Ж" * 2_001
    elif why == "long_run_id":
        call["run_id"] = "r" * 201
    elif why == "callback":
        call["callback_url"] = rng.choice(
            ("http://169.254.169.254/latest", "https://hooks.example.com/cs", "ftp://x")
        )
    elif why == "operation":
        call |= {"operation": "crm.merge_customers", "request": lookup}
    else:
        call["request"] = rng.choice(([customer], "cus_1", 7))
    return call


def _verdict(rng: random.Random, reject: float) -> str | None:
    draw = rng.random()
    if draw < reject:
        return "rejected"
    if draw < reject + 0.02:
        return "expired"
    if draw < reject + 0.04:
        return None  # asked, and nobody recorded what came of it
    return "approved"


def _stamp(rng: random.Random, call: dict[str, Any], at: datetime) -> None:
    """``at`` (and ``decided_at``) in one of the zones, or none at all now and then."""
    verdict = call.pop("verdict", None)
    if rng.random() < 0.01:
        call.pop("at", None)  # no time: shown at once, counted on no day
    else:
        call["at"] = at.astimezone(rng.choice(ZONES)).isoformat()
    if verdict is None:
        return
    call["verdict"] = verdict
    if verdict == "expired" or rng.random() < 0.05:
        return  # no decided_at
    took = timedelta(seconds=rng.choice((0, round(math.exp(rng.gauss(math.log(1_500), 1.2))))))
    call["decided_at"] = (at + took).astimezone(rng.choice(ZONES)).isoformat()
