"""One HTTP/1.1 exchange over a socket: a request with a JSON body, its whole answer.

The light client sends at most a few short requests per process, each on its own connection
(``Connection: close``). http.client would do, but it brings the email package and TLS with it
(a third of the hook's start-up), so this speaks the part of HTTP/1.1 those exchanges use: a
request with ``Content-Length``, an answer delimited by ``Content-Length``, ``chunked`` encoding
or the end of the connection. TLS is loaded only for an ``https://`` address.

A malformed answer raises ConnectionError (an OSError, as every network failure here), so the
caller treats it as the passing failure it is.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping

__all__ = ["Answer", "exchange"]

_MAX_ANSWER = 16 * 1024 * 1024  #: a proposal document is a few kilobytes; this is plenty


class Answer:
    """An HTTP answer: its status, its headers (names in lower case) and its body."""

    __slots__ = ("body", "headers", "status")

    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body


def exchange(
    scheme: str,
    host: str,
    port: int | None,
    method: str,
    target: str,
    headers: Mapping[str, str],
    body: bytes | None,
    timeout: float,
) -> Answer:
    """Send one request to ``host`` and read its answer within ``timeout`` seconds per step."""
    port = port or (443 if scheme == "https" else 80)
    default_port = 443 if scheme == "https" else 80
    authority = host if port == default_port else f"{host}:{port}"
    if ":" in host and not host.startswith("["):  # an IPv6 literal
        authority = f"[{host}]" if port == default_port else f"[{host}]:{port}"
    lines = [f"{method} {target} HTTP/1.1", f"Host: {authority}", "Connection: close"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    if body is not None or method in ("POST", "PUT", "PATCH"):
        lines.append(f"Content-Length: {len(body or b'')}")
    request = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (body or b"")
    with socket.create_connection((host, port), timeout=timeout) as raw:
        connection = raw
        if scheme == "https":
            import ssl

            connection = ssl.create_default_context().wrap_socket(raw, server_hostname=host)
        with connection:
            connection.sendall(request)
            return _read_answer(connection)


def _read_answer(connection: socket.socket) -> Answer:
    received = bytearray()
    while True:
        chunk = connection.recv(65536)
        if not chunk:
            break
        received += chunk
        if len(received) > _MAX_ANSWER:
            raise ConnectionError(f"the answer is larger than {_MAX_ANSWER:,} bytes")
        answer = _complete(bytes(received))
        if answer is not None:
            return answer
    answer = _complete(bytes(received), closed=True)
    if answer is None:
        raise ConnectionError(f"the connection closed after {len(received):,} bytes of an answer")
    return answer


def _complete(data: bytes, *, closed: bool = False) -> Answer | None:
    """The answer ``data`` holds, or None while more is to come."""
    end = data.find(b"\r\n\r\n")
    if end < 0:
        return None
    head = data[:end].decode("latin-1").split("\r\n")
    parts = head[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
        raise ConnectionError(f"not an HTTP answer: {head[0][:100]!r}")
    status = int(parts[1])
    headers: dict[str, str] = {}
    for line in head[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    rest = data[end + 4 :]
    if status in (100, 103):  # an interim answer: the real one follows it
        return _complete(rest, closed=closed)
    if "chunked" in headers.get("transfer-encoding", "").lower():
        decoded = _unchunked(rest)
        return None if decoded is None else Answer(status, headers, decoded)
    length = headers.get("content-length")
    if length is not None:
        if not length.isdigit():
            raise ConnectionError(f"Content-Length is {length!r}; expected a number")
        if len(rest) < int(length):
            return None
        return Answer(status, headers, rest[: int(length)])
    if status in (204, 304):
        return Answer(status, headers, b"")
    return Answer(status, headers, rest) if closed else None


def _unchunked(data: bytes) -> bytes | None:
    """The body of a ``chunked`` answer, or None until its last chunk has come."""
    body = bytearray()
    at = 0
    while True:
        line_end = data.find(b"\r\n", at)
        if line_end < 0:
            return None
        size_text = data[at:line_end].split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            raise ConnectionError(f"a chunk's size is {size_text[:20]!r}; expected hex") from None
        start = line_end + 2
        if size == 0:
            return bytes(body)
        if len(data) < start + size + 2:
            return None
        body += data[start : start + size]
        at = start + size + 2
