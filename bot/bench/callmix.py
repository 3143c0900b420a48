"""The call mix through a running server: a slice of a generated day (bot/operators/callmix.py)
sent by the mix's four agents to `countersign serve` with the mix's careful policy
(examples/callmix/countersign.toml), and the server's answers set beside ``policy simulate``'s
on the same calls.

The row counts what the server answered (auto, asked, denied, refused before the policy) and the
proposals it handled per second; any call the two decide differently is a mismatch, named in the
row's note. Only the agents' rate and pending limits differ from the example's configuration:
they are raised out of the way, as the benchmark's own agent's are, so that the server's pace is
measured rather than the quota (the simulator does not replay those limits either).
"""

from __future__ import annotations

import json
import re
import secrets
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp

from bot.bench.load import back_to_back
from bot.bench.report import Measurement
from bot.bench.stage import Stage
from bot.operators import callmix
from bot.operators.calls import Outcome, read_calls
from bot.operators.simulate import simulate
from bot.settings import load_settings

__all__ = ["MIX_CONFIG", "MIX_ENV", "callmix_row", "mix_config"]

#: the mix's configuration, in the source tree beside the package
MIX_CONFIG = Path(__file__).parents[2] / "examples" / "callmix" / "countersign.toml"
#: the environment variables the mix's configuration names: each agent's token, by agent
MIX_TOKENS = {
    "support-bot": "CALLMIX_TOKEN_SUPPORT_BOT",
    "billing-bot": "CALLMIX_TOKEN_BILLING_BOT",
    "ops-bot": "CALLMIX_TOKEN_OPS_BOT",
    "reports-bot": "CALLMIX_TOKEN_REPORTS_BOT",
}
MIX_SECRET = "CALLMIX_WEBHOOK_SECRET"
#: a fresh value for each variable, for one run
MIX_ENV = {name: secrets.token_urlsafe(24) for name in (*MIX_TOKENS.values(), MIX_SECRET)}
#: agents' clients sending at once
CLIENTS = 8
#: mismatches named in the row's note (all are in its details)
SHOWN = 3

_LIMITS = """[limits]
max_pending_proposals = 10000000
submissions_per_second = 1000000
submissions_burst = 10000000
reads_per_second = 1000000
reads_burst = 10000000
"""

Decided = tuple[str, str | None, tuple[str, ...]]


def mix_config(store_url: str, target_url: str) -> str:
    """The mix's configuration on ``store_url``, its webhooks sent to the benchmark's target and
    its agents' limits raised out of the way."""
    text = MIX_CONFIG.read_text(encoding="utf-8")
    text = text[text.index("[limits]") :]
    text = text[text.index("[roles]") :]
    text = re.sub(r'https://[a-z]+\.internal\.example\.com/[^"]*', f"{target_url}/execute", text)
    return f'[store]\nurl = "{store_url}"\n\n{_LIMITS}\n{text}'


def _served(status: int, answer: dict[str, Any] | None) -> Decided:
    if status == 201 and answer is not None:
        return answer["policy"]["decision"], answer["policy"]["rule_id"], ()
    if answer is None or not isinstance(answer.get("errors"), list):
        return "refused", None, (f"{status} (no answer)" if status == 0 else f"{status}",)
    return (
        "refused",
        None,
        tuple(f"{status} {e['field']}: {e['message']}" for e in answer["errors"]),
    )


def _simulated(outcome: Outcome) -> Decided:
    return outcome.kind, outcome.rule, outcome.reasons


def _label(decided: Decided) -> str:
    kind, rule, reasons = decided
    if kind == "refused":
        return f"refused ({'; '.join(reasons)})"
    return f"{kind} ({rule or 'no rule matched'})"


async def callmix_row(stage: Stage, *, calls: int, seed: int, backend: str) -> Measurement:
    """Replay the first ``calls`` calls of the mix's day ``seed`` through the stage's server;
    the row of what it answered, checked against ``policy simulate``."""
    day = callmix.day(seed)[:calls]
    served: list[Decided | None] = [None] * len(day)
    tokens = {agent: stage.env[name] for agent, name in MIX_TOKENS.items()}
    run = secrets.token_hex(4)

    async def send(n: int) -> int:
        call = day[n]
        body = {k: call[k] for k in ("operation", "request", "requested_by")}
        headers = {
            "Authorization": f"Bearer {tokens[call['agent']]}",
            "Idempotency-Key": f"callmix-{run}-{n}",  # each call is its own submission
        }
        try:
            async with stage.http.post(
                f"{stage.url}/v1/proposals", json=body, headers=headers
            ) as answer:
                try:
                    document = await answer.json(content_type=None)
                except ValueError:
                    document = None
                served[n] = _served(answer.status, document)
                return answer.status
        except aiohttp.ClientError:
            served[n] = _served(0, None)
            return 0

    result = await back_to_back(send, clients=CLIENTS, duration=float("inf"), limit=len(day))
    settings = load_settings(stage.logs / "countersign.toml", stage.env)
    replay = read_calls("\n".join(json.dumps(call) for call in day), source=f"callmix seed {seed}")
    tally = await simulate(settings, replay, store=None, now=datetime.now(UTC))
    simulated = [_simulated(outcome) for outcome in tally.outcomes]
    mismatches = [
        f"call {n + 1} ({day[n]['operation']}): server {_label(got)}, simulate {_label(expected)}"
        for n, (got, expected) in enumerate(zip(served, simulated, strict=True))
        if got is not None and got != expected
    ]
    kinds = Counter(kind for kind, _, _ in (s for s in served if s is not None))
    simulated_kinds = Counter(kind for kind, _, _ in simulated)
    row = Measurement.timed(
        "callmix",
        "scenario",
        f"the first {len(day):,} calls of the call mix's day {seed} from {CLIENTS} agents' "
        "clients, under the careful policy",
        result.every(),
        result.elapsed,
        count=len(day),
        backend=backend,
    )
    counts = (
        f"auto {kinds['auto']:,}, asked {kinds['ask']:,}, denied {kinds['deny']:,}, "
        f"refused {kinds['refused']:,}"
    )
    if mismatches:
        shown = "; ".join(mismatches[:SHOWN])
        more = f"; and {len(mismatches) - SHOWN:,} more" if len(mismatches) > SHOWN else ""
        row.note = f"{counts}; {len(mismatches):,} differ from policy simulate: {shown}{more}"
    else:
        row.note = f"{counts}; every call as policy simulate decides it"
    row.details = {
        "seed": seed,
        "calls": len(day),
        "served": {k: kinds[k] for k in ("auto", "ask", "deny", "refused")},
        "simulated": {k: simulated_kinds[k] for k in ("auto", "ask", "deny", "refused")},
        "mismatches": mismatches,
        "statuses": {str(status): count for status, count in sorted(result.statuses.items())},
    }
    return row.judge("matches policy simulate", not mismatches)
