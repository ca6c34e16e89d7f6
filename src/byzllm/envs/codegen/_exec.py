"""Running CodeGen's code: hidden tests (Pass@1) and the tester's tests, in the sandbox only.

Every program built from model output runs through :mod:`byzllm.sandbox` (a separate process
group, no network, a private directory, resource limits, a clean environment; see
``docs/sandbox.md``); nothing here executes it in-process. ``compile``-checking a solution's
syntax (:func:`syntax_error`) parses only, it never runs code.

- :func:`assemble` turns a coder's code into the program that is tested: for HumanEval, the
  problem's prompt (its imports and helper functions) followed by the code when the code
  restates the function, or the prompt completed by the code when the code is only the
  function's body; for LiveCodeBench, the code after one line that gives it what
  LiveCodeBench's grader gives every program (:data:`LIVECODEBENCH_PRELUDE`: the names of
  ``typing`` that LeetCode's starter code uses unimported, ``List[int]``, those of common
  standard modules, ``Counter``, ``heappush``, ``inf``, and a high recursion limit), so a
  solution that completes the starter code as shown is not failed by a ``NameError``. Line
  numbers in a LiveCodeBench run's errors count that line.
- :func:`hidden_outcome` runs the problem's hidden tests on a program (Pass@1, the rogue-agents
  paper, §4.1): HumanEval's ``check(entry_point)``; LiveCodeBench's stdin/stdout cases (output
  compared as LiveCodeBench's checker does: line by line, blanks around each line ignored,
  numbers compared as decimals) or functional cases (``Solution().f(*args)``
  compared as JSON values). A failure keeps the sandbox's account of it (the failing
  assertion for HumanEval).
- :func:`generated_test_result` runs the tester's ``assert`` statements against a program, each
  on its own with its own deadline (a failing or hanging test does not stop the others), in a
  process apart from the solution's (:func:`byzllm.sandbox.run_test_cases`: return values
  cross as plain data, and objects as handles that stay in the solution's process), so
  nothing the solution prints or returns can forge a result. The tester's stdin cases (a
  problem whose program reads standard input) run as the hidden stdin cases do: each a run of
  its own with the case's input as standard input, its output compared as LiveCodeBench's
  checker does; each has its share of the deadline, as a test does (at least a second).
- :func:`visible_result` runs the examples the prompt shows
  (:func:`byzllm.agents.codegen.visible_examples`: HumanEval's doctests, a functional
  problem's LeetCode ``Input:`` / ``Output:`` examples as ``Solution().f(...)`` calls; a stdin
  problem's samples, :func:`~byzllm.agents.codegen.visible_stdin_examples`) the same way:
  what a solution observably does, which the environment shows the judge
  (``ReviewView.visible``).

**Simulated execution.** With ``execution="simulated"`` nothing runs; the environment, not any
role, derives outcomes from a simulated coder's own account of its code (``Solution.sim``):
the reference solution passes the hidden tests (HumanEval's canonical solutions pass their
tests) and returns the prompt's value on each of its examples; a wrong one fails the hidden
tests and returns, on an example, the prompt's value changed by its bug exactly where the bug
shows (:func:`byzllm.agents.codegen.bug_hits` and :func:`~byzllm.agents.codegen.perturb`, the
rules its code follows in the sandbox). A test ``assert <example call> == <literal>`` passes
when that value equals the literal; any other test fails. A stdin case passes when the code
is the reference and the case is one of the prompt's samples with its output
(:func:`~byzllm.agents.codegen.visible_stdin_examples`); any other fails. Every such result
says ``simulated``. The judge and the tester never see these accounts. That the reference returns
the prompt's value assumes the prompt's examples are right: three HumanEval prompts (47, 130,
148) show one its canonical solution does not return, and there simulated and sandbox
execution give the judge and the tester different evidence.
"""

from __future__ import annotations

import ast
import hashlib
import json
import secrets
from collections.abc import Awaitable, Callable
from decimal import Decimal, InvalidOperation
from typing import Any, Literal

from pydantic import BaseModel

from byzllm.agents.codegen import (
    SimCode,
    Solution,
    TestResult,
    TestSuite,
    bug_hits,
    defines,
    example_arguments,
    perturb,
    visible_examples,
    visible_stdin_examples,
)
from byzllm.sandbox import SandboxLimits, SandboxResult, run_program, run_test_cases, run_tests
from byzllm.tasks import CodeProblem, IOTest

