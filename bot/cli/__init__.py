"""``countersign``: the command line's entry point.

The agent-side commands (``mcp``, ``claude-hook``) belong to the client: they are handed over
here, before anything of the server is imported, and run in this process. Claude Code runs the
hook before every tool call, so what this module imports is paid on each one
(tests/e2e/test_claude_hook.py checks it). Every other command is the server's
(bot/cli/commands.py). ``python -m bot.cli`` runs it too (bot/cli/__main__.py).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from importlib import import_module

__all__ = ["AGENT_SIDE", "READER_GONE", "main"]

#: the agent-side commands and the client module running each (bot imports nothing of the client
#: by name, tests/test_layers.py: the server does not depend on it)
AGENT_SIDE = {"mcp": "countersign.mcp_server", "claude-hook": "countersign.claude_hook"}


def main(argv: Sequence[str] | None = None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    if given and given[0] in AGENT_SIDE:
        command: int = import_module(AGENT_SIDE[given[0]]).main(given[1:])
        return command
    from bot.cli.commands import main as server_main

    try:
        code = server_main(given)
        sys.stdout.flush()  # inside: a reader gone before the end is one too
    except BrokenPipeError:
        return _reader_gone()
    return code


#: A program killed by SIGPIPE exits 128 + 13 in a shell's eyes: `countersign ... | head`.
READER_GONE = 141


def _reader_gone() -> int:
    """Stdout's reader closed it (``| head``): stop quietly, as a Unix tool does, rather than
    with a traceback (the recipe of Python's documentation for SIGPIPE)."""
    # what is left in the buffer can never be written; the interpreter's own flush at exit
    # writes it nowhere instead of printing another error
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return READER_GONE
