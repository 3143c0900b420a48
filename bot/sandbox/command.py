"""``countersign sandbox``: start it, say where to go, run until stopped."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from pathlib import Path
from typing import Final

from bot.sandbox.server import running_sandbox

__all__ = ["DEFAULT_PORT", "run_sandbox"]

DEFAULT_PORT: Final = 8800


def run_sandbox(
    *,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    api_port: int | None = None,
    data_dir: Path | None = None,
    agent_token: str | None = None,
    demo: bool = False,
) -> int:
    """Run until Ctrl-C or SIGTERM; the exit status of ``countersign sandbox``."""
    if api_port is None:
        api_port = port + 1 if port else 0
    try:
        asyncio.run(_serve(host, port, api_port, data_dir, agent_token, demo))
    except KeyboardInterrupt:
        pass
    except OSError as error:
        print(
            f"countersign sandbox cannot listen on {host} (ports {port} and {api_port}): {error}."
            " Pass --port (and --api-port) to use others; 0 picks free ones.",
            file=sys.stderr,
        )
        return 2
    return 0


async def _serve(
    host: str, port: int, api_port: int, data_dir: Path | None, token: str | None, demo: bool
) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    with contextlib.suppress(NotImplementedError):
        loop.add_signal_handler(signal.SIGTERM, stop.set)
    async with running_sandbox(
        host=host, port=port, api_port=api_port, data_dir=data_dir, agent_token=token
    ) as sandbox:
        print(sandbox.banner(), flush=True)
        if host not in ("127.0.0.1", "localhost", "::1"):
            print(
                f"\nWarning: listening on {host}. The sandbox has no login: anyone who can reach"
                " it can act as anyone.",
                flush=True,
            )
        if demo:
            made = await sandbox.submit_demo()
            print(f"\nSubmitted {len(made)} demo proposals: open the page to see them.", flush=True)
        await stop.wait()
