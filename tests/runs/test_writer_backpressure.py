"""Finished units wait for the store's writer once enough of them are not yet committed.

The writer's queue was unbounded: when units finished faster than the store wrote them, most
of a run's records sat in memory (8,000 units of 100 kB: 880 MB). The tests hold the writer
on its first group and let the run go as far as it can: it stops at the bound (units waiting
for room keep their results), and a run stopped there still stores every finished unit.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any, ClassVar

import pytest

from byzllm.runs import Record, Store, _runner, make_unit, run_units
from byzllm.runs._store import UnitResult

pytestmark = pytest.mark.timeout(60)

BOUND = 4
CONCURRENCY = 3
UNITS = 40


class Item(Record):
    kind: ClassVar[str] = "bp_item"
    n: int


class _Run:
    """A run whose writer is held on its first group until ``release``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.started = 0
        self.blocked = threading.Event()
        self.gate = threading.Event()
        monkeypatch.setattr(_runner, "MAX_UNCOMMITTED", BOUND)
        write_results = Store.write_results

        def held(store: Store, results: Iterable[UnitResult], run_id: int | None = None) -> int:
            self.blocked.set()
            self.gate.wait(timeout=30)  # (only so that a broken runner cannot hang the test)
            return write_results(store, results, run_id)

        monkeypatch.setattr(Store, "write_results", held)

    async def work(self, payload: dict[str, Any]) -> Item:
        self.started += 1
        await asyncio.sleep(0)
        return Item(n=payload["n"])

    async def stuck(self) -> int:
        """Units started once the held writer has stopped the run from going further (the
        loop runs nothing else: all within this thread, no timing)."""
        while not self.blocked.is_set():
            await asyncio.sleep(0)
        last, unchanged = -1, 0
        while unchanged < 200:
            await asyncio.sleep(0)
            if self.started == last:
                unchanged += 1
            else:
                last, unchanged = self.started, 0
        return self.started


async def _stuck_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[_Run, asyncio.Future[Any], int]:
    """A run of :data:`UNITS` units whose writer is held on its first commit, once no more
    units start: the run, its task and how many units started."""
    run = _Run(monkeypatch)
    units = [make_unit({"n": n}) for n in range(UNITS)]
    task = asyncio.ensure_future(
        run_units(tmp_path, units, run.work, concurrency=CONCURRENCY, progress=False)
    )
    return run, task, await run.stuck()


async def test_units_wait_for_the_writer_past_the_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run, task, started = await _stuck_run(tmp_path, monkeypatch)
    run.gate.set()
    summary = await task
    # At most BOUND handed to the writer, and one finished unit per worker waiting for room.
    assert started <= BOUND + CONCURRENCY < UNITS
    assert (summary.done, summary.failed) == (UNITS, 0)
    with Store.open(tmp_path) as store:
        assert sorted(r["n"] for r in store.records("bp_item")) == list(range(UNITS))


async def test_units_waiting_for_room_are_stored_when_the_run_is_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run, task, started = await _stuck_run(tmp_path, monkeypatch)
    task.cancel()  # Ctrl-C
    run.gate.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    # Every unit that finished is stored, the ones waiting for the writer included.
    with Store.open(tmp_path) as store:
        assert store.counts() == {"done": started, "failed": 0, "pending": UNITS - started}
