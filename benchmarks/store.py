"""Benchmark: the demo's store on disk, and how fast its records read back, against the same
records kept a row each (the layout before batches).

Runs ``byzllm demo --questions N`` (default 2,000: 12,000 units, 600,000 records) in a scratch
folder, then copies its store into the previous layout (every record a row of its own,
zlib-compressed unless short), and reads every record kind from both, the two alternating,
``--repeats`` times; reading time is CPU time (user + system of this process), which on a
shared machine measures the work where wall time measures the neighbours. Target (issue 26):
the 2,000-question store at most 60 MB, reading no slower.

    python benchmarks/store.py                    # 2,000 questions (about 5 minutes on 2 cores)
    python benchmarks/store.py --questions 200    # quicker

Ends with one JSON line {"benchmark": "store", "questions": ..., "units": ..., "records": ...,
"store_mb": ..., "row_per_record_mb": ..., "read_cpu_s": {kind: ...},
"row_per_record_read_cpu_s": {kind: ...}}.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from byzllm.runs import Store
from byzllm.runs._codec import pack_json, unpack_records

TARGET_MB = 60


def _row_per_record(source: Path, target: Path) -> None:
    """``target``: a copy of the store at ``source`` with a row per record, numbered in the
    order the unit's rows hold them (the layout before batches)."""
    target.mkdir(parents=True)
    shutil.copy(source / "results.sqlite", target / "results.sqlite")
    conn = sqlite3.connect(target / "results.sqlite")
    rows = conn.execute("SELECT unit_id, kind, json FROM records ORDER BY unit_id, seq").fetchall()
    conn.execute("DELETE FROM records")
    seqs: dict[str, int] = {}
    for unit, kind, value in rows:
        for text in unpack_records(value):
            seq = seqs[unit] = seqs.get(unit, -1) + 1
            conn.execute(
                "INSERT INTO records (unit_id, seq, kind, json) VALUES (?, ?, ?, ?)",
                (unit, seq, kind, pack_json(text)),
            )
    conn.commit()
    conn.execute("VACUUM")
    conn.close()


def _mb(folder: Path) -> float:
    return round(sum(p.stat().st_size for p in folder.glob("results.sqlite*")) / 1e6, 1)


def _read_cpu(folder: Path, kind: str) -> float:
    with Store.open(folder) as store:
        start = time.process_time()
        store.records(kind)
        return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--questions", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "demo"
        byzllm = shutil.which("byzllm")
        cli = [sys.executable, "-c", "from byzllm.cli import main; main()"]
        command = [byzllm] if byzllm else cli
        subprocess.run(
            [*command, "demo", "--questions", str(args.questions), "-o", str(run_dir), "--json"],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        old = Path(tmp) / "rows"
        _row_per_record(run_dir, old)
        with Store.open(run_dir) as store:
            kinds = store.kinds()
            units = store.counts()["done"]
        times: dict[tuple[str, str], list[float]] = {}
        for _ in range(args.repeats):
            for kind in kinds:
                for name, folder in (("batches", run_dir), ("rows", old)):
                    times.setdefault((name, kind), []).append(_read_cpu(folder, kind))
        size = _mb(run_dir)
        result = {
            "benchmark": "store",
            "questions": args.questions,
            "units": units,
            "records": sum(kinds.values()),
            "store_mb": size,
            "row_per_record_mb": _mb(old),
            "target_mb": TARGET_MB if args.questions == 2000 else None,
            "read_cpu_s": {k: round(statistics.median(times[("batches", k)]), 2) for k in kinds},
            "row_per_record_read_cpu_s": {
                k: round(statistics.median(times[("rows", k)]), 2) for k in kinds
            },
        }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
