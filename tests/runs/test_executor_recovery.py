"""Units whose worker dies, or whose exception does not pickle, fail alone.

A worker process that died (``os._exit``, SIGKILL: out of memory, a crash in native code)
broke the whole process pool, and every later unit was stored failed with
``BrokenProcessPool``; an exception that does not survive pickle did the same, or reached
Ray's driver as an opaque ``UnserializableException``. Now the pool is replaced, the units
that were in it rerun alone, only the unit whose worker dies again is stored failed (saying
how its worker ended), and exceptions come back as stand-ins that read the same. And a local
Ray instance leaves the run's SIGTERM handler in place.
"""

from __future__ import annotations

import importlib
import os
import pickle
import signal
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from byzllm.runs import ProcessExecutor, RayExecutor, RunAbortedError, Store, make_unit, run_units
from byzllm.runs._executor import (
    MAX_POOL_BREAKS_IN_A_ROW,
    RemoteUnitError,
    WorkerPoolError,
    _call_in_process,
    _portable,
)
from byzllm.runs._runner import format_error, is_fatal

pytestmark = pytest.mark.timeout(120)

# Worker processes (and Ray's workers) import the work by module name: it is written to a
# folder put on their path.
_WORK_MODULE = "recovery_work"
_WORK_SOURCE = '''
import os
import signal
from pathlib import Path
from typing import Any, ClassVar

from byzllm.runs import Record


class Finished(Record):
    kind: ClassVar[str] = "recovery_finished"
    n: int


class KeywordOnlyError(Exception):
    """Does not unpickle: pickle calls KeywordOnlyError(message), without ``code``."""

    def __init__(self, message: str, *, code: int) -> None:
        super().__init__(message)
        self.code = code


class FatalKeywordOnlyError(KeywordOnlyError):
    fatal = True
    exit_code = 3


def work(payload: dict[str, Any]) -> Finished:
    action = payload.get("action")
    if action == "exit":
        os._exit(3)
    if action == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if action == "kill_once":  # dies the first time only (a worker killed from outside)
        marker = Path(payload["marker"])
        if not marker.exists():
            marker.write_text("killed once", encoding="utf-8")
            os.kill(os.getpid(), signal.SIGKILL)
    if action == "odd":
        raise KeywordOnlyError("bad thing", code=7)
    if action == "odd_fatal":
        raise FatalKeywordOnlyError("no way on", code=7)
    return Finished(n=payload["n"])
'''


@pytest.fixture(scope="module")
def work_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("recovery_work")
    (folder / f"{_WORK_MODULE}.py").write_text(textwrap.dedent(_WORK_SOURCE), encoding="utf-8")
    return folder


