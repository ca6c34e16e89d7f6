"""A run on the Ray executor that test_ray_executor.py starts, SIGKILLs and reruns (not a test).

Usage: RAY_ADDRESS=HOST:PORT python ray_kill_resume_worker.py RUN_DIR LOG_DIR N_UNITS

It joins the running Ray instance named by ``RAY_ADDRESS`` and refuses to start without one:
a SIGKILLed driver that had started its own instance would leave that instance behind. The
instance's workers must be able to import ``importable/ray_work.py`` (the test starts it with
that folder on their PYTHONPATH). Each unit appends its index to ``LOG_DIR/job-<id>.log``, one
file per driver, from the Ray worker that computes it (before its result is stored), then
returns two marker records.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().with_name("importable")))

import ray_work

from byzllm.runs import RayExecutor, make_unit, run_units


def main() -> None:
    if not os.environ.get("RAY_ADDRESS"):
        sys.exit("set RAY_ADDRESS to the Ray instance to join")
    run_dir, log_dir, n_units = sys.argv[1], sys.argv[2], int(sys.argv[3])
    units = [
        make_unit({"index": i, "log_dir": log_dir, "sleep_s": 0.1}, label=f"u{i}")
        for i in range(n_units)
    ]
    summary = asyncio.run(
        run_units(
            run_dir,
            units,
            ray_work.logged_markers,
            executor=RayExecutor(),
            concurrency=8,
            progress=False,
        )
    )
    print(f"{summary.status} done={summary.done} skipped={summary.skipped}", flush=True)


if __name__ == "__main__":
    main()
