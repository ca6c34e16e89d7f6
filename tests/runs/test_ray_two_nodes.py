"""A real two-node Ray cluster (head and worker on 127.0.0.1) losing its worker mid-run.

``byzllm consensus run --executor ray --json`` joins the cluster and is stopped by SIGTERM
(it must end within 10 s, keeping what finished, its stdout one JSON document saying it was
interrupted); rerun, it resumes, and the worker node's
raylet is SIGKILLed while units run. Ray's driver relays the dead node's messages ("Raylet is
terminated", with its last log lines), which must not reach stdout: it stays one JSON
document. Rerunning the command
(``--retry-failed``, for units that were on the dead node) completes the run, and its report
equals that of the same config run on the local executor. Each node is a ``ray start --block``
in its own process group, so the test owns every process it starts and kills them all.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from byzllm.runs import Store

if os.environ.get("CI", "").lower() == "true" and importlib.util.find_spec("ray") is None:
    pytest.fail("ray is not installed: CI must install the 'ray' extra", pytrace=False)
pytest.importorskip(
    "ray", reason="ray is not installed (pip install 'byzllm[ray]' to run the Ray executor tests)"
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

CONFIG = """\
protocols: [sac, majority, cp-wbft]
topologies: [complete]
compositions:
  - {strong: 4, weak: 2, byzantine: 1, attack: replay}
