"""Choosing executors by name, and the Ray executor starting its own local instance (skipped
when ray is not installed; the other Ray executor tests are in test_ray_executor.py)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from byzllm.errors import ConfigError
from byzllm.runs import (
    AUTO_PROCESS_MIN_UNITS,
    LocalExecutor,
    ProcessExecutor,
    RayExecutor,
    SilentProgress,
    Store,
    _executor,
    executor_by_name,
    make_unit,
    run_units,
    usable_cores,
)

IMPORTABLE = Path(__file__).with_name("importable")


def test_executor_by_name() -> None:
    assert isinstance(executor_by_name("local"), LocalExecutor)
    assert isinstance(executor_by_name("process"), ProcessExecutor)
    ray_executor = executor_by_name("ray", ray_address="auto")
    assert isinstance(ray_executor, RayExecutor) and ray_executor.address == "auto"
    with pytest.raises(ConfigError, match="unknown executor 'threads'"):
        executor_by_name("threads")
    with pytest.raises(ConfigError, match="needs the ray executor"):
        executor_by_name("local", ray_address="auto")


@pytest.mark.parametrize(
    ("cpu_bound", "units", "cores", "chosen"),
    [
        (True, AUTO_PROCESS_MIN_UNITS, 2, ProcessExecutor),
        (True, AUTO_PROCESS_MIN_UNITS - 1, 2, LocalExecutor),  # too few to repay the start
        (True, AUTO_PROCESS_MIN_UNITS, 1, LocalExecutor),  # one core: nothing to spread over
        (False, 10 * AUTO_PROCESS_MIN_UNITS, 8, LocalExecutor),  # model calls: one event loop
    ],
)
def test_auto_spreads_only_large_cpu_bound_runs_over_processes(
    monkeypatch: pytest.MonkeyPatch, cpu_bound: bool, units: int, cores: int, chosen: type
) -> None:
    monkeypatch.setattr(_executor, "usable_cores", lambda: cores)
    executor = executor_by_name("auto", cpu_bound=cpu_bound, units=units)
    assert type(executor) is chosen


def test_auto_stays_in_this_process_where_worker_processes_cannot_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A platform without sem_open: importing multiprocessing.synchronize raises ImportError.
    monkeypatch.setattr(_executor, "usable_cores", lambda: 4)
    monkeypatch.setitem(sys.modules, "multiprocessing.synchronize", None)
    executor = executor_by_name("auto", cpu_bound=True, units=10 * AUTO_PROCESS_MIN_UNITS)
    assert type(executor) is LocalExecutor


def test_the_executor_help_names_the_auto_threshold() -> None:
    from byzllm.cli._common import ExecutorOption

    help_text = ExecutorOption.__metadata__[0].help
    assert f"{AUTO_PROCESS_MIN_UNITS:,} units or more" in help_text


def test_ray_executor_rejects_non_positive_cpus() -> None:
    with pytest.raises(ConfigError, match="num_cpus"):
        RayExecutor(num_cpus=0)


async def test_ray_executor_without_ray_says_how_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # makes `import ray` raise ImportError
    with pytest.raises(ConfigError, match=r"pip install 'byzllm\[ray\]'"):
        await RayExecutor().start(4)


def test_process_executor_defaults_to_one_process_per_core() -> None:
    # Checked through start(): no more workers than cores, nor than the run's concurrency.
    import asyncio

    executor = ProcessExecutor()
    asyncio.run(executor.start(64))
    try:
        assert executor._pool is not None
        assert executor._pool._max_workers == min(64, usable_cores())
    finally:
        asyncio.run(executor.aclose())


@pytest.mark.slow
async def test_ray_executor_starts_and_shuts_down_its_own_local_instance(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, require_extra: Callable[..., None]
) -> None:
    # The other Ray tests (test_ray_executor.py) share one instance that they start
    # themselves; this one covers the default: the executor starts one and stops it again.
    require_extra("ray", extra="ray")
    import ray

    assert not ray.is_initialized(), "a Ray instance is already connected in this process"
    monkeypatch.delenv("RAY_ADDRESS", raising=False)  # start a local instance, join none
    monkeypatch.syspath_prepend(str(IMPORTABLE))
    import process_work  # type: ignore[import-not-found]

    # Ray's workers import the work's module by name: put it on their path too (they inherit
    # the environment of the local instance; a runtime_env would cost seconds per worker).
    pythonpath = os.pathsep.join(p for p in (str(IMPORTABLE), os.environ.get("PYTHONPATH")) if p)
    monkeypatch.setenv("PYTHONPATH", pythonpath)
    executor = RayExecutor(init_options={"num_cpus": 2})
    units = [make_unit({"n": n}, label=f"n{n}") for n in [*range(5), -1]]
    summary = await run_units(
        tmp_path, units, process_work.async_square, executor=executor, progress=False
    )
    assert (summary.done, summary.failed) == (5, 1)
    # The work's own exception, not Ray's wrapper.
    assert summary.failures[0].error == "ValueError: negative input"
    with Store.open(tmp_path) as store:
        rows = store.records("computed")
    assert sorted((r["n"], r["square"]) for r in rows) == [(n, n * n) for n in range(5)]
    assert os.getpid() not in {r["pid"] for r in rows}
    assert not ray.is_initialized()  # the instance it started is shut down again


# -- async work in a worker: one event loop per thread, kept across units -------------------


@pytest.fixture
def unit_loop() -> Iterator[None]:
    """Closes the unit loop the test made on this thread (a worker keeps it until it exits)."""
    from byzllm.runs import _executor

    yield
    runner = _executor._unit_runners.__dict__.pop("runner", None)
    if runner is not None:
        runner.close()


async def _answer(payload: dict[str, object]) -> object:
    import asyncio

    await asyncio.sleep(0)
    return {"loop": id(asyncio.get_running_loop()), **payload}


async def _leaves_a_task(payload: dict[str, object]) -> object:
    import asyncio

    async def forever() -> None:
        await asyncio.get_running_loop().create_future()  # never finishes on its own

    payload["task"] = asyncio.get_running_loop().create_task(forever())
    await asyncio.sleep(0)  # the task starts and waits
    return "done"


async def _fails(payload: dict[str, object]) -> object:
    raise ValueError("the work failed")


async def _interrupted(payload: dict[str, object]) -> object:
    raise KeyboardInterrupt


def test_async_work_in_a_worker_reuses_one_loop_per_thread(unit_loop: None) -> None:
    import signal

    from byzllm.runs._executor import _call_in_process

    handler = signal.getsignal(signal.SIGINT)
    first = _call_in_process(_answer, {"unit": 1})
    second = _call_in_process(_answer, {"unit": 2})
    assert first["unit"] == 1 and second["unit"] == 2
    assert first["loop"] == second["loop"]
    assert signal.getsignal(signal.SIGINT) is handler  # Ctrl-C keeps its handler


def test_tasks_a_unit_leaves_running_are_cancelled_before_the_next(unit_loop: None) -> None:
    from byzllm.runs._executor import _call_in_process

    payload: dict[str, object] = {}
    assert _call_in_process(_leaves_a_task, payload) == "done"
    left = payload["task"]
    assert left.cancelled()  # type: ignore[attr-defined]
    assert _call_in_process(_answer, {"unit": 3})["unit"] == 3


def test_a_failing_unit_keeps_the_loop_an_interrupted_one_gets_a_fresh_one(
    unit_loop: None,
) -> None:
    from byzllm.runs import _executor
    from byzllm.runs._executor import _call_in_process

    before = _call_in_process(_answer, {})["loop"]
    with pytest.raises(ValueError, match="the work failed"):
        _call_in_process(_fails, {})
    assert _call_in_process(_answer, {})["loop"] == before
    interrupted = _executor._unit_runners.runner.get_loop()
    with pytest.raises(KeyboardInterrupt):
        _call_in_process(_interrupted, {})
    assert interrupted.is_closed()
    after = _call_in_process(_answer, {})["loop"]
    assert after != id(interrupted) and not _executor._unit_runners.runner.get_loop().is_closed()


_SEE_KEY = """
import asyncio, sys, tempfile
from byzllm.runs import ProcessExecutor, Store, make_unit, run_units
from process_work import seen_key

