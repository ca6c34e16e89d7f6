"""The warm zygote (``byzllm.sandbox._zygote``, ``_warm``): runs forked from one pre-started
parent keep each other's data, and the tests' text, out of reach; a dead zygote is replaced;
the per-run ``unshare`` path still works where the zygote is not used.

The hostile programs of the other test files run through the zygote (the default).
"""

from __future__ import annotations

import asyncio
import os
import secrets
import signal
import textwrap
from collections.abc import Iterator

import pytest

from byzllm.sandbox import SandboxLimits, _run, _warm, run_program, run_tests, sandbox_support

pytestmark = pytest.mark.usefixtures("require_sandbox")

LIMITS = SandboxLimits(timeout_s=20.0)

#: Looks through the anonymous memory of its own process for HEAD followed by TAIL (two
#: separate strings, so the whole needle is never built by the scan itself) and prints
#: FOUND or CLEAN.
SCAN = """
import ctypes

def scan(head, tail):
    head, tail = head.encode(), tail.encode()
    with open("/proc/self/maps") as maps:
        regions = maps.read().splitlines()
    for line in regions:
        fields = line.split()
        if "r" not in fields[1] or (len(fields) > 5 and not fields[5].startswith("[heap")):
            continue  # a file's mapping: not where a run's data would be
        start, end = (int(x, 16) for x in fields[0].split("-"))
        chunk = ctypes.string_at(start, end - start)
        at = chunk.find(head)
        while at >= 0:
            if chunk[at + len(head) : at + len(head) + len(tail)] == tail:
                return "FOUND"
            at = chunk.find(head, at + 1)
    return "CLEAN"
"""


def _needle() -> tuple[str, str]:
    return "zygote-" + secrets.token_hex(8), "-secret-" + secrets.token_hex(8)


def _scanner(head: str, tail: str) -> str:
    return SCAN + f"head = {head!r}\ntail = {tail!r}\nprint(scan(head, tail))\n"


@pytest.fixture
def zygote_on() -> Iterator[None]:
    _run.use_zygote(True)
    yield
    _run.use_zygote(True)


async def test_the_scan_finds_a_needle_in_its_own_process(zygote_on: None) -> None:
    # The control: the scanner sees a string its own program built at run time.
    head, tail = _needle()
    source = _scanner(head, tail) + "held = head + tail\nprint(scan(head, tail))\n"
    result = await run_program(source, limits=LIMITS)
    assert (result.status, result.stdout.split()) == ("passed", ["CLEAN", "FOUND"])


async def test_a_run_never_holds_an_earlier_runs_program(zygote_on: None) -> None:
    head, tail = _needle()
    # Several runs whose programs hold the secret, and keep it in memory until they end.
    hold = f"secret = {head + tail!r}\nimport time\ntime.sleep(0.2)\nprint(len(secret))\n"
    held = await asyncio.gather(*(run_program(hold, limits=LIMITS) for _ in range(3)))
    assert all(result.status == "passed" for result in held)
    later = await asyncio.gather(
        *(run_program(_scanner(head, tail), limits=LIMITS) for _ in range(3))
    )
    assert [result.stdout for result in later] == ["CLEAN\n"] * 3


async def test_the_solution_never_holds_the_tests(zygote_on: None) -> None:
    # The tests' text, with the answer in it, reaches only the tests' process: the solution's
    # process, forked by the same zygote, finds it nowhere in its memory.
    head, tail = _needle()
    solution = _scanner(head, tail).replace("print(scan(head, tail))\n", "")
    solution += "def found():\n    return scan(head, tail)\n"
    tests = f"# the expected answer: {head + tail}\nassert found() == 'CLEAN'\n"
    result = await run_tests(solution, tests, limits=LIMITS)
    assert result.status == "passed", result.detail
    # The control: the same scan, run by the tests themselves, finds them.
    own = _scanner(head, tail).replace("print(scan(head, tail))\n", "")
    result = await run_tests(
        solution, own + tests.replace("found()", "scan(head, tail)"), limits=LIMITS
    )
    assert result.status == "failed", result.detail


async def test_a_dead_zygote_is_replaced(zygote_on: None) -> None:
    assert (await run_program("print(1)", limits=LIMITS)).stdout == "1\n"
    zygote = _warm._current
    assert zygote is not None and zygote.alive
    os.kill(zygote.process.pid, signal.SIGKILL)
    zygote.process.wait()
    assert (await run_program("print(2)", limits=LIMITS)).stdout == "2\n"
    assert _warm._current is not None and _warm._current is not zygote


async def test_a_program_runs_as_a_fresh_interpreter(zygote_on: None) -> None:
    # run_program still starts the program's own interpreter: nothing the zygote imported
    # is there, and argv, path and __main__ are those of "python -s main.py".
    program = textwrap.dedent(
        """
        import sys
        print(sys.argv, sys.path[0], __file__, "_byzllm_sandbox_harness" in sys.modules)
        """
    )
    result = await run_program(program, limits=LIMITS)
    work, name = _run.WORK, _run.PROGRAM_NAME  # the sandbox's own folder, not the host's
    assert result.stdout == f"{[name]} {work} {work}/{name} False\n", result.stdout


@pytest.mark.parametrize("zygote", [True, False], ids=["zygote", "unshare"])
async def test_both_ways_give_the_same_results(zygote: bool) -> None:
    _run.use_zygote(zygote)
    try:
        passed = await run_tests("def f(x):\n    return x + 1\n", "assert f(1) == 2", limits=LIMITS)
        failed = await run_tests("def f(x):\n    return x\n", "assert f(1) == 2", limits=LIMITS)
        crashed = await run_program("raise SystemExit(3)", limits=LIMITS)
        network = await run_program(
            "import socket\nsocket.create_connection(('127.0.0.1', 22), timeout=1)",
            limits=LIMITS,
        )
    finally:
        _run.use_zygote(True)
    assert (passed.status, failed.status, crashed.status) == ("passed", "failed", "crashed")
    assert failed.detail == "AssertionError at tests line 1: assert f(1) == 2"
    assert crashed.exit_code == 3
    assert network.status == "crashed" and "OSError" in network.detail


def test_check_names_the_zygote() -> None:
    assert sandbox_support()["zygote"] is _warm.available()
