"""What an operator runs beside ``serve``: backup and restore, migrations, retention, and the
policy simulator, each a command of ``countersign`` (wired in ``bot.operators.commands``).

- ``backup``: ``countersign backup`` and ``restore`` (SQLite's online backup; pg_dump's advice)
- ``upgrade``: ``countersign migrate [--check]``
- ``retention``: ``countersign retention run``: archive decided proposals, then remove them
- ``simulate``: ``countersign policy simulate`` and ``policy export-calls`` (``calls``: what it
  replays and finds, ``report``: what it prints, ``clicks``: messages, digests and clicks)
- ``explain``: ``countersign policy explain``
- ``duty_check``: ``check-config``'s warning about separation of duties resting on an agent's word
- ``lease_check``: ``check-config``'s and ``serve``'s warning about a webhook target that may still
  be answering when its execution lease ends

The names below are imported from their module when first asked for, so that importing one
module of this package imports neither the others nor the app they need.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot import exported_from

if TYPE_CHECKING:
    from bot.operators.backup import backup_command, restore_command
    from bot.operators.commands import add_operator_commands, run_operator_command
    from bot.operators.retention import retention_command
    from bot.operators.simulate import export_calls_command, simulate
    from bot.operators.upgrade import migrate_command

__all__ = [
    "add_operator_commands",
    "backup_command",
    "export_calls_command",
    "migrate_command",
    "restore_command",
    "retention_command",
    "run_operator_command",
    "simulate",
]

#: the module of this package that defines each public name
_DEFINED_IN = {
    "add_operator_commands": "commands",
    "backup_command": "backup",
    "export_calls_command": "simulate",
    "migrate_command": "upgrade",
    "restore_command": "backup",
    "retention_command": "retention",
    "run_operator_command": "commands",
    "simulate": "simulate",
}

__getattr__ = exported_from(__name__, _DEFINED_IN)
