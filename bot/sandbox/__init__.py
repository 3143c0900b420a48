"""The local sandbox: Countersign, a local Slack and a page that shows it, in one process."""

from bot.sandbox.command import DEFAULT_PORT, run_sandbox
from bot.sandbox.server import Sandbox, Submission, running_sandbox

__all__ = ["DEFAULT_PORT", "Sandbox", "Submission", "run_sandbox", "running_sandbox"]
