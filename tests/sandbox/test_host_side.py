"""The host's side of a run: what the solution can read of the sandbox's processes, the
fallback where ``pidfd_open`` does not work, runs without isolation, running out of
descriptors, and a sandbox killed from outside.
"""

from __future__ import annotations

import asyncio
import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from byzllm.sandbox import (
    SandboxError,
    SandboxLimits,
    _run,
    _support,
    _warm,
    run_program,
    run_tests,
    sandbox_support,
)

pytestmark = pytest.mark.usefixtures("require_sandbox")

LIMITS = SandboxLimits(timeout_s=20.0)
ROOT = Path(__file__).resolve().parents[2]

#: A wrong solution that answers with whatever the tests expect, if it can find the tests in
#: the command line or environment of any process it can see; it prints what it found.
FORGER = textwrap.dedent(
    """
    import os, re

    def _visible():
        for pid in os.listdir("/proc"):
            if pid.isdigit():
                for name in ("cmdline", "environ"):
                    try:
                        with open(f"/proc/{pid}/{name}", "rb") as handle:
                            yield name, handle.read().decode("utf-8", "replace")
                    except OSError:
                        pass

    FOUND = [name for name, text in _visible() if "4917" in text]
    print("FOUND", FOUND)

    def add(a, b):
        for name, text in _visible():
            match = re.search(r"candidate\\((\\d+), (\\d+)\\) == (\\d+)", text)
            if match:
                return int(match.group(3))
        return -1
    """
)


@pytest.fixture(params=[True, False], ids=["zygote", "unshare"])
def zygote(request: pytest.FixtureRequest) -> Iterator[bool]:
    _run.use_zygote(request.param)
    yield request.param
    _run.use_zygote(True)


async def test_the_tests_are_on_no_command_line(zygote: bool) -> None:
    tests = "def check(candidate):\n    assert candidate(2, 2) == 4917\n"
    result = await run_tests(FORGER, tests, entry_point="add", limits=LIMITS)
    assert result.stdout == "FOUND []\n"
    assert result.status == "failed", result.detail


@pytest.fixture
def pidfd_probe() -> Iterator[None]:
    """A fresh probe of ``pidfd_open``, forgotten again afterwards."""
    _warm._pidfd_works = None
    yield
    _warm._pidfd_works = None


