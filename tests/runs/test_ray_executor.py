"""The Ray executor through the real runner, on a real local Ray instance.

Results do not depend on the executor (consensus and WhoDunit units, through ``run_units`` and
through ``--executor ray``, give the same report rows and records as the local executor); a
failing unit is stored with the work's own exception; a cancelled run stops its tasks on the
cluster; a run SIGKILLed part-way resumes with only the missing units. One local instance
(2 CPUs, no dashboard) serves the whole module and is shut down after it, leaving no process
behind. Skipped when ray is not installed; CI installs the ``ray`` extra so that they run there.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from byzllm.experiments.consensus.demo import demo_config, demo_rows
from byzllm.experiments.consensus.experiment import consensus_unit
from byzllm.experiments.consensus.experiment import expand_units as consensus_units
from byzllm.experiments.whodunit import WhoDunitRunConfig, work
from byzllm.experiments.whodunit import expand_units as whodunit_units
from byzllm.runs import LocalExecutor, RayExecutor, Store, make_unit, run_units

if os.environ.get("CI", "").lower() == "true" and importlib.util.find_spec("ray") is None:
    pytest.fail("ray is not installed: CI must install the 'ray' extra", pytrace=False)
ray = pytest.importorskip(
    "ray", reason="ray is not installed (pip install 'byzllm[ray]' to run the Ray executor tests)"
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

IMPORTABLE = Path(__file__).resolve().with_name("importable")
KILL_WORKER = Path(__file__).resolve().with_name("ray_kill_resume_worker.py")


# -- the module's Ray instance -----------------------------------------------------------------


def _descendants(root: int) -> dict[int, str]:
    """Live (non-zombie) descendants of process ``root``: pid -> command (Linux /proc)."""
    children: dict[int, list[int]] = {}
    states: dict[int, tuple[str, str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # the process ended meanwhile
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
        comm = stat[stat.index("(") + 1 : stat.rindex(")")]
        state, ppid = stat[stat.rindex(")") + 2 :].split()[:2]
        states[int(entry.name)] = (state, comm)
        children.setdefault(int(ppid), []).append(int(entry.name))
    found: dict[int, str] = {}
    todo = list(children.get(root, []))
    while todo:
        pid = todo.pop()
        state, comm = states[pid]
        if state != "Z":
            found[pid] = comm
        todo.extend(children.get(pid, []))
    return found


def _still_running(pids: dict[int, str], timeout_s: float) -> dict[int, str]:
    """Those of ``pids`` still running (not zombies) after waiting up to ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        alive = {}
        for pid, comm in pids.items():
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
            except OSError:
                continue
            if stat[stat.rindex(")") + 2] != "Z":
                alive[pid] = comm
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.1)


@pytest.fixture(scope="module")
def ray_address() -> Iterator[str]:
    """One local Ray instance for the module (2 CPUs, no dashboard); its address.

    Its workers can import the test work functions in ``importable/`` by name. Shut down at
    the end of the module, and every process it started must be gone then.
    """
    if ray.is_initialized():
        pytest.fail("a Ray instance is already connected in this process")
    track = sys.platform.startswith("linux")
    before = _descendants(os.getpid()) if track else {}
    # Workers inherit the environment of the instance (not a runtime_env: that would cost
    # seconds per worker), so they import the test work functions by name.
    pythonpath = os.pathsep.join(p for p in (str(IMPORTABLE), os.environ.get("PYTHONPATH")) if p)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONPATH", pythonpath)
        context = ray.init(
            address="local",  # always a fresh local instance, even when RAY_ADDRESS is set
            num_cpus=2,
            include_dashboard=False,
            log_to_driver=False,
        )
    try:
        yield str(context.address_info["address"])
    finally:
        started = {
            pid: comm
            for pid, comm in (_descendants(os.getpid()) if track else {}).items()
            if pid not in before
        }
        ray.shutdown()
        left = _still_running(started, timeout_s=30)
        for pid in left:  # do not leave them to the rest of the suite
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        assert not left, f"Ray processes still running after ray.shutdown(): {left}"


