"""What a benchmark run measured: one row per floor and scenario, as a table and as JSON."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Measurement", "percentile_ms", "render_table", "write_json"]


def percentile_ms(latencies: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (nearest rank) of latencies in seconds, in milliseconds."""
    if not latencies:
        return None
    ordered = sorted(latencies)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return round(ordered[rank - 1] * 1000, 2)


@dataclass(slots=True)
class Measurement:
    """One line of the table: a floor (``kind="floor"``) or a scenario measured against one."""

    name: str
    kind: str  #: "floor" or "scenario"
    what: str  #: one line saying what was measured
    backend: str = "-"  #: the store the measurement used ("sqlite", "postgresql", or "-")
    count: int = 0  #: operations completed
    seconds: float = 0.0  #: how long they took
    throughput: float | None = None  #: operations per second
    p50_ms: float | None = None
    p99_ms: float | None = None
    floor: str | None = None  #: the floor's name this scenario is compared with
    ratio: float | None = None  #: throughput / the floor's throughput
    #: ms of the Countersign instances' CPU per operation (proposal, decision) while measured
    cpu_ms: float | None = None
    target: str | None = None  #: the issue's target, in words
    reached: bool | None = None  #: whether the target was reached (None: no target)
    note: str = ""  #: the figure a reader needs beside the others (memory, executions...)
    details: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def timed(
        cls,
        name: str,
        kind: str,
        what: str,
        latencies: Sequence[float],
        seconds: float,
        *,
        count: int | None = None,
        backend: str = "-",
    ) -> Measurement:
        done = len(latencies) if count is None else count
        return cls(
            name=name,
            kind=kind,
            what=what,
            backend=backend,
            count=done,
            seconds=round(seconds, 3),
            throughput=round(done / seconds, 1) if seconds > 0 else None,
            p50_ms=percentile_ms(latencies, 50),
            p99_ms=percentile_ms(latencies, 99),
        )

    def against(self, floor: Measurement) -> Measurement:
        """Set the ratio of this throughput to ``floor``'s (same run, same machine)."""
        self.floor = floor.name
        if self.throughput is not None and floor.throughput:
            self.ratio = round(self.throughput / floor.throughput, 3)
        return self

    def judge(self, target: str, reached: bool | None) -> Measurement:
        self.target = target
        self.reached = reached
        return self


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "reached" if value else "MISSED"
    if isinstance(value, float):
        return f"{value:,.2f}" if value < 100 else f"{value:,.0f}"
    return str(value)


_COLUMNS = (
    ("name", "scenario"),
    ("backend", "store"),
    ("count", "n"),
    ("throughput", "per s"),
    ("p50_ms", "p50 ms"),
    ("p99_ms", "p99 ms"),
    ("floor", "floor"),
    ("ratio", "ratio"),
    ("cpu_ms", "CPU ms"),
    ("note", "note"),
    ("target", "target"),
    ("reached", ""),
)


def render_table(rows: Sequence[Measurement]) -> str:
    """A plain-text table, one line per measurement, floors first."""
    cells = [[title for _, title in _COLUMNS]]
    cells += [[_cell(getattr(row, key)) for key, _ in _COLUMNS] for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(_COLUMNS))]

    def join(line: list[str]) -> str:
        return "  ".join(text.ljust(width) for text, width in zip(line, widths, strict=True))

    lines = [join(cells[0]), "  ".join("-" * width for width in widths)]
    lines += [join(line).rstrip() for line in cells[1:]]
    return "\n".join(lines)


def write_json(path: Path, rows: Sequence[Measurement], context: dict[str, Any]) -> None:
    """``{"context": {...}, "measurements": [...]}``, one object per table row."""
    document = {"context": context, "measurements": [asdict(row) for row in rows]}
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
