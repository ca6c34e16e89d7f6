"""The public entry points: run a program, or a solution against its tests, in the sandbox."""

from __future__ import annotations

import json
import keyword
import math
from collections.abc import Sequence

from byzllm.errors import InputError

from ._limits import SandboxLimits, SandboxResult
from ._run import execute
from ._verdict import judge, judge_tests

__all__ = ["run_program", "run_test_cases", "run_tests", "test_program"]

#: The most the tests of one run may hold, as JSON (every character past ASCII escaped: up
#: to 12 bytes each). They reach the tests' process on a pipe, which reads them whole: a
#: bound on its memory, far above what a tester writes (CodeGen keeps 20 tests of at most
#: 1,000 characters, up to 240,000 bytes here).
_MAX_TESTS_BYTES = 4_000_000
#: The longest deadline of one test, as for a whole run (``SandboxLimits.timeout_s``).
_MAX_TEST_TIMEOUT_S = 3600.0


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
    # A keyword (``class``, ``None``) is an identifier no function can be named: the tests'
    # ``check(class)`` would not compile, or ``check(None)`` would test a constant.
    if entry_point is not None and (
        not entry_point.isidentifier() or keyword.iskeyword(entry_point)
    ):
        raise InputError(
            f"entry_point must be a Python identifier, not a keyword, got {entry_point!r}"
        )


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
    to one of the solution's callables (functions, decorated or not, and callable objects; a
    class gives a handle on the object it makes, whose methods are called the same way)
    crosses to the solution's process, and its return value comes back as plain data (an
    object with its own ``__eq__`` is an error of the solution). Each test gets a fresh copy
    of the solution's state and its own deadline, ``test_timeout_s`` (default:
    ``limits.timeout_s``; above 0 and at most 3600 seconds, else :class:`InputError`);
    ``limits.timeout_s`` stays the limit of the whole run. ``tests`` in the result holds one
    :class:`TestOutcome` per test, and the result is ``passed`` iff every test passed;
    otherwise it describes the first test that did not. An empty ``tests`` is an
    :class:`InputError`, before anything runs: no test gives no verdict (CodeGen, whose
    tester may write none, says ``no_tests`` without calling this).
    """
    cases = list(tests)
    if not cases:
        # Run, a solution that loads "passed" on nothing, and one that does not "crashed"
        # without its error (the tests' process reports an outcome per test, so none here).
        raise InputError("run_test_cases needs at least one test (tests is empty)")
    return await _run_cases(
        solution,
        cases,
        limits=limits or SandboxLimits(),
        test_timeout_s=test_timeout_s,
        allow_unsafe=allow_unsafe,
        entry_point=None,
    )


async def _run_cases(
    solution: str,
    tests: list[str],
    *,
    limits: SandboxLimits,
    test_timeout_s: float | None,
    allow_unsafe: bool,
    entry_point: str | None,
) -> SandboxResult:
    """:func:`run_test_cases`; with ``entry_point``, each test ends with
    ``check(entry_point)``, given the solution's own ``entry_point``."""
    if test_timeout_s is None:
        per_test = limits.timeout_s
    elif (
        isinstance(test_timeout_s, bool)
        or not isinstance(test_timeout_s, int | float)
        or not math.isfinite(test_timeout_s)
        or not 0 < test_timeout_s <= _MAX_TEST_TIMEOUT_S
    ):
        raise InputError(
            f"test_timeout_s must be a number of seconds above 0 and at most "
            f"{_MAX_TEST_TIMEOUT_S:g}, got {test_timeout_s!r}"
        )
    else:
        per_test = float(test_timeout_s)
    payload = json.dumps(
        {
            "tests": tests,
            "test_timeout_s": per_test,
            "load_timeout_s": limits.timeout_s,
            "cpu_s": limits.effective_cpu_s,
            "entry_point": entry_point,
        }
    )
    if len(payload.encode()) > _MAX_TESTS_BYTES:
        raise InputError(f"the tests are too long (at most {_MAX_TESTS_BYTES} bytes in all)")
    execution = await execute(
        solution, stdin="", limits=limits, allow_unsafe=allow_unsafe, tests=payload
    )
    return judge_tests(execution, limits, tests, per_test)


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
    the solution's ``entry_point`` (any callable: a function, decorated or not, a class), even
    where that is a built-in's name (``sorted``; the tests' own ``sorted`` stays the
    built-in). ``passed`` iff the tests ran to the end; a failing
    ``assert`` gives ``failed`` with the assertion in ``detail`` (``AssertionError at tests
    line 4: assert candidate(2) == 3``); a solution that ends its process before the tests
    finished (``exit(0)``) also ``failed``; an exception of the solution ``crashed`` (``...
    at solution line 2: ...``). The tests run in a process of their own
    (:func:`run_test_cases`), so return values are compared as plain data.
    """
    _check_entry_point(entry_point)
    body = tests.rstrip("\n") + "\n"
    return await _run_cases(
        solution,
        [body],
        limits=limits or SandboxLimits(),
        test_timeout_s=None,
        allow_unsafe=allow_unsafe,
        entry_point=entry_point,
    )
