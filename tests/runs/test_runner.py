"""The runner: failures, retries, max_failures, concurrency, cancellation, progress."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, ClassVar

import pytest

from byzllm.errors import InputError
from byzllm.runs import (
    LocalExecutor,
    PlainProgress,
    Record,
    RichProgress,
    Store,
    Unit,
    make_unit,
    run_units,
)
from byzllm.runs._runner import format_error

SECOND_SIGNAL_WORKER = Path(__file__).with_name("second_signal_worker.py")
GROUP_SIGNAL_WORKER = Path(__file__).with_name("group_signal_worker.py")
EXIT_WAIT_WORKER = Path(__file__).with_name("exit_wait_worker.py")
SRC = Path(__file__).resolve().parents[2] / "src"


class Value(Record):
    kind: ClassVar[str] = "value"
    n: int


def value_work(payload: dict[str, Any]) -> Value:
    return Value(n=payload["n"])


async def async_value_work(payload: dict[str, Any]) -> list[Record]:
    await asyncio.sleep(0)
    return [Value(n=payload["n"])]


def fail_first_try(payload: dict[str, Any]) -> list[Record]:
    """Fails the first time it sees a unit (a marker file remembers), then succeeds."""
    marker = Path(payload["marker_dir"]) / f"tried-{payload['n']}"
    if payload["n"] == 3 and not marker.exists():
        marker.touch()
        raise RuntimeError("transient failure on the first try")
    return [Value(n=payload["n"])]


def always_fail(payload: dict[str, Any]) -> list[Record]:
    raise ValueError(f"unit {payload['n']} is broken")


def returns_garbage(payload: dict[str, Any]) -> Any:
    return {"not": "a record"}


def _units(n: int, **extra: Any) -> list[Unit]:
    return [make_unit({"n": i, **extra}, label=f"n{i}") for i in range(n)]


async def test_failed_unit_is_recorded_and_retry_failed_completes_it(tmp_path: Path) -> None:
    units = _units(8, marker_dir=str(tmp_path))
    run_dir = tmp_path / "run"

    first = await run_units(run_dir, units, fail_first_try, progress=False)
    assert (first.done, first.failed, first.status) == (7, 1, "finished")
    assert not first.complete
    assert [f.label for f in first.failures] == ["n3"]
    assert first.failures[0].error == "RuntimeError: transient failure on the first try"
    with Store.open(run_dir) as store:
        [failed] = store.failures()
        assert failed["label"] == "n3" and failed["attempts"] == 1
        assert failed["error"] == "RuntimeError: transient failure on the first try"
        assert len(store.records("value")) == 7

    # Without retry_failed the failed unit stays failed and nothing else reruns.
    again = await run_units(run_dir, units, fail_first_try, progress=False)
    assert (again.skipped, again.done, again.failed, again.not_run) == (7, 0, 0, 1)

    retried = await run_units(run_dir, units, fail_first_try, progress=False, retry_failed=True)
    assert (retried.skipped, retried.done, retried.failed) == (7, 1, 0)
    assert retried.complete
    with Store.open(run_dir) as store:
        assert store.counts() == {"pending": 0, "done": 8, "failed": 0}
        assert [row["n"] for row in store.records("value")] == list(range(8))
        unit = next(u for u in store.units() if u["label"] == "n3")
        assert unit["attempts"] == 2 and unit["error"] is None


async def test_max_failures_stops_the_run(tmp_path: Path) -> None:
    summary = await run_units(
        tmp_path, _units(50), always_fail, concurrency=1, max_failures=3, progress=False
    )
    assert summary.status == "stopped"
    assert summary.failed == 3
    assert summary.not_run == 47
    with Store.open(tmp_path) as store:
        assert store.counts() == {"pending": 47, "done": 0, "failed": 3}


async def test_work_returning_non_records_fails_the_unit(tmp_path: Path) -> None:
    summary = await run_units(tmp_path, _units(2), returns_garbage, progress=False)
    assert summary.failed == 2
    assert summary.failures[0].error.startswith("TypeError: work returned dict")


async def test_sync_async_and_inline_work_give_the_same_records(tmp_path: Path) -> None:
    results = []
    for name, work, executor in [
        ("sync", value_work, None),
        ("async", async_value_work, None),
        ("inline", value_work, LocalExecutor(sync_inline=True)),
    ]:
        await run_units(tmp_path / name, _units(20), work, executor=executor, progress=False)
        with Store.open(tmp_path / name) as store:
            results.append(store.records("value"))
    assert results[0] == results[1] == results[2] == [{"n": i} for i in range(20)]


async def test_concurrency_bound_is_respected(tmp_path: Path) -> None:
    in_flight = 0
    peak = 0

    async def tracked(payload: dict[str, Any]) -> None:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.002)
        in_flight -= 1

    summary = await run_units(tmp_path, _units(40), tracked, concurrency=5, progress=False)
    assert summary.done == 40
    assert peak == 5


async def test_sync_work_runs_off_the_event_loop_thread(tmp_path: Path) -> None:
    threads: set[int] = set()

    def where(payload: dict[str, Any]) -> None:
        threads.add(threading.get_ident())

    await run_units(tmp_path, _units(4), where, progress=False)
    assert threading.get_ident() not in threads


async def test_duplicate_units_run_once(tmp_path: Path) -> None:
    calls = 0

    async def count(payload: dict[str, Any]) -> None:
        nonlocal calls
        calls += 1

    units = _units(5) + _units(5)
    summary = await run_units(tmp_path, units, count, progress=False)
    assert (summary.total, summary.done, calls) == (5, 5, 5)


async def test_cancellation_keeps_finished_units_and_resume_completes(tmp_path: Path) -> None:
    finished = asyncio.Event()
    started = 0

    async def slow(payload: dict[str, Any]) -> Value:
        nonlocal started
        started += 1
        if payload["n"] >= 10:
            finished.set()
            await asyncio.sleep(60)  # still in flight when cancelled
        return Value(n=payload["n"])

    task = asyncio.create_task(run_units(tmp_path, _units(30), slow, concurrency=3, progress=False))
    await asyncio.wait_for(finished.wait(), timeout=10)
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    with Store.open(tmp_path) as store:
        counts = store.counts()
        assert counts["done"] == 10 and counts["failed"] == 0
        assert [row["n"] for row in store.records("value")] == list(range(10))
        assert store.runs()[-1]["status"] == "interrupted"

    summary = await run_units(tmp_path, _units(30), value_work, progress=False)
    assert (summary.skipped, summary.done) == (10, 20)


async def test_work_that_never_suspends_still_lets_a_cancel_in(tmp_path: Path) -> None:
    """Simulated work is async in form only: it never awaits. A signal handler's cancel (a
    callback on the loop, as SIGTERM's is) must still land within a few units, not after
    the whole run has gone through one task."""
    loop = asyncio.get_running_loop()
    ran = 0

    async def never_suspends(payload: dict[str, Any]) -> Value:
        nonlocal ran
        ran += 1
        if payload["n"] == 5:
            loop.call_soon(task.cancel)  # what loop.add_signal_handler(SIGTERM, ...) does
        return Value(n=payload["n"])

    task = asyncio.ensure_future(
        run_units(tmp_path, _units(500), never_suspends, concurrency=4, progress=False)
    )
    with pytest.raises(asyncio.CancelledError):
        await task
    assert ran < 20
    with Store.open(tmp_path) as store:
        assert 0 < store.counts()["done"] < 20
        assert store.runs()[-1]["status"] == "interrupted"


async def slow_value_work(payload: dict[str, Any]) -> Value:
    await asyncio.sleep(0.01)
    return Value(n=payload["n"])


class _SlowToClose(LocalExecutor):
    """Takes 0.2 s to close, and says when it starts to: a second signal lands there."""

    def __init__(self) -> None:
        super().__init__()
        self.closing = asyncio.Event()

    async def aclose(self) -> None:
        self.closing.set()
        await asyncio.sleep(0.2)
        await super().aclose()


async def test_a_second_cancel_while_the_run_stops_does_not_cut_the_stop_short(
    tmp_path: Path,
) -> None:
    """A second SIGTERM (the loop's handler cancels the task again) while the run stops: the
    finished units are still committed and the invocation is still recorded as interrupted
    (it stayed 'running', shown as 'killed' once the process was gone)."""
    executor = _SlowToClose()
    task = asyncio.ensure_future(
        run_units(
            tmp_path,
            _units(200),
            slow_value_work,
            executor=executor,
            concurrency=2,
            progress=False,
        )
    )
    while not (tmp_path / "results.sqlite").exists():
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)
    task.cancel()
    await executor.closing.wait()
    task.cancel()  # the second signal, while the executor closes
    with pytest.raises(asyncio.CancelledError):
        await task
    with Store.open(tmp_path) as store:
        [run] = store.runs()
        assert run["status"] == "interrupted" and run["finished_at"] is not None
        done = store.counts()["done"]
        assert 0 < done < 200 and run["units_done"] == done
        assert len(store.records("value")) == done


async def test_a_cancel_after_the_units_while_the_run_stops_is_not_lost(tmp_path: Path) -> None:
    """Every unit done, then cancelled while the run stops: the stop completes (recorded as
    finished) and the cancel is still raised to the caller."""
    executor = _SlowToClose()
    task = asyncio.ensure_future(
        run_units(tmp_path, _units(5), async_value_work, executor=executor, progress=False)
    )
    await executor.closing.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    with Store.open(tmp_path) as store:
        [run] = store.runs()
        assert run["status"] == "finished" and store.counts()["done"] == 5


def _worker_env() -> dict[str, str]:
    """The environment of a worker script: this checkout's byzllm first."""
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
    }


