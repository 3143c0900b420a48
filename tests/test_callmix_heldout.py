"""examples/callmix/heldout.py: a suggestion drawn from one seeded day, tried on the next, run
from its file as a user runs it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.callmix_example import EXAMPLE, load_script

SCRIPT = EXAMPLE / "heldout.py"
heldout = load_script("heldout")


async def test_a_suggestion_from_one_day_is_measured_on_the_next() -> None:
    [row] = await heldout.rows([21], count=3000)

    # seed 21's refunds give each refunding agent a grant under small-refunds
    assert [grant.split(",")[0] for grant in row.grants] == [
        "small-refunds:agent=billing-bot",
        "small-refunds:agent=support-bot",
    ]
    assert row.saves > 0 and row.likely > 0 and row.at_most > row.likely
    # what ran against people on day 22 ran under those grants, among all they ran
    assert row.next_standing > 0
    assert row.next_rejected + row.next_unanswered <= row.next_standing
    assert row.markdown().startswith("| 21 | ")
    assert row.markdown().count(" USD") == 2


def test_seeds_in_the_wrong_order_are_refused_naming_both(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--from", "5", "--to", "2"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )

    assert done.returncode == 2
    assert "--to 2 is before --from 5" in done.stderr