F: [3]
T: [6]
seeds: [0, 1]
dataset: {name: synthetic, n: 100}
"""
UNITS = 3 * 2 * 100


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


#: Every process of the test without token authentication: Ray turns it on for a new head
#: when a token exists (~/.ray/auth_token, left by `ray get-auth-token --generate`), and a
#: worker started with `ray start --address` does not follow, so it could never join.
ENV = {**os.environ, "RAY_AUTH_MODE": "disabled"}


def _ray_start(*args: str, log: Path) -> subprocess.Popen[bytes]:
    """``ray start --block`` in a process group of its own (its node's every process)."""
    with log.open("wb") as out:
        return subprocess.Popen(
            [
                sys.executable, "-m", "ray.scripts.scripts", "start", "--block",
                "--num-cpus", "1", "--node-ip-address", "127.0.0.1", "--disable-usage-stats",
                *args,
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=ENV,
        )  # fmt: skip


def _kill_node(node: subprocess.Popen[bytes]) -> None:
    """SIGKILL every process of the node's group, and wait until none is left."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(node.pid, signal.SIGKILL)
    node.wait(timeout=30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.killpg(node.pid, 0)
        except ProcessLookupError:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(node.pid, signal.SIGKILL)
        time.sleep(0.2)


def _raylet(node: subprocess.Popen[bytes]) -> int:
    """The pid of the node's raylet (Linux /proc)."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                stat = (entry / "stat").read_text()
                comm = stat[stat.index("(") + 1 : stat.rindex(")")]
                pgid = int(stat[stat.rindex(")") + 2 :].split()[2])
                if comm == "raylet" and pgid == node.pid:
                    return int(entry.name)
    pytest.fail("the worker node has no raylet")


def _wait_for(predicate: object, what: str, timeout_s: float, log: Path) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():  # type: ignore[operator]
        if time.monotonic() > deadline:
            pytest.fail(f"{what} after {timeout_s:g} s:\n{log.read_text(errors='replace')}")
        time.sleep(0.2)


def _started(log: Path) -> bool:
    """Whether ``ray start`` says its node runs (the GCS answering is not enough: a worker
    that joins before the head has registered itself is refused)."""
    return "Ray runtime started" in log.read_text(errors="replace")


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A head and a worker node (one CPU each): the head's address and the worker."""
    port = _free_port()
    head_log, worker_log = tmp_path / "head.log", tmp_path / "worker.log"
    head = _ray_start("--head", "--port", str(port), "--include-dashboard=false", log=head_log)
    nodes = [head]
    try:
        _wait_for(lambda: _started(head_log), "the head did not start", 120, head_log)
        address = f"127.0.0.1:{port}"
        worker = _ray_start("--address", address, log=worker_log)
        nodes.append(worker)
        _wait_for(lambda: _started(worker_log), "the worker did not join", 120, worker_log)
        yield address, worker
    finally:
        for node in reversed(nodes):
            _kill_node(node)


def _byzllm(*args: str) -> list[str]:
    return [sys.executable, "-c", "from byzllm.cli import main; main()", *args]


def _done(run_dir: Path) -> int:
    if not (run_dir / "results.sqlite").exists():
        return 0
    try:
        with Store.open(run_dir) as store:
            return store.counts()["done"]
    except Exception:  # the first writer is still creating it
        return 0


def test_sigterm_and_a_dying_node_leave_json_and_a_run_that_resumes(
    cluster: tuple[str, subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    address, worker = cluster
    config = tmp_path / "two-nodes.yaml"
    config.write_text(CONFIG, encoding="utf-8")
    run_dir = tmp_path / "run"
    command = _byzllm(
        "consensus", "run", str(config), "-o", str(run_dir), "--executor", "ray",
        "--ray-address", address, "--json",
    )  # fmt: skip
    env = {**ENV, "PYTHONUNBUFFERED": "1"}
    env.pop("RAY_ADDRESS", None)

    def start(name: str) -> tuple[subprocess.Popen[bytes], Path, Path]:
        out, err = tmp_path / f"{name}.out", tmp_path / f"{name}.err"
        with out.open("wb") as stdout, err.open("wb") as stderr:
            return subprocess.Popen(command, stdout=stdout, stderr=stderr, env=env), out, err

    def when(proc: subprocess.Popen[bytes], err: Path, done: int) -> None:
        """Wait until ``done`` units are stored, the run still going."""
        _wait_for(lambda: _done(run_dir) >= done or proc.poll() is not None, "no unit", 120, err)
        assert proc.poll() is None, f"the run ended too soon:\n{err.read_text()}"

    # SIGTERM (a scheduler, `kill`): the run ends within seconds, what finished is kept.
    first, out, err = start("first")
    try:
        when(first, err, 20)
        sent = time.monotonic()
        first.send_signal(signal.SIGTERM)
        assert first.wait(timeout=10) == 130, err.read_text()
        assert time.monotonic() - sent < 10
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert (
        "interrupted:" in err.read_text() and "rerun the same command to resume" in err.read_text()
    )
    kept = _done(run_dir)
    assert 20 <= kept < UNITS
    stopped = json.loads(out.read_text())  # --json: still one JSON document, saying so
    assert stopped["status"] == "interrupted" and stopped["units"]["done"] == kept

    # The rerun resumes; the worker node's raylet dies under it.
    second, out, err = start("second")
    try:
        when(second, err, kept + 30)
        os.kill(_raylet(worker), signal.SIGKILL)
        second.wait(timeout=180)
    finally:
        if second.poll() is None:
            second.kill()
            second.wait()
    assert second.returncode in (0, 1), err.read_text()  # 1: units on the dead node failed
    assert "Raylet is terminated" in err.read_text()  # Ray said so, on stderr
    summary = json.loads(out.read_text())  # stdout is one JSON document, nothing else
    assert summary["skipped"] == kept
    assert summary["skipped"] + summary["done"] + summary["failed"] + summary["not_run"] == UNITS

    rerun = subprocess.run([*command, "--retry-failed"], capture_output=True, text=True, env=env)
    assert rerun.returncode == 0, rerun.stderr
    assert json.loads(rerun.stdout)["complete"] is True
    with Store.open(run_dir) as store:
        assert store.counts() == {"pending": 0, "done": UNITS, "failed": 0}

    local_dir = tmp_path / "local"
    local = subprocess.run(
        _byzllm("consensus", "run", str(config), "-o", str(local_dir)), capture_output=True
    )
    assert local.returncode == 0, local.stderr
    reports = [
        subprocess.run(
            _byzllm("consensus", "report", str(d), "--json"), capture_output=True, text=True
        )
        for d in (run_dir, local_dir)
    ]
    assert reports[0].returncode == 0 == reports[1].returncode
    assert json.loads(reports[0].stdout) == json.loads(reports[1].stdout)
