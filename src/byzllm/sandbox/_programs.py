"""The public entry points: run a program, or a solution against its tests, in the sandbox."""

from __future__ import annotations

import secrets

from byzllm.errors import InputError

from ._limits import SandboxLimits, SandboxResult
from ._run import execute
from ._verdict import judge

__all__ = ["run_program", "run_tests", "test_program"]


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
    """The program :func:`run_tests` runs, and where the tests start and end in it.

    The solution, then the tests (as HumanEval concatenates them), then ``check(entry_point)``
    when an entry point is given, then the sentinel line written straight to file descriptor 1
    (a solution that exits early, e.g. with ``sys.exit(0)``, never reaches it).
    """
    if entry_point is not None and not entry_point.isidentifier():
        raise InputError(f"entry_point must be a Python identifier, got {entry_point!r}")
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


async def run_tests(
    solution: str,
    tests: str,
    *,
    entry_point: str | None = None,
    limits: SandboxLimits | None = None,
    allow_unsafe: bool = False,
) -> SandboxResult:
    """Run ``solution`` then ``tests`` as one program in the sandbox.

    With ``entry_point``, then calls ``check(entry_point)`` as HumanEval does. ``passed`` iff
    everything ran and exited 0; a failing ``assert`` gives ``failed`` with the assertion in
    ``detail`` (``AssertionError at tests line 4: assert candidate(2) == 3``); a solution
    that ends the program before the tests finished (``exit(0)``) also ``failed``. Line
    numbers in ``detail`` count from the start of the solution or of the tests.
    """
    limits = limits or SandboxLimits()
    sentinel = f"byzllm-tests-done-{secrets.token_hex(16)}"
    program, first_test, last_test = test_program(solution, tests, entry_point, sentinel)

    def name_line(line: int) -> str:
        if line < first_test - 1:
            return f"solution line {line}"
        if first_test <= line <= last_test:
            return f"tests line {line - first_test + 1}"
        return f"line {line} of the test harness"

    execution = await execute(program, stdin="", limits=limits, allow_unsafe=allow_unsafe)
    return judge(execution, limits, sentinel=sentinel, name_line=name_line)
