"""Running `countersign bench` as its user does: the CLI in a process of its own."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

__all__ = ["REPO", "bench_rows"]

REPO = Path(__file__).parents[2]


async def bench_rows(tmp_path: Path, *args: str, timeout: float) -> dict[str, dict[str, Any]]:
    """Run ``countersign bench *args`` with its JSON and work folder under ``tmp_path``; it must
    succeed within ``timeout`` seconds. Its measurements by row name."""
    out = tmp_path / "bench.json"
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot.cli", "bench", *args,
        "--json", str(out), "--work-dir", str(tmp_path / "work"),
        cwd=REPO, env={**os.environ}, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    printed, _ = await asyncio.wait_for(process.communicate(), timeout=timeout)
    assert process.returncode == 0, printed.decode()
    return {row["name"]: row for row in json.loads(out.read_text())["measurements"]}
