"""The public entry points: run a program, or a solution against its tests, in the sandbox."""

from __future__ import annotations

import json
from collections.abc import Sequence

from byzllm.errors import InputError

from ._limits import SandboxLimits, SandboxResult
from ._run import execute
from ._verdict import judge, judge_tests

__all__ = ["run_program", "run_test_cases", "run_tests", "test_program"]

#: The tests travel to the sandbox on a command line, where one argument holds at most 128 KiB.
_MAX_TESTS_BYTES = 120_000


async def run_program(
    source: str,
    *,
    stdin: str = "",
    limits: SandboxLimits | None = None,
    allow_unsafe: bool = False,
) -> SandboxResult:
    """Run ``source`` as a Python program in the sandbox and say how it ended.

    ``passed`` iff it exited 0 within every limit. Raises :class:`SandboxUnavailableError`
    when isolation is unavailable here and ``allow_unsafe`` is False, and
    :class:`SandboxError` when the sandbox itself fails; anything the program does is a
    result, never an exception. Many runs may go concurrently.
    """
    limits = limits or SandboxLimits()
    execution = await execute(source, stdin=stdin, limits=limits, allow_unsafe=allow_unsafe)
    return judge(execution, limits)


def test_program(
    solution: str, tests: str, entry_point: str | None, sentinel: str
) -> tuple[str, int, int]:
    """The single program HumanEval would run, and where the tests start and end in it.

    The solution, then the tests (as HumanEval concatenates them), then ``check(entry_point)``
    when an entry point is given, then the sentinel line written straight to file descriptor 1.
    Not what :func:`run_tests` runs (which keeps the tests out of the solution's process): the
    bare side of ``benchmarks/sandbox.py``.
    """
    _check_entry_point(entry_point)
    head = solution.rstrip("\n") + "\n\n"
    first_test = head.count("\n") + 1
    body = tests.rstrip("\n") + "\n"
    last_test = first_test + body.count("\n") - 1
    harness = "\n"
    if entry_point is not None:
        harness += f"check({entry_point})\n"
    harness += (
        "import os as _byzllm_os, sys as _byzllm_sys\n"
        "_byzllm_sys.stdout.flush()\n"
        f"_byzllm_os.write(1, b'\\n{sentinel}\\n')\n"
    )
    return head + body + harness, first_test, last_test


def _check_entry_point(entry_point: str | None) -> None:
    if entry_point is not None and not entry_point.isidentifier():
        raise InputError(f"entry_point must be a Python identifier, got {entry_point!r}")


async def run_test_cases(
    solution: str,
    tests: Sequence[str],
    *,
    limits: SandboxLimits | None = None,
    test_timeout_s: float | None = None,
    allow_unsafe: bool = False,
) -> SandboxResult:
    """Run each of ``tests`` (Python source) against ``solution``, each on its own.

    The solution runs in one process and the tests in another, so the verdict cannot be
    forged from the solution's side (:mod:`byzllm.sandbox._harness`): every call a test makes
    to one of the solution's functions crosses to the solution's process, and its return
    value comes back as plain data (an object with its own ``__eq__`` is an error of the
    solution). Each test gets a fresh copy of the solution's state and its own deadline,
    ``test_timeout_s`` (default: ``limits.timeout_s``); ``limits.timeout_s`` stays the limit
    of the whole run. ``tests`` in the result holds one :class:`TestOutcome` per test, and
    the result is ``passed`` iff every test passed; otherwise it describes the first test
    that did not.
    """
    limits = limits or SandboxLimits()
    per_test = test_timeout_s or limits.timeout_s
    payload = json.dumps(
        {
            "tests": list(tests),
            "test_timeout_s": per_test,
            "load_timeout_s": limits.timeout_s,
        }
    )
    if len(payload.encode()) > _MAX_TESTS_BYTES:
        raise InputError(f"the tests are too long (at most {_MAX_TESTS_BYTES} bytes in all)")
    execution = await execute(
        solution, stdin="", limits=limits, allow_unsafe=allow_unsafe, tests=payload
    )
    return judge_tests(execution, limits, list(tests), per_test)


async def run_tests(
    solution: str,
    tests: str,
    *,
    entry_point: str | None = None,
    limits: SandboxLimits | None = None,
    allow_unsafe: bool = False,
) -> SandboxResult:
    """Run ``solution`` against ``tests``, as HumanEval does, with a verdict it cannot forge.

    With ``entry_point``, ``tests`` must define ``check(candidate)``, which is then called with
    the solution's ``entry_point`` function. ``passed`` iff the tests ran to the end; a failing
    ``assert`` gives ``failed`` with the assertion in ``detail`` (``AssertionError at tests
    line 4: assert candidate(2) == 3``); a solution that ends its process before the tests
    finished (``exit(0)``) also ``failed``; an exception of the solution ``crashed`` (``...
    at solution line 2: ...``). The tests run in a process of their own
    (:func:`run_test_cases`), so return values are compared as plain data.
    """
    _check_entry_point(entry_point)
    body = tests.rstrip("\n") + "\n"
    if entry_point is not None:
        body += f"check({entry_point})\n"
    return await run_test_cases(solution, [body], limits=limits, allow_unsafe=allow_unsafe)
