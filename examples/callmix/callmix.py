"""A realistic day of calls from a support and operations agent fleet, seeded.

``python examples/callmix/callmix.py --seed 7 --output CALLS.jsonl`` writes one working day of
about 10,000 calls in the format ``countersign policy simulate`` reads. The generator is
``bot/operators/callmix.py`` (installed with Countersign, so that ``countersign bench --only
callmix`` replays the same days); README.md in this folder says what is in a day and why.
"""

from __future__ import annotations

from bot.operators.callmix import DEFAULT_CALLS, MIX, Fleet, day, main, write

__all__ = ["DEFAULT_CALLS", "MIX", "Fleet", "day", "main", "write"]

if __name__ == "__main__":
    raise SystemExit(main())
