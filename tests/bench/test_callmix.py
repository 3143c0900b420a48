"""`countersign bench --only callmix` at a tiny size: a slice of the call mix's day through a
running server, its answers counted and set beside ``policy simulate``'s."""

from __future__ import annotations

import asyncio
import json
import sys
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.bench.callmix import MIX_ENV, callmix_row, mix_config
from bot.bench.stage import running_stage
from bot.operators import callmix
from bot.operators.calls import read_calls
from bot.operators.simulate import simulate
from tests.bench.run import bench_rows
from tests.callmix_example import settings

REPO = Path(__file__).parents[2]


@pytest.mark.timeout(120)
async def test_bench_only_callmix_counts_the_servers_answers_and_matches_the_simulator(
    tmp_path: Path,
) -> None:
    rows = await bench_rows(
        tmp_path, "--only", "callmix", "--mix-calls", "120", "--mix-seed", "2", timeout=110
    )
    assert set(rows) == {"callmix"}
    row = rows["callmix"]
    assert row["count"] == 120 and row["throughput"] > 0
    served = row["details"]["served"]
    assert sum(served.values()) == 120
    # the same calls, simulated here on the example's own configuration
    day = callmix.day(2)[:120]
    calls = read_calls("\n".join(json.dumps(call) for call in day), source="mix")
    tally = await simulate(settings(tmp_path), calls, store=None, now=datetime.now(UTC))
    expected = Counter(outcome.kind for outcome in tally.outcomes)
    assert served == {kind: expected[kind] for kind in ("auto", "ask", "deny", "refused")}
    assert served["auto"] > 0 and served["ask"] > 0
    assert row["details"]["mismatches"] == []
    assert row["target"] == "matches policy simulate" and row["reached"] is True
    assert f"auto {served['auto']}, asked {served['ask']}" in row["note"]


@pytest.mark.timeout(120)
async def test_the_callmix_row_names_calls_the_server_answered_otherwise(tmp_path: Path) -> None:
    """A server whose agents may send 2 proposals at once and 1 a second refuses most of a
    burst (429), which the simulator does not replay: the row says which calls differ."""

    def strict(store_url: str, target_url: str) -> str:
        text = mix_config(store_url, target_url)
        text = text.replace("submissions_per_second = 1000000", "submissions_per_second = 1")
        return text.replace("submissions_burst = 10000000", "submissions_burst = 2")

    async with running_stage(
        tmp_path, f"sqlite:///{tmp_path / 'mix.sqlite'}", extra_env=MIX_ENV, config=strict
    ) as stage:
        row = await callmix_row(stage, calls=40, seed=3, backend="sqlite")

    mismatches = row.details["mismatches"]
    assert row.reached is False
    assert row.details["served"]["refused"] > row.details["simulated"]["refused"]
    assert len(mismatches) == row.details["served"]["refused"] - row.details["simulated"]["refused"]
    assert all("server refused (429" in line for line in mismatches)
    assert f"{len(mismatches)} differ from policy simulate: {mismatches[0]}" in row.note


async def test_bench_refuses_no_calls_of_the_mix_naming_its_option_and_starts_nothing() -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot.cli", "bench", "--only", "callmix", "--mix-calls", "0",
        cwd=REPO, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    printed, _ = await asyncio.wait_for(process.communicate(), timeout=30)

    assert process.returncode == 2
    assert "--mix-calls: got 0; expected at least 1" in printed.decode()
    assert "callmix " not in printed.decode()  # no row was run
