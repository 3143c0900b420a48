"""The Claude Code hook's wall time: a new process per tool call, answered by a real server.

Claude Code starts the hook before every tool call it matches, so a session pays its start-up
hundreds of times. These rows time the whole process (start, imports, one proposal the policy
allows at once, the answer on stdout, exit) through both names, interleaved with a bare
interpreter (``python -c pass``, the floor no Python hook can beat) so that every row meets the
same load on the machine.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import shutil
import statistics
import sys
import textwrap
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from bot.bench.report import Measurement
from bot.bench.stage import REQUESTER, Stage

__all__ = ["HOOK_CONFIG", "HOOK_OPERATION", "hook_rows"]

HOOK_OPERATION = "bench.tool_use"
#: A decision operation for tool calls whose policy allows ``Read`` at once, appended to the
#: benchmark's configuration for these rows.
HOOK_CONFIG = textwrap.dedent(
    f"""
    [operations."{HOOK_OPERATION}"]
    kind = "decision"
    description = "A coding agent's tool call, which the agent runs itself"
    risk = "reversible"
    request_schema = {{ type = "object", required = ["tool_name", "input"], properties = {{ tool_name = {{ type = "string" }}, input = {{ type = "object" }} }} }}
    preview = {{ title = "Use {{tool_name}}" }}

    [[policy]]
    id = "read-only-tools"
    operation = "{HOOK_OPERATION}"
    when = [{{ field = "tool_name", eq = "Read" }}]
    decision = "auto"
    """  # noqa: E501
)


def _command(script: str, *args: str) -> list[str]:
    """The installed console script ``script`` (beside this interpreter, else on PATH)."""
    beside = Path(sys.executable).parent / script
    found = str(beside) if beside.exists() else shutil.which(script)
    if found is None:
        raise FileNotFoundError(f"{script} is not installed beside {sys.executable} or on PATH")
    return [found, *args]


async def _timed(
    command: Sequence[str], stdin: bytes, env: Mapping[str, str]
) -> tuple[float, float, bytes]:
    """The process's wall time and CPU time (user and system) in seconds, and its stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    process = await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env=dict(env),
    )
    out, _ = await process.communicate(stdin)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu, out


def _allowed(out: bytes) -> bool:
    try:
        answer = json.loads(out)["hookSpecificOutput"]
    except (ValueError, KeyError, TypeError):
        return False
    return bool(answer.get("permissionDecision") == "allow")


async def hook_rows(stage: Stage, runs: int) -> list[Measurement]:
    """``runs`` hook calls through each name and as many bare interpreters, interleaved; each
    hook call is a ``Read`` the policy allows at once (a call that is not allowed is counted
    apart and its time left out)."""
    assert stage.server is not None, "no Countersign was started"
    env = {
        **os.environ,
        "COUNTERSIGN_URL": stage.server.url,
        "COUNTERSIGN_TOKEN": stage.token,
        "COUNTERSIGN_REQUESTED_BY": REQUESTER,
        "COUNTERSIGN_TOOL_OPERATION": HOOK_OPERATION,
    }
    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "hook (claude-hook)": _command("countersign-claude-hook"),
        "hook (countersign)": _command("countersign", "claude-hook"),
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    refused = dict.fromkeys(commands, 0)
    started = time.perf_counter()
    for n in range(runs):
        call = {
            "session_id": f"bench-{stage.run}",
            "cwd": "/home/dev/shop",
            "hook_event_name": "PreToolUse",
            "tool_name": "Read",
            "tool_input": {"file_path": f"/home/dev/shop/file{n}.py"},
            "tool_use_id": f"toolu_bench_{stage.run}_{n}",
        }
        for name, command in commands.items():
            # each name its own call: the same id would find the first one's proposal
            stdin = json.dumps({**call, "tool_use_id": f"{call['tool_use_id']}_{name}"}).encode()
            seconds, used, out = await _timed(command, stdin, env)
            if name.startswith("hook") and not _allowed(out):
                refused[name] += 1
                continue
            times[name].append(seconds)
            cpu[name].append(used)
    elapsed = time.perf_counter() - started
    rows = []
    said = {
        "python -c pass": "a bare interpreter started and stopped: the floor of any Python hook",
        "hook (claude-hook)": "`countersign-claude-hook`: one Read the policy allows at once",
        "hook (countersign)": "`countersign claude-hook`: one Read the policy allows at once",
    }
    for name, latencies in times.items():
        floor = name == "python -c pass"
        row = Measurement.timed(
            name, "floor" if floor else "scenario", said[name], latencies, elapsed
        )
        row.throughput = None  # one call at a time, each a whole process: the latency counts
        # CPU time moves less with the machine's load than wall time: the cost of one call
        cpu_ms = round(statistics.median(cpu[name]) * 1000, 1) if cpu[name] else None
        row.details["cpu_ms_p50"] = cpu_ms
        row.note = f"CPU {cpu_ms} ms each"
        if not floor:
            row.floor = "python -c pass"
            allowed = f"{refused[name]:,} not allowed" if refused[name] else "all allowed"
            row.note = f"{allowed}, {row.note}"
            row.details["not_allowed"] = refused[name]
            median = row.p50_ms
            row.judge(
                "p50 < 100 ms", None if median is None else median < 100 and not refused[name]
            )
        rows.append(row)
    return rows
