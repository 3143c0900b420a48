"""``countersign audit verify [--anchors FILE]`` and ``countersign audit anchor``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TextIO

from bot.app import utc_now
from bot.audit.anchoring import Anchorer, AnchorFailed
from bot.audit.anchors import AnchorFileError, check_anchors, read_anchors
from bot.settings import Settings
from bot.slack.publish import make_web_client
from store.base import StoreError
from store.open import open_store
from store.postgres import redacted
from store.protocol import Store

__all__ = ["audit_anchor", "audit_verify"]

#: Problems listed after the first when anchors do not hold (the rest are counted).
MORE_PROBLEMS_SHOWN = 10


async def audit_verify(
    settings: Settings, anchors_path: Path | None, out: TextIO, err: TextIO
) -> int:
    """0: the chain (and every anchor) holds; 1: it does not; 2: nothing could be checked."""
    anchors = None
    if anchors_path is not None:
        try:
            text = await asyncio.to_thread(anchors_path.read_text, encoding="utf-8")
            anchors = read_anchors(text, source=str(anchors_path))
        except (OSError, UnicodeDecodeError) as error:
            print(f"--anchors: cannot read {anchors_path}: {error}", file=err)
            return 2
        except AnchorFileError as error:
            print(f"--anchors: {error}", file=err)
            return 2
        signed = [anchor for anchor in anchors if anchor.mac is not None]
        if signed and settings.audit.key is None:
            print(
                f"--anchors: {anchors_path} line {signed[0].line} is signed, but no anchor key is "
                "configured to check it: set audit.anchor_key_env and that environment variable",
                file=err,
            )
            return 2
    store = await _open(settings, err)
    if store is None:
        return 2
    try:
        report = await store.verify_audit()
        entries = await store.audit_log() if anchors is not None else []
    finally:
        await store.close()
    if report.ok:
        print(f"audit log OK: {report.checked} entries verified", file=out)
    else:
        print(
            f"audit log BROKEN at entry {report.first_bad_seq}: {report.problem} "
            f"({report.checked} entries verified before it)",
            file=out,
        )
    if anchors is None:
        return 0 if report.ok else 1
    held = check_anchors(anchors, entries, key=settings.audit.key, source=str(anchors_path))
    if held.ok:
        latest = max(anchors, key=lambda anchor: (anchor.sequence, anchor.at))
        print(
            f"anchors OK: {held.checked} anchors match the log (the latest names entry "
            f"{latest.sequence}, anchored {latest.at.isoformat()})",
            file=out,
        )
        return 0 if report.ok else 1
    first, *more = held.problems
    print(f"anchors BROKEN at entry {held.first_bad_seq}: {first}", file=out)
    for problem in more[:MORE_PROBLEMS_SHOWN]:
        print(f"  also: {problem}", file=out)
    if len(more) > MORE_PROBLEMS_SHOWN:
        print(f"  and {len(more) - MORE_PROBLEMS_SHOWN} more", file=out)
    print(
        f"{len(held.problems)} of {held.checked} anchors do not hold: the audit log was changed "
        "after they were made (see docs/audit.md)",
        file=out,
    )
    return 1


async def audit_anchor(settings: Settings, out: TextIO, err: TextIO) -> int:
    """Anchor the chain's head now, where [audit] says; 0 when written everywhere."""
    anchoring = settings.audit
    if not anchoring.destinations:
        print(
            "audit anchor: nowhere to write the anchor: set audit.anchor_file and/or "
            "audit.anchor_channel in the configuration",
            file=err,
        )
        return 2
    slack = None
    if anchoring.channel is not None:
        if settings.slack.bot_token is None:
            print(
                f"audit anchor: audit.anchor_channel is {anchoring.channel} but SLACK_BOT_TOKEN "
                "is not set (the Bot User OAuth Token, xoxb-..., that posts the anchor)",
                file=err,
            )
            return 2
        slack = make_web_client(
            settings.slack.bot_token,
            settings.slack.api_url,
            timeout=settings.server.slack_timeout_seconds,
        )
    store = await _open(settings, err)
    if store is None:
        return 2
    try:
        anchor = await Anchorer(store, anchoring, slack=slack, clock=utc_now).anchor()
    except AnchorFailed as failed:
        print(f"audit anchor: {failed}", file=err)
        return 1
    except StoreError as error:
        print(f"audit anchor: cannot read the audit head: {error}", file=err)
        return 2
    finally:
        await store.close()
    assert anchor is not None
    signed = f"signed with ${anchoring.key_env}" if anchor.mac else "not signed"
    print(
        f"anchored entry {anchor.sequence} (hash {anchor.hash}) at {anchor.at.isoformat()}, "
        f"{signed}, to {' and '.join(anchoring.destinations)}",
        file=out,
    )
    return 0


async def _open(settings: Settings, err: TextIO) -> Store | None:
    try:
        return await open_store(settings.store.url, pool_size=settings.store.pool_size)
    except StoreError as error:
        print(f"cannot open the store {redacted(settings.store.url)}: {error}", file=err)
        return None
