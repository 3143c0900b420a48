"""Callback destinations' addresses: which ones are refused, a resolved name's every address, and
hosts written as numbers (their form is read by bot/settings/callback_urls.py, tested beside it)."""

from __future__ import annotations

import ipaddress

import pytest

from bot.flow.destinations import address_refusal, check_address, refuse_before_lookup
from bot.settings.callback_urls import (
    Destination,
    DestinationRefused,
    numeric_ipv4,
    parse_destination,
)


@pytest.mark.parametrize(
    ("address", "strict", "allowed_private"),
    [
        ("93.184.216.34", None, None),
        ("2606:2800:220:1:248:1893:25c8:1946", None, None),
        ("127.0.0.1", "a loopback address", None),
        ("::1", "a loopback address", None),
        ("::ffff:127.0.0.1", "a loopback address", None),
        ("64:ff9b::7f00:1", "a loopback address", None),
        ("2002:7f00:1::", "a loopback address", None),
        ("10.0.0.1", "a private address", None),
        ("172.16.5.4", "a private address", None),
        ("192.168.1.1", "a private address", None),
        ("fd12::1", "a private address", None),
        ("fe80::1", "a link-local address", None),
        ("169.254.1.1", "a link-local address", None),
        ("100.64.0.1", "a shared (carrier-grade NAT) address", None),
        ("169.254.169.254", "a cloud metadata address", "a cloud metadata address"),
        ("fd00:ec2::254", "a cloud metadata address", "a cloud metadata address"),
        ("100.100.100.200", "a cloud metadata address", "a cloud metadata address"),
        ("0.0.0.0", "an unspecified address", "an unspecified address"),
        ("::", "an unspecified address", "an unspecified address"),
        ("224.0.0.1", "a multicast address", "a multicast address"),
        ("ff02::1", "a multicast address", "a multicast address"),
        ("240.0.0.1", "a reserved address", "a reserved address"),
        ("192.0.2.1", "a reserved address", "a reserved address"),
    ],
)
def test_address_rules(address: str, strict: str | None, allowed_private: str | None) -> None:
    assert address_refusal(address, allow_private=False) == strict
    assert address_refusal(address, allow_private=True) == allowed_private


async def test_every_resolved_address_is_checked_and_one_bad_one_refuses_the_name() -> None:
    async def resolve(host: str, port: int) -> list[str]:
        return ["93.184.216.34", "10.0.0.7"]

    destination = Destination("https", "mixed.example", 443, "/")
    with pytest.raises(DestinationRefused) as refused:
        await check_address(destination, allow_private=False, resolve=resolve)

    assert refused.value.reason == "its host resolves to a private address"
    assert await check_address(destination, allow_private=True, resolve=resolve) == [
        "93.184.216.34",
        "10.0.0.7",
    ]


# --- IPv4 addresses in the forms the system reads as addresses -----------------------------------

LOOPBACK_SPELLINGS = ["127.1", "2130706433", "0177.0.0.1", "0x7f.1", "0x7F000001", "127.0.1"]


@pytest.mark.parametrize("host", LOOPBACK_SPELLINGS)
def test_a_host_the_system_reads_as_an_address_is_that_address(host: str) -> None:
    assert numeric_ipv4(host) == ipaddress.IPv4Address("127.0.0.1")
    destination = parse_destination(f"http://{host}:8080/hooks")
    assert (destination.host, destination.written) == ("127.0.0.1", host.lower())
    with pytest.raises(DestinationRefused, match="its host is a loopback address"):
        refuse_before_lookup(destination, allow_private=False)
    # allowed by address, but written as the HTTP client will not connect to it
    with pytest.raises(DestinationRefused, match=r"another form; write it as 127\.0\.0\.1$"):
        refuse_before_lookup(destination, allow_private=True)
