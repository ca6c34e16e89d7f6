"""Acceptance: a run SIGKILLed at 10 random moments and resumed each time stores every unit
exactly once and never recomputes a unit after it was stored."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from byzllm.runs import Store, make_unit

WORKER = Path(__file__).with_name("kill_resume_worker.py")
N_UNITS = 400
N_KILLS = 10


def _log_lines(log: Path) -> list[int]:
    if not log.exists():
        return []
    lines = log.read_text(encoding="utf-8").split("\n")
    # A SIGKILL can cut the last line; complete lines end with a newline.
    return [int(line) for line in lines[:-1] if line.strip()]


def _done_ids(run_dir: Path) -> set[str]:
    if not (run_dir / "results.sqlite").exists():
        return set()
    with Store.open(run_dir) as store:
        return {unit["id"] for unit in store.units("done")}


def _start(run_dir: Path, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [sys.executable, str(WORKER), str(run_dir), str(log), str(N_UNITS)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_sigkill_at_random_moments_then_resume(tmp_path: Path) -> None:
    rng = random.Random(20240607)
    run_dir, log = tmp_path / "run", tmp_path / "computed.log"
    ids = {make_unit({"index": i, "test": "kill_resume"}).id: i for i in range(N_UNITS)}
    index_of_id = ids
    # (log length when the kill happened, indices stored as done at that point)
    checkpoints: list[tuple[int, set[int]]] = []

    for kill in range(N_KILLS):
        before = len(_log_lines(log))
        proc = _start(run_dir, log)
        if kill % 4 == 0:
            # Some kills land anywhere, including start-up and unit registration.
            time.sleep(rng.uniform(0.0, 0.8))
        else:
            # The others land while units compute and commit.
            deadline = time.monotonic() + 30
            while len(_log_lines(log)) <= before and time.monotonic() < deadline:
                assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
                time.sleep(0.005)
            time.sleep(rng.uniform(0.0, 0.06))
        assert proc.poll() is None, f"kill {kill}: the run ended before it could be killed"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()
        proc.stderr.close()
        done = {index_of_id[unit_id] for unit_id in _done_ids(run_dir)}
        checkpoints.append((len(_log_lines(log)), done))

    assert 0 < len(checkpoints[-1][1]) < N_UNITS, "kills should leave a partly done run"

    final = _start(run_dir, log)
    out, err = final.communicate(timeout=60)
    assert final.returncode == 0, err.decode()
    assert out.decode().startswith("finished")

    computed = _log_lines(log)
    with Store.open(run_dir) as store:
        assert store.counts() == {"pending": 0, "done": N_UNITS, "failed": 0}
        assert {unit["id"] for unit in store.units()} == set(ids)
        markers = store.records("marker")
    # Exactly two records per unit: nothing lost, nothing stored twice.
    assert sorted((m["index"], m["copy"]) for m in markers) == sorted(
        (i, c) for i in range(N_UNITS) for c in (0, 1)
    )
    # No unit was computed again after it had been stored as done.
    for position, done in checkpoints:
        recomputed = done.intersection(computed[position:])
        assert not recomputed, f"recomputed after being stored: {sorted(recomputed)[:5]}"
    # Every unit was computed at least once, and units are few times recomputed at most
    # (only those in flight at a kill).
    assert set(computed) == set(range(N_UNITS))

    db = sqlite3.connect(run_dir / "results.sqlite")
    try:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        db.close()
