"""Server processes the benchmark starts: Countersign itself and the bare floors."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import aiohttp

__all__ = ["ServerProcess", "cpu_seconds", "free_port", "rss_bytes", "until_quiet"]

STARTUP_SECONDS = 30.0
STOP_SECONDS = 10.0

#: Quiet: the processes used less than this share of one core over one window of
#: :func:`until_quiet` (a server at rest runs its sweeps and outbox rounds: about 1%).
QUIET_SHARE = 0.1
#: Seconds over which :func:`until_quiet` measures, and the longest it waits in all.
QUIET_WINDOW = 0.5
QUIET_LIMIT = 60.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def rss_bytes(pid: int) -> int | None:
    """The resident set size of process ``pid`` (Linux ``/proc``), or None where unknown."""
    try:
        status = Path(f"/proc/{pid}/status").read_text(encoding="ascii")
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return None


def cpu_seconds(pid: int) -> float | None:
    """The CPU time (user and system) process ``pid`` has used so far, in seconds (Linux
    ``/proc``), or None where unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii")
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()  # after the command's name, which may hold spaces
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def until_quiet(
    cpu: Callable[[], float | None],
    *,
    share: float = QUIET_SHARE,
    window: float = QUIET_WINDOW,
    limit: float = QUIET_LIMIT,
) -> float | None:
    """Wait until processes whose CPU time so far ``cpu`` gives have finished what they were
    doing: less than ``share`` of a core used over ``window`` seconds. The seconds waited, or
    None when they were still busy after ``limit`` seconds, or their CPU time is unknown.

    A scenario that divides the CPU its servers used by the operations it completed starts
    this way, so that it is not charged with the work an earlier scenario left (the posts of
    thousands of proposals the ingest row submitted, say)."""
    start = time.perf_counter()
    before = cpu()
    while before is not None:
        await asyncio.sleep(window)
        after = cpu()
        if after is None:
            return None
        if after - before < share * window:
            return time.perf_counter() - start
        if time.perf_counter() - start >= limit:
            return None
        before = after
    return None


class ServerProcess:
    """``python -m <module> <args>`` listening on 127.0.0.1:<port>; output goes to files.
    ``{port}`` in ``args`` is replaced by that port; ``{slack_port}``, if there, by a second
    free port, Slack's own (``serve --slack-port``: ``slack_url``)."""

    def __init__(self, name: str, module: str, args: Sequence[str], *, logs: Path) -> None:
        self.name = name
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.slack_port: int | None = None
        while any("{slack_port}" in arg for arg in args) and self.slack_port in (None, self.port):
            self.slack_port = free_port()
        #: where Slack's requests go: Slack's own port when it has one, else the main port
        self.slack_url = (
            self.url if self.slack_port is None else f"http://127.0.0.1:{self.slack_port}"
        )
        self._command = [sys.executable, "-m", module, *args]
        self._out = logs / f"{name}.stdout"
        self._err = logs / f"{name}.stderr"
        self._process: asyncio.subprocess.Process | None = None

    @property
    def pid(self) -> int:
        assert self._process is not None, f"{self.name} was not started"
        return self._process.pid

    async def start(self, env: Mapping[str, str], *, health_path: str = "/healthz") -> None:
        command = [
            part.replace("{port}", str(self.port)).replace("{slack_port}", str(self.slack_port))
            for part in self._command
        ]
        with self._out.open("wb") as stdout, self._err.open("wb") as stderr:
            self._process = await asyncio.create_subprocess_exec(
                *command, env=dict(env), stdout=stdout, stderr=stderr
            )
        try:
            await self._wait_until_answering(health_path)
        except BaseException:  # not answering, or the benchmark stopped meanwhile: not left over
            await self.stop()
            raise

    async def _wait_until_answering(self, path: str) -> None:
        deadline = time.monotonic() + STARTUP_SECONDS
        async with aiohttp.ClientSession() as http:
            while time.monotonic() < deadline:
                if self._process is not None and self._process.returncode is not None:
                    raise RuntimeError(f"{self.name} exited before answering\n{self.output()}")
                with contextlib.suppress(aiohttp.ClientError):
                    async with http.get(self.url + path) as answer:
                        if answer.status < 500:
                            return
                await asyncio.sleep(0.05)
        raise RuntimeError(f"{self.name} did not answer in {STARTUP_SECONDS} s\n{self.output()}")

    def rss(self) -> int | None:
        return rss_bytes(self.pid)

    def cpu_seconds(self) -> float | None:
        return cpu_seconds(self.pid)

    async def stop(self) -> None:
        """SIGTERM, then SIGKILL if it does not stop in time."""
        process = self._process
        if process is None or process.returncode is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(process.wait(), timeout=STOP_SECONDS)
        except TimeoutError:
            process.kill()
            await process.wait()

    def output(self) -> str:
        def tail(path: Path) -> str:
            text = path.read_text(errors="replace") if path.exists() else ""
            return text[-4000:]

        return f"--- {self.name} stdout ---\n{tail(self._out)}\n--- stderr ---\n{tail(self._err)}"
