"""Overhead of the experiment runner and result store, per unit.

Runs N no-op units (default 20,000) through ``run_units`` into a fresh store and reports
units per second and the store's size per unit. Async and sync no-op work are measured side
by side (sync work runs in worker threads, so it pays one thread hop per unit), and so is
async work that stores one small record per unit.

    python benchmarks/runner_overhead.py            # 20,000 units
    python benchmarks/runner_overhead.py --quick    # 2,000 units

Target: at least 2,000 units/s on 2 cores, judged on the slower of async and sync no-op work
where this process may run on exactly 2 cores (its CPU affinity); elsewhere the rates are
printed with the verdict "not judged: target is for 2 cores". Ends with one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path
from typing import Any, ClassVar

from _verdict import verdict as judge
from byzllm._process import usable_cores
from byzllm.runs import Record, Store, make_unit, run_units

#: The target, and the cores it is stated for.
TARGET_UNITS_PER_S = 2000
TARGET_CORES = 2


class Marker(Record):
    kind: ClassVar[str] = "marker"
    index: int
    correct: bool


async def noop_async(payload: dict[str, Any]) -> list[Record]:
    return []


async def one_record(payload: dict[str, Any]) -> list[Record]:
    return [Marker(index=payload["index"], correct=True)]


def noop_sync(payload: dict[str, Any]) -> list[Record]:
    return []


def _store_bytes(run_dir: Path) -> int:
    with Store.open(run_dir) as store:
        store._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return sum(path.stat().st_size for path in run_dir.glob("results.sqlite*"))


def measure(n: int, work: Any, concurrency: int) -> tuple[float, float]:
    """Return (units per second, store bytes per unit) for one fresh run of n units."""
    units = [make_unit({"index": i, "grid": "runner_overhead"}) for i in range(n)]
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "run"
        start = time.perf_counter()
        summary = asyncio.run(
            run_units(run_dir, units, work, concurrency=concurrency, progress=False)
        )
        elapsed = time.perf_counter() - start
        if summary.done != n:
            raise SystemExit(f"expected {n} units done, got {summary.done}")
        return n / elapsed, _store_bytes(run_dir) / n


def verdict(rate: float, cores: int) -> str:
    """The target's verdict for the slower no-op ``rate`` measured on ``cores`` cores: judged
    on :data:`TARGET_CORES` only (sync work's worker threads and the store share the cores, so
    another count moves the rate)."""
    return judge(
        rate >= TARGET_UNITS_PER_S, judged=cores == TARGET_CORES, target_for=f"{TARGET_CORES} cores"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=20_000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--quick", action="store_true", help="2,000 units")
    args = parser.parse_args()
    n = 2_000 if args.quick else args.units

    # Warm-up, not timed: the first run in a process pays one-off costs (imports the runner
    # and store make on first use, SQLite's set-up) that made the first figure measured here,
    # async no-op work, 0.4x its own rate at 2,000 units and 0.9x at 20,000.
    measure(100, noop_async, args.concurrency)
    async_rate, bytes_per_unit = measure(n, noop_async, args.concurrency)
    print(
        f"async no-op work: {n} units, {async_rate:,.0f} units/s, "
        f"{bytes_per_unit:,.0f} store bytes/unit"
    )
    sync_rate, _ = measure(n, noop_sync, args.concurrency)
    print(f"sync no-op work (worker threads): {n} units, {sync_rate:,.0f} units/s")
    record_rate, record_bytes = measure(n, one_record, args.concurrency)
    print(
        f"async work storing one small record per unit: {record_rate:,.0f} units/s, "
        f"{record_bytes:,.0f} store bytes/unit"
    )
    cores = usable_cores()
    judged = verdict(min(async_rate, sync_rate), cores)
    print(f"target: >= {TARGET_UNITS_PER_S:,} units/s on {TARGET_CORES} cores: {judged}")
    print(
        json.dumps(
            {
                "benchmark": "runner_overhead",
                "units": n,
                "concurrency": args.concurrency,
                "units_per_s": round(async_rate, 1),
                "sync_units_per_s": round(sync_rate, 1),
                "bytes_per_unit": round(bytes_per_unit, 1),
                "one_record_units_per_s": round(record_rate, 1),
                "one_record_bytes_per_unit": round(record_bytes, 1),
                "cores": cores,
                "target_units_per_s": TARGET_UNITS_PER_S,
                "verdict": judged,
            }
        )
    )


if __name__ == "__main__":
    main()
