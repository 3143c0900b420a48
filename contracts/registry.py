"""The operations this deployment offers, listed explicitly (no import-time registration)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from contracts.base import Operation
from contracts.formats import Formats

__all__ = ["Registry", "UnknownOperation"]


class UnknownOperation(LookupError):
    """No operation of that name is configured."""

    def __init__(self, name: str, known: Iterable[str]) -> None:
        self.name = name
        self.known = tuple(sorted(known))
        super().__init__(f"unknown operation {name!r} (known: {', '.join(self.known) or 'none'})")


class Registry:
    def __init__(self, operations: Iterable[Operation[Any, Any]]) -> None:
        self._operations: dict[str, Operation[Any, Any]] = {}
        for operation in operations:
            if operation.name in self._operations:
                raise ValueError(f"operation {operation.name!r} is defined twice")
            self._operations[operation.name] = operation

    def get(self, name: str) -> Operation[Any, Any]:
        try:
            return self._operations[name]
        except KeyError:
            raise UnknownOperation(name, self._operations) from None

    def __contains__(self, name: object) -> bool:
        return name in self._operations

    def __iter__(self) -> Iterator[Operation[Any, Any]]:
        return iter(self._operations.values())

    def formats(self, name: str) -> Formats:
        """How operation ``name`` shows its fields; none for an operation no longer configured
        (its proposals still show, under their fields' names)."""
        operation = self._operations.get(name)
        return {} if operation is None else operation.field_formats()

    def agent_acts(self, name: str) -> bool:
        """Whether the agent carries out operation ``name`` itself once approved (a decision
        operation); False for one no longer configured."""
        operation = self._operations.get(name)
        return operation is not None and operation.agent_acts

    def description(self, name: str) -> str | None:
        """What operation ``name`` does, in the words its definition gives people ("Refund a
        settled card payment, in full or in part."); None for one no longer configured."""
        operation = self._operations.get(name)
        return None if operation is None else operation.description

    def names(self) -> tuple[str, ...]:
        return tuple(self._operations)
