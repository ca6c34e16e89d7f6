"""A process that writes results into a shared store (used by the two-process test).

Usage: python store_writer.py STORE_DIR WRITER_NAME N_UNITS [reverse]

Registers the units, creates ``ready-<name>``, waits for a ``go`` file (so that both writers
start together), then stores the units in groups of 7 (every 3 ms), in reverse order if asked.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import ClassVar

from byzllm.runs import Record, Store, UnitResult, make_unit


class Written(Record):
    kind: ClassVar[str] = "written"
    index: int
    writer: str


def main() -> None:
    store_dir, name, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    units = [make_unit({"index": i}) for i in range(n)]
    store = Store(store_dir, busy_timeout_s=30)
    store.register_units(units)
    folder = Path(store_dir)
    (folder / f"ready-{name}").touch()
    deadline = time.monotonic() + 30
    while not (folder / "go").exists() and time.monotonic() < deadline:
        time.sleep(0.001)
    starts = list(range(0, n, 7))
    if sys.argv[4:] == ["reverse"]:
        starts.reverse()
    for start in starts:
        now = time.time()
        store.write_results(
            [
                UnitResult(u.id, "done", now, now, records=[Written(index=i, writer=name)] * 3)
                for i, u in enumerate(units[start : start + 7], start)
            ]
        )
        time.sleep(0.003)  # like the runner, which commits every few ms, not back to back
    store.close()


if __name__ == "__main__":
    main()
