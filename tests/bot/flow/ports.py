"""Ports the flow's tests give it in place of Slack and the long polls."""

from __future__ import annotations

from collections.abc import Mapping

from store.proposals import Proposal

__all__ = ["Nobody"]


class Nobody:
    """Slack's ports and the long polls: nobody is told anything (telling fails the test), and
    each role holds the members the configuration lists; user groups hold nobody."""

    async def tell(self, proposal: Proposal | None, channel: str, user: str, text: str) -> None:
        raise AssertionError("no one is told anything here")

    async def role_members(self, roles: Mapping[str, frozenset[str]]) -> dict[str, frozenset[str]]:
        return {role: frozenset(members) for role, members in roles.items()}

    async def group_members(self, group: str) -> frozenset[str]:
        return frozenset()

    def notify(self, proposal_id: str) -> None:
        pass
