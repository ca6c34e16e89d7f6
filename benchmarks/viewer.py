"""Benchmark: the page of a 10,000-unit run, written and opened in headless Chromium.

A consensus sweep of simulated agents (the attack matrix's grid, enough questions for 10,000
units) goes through the runner into a store; ``byzllm view`` writes its page and the chunk
files of every unit's trace; Chromium loads it, runs its script and dumps the DOM, which is
timed, then opens the run's last unit (its trace loaded from its chunk). Targets, for the
10,000-unit run only (``--units 10000``, the default), each with its verdict in the JSON (met,
NOT met, or not judged for another ``--units``): the page written in under 3 s (issue: fast
everywhere; ``write_verdict``), the folder (page and chunk files) under 30 MB
(``folder_verdict``), open in under 2 s (``open_verdict``: on the page's own clock, both the
list ready and the last unit opened from its chunk; the wall times around Chromium also hold
its own start, which opening a page in a running browser does not pay). Wall times follow the
machine's load, which the JSON reports beside them.

    python benchmarks/viewer.py                 # 10,000 units
    python benchmarks/viewer.py --units 2000    # a smaller run

Prints one JSON line {"benchmark": "viewer", "units": ..., "page_mb": ..., "folder_mb": ...,
"folder_target_mb": ..., "folder_verdict": ..., "write_seconds": ..., "write_target_s": ...,
"write_verdict": ..., "first_paint_ms": ..., "ready_ms": ..., "last_unit_ready_ms": ...,
"open_target_ms": ..., "open_verdict": ..., "open_seconds": ..., "open_last_unit_seconds":
...}; needs Debian's chromium.
``write_seconds`` is the page build (``byzllm view``); ``first_paint_ms`` and ``ready_ms`` are
the page's own clock (first contentful paint; the list rendered), ``last_unit_ready_ms`` the
same page opening its last unit from its chunk, all from navigation on; ``open_seconds``
and ``open_last_unit_seconds`` are wall times around Chromium, its own start included.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from _verdict import verdict as judge
from byzllm.experiments.consensus.experiment import consensus_unit, expand_units
from byzllm.experiments.consensus.matrix import matrix_config
from byzllm.runs import SilentProgress, run_units
from byzllm.view import write_view

#: Units per question of the default matrix: 6 attacks × 2 adversary counts × 5 × 3.
_CELLS = 180
#: The run size (``--units``) the targets are stated for.
TARGET_UNITS = 10_000
#: The page written in under this many seconds.
TARGET_WRITE_S = 3.0
#: The page folder (page and chunk files) under this many MB.
TARGET_FOLDER_MB = 30.0
#: The page open in under this many ms: its list ready, and its last unit opened.
TARGET_OPEN_MS = 2000


def _open(chromium: str, url: str) -> tuple[float, str]:
    """Seconds until headless Chromium has loaded ``url``, run its script (and the chunk a
    unit opened from the fragment needs) and dumped the DOM; and the DOM."""
    start = time.perf_counter()
    dom = subprocess.run(
        [chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
         "--virtual-time-budget=10000", "--dump-dom", url],
        capture_output=True, text=True, timeout=300, check=True,
    ).stdout  # fmt: skip
    return time.perf_counter() - start, dom


def _page_clock(dom: str) -> dict[str, int]:
    """The page's own timings from its ``<body>``: ``fcp-ms`` (first contentful paint) and
    ``ready-ms`` (list rendered, a unit opened from the fragment included), in ms since
    navigation, without Chromium's start."""
    body = re.search(r"<body([^>]*)>", dom)
    found = re.findall(r'data-(fcp-ms|ready-ms)="(\d+)"', body.group(1) if body else "")
    return {name: int(value) for name, value in found}


def verdict(met: bool, units: int) -> str:
    """A target's verdict for a run asked for ``units`` units: judged at :data:`TARGET_UNITS`
    only (every figure grows with the run)."""
    return judge(met, judged=units == TARGET_UNITS, target_for=f"{TARGET_UNITS:,} units")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--units", type=int, default=TARGET_UNITS, help="units in the run (about)")
    args = parser.parse_args()
    chromium = shutil.which("chromium")
    if chromium is None:
        raise SystemExit("chromium is not installed (Debian: apt-get install chromium)")
    questions = max(1, round(args.units / _CELLS))
    cfg = matrix_config(questions=questions, T=2)
    units = expand_units(cfg)
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "run"
        asyncio.run(
            run_units(run_dir, units, consensus_unit, concurrency=64, progress=SilentProgress())
        )
        start = time.perf_counter()
        page = write_view(run_dir)
        write_seconds = time.perf_counter() - start
        size_mb = page.stat().st_size / 1e6
        folder_mb = (
            size_mb + sum(f.stat().st_size for f in (run_dir / "view_files").iterdir()) / 1e6
        )
        open_seconds, dom = _open(chromium, page.resolve().as_uri())
        last = units[-1].id
        last_seconds, last_dom = _open(chromium, page.resolve().as_uri() + f"#open={last}")
    shown = f"{len(units)} of {len(units)} shown" in dom
    clock = _page_clock(dom)
    last_clock = _page_clock(last_dom)
    # The first detail in the DOM is the opened unit's (the script's own text comes last).
    at = last_dom.find('<div class="detail">')
    opened = at >= 0 and last in last_dom and "<svg" in last_dom[at : at + 5000]
    # A page that did not list every unit or open the last one, or set no clock, has not
    # opened: its time does not count.
    opens_ms = [clock.get("ready-ms"), last_clock.get("ready-ms")]
    open_met = shown and opened and all(ms is not None and ms < TARGET_OPEN_MS for ms in opens_ms)
    print(
        json.dumps(
            {
                "benchmark": "viewer",
                "units": len(units),
                "page_mb": round(size_mb, 2),
                "folder_mb": round(folder_mb, 2),
                "folder_target_mb": TARGET_FOLDER_MB,
                "folder_verdict": verdict(folder_mb < TARGET_FOLDER_MB, args.units),
                "write_seconds": round(write_seconds, 2),
                "write_target_s": TARGET_WRITE_S,
                "write_verdict": verdict(write_seconds < TARGET_WRITE_S, args.units),
                "load_average": round(os.getloadavg()[0], 2),
                "first_paint_ms": clock.get("fcp-ms"),
                "ready_ms": clock.get("ready-ms"),
                "last_unit_ready_ms": last_clock.get("ready-ms"),
                "open_target_ms": TARGET_OPEN_MS,
                "open_verdict": verdict(open_met, args.units),
                "open_seconds": round(open_seconds, 2),
                "open_last_unit_seconds": round(last_seconds, 2),
                "all_units_listed": shown,
                "last_unit_opened": opened,
                "simulated": True,
            }
        )
    )


if __name__ == "__main__":
    main()
