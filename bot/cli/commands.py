"""``countersign``'s server commands: serve, check-config, audit verify and export, sandbox, bench.

Reached through the package's entry (bot/cli/__init__.py), which hands the agent-side commands
over before this is imported."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import gc
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from aiohttp import web

from bot.app import build_app
from bot.audit.commands import audit_anchor, audit_verify
from bot.audit.export import ExportFormat, parse_since, write_export
from bot.bench import add_bench_arguments, bench_command
from bot.monitoring.health import SlackUnusable
from bot.monitoring.logs import LEVELS, configure_logging, log_level
from bot.monitoring.version import countersign_version
from bot.operators.commands import add_operator_commands, run_operator_command
from bot.operators.duty_check import separation_warnings
from bot.operators.explain import explain
from bot.operators.lease_check import lease_warnings
from bot.sandbox import DEFAULT_PORT, run_sandbox
from bot.settings import (
    ConfigError,
    Settings,
    is_user_group,
    load_settings,
    port_clashes,
    slack_settings,
)
from bot.standing.review import review_stats_command
from contracts.redaction import shown_store_url
from store.base import StoreError
from store.open import open_store
from store.protocol import Store

__all__ = ["main"]

#: the command line's logger, named after its entry point (also when run as `python -m bot.cli`)
log = logging.getLogger("bot.cli")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="countersign", description="Human approval for AI agents' actions."
    )
    parser.add_argument(
        "--config",
        type=Path,
        default=None,
        help="the TOML configuration (default: $COUNTERSIGN_CONFIG or ./countersign.toml)",
    )
    parser.add_argument(
        "--log-level",
        choices=LEVELS,
        type=str.lower,
        default=None,
        help="log this and above (default: $COUNTERSIGN_LOG_LEVEL, else info)",
    )
    parser.add_argument(
        "--version", action="version", version=f"countersign {countersign_version()}"
    )
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the Slack app and the agent API")
    # listed for --help; bot/cli/__init__.py hands them to the client before this is imported
    commands.add_parser("mcp", help="the MCP server for agents (as countersign-mcp)")
    commands.add_parser(
        "claude-hook", help="Claude Code's PreToolUse hook (as countersign-claude-hook)"
    )
    serve.add_argument("--host", default=None, help="override [server].host")
    serve.add_argument("--port", type=int, default=None, help="override [server].port")
    serve.add_argument(
        "--slack-port",
        type=int,
        default=None,
        help="override [server].slack_port: also serve Slack's /slack/events on this port",
    )
    serve.add_argument(
        "--allow-offline",
        action="store_true",
        help="start even when Slack refuses the bot token or cannot be reached (/readyz says so)",
    )
    commands.add_parser("check-config", help="check the configuration and policy, then exit")
    audit = commands.add_parser("audit", help="the audit log")
    audit_commands = audit.add_subparsers(dest="audit_command", required=True)
    verify = audit_commands.add_parser("verify", help="check the audit log's hash chain")
    verify.add_argument(
        "--anchors",
        type=Path,
        default=None,
        help="also check the log against the anchors in this file (from `audit anchor`)",
    )
    audit_commands.add_parser(
        "anchor", help="write the chain's head where [audit] says, outside the database"
    )
    export = audit_commands.add_parser(
        "export", help="write the audit log with its hash chain, to archive or verify elsewhere"
    )
    export.add_argument(
        "--since", required=True, help="from this date (YYYY-MM-DD, UTC) or ISO date and time"
    )
    export.add_argument("--format", choices=("jsonl", "csv"), default="jsonl")
    export.add_argument("--output", type=Path, default=None, help="the file (default: stdout)")
    policy = commands.add_parser("policy", help="the policy table")
    policy_commands = policy.add_subparsers(dest="policy_command", required=True)
    explain_parser = policy_commands.add_parser(
        "explain", help="what the policy decides for one request, and why"
    )
    explain_parser.add_argument("--operation", required=True, help="the operation's name")
    explain_parser.add_argument(
        "--request", required=True, type=Path, help="a JSON file with the model-facing request"
    )
    explain_parser.add_argument(
        "--requester", required=True, help="the accountable human's Slack user id"
    )
    explain_parser.add_argument("--agent", default=None, help="the agent (default: the first)")
    policy_commands.add_parser(
        "review-stats",
        help="sampled automatic approvals: reviewed, flagged and the miss rate, per rule",
    )
    add_operator_commands(commands, policy_commands)
    sandbox = commands.add_parser(
        "sandbox", help="try it all in a browser: Countersign, a local Slack and its demo config"
    )
    sandbox.add_argument(
        "--host", default="127.0.0.1", help="where to listen (default: %(default)s)"
    )
    sandbox.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help="the page's port (default: %(default)s)"
    )
    sandbox.add_argument(
        "--api-port",
        type=int,
        default=None,
        help="Countersign's agent API port (default: --port + 1)",
    )
    sandbox.add_argument(
        "--data-dir", type=Path, default=None, help="keep the store here (default: a temporary one)"
    )
    sandbox.add_argument("--demo", action="store_true", help="submit the demo proposals at start")
    add_bench_arguments(
        commands.add_parser(
            "bench", help="measure Countersign against floors measured in the same run"
        )
    )
    args = parser.parse_args(argv)

    try:
        level = log_level(args.log_level)
    except ValueError as error:
        print(error, file=sys.stderr)
        return 2
    configure_logging(level)
    if args.command == "bench":  # generates its own configuration, like the sandbox
        return bench_command(args)
    if args.command == "sandbox":  # its own demo configuration and secrets, not --config's
        if args.config is not None:
            print(f"note: the sandbox runs its demo configuration; {args.config} is not read")
        return run_sandbox(
            host=args.host,
            port=args.port,
            api_port=args.api_port,
            data_dir=args.data_dir,
            agent_token=os.environ.get("COUNTERSIGN_SANDBOX_AGENT_TOKEN") or None,
            demo=args.demo,
        )
    try:
        settings = load_settings(args.config)
    except ConfigError as error:
        print("The configuration has problems:", file=sys.stderr)
        for problem in error.problems:
            print(f"  - {problem}", file=sys.stderr)
        if args.command == "serve":
            # serve needs the Slack secrets too: say so now rather than on the next run
            _report_missing_slack(slack_settings(os.environ).missing())
        return 2

    if args.command == "check-config":
        return _check_config(settings)
    ran = run_operator_command(args, settings)
    if ran is not None:
        return ran
    if args.command == "policy" and args.policy_command == "review-stats":
        return asyncio.run(review_stats_command(settings, sys.stdout, sys.stderr))
    if args.command == "policy":
        try:
            request_text = args.request.read_text(encoding="utf-8")
        except OSError as error:
            print(f"--request: cannot read {args.request}: {error}", file=sys.stderr)
            return 2
        return asyncio.run(
            explain(
                settings,
                operation=args.operation,
                request_text=request_text,
                requester=args.requester,
                agent=args.agent,
                out=sys.stdout,
            )
        )
    if args.command == "audit" and args.audit_command == "export":
        return asyncio.run(_audit_export(settings, args.since, args.format, args.output))
    if args.command == "audit" and args.audit_command == "anchor":
        return asyncio.run(audit_anchor(settings, sys.stdout, sys.stderr))
    if args.command == "audit":
        return asyncio.run(audit_verify(settings, args.anchors, sys.stdout, sys.stderr))
    overrides = {"host": args.host, "port": args.port, "slack_port": args.slack_port}
    return _serve(settings, overrides, allow_offline=args.allow_offline)


def _role_summary(role: str, members: frozenset[str]) -> str:
    groups = sum(1 for member in members if is_user_group(member))
    people = len(members) - groups
    parts = [f"{people} {'person' if people == 1 else 'people'}"]
    if groups:
        parts.append(f"{groups} user group{'' if groups == 1 else 's'}")
    return f"{role} ({', '.join(parts)})"


def _check_config(settings: Settings) -> int:
    print(f"{settings.path}: OK")
    print(f"  operations: {', '.join(settings.registry.names()) or 'none'}")
    print(f"  agents: {', '.join(settings.agents) or 'none'}")
    print(f"  roles: {', '.join(_role_summary(r, m) for r, m in settings.roles.items()) or 'none'}")
    print(f"  policy rules: {len(settings.policy.rules)} (no match denies)")
    print(f"  audit anchors: {settings.audit.summary()}")
    missing = settings.slack.missing()
    for problem in missing:
        print(f"  note: {problem}")
    for warning in [*separation_warnings(settings), *lease_warnings(settings)]:
        print(f"  warning: {warning}")
    return 0


async def _audit_export(
    settings: Settings, since_text: str, fmt: ExportFormat, output: Path | None
) -> int:
    try:
        since = parse_since(since_text)
    except ValueError as error:
        print(error, file=sys.stderr)
        return 2
    try:
        store = await open_store(settings.store.url, pool_size=settings.store.pool_size)
    except StoreError as error:
        print(
            f"cannot open the store {shown_store_url(settings.store.url)}: {error}",
            file=sys.stderr,
        )
        return 2
    try:
        entries = await store.audit_log()
    finally:
        await store.close()
    if output is None:
        count = write_export(entries, sys.stdout, since=since, fmt=fmt)
    else:
        try:
            with output.open("w", encoding="utf-8", newline="") as out:
                count = write_export(entries, out, since=since, fmt=fmt)
        except OSError as error:
            print(f"--output: cannot write {output}: {error.strerror or error}", file=sys.stderr)
            return 2
    print(f"exported {count} audit entries since {since.isoformat()}", file=sys.stderr)
    return 0


def _serve(settings: Settings, overrides: dict[str, object], *, allow_offline: bool = False) -> int:
    """``overrides``: ``[server]``'s host, port and slack_port as given on the command line
    (None: as the file says)."""
    missing = settings.slack.missing()
    if missing:
        _report_missing_slack(missing)
        return 2

    given = {key: value for key, value in overrides.items() if value is not None}
    if given:  # Slack's own port (server.slack_port) listens on the same host
        settings = dataclasses.replace(settings, server=settings.server.model_copy(update=given))
    clashes = port_clashes(settings.server, settings.monitoring)
    for clash in clashes:
        print(f"countersign serve: {clash}", file=sys.stderr)
    if clashes:
        return 2
    opened: list[Store] = []

    async def make() -> web.Application:
        store = await open_store(
            settings.store.url,
            durable=settings.store.durable,
            pool_size=settings.store.pool_size,
        )
        opened.append(store)
        app = build_app(settings, store, allow_offline=allow_offline)

        async def close_store(app: web.Application) -> None:
            await store.close()

        async def stopping(app: web.Application) -> None:
            log.info("Countersign stopping: finishing the requests under way")

        app.on_shutdown.append(stopping)
        app.on_cleanup.append(close_store)
        return app

    bind_host, bind_port = settings.server.host, settings.server.port

    def listening(*_: object) -> None:
        # instead of aiohttp's "Running on" banner on stdout: one structured line, once bound
        log.info("Countersign listening on http://%s:%d", bind_host, bind_port)
        _settle_heap()

    _use_fast_event_loop()
    try:
        web.run_app(
            make(),
            host=bind_host,
            port=bind_port,
            access_log=logging.getLogger("aiohttp.access") if settings.server.access_log else None,
            print=listening,
        )
    except (SlackUnusable, StoreError) as unusable:
        # an unreachable store or Slack is the operator's to fix, not a bug: one line, no
        # traceback (--allow-offline is about Slack; nothing is served without the store)
        print(f"countersign serve cannot start: {unusable}", file=sys.stderr)
        # aiohttp does not clean up after a start that failed: close the store here (an
        # SQLite store's thread would keep the process alive), on a loop of its own
        for store in opened:
            with contextlib.suppress(StoreError, RuntimeError, OSError):
                asyncio.run(store.close())
        return 2
    log.info("Countersign stopped")
    return 0


def _use_fast_event_loop() -> None:
    """Serve on uvloop where it is installed (everywhere but Windows): the same asyncio API on
    libuv, whose scheduling and sockets cost less per request than the default loop's."""
    try:
        import uvloop
    except ImportError:  # Windows: the default loop
        return
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    log.info("event loop: uvloop")


def _settle_heap() -> None:
    """Once started: keep what startup built (modules, the app, its models and schemas, some
    90,000 objects) out of the cyclic garbage collector's passes. Every full pass walked them
    all, stopping the event loop for up to 80 ms each (about 0.8 s of CPU in a minute of the
    benchmark's load), and a click arriving meanwhile waited; after this a full pass walks what
    was made since, up to about 25 ms. The garbage startup left is collected first."""
    gc.collect()
    gc.freeze()
    log.info(
        "%d startup objects kept out of the garbage collector's passes",
        gc.get_freeze_count(),
        extra={"event": "server.heap_settled", "objects": gc.get_freeze_count()},
    )


def _report_missing_slack(missing: list[str]) -> None:
    if not missing:
        return
    print("countersign serve cannot start:", file=sys.stderr)
    for problem in missing:
        print(f"  - {problem}", file=sys.stderr)
    print(
        "Create the Slack app from manifest.yml (see README), then export these.",
        file=sys.stderr,
    )


if __name__ == "__main__":
    sys.exit(main())
