"""A slice of another generator's day (tests/othermix.py) sent to a running `countersign serve`
with the call mix's careful policy: every call gets, from the server, the decision, rule and
refusal reasons ``policy simulate`` gives it (every field of the submission the call carries sent
as it is, with its Idempotency-Key when it has one: the day's retry storm, sent again under its
run_id without one, is answered as a replay of its first call by both)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from bot.bench.callmix import MIX_ENV, MIX_TOKENS, mix_config
from bot.bench.stage import running_stage
from bot.operators.calls import Outcome, read_calls
from bot.operators.simulate import simulate
from bot.settings import load_settings
from tests import othermix

#: the fields of a call that are the submission's own (docs/operators.md)
SUBMISSION = ("operation", "request", "requested_by", "run_id", "reason", "callback_url", "urgent")

Decided = tuple[str, str | None, tuple[str, ...]]


def _served(status: int, answer: dict[str, Any]) -> Decided:
    if status == 201:
        return answer["policy"]["decision"], answer["policy"]["rule_id"], ()
    if status == 200:  # Idempotent-Replayed: the proposal of the call first sent
        return "replay", answer["policy"]["rule_id"], ()
    reasons = tuple(f"{status} {e['field']}: {e['message']}" for e in answer["errors"])
    return "refused", None, reasons or (str(status),)


def _simulated(outcome: Outcome) -> Decided:
    return outcome.kind, outcome.rule, outcome.reasons


@pytest.mark.timeout(90)
async def test_the_server_decides_a_slice_of_another_generators_day_as_simulate(
    tmp_path: Path,
) -> None:
    # 400 calls around the day's retry storm (its calls 955 to 1,018)
    generated = othermix.day(6, calls=1_500, hours=30.0)[700:1100]
    async with running_stage(
        tmp_path, f"sqlite:///{tmp_path / 'other.sqlite'}", extra_env=MIX_ENV, config=mix_config
    ) as stage:
        tokens = {agent: stage.env[name] for agent, name in MIX_TOKENS.items()}
        served: list[Decided] = []
        for call in generated:
            body = {k: call[k] for k in SUBMISSION if k in call}
            token = tokens.get(call["agent"], "a-token-no-agent-holds-0123456789")
            async with stage.http.post(
                f"{stage.url}/v1/proposals",
                data=json.dumps(body, ensure_ascii=False).encode(),
                headers={
                    "Authorization": f"Bearer {token}",
                    "Content-Type": "application/json",
                }
                | ({"Idempotency-Key": key} if (key := call.get("idempotency_key")) else {}),
            ) as answer:
                served.append(_served(answer.status, await answer.json(content_type=None)))
        settings = load_settings(stage.logs / "countersign.toml", stage.env)

    calls = read_calls(othermix.lines(generated, 6), source="other day 6")
    tally = await simulate(settings, calls, store=None, now=datetime.now(UTC))
    simulated = [_simulated(outcome) for outcome in tally.outcomes]
    for n, call in enumerate(generated):
        if call["agent"] not in tokens:  # the server knows only that no agent holds the token
            assert served[n][0] == simulated[n][0] == "refused"
            assert served[n][2][0].startswith("401") and simulated[n][2][0].startswith("401")
            served[n] = simulated[n]
    differ = [
        f"call {n + 1}: server {got}, simulate {expected}"
        for n, (got, expected) in enumerate(zip(served, simulated, strict=True))
        if got != expected
    ]
    assert differ == []
    kinds = {kind for kind, _, _ in served}
    assert kinds == {"auto", "ask", "deny", "refused", "replay"}