def _signalled_twice(
    cmd: list[str], run_dir: Path, marker: Path, sig: int
) -> tuple[int, bytes, bytes]:
    """Run ``cmd`` (a worker script), send it ``sig`` once some of its units are done and
    again 50 ms after it wrote ``marker`` (the moment the test aims at); its exit code,
    stdout and stderr."""
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_worker_env(),
        # As a terminal delivers it (an ignored SIGINT would be inherited from the shell).
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not _done_units(run_dir):
        time.sleep(0.01)
    proc.send_signal(sig)
    while time.monotonic() < deadline and not marker.exists():
        time.sleep(0.005)
    time.sleep(0.05)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=30)
    return proc.returncode, out, err


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_second_signal_while_the_run_stops_keeps_the_store_consistent(
    tmp_path: Path, sig: int
) -> None:
    """Ctrl-C (or SIGTERM) twice, the second while the run stops: exit 130 with the resume
    line, the finished units and the invocation's end recorded, and the rerun resumes. A
    second Ctrl-C used to raise wherever the stop was, leaving the invocation 'killed'."""
    run_dir, marker = tmp_path / "run", tmp_path / "closing"
    cmd = [sys.executable, str(SECOND_SIGNAL_WORKER), str(run_dir), str(marker)]
    returncode, _, err = _signalled_twice(cmd, run_dir, marker, sig)
    assert returncode == 130, err.decode()
    assert "Traceback" not in err.decode()
    assert "rerun the same command to resume" in err.decode()
    with Store.open(run_dir) as store:
        [run] = store.runs()
        done = store.counts()["done"]
        assert run["status"] == "interrupted" and run["units_done"] == done
        assert len(store.records("mark")) == done
    marker.unlink()
    rerun = subprocess.run(cmd, capture_output=True, env=_worker_env(), timeout=60, check=False)
    assert rerun.returncode == 0, rerun.stderr.decode()
    with Store.open(run_dir) as store:
        assert store.counts()["done"] == 400 and len(store.records("mark")) == 400


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_second_signal_while_the_command_counts_the_units_keeps_its_output(
    tmp_path: Path, sig: int
) -> None:
    """Ctrl-C (or SIGTERM) twice, the second while the stopped command counts the run's units
    for its resume line and its --json document: both still come, once, and exit 130. It
    used to print a bare 'interrupted' instead, and the JSON without its 'units'."""
    run_dir, marker = tmp_path / "run", tmp_path / "counting"
    cmd = [sys.executable, str(SECOND_SIGNAL_WORKER), str(run_dir), str(marker), "counting"]
    returncode, out, err = _signalled_twice(cmd, run_dir, marker, sig)
    stderr = err.decode()
    assert returncode == 130, stderr
    with Store.open(run_dir) as store:
        done = store.counts()["done"]
    said = [line for line in stderr.splitlines() if line.startswith("interrupted")]
    assert said == [
        f"interrupted: {done} of 400 units done, 0 failed; rerun the same command to resume"
    ], stderr
    document = json.loads(out)
    assert document["status"] == "interrupted" and document["exit_code"] == 130
    assert document["units"] == {"total": 400, "done": done, "failed": 0, "pending": 400 - done}


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_while_an_interrupted_command_waits_at_exit_ends_it_quietly(
    tmp_path: Path, sig: int
) -> None:
    """After Ctrl-C the `byzllm` command has printed its resume line, and the interpreter
    waits at exit for sync units still running in threads: a further Ctrl-C (or SIGTERM)
    ends it at once with exit 130 and nothing more on stderr. Ctrl-C there used to print
    "Exception ignored in: <module 'threading'>" and a traceback; SIGTERM killed it."""
    run_dir = tmp_path / "run"
    env = _worker_env()
    proc = subprocess.Popen(
        [sys.executable, str(EXIT_WAIT_WORKER), str(run_dir)],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert proc.stderr is not None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and _done_units(run_dir) < 4:
            time.sleep(0.01)
        proc.send_signal(signal.SIGINT)  # the four short units are done, two long ones run
        said = ""
        while not said.startswith("interrupted"):
            said = proc.stderr.readline()
            assert said, "the command ended without its resume line"
        time.sleep(0.2)  # (from that line to the wait at exit: well under a millisecond)
        proc.send_signal(sig)
        rest = proc.stderr.read()
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert said.startswith("interrupted: 4 of 20 units done"), said
    assert proc.returncode == 130, rest
    assert rest == ""


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_second_signal_while_a_process_run_waits_at_exit_leaves_no_semaphores(
    tmp_path: Path, sig: int
) -> None:
    """Ctrl-C (or SIGTERM) twice on a run in worker processes, the second while the
    interpreter waits at exit for the pool's busy workers: exit 130 at once, and nothing more
    on stderr. The semaphores of the pool's queues were left to multiprocessing's resource
    tracker, which warned once the command had ended: "resource_tracker: There appear to be
    5 leaked semaphore objects to clean up at shutdown"."""
    run_dir, marker = tmp_path / "run", tmp_path / "ended"
    cmd = [sys.executable, str(EXIT_WAIT_WORKER), str(run_dir), str(marker)]
    returncode, _, err = _signalled_twice(cmd, run_dir, marker, sig)
    stderr = err.decode()
    assert returncode == 130, stderr
    with Store.open(run_dir) as store:
        done = store.counts()["done"]
    assert stderr.splitlines() == [
        f"interrupted: {done} of 20 units done, 0 failed; rerun the same command to resume"
    ], stderr


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads process groups in /proc")
def test_a_terminals_ctrl_c_stops_a_process_run_as_one_to_the_run_alone(tmp_path: Path) -> None:
    """A terminal's Ctrl-C reaches the whole process group, worker processes included: the
    run stops as on a Ctrl-C to it alone (exit 130, the resume line, the finished units and
    the invocation's end recorded), no worker prints a traceback or outlives it, and the rerun
    resumes. A worker waiting for work printed a KeyboardInterrupt traceback; a busy one sent
    it back as its unit's result, and could leave the pool's result queue locked (the run
    then hung at exit)."""
    run_dir, marker = tmp_path / "run", tmp_path / "started"
    env = _worker_env()
    cmd = [sys.executable, str(GROUP_SIGNAL_WORKER), str(run_dir), str(marker)]
    proc = subprocess.Popen(
        cmd,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,  # a group of its own, as a terminal's foreground job
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        # The third unit runs, and both workers have started (each watches the run from a
        # thread: the run's other processes, its fork server and multiprocessing's resource
        # tracker, have one thread), one of them waiting for work.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (
            marker.exists() and _threaded(set(_in_group(proc.pid)) - {proc.pid}) == 2
        ):
            assert proc.poll() is None
            time.sleep(0.01)
        time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    stderr = err.decode()
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
    assert "interrupted: 2 of 3 units done" in stderr, stderr
    deadline = time.monotonic() + 10
    while _in_group(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _in_group(proc.pid), "processes of the run outlived it"
    with Store.open(run_dir) as store:
        [run] = store.runs()
        assert run["status"] == "interrupted" and run["units_done"] == 2
        assert len(store.records("computed")) == 2
    marker.unlink()
    rerun = subprocess.run(cmd, capture_output=True, env=_worker_env(), timeout=60, check=False)
    assert rerun.returncode == 0, rerun.stderr.decode()
    with Store.open(run_dir) as store:
        assert store.counts()["done"] == 3 and len(store.records("computed")) == 3


def _in_group(group: int) -> list[int]:
    """The live processes (not zombies) of process group ``group``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rpartition(")")[2].split()
            except OSError:  # gone meanwhile
                continue
            if fields[0] != "Z" and int(fields[2]) == group:
                found.append(int(entry.name))
    return found


def _threaded(pids: set[int]) -> int:
    """How many of the processes ``pids`` have more than one thread."""
    count = 0
    for pid in pids:
        with contextlib.suppress(OSError):  # gone meanwhile
            count += len(list(Path(f"/proc/{pid}/task").iterdir())) > 1
    return count


def _done_units(run_dir: Path) -> int:
    if not (run_dir / "results.sqlite").exists():
        return 0
    with Store.open(run_dir) as store:
        return store.counts()["done"]


async def test_config_and_provenance_are_recorded(tmp_path: Path) -> None:
    await run_units(tmp_path, _units(1), value_work, config={"alpha": 0.5}, progress=False)
    with Store.open(tmp_path) as store:
        [run] = store.runs()
    assert run["config"] == {"alpha": 0.5}
    assert run["byzllm_version"]
    assert run["status"] == "finished"
    assert (run["units_total"], run["units_done"]) == (1, 1)


async def test_invalid_arguments_are_input_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="concurrency"):
        await run_units(tmp_path, _units(1), value_work, concurrency=0)
    with pytest.raises(InputError, match="max_failures"):
        await run_units(tmp_path, _units(1), value_work, max_failures=0)
    with pytest.raises(InputError, match="Unit objects"):
        await run_units(tmp_path, [{"n": 1}], value_work)  # type: ignore[list-item]


async def test_plain_progress_reports_counts_and_failures(tmp_path: Path) -> None:
    stream = io.StringIO()
    await run_units(
        tmp_path,
        _units(5),
        always_fail,
        progress=PlainProgress(stream, interval_s=0.0),
        description="demo",
    )
    text = stream.getvalue()
    assert text.startswith("demo: 5 of 5 units to run")
    assert "demo: unit n0 failed: ValueError: unit 0 is broken" in text
    assert "0/5 done, 5 failed" in text


def test_format_error_is_one_bounded_line() -> None:
    assert format_error(KeyError("x")) == "KeyError: 'x'"
    assert format_error(RuntimeError()) == "RuntimeError"
    huge = format_error(ValueError("line\n" * 500_000))
    assert "\n" not in huge and len(huge) <= 2000


async def test_rich_progress_bar_shows_counts_rate_and_failures(tmp_path: Path) -> None:
    from rich.console import Console

    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=140, color_system=None)
    await run_units(tmp_path, _units(5), always_fail, progress=RichProgress(console))
    text = buffer.getvalue()
    assert "5/5" in text and "5 failed" in text and "units/s" in text and "ETA" in text
    assert "unit n0 failed: ValueError: unit 0 is broken" in text


@pytest.mark.slow
async def test_process_executor_runs_units_in_other_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from byzllm.runs import ProcessExecutor

    monkeypatch.syspath_prepend(str(Path(__file__).with_name("importable")))
    import process_work  # type: ignore[import-not-found]

    units = [make_unit({"n": n}, label=f"n{n}") for n in [*range(6), -1]]
    for name, work in (("sync", process_work.square), ("async", process_work.async_square)):
        summary = await run_units(
            tmp_path / name,
            units,
            work,
            executor=ProcessExecutor(max_workers=2),
            progress=False,
        )
        assert (summary.done, summary.failed) == (6, 1)
        assert summary.failures[0].error == "ValueError: negative input"
        with Store.open(tmp_path / name) as store:
            rows = store.records("computed")
        assert [(r["n"], r["square"]) for r in rows] == [(n, n * n) for n in range(6)]
        assert os.getpid() not in {r["pid"] for r in rows}


@pytest.mark.parametrize("enabled", [True, False])
async def test_the_garbage_collector_runs_on_a_schedule_during_a_run(
    tmp_path: Path, enabled: bool
) -> None:
    # While units run, automatic collections are off and the run collects on its own
    # schedule (cycles still go, within a second here); afterwards the collector is as it was,
    # also after a failing unit.
    import gc
    import weakref

    class Cycle:
        me: Any = None

    seen: list[bool] = []
    collected: list[weakref.ref[Cycle]] = []
    gone_meanwhile: list[bool] = []

    async def work(payload: dict[str, Any]) -> list[Record]:
        seen.append(gc.isenabled())
        cycle = Cycle()
        cycle.me = cycle
        collected.append(weakref.ref(cycle))
        del cycle
        await asyncio.sleep(0.02 if payload["n"] < 2 else 0)
        if payload["n"] == 2:
            await asyncio.sleep(1.5)  # the scheduled young collection comes meanwhile
            gone_meanwhile.append(collected[0]() is None)
        if payload["n"] == 3:
            raise ValueError("a failing unit")
        return [Value(n=payload["n"])]

    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        summary = await run_units(tmp_path / "run", _units(4), work, concurrency=1, progress=False)
        assert (summary.done, summary.failed) == (3, 1)
        assert gc.isenabled() is enabled
        assert not any(seen)
        assert gone_meanwhile == [enabled]  # with the collector off before, it stays off
    finally:
        (gc.enable if was else gc.disable)()


class _Unreachable(LocalExecutor):
    """An executor whose start fails, as joining a Ray cluster that does not answer."""

    starts = 0

    async def start(self, concurrency: int) -> None:
        type(self).starts += 1
        raise ConnectionError("no cluster answers")


async def test_a_finished_run_starts_no_executor_and_a_failed_start_is_an_error(
    tmp_path: Path,
) -> None:
    """Rerunning a finished run with --executor ray joined (or started) Ray for nothing:
    7-13 s, or exit 2 when no cluster answered. Nothing to run now starts nothing; and a start
    that fails is recorded as an error, not as an interruption."""
    units = _units(3)
    assert (await run_units(tmp_path, units, value_work, progress=False)).done == 3
    again = await run_units(tmp_path, units, value_work, executor=_Unreachable(), progress=False)
    assert again.skipped == 3 and _Unreachable.starts == 0
    with pytest.raises(ConnectionError):
        await run_units(tmp_path, _units(4), value_work, executor=_Unreachable(), progress=False)
    assert _Unreachable.starts == 1
    with Store.open(tmp_path) as store:
        assert store.runs()[-1]["status"] == "error"


async def test_on_started_runs_once_the_units_are_registered_before_any_runs(
    tmp_path: Path,
) -> None:
    # A caller's own background work (the matrix imports its drawing library) starts here:
    # before the registration, its thread held up every insert's turn with the GIL.
    seen: list[dict[str, int]] = []

    def started() -> None:
        with Store.open(tmp_path) as store:
            seen.append(store.counts())

    units = _units(5)
    await run_units(tmp_path, units, async_value_work, progress=False, on_started=started)
    assert seen == [{"pending": 5, "done": 0, "failed": 0}]
    # A rerun with nothing left to run still calls it (the command still draws).
    seen.clear()
    await run_units(tmp_path, units, async_value_work, progress=False, on_started=started)
    assert seen == [{"pending": 0, "done": 5, "failed": 0}]
