"""A run that the kill/resume acceptance test starts and SIGKILLs (not a test module).

Usage: python kill_resume_worker.py RUN_DIR LOG_FILE N_UNITS

Every unit appends its index to LOG_FILE when it computes (before its result is stored),
then returns two marker records, so the test can check that no unit is stored twice and
that no unit is recomputed once stored.
"""

from __future__ import annotations

import asyncio
import random
import sys
from typing import Any, ClassVar

from byzllm.runs import Record, make_unit, run_units


class Marker(Record):
    kind: ClassVar[str] = "marker"
    index: int
    copy: int


LOG_FILE = ""


async def compute(payload: dict[str, Any]) -> list[Record]:
    await asyncio.sleep(random.uniform(0.005, 0.015))
    with open(LOG_FILE, "a", encoding="utf-8") as log:
        log.write(f"{payload['index']}\n")
    return [Marker(index=payload["index"], copy=0), Marker(index=payload["index"], copy=1)]


def main() -> None:
    global LOG_FILE
    run_dir, LOG_FILE, n_units = sys.argv[1], sys.argv[2], int(sys.argv[3])
    units = [make_unit({"index": i, "test": "kill_resume"}, label=f"u{i}") for i in range(n_units)]
    summary = asyncio.run(run_units(run_dir, units, compute, concurrency=4, progress=False))
    print(f"{summary.status} done={summary.done} skipped={summary.skipped}")


if __name__ == "__main__":
    main()
