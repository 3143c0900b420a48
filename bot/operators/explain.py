"""``countersign policy explain``: what the policy decides for one request, and why.

The request goes through the operation's contract exactly as a submission would (validated,
resolved into frozen arguments), then every rule is shown in order: which one decides, and for
each rule before it, the first thing that did not hold.
"""

from __future__ import annotations

import json
import secrets
from datetime import UTC, datetime, timedelta
from typing import TextIO

from bot.flow.requesters import RequesterRefused, check_requester
from bot.operators.simulate import ConfiguredMembership
from bot.outbound.http import AiohttpClient
from bot.settings import ROLE_PREFIX, AgentSettings, Settings, is_user_group
from contracts.base import Context, ContractViolation
from contracts.batching import format_after
from contracts.durations import spoken_duration
from contracts.policy import Ask, Auto
from contracts.registry import UnknownOperation

__all__ = ["explain"]


async def explain(
    settings: Settings,
    *,
    operation: str,
    request_text: str,
    requester: str,
    agent: str | None,
    out: TextIO,
) -> int:
    """Print the explanation; returns the process exit code (2 for bad input)."""
    try:
        op = settings.registry.get(operation)
    except UnknownOperation as error:
        print(f"--operation: {error}", file=out)
        return 2
    try:
        data = json.loads(request_text)
    except ValueError as error:
        print(f"--request: not valid JSON: {error}", file=out)
        return 2
    if agent is not None and agent not in settings.agents:
        known = ", ".join(sorted(settings.agents)) or "none"
        print(f"--agent: unknown agent {agent!r} (configured: {known})", file=out)
        return 2
    agent_name = agent or next(iter(settings.agents), "")
    note = None
    if agent_name:
        agent_settings = settings.agents[agent_name]
        try:
            await check_requester(
                agent_settings, requester, roles=settings.roles, directory=ConfiguredMembership()
            )
        except RequesterRefused as refused:
            if _certain(agent_settings, settings):
                print(
                    f"--requester: {refused.message}; a submission naming them is refused "
                    "(403) before the policy is asked (choose --agent)",
                    file=out,
                )
                return 2
            note = (
                f"note: {refused.message}, unless through a Slack user group or a delegation, "
                "which this command does not read"
            )
    http = AiohttpClient()
    try:
        request = op.parse_request(data)
        ctx = Context(now=datetime.now(UTC), http=http, correlation_id=secrets.token_hex(4))
        resolved = await op.resolve(request, ctx)
    except ContractViolation as error:
        print("The request does not satisfy the operation's contract:", file=out)
        for problem in error.problems:
            print(f"  - {problem.field}: {problem.message}", file=out)
        return 2
    finally:
        await http.close()
    arguments = op.dump_arguments(resolved.arguments)
    roles = frozenset(name for name, members in settings.roles.items() if requester in members)
    checks = settings.policy.explain(
        operation=op.name, agent=agent_name, arguments=arguments, requester_roles=roles
    )
    decision = settings.policy.classify(
        operation=op.name, agent=agent_name, arguments=arguments, requester_roles=roles
    )
    print(
        f"{op.name} from agent {agent_name!r} for {requester} "
        f"(roles: {', '.join(sorted(roles)) or 'none'})",
        file=out,
    )
    if note is not None:
        print(note, file=out)
    print(f"preview: {resolved.preview.title}", file=out)
    print(f"frozen arguments: {json.dumps(arguments, sort_keys=True)}", file=out)
    print("rules, in order:", file=out)
    width = max((len(check.rule_id) for check in checks), default=0)
    decided = False
    for number, check in enumerate(checks, start=1):
        if decided:
            verdict = "not reached"
        elif check.decides:
            verdict, decided = f"DECIDES: {check.detail}", True
        else:
            verdict = f"no: {check.detail}"
        print(f"  {number}. {check.rule_id:<{width}}  {check.decision:<4}  {verdict}", file=out)
    if isinstance(decision, Ask):
        print(
            f"decision: ask ({', '.join(decision.approvers)} in {decision.channel}, "
            f"expires after {spoken_duration(decision.expires_after.total_seconds())}, "
            f"quorum {decision.quorum}: {_people(decision.quorum)} needed)",
            file=out,
        )
        if decision.batch is not None:
            window = spoken_duration(decision.batch.window.total_seconds())
            print(
                f"  batch: may wait up to {window} to be shown in one digest with others "
                f"(at most {decision.batch.max}); the expiry counts from when it is shown",
                file=out,
            )
        if decision.then is not None:
            after = decision.then.after
            when = (
                f"{spoken_duration(after.total_seconds())} after it is shown"
                if isinstance(after, timedelta)
                else f"{format_after(after)} of the way from showing to expiry"
            )
            print(
                f"  backup: {', '.join(decision.then.approvers)} may decide too if nobody has "
                f"decided {when}",
                file=out,
            )
    elif isinstance(decision, Auto):
        print("decision: auto (runs without asking)", file=out)
    else:
        print(f"decision: deny: {decision.reason}", file=out)
    return 0


def _people(quorum: int) -> str:
    return "1 approver" if quorum == 1 else f"{quorum} distinct approvers"


def _certain(agent: AgentSettings, settings: Settings) -> bool:
    """Whether the configuration alone tells that ``agent`` may not name a person: it takes no
    delegation, and neither its acts_for nor the roles it names hold a Slack user group (whose
    members this command does not read)."""
    if agent.delegation:
        return False
    roles = [e.removeprefix(ROLE_PREFIX) for e in agent.acts_for if e.startswith(ROLE_PREFIX)]
    members = [m for role in roles for m in settings.roles.get(role, frozenset())]
    return not any(is_user_group(entry) for entry in [*agent.acts_for, *members])