__all__ = [
    "Execution",
    "HiddenOutcome",
    "assemble",
    "generated_test_result",
    "hidden_outcome",
    "syntax_error",
    "visible_result",
]

#: ``"sandbox"``: run code in the sandbox; ``"simulated"``: simulated coders' outcomes only.
Execution = Literal["sandbox", "simulated"]

#: The standard modules LiveCodeBench's grader imports, and star-imports, before every program
#: it runs (LeetCode's judge provides them too): its solutions use ``Counter``, ``heappush``,
#: ``inf`` or ``lru_cache`` without importing them.
_LIVECODEBENCH_MODULES = (
    "string",
    "re",
    "datetime",
    "collections",
    "heapq",
    "bisect",
    "copy",
    "math",
    "random",
    "statistics",
    "itertools",
    "functools",
    "operator",
    "io",
    "sys",
    "json",
)
#: What :func:`assemble` puts before LiveCodeBench code, on one line: the modules' names, then
#: the built-ins again (``math``'s ``pow`` and ``re``'s ``compile`` must not replace them),
#: ``typing``'s names (LeetCode's starter code annotates with ``List[int]`` and imports
#: nothing), the modules themselves, and the grader's recursion limit.
LIVECODEBENCH_PRELUDE = (
    "; ".join(
        [
            *(f"from {module} import *" for module in _LIVECODEBENCH_MODULES),
            "from builtins import *",
            "from typing import *",
            "import " + ", ".join(_LIVECODEBENCH_MODULES),
            "sys.setrecursionlimit(600000)",
        ]
    )
    + "\n"
)

_DETAIL_CHARS = 2000
_CACHE: dict[str, SandboxResult] = {}
_TEST_CACHE: dict[str, TestResult] = {}
_CACHE_LIMIT = 4096


class HiddenOutcome(BaseModel):
    """Whether a program passes the problem's hidden tests, and why not.

    ``status`` is the sandbox's (``passed``, ``failed``, ``timed_out``, ``crashed``,
    ``rejected``) or ``"no_code"`` when there was nothing to run.
    """

    passed: bool
    status: str
    detail: str = ""
    simulated: bool = False