@pytest.fixture
def importable(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The ``ray_work`` module (tests' work functions), imported by the name Ray's workers use."""
    monkeypatch.syspath_prepend(str(IMPORTABLE))
    import ray_work  # type: ignore[import-not-found]

    return ray_work


def _records(run_dir: Path, kind: str) -> list[dict[str, Any]]:
    with Store.open(run_dir) as store:
        return store.records(kind)


# -- same results as the local executor ---------------------------------------------------------


async def test_consensus_units_give_the_local_executors_report(
    ray_address: str, tmp_path: Path
) -> None:
    cfg = demo_config(questions=3)
    units = consensus_units(cfg)
    assert len(units) == 18  # 2 protocols x 3 topologies x 3 questions
    local = await run_units(tmp_path / "local", units, consensus_unit, config=cfg, progress=False)
    remote = await run_units(
        tmp_path / "ray", units, consensus_unit, config=cfg, executor=RayExecutor(), progress=False
    )
    assert local.complete and remote.complete
    assert (remote.done, remote.failed) == (18, 0)
    # It used the module's instance and left it running (it did not start it).
    assert ray.is_initialized()

    rows = {
        name: demo_rows(_records(tmp_path / name, "consensus_question"), for_json=True)
        for name in ("local", "ray")
    }
    assert len(rows["ray"]) == 6
    assert rows["ray"] == rows["local"]
    for kind in ("consensus_question", "consensus_round"):
        assert _records(tmp_path / "ray", kind) == _records(tmp_path / "local", kind), kind


async def test_whodunit_units_give_the_local_executors_records(
    ray_address: str, tmp_path: Path
) -> None:
    cfg = WhoDunitRunConfig(split="test", n_games=3, repeats=2)
    units = whodunit_units(cfg)
    local = await run_units(tmp_path / "local", units, work, config=cfg, progress=False)
    remote = await run_units(
        tmp_path / "ray", units, work, config=cfg, executor=RayExecutor(), progress=False
    )
    assert local.complete and (remote.done, remote.failed) == (6, 0)
    games = _records(tmp_path / "ray", "whodunit_game")
    assert len(games) == 6 and all(g["simulated"] for g in games)
    assert games == _records(tmp_path / "local", "whodunit_game")
    assert _records(tmp_path / "ray", "whodunit_turn") == _records(
        tmp_path / "local", "whodunit_turn"
    )


def test_cli_executor_ray_joins_the_running_instance(ray_address: str, tmp_path: Path) -> None:
    from byzllm.cli import app

    args = ["whodunit", "run", "--set", "split=test", "--set", "n_games=2", "--executor", "ray"]
    result = CliRunner().invoke(app, [*args, "-o", str(tmp_path / "ray")])
    assert result.exit_code == 0, result.output
    local = CliRunner().invoke(app, [*args[:-2], "-o", str(tmp_path / "local")])
    assert local.exit_code == 0, local.output
    assert _records(tmp_path / "ray", "whodunit_game") == _records(
        tmp_path / "local", "whodunit_game"
    )
    assert ray.is_initialized()


# -- a model endpoint's limit ------------------------------------------------------------------


async def test_ray_tasks_share_the_limit_the_config_sets(
    ray_address: str,
    tmp_path: Path,
    shared_limit_run: Any,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Each Ray worker built its own models and allowed the endpoint's whole limit; now no
    more units run at once than the limit, each holding its share of it."""
    summary, rows, max_in_flight = await shared_limit_run(tmp_path, RayExecutor())
    assert (summary.done, summary.failed) == (4, 0), summary.failures
    assert sorted(row["limit"] for row in rows) == [1, 1, 1, 1]
    assert os.getpid() not in {row["pid"] for row in rows}
    assert max_in_flight <= 2
    err = capsys.readouterr().err
    assert err.count("note:") == 1 and "units run 2 at a time, not 4 as asked for" in err


# -- failures -----------------------------------------------------------------------------------


async def test_a_failing_unit_is_stored_with_the_works_own_exception(
    ray_address: str, importable: Any, tmp_path: Path
) -> None:
    units = [make_unit({"n": n}, label=f"n{n}") for n in (0, 1, -3, 2, 3)]
    local = await run_units(
        tmp_path / "local",
        units,
        importable.square_or_break,
        executor=LocalExecutor(),
        progress=False,
    )
    remote = await run_units(
        tmp_path / "ray",
        units,
        importable.square_or_break,
        executor=RayExecutor(),
        progress=False,
    )
    assert (remote.done, remote.failed, remote.status) == (4, 1, "finished")
    expected = "UnitBrokeError: unit n=-3 broke: negative input"
    # The work's own exception type and message: no Ray wrapper, no remote traceback.
    assert [f.error for f in remote.failures] == [expected]
    assert [f.error for f in local.failures] == [expected]
    with Store.open(tmp_path / "ray") as store:
        assert store.counts() == {"pending": 0, "done": 4, "failed": 1}
        failed = store.failures()
        rows = store.records("ray_squared")
    assert [(u["label"], u["error"]) for u in failed] == [("n-3", expected)]
    assert sorted((r["n"], r["square"]) for r in rows) == [(n, n * n) for n in range(4)]
    assert os.getpid() not in {r["pid"] for r in rows}  # computed in Ray's workers


async def test_a_cancelled_run_stops_its_units_tasks_on_the_cluster(
    ray_address: str, importable: Any, tmp_path: Path
) -> None:
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    units = [make_unit({"index": i, "log_dir": str(log_dir), "sleep_s": 60}) for i in range(4)]
    run = asyncio.ensure_future(
        run_units(tmp_path / "run", units, importable.hold, executor=RayExecutor(), progress=False)
    )
    deadline = time.monotonic() + 30
    while len(started := list(log_dir.glob("started-*"))) < 2:  # one unit per CPU
        assert not run.done() and time.monotonic() < deadline, "its units never started"
        await asyncio.sleep(0.05)
    workers = {int(path.read_text()): path.name for path in started}
    assert os.getpid() not in workers
    run.cancel()  # what Ctrl-C does under asyncio.run
    with pytest.raises(asyncio.CancelledError):
        await run
    # Their tasks are stopped on the cluster too (not left running for their 60 s).
    assert not _still_running(workers, timeout_s=15), "the cancelled units' tasks still run"
    assert not list(log_dir.glob("finished-*"))
    with Store.open(tmp_path / "run") as store:
        assert store.counts() == {"pending": 4, "done": 0, "failed": 0}
        assert store.runs()[-1]["status"] == "interrupted"


_JOIN_AND_CANCEL = """
import asyncio, pathlib, sys, time
sys.path.insert(0, sys.argv[4])
import ray, ray_work
from byzllm.runs import RayExecutor, make_unit, run_units

cancels = []
ray.cancel = lambda ref, **options: cancels.append(ref)  # counted, not sent

async def main(address, log_dir, run_dir):
    units = [make_unit({"index": i, "log_dir": log_dir, "sleep_s": 60}) for i in range(4)]
    executor = RayExecutor(address)
    run = asyncio.ensure_future(
        run_units(run_dir, units, ray_work.hold, executor=executor, progress=False)
    )
    deadline = time.monotonic() + 60
    while len(list(pathlib.Path(log_dir).glob("started-*"))) < 2:
        assert not run.done() and time.monotonic() < deadline, "its units never started"
        await asyncio.sleep(0.05)
    run.cancel()
    try:
        await run
    except asyncio.CancelledError:
        print("cancelled", len(cancels), ray.is_initialized())

asyncio.run(main(*sys.argv[1:4]))
"""


def test_a_cancelled_run_on_a_session_it_opened_ends_its_job_and_so_its_tasks(
    ray_address: str, tmp_path: Path
) -> None:
    """Joined by address (its own Ray session), a stopped run does not cancel task by task
    (a cancel racing a task's reply aborts the process inside Ray's core): closing the
    session ends its job, and the cluster stops the job's tasks."""
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    driver = subprocess.run(
        [
            sys.executable,
            "-c",
            _JOIN_AND_CANCEL,
            ray_address,
            str(log_dir),
            str(tmp_path / "run"),
            str(IMPORTABLE),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert driver.returncode == 0, driver.stderr
    # No task cancelled one by one; the session it opened is closed.
    assert driver.stdout.split() == ["cancelled", "0", "False"]
    workers = {int(path.read_text()): path.name for path in log_dir.glob("started-*")}
    assert len(workers) >= 2 and os.getpid() not in workers
    assert not _still_running(workers, timeout_s=15), "the stopped run's tasks still run"
    assert not list(log_dir.glob("finished-*"))
    with Store.open(tmp_path / "run") as store:
        assert store.counts() == {"pending": 4, "done": 0, "failed": 0}


# -- resume after a killed run ------------------------------------------------------------------


def _done_ids(run_dir: Path) -> set[str]:
    if not (run_dir / "results.sqlite").exists():
        return set()
    with Store.open(run_dir) as store:
        return {unit["id"] for unit in store.units("done")}


def _logged(log_dir: Path) -> dict[str, list[int]]:
    """Unit indices computed, per driver (Ray job): complete lines only."""
    logs = {}
    for log in sorted(log_dir.glob("job-*.log")):
        lines = log.read_text(encoding="utf-8").split("\n")
        logs[log.stem] = [int(line) for line in lines[:-1] if line.strip()]
    return logs


def test_a_killed_run_resumes_with_only_the_missing_units(ray_address: str, tmp_path: Path) -> None:
    n_units = 30
    run_dir, log_dir = tmp_path / "run", tmp_path / "logs"
    log_dir.mkdir()
    index_of = {
        make_unit({"index": i, "log_dir": str(log_dir), "sleep_s": 0.1}).id: i
        for i in range(n_units)
    }
    env = {**os.environ, "RAY_ADDRESS": ray_address, "PYTHONUNBUFFERED": "1"}

    def start(name: str) -> subprocess.Popen[bytes]:
        with (
            (tmp_path / f"{name}.out").open("wb") as out,
            (tmp_path / f"{name}.err").open("wb") as err,
        ):
            return subprocess.Popen(
                [sys.executable, str(KILL_WORKER), str(run_dir), str(log_dir), str(n_units)],
                stdout=out,
                stderr=err,
                env=env,
            )

    def output(name: str) -> str:
        return "".join(
            (tmp_path / f"{name}.{s}").read_text(errors="replace") for s in ("out", "err")
        )

    # The first run joins the module's Ray instance; it is SIGKILLed once a few units are
    # stored, with others in flight on Ray's workers.
    proc = start("first")
    deadline = time.monotonic() + 60
    while len(_done_ids(run_dir)) < 3:
        assert proc.poll() is None, f"the run ended before it was killed:\n{output('first')}"
        assert time.monotonic() < deadline, f"no unit stored in 60 s:\n{output('first')}"
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(timeout=30) == -signal.SIGKILL
    done = {index_of[unit_id] for unit_id in _done_ids(run_dir)}
    assert 3 <= len(done) < n_units, "the kill should leave a partly done run"
    [first_job] = _logged(log_dir)  # one driver so far
    assert done <= set(_logged(log_dir)[first_job])  # stored units were computed by it

    # The rerun (a new driver, so a new Ray job) runs only the missing units, once each. (Tasks
    # of the killed driver still running log to the first job's file, not to the rerun's.)
    rerun = start("second")
    assert rerun.wait(timeout=90) == 0, output("second")
    missing = n_units - len(done)
    assert output("second").startswith(f"finished done={missing} skipped={len(done)}")
    logs = _logged(log_dir)
    [second_job] = set(logs) - {first_job}
    assert sorted(logs[second_job]) == sorted(set(range(n_units)) - done)

    with Store.open(run_dir) as store:
        assert store.counts() == {"pending": 0, "done": n_units, "failed": 0}
        assert {unit["id"] for unit in store.units()} == set(index_of)
        markers = store.records("marker")
        assert [run["status"] for run in store.runs()] == ["killed", "finished"]
    # Exactly two records per unit: nothing lost, nothing stored twice.
    assert sorted((m["index"], m["part"]) for m in markers) == [
        (i, c) for i in range(n_units) for c in (0, 1)
    ]
    db = sqlite3.connect(run_dir / "results.sqlite")
    try:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        db.close()