async def main(keep):
    with tempfile.TemporaryDirectory() as folder:
        units = [make_unit({"i": i}) for i in range(4)]
        executor = ProcessExecutor(2, keep_secrets=keep)
        await run_units(folder, units, seen_key, executor=executor, progress=False)
        with Store.open(folder) as store:
            print(sorted({str(r["key"]) for r in store.records("seen")}))

for run in sys.argv[1:]:
    asyncio.run(main(run == "keep"))
"""


@pytest.mark.skipif(
    "forkserver" not in __import__("multiprocessing").get_all_start_methods(),
    reason="the fork server is how workers start without secrets",
)
@pytest.mark.parametrize(
    ("runs", "seen"),
    [
        (["keep"], ["['sk-canary-42']"]),
        (["drop"], ["['None']"]),
        # The fork server starts once per process, with the environment of the first run:
        # each run's workers must still get what that run asks for.
        (["drop", "keep"], ["['None']", "['sk-canary-42']"]),
        # ... and a server started by a run that needs the key starts without it too: one
        # started with it left the key in every later worker's /proc environ.
        (["keep", "drop"], ["['sk-canary-42']", "['None']"]),
    ],
)
def test_workers_of_work_that_calls_no_model_get_no_api_key(
    runs: list[str], seen: list[str]
) -> None:
    """A simulated run's workers held the environment's API keys (in os.environ and their
    /proc environ): ``keep_secrets=False`` starts the fork server without them. And a
    real-model run after a simulated one in the same process got workers without the key:
    each worker now takes the secrets of its own run. A fresh interpreter per case, since a
    process starts its fork server once."""
    env = {**os.environ, "OPENAI_API_KEY": "sk-canary-42", "PYTHONPATH": str(IMPORTABLE)}
    done = subprocess.run(
        [sys.executable, "-c", _SEE_KEY, *runs], env=env, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == seen


@pytest.mark.skipif(
    "forkserver" not in __import__("multiprocessing").get_all_start_methods(),
    reason="the fork server is how workers start without secrets",
)
def test_a_real_model_runs_workers_hold_the_key_only_in_os_environ() -> None:
    """Workers of a run that calls models take the key from the pool, not from the fork
    server's environment: it is in their os.environ, never in their /proc environ."""
    script = _SEE_KEY.replace("seen_key", "seen_in_proc")
    env = {**os.environ, "OPENAI_API_KEY": "sk-canary-42", "PYTHONPATH": str(IMPORTABLE)}
    done = subprocess.run(
        [sys.executable, "-c", script, "keep"], env=env, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["['None']"]


_WHERE_IMPORTED = """
import asyncio, sys, tempfile
from byzllm.runs import ProcessExecutor, Store, make_unit, run_units, warm_workers
from byzllm.runs._executor import _start_servers

async def main(warm):
    executor = ProcessExecutor(2)
    if warm == "no":
        _start_servers()  # the fork server runs already, started without the module
    if warm == "early":
        warm_workers("imported_where")  # before this process imports it
    with tempfile.TemporaryDirectory() as folder:
        from imported_where import where_imported

        units = [make_unit({"i": i}) for i in range(4)]
        await run_units(folder, units, where_imported, executor=executor, progress=False)
        with Store.open(folder) as store:
            print(sorted({r["imported_by_worker"] for r in store.records("where")}))

asyncio.run(main(sys.argv[1]))
"""


@pytest.mark.skipif(
    "forkserver" not in __import__("multiprocessing").get_all_start_methods(),
    reason="workers are forked from a server that imported the work only with a fork server",
)
@pytest.mark.parametrize(
    ("warm", "seen"), [("yes", "[False]"), ("no", "[True]"), ("early", "[False]")]
)
def test_workers_are_forked_with_the_works_module_imported(warm: str, seen: str) -> None:
    """Each worker imported the work's module for itself (0.44 s of CPU each for the
    consensus experiment's) after the fork server had started: the runner now warms the
    executor up first, whose server imports the module once, and the workers forked from it
    have it. Where a server already runs (started without it), the workers import it as
    before; one started early for the module (warm_workers: a command with more to do before
    its run) is the server they fork from. A fresh interpreter per case, since a process
    starts its fork server once."""
    env = {**os.environ, "PYTHONPATH": str(IMPORTABLE)}
    done = subprocess.run(
        [sys.executable, "-c", _WHERE_IMPORTED, warm], env=env, capture_output=True,
        text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [seen]


def test_simulated_work_gets_workers_without_secrets() -> None:
    simulated, other = executor_by_name("process", cpu_bound=True), executor_by_name("process")
    assert isinstance(simulated, ProcessExecutor) and isinstance(other, ProcessExecutor)
    assert simulated.keep_secrets is False and other.keep_secrets is True


class _Heartbeats(SilentProgress):
    """A silent reporter that keeps the units each heartbeat counts as running."""

    interval_s = 0.2

    def __init__(self) -> None:
        self.running: list[int] = []

    def heartbeat(self, status: Any) -> None:
        self.running.append(status.units_in_flight)


@pytest.mark.timeout(120)
async def test_units_waiting_for_a_worker_are_not_counted_as_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """-j 8 on 2 workers said "8 running": the units in the pool's queue were counted."""
    monkeypatch.syspath_prepend(str(IMPORTABLE))
    import process_work  # type: ignore[import-not-found]

    reporter = _Heartbeats()
    units = [make_unit({"n": n, "s": 0.3}) for n in range(12)]
    summary = await run_units(
        tmp_path, units, process_work.slow_square, executor=ProcessExecutor(2), concurrency=8,
        progress=reporter,
    )  # fmt: skip
    assert summary.done == 12
    assert reporter.running and max(reporter.running) == 2


def test_what_each_executor_says_can_run_at_once() -> None:
    assert LocalExecutor().running_at_most() is None
    assert ProcessExecutor(2).running_at_most() is None  # not started: nothing runs
    assert RayExecutor().running_at_most() is None


def test_a_batch_of_units_in_a_worker_keeps_each_units_records_and_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Units handed over together still come back one by one: records for the good ones, its
    # own error (as a value, not the batch's) for the bad one, a sys.exit included.
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().with_name("importable")))
    import process_work  # type: ignore[import-not-found]

    from byzllm.runs._executor import _packed_batch_in_process
    from byzllm.runs._records import PackedRecords

    def work(payload: dict[str, Any]) -> Any:
        if payload["n"] == 7:
            raise SystemExit(3)
        return process_work.square(payload)

    results = _packed_batch_in_process(work, [{"n": 2}, {"n": -1}, {"n": 3}, {"n": 7}])
    assert [type(r) for r in results] == [PackedRecords, ValueError, PackedRecords, SystemExit]
    assert str(results[1]) == "negative input"