@pytest.fixture
def mod(work_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """The work module, imported by the name the workers use."""
    monkeypatch.syspath_prepend(str(work_dir))
    yield importlib.import_module(_WORK_MODULE)
    sys.modules.pop(_WORK_MODULE, None)


def _units(count: int, actions: dict[int, str], **extra: Any) -> list[Any]:
    return [
        make_unit({"n": n, "action": actions.get(n), **extra}, label=f"n{n}") for n in range(count)
    ]


# -- a worker that dies ------------------------------------------------------------------------


async def test_only_the_unit_whose_worker_dies_fails(tmp_path: Path, mod: ModuleType) -> None:
    units = _units(16, {5: "exit", 11: "kill"})
    summary = await run_units(
        tmp_path, units, mod.work, executor=ProcessExecutor(2), concurrency=4, progress=False
    )
    assert (summary.status, summary.done, summary.failed) == ("finished", 14, 2)
    assert {f.label: f.error for f in summary.failures} == {
        "n5": "WorkerDiedError: the worker process died (exit code 3) while running this unit",
        "n11": (
            "WorkerDiedError: the worker process died (killed by SIGKILL) while running this unit"
        ),
    }
    with Store.open(tmp_path) as store:
        assert sorted(r["n"] for r in store.records("recovery_finished")) == [
            n for n in range(16) if n not in (5, 11)
        ]


async def test_a_worker_killed_once_loses_no_unit(tmp_path: Path, mod: ModuleType) -> None:
    units = _units(12, {3: "kill_once"}, marker=str(tmp_path / "killed"))
    summary = await run_units(
        tmp_path / "run", units, mod.work, executor=ProcessExecutor(2), concurrency=4,
        progress=False,
    )  # fmt: skip
    assert (tmp_path / "killed").exists()  # the worker did die
    assert (summary.status, summary.done, summary.failed) == ("finished", 12, 0)


@pytest.mark.parametrize("workers", [1, 2])
async def test_bad_units_in_a_row_fail_alone_without_stopping_the_run(
    tmp_path: Path, mod: ModuleType, workers: int
) -> None:
    # Each bad unit breaks a pool and dies again alone: it is to blame, so its pool break
    # does not count toward "workers keep dying" (three in a row had stopped the run).
    units = _units(10, dict.fromkeys(range(3), "exit"))
    summary = await run_units(
        tmp_path, units, mod.work, executor=ProcessExecutor(workers), concurrency=workers,
        progress=False,
    )  # fmt: skip
    assert (summary.status, summary.done, summary.failed) == ("finished", 7, 3)


async def test_workers_that_keep_dying_stop_the_run_with_the_rest_pending(
    tmp_path: Path, mod: ModuleType
) -> None:
    units = _units(30, dict.fromkeys(range(30), "exit"))
    with pytest.raises(RunAbortedError) as caught:
        await run_units(
            tmp_path, units, mod.work, executor=ProcessExecutor(2), concurrency=2, progress=False
        )
    assert isinstance(caught.value.cause, WorkerPoolError) and is_fatal(caught.value.cause)
    summary = caught.value.summary
    assert summary.status == "aborted" and summary.done == 0
    # Bounded: a few units blamed, the pools not rebuilt once per unit; the rest stay pending.
    assert summary.failed <= MAX_POOL_BREAKS_IN_A_ROW
    with Store.open(tmp_path) as store:
        assert store.counts()["pending"] == 30 - summary.failed


# -- an exception that does not pickle ---------------------------------------------------------


async def test_an_exception_that_does_not_unpickle_fails_its_unit_only(
    tmp_path: Path, mod: ModuleType
) -> None:
    units = _units(10, {3: "odd"})
    summary = await run_units(
        tmp_path, units, mod.work, executor=ProcessExecutor(2), concurrency=4, progress=False
    )
    assert (summary.done, summary.failed) == (9, 1)
    assert summary.failures[0].error == "KeywordOnlyError: bad thing"


async def test_a_fatal_exception_that_does_not_unpickle_still_stops_the_run(
    tmp_path: Path, mod: ModuleType
) -> None:
    units = _units(6, {2: "odd_fatal"})
    with pytest.raises(RunAbortedError) as caught:
        await run_units(
            tmp_path, units, mod.work, executor=ProcessExecutor(2), concurrency=2, progress=False
        )
    assert format_error(caught.value.cause) == "FatalKeywordOnlyError: no way on"
    assert caught.value.exit_code == 3


class _KeywordOnly(Exception):
    fatal = True
    exit_code = 4

    def __init__(self, message: str, *, code: int) -> None:
        super().__init__(message)
        self.code = code


class _HoldsALock(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.lock = threading.Lock()


def _raise(error: Exception) -> Callable[[dict[str, Any]], Any]:
    def work(payload: dict[str, Any]) -> Any:
        raise error

    return work


def test_the_stand_in_reads_like_the_original_and_pickles() -> None:
    plain = ValueError("fine")
    assert _portable(plain) is plain  # what pickles travels as it is

    with pytest.raises(RemoteUnitError) as caught:
        _call_in_process(_raise(_KeywordOnly("bad thing", code=1)), {})
    stand_in = caught.value
    assert type(stand_in).__name__ == "_KeywordOnly"
    assert type(stand_in).__module__ == _KeywordOnly.__module__
    assert format_error(stand_in) == "_KeywordOnly: bad thing"
    assert is_fatal(stand_in) and getattr(stand_in, "exit_code", None) == 4
    assert "_KeywordOnly: bad thing" in stand_in.remote_traceback
    assert "raise error" in stand_in.remote_traceback  # where it was raised

    back = pickle.loads(pickle.dumps(stand_in))
    assert type(back) is type(stand_in)
    assert format_error(back) == "_KeywordOnly: bad thing"
    assert is_fatal(back) and getattr(back, "exit_code", None) == 4
    assert back.remote_traceback == stand_in.remote_traceback

    locked = _portable(_HoldsALock("cannot send"))
    assert isinstance(locked, RemoteUnitError)
    assert format_error(locked) == "_HoldsALock: cannot send"
    assert not is_fatal(locked)


# -- Ray ---------------------------------------------------------------------------------------


@pytest.mark.slow
async def test_ray_keeps_the_runs_signal_handlers_and_the_works_exception(
    mod: ModuleType,
    work_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    require_extra: Callable[..., None],
) -> None:
    # ray.init on the main thread made SIGTERM exit the process at once (no "interrupted"
    # line, no --json document, exit 15); an exception that does not unpickle arrived as
    # Ray's UnserializableException.
    require_extra("ray", extra="ray")
    import ray

    assert not ray.is_initialized(), "a Ray instance is already connected in this process"
    monkeypatch.delenv("RAY_ADDRESS", raising=False)  # start a local instance
    # Ray's workers inherit the local instance's environment: they import the work by name.
    pythonpath = os.pathsep.join(p for p in (str(work_dir), os.environ.get("PYTHONPATH")) if p)
    monkeypatch.setenv("PYTHONPATH", pythonpath)

    def on_sigterm(signum: int, frame: object) -> None:
        """The run's own handler (a test stand-in; never called)."""

    sigint = signal.getsignal(signal.SIGINT)
    previous = signal.signal(signal.SIGTERM, on_sigterm)
    executor = RayExecutor(init_options={"num_cpus": 1})
    try:
        await executor.start(2)
        assert signal.getsignal(signal.SIGTERM) is on_sigterm
        assert signal.getsignal(signal.SIGINT) is sigint
        with pytest.raises(Exception) as caught:
            await executor.run(mod.work, make_unit({"n": 1, "action": "odd"}))
        assert format_error(caught.value) == "KeywordOnlyError: bad thing"
        records = await executor.run(mod.work, make_unit({"n": 2}))
        assert [r.model_dump() for r in records] == [{"n": 2}]
    finally:
        await executor.aclose()
        signal.signal(signal.SIGTERM, previous)


def test_a_broken_pools_leftover_workers_are_killed() -> None:
    """A worker left alive in a pool that broke holds the pool's thread, and the interpreter's
    exit, forever (a finished test session hung there): closing the pool kills it. Python's
    pool sends its workers SIGTERM when it breaks, and a stop sign once they are idle; a
    worker it starts in that same moment misses both and waits for work forever. Here the
    leftover is a busy worker that ignores SIGTERM.

    The kill used to read the workers from the pool after its shutdown, which forgets them:
    it killed nothing."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from byzllm.runs._executor import _end_pool, _is_broken

    pool = ProcessPoolExecutor(
        max_workers=2,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=signal.signal,
        initargs=(signal.SIGTERM, signal.SIG_IGN),
    )
    workers = []
    try:
        assert all(f.result(timeout=60) > 0 for f in [pool.submit(os.getpid) for _ in range(2)])
        workers = list(pool._processes.values())
        manager = pool._executor_manager_thread
        assert len(workers) == 2 and manager is not None
        for _ in workers:
            pool.submit(time.sleep, 600)
        time.sleep(0.5)  # (each idle worker takes one)
        workers[0].kill()  # the pool breaks; the other worker, busy, outlives its SIGTERM
        deadline = time.monotonic() + 30
        while not _is_broken(pool) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _is_broken(pool)
        _end_pool(pool)
        # The pool's own thread reaps its workers too: when it wins the race for a worker's
        # exit status, this thread's join and is_alive read "alive" until that thread has
        # stored it (seen under load), so wait for the status rather than read it once.
        deadline = time.monotonic() + 30
        while any(w.is_alive() for w in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(w.is_alive() for w in workers)
        manager.join(timeout=30)
        assert not manager.is_alive()  # what the interpreter's exit waits for
    finally:
        for worker in workers:  # (the old code's leftover would hang this session's exit)
            if worker.is_alive():
                worker.kill()
        pool.shutdown(wait=False, cancel_futures=True)