def syntax_error(program: str) -> str | None:
    """The syntax error of ``program`` (``None`` when it compiles); parses, never runs."""
    try:
        compile(program, "<solution>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, OverflowError, RecursionError, MemoryError) as err:
        return f"{type(err).__name__}: {err}"[:500]
    return None


def assemble(problem: CodeProblem, code: str) -> str:
    """The program tested for ``code`` (module docstring)."""
    if problem.source == "livecodebench":
        return LIVECODEBENCH_PRELUDE + code
    if not problem.entry_point:
        return code
    if defines(code, problem.entry_point):
        return problem.prompt.rstrip() + "\n\n\n" + code.strip("\n") + "\n"
    completed = problem.prompt + code
    if defines(completed, problem.entry_point):
        return completed
    return problem.prompt.rstrip() + "\n\n\n" + code.strip("\n") + "\n"


def _describe(result: SandboxResult) -> str:
    parts = [result.detail.strip()]
    tail = result.stderr.strip()[-_DETAIL_CHARS:]
    if tail and tail not in parts[0]:
        parts.append(tail)
    return "\n".join(p for p in parts if p)[:_DETAIL_CHARS]


async def _cached(
    key_parts: tuple[str, ...], run: Callable[[], Awaitable[SandboxResult]]
) -> SandboxResult:
    """One sandbox run per identical (program, tests) within a process: results of the same
    deterministic program do not change, and simulated coders repeat the same code."""
    key = hashlib.sha256("\x1f".join(key_parts).encode("utf-8", "replace")).hexdigest()
    hit = _CACHE.get(key)
    if hit is not None:
        return hit
    result = await run()
    if len(_CACHE) >= _CACHE_LIMIT:
        _CACHE.clear()
    if result.status in ("passed", "failed"):
        _CACHE[key] = result
    return result


async def _humaneval(problem: CodeProblem, program: str, limits: SandboxLimits) -> HiddenOutcome:
    test = problem.hidden_test or ""
    result = await _cached(
        ("humaneval", program, test, str(problem.entry_point), repr(limits)),
        lambda: run_tests(program, test, entry_point=problem.entry_point, limits=limits),
    )
    return HiddenOutcome(
        passed=result.status == "passed",
        status=result.status,
        detail="" if result.status == "passed" else _describe(result),
    )


def _numbers(line: str) -> list[Decimal] | None:
    """The whitespace-separated numbers of ``line`` (``None`` when one is not a number)."""
    try:
        return [Decimal(token) for token in line.split()]
    except (InvalidOperation, ValueError):
        return None


def _same_line(got: str, expected: str) -> bool:
    if got == expected:
        return True
    got_numbers, expected_numbers = _numbers(got), _numbers(expected)
    if got_numbers is None or expected_numbers is None:
        return False
    try:
        return got_numbers == expected_numbers
    except InvalidOperation:  # a signalling NaN refuses to be compared
        return False


def _same_output(got: str, expected: str) -> bool:
    """Whether a program's output ``got`` is the ``expected`` one, by LiveCodeBench's checker
    of stdin problems: both stripped, split at newlines, each line stripped, the same number of
    lines, and each line equal or, token by token, the same decimal numbers (``3.0`` is
    ``3``)."""

    def lines(text: str) -> list[str]:
        return [line.strip() for line in text.strip().split("\n")]

    got_lines, expected_lines = lines(got), lines(expected)
    return len(got_lines) == len(expected_lines) and all(
        _same_line(g, e) for g, e in zip(got_lines, expected_lines, strict=True)
    )


async def _stdin_case(program: str, case: IOTest, limits: SandboxLimits) -> tuple[str, str]:
    """Run ``program`` in the sandbox on ``case.input`` as its standard input: ``("passed",
    "")`` when it exits cleanly printing ``case.output`` (:func:`_same_output`), else the
    status (the sandbox's, or ``failed`` for another output) and what went wrong."""
    result = await run_program(program, stdin=case.input, limits=limits)
    if result.status != "passed":
        return result.status, _describe(result)
    if not _same_output(result.stdout, case.output):
        got = result.stdout.strip()[:300]
        return "failed", f"expected {case.output.strip()[:300]!r}, got {got!r}"
    return "passed", ""


_FUNCTIONAL = """

import json as _byz_json
_byz_lines = {inputs!r}.splitlines()
_byz_args = [_byz_json.loads(_byz_line) for _byz_line in _byz_lines if _byz_line.strip()]
_byz_value = Solution().{func}(*_byz_args)
print("\\n" + {marker!r} + _byz_json.dumps(_byz_value), flush=True)
"""
# The marker starts a line of its own ("\n" first): what the solution printed without a
# line break (``print(x, end="")``) would otherwise run into it, and a correct return value
# would go unread. LiveCodeBench compares a functional problem's return value only.


async def _livecodebench(
    problem: CodeProblem, program: str, limits: SandboxLimits
) -> HiddenOutcome:
    if not problem.io_tests:
        return HiddenOutcome(passed=False, status="no_tests", detail="the problem has no tests")
    for k, case in enumerate(problem.io_tests, start=1):
        if case.testtype == "stdin":
            status, detail = await _stdin_case(program, case, limits)
            if status != "passed":
                return HiddenOutcome(passed=False, status=status, detail=f"case {k}: {detail}")
            continue
        marker = f"@@byzllm-{secrets.token_hex(8)}@@"
        func = problem.metadata.get("func_name", "")
        harness = _FUNCTIONAL.format(inputs=case.input, func=func, marker=marker)
        result = await run_program(program + harness, limits=limits)
        value_line = next(
            (ln for ln in reversed(result.stdout.splitlines()) if ln.startswith(marker)), None
        )
        if result.status != "passed" or value_line is None:
            # A clean exit without the value: the program ended before the call returned.
            why = _describe(result) or "the program exited before the call returned a value"
            return HiddenOutcome(
                passed=False,
                status=result.status if result.status != "passed" else "failed",
                detail=f"case {k}: {why}",
            )
        try:
            got_value = json.loads(value_line[len(marker) :])
            expected = json.loads(case.output)
        except (ValueError, RecursionError):
            # Not JSON, or JSON that Python will not build (nested past the recursion limit,
            # an int past the digits limit): the program printed this line and may have made
            # it so, on purpose. Compared as text, as any other value that is not JSON.
            got_value, expected = value_line[len(marker) :], case.output.strip()
        if got_value != expected:
            return HiddenOutcome(
                passed=False,
                status="failed",
                detail=f"case {k}: expected {case.output.strip()[:300]!r}, "
                f"got {value_line[len(marker) :][:300]!r}",
            )
    return HiddenOutcome(passed=True, status="passed")


async def hidden_outcome(
    problem: CodeProblem,
    solution: Solution,
    *,
    execution: Execution = "sandbox",
    limits: SandboxLimits | None = None,
) -> HiddenOutcome:
    """Does ``solution`` pass ``problem``'s hidden tests? (module docstring)."""
    if execution == "simulated":
        if solution.sim is None:
            return HiddenOutcome(
                passed=False,
                status="not_run",
                detail="simulated execution judges simulated coders' code only",
                simulated=True,
            )
        return HiddenOutcome(
            passed=solution.sim.correct,
            status="passed" if solution.sim.correct else "failed",
            detail="" if solution.sim.correct else f"simulated: bug {solution.sim.bug}",
            simulated=True,
        )
    if not solution.code.strip():
        return HiddenOutcome(passed=False, status="no_code", detail="no code was written")
    limits = limits or SandboxLimits()
    program = assemble(problem, solution.code)
    if problem.source == "humaneval":
        return await _humaneval(problem, program, limits)
    return await _livecodebench(problem, program, limits)


#: The shortest deadline of one generated test, and of one stdin case (a run of its own,
#: which starts a process first).
_MIN_TEST_S = 0.5
_MIN_CASE_S = 1.0


def _valid_test(test: str) -> bool:
    try:
        tree = ast.parse(test)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return len(tree.body) == 1 and isinstance(tree.body[0], ast.Assert)


def _normal_call(source: str) -> str | None:
    try:
        return ast.unparse(ast.parse(source.strip(), mode="eval"))
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None


def _simulated_value(problem: CodeProblem, sim: SimCode, call: str) -> tuple[bool, Any]:
    """Simulated execution: the value code with this account returns for an example call
    (``(False, None)`` when it is not an example of the prompt, or nothing runs)."""
    wanted = {
        _normal_call(e.call): e.expected
        for e in visible_examples(problem.prompt, problem.entry_point)
    }
    expected = wanted.get(_normal_call(call))
    if expected is None:
        return False, None
    value = ast.literal_eval(expected)
    if sim.correct:
        return True, value
    args = example_arguments(call, problem.entry_point or "")
    if sim.bug not in ("off_by_one", "truncate", "negate") or args is None:
        return False, None  # no code, a syntax error: nothing runs
    assert sim.bug is not None
    hit = bug_hits(sim.bug, args[0], args[1], sim.coverage)
    return True, perturb(value, sim.bug) if hit else value


def _simulated_passes(problem: CodeProblem, sim: SimCode, test: str) -> bool:
    try:
        tree = ast.parse(test.strip())
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    node = tree.body[0] if len(tree.body) == 1 else None
    if not (isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare)):
        return False
    compare = node.test
    if len(compare.ops) != 1 or not isinstance(compare.ops[0], ast.Eq):
        return False
    try:
        literal = ast.literal_eval(compare.comparators[0])
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    ran, value = _simulated_value(problem, sim, ast.unparse(compare.left))
    return ran and bool(value == literal)