async def test_units_of_work_that_calls_no_model_reach_the_workers_several_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().with_name("importable")))
    from concurrent.futures import ProcessPoolExecutor

    import process_work  # type: ignore[import-not-found]

    from byzllm.runs import ProcessExecutor, Store, make_unit, run_units
    from byzllm.runs._executor import MAX_BATCH

    submitted: list[int] = []
    real_submit = ProcessPoolExecutor.submit

    def counting_submit(self: Any, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        submitted.append(len(args[1]) if fn.__name__ == "_packed_batch_in_process" else 1)
        return real_submit(self, fn, *args, **kwargs)

    monkeypatch.setattr(ProcessPoolExecutor, "submit", counting_submit)
    units = [make_unit({"n": n}, label=f"n{n}") for n in range(40)]
    summary = await run_units(
        tmp_path, units, process_work.square, executor=ProcessExecutor(2), progress=False
    )
    assert summary.done == 40
    assert sum(submitted) == 40
    assert len(submitted) < 40 and max(submitted) <= MAX_BATCH
    with Store.open(tmp_path) as store:
        assert sorted(r["n"] for r in store.records("computed")) == list(range(40))


@pytest.mark.timeout(60)
async def test_closing_with_units_still_queued_for_a_worker_reports_no_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A stopped run closes its executor with units still in the pool's queue: closing the
    pool cancels them, and delivering a cancelled batch raised in a loop callback (an
    'Exception in callback ProcessExecutor._deliver' traceback after Ctrl-C)."""
    monkeypatch.syspath_prepend(str(IMPORTABLE))
    import process_work  # type: ignore[import-not-found]

    loop = asyncio.get_running_loop()
    errors: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _, context: errors.append(context))
    executor = ProcessExecutor(1, keep_secrets=False)
    await executor.start(1)
    # One worker, 24 units at once: three batches of 8, the third left in the pool's queue.
    units = [make_unit({"n": n, "s": 0.01}) for n in range(24)]
    tasks = [asyncio.ensure_future(executor.run(process_work.slow_square, u)) for u in units]
    for _ in range(3):  # the units reach the pool (handed over on the loop's next turn)
        await asyncio.sleep(0)
    for task in tasks:  # as the runner stops: its units cancelled, then the executor closed
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await executor.aclose()
    for _ in range(10):
        await asyncio.sleep(0.01)
    assert not errors, errors
