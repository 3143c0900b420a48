"""The operator's commands of ``countersign``: their arguments and how each is run.

``bot/cli/commands.py`` adds them with :func:`add_operator_commands` and hands the parsed
arguments to :func:`run_operator_command`, which answers None for a command that is not one of
these.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from bot.operators.backup import backup_command, restore_command
from bot.operators.retention import retention_command
from bot.operators.simulate import export_calls_command, simulate_command
from bot.operators.suggest import suggest_command
from bot.operators.upgrade import migrate_command
from bot.settings import Settings

__all__ = ["add_operator_commands", "run_operator_command"]


def add_operator_commands(commands: Any, policy_commands: Any) -> None:
    """Add backup, restore, migrate and retention to ``commands``, and simulate and
    export-calls to ``policy_commands`` (argparse's sub-parser actions)."""
    backup = commands.add_parser(
        "backup", help="copy a SQLite store while it serves, and check the copy"
    )
    backup.add_argument("path", type=Path, help="the backup file to write (must not exist)")
    restore = commands.add_parser(
        "restore", help="replace a stopped SQLite store with a backup, then verify its audit log"
    )
    restore.add_argument("path", type=Path, help="the backup file (from `countersign backup`)")
    restore.add_argument(
        "--force", action="store_true", help="replace the store even though it exists"
    )
    migrate = commands.add_parser("migrate", help="apply the pending schema migrations")
    migrate.add_argument(
        "--check",
        action="store_true",
        help="change nothing; exit 1 when migrations are pending, 0 when none are",
    )
    retention = commands.add_parser(
        "retention", help="archive decided proposals older than an age, then remove them"
    )
    retention_commands = retention.add_subparsers(dest="retention_command", required=True)
    run = retention_commands.add_parser(
        "run", help="archive and remove what [retention] archive_after (or --older-than) says"
    )
    run.add_argument(
        "--older-than",
        default=None,
        help="an age of at least a day, such as 90d or 36h (default: the setting)",
    )
    run.add_argument(
        "--archive-dir",
        type=Path,
        default=None,
        help="where the archive goes (default: [retention] archive_dir)",
    )
    simulate = policy_commands.add_parser(
        "simulate", help="replay calls through the policy: auto, ask and deny per rule"
    )
    simulate.add_argument("calls", type=Path, help="a JSON Lines file of calls (export-calls)")
    simulate.add_argument(
        "--config",
        dest="new_config",
        metavar="NEW.toml",
        type=Path,
        default=None,
        help="a new configuration: replay the calls through it too and list what changes "
        "(the current one is countersign's own --config)",
    )
    simulate.add_argument(
        "--grant",
        action="append",
        default=[],
        metavar="RULE:ARGS",
        help="what if a lead granted this standing rule: "
        "RULE:agent=NAME,ceiling=VALUE[,uses=N][,for=DURATION][,by=USER][,ARG=VALUE...] "
        "(repeatable)",
    )
    simulate.add_argument("--json", action="store_true", help="the report as JSON")
    simulate.add_argument(
        "--without-store",
        action="store_true",
        help="leave the store's standing rules out (replay with the configuration alone)",
    )
    suggest = policy_commands.add_parser(
        "suggest", help="changes that save clicks without loosening control, as a diff"
    )
    suggest.add_argument(
        "calls", type=Path, nargs="?", default=None, help="a JSON Lines file of calls with verdicts"
    )
    suggest.add_argument(
        "--since", default=None, help="read the store's calls and decisions from this date instead"
    )
    suggest.add_argument(
        "--ceiling",
        default=None,
        help="the most a standing rule may approve without a click for an irreversible "
        "operation, such as '50.00 USD' (without it: no standing rule for those)",
    )
    suggest.add_argument("--json", action="store_true", help="the suggestions as JSON")
    export = policy_commands.add_parser(
        "export-calls", help="write the agents' calls from the store, for policy simulate"
    )
    export.add_argument(
        "--since", required=True, help="from this date (YYYY-MM-DD, UTC) or ISO date and time"
    )
    export.add_argument("--output", type=Path, default=None, help="the file (default: stdout)")


def run_operator_command(args: argparse.Namespace, settings: Settings) -> int | None:
    """Run the operator's command ``args`` names; None when it names another command."""
    out, err = sys.stdout, sys.stderr
    if args.command == "backup":
        return asyncio.run(backup_command(settings, args.path, out, err))
    if args.command == "restore":
        return asyncio.run(restore_command(settings, args.path, force=args.force, out=out, err=err))
    if args.command == "migrate":
        return asyncio.run(migrate_command(settings, check=args.check, out=out, err=err))
    if args.command == "retention":
        return asyncio.run(
            retention_command(
                settings, older_than=args.older_than, archive_dir=args.archive_dir, out=out, err=err
            )
        )
    if args.command == "policy" and args.policy_command == "simulate":
        return asyncio.run(
            simulate_command(
                settings,
                args.calls,
                args.new_config,
                out,
                err,
                grants=args.grant,
                as_json=args.json,
                use_store=not args.without_store,
            )
        )
    if args.command == "policy" and args.policy_command == "suggest":
        return asyncio.run(
            suggest_command(
                settings, args.calls, args.since, args.ceiling, out, err, as_json=args.json
            )
        )
    if args.command == "policy" and args.policy_command == "export-calls":
        return asyncio.run(export_calls_command(settings, args.since, args.output, out, err))
    return None