def _simulated_case(problem: CodeProblem, sim: SimCode, case: IOTest) -> bool:
    """Simulated execution of a stdin case: the reference prints the prompt's output for one
    of its samples; any other case fails (a wrong program's account says nothing of what it
    prints)."""
    return sim.correct and any(
        e.input == case.input and _same_output(e.output, case.output)
        for e in visible_stdin_examples(problem.prompt)
    )


def _simulated_result(problem: CodeProblem, solution: Solution, suite: TestSuite) -> TestResult:
    """Simulated execution of ``assert <example call> == <literal>`` tests and of stdin cases
    (module docstring)."""
    if solution.sim is None or not suite.size:
        return TestResult(status="no_tests", simulated=True)
    sim = solution.sim
    passed = failed = 0
    errors: list[str] = []
    outcomes = [
        (_simulated_passes(problem, sim, test), f"AssertionError (simulated) (in `{test[:200]}`)")
        for test in suite.tests
    ] + [
        (_simulated_case(problem, sim, case), f"wrong output (simulated) (in case {k})")
        for k, case in enumerate(suite.cases, start=1)
    ]
    for ok, error in outcomes:
        if ok:
            passed += 1
            continue
        failed += 1
        if len(errors) < 5:
            errors.append(error)
    return TestResult(passed=passed, failed=failed, errors=errors, simulated=True)


