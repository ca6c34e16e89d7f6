"""The rich progress bar counts units that failed in an earlier run (not rerun) as finished.

It counted them as still to do: a resumed run's bar ended at 80/100 with an ETA above zero,
where the plain progress lines said the run was through.
"""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any, ClassVar

from rich.console import Console

from byzllm.runs import Record, make_unit, run_units
from byzllm.runs._progress import RichProgress


class Item(Record):
    kind: ClassVar[str] = "pfb_item"
    n: int


async def _work(payload: dict[str, Any]) -> Item:
    if payload["n"] < 4:
        raise ValueError(f"unit {payload['n']} is broken")
    return Item(n=payload["n"])


def test_the_bar_starts_with_the_units_failed_before_counted() -> None:
    reporter = RichProgress(Console(file=io.StringIO(), force_terminal=True, width=140))
    reporter.start("run", total=10, already_done=2, to_run=4)
    try:
        assert reporter._progress is not None and reporter._task is not None
        task = reporter._progress.tasks[0]
        assert (task.completed, task.total) == (6, 10)  # 2 done + 4 failed before
        reporter.update(3, 1)
        assert task.completed == 10 and task.finished and task.remaining == 0
    finally:
        reporter.close()


async def test_a_resumed_run_with_earlier_failures_ends_its_bar_full(tmp_path: Path) -> None:
    units = [make_unit({"n": n}, label=f"n{n}") for n in range(10)]
    first = await run_units(tmp_path, units[:6], _work, progress=False)
    assert (first.done, first.failed) == (2, 4)

    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=140, color_system=None)
    summary = await run_units(tmp_path, units, _work, progress=RichProgress(console))
    assert (summary.skipped, summary.done, summary.failed_before) == (2, 4, 4)
    counts = re.findall(r"(\d+)/10 (\d+) failed", buffer.getvalue())
    assert counts and counts[-1] == ("10", "0")  # the bar as it was left
