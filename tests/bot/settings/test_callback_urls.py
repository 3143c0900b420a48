"""Callback URLs as an agent's settings allow them, piece by piece: prefixes, parsed URLs, and
hosts written as numbers."""

from __future__ import annotations

import ipaddress
import socket

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from bot.settings.callback_urls import (
    DestinationRefused,
    numeric_ipv4,
    parse_destination,
    parse_prefix,
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


# --- IPv4 addresses in the forms the system reads as addresses -----------------------------------


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
