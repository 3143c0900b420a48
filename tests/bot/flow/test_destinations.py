"""Callback destinations, piece by piece: prefixes, parsed URLs and the address rules."""

from __future__ import annotations

import ipaddress
import socket

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from bot.flow.destinations import (
    Destination,
    DestinationRefused,
    address_refusal,
    check_address,
    numeric_ipv4,
    parse_destination,
    parse_prefix,
    refuse_before_lookup,
)


def test_a_prefix_is_compared_on_scheme_host_port_and_whole_path_segments() -> None:
    prefix = parse_prefix("https://Agents.EXAMPLE.com/hooks/")

    assert (prefix.scheme, prefix.host, prefix.port, prefix.path) == (
        "https",
        "agents.example.com",
        443,
        "/hooks",
    )
    assert prefix.covers(parse_destination("https://agents.example.com/hooks"))
    assert prefix.covers(parse_destination("https://agents.example.com:443/hooks/a/b?x=1"))
    assert not prefix.covers(parse_destination("https://agents.example.com/hooksevil"))
    assert not prefix.covers(parse_destination("https://agents.example.com/hook"))
    assert not prefix.covers(parse_destination("http://agents.example.com/hooks/a"))
    assert not prefix.covers(parse_destination("https://agents.example.com:444/hooks/a"))


def test_hosts_are_compared_in_their_idna_form() -> None:
    prefix = parse_prefix("https://bücher.example/hooks")

    assert prefix.host == "xn--bcher-kva.example"
    assert prefix.covers(parse_destination("https://xn--bcher-kva.example/hooks/1"))
    assert prefix.covers(parse_destination("https://BÜCHER.example/hooks/1"))


def test_dot_segments_count_where_the_request_really_goes() -> None:
    destination = parse_destination("https://a.example/hooks/../admin")

    assert destination.path == "/admin"
    assert not parse_prefix("https://a.example/hooks").covers(destination)


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("https://user@a.example/hooks", "userinfo"),
        ("https://u:p@a.example/hooks", "userinfo"),
        ("https://a.example/hooks#top", "fragment"),
        ("https://a.example/hooks/%2F..%2Fadmin", "percent-encode"),
        ("https://a.example/ho oks", "spaces"),
        ("ftp://a.example/hooks", "http:// or https://"),
        ("/hooks", "http:// or https://"),
        ("https://a.example:99999/hooks", "not a valid URL"),
    ],
)
def test_a_callback_url_that_could_be_read_two_ways_is_refused(url: str, why: str) -> None:
    with pytest.raises(DestinationRefused) as refused:
        parse_destination(url)

    assert why in refused.value.reason


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


@given(
    st.lists(
        st.text(alphabet="0123456789abcdefxX", min_size=0, max_size=12), min_size=1, max_size=5
    )
)
def test_numeric_hosts_are_read_as_the_systems_inet_aton_reads_them(parts: list[str]) -> None:
    host = ".".join(parts)
    assume(not host.endswith("."))  # a trailing dot is a resolver's, ignored: tested below
    try:
        expected: ipaddress.IPv4Address | None = ipaddress.IPv4Address(socket.inet_aton(host))
    except OSError:
        expected = None
    assert numeric_ipv4(host) == expected


def test_names_that_only_look_numeric_stay_names() -> None:
    for name in ("1.2.3.4.5", "0x7f.example", "08.1", "1e1", "deadbeef", "1..2"):
        assert numeric_ipv4(name) is None, name
    assert numeric_ipv4("127.1.") == ipaddress.IPv4Address("127.0.0.1")
    assert parse_destination("http://cafe.example/x").written is None
    assert parse_destination("http://[::ffff:127.0.0.1]/x").written is None
