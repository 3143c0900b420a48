"""`countersign sandbox` as a real process: prints where to go, serves the page and the agent API,
and its printed curl example works as printed."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import re
import shlex
import signal
import sys
from pathlib import Path

import aiohttp
import pytest

REPO = Path(__file__).parents[2]
STARTUP_SECONDS = 20.0
STOP_SECONDS = 5.0
TOKEN = "cs-sandbox-token-the-agent-already-knows"


async def read_until(stream: asyncio.StreamReader, marker: str, seen: list[str]) -> None:
    async with asyncio.timeout(STARTUP_SECONDS):
        while marker not in "".join(seen):
            line = await stream.readline()
            if not line:
                raise AssertionError(f"the sandbox stopped before printing {marker!r}: {seen}")
            seen.append(line.decode())


@pytest.mark.timeout(60)
async def test_sandbox_command_prints_the_url_serves_the_demo_and_stops_on_sigterm(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "COUNTERSIGN_SANDBOX_AGENT_TOKEN": TOKEN}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot.cli",
        "sandbox",
        "--port",
        "0",
        "--data-dir",
        str(tmp_path / "data"),
        "--demo",
        env=env,
        cwd=REPO,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    assert process.stdout is not None
    seen: list[str] = []
    try:
        await read_until(process.stdout, "Submitted 4 demo proposals", seen)
        out = "".join(seen)
        page_url = re.search(r"Open (http://127\.0\.0\.1:\d+) in your browser", out)
        assert page_url is not None, out
        assert f"Agent token  {TOKEN}" in out
        curl = out[out.index("curl -s") : out.index("Or ask a yes/no question")]
        assert "countersign.Client(" in out[out.index("Or ask a yes/no question") :]
        words = shlex.split(curl.replace("\\\n", " "))
        api_url = words[2]
        headers = dict(
            header.split(": ", 1) for flag, header in itertools.pairwise(words) if flag == "-H"
        )
        body = json.loads(words[words.index("-d") + 1])

        async with aiohttp.ClientSession() as http:
            async with http.get(page_url.group(1)) as page:
                assert page.status == 200
                assert "Who am I" in await page.text()
            async with http.post(api_url, data=json.dumps(body), headers=headers) as proposed:
                answer = await proposed.json()
                assert proposed.status == 201, answer
        assert answer["status"] == "pending"
        assert (tmp_path / "data" / "countersign.toml").exists()
        assert (tmp_path / "data" / "countersign.sqlite").exists()

        process.send_signal(signal.SIGTERM)
        async with asyncio.timeout(STOP_SECONDS):
            code = await process.wait()
        assert code == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


def test_the_readmes_first_command_starts_the_sandbox() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    first_block = readme.split("```sh\n", 1)[1].split("```", 1)[0]
    assert first_block.splitlines()[0].startswith("make sandbox ")
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    recipe = makefile.split("\nsandbox:", 1)[1].split("\n\n", 1)[0]
    assert "countersign sandbox" in recipe
    assert "(docs/sandbox.png)" in readme
    assert (REPO / "docs" / "sandbox.png").stat().st_size > 10_000
