"""URLs as Countersign shows them in messages: never a credential.

A webhook or callback URL may carry secrets anywhere: userinfo, the query string, or a token in
the path (``https://hooks.example.com/T000/B000/XXXX``). Outcomes, agent answers, Slack messages,
the audit log and logs therefore show only ``scheme://host[:port]/…`` (:func:`shown_url`), and
text that may quote a URL (a driver's error message) is passed through :func:`scrub`.

A database URL keeps what an operator needs to recognise it, never its password
(:func:`shown_store_url`).
"""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import SplitResult, unquote, urlsplit

__all__ = ["scrub", "shown_store_url", "shown_url"]

_ELIDED: Final = "…"
#: Anything URL-like in free text: scheme://, then up to whitespace or a quote.
_URL_IN_TEXT: Final = re.compile(r"""[A-Za-z][A-Za-z0-9+.-]*://[^\s'"<>`]+""")


def shown_url(url: str) -> str:
    """``scheme://host[:port]/…``: the URL without userinfo, path, query or fragment."""
    parts = _split(url)
    if parts is None or not parts.scheme:
        return "<a URL that does not parse>"
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    shown = f"{parts.scheme}://{host}" + (f":{port}" if port is not None else "")
    rest = parts.path.strip("/") or parts.query or parts.fragment
    return f"{shown}/{_ELIDED}" if rest else f"{shown}/"


def shown_store_url(url: str) -> str:
    """A database URL without its password (``user:***@``), and without its query (which may
    hold a ``password=``); a file path or ``sqlite://`` URL is shown as it is."""
    parts = _split(url)
    if parts is None:
        return "<a store URL that does not parse>"
    if not parts.netloc:
        return url if "password" not in url.lower() else "<a store URL with a password>"
    host = parts.netloc.rsplit("@", 1)[-1]
    user = unquote(parts.username or "")
    if parts.password is not None:
        user += ":***"
    user += "@" if user else ""
    query = "?…" if parts.query else ""
    return f"{parts.scheme}://{user}{host}{parts.path}{query}"


def scrub(text: str, *urls: str) -> str:
    """``text`` with every URL in it shown as :func:`shown_url` shows it, and each of ``urls``
    (in any spelling a client might quote it in, or its path and query alone) replaced."""
    for url in sorted(urls, key=len, reverse=True):
        if "://" in url:
            text = text.replace(url, shown_url(url))
        elif len(url) > 1:  # a path and query alone: it may hold the secret
            text = text.replace(url, _ELIDED)
    return _URL_IN_TEXT.sub(lambda found: shown_url(found.group(0)), text)


def _split(url: str) -> SplitResult | None:
    try:
        return urlsplit(url)
    except ValueError:
        return None
