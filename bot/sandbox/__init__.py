"""The local sandbox: Countersign, a local Slack and a page that shows it, in one process."""

from bot.sandbox.server import DEFAULT_PORT, Sandbox, run_sandbox, running_sandbox

__all__ = ["DEFAULT_PORT", "Sandbox", "run_sandbox", "running_sandbox"]