async def visible_result(
    problem: CodeProblem,
    solution: Solution,
    *,
    execution: Execution = "sandbox",
    limits: SandboxLimits | None = None,
) -> TestResult:
    """``solution`` on the examples ``problem``'s prompt shows (module docstring)."""
    if problem.reads_stdin:
        suite = TestSuite(cases=visible_stdin_examples(problem.prompt))
    else:
        examples = visible_examples(problem.prompt, problem.entry_point)
        # Run as the hidden cases judge them: LiveCodeBench's method values as JSON,
        # HumanEval's with its own ``==`` (simulated execution reads the plain form).
        as_json = problem.source == "livecodebench" and execution == "sandbox"
        suite = TestSuite(tests=[e.test(as_json=as_json) for e in examples])
    if not suite.size:
        return TestResult(status="no_tests", simulated=execution == "simulated")
    return await generated_test_result(problem, solution, suite, execution=execution, limits=limits)


async def generated_test_result(
    problem: CodeProblem,
    solution: Solution,
    suite: TestSuite,
    *,
    execution: Execution = "sandbox",
    limits: SandboxLimits | None = None,
) -> TestResult:
    """The tester's tests run against ``solution`` (module docstring)."""
    if execution == "simulated":
        return _simulated_result(problem, solution, suite)
    tests = [t for t in suite.tests if _valid_test(t)]
    cases = suite.cases
    total = len(tests) + len(cases)
    if not total:
        return TestResult(status="no_tests")
    if not solution.code.strip():
        return TestResult(failed=total, status="aborted", errors=["no code was written"])
    limits = limits or SandboxLimits()
    assembled = assemble(problem, solution.code)
    # The same deterministic program and tests give the same results: run them once.
    shown = [f"{c.input}\x1e{c.output}" for c in cases]
    cache_key = hashlib.sha256(
        "\x1f".join([assembled, *tests, "\x1d", *shown, repr(limits)]).encode("utf-8", "replace")
    ).hexdigest()
    hit = _TEST_CACHE.get(cache_key)
    if hit is not None:
        return hit
    errors: list[str] = []
    if tests:
        # Each test on its own, in a process apart from the solution's (return values cross
        # as plain data or handles), with its own deadline: one hanging test fails alone.
        per_test = max(_MIN_TEST_S, limits.timeout_s / (len(tests) + 1))
        result = await run_test_cases(assembled, tests, limits=limits, test_timeout_s=per_test)
        if result.tests is None:
            return TestResult(
                failed=total, status="aborted", errors=[f"{result.status}: {_describe(result)}"]
            )
        errors += [
            f"{outcome.detail or outcome.status} (in `{test[:200]}`)"
            for test, outcome in zip(tests, result.tests, strict=True)
            if outcome.status != "passed"
        ]
    # A stdin case is a run of its own: one that crashes or hangs fails that case alone. One
    # after the other, each with its share of the deadline (as an assert has), so a program
    # that hangs on every case costs about one deadline, not one per case.
    per_case = max(_MIN_CASE_S, limits.timeout_s / (len(cases) + 1))
    case_limits = limits.model_copy(update={"timeout_s": min(limits.timeout_s, per_case)})
    for k, case in enumerate(cases, start=1):
        status, detail = await _stdin_case(assembled, case, case_limits)
        if status != "passed":
            reason = detail if status == "failed" else f"{status}: {detail}"
            errors.append(f"{reason} (in case {k}, input {case.input[:200]!r})")
    failed = len(errors)
    ran = TestResult(passed=total - failed, failed=failed, errors=errors[:5])
    if len(_TEST_CACHE) >= _CACHE_LIMIT:
        _TEST_CACHE.clear()
    _TEST_CACHE[cache_key] = ran
    return ran
