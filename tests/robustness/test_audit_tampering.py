"""Audit tampering: random changes, deletions and reorderings of stored entries are all detected.

A log of a few hundred entries is built once through the store API. Each tampering is applied
to a fresh copy of the database file, the way someone holding the file could (the triggers that
refuse UPDATE and DELETE are dropped first); ``verify_audit`` must then report the log broken,
and ``countersign audit verify`` must exit 1 on a sample of them.
"""

from __future__ import annotations

import asyncio
import json
import random
import sqlite3
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from bot.cli import main
from contracts.outcomes import Succeeded
from store.sqlite import SqliteStore
from tests.store.conformance import LEASE, OUTCOME_EXAMPLES, new_proposal

TAMPERINGS = 1000
FIELDS = ("detail", "actor", "event", "at", "proposal_id", "hash", "prev_hash")
AT_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"  # how store/rows.py writes times


@dataclass(frozen=True)
class Tampering:
    kind: str  #: "change", "delete" or "swap"
    seq: int
    other: int = 0  #: the second entry of a swap
    field: str = ""  #: the field a change rewrites
    nudge: int = 1  #: makes the changed value differ (seconds for 'at', a suffix otherwise)


async def build_log(db: Path) -> int:
    """Proposals through every kind of transition, plus refusals; returns the entry count."""
    now = datetime(2026, 2, 1, 8, 0, tzinfo=UTC)
    store = await SqliteStore.open(db, durable=False)
    try:
        for n in range(85):
            at = now + timedelta(minutes=n)
            proposal = new_proposal(at)
            await store.create_proposal(proposal)
            await store.record_event(
                proposal.id, actor="U0OUTSIDER", event="approve_refused", detail={"n": n}, now=at
            )
            if n % 3 == 0:
                await store.reject(proposal.id, actor="U0BOB", reason=f"no {n}", now=at)
                continue
            await store.claim_for_execution(
                proposal.id,
                actor="U0ALICE",
                now=at,
                binding_hash=proposal.binding_hash,
                lease_until=at + LEASE,
            )
            outcome = OUTCOME_EXAMPLES[n % len(OUTCOME_EXAMPLES)] if n % 2 else Succeeded()
            await store.record_outcome(proposal.id, outcome, now=at)
        await store.record_event(None, actor="ops", event="note", detail={}, now=now)
        return len(await store.audit_log())
    finally:
        await store.close()


def tamper(db: Path, t: Tampering) -> None:
    with sqlite3.connect(db) as connection:
        connection.execute("DROP TRIGGER audit_log_refuses_update")
        connection.execute("DROP TRIGGER audit_log_refuses_delete")
        if t.kind == "delete":
            connection.execute("DELETE FROM audit_log WHERE seq = ?", (t.seq,))
        elif t.kind == "swap":
            parked = 10**9
            for source, destination in ((t.seq, parked), (t.other, t.seq), (parked, t.other)):
                connection.execute(
                    "UPDATE audit_log SET seq = ? WHERE seq = ?", (destination, source)
                )
        else:
            [(old,)] = connection.execute(
                f"SELECT {t.field} FROM audit_log WHERE seq = ?", (t.seq,)
            )
            connection.execute(
                f"UPDATE audit_log SET {t.field} = ? WHERE seq = ?", (_changed(t, old), t.seq)
            )
    connection.close()


def _changed(t: Tampering, old: Any) -> Any:
    """A value for ``t.field`` that differs from ``old`` and is still well-formed."""
    if t.field == "detail":
        return json.dumps({**json.loads(old), "tampered": t.nudge})
    if t.field == "at":
        moved = datetime.strptime(old, AT_FORMAT).replace(tzinfo=UTC) + timedelta(seconds=t.nudge)
        return moved.strftime(AT_FORMAT)
    if t.field in ("hash", "prev_hash"):
        return format((int(old, 16) + t.nudge) % 16**64, "064x")
    if t.field == "proposal_id" and old is not None and t.nudge % 2:
        return None
    return f"{old or ''}~{t.nudge}"


def tamperings(entries: int) -> st.SearchStrategy[Tampering]:
    seqs = st.integers(1, entries)
    return st.one_of(
        st.builds(
            Tampering,
            kind=st.just("change"),
            seq=seqs,
            field=st.sampled_from(FIELDS),
            nudge=st.integers(1, 10**6),
        ),
        st.builds(Tampering, kind=st.just("delete"), seq=seqs),
        st.tuples(seqs, seqs)
        .filter(lambda pair: pair[0] != pair[1])
        .map(lambda pair: Tampering(kind="swap", seq=pair[0], other=pair[1])),
    )


async def verify(db: Path) -> bool:
    store = await SqliteStore.open(db, durable=False)
    try:
        return (await store.verify_audit()).ok
    finally:
        await store.close()


@pytest.fixture(scope="module")
def original(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[bytes, int]]:
    db = tmp_path_factory.mktemp("audit") / "original.sqlite"
    entries = asyncio.run(build_log(db))
    assert not db.with_name(db.name + "-wal").exists()  # every commit is in the file itself
    yield db.read_bytes(), entries


def test_the_untouched_copy_verifies(original: tuple[bytes, int], tmp_path: Path) -> None:
    raw, entries = original
    copy = tmp_path / "copy.sqlite"
    copy.write_bytes(raw)

    assert entries >= 300
    assert asyncio.run(verify(copy))


def test_every_random_tampering_of_the_log_is_detected(
    original: tuple[bytes, int], tmp_path: Path
) -> None:
    raw, entries = original
    loop = asyncio.new_event_loop()
    tried: Counter[str] = Counter()
    detected: Counter[str] = Counter()

    @settings(
        max_examples=TAMPERINGS,
        database=None,
        phases=[Phase.generate, Phase.shrink],
        suppress_health_check=list(HealthCheck),
    )
    @given(t=tamperings(entries))
    def check(t: Tampering) -> None:
        copy = tmp_path / f"copy-{sum(tried.values())}.sqlite"
        copy.write_bytes(raw)
        tamper(copy, t)
        kind = t.field or t.kind
        tried[kind] += 1
        ok = loop.run_until_complete(verify(copy))
        copy.unlink()
        if not ok:
            detected[kind] += 1
        assert not ok, f"{t} went unnoticed"

    try:
        check()
    finally:
        loop.close()
    print(
        f"\naudit tampering: detected {sum(detected.values())}/{sum(tried.values())}: {dict(tried)}"
    )

    assert sum(tried.values()) >= TAMPERINGS
    assert detected == tried
    assert set(tried) == {*FIELDS, "delete", "swap"}


def test_countersign_audit_verify_exits_1_on_tampered_logs(
    original: tuple[bytes, int], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raw, entries = original
    rng = random.Random(20260201)
    sample = [Tampering("change", rng.randint(1, entries), field=f, nudge=7) for f in FIELDS]
    sample += [
        Tampering("delete", entries),  # the tail
        Tampering("delete", 1),
        Tampering("delete", rng.randint(2, entries - 1)),
        Tampering("swap", 3, other=rng.randint(4, entries)),
    ]
    codes = []
    for n, t in enumerate(sample):
        db = tmp_path / f"cli-{n}.sqlite"
        db.write_bytes(raw)
        tamper(db, t)
        config = tmp_path / f"cli-{n}.toml"
        config.write_text(f'[store]\nurl = "sqlite:///{db}"\n', encoding="utf-8")
        codes.append(main(["--config", str(config), "audit", "verify"]))
        assert "audit log BROKEN at entry" in capsys.readouterr().out, t

    assert codes == [1] * len(sample)
