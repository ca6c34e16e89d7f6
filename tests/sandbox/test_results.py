"""One clear result per run: passed, failed (with the assertion), timed out, crashed, rejected."""

from __future__ import annotations

import asyncio
import textwrap
from collections.abc import Callable

import pytest

from byzllm.errors import InputError
from byzllm.sandbox import SandboxLimits, SandboxResult, run_program, run_tests

pytestmark = pytest.mark.usefixtures("require_sandbox")

FAST = SandboxLimits(timeout_s=3.0)


async def _run(source: str, **kwargs: object) -> SandboxResult:
    return await run_program(textwrap.dedent(source), limits=FAST, **kwargs)  # type: ignore[arg-type]


async def test_a_program_that_exits_0_passes_with_its_output() -> None:
    result = await _run("import sys\nprint('out é')\nprint('err', file=sys.stderr)\n")
    assert (result.status, result.exit_code, result.detail) == ("passed", 0, "")
    assert (result.stdout, result.stderr) == ("out é\n", "err\n")
    assert result.passed


async def test_stdin_reaches_the_program_and_unread_stdin_is_no_error() -> None:
    echo, ignore = await asyncio.gather(
        _run("import sys\nprint(sys.stdin.read()[::-1])", stdin="abc"),
        _run("print('done')", stdin="x" * 5_000_000),
    )
    assert echo.stdout == "cba\n"
    assert (ignore.status, ignore.stdout) == ("passed", "done\n")


async def test_exceptions_exit_codes_and_signals_are_crashes() -> None:
    division, exit_3, syntax, segfault = await asyncio.gather(
        _run("def f():\n    return 1 / 0\nf()\n"),
        _run("import sys\nsys.exit(3)"),
        _run("def broken(:\n"),
        _run("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)"),
    )
    assert division.status == "crashed"
    assert division.detail == "ZeroDivisionError: division by zero at line 2: return 1 / 0"
    assert (exit_3.status, exit_3.exit_code, exit_3.detail) == ("crashed", 3, "exit status 3")
    assert syntax.status == "crashed" and syntax.detail.startswith("SyntaxError")
    assert (segfault.status, segfault.detail) == ("crashed", "killed by SIGSEGV")
    assert segfault.exit_code is None


async def test_a_failing_assertion_fails_with_the_assertion_shown() -> None:
    result = await _run("x = 2\nassert x == 3, f'x is {x}'\n")
    assert result.status == "failed"
    assert result.detail == "AssertionError: x is 2 at line 2: assert x == 3, f'x is {x}'"


async def test_run_tests_names_the_failing_test_line() -> None:
    solution = "def add(a, b):\n    return a - b\n"
    tests = (
        "def check(candidate):\n    assert candidate(0, 0) == 0\n    assert candidate(2, 2) == 4\n"
    )
    good, bad = await asyncio.gather(
        run_tests(solution.replace("-", "+"), tests, entry_point="add", limits=FAST),
        run_tests(solution, tests, entry_point="add", limits=FAST),
    )
    assert (good.status, good.stdout) == ("passed", "")
    assert bad.status == "failed"
    assert bad.detail == "AssertionError at tests line 3: assert candidate(2, 2) == 4"


async def test_run_tests_without_entry_point_runs_plain_asserts() -> None:
    result = await run_tests("X = 1", "print('checking')\nassert X == 1\n", limits=FAST)
    assert (result.status, result.stdout) == ("passed", "checking\n")


async def test_a_solution_that_exits_early_does_not_pass() -> None:
    tests = "def check(candidate):\n    assert candidate() == 1\n"
    early_exit, hard_exit, crash = await asyncio.gather(
        run_tests("import sys\nsys.exit(0)\ndef f():\n    return 2\n", tests, entry_point="f"),
        run_tests("import os\ndef f():\n    os._exit(0)\n", tests, entry_point="f"),
        run_tests("def f():\n    return [][1]\n", tests, entry_point="f"),
    )
    assert early_exit.status == "failed" and "before every test ran" in early_exit.detail
    assert hard_exit.status == "failed" and "before every test ran" in hard_exit.detail
    assert crash.status == "crashed"
    assert crash.detail == "IndexError: list index out of range at solution line 2: return [][1]"


