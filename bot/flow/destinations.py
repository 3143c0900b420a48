"""Where Countersign may send an agent's callbacks.

An agent names its ``callback_url``; the agent is untrusted, so the URL is data to check, never a
destination to trust. A callback URL is accepted only when

- the agent has ``callback_url_prefixes`` and the URL falls under one of them, compared on the
  parsed URL: scheme, host (case-insensitive, IDNA), port (default ports made explicit) and the
  path at a segment boundary (``/hooks`` covers ``/hooks`` and ``/hooks/x``, not ``/hooksevil``);
- it carries no userinfo and no fragment, and nothing a server could decode into another path;
- its host is not, and does not resolve to, an internal address (:func:`address_refusal`),
  unless the operator set ``callback_allow_private`` for the agent. Cloud metadata endpoints,
  unspecified, multicast and reserved addresses are refused even then.

The same check runs at submission (so the agent hears at once) and again on every delivery, on
the address the connection then uses (bot/api/callback_http.py), so a name cannot rebind between.

A host is an IPv4 address whenever the system would take it for one (:func:`numeric_ipv4`):
``127.1``, ``2130706433``, ``0177.0.0.1`` and ``0x7f.1`` all mean 127.0.0.1 to ``inet_aton``
and ``getaddrinfo``, so they are read as that address, refused or allowed as it is, at
submission and at delivery alike, without asking a resolver. An allowed address must be written
in the usual form (``127.0.0.1``): the HTTP client refuses the other forms itself.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final, Protocol

from yarl import URL

from contracts.base import ContractViolation, FieldProblem
from contracts.redaction import shown_url

__all__ = [
    "AgentDestinations",
    "CallbackGuard",
    "CallbackPrefix",
    "Destination",
    "DestinationRefused",
    "Resolve",
    "address_refusal",
    "check_address",
    "covered",
    "name_refusal",
    "numeric_ipv4",
    "parse_destination",
    "parse_prefix",
    "refuse_before_lookup",
    "system_resolve",
]

#: ``resolve(host, port)``: every address the name has now (text form); OSError if none.
Resolve = Callable[[str, int], Awaitable[list[str]]]

_DEFAULT_PORTS: Final = {"http": 80, "https": 443}
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
#: One part of an IPv4 address as ``inet_aton`` reads it: hexadecimal, octal or decimal.
_NUMBER_PART: Final = re.compile(r"0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*")
#: Percent-encodings a server may decode into a path separator or a dot segment.
_ENCODED_PATH_TRICKS: Final = ("%2e", "%2f", "%5c", "%00")


class DestinationRefused(Exception):
    """The callback destination is not allowed."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Destination:
    """A callback URL as it will be requested: scheme, ASCII host, explicit port, path."""

    scheme: str
    host: str  #: an IP address in its usual form, whatever form the URL wrote it in
    port: int
    path: str
    #: the host as the URL wrote it, when that is an IPv4 address in another form (``127.1``)
    written: str | None = None

    @property
    def origin(self) -> str:
        """``scheme://host:port``, the key for per-destination limits (no path, no secrets)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"


@dataclass(frozen=True, slots=True)
class CallbackPrefix:
    """One entry of ``callback_url_prefixes``, parsed."""

    text: str  #: as configured, for messages
    scheme: str
    host: str
    port: int
    path: str  #: without a trailing slash; "" covers every path

    def covers(self, destination: Destination) -> bool:
        if (destination.scheme, destination.host, destination.port) != (
            self.scheme,
            self.host,
            self.port,
        ):
            return False
        path = destination.path
        return not self.path or path == self.path or path.startswith(self.path + "/")


def parse_prefix(text: str) -> CallbackPrefix:
    """A configured prefix; ValueError says what is wrong (for the configuration's message)."""
    try:
        url = URL(text)
    except ValueError as error:
        raise ValueError(f"not a URL: {error}") from None
    if _unsafe_characters(text):
        raise ValueError("contains spaces, control characters or backslashes")
    if url.scheme not in _DEFAULT_PORTS or not url.raw_host or not url.is_absolute():
        raise ValueError("expected an absolute http:// or https:// URL with a host")
    if url.raw_user is not None or url.raw_password is not None:
        raise ValueError("must not contain a user name or password")
    if url.raw_query_string or url.raw_fragment or "?" in text or "#" in text:
        raise ValueError("must not contain a query or a fragment")
    host = _normal_host(url.raw_host)
    if host is None:
        raise ValueError("its host is not a valid name or address")
    return CallbackPrefix(
        text=text,
        scheme=url.scheme,
        host=host,
        port=url.port or _DEFAULT_PORTS[url.scheme],
        path=url.raw_path.rstrip("/"),
    )


def parse_destination(text: str) -> Destination:
    """The callback URL an agent gave, parsed as the HTTP client will request it."""
    if _unsafe_characters(text):
        raise DestinationRefused("contains spaces, control characters or backslashes")
    try:
        url = URL(text)
        port = url.port
    except ValueError:
        raise DestinationRefused("is not a valid URL") from None
    if url.scheme not in _DEFAULT_PORTS or not url.raw_host or not url.is_absolute():
        raise DestinationRefused("expected an absolute http:// or https:// URL with a host")
    if url.raw_user is not None or url.raw_password is not None or "@" in url.raw_authority:
        raise DestinationRefused("must not contain a user name or password (userinfo)")
    if url.raw_fragment or "#" in text:
        raise DestinationRefused("must not contain a fragment (#...)")
    lowered = url.raw_path.lower()
    if any(trick in lowered for trick in _ENCODED_PATH_TRICKS):
        raise DestinationRefused("its path must not percent-encode '.', '/', '\\' or NUL")
    host = _normal_host(url.raw_host)
    if host is None:
        raise DestinationRefused("its host is not a valid name or address")
    written = url.raw_host if _is_ip(host) and not _is_ip(url.raw_host.strip("[]")) else None
    return Destination(
        scheme=url.scheme,
        host=host,
        port=port or _DEFAULT_PORTS[url.scheme],
        path=url.raw_path or "/",
        written=written,
    )


def numeric_ipv4(host: str) -> ipaddress.IPv4Address | None:
    """The IPv4 address ``host`` means when the system reads it as a number, as ``inet_aton``
    and ``getaddrinfo`` do (and so as a connection to it goes), or None for a name: one to four
    parts separated by dots, each decimal, octal (a leading ``0``) or hexadecimal (``0x``), the
    last filling the bytes left (``127.1`` is 127.0.0.1, ``2130706433`` too). A trailing dot
    is ignored, as a resolver would."""
    parts = host[:-1].split(".") if host.endswith(".") else host.split(".")
    if not 1 <= len(parts) <= 4 or not all(_NUMBER_PART.fullmatch(part) for part in parts):
        return None
    values = [
        int(part, 0) if part[:2].lower() == "0x" else int(part, 8 if part[:1] == "0" else 10)
        for part in parts
    ]
    *leading, last = values
    if any(value > 0xFF for value in leading) or last >= 256 ** (5 - len(parts)):
        return None
    number = last
    for index, value in enumerate(leading):
        number |= value << (8 * (3 - index))
    return ipaddress.IPv4Address(number)


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
    form the system reads as an address, :func:`numeric_ipv4`)."""
    refused = name_refusal(destination.host, allow_private=allow_private)
    if refused is None and _is_ip(destination.host):
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
    if _is_ip(destination.host):
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


class AgentDestinations(Protocol):
    """What the checks read of an agent's settings (bot.settings.AgentSettings)."""

    @property
    def name(self) -> str: ...
    @property
    def callback_url_prefixes(self) -> tuple[str, ...]: ...
    @property
    def callback_allow_private(self) -> bool: ...


