"""``policy simulate`` counts what the server does: a day of the call mix (examples/callmix),
sent over HTTP to a running Countersign with the mix's configuration, gets call for call the
decision, rule and refusal reasons the simulator gives it, the same counts per rule, and, at the
times the server received them, the same batches (the digests people are shown)."""

from __future__ import annotations

import json
import re
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bot.operators.calls import Outcome, read_calls
from bot.operators.report import Report
from bot.operators.simulate import simulate
from tests.callmix_example import CONFIG, ENV, callmix, settings
from tests.e2e.harness import running_countersign

#: the agents' tokens, by agent name (the mix's configuration names their variables)
TOKENS = {
    "support-bot": ENV["CALLMIX_TOKEN_SUPPORT_BOT"],
    "billing-bot": ENV["CALLMIX_TOKEN_BILLING_BOT"],
    "ops-bot": ENV["CALLMIX_TOKEN_OPS_BOT"],
    "reports-bot": ENV["CALLMIX_TOKEN_REPORTS_BOT"],
}


def _mix_config(text: str, target_url: str) -> str:
    """The e2e server's settings with the mix's roles, agents, operations and policy, its
    webhooks pointed at the test's target."""
    server = text[text.index("[server]") : text.index("[roles]")]
    mix = CONFIG.read_text(encoding="utf-8")
    mix = mix[mix.index("[limits]") :]
    # the day is sent as fast as the server answers: its rate limit (20 a second, burst 200)
    # would refuse the tail of 400 calls on a fast machine and pass on a slow one. The simulator
    # does not replay rate limits (they depend on timing, not on the call), so neither does this.
    mix = re.sub(r"(?m)^submissions_per_second = \d+", "submissions_per_second = 1000000", mix)
    mix = re.sub(r"(?m)^submissions_burst = \d+", "submissions_burst = 1000000", mix)
    return server + re.sub(r"https://[a-z]+\.internal\.example\.com", target_url, mix)


def _served(status: int, answer: dict[str, Any]) -> tuple[str, str | None, tuple[str, ...]]:
    if status == 201:
        return answer["policy"]["decision"], answer["policy"]["rule_id"], ()
    reasons = tuple(f"{status} {e['field']}: {e['message']}" for e in answer["errors"])
    return "refused", None, reasons


def _simulated(outcome: Outcome) -> tuple[str, str | None, tuple[str, ...]]:
    return outcome.kind, outcome.rule, outcome.reasons


async def test_the_simulator_decides_every_call_of_a_day_as_the_server(tmp_path: Path) -> None:
    day = callmix.day(21, calls=400)
    calls = read_calls("\n".join(json.dumps(call) for call in day), source="mix")
    simulated = await simulate(settings(tmp_path), calls, store=None, now=datetime.now(UTC))
    served = []
    created: dict[int, str] = {}  # call number -> proposal id

    def edit(text: str) -> str:  # the harness's text names its target's URL
        match = re.search(r'url = "(http://127\.0\.0\.1:\d+)/campaigns/send"', text)
        assert match is not None
        return _mix_config(text, match.group(1))

    server = tmp_path / "server"
    server.mkdir()
    async with running_countersign(server, env=ENV, config_edit=edit) as cs:
        for number, call in enumerate(day):
            body = {k: call[k] for k in ("operation", "request", "requested_by")}
            async with cs.http.post(
                f"{cs.url}/v1/proposals",
                json=body,
                headers={
                    "Authorization": f"Bearer {TOKENS[call['agent']]}",
                    "Idempotency-Key": f"mix-21-{number}",  # each line is its own submission
                },
            ) as response:
                answer = await response.json()
                served.append(_served(response.status, answer))
                if response.status == 201:
                    created[number] = answer["id"]
        stored = {n: await cs.store.get_proposal(pid) for n, pid in created.items()}

    assert [_simulated(o) for o in simulated.outcomes] == served
    kinds = Counter(kind for kind, _, _ in served)
    assert kinds["auto"] > 0 and kinds["ask"] > 0 and kinds["refused"] > 0
    assert Counter(rule for _, rule, _ in served) == Counter(o.rule for o in simulated.outcomes)

    # the batches: the simulator, given the times the server received each call, holds the same
    # proposals together as the server did
    config = settings(tmp_path)
    at_server = [
        call.model_copy(update={"at": stored[n].created_at}) if n in stored else call
        for n, call in enumerate(calls)
    ]
    report = Report.of(config, at_server, simulated)
    simulated_batches = {
        frozenset(item.index for item in message.items)
        for message in report.messages
        if message.items[0].window is not None
    }
    by_batch: dict[str, set[int]] = {}
    for n, proposal in stored.items():
        if proposal.batch_id is not None:
            by_batch.setdefault(proposal.batch_id, set()).add(n)
    assert simulated_batches == {frozenset(members) for members in by_batch.values()}
    assert len(simulated_batches) > 1