async def test_printing_the_harness_marker_does_not_pass() -> None:
    # The marker is random per run: a solution cannot print it without knowing it.
    solution = "import sys\nprint('byzllm-tests-done-0')\nsys.exit(0)\n"
    result = await run_tests(solution, "assert False", limits=FAST)
    assert result.status == "failed"


def test_entry_point_must_be_an_identifier() -> None:
    with pytest.raises(InputError, match="identifier"):
        asyncio.run(run_tests("", "", entry_point="f); import os; os.system('x'"))


@pytest.mark.parametrize("keyword", ["class", "lambda", "None", "True"])
def test_entry_point_must_not_be_a_keyword(keyword: str) -> None:
    # An identifier no function can have: it was run, and judged a crash of the solution
    # (``check(class)`` does not compile) or ``check(None)`` tested a constant.
    with pytest.raises(InputError, match="keyword"):
        asyncio.run(run_tests("def f():\n    pass\n", "", entry_point=keyword))


async def test_limits_rejections_name_their_limit() -> None:
    files, disk, threads = await asyncio.gather(
        _run("handles = [open('/dev/null') for _ in range(1000)]"),
        run_program("open('big', 'wb').write(b'x' * 5_000_000)", limits=SandboxLimits(disk_mb=1)),
        run_program(
            "import threading, time\n"
            "for _ in range(100):\n"
            "    threading.Thread(target=time.sleep, args=(5,), daemon=True).start()\n",
            limits=SandboxLimits(max_processes=8, timeout_s=3),
        ),
    )
    assert (files.status, files.limit) == ("rejected", "files"), files
    assert (disk.status, disk.limit) == ("rejected", "disk"), disk
    assert (threads.status, threads.limit) == ("rejected", "processes"), threads


async def test_a_timeout_is_a_process_rejection_only_with_processes_the_program_started() -> None:
    # The processes a run holds before the program starts any (its first; for tests the
    # solution's and the test's worker, the tests' own process apart) reach a low limit
    # alone: a loop there is a timeout, not a fork refused.
    hang = "def f():\n    while True:\n        pass\n"
    # Forks until refused, then every process waits.
    forks = textwrap.dedent(
        """
        import os, time
        def f():
            for _ in range(10):
                try:
                    if os.fork() == 0:
                        break
                except OSError:
                    break
            time.sleep(60)
        """
    )
    loop, tests, bomb, tests_bomb = await asyncio.gather(
        run_program("while True:\n    pass\n", limits=SandboxLimits(timeout_s=1, max_processes=1)),
        run_tests(hang, "f()", limits=SandboxLimits(timeout_s=1, max_processes=3)),
        run_program(forks + "f()\n", limits=SandboxLimits(timeout_s=2, max_processes=4)),
        run_tests(forks, "f()", limits=SandboxLimits(timeout_s=2, max_processes=4)),
    )
    assert (loop.status, loop.limit) == ("timed_out", None), loop.detail
    assert (tests.status, tests.limit) == ("timed_out", None), tests.detail
    for held in (bomb, tests_bomb):
        assert (held.status, held.limit) == ("rejected", "processes"), held.detail
        assert held.detail.endswith("still at the limit when time ran out")


async def test_threads_held_at_the_process_limit_are_a_process_rejection() -> None:
    # RLIMIT_NPROC counts threads: threads that wait past the deadline once one could not
    # start hold the limit in a single process. Only processes were counted, and this run
    # was called timed_out.
    bomb = await run_program(
        "import threading, time\n"
        "while True:\n"
        "    threading.Thread(target=time.sleep, args=(30,)).start()\n",
        limits=SandboxLimits(max_processes=8, timeout_s=2),
    )
    assert (bomb.status, bomb.limit) == ("rejected", "processes"), bomb.detail
    assert bomb.detail.endswith("still at the limit when time ran out")
    assert "can't start new thread" in bomb.stderr


