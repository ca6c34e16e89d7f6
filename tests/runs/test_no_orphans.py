"""Acceptance: SIGKILL of a `--executor process` run leaves no process of it behind (no worker,
no fork server, no resource tracker)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="reads the process table from /proc"
)

MARK = "BYZLLM_ORPHAN_TEST"


def _processes_marked(token: str) -> dict[int, tuple[int, str]]:
    """Live processes whose environment carries ``MARK=token``: pid -> (ppid, command line).

    Every process the run starts inherits its environment (workers, fork server, resource
    tracker), so the mark finds them even after their parent died and they were reparented.
    Zombies (exited, waiting to be reaped by whoever adopted them) do not count.
    """
    needle = f"{MARK}={token}".encode()
    found: dict[int, tuple[int, str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # gone meanwhile, or not ours
            continue
        state, ppid = stat.rpartition(")")[2].split()[:2]
        if state != "Z":
            found[int(entry.name)] = (int(ppid), cmdline.strip())
    return found


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_sigkill_of_a_process_executor_run_leaves_no_process(tmp_path: Path) -> None:
    token = uuid.uuid4().hex
    env = {**os.environ, MARK: token, "PYTHONUNBUFFERED": "1"}
    command = [
        sys.executable,
        "-c",
        "from byzllm.cli import main; main()",
        "consensus",
        "run",
        "--executor",
        "process",
        "-o",
        str(tmp_path / "run"),
        "--set",
        "dataset.n=2000",  # 12,000 units: still running when it is killed
    ]
    proc = subprocess.Popen(
        command, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    seen: dict[int, tuple[int, str]] = {}
    try:
        # Wait until units run: workers exist (children of the fork server, not of the run).
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            seen = _processes_marked(token)
            workers = [pid for pid, (ppid, _) in seen.items() if ppid not in (proc.pid, 1)]
            if workers and len(seen) >= 4:
                break
            assert time.monotonic() < deadline, f"no workers started: {seen}"
            time.sleep(0.1)
        assert any("forkserver" in cmd for _, cmd in seen.values()), seen
        assert any("resource_tracker" in cmd for _, cmd in seen.values()), seen
        time.sleep(0.5)  # units in flight

        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)

        deadline = time.monotonic() + 10
        left = _processes_marked(token)
        while left and time.monotonic() < deadline:
            time.sleep(0.1)
            left = _processes_marked(token)
        assert not left, f"processes outlived the killed run: {left}"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        for pid in _processes_marked(token):  # never leak them into the rest of the suite
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if proc.stderr is not None:
            proc.stderr.close()


_SPAWNER = """
import functools, os, subprocess, sys, time
from byzllm._process import die_with_parent
child = subprocess.Popen(
    [sys.executable, "-c", "import time; time.sleep(60)"],
    preexec_fn=functools.partial(die_with_parent, expected_parent=os.getpid()),
)
print(child.pid, flush=True)
time.sleep(60)
"""


@pytest.mark.timeout(60)
def test_a_subprocess_child_dies_with_its_killed_parent() -> None:
    """The mechanism of `byzllm serve`'s llama.cpp server (preexec_fn=die_with_parent)."""
    token = uuid.uuid4().hex
    env = {**os.environ, MARK: token}
    proc = subprocess.Popen(
        [sys.executable, "-c", _SPAWNER], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        child = int(proc.stdout.readline())
        assert child in _processes_marked(token)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 10
        while child in _processes_marked(token) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert child not in _processes_marked(token)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        for pid in _processes_marked(token):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if proc.stdout is not None:
            proc.stdout.close()


def test_children_that_call_no_model_get_no_secret_looking_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from byzllm._process import looks_secret, secrets_hidden, without_secrets

    for name in (
        "OPENAI_API_KEY",
        "HF_TOKEN",
        "AWS_SECRET_ACCESS_KEY",
        "SSH_AUTH_SOCK",
        "pgpassword",
    ):
        assert looks_secret(name), name
    for name in ("PATH", "HOME", "PYTHONPATH", "LANG", "NUMBA_DISABLE_JIT"):
        assert not looks_secret(name), name
    assert without_secrets({"PATH": "/bin", "OPENAI_API_KEY": "sk-1"}) == {"PATH": "/bin"}
    monkeypatch.setenv("BYZLLM_TEST_API_KEY", "sk-2")
    with secrets_hidden():
        assert "BYZLLM_TEST_API_KEY" not in os.environ
        shown = subprocess.run(["env"], capture_output=True, text=True, check=True).stdout
        assert "sk-2" not in shown and "PATH=" in shown
    assert os.environ["BYZLLM_TEST_API_KEY"] == "sk-2"  # put back
