"""Does a suggested standing rule hold on a day it was not drawn from?

``python examples/callmix/heldout.py --from 1 --to 12`` asks ``policy suggest`` (with
``--ceiling "50.00 USD"``) for standing rules on each seeded day N of the mix, then replays day
N + 1 through the careful policy with those grants and without them, as ``policy simulate``
does. Each row compares what the suggestion said with what the next day did: the clicks it saves
and the calls people would reject that it runs without a click (its estimate and 95% bound,
against the calls of day N + 1 that people rejected and that ran). docs/clicks.md gives the
figures of seeds 1 to 12.

The configuration's tokens and webhook secret are read from the environment where set (as the
README's commands set them) and given stand-in values otherwise: nothing is sent anywhere.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from bot.operators.callmix import DEFAULT_CALLS, day
from bot.operators.calls import Call, read_calls
from bot.operators.grants import parse_grant
from bot.operators.report import Report
from bot.operators.simulate import simulate
from bot.operators.suggest import suggest
from bot.settings import Settings, load_settings

CONFIG = Path(__file__).with_name("countersign.toml")
CEILING = "50.00 USD"
#: stand-ins for what the configuration reads from the environment (tokens of 16 characters)
STAND_INS = {
    "CALLMIX_TOKEN_SUPPORT_BOT": "support-bot-token-0123",
    "CALLMIX_TOKEN_BILLING_BOT": "billing-bot-token-0123",
    "CALLMIX_TOKEN_OPS_BOT": "ops-bot-token-0123456",
    "CALLMIX_TOKEN_REPORTS_BOT": "reports-bot-token-0123",
    "CALLMIX_WEBHOOK_SECRET": "callmix-webhook-secret",
}


@dataclass(frozen=True)
class Row:
    """What the suggestion drawn from day ``seed`` said, and what day ``seed + 1`` did."""

    seed: int
    grants: tuple[str, ...]  #: the suggested grants (empty: none suggested)
    saves: float  #: clicks a day it said it saves, on its own day
    likely: float  #: calls a day people would reject that it runs, as it estimated
    at_most: float  #: the same at its 95% bound
    next_saves: int  #: clicks it saved on the next day
    next_standing: int  #: calls the grants ran without a click on the next day
    next_rejected: int  #: of those, calls people rejected
    next_unanswered: int  #: of those, calls nobody answered in time

    def markdown(self) -> str:
        if not self.grants:
            return f"| {self.seed} | none suggested | | | | | |"
        ceilings = ", ".join(_ceiling(grant) for grant in self.grants)
        return (
            f"| {self.seed} | {ceilings} | {self.saves:,.0f} / {self.next_saves:,} "
            f"| {self.next_standing:,} | {self.likely:.1f} (at most {self.at_most:.1f}) "
            f"| {self.next_rejected:,} | {self.next_unanswered:,} |"
        )


HEADER = (
    "| drawn from seed | ceilings suggested (billing-bot, support-bot) | clicks saved a day: "
    "said / next day | run without a click, next day | rejected ones it expected a day "
    "| rejected ones that ran, next day | unanswered ones that ran |\n"
    "| --- | --- | --- | --- | --- | --- | --- |"
)


def _ceiling(grant: str) -> str:
    return next(part for part in grant.split(",") if part.startswith("ceiling=")).removeprefix(
        "ceiling="
    )


def _calls(seed: int, count: int) -> list[Call]:
    lines = "\n".join(json.dumps(call) for call in day(seed, calls=count))
    return read_calls(lines, source=f"seed {seed}")


def _env() -> dict[str, str]:
    """What the configuration reads from the environment: as set, or its stand-in."""
    return {name: os.environ.get(name, value) for name, value in STAND_INS.items()}


def _settings(folder: Path) -> Settings:
    """The careful policy, its store (never opened here) in ``folder``."""
    text = CONFIG.read_text(encoding="utf-8")
    path = folder / CONFIG.name
    path.write_text(text, encoding="utf-8")
    return load_settings(path, _env())


async def compare(settings: Settings, seed: int, count: int = DEFAULT_CALLS) -> Row:
    """The row of the suggestion drawn from day ``seed``, tried on day ``seed + 1``."""
    now = datetime.now(UTC)
    drawn, following = _calls(seed, count), _calls(seed + 1, count)
    suggestions, _ = await suggest(settings, drawn, env=_env(), ceiling=CEILING, now=now)
    standing = next((s for s in suggestions if s.kind == "standing"), None)
    if standing is None:
        return Row(seed, (), 0, 0, 0, 0, 0, 0, 0)
    start = min(call.at for call in following if call.at is not None)
    grants = [
        parse_grant(text, settings, start=start, number=n) for n, text in enumerate(standing.grants)
    ]
    without = Report.of(
        settings, following, await simulate(settings, following, store=None, now=now)
    )
    granted = await simulate(settings, following, store=None, now=now, grants=grants)
    with_grants = Report.of(settings, following, granted)
    return Row(
        seed=seed,
        grants=tuple(standing.grants),
        saves=standing.clicks_saved_per_day,
        likely=standing.likely_rejected_per_day,
        at_most=standing.at_most_rejected_per_day,
        next_saves=without.total.clicks - with_grants.total.clicks,
        next_standing=with_grants.total.standing,
        next_rejected=sum(
            1 for o in with_grants.overridden if o.verdict == "rejected" and o.standing
        ),
        next_unanswered=sum(
            1 for o in with_grants.overridden if o.verdict == "expired" and o.standing
        ),
    )


async def rows(seeds: Sequence[int], count: int = DEFAULT_CALLS) -> list[Row]:
    with tempfile.TemporaryDirectory() as folder:
        settings = _settings(Path(folder))
        return [await compare(settings, seed, count) for seed in seeds]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--from", dest="first", type=int, default=1, help="first seed (1)")
    parser.add_argument("--to", dest="last", type=int, default=12, help="last seed (12)")
    parser.add_argument("--calls", type=int, default=DEFAULT_CALLS, help="calls in a day")
    args = parser.parse_args(argv)
    if args.last < args.first:
        parser.error(f"--to {args.last} is before --from {args.first}")
    found = asyncio.run(rows(range(args.first, args.last + 1), args.calls))
    print(HEADER)
    for row in found:
        print(row.markdown())
    said = sum(row.likely for row in found)
    ran = sum(row.next_rejected for row in found)
    print(f"\nrejected calls expected to run: {said:.1f}; ran: {ran:,}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