async def test_a_run_keeps_max_processes_of_its_own() -> None:
    # With root and without: without root the run's leader, PID 1 and the tests' process
    # share the program's uid, and once took that many processes from its limit.
    forks = textwrap.dedent(
        """
        import os, time
        started = 1
        for _ in range(20):
            try:
                if os.fork() == 0:
                    time.sleep(30)
                    os._exit(0)
            except OSError:
                break
            started += 1
        print(started)
        """
    )
    program, tests = await asyncio.gather(
        run_program(forks, limits=SandboxLimits(timeout_s=20, max_processes=4)),
        run_tests(
            "def f():\n    return 1\n",
            "assert f() == 1",
            limits=SandboxLimits(timeout_s=20, max_processes=2),
        ),
    )
    assert (program.status, program.stdout) == ("passed", "4\n"), program.detail
    assert tests.status == "passed", tests.detail


async def test_cpu_time_limit() -> None:
    result = await run_program(
        "while True:\n    pass\n", limits=SandboxLimits(timeout_s=5, cpu_s=1)
    )
    assert result.status == "timed_out"
    # The reason, not the wall time, tells the CPU limit from the 5 s wall limit: on a loaded
    # machine 1 s of CPU can take more than 4 s of wall time.
    assert result.detail == "CPU-time limit of 1 s reached"


async def test_many_runs_go_concurrently_without_mixing_up() -> None:
    results = await asyncio.gather(*(_run(f"print({i} * {i})") for i in range(12)))
    assert [r.stdout for r in results] == [f"{i * i}\n" for i in range(12)]


async def test_cancelling_a_run_kills_it(sandbox_processes: Callable[[], list[int]]) -> None:
    task = asyncio.ensure_future(_run("import time\nprint('up', flush=True)\ntime.sleep(30)"))
    for _ in range(100):
        await asyncio.sleep(0.05)
        if sandbox_processes():
            break
    assert sandbox_processes(), "precondition: the program is running"
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert sandbox_processes() == []


def test_limits_are_validated_and_frozen() -> None:
    limits = SandboxLimits(timeout_s=4)
    assert limits.cpu_s == 4  # defaults to the wall time
    with pytest.raises(ValueError):
        SandboxLimits(memory_mb=0)
    with pytest.raises(ValueError):
        limits.timeout_s = 1  # type: ignore[misc]


async def test_ordinary_process_and_thread_use_still_works() -> None:
    # The seccomp filter answers clone3 with ENOSYS so that the C library falls back to clone:
    # threads, fork, subprocesses and multiprocessing must all keep working.
    result = await _run(
        """
        import multiprocessing, os, subprocess, sys, threading
        thread = threading.Thread(target=print, args=("thread",))
        thread.start()
        thread.join()
        pid = os.fork()
        if pid == 0:
            os._exit(7)
        print("fork", os.waitpid(pid, 0)[1] >> 8)
        print(subprocess.run([sys.executable, "-c", "print('child')"], capture_output=True,
                             text=True).stdout.strip())
        if __name__ == "__main__":
            with multiprocessing.Pool(2) as pool:
                print("pool", pool.map(abs, [-1, -2]))
        """
    )
    assert result.status == "passed", result
    assert result.stdout == "thread\nfork 7\nchild\npool [1, 2]\n"


async def test_a_thread_that_cannot_start_names_both_limits_it_may_have_hit(
    require_sandbox: None,
) -> None:
    """Its stack is address space: under the memory limit a thread can fail to start long
    before the process limit, and the error does not say which refused it. The detail named
    the process limit alone."""
    program = (
        "import threading, time\n"
        "for _ in range(1000):\n"
        "    threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n"
    )
    limits = SandboxLimits(timeout_s=5.0, memory_mb=128, max_processes=64)
    result = await run_program(program, limits=limits)
    assert result.status == "rejected" and result.limit == "processes", result.detail
    assert "process limit (64 processes) or the memory limit (128 MB" in result.detail
    assert "a new thread could not start" in result.detail
