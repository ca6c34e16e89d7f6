"""A cgroup per run (``byzllm.sandbox._cgroup``): the whole run's memory is bounded where the
kernel lets this process make one (root here: v1 or v2), and the sandbox says so; elsewhere
(a user without delegation) it falls back to the per-process limits and says why.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from byzllm.sandbox import SandboxLimits, _cgroup, run_program, sandbox_support

pytestmark = pytest.mark.usefixtures("require_sandbox")

LIMITS = SandboxLimits(timeout_s=20.0, memory_mb=128, disk_mb=16, max_processes=16)

#: Four processes of 100 MB each: every one within its own 128 MB of address space, 400 MB
#: together, past the run's 128 + 2 x 16 + 64 = 224 MB.
SPREAD = textwrap.dedent(
    """
    import os, time
    children = []
    for _ in range(4):
        pid = os.fork()
        if pid == 0:
            block = bytearray(100_000_000)  # zero-filled: every page touched
            time.sleep(3)
            os._exit(0)
        children.append(pid)
    ended = [os.waitpid(pid, 0)[1] for pid in children]
    print("HELD", 4 * 100, "MB; children ended", ended)
    """
)


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> list[_cgroup.RunCgroup]:
    """The cgroups the runs of a test make."""
    runs: list[_cgroup.RunCgroup] = []
    create = _cgroup.create

    def recording(*args: Any, **kwargs: Any) -> _cgroup.RunCgroup | None:
        run = create(*args, **kwargs)
        if run is not None:
            runs.append(run)
        return run

    monkeypatch.setattr(_cgroup, "create", recording)
    return runs


def test_check_says_which_cgroup_holds_or_why_none() -> None:
    found = sandbox_support()
    probe = _cgroup.probe()
    assert found["cgroup"] is (probe.version is not None)
    assert found["cgroup_version"] == (probe.version or "")
    if not found["cgroup"]:
        assert found["cgroup_missing"], "a missing cgroup says why"
    elif found["cgroup_version"] == "v1":
        assert "v2" in str(found["cgroup_missing"])
    if os.geteuid() != 0 and not found["cgroup"]:
        assert "not writable" in str(found["cgroup_missing"]) or "v2" in str(
            found["cgroup_missing"]
        )


def test_memory_spread_over_processes_is_bounded_for_the_whole_run() -> None:
    # Bare, the four processes hold their 400 MB together.
    done = subprocess.run(
        [sys.executable, "-c", SPREAD], capture_output=True, text=True, timeout=60, check=False
    )
    assert "HELD 400 MB; children ended [0, 0, 0, 0]" in done.stdout, done.stderr


async def test_the_runs_cgroup_ends_the_run_as_rejected(made: list[_cgroup.RunCgroup]) -> None:
    result = await run_program(SPREAD, limits=LIMITS)
    if not sandbox_support()["cgroup"]:
        # No cgroup here: each process is within its own limit, and the run passes.
        assert result.status == "passed", result
        return
    assert (result.status, result.limit) == ("rejected", "memory"), result
    assert "memory limit (128 MB" in result.detail
    assert f"held by cgroup {sandbox_support()['cgroup_version']}" in result.detail
    assert "killed by the kernel at 224 MB for the whole run" in result.detail
    assert "HELD" not in result.stdout
    assert len(made) == 1 and made[0].folders
    assert not any(os.path.exists(folder) for folder in made[0].folders)  # removed


async def test_a_run_within_its_limits_leaves_no_cgroup(made: list[_cgroup.RunCgroup]) -> None:
    result = await run_program("print(sum(range(10)))", limits=LIMITS)
    assert (result.status, result.stdout) == ("passed", "45\n")
    assert len(made) == (1 if sandbox_support()["cgroup"] else 0)
    assert not any(os.path.exists(folder) for run in made for folder in run.folders)
