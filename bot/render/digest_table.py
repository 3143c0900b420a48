"""A digest's items as one table: the preview fields every item shows alike (once), the columns
where they differ, and the total of the operation's money over the pending items (its first money
field in minor units, from the frozen arguments). The digest message (bot/render/digest.py) and
its Review all… modal (bot/render/digest_review.py) show it. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot.render.inert import inert
from contracts.formats import Formats, format_money, money_currency
from store.proposals import Proposal, Status

__all__ = ["Table", "compact_table", "total_text"]


@dataclass(frozen=True)
class Table:
    """A digest's items as a table: the preview fields every item shows alike (once), the labels
    of those that differ (a column each, in the preview's order), whether the titles differ,
    the agent's words when every item has the same, and the total of the operation's money."""

    common: tuple[tuple[str, str], ...]
    columns: tuple[str, ...]
    titles_differ: bool
    same_reason: str | None
    total: tuple[str, dict[str, int]] | None  #: (label, minor units by currency)
    money_field: str | None


def compact_table(items: Sequence[Proposal], formats: Formats) -> Table:
    """What :func:`digest_message` shows once and what it shows per item."""
    labels: list[str] = []
    for proposal in items:
        for f in proposal.preview.fields:
            if f.label not in labels:
                labels.append(f.label)
    values = [{f.label: f.value for f in p.preview.fields} for p in items]
    common = tuple(
        (label, values[0][label])
        for label in labels
        if all(label in v for v in values) and len({v[label] for v in values}) == 1
    )
    shared = {label for label, _ in common}
    columns = tuple(label for label in labels if label not in shared)
    reasons = {p.agent_reason for p in items}
    same_reason = next(iter(reasons)) if len(reasons) == 1 and len(items) > 1 else None
    money_field = _money_field(items, formats)
    total = None
    if money_field is not None:
        fmt = formats[money_field]
        sums: dict[str, int] = {}
        counted_items = [p for p in items if p.status is Status.PENDING] or list(items)
        for p in counted_items:
            amount = p.arguments.get(money_field)
            currency = money_currency(fmt, p.arguments) or "XXX"
            if isinstance(amount, int) and not isinstance(amount, bool):
                sums[currency] = sums.get(currency, 0) + amount
        total = (fmt.label, sums)
    return Table(
        common=common,
        columns=columns,
        titles_differ=len({p.preview.title for p in items}) > 1,
        same_reason=same_reason,
        total=total,
        money_field=money_field,
    )


def _money_field(items: Sequence[Proposal], formats: Formats) -> str | None:
    """The operation's money: its first declared money field in minor units that every item
    holds as a whole number (a refund's amount), or None."""
    for name, fmt in formats.items():
        if fmt.kind != "money" or not fmt.minor_units:
            continue
        if all(
            isinstance(p.arguments.get(name), int) and not isinstance(p.arguments.get(name), bool)
            for p in items
        ):
            return name
    return None


def total_text(table: Table, pending: int, items: int) -> str | None:
    """ "*Total amount* of the 3 pending: 45.00 USD", or None when the operation has no money."""
    if table.total is None:
        return None
    label, sums = table.total
    shown = " + ".join(
        format_money(amount, currency).replace(" XXX", " (currency unknown)")
        for currency, amount in sorted(sums.items())
    )
    whose = f"the {pending:,} pending" if pending else f"all {items:,}"
    return f"*Total {inert(label.lower())}* of {whose}: {shown or 'none'}"
