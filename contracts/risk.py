"""What the policy may decide for each risk class.

``read`` operations may run automatically, unconditionally. ``reversible`` writes may run
automatically only within limits: an ``auto`` rule for one needs at least one ``when``
condition. ``irreversible`` effects (money, messages to outsiders, deletions) are asked for or
denied, never run by a policy rule alone. A rule for every operation (``"*"``) cannot carry
conditions, so it may be ``auto`` only while every configured operation is a read.

:func:`auto_rule_problems` is what :meth:`contracts.policy.PolicyTable.load` checks for each
``auto`` rule; each problem names the field at fault, and the caller prefixes the rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from contracts.base import Risk
from contracts.registry import Registry

__all__ = ["RISK_RANK", "auto_rule_problems"]

#: Queues show the riskiest first; the stores' ``risk_rank`` column holds the same numbers.
RISK_RANK: Final[dict[Risk, int]] = {"irreversible": 0, "reversible": 1, "read": 2}

_EVERY: Final = "*"


def auto_rule_problems(*, operation: str, conditions: int, registry: Registry) -> list[str]:
    """Why an ``auto`` rule for ``operation`` (with ``conditions`` conditions) is not allowed."""
    if operation == _EVERY:
        return _every_operation_problems(registry)
    if operation not in registry:
        return []  # an unknown operation is reported on its own, by the reader
    risk = registry.get(operation).risk
    if risk == "irreversible":
        return [
            f"field 'decision': 'auto' is not allowed for operation {operation!r}, which is "
            "irreversible (risk 'irreversible': money or an effect outside that cannot be "
            "undone); irreversible effects are asked for or denied: use 'ask' or 'deny'"
        ]
    if risk == "reversible" and conditions == 0:
        return [
            f"field 'when': operation {operation!r} is a reversible write (risk "
            "'reversible'), so an 'auto' rule for it needs at least one condition, to run "
            "automatically only within limits (such as "
            "when = [{ field = \"amount_cents\", lte = 5000 }]); or use 'ask'"
        ]
    return []


def _every_operation_problems(registry: Registry) -> list[str]:
    irreversible = _named(registry, "irreversible")
    reversible = _named(registry, "reversible")
    if irreversible:
        return [
            "field 'operation': an 'auto' rule for every operation ('*') would run "
            f"irreversible operation(s) {irreversible} without asking anyone; irreversible "
            "effects are asked for or denied: write an 'auto' rule for each read or "
            "reversible operation instead"
        ]
    if reversible:
        return [
            "field 'operation': an 'auto' rule for every operation ('*') cannot have "
            f"conditions, so it would run reversible operation(s) {reversible} without "
            "limits; write an 'auto' rule with 'when' conditions for each of them instead"
        ]
    return []


def _named(registry: Registry, risk: Risk) -> str:
    names: Sequence[str] = sorted(op.name for op in registry if op.risk == risk)
    return ", ".join(repr(name) for name in names)