def covered(agent: AgentDestinations, destination: Destination) -> bool:
    """The destination falls under one of the agent's prefixes (none configured: never)."""
    return any(parse_prefix(text).covers(destination) for text in agent.callback_url_prefixes)


class CallbackGuard:
    """The whole check of a callback URL for one agent, at submission and before delivery."""

    def __init__(self, resolve: Resolve = system_resolve, *, resolve_timeout: float = 2.0) -> None:
        self.resolve = resolve
        self._resolve_timeout = resolve_timeout

    def allowed_destination(self, agent: AgentDestinations, url: str) -> Destination:
        """The parsed destination if its form and prefix are allowed (no DNS); else refused."""
        if not agent.callback_url_prefixes:
            raise DestinationRefused(
                f"agent {agent.name!r} has no callback_url_prefixes configured, so it may not "
                "name a callback_url (an operator adds the allowed prefixes to its "
                f"[agents.{agent.name}] table)"
            )
        destination = parse_destination(url)
        if not covered(agent, destination):
            allowed = ", ".join(agent.callback_url_prefixes)
            raise DestinationRefused(
                f"must fall under one of the prefixes configured for agent {agent.name!r}: "
                f"{allowed} (same scheme, host and port; the path at a '/' boundary)"
            )
        return destination

    async def problem(self, agent: AgentDestinations, url: str) -> str | None:
        """Why the agent may not name ``url`` as its callback, or None. A name that does not
        resolve now is not refused here: delivery resolves it again and checks then."""
        try:
            destination = self.allowed_destination(agent, url)
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


def _normal_host(raw: str) -> str | None:
    """Lower-case ASCII (IDNA) host, without a trailing dot; IPv6 without brackets."""
    host = raw.strip("[]").lower()
    if _is_ip(host):
        return str(ipaddress.ip_address(host))
    number = numeric_ipv4(host)
    if number is not None:
        return str(number)
    try:
        host = host.encode("idna").decode("ascii")
    except UnicodeError:
        return None
    host = host[:-1] if host.endswith(".") else host
    return host or None


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _unsafe_characters(text: str) -> bool:
    return any(c.isspace() or ord(c) < 0x20 or ord(c) == 0x7F or c == "\\" for c in text)
