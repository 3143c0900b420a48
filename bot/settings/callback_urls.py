"""Callback URLs as an agent's settings allow them: the form of a URL and of a configured prefix,
and whether the one falls under the other. No name is resolved here; where the URL's host may lead
is the flow's check (bot/flow/destinations.py), made at submission and again at every delivery.

An agent names its ``callback_url``; the agent is untrusted, so the URL is data to check, never a
destination to trust. Its form is allowed only when

- the agent has ``callback_url_prefixes`` and the URL falls under one of them, compared on the
  parsed URL: scheme, host (case-insensitive, IDNA), port (default ports made explicit) and the
  path at a segment boundary (``/hooks`` covers ``/hooks`` and ``/hooks/x``, not ``/hooksevil``);
- it carries no userinfo and no fragment, and nothing a server could decode into another path.

A host is an IPv4 address whenever the system would take it for one (:func:`numeric_ipv4`):
``127.1``, ``2130706433``, ``0177.0.0.1`` and ``0x7f.1`` all mean 127.0.0.1 to ``inet_aton``
and ``getaddrinfo``, so they are read as that address (:attr:`Destination.host`, with the form it
was written in kept in :attr:`Destination.written`).
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Final, Protocol

from yarl import URL

__all__ = [
    "AgentDestinations",
    "CallbackPrefix",
    "Destination",
    "DestinationRefused",
    "allowed_destination",
    "covered",
    "is_ip_address",
    "numeric_ipv4",
    "parse_destination",
    "parse_prefix",
]

_DEFAULT_PORTS: Final = {"http": 80, "https": 443}
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
    rewritten = is_ip_address(host) and not is_ip_address(url.raw_host.strip("[]"))
    written = url.raw_host if rewritten else None
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


def allowed_destination(agent: AgentDestinations, url: str) -> Destination:
    """The parsed destination if its form and prefix are allowed for ``agent`` (no DNS); else
    DestinationRefused."""
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


def is_ip_address(host: str) -> bool:
    """``host`` is an IP address in its usual form (as :attr:`Destination.host` writes one)."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _normal_host(raw: str) -> str | None:
    """Lower-case ASCII (IDNA) host, without a trailing dot; IPv6 without brackets."""
    host = raw.strip("[]").lower()
    if is_ip_address(host):
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


def _unsafe_characters(text: str) -> bool:
    return any(c.isspace() or ord(c) < 0x20 or ord(c) == 0x7F or c == "\\" for c in text)
