"""Where Countersign may send an agent's callbacks: the addresses.

An agent names its ``callback_url``; the agent is untrusted, so the URL is data to check, never a
destination to trust. Its form and whether it falls under the agent's ``callback_url_prefixes``
are read with the settings (bot/settings/callback_urls.py); here, where it leads: its host must not
be, or resolve to, an internal address (:func:`address_refusal`), unless the operator set
``callback_allow_private`` for the agent. Cloud metadata endpoints, unspecified, multicast and
reserved addresses are refused even then.

The same check runs at submission (so the agent hears at once) and again on every delivery, on
the address the connection then uses (bot/api/callback_http.py), so a name cannot rebind between.

A host the system reads as an IPv4 address (``127.1``, ``2130706433``: see
:func:`bot.settings.callback_urls.numeric_ipv4`) is that address, refused or allowed as it is, at
submission and at delivery alike, without asking a resolver. An allowed address must be written
in the usual form (``127.0.0.1``): the HTTP client refuses the other forms itself.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable
from typing import Final

from bot.settings.callback_urls import (
    AgentDestinations,
    Destination,
    DestinationRefused,
    allowed_destination,
    is_ip_address,
)
from contracts.base import ContractViolation, FieldProblem
from contracts.redaction import shown_url

__all__ = [
    "CallbackGuard",
    "Resolve",
    "address_refusal",
    "check_address",
    "name_refusal",
    "refuse_before_lookup",
    "system_resolve",
]

#: ``resolve(host, port)``: every address the name has now (text form); OSError if none.
Resolve = Callable[[str, int], Awaitable[list[str]]]

#: Names of cloud metadata services (their addresses are refused by address too).
_METADATA_NAMES: Final = frozenset(
    {
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "instance-data",
        "instance-data.ec2.internal",
        "metadata.azure.internal",
    }
)
_METADATA_ADDRESSES: Final = frozenset(
    {
        ipaddress.ip_address("169.254.169.254"),  # AWS, GCP, Azure, OpenStack, Oracle
        ipaddress.ip_address("169.254.170.2"),  # AWS ECS task metadata
        ipaddress.ip_address("fd00:ec2::254"),  # AWS IMDS over IPv6
        ipaddress.ip_address("100.100.100.200"),  # Alibaba Cloud
    }
)
_CGNAT: Final = ipaddress.ip_network("100.64.0.0/10")
_NAT64: Final = ipaddress.ip_network("64:ff9b::/96")


def address_refusal(address: str, *, allow_private: bool) -> str | None:
    """Why Countersign must not connect to ``address`` (an IP address), or None if it may."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return f"{address!r} is not an IP address"
    embedded = _embedded_ipv4(ip)
    if embedded is not None:
        return address_refusal(str(embedded), allow_private=allow_private)
    if ip in _METADATA_ADDRESSES:
        return "a cloud metadata address"
    if ip.is_unspecified:
        return "an unspecified address"
    if ip.is_multicast:
        return "a multicast address"
    internal = _internal_kind(ip)
    if internal is not None:
        return None if allow_private else internal
    if ip.is_reserved or not ip.is_global:
        return "a reserved address"
    return None


def name_refusal(host: str, *, allow_private: bool) -> str | None:
    """Why a host *name* is refused before resolving it (metadata services, localhost)."""
    name = host.rstrip(".")
    if name in _METADATA_NAMES:
        return "a cloud metadata service"
    if not allow_private and (name == "localhost" or name.endswith(".localhost")):
        return "a loopback name"
    return None


def refuse_before_lookup(destination: Destination, *, allow_private: bool) -> None:
    """The checks that need no DNS: the host's name, or the address it is written as (in any
    form the system reads as an address, bot/settings/callback_urls.py's ``numeric_ipv4``)."""
    refused = name_refusal(destination.host, allow_private=allow_private)
    if refused is None and is_ip_address(destination.host):
        refused = address_refusal(destination.host, allow_private=allow_private)
    if refused is not None:
        raise DestinationRefused(f"its host is {refused}")
    if destination.written is not None:
        raise DestinationRefused(
            f"its host {destination.written!r} is the IP address {destination.host} written in "
            f"another form; write it as {destination.host}"
        )


async def check_address(
    destination: Destination, *, allow_private: bool, resolve: Resolve
) -> list[str]:
    """The addresses to connect to for ``destination``, every one checked; DestinationRefused
    if the name or any address is not allowed. OSError if the name does not resolve."""
    refuse_before_lookup(destination, allow_private=allow_private)
    if is_ip_address(destination.host):
        return [destination.host]
    addresses = await resolve(destination.host, destination.port)
    if not addresses:
        raise OSError(f"{destination.host} has no address")
    for address in addresses:
        why = address_refusal(address, allow_private=allow_private)
        if why is not None:
            raise DestinationRefused(f"its host resolves to {why}")
    return addresses


async def system_resolve(host: str, port: int) -> list[str]:
    """Every address the system resolver gives ``host`` (IPv4 and IPv6), in its order."""
    infos = await asyncio.get_running_loop().getaddrinfo(
        host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
    )
    found: list[str] = []
    for _family, _type, _proto, _name, sockaddr in infos:
        address = str(sockaddr[0])
        if address not in found:
            found.append(address)
    return found


class CallbackGuard:
    """The whole check of a callback URL for one agent, at submission and before delivery."""

    def __init__(self, resolve: Resolve = system_resolve, *, resolve_timeout: float = 2.0) -> None:
        self.resolve = resolve
        self._resolve_timeout = resolve_timeout

    async def problem(self, agent: AgentDestinations, url: str) -> str | None:
        """Why the agent may not name ``url`` as its callback, or None. A name that does not
        resolve now is not refused here: delivery resolves it again and checks then."""
        try:
            destination = allowed_destination(agent, url)
            async with asyncio.timeout(self._resolve_timeout):
                await check_address(
                    destination,
                    allow_private=agent.callback_allow_private,
                    resolve=self.resolve,
                )
        except DestinationRefused as refused:
            return f"{shown_url(url)} {refused.reason}"
        except (OSError, TimeoutError):
            return None
        return None

    async def check_submitted(self, agent: AgentDestinations, url: str | None) -> None:
        """A submission's ``callback_url`` (None when it names none): ContractViolation on the
        field when :meth:`problem` finds one, so nothing is stored."""
        if url is None:
            return
        refused = await self.problem(agent, url)
        if refused is not None:
            raise ContractViolation([FieldProblem(field="callback_url", message=refused)])


def _internal_kind(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """The kinds ``callback_allow_private`` lets an operator allow."""
    if ip.is_loopback:
        return "a loopback address"
    if ip.is_link_local:
        return "a link-local address"
    if ip.version == 4 and ip in _CGNAT:
        return "a shared (carrier-grade NAT) address"
    if ip.is_private and (ip.version == 6 or _rfc1918(ip)):
        return "a private address"
    return None


def _rfc1918(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    return any(
        ip in ipaddress.ip_network(net) for net in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16")
    )


def _embedded_ipv4(
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address,
) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (mapped, 6to4, NAT64), which is where it goes."""
    if not isinstance(ip, ipaddress.IPv6Address):
        return None
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None