def test_a_pidfd_open_that_answers_enosys_means_no_zygote(
    pidfd_probe: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    def missing(pid: int, flags: int = 0) -> int:
        raise OSError(errno.ENOSYS, "Function not implemented")

    monkeypatch.setattr(os, "pidfd_open", missing)
    assert not _warm.available()
    monkeypatch.undo()
    assert not _warm.available()  # remembered


def test_a_probe_out_of_descriptors_is_not_remembered(
    pidfd_probe: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    def exhausted(pid: int, flags: int = 0) -> int:
        raise OSError(errno.EMFILE, "Too many open files")

    monkeypatch.setattr(os, "pidfd_open", exhausted)
    assert _warm.available()
    assert _warm._pidfd_works is None


#: Makes pidfd_open answer ENOSYS, as a kernel before 5.3 does, for this process and every
#: process it starts (the zygote included), then runs a program and tests.
OLD_KERNEL = textwrap.dedent(
    """
    import asyncio, errno, json
    import pyseccomp
    rules = pyseccomp.SyscallFilter(defaction=pyseccomp.ALLOW)
    rules.add_rule(pyseccomp.ERRNO(errno.ENOSYS), "pidfd_open")
    rules.load()
    from byzllm.sandbox import SandboxLimits, run_program, run_tests, sandbox_support

    async def main():
        limits = SandboxLimits(timeout_s=20)
        program = await run_program("print(6 * 7)", limits=limits)
        tests = await run_tests("def f(x):\\n    return x\\n", "assert f(1) == 1", limits=limits)
        return [program.status, program.stdout, tests.status]

    print(json.dumps([sandbox_support()["zygote"], asyncio.run(main())]))
    """
)


def test_a_kernel_without_pidfd_open_falls_back_to_unshare() -> None:
    pytest.importorskip("pyseccomp")
    done = subprocess.run(
        [sys.executable, "-c", OLD_KERNEL],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.splitlines()[-1]) == [False, ["passed", "42\n", "passed"]]


@pytest.fixture
def no_isolation(monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs as where the namespaces are missing (they then need ``allow_unsafe``)."""
    found = _support.support()
    unavailable = _support.Support(dict(found.mechanisms), "no namespaces here (for a test)")
    monkeypatch.setattr(_run, "support", lambda: unavailable)


async def test_without_isolation_a_timeout_counts_only_the_runs_processes(
    no_isolation: None,
) -> None:
    # The host has more processes than 2: counted as the run's, the timeout would read as
    # the process limit.
    limits = SandboxLimits(timeout_s=2, max_processes=2)
    result = await run_program("while True:\n    pass\n", limits=limits, allow_unsafe=True)
    assert (result.status, result.limit) == ("timed_out", None), result.detail


#: Leaves a child in its process group (none of the uids' or namespaces' of a run of its
#: own), and says both pids.
LINGERS = textwrap.dedent(
    """
    import os, time
    child = os.fork()
    if child == 0:
        time.sleep(30)
        os._exit(0)
    print(os.getpid(), child, flush=True)
    """
)


@pytest.mark.parametrize("ends", ["timed_out", "passed"])
async def test_without_isolation_nothing_in_the_programs_process_group_outlives_the_run(
    no_isolation: None, monkeypatch: pytest.MonkeyPatch, ends: str
) -> None:
    # The program keeps byzllm's uid (root's, or the caller's without root): no namespace
    # and no uid of the run's own end what it left; it was still running after a timeout.
    monkeypatch.setattr(_run, "_reached_by_others", lambda paths: False)
    program = LINGERS + ("time.sleep(30)\n" if ends == "timed_out" else "")
    result = await run_program(program, limits=SandboxLimits(timeout_s=2), allow_unsafe=True)
    pids = [int(pid) for pid in result.stdout.split()]
    try:
        assert (result.status, len(pids)) == (ends, 2), result.detail
        deadline = time.monotonic() + 5
        while any(map(_run._alive, pids)) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert not any(map(_run._alive, pids))
    finally:
        for pid in filter(_run._alive, pids):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as handle:
                    if b"main.py" in handle.read():
                        os.kill(pid, signal.SIGKILL)
            except OSError:  # ended meanwhile
                pass


@pytest.fixture
def drops_root(monkeypatch: pytest.MonkeyPatch) -> None:
    """With root, an interpreter that the run's uids reach: this one, or else the system's of
    the same version (this one may lie in root's home folder, closed to others)."""
    if os.geteuid() != 0:
        pytest.skip("without root a run without isolation keeps the caller's uid")
    if not _run.unsafe_runs_drop_root():
        version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
        system = shutil.which(version, path="/usr/local/bin:/usr/bin")
        if system is None:
            pytest.skip(f"no {version} here that other uids reach")
        monkeypatch.setattr(sys, "executable", system)
        prefix = os.path.dirname(os.path.dirname(os.path.realpath(system)))
        for name in ("prefix", "exec_prefix", "base_prefix", "base_exec_prefix"):
            monkeypatch.setattr(sys, name, prefix)
    if not _run.unsafe_runs_drop_root():
        pytest.skip("no interpreter here that other uids reach")


#: Forks 40 children that each sleep a second (a bounded bomb), then says how many started.
FORKS = textwrap.dedent(
    """
    import os, time
    started = 0
    try:
        for _ in range(40):
            if os.fork() == 0:
                time.sleep(1)
                os._exit(0)
            started += 1
    finally:
        print(started, os.getuid(), flush=True)
        for _ in range(started):
            os.wait()
    """
)


async def test_without_isolation_root_still_holds_max_processes(
    no_isolation: None, drops_root: None
) -> None:
    # Root's uid is exempt from RLIMIT_NPROC: kept, all 40 children started.
    limits = SandboxLimits(timeout_s=10, max_processes=8)
    result = await run_program(FORKS, limits=limits, allow_unsafe=True)
    assert (result.status, result.limit, result.isolated) == ("rejected", "processes", False)
    assert "process limit (8 processes)" in result.detail
    started, uid = map(int, result.stdout.split())
    assert started == 7 and uid != 0  # the program is the eighth


#: Starts a child in a session of its own that outlives the program, and says its pid.
DETACHED = textwrap.dedent(
    """
    import os, time
    pid = os.fork()
    if pid == 0:
        os.setsid()
        time.sleep(30)
        os._exit(0)
    print(pid, flush=True)
    """
)


async def test_without_isolation_root_leaves_no_detached_child_running(
    no_isolation: None, drops_root: None
) -> None:
    # No namespace ends with the program: its uid, the run's alone, finds what it left.
    result = await run_program(DETACHED, limits=LIMITS, allow_unsafe=True)
    assert result.status == "passed", result.detail
    child = int(result.stdout)
    try:
        with open(f"/proc/{child}/status", encoding="ascii") as handle:
            state = next(line for line in handle if line.startswith("State:")).split()[1]
    except FileNotFoundError:
        state = "gone"
    assert state in ("gone", "Z", "X")  # (a zombie at most, waiting for its reaper)


async def test_without_isolation_root_dropped_the_program_works_as_before(
    no_isolation: None, drops_root: None
) -> None:
    program = textwrap.dedent(
        """
        import os, sys, tempfile
        with open("out.txt", "w") as handle:
            handle.write(sys.stdin.read())
        with tempfile.NamedTemporaryFile(dir=os.environ["TMPDIR"]) as handle:
            pass
        print(open(os.path.join(os.environ["HOME"], "out.txt")).read(), os.getuid() != 0)
        print("to stderr", file=sys.stderr)
        """
    )
    result = await run_program(program, stdin="hello", limits=LIMITS, allow_unsafe=True)
    assert (result.status, result.stdout, result.stderr) == (
        "passed",
        "hello True\n",
        "to stderr\n",
    )
    limits = SandboxLimits(timeout_s=1, max_output_bytes=10)
    loud = await run_program("print('x' * 100)", limits=limits, allow_unsafe=True)
    assert (loud.status, loud.limit, loud.stdout) == ("rejected", "output", "x" * 10)
    slow = await run_program("import time; time.sleep(30)", limits=limits, allow_unsafe=True)
    assert slow.status == "timed_out"
    solution = "import os\ndef f():\n    return os.getuid()"
    passed = await run_tests(solution, "assert f() != 0", allow_unsafe=True)
    failed = await run_tests(solution, "def check(c):\n    assert c() == 0", entry_point="f",
                             allow_unsafe=True)  # fmt: skip
    assert (passed.status, failed.status) == ("passed", "failed"), (passed.detail, failed.detail)
    assert "assert c() == 0" in failed.detail


@pytest.fixture
def root_keeps_its_uid(monkeypatch: pytest.MonkeyPatch) -> None:
    """As root, with an interpreter that the run's uids cannot reach (one in root's home
    folder), wherever this one lies."""
    monkeypatch.setattr(_run.os, "geteuid", lambda: 0)
    monkeypatch.setattr(_run, "_reached_by_others", lambda paths: False)


async def test_without_isolation_root_kept_says_max_processes_did_not_hold(
    no_isolation: None, root_keeps_its_uid: None
) -> None:
    # Root's uid is exempt from RLIMIT_NPROC: a result silent on it read as a limit held.
    # (Run without root, the limit does bind the caller's uid, whose count holds every thread
    # of this test process: a small one made the tests' fork fail with EAGAIN.)
    limits = SandboxLimits(timeout_s=10, max_processes=512)
    result = await run_program("print('hello')", limits=limits, allow_unsafe=True)
    assert (result.status, result.isolated) == ("passed", False), result.detail
    assert list(result.limits_not_held) == ["processes"]
    assert "RLIMIT_NPROC" in result.limits_not_held["processes"]
    assert sys.executable in result.limits_not_held["processes"]
    solution = "def f():\n    return 1\n"
    tests = await run_tests(solution, "assert f() == 1", limits=limits, allow_unsafe=True)
    assert tests.status == "passed", tests.detail
    assert list(tests.limits_not_held) == ["processes"]


@pytest.mark.parametrize("reached", [True, False], ids=["reached", "not-reached"])
def test_only_root_keeping_its_uid_leaves_a_limit_not_held(
    monkeypatch: pytest.MonkeyPatch, reached: bool
) -> None:
    monkeypatch.setattr(_run, "_reached_by_others", lambda paths: reached)
    monkeypatch.setattr(_run.os, "geteuid", lambda: 0)
    drop_root = _run.unsafe_runs_drop_root()
    assert drop_root is reached
    not_held = _run.limits_not_held(isolated=False, drop_root=drop_root)
    assert list(not_held) == ([] if reached else ["processes"])
    assert _run.limits_not_held(isolated=True, drop_root=False) == {}
    monkeypatch.setattr(_run.os, "geteuid", lambda: 1000)  # keeps the caller's uid, bound
    assert _run.limits_not_held(isolated=False, drop_root=_run.unsafe_runs_drop_root()) == {}


async def test_without_isolation_root_dropped_holds_every_limit(
    no_isolation: None, drops_root: None
) -> None:
    result = await run_program("print('hello')", limits=LIMITS, allow_unsafe=True)
    assert (result.status, result.isolated, result.limits_not_held) == ("passed", False, {})


async def test_an_isolated_run_holds_every_limit() -> None:
    result = await run_program("print('hello')", limits=LIMITS)
    assert (result.status, result.isolated, result.limits_not_held) == ("passed", True, {})


def test_an_unused_uid_reaches_only_what_others_may() -> None:
    # Under /tmp, open to others (pytest's own temporary folders are not).
    if os.stat("/tmp").st_mode & 0o1 == 0 or os.stat("/").st_mode & 0o1 == 0:
        pytest.skip("/tmp is closed to others here")
    with tempfile.TemporaryDirectory(dir="/tmp") as name:
        _check_reach(Path(name))


def _check_reach(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    folder = tmp_path / "python"
    (folder / "bin").mkdir(parents=True)
    interpreter = folder / "bin" / "python"
    interpreter.write_text("")
    (tmp_path / "link").symlink_to(folder)
    paths = [str(interpreter), str(folder), str(tmp_path / "link")]
    folder.chmod(0o755)
    interpreter.chmod(0o755)
    assert _run._reached_by_others(paths)
    interpreter.chmod(0o750)  # the owner's group may run it, not others
    assert not _run._reached_by_others(paths)
    interpreter.chmod(0o755)
    folder.chmod(0o711)  # searchable, not readable: the standard library cannot be listed
    assert not _run._reached_by_others(paths)
    assert _run._reached_by_others([str(interpreter)])
    folder.chmod(0o700)  # root's home folder, say: the link leads there too
    assert not _run._reached_by_others([str(interpreter)])
    assert not _run._reached_by_others([str(tmp_path / "link")])
    assert not _run._reached_by_others([str(tmp_path / "missing")])
    folder.chmod(0o755)


def test_without_root_a_run_without_isolation_keeps_the_callers_uid(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_run.os, "geteuid", lambda: 1000)
    assert not _run.unsafe_runs_drop_root()


#: Many runs at once under a low open-file limit, each way; prints the exceptions' types and
#: what the runs left in the (private) temporary folder and among the descriptors.
MANY_RUNS = textwrap.dedent(
    """
    import asyncio, json, os, resource, sys
    from byzllm.sandbox import SandboxLimits, _run, run_program, run_tests

    async def main():
        limits = SandboxLimits(timeout_s=30)
        seen = {}
        for zygote in (True, False):
            _run.use_zygote(zygote)
            await run_program("print(1)", limits=limits)  # the zygote starts
            before = len(os.listdir("/proc/self/fd"))
            soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
            resource.setrlimit(resource.RLIMIT_NOFILE, (64, hard))
            runs = [run_program("import time; time.sleep(0.5)", limits=limits) for _ in range(20)]
            runs += [run_tests("def f():\\n    return 1\\n", "assert f() == 1", limits=limits)
                     for _ in range(20)]
            results = await asyncio.gather(*runs, return_exceptions=True)
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
            after = len(os.listdir("/proc/self/fd"))
            kinds = sorted({type(r).__name__ for r in results})
            seen[str(zygote)] = [kinds, os.listdir(os.environ["TMPDIR"]), after - before]
        print(json.dumps(seen))

    asyncio.run(main())
    """
)


def test_running_out_of_descriptors_is_a_sandbox_error(tmp_path: Path) -> None:
    folder = tmp_path / "tmp"
    folder.mkdir(mode=0o777)  # also for the caller's uid without root
    done = subprocess.run(
        [sys.executable, "-c", MANY_RUNS],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=ROOT,
        env={**os.environ, "TMPDIR": str(folder)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.splitlines()[-1])
    for zygote, (kinds, left, leaked) in seen.items():
        # Some ran, and every other one raised the sandbox's own error.
        assert kinds == ["SandboxError", "SandboxResult"], (zygote, kinds)
        assert left == [], (zygote, left)
        assert leaked == 0, zygote


async def test_a_run_whose_zygote_is_killed_is_a_sandbox_error(
    sandbox_processes: Callable[[], list[int]],
) -> None:
    _run.use_zygote(True)
    assert (await run_program("print(1)", limits=LIMITS)).passed  # the zygote runs
    zygote = _warm._current
    assert zygote is not None and zygote.alive
    task = asyncio.ensure_future(run_program("import time\ntime.sleep(30)", limits=LIMITS))
    for _ in range(200):
        await asyncio.sleep(0.05)
        if sandbox_processes():
            break
    assert sandbox_processes(), "precondition: the program is running"
    os.kill(zygote.process.pid, signal.SIGKILL)
    with pytest.raises(SandboxError, match="ended from outside"):
        await task
    zygote.process.wait()
    assert (await run_program("print(2)", limits=LIMITS)).stdout == "2\n"


def test_sandbox_support_names_the_zygote_only_where_it_works() -> None:
    assert sandbox_support()["zygote"] == _warm.available()
