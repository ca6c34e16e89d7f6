"""What the tests' process is handed of the solution, and how the outcome of each test is told.

Decorated entry points and callable objects, classes (``Solution().method(...)``), an entry
point named like a built-in, ints past Python's 4,300-digit ``str()`` bound, and a worker
killed by its CPU-time limit: each judged as plain HumanEval execution would judge a correct
solution, without giving a wrong one a way to pass.
"""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from byzllm.errors import InputError
from byzllm.sandbox import SandboxLimits, run_test_cases, run_tests
from byzllm.sandbox._harness import MAX_INT_DIGITS

pytestmark = pytest.mark.usefixtures("require_sandbox")

LIMITS = SandboxLimits(timeout_s=20.0)
FIB_TESTS = "def check(candidate):\n    assert candidate(10) == 55\n    assert candidate(1) == 1\n"

#: Correct solutions whose entry point is not a plain function.
DECORATED = {
    "lru_cache": (
        "from functools import lru_cache\n"
        "@lru_cache(maxsize=None)\n"
        "def fib(n):\n"
        "    return n if n < 2 else fib(n - 1) + fib(n - 2)\n"
    ),
    "cache": (
        "import functools\n"
        "@functools.cache\n"
        "def fib(n):\n"
        "    return n if n < 2 else fib(n - 1) + fib(n - 2)\n"
    ),
    "partial": (
        "import functools\n"
        "def _fib(start, n):\n"
        "    a, b = start, 1\n"
        "    for _ in range(n):\n"
        "        a, b = b, a + b\n"
        "    return a\n"
        "fib = functools.partial(_fib, 0)\n"
    ),
    "callable_object": (
        "class _Fib:\n"
        "    def __call__(self, n):\n"
        "        a, b = 0, 1\n"
        "        for _ in range(n):\n"
        "            a, b = b, a + b\n"
        "        return a\n"
        "fib = _Fib()\n"
    ),
}


@pytest.mark.parametrize("kind", sorted(DECORATED))
async def test_a_decorated_entry_point_is_tested(kind: str) -> None:
    result = await run_tests(DECORATED[kind], FIB_TESTS, entry_point="fib", limits=LIMITS)
    assert result.status == "passed", result.detail


async def test_a_wrong_memoized_solution_still_fails() -> None:
    wrong = "import functools\n@functools.cache\ndef fib(n):\n    return n\n"
    result = await run_tests(wrong, FIB_TESTS, entry_point="fib", limits=LIMITS)
    assert result.status == "failed"
    assert result.detail == "AssertionError at tests line 2: assert candidate(10) == 55"


SOLUTION_CLASS = (
    "from typing import List\n"
    "class Solution:\n"
    "    def sumAll(self, nums: List[int]) -> int:\n"
    "        return sum(nums)\n"
)


async def test_a_class_of_the_solution_is_tested() -> None:
    tests = ["assert Solution().sumAll([1, 2, 3]) == 6", "assert Solution().sumAll([]) == 0"]
    result = await run_test_cases(SOLUTION_CLASS, tests, limits=LIMITS)
    assert result.status == "passed", result.detail
    wrong = SOLUTION_CLASS.replace("sum(nums)", "sum(nums) + 1")
    result = await run_test_cases(wrong, tests, limits=LIMITS)
    assert result.status == "failed"
    assert [t.status for t in result.tests or []] == ["failed", "failed"]


async def test_an_object_keeps_its_state_within_its_test() -> None:
    solution = (
        "class Counter:\n"
        "    limit = 3\n"
        "    def __init__(self, start):\n"
        "        self.total = start\n"
        "    def add(self, n):\n"
        "        self.total += n\n"
        "        return self.total\n"
    )
    tests = [
        "c = Counter(1)\nc.add(2)\nassert c.total == 3 and c.add(4) == 7\n"
        "assert not hasattr(c, 'missing')",
        "assert Counter.limit == 3 and Counter(0).total == 0",
    ]
    result = await run_test_cases(solution, tests, limits=LIMITS)
    assert result.status == "passed", result.detail
    # An object lives in the worker of the test that made it: a later test cannot use it.
    kept = ["import builtins\nbuiltins.kept = Counter(1)", "import builtins\nbuiltins.kept.add(1)"]
    result = await run_test_cases(solution, kept, limits=LIMITS)
    assert [t.status for t in result.tests or []] == ["passed", "crashed"]
    assert "an earlier test" in (result.tests or [])[1].detail


async def test_a_class_cannot_forge_a_comparison() -> None:
    # Each would pass in the solution's own interpreter: an object equal to everything.
    solution = (
        "class Solution:\n"
        "    def __eq__(self, other):\n"
        "        return True\n"
        "    def answer(self):\n"
        "        return self\n"
    )
    result = await run_test_cases(
        solution, ["assert Solution() == 42", "assert Solution().answer() == 42"], limits=LIMITS
    )
    assert [t.status for t in result.tests or []] == ["failed", "failed"]
    # The method's result is the object itself: the tests get its handle back, which is
    # equal only to itself on the tests' side.
    detail = (result.tests or [])[1].detail
    assert detail == "AssertionError at tests line 1: assert Solution().answer() == 42"


async def test_the_tests_own_check_is_not_the_solutions() -> None:
    # A class named check would, if it replaced the tests' own, "run" the tests by doing
    # nothing at all.
    solution = (
        "class check:\n    def __init__(self, candidate):\n        pass\ndef f(x):\n    return 0\n"
    )
    tests = "def check(candidate):\n    assert candidate(2) == 3\n"
    result = await run_tests(solution, tests, entry_point="f", limits=LIMITS)
    assert result.status == "failed"
    assert result.detail == "AssertionError at tests line 2: assert candidate(2) == 3"


async def test_a_livecodebench_problem_passes_its_generated_tests() -> None:
    from byzllm.agents.codegen import Solution, TestSuite
    from byzllm.envs.codegen import generated_test_result
    from byzllm.tasks import CodeProblem

    problem = CodeProblem(
        id="sum-all",
        source="livecodebench",
        prompt="Return the sum of nums. class Solution: def sumAll(self, nums) -> int",
        metadata={"func_name": "sumAll"},
    )
    solution = Solution(coder="c", role="r", round=1, code=SOLUTION_CLASS)
    suite = TestSuite(tests=["assert Solution().sumAll([1, 2, 3]) == 6"])
    result = await generated_test_result(problem, solution, suite, limits=LIMITS)
    assert (result.passed, result.failed) == (1, 0), result.errors


async def test_the_longest_tests_a_tester_may_write_run() -> None:
    # read_tests keeps up to MAX_TESTS tests of MAX_TEST_CHARS characters; beyond ASCII their
    # JSON passed the 120,000-byte bound set when tests travelled on a command line, and the
    # run raised InputError (an uncaught crash of CodeGen on a model's tests).
    from byzllm.agents.codegen import MAX_TESTS, Solution, TestSuite
    from byzllm.agents.codegen._parse import MAX_TEST_CHARS
    from byzllm.envs.codegen import generated_test_result
    from byzllm.tasks import CodeProblem

    prompt = 'def f(s):\n    """Return s."""\n'
    problem = CodeProblem(id="echo", source="humaneval", prompt=prompt, entry_point="f")
    text = "\U0001f600" * ((MAX_TEST_CHARS - 20) // 2)
    test = f"assert f('{text}') == '{text}'"
    assert len(test) <= MAX_TEST_CHARS
    solution = Solution(coder="c", role="r", round=1, code="def f(s):\n    return s\n")
    suite = TestSuite(tests=[test] * MAX_TESTS)
    result = await generated_test_result(problem, solution, suite, limits=LIMITS)
    assert (result.passed, result.failed) == (MAX_TESTS, 0), result.errors


SORT_TESTS = "def check(candidate):\n    assert candidate([3, 1, 2]) == sorted([3, 1, 2])\n"


async def test_an_entry_point_named_like_a_built_in_is_the_solutions() -> None:
    right = "import builtins\ndef sorted(xs):\n    return builtins.sorted(xs)\n"
    assert (await run_tests(right, SORT_TESTS, entry_point="sorted", limits=LIMITS)).passed
    # The tests' own sorted stays the built-in: [] == [] would pass otherwise.
    wrong = "def sorted(xs):\n    return []\n"
    result = await run_tests(wrong, SORT_TESTS, entry_point="sorted", limits=LIMITS)
    assert result.status == "failed", result.detail
    # A solution that does not define it at all does not get the built-in tested instead.
    result = await run_tests("x = 1\n", SORT_TESTS, entry_point="sorted", limits=LIMITS)
    assert result.status == "crashed"
    assert result.detail == "NameError: name 'sorted' is not defined at tests line 3: check(sorted)"


async def test_ints_past_pythons_str_bound_cross_both_ways() -> None:
    solution = "def f(n):\n    return 3 ** n\ndef g(n):\n    return n % 7\n"
    tests = "assert f(10000) == 3 ** 10000\nassert g(3 ** 10000) == (3 ** 10000) % 7\n"
    result = await run_tests(solution, tests, limits=LIMITS)
    assert result.status == "passed", result.detail


async def test_an_int_too_large_to_send_is_not_the_solution_ending() -> None:
    solution = f"def f():\n    return 10 ** {MAX_INT_DIGITS + 10}\n"
    result = await run_test_cases(solution, ["assert f() > 0"], limits=LIMITS)
    assert result.status == "failed"
    assert "not plain data" in result.detail and "ended its process" not in result.detail


async def test_a_cpu_limit_kill_during_a_test_is_a_timeout() -> None:
    limits = SandboxLimits(timeout_s=20, cpu_s=1)
    solution = "def f():\n    while True:\n        pass\n"
    result = await run_test_cases(
        solution, ["assert f() == 1", "assert 1 == 1"], limits=limits, test_timeout_s=15
    )
    assert [t.status for t in result.tests or []] == ["timed_out", "passed"]
    assert (result.status, result.detail) == ("timed_out", "test 1: CPU-time limit of 1 s reached")


async def test_a_cpu_limit_kill_while_loading_is_a_timeout() -> None:
    limits = SandboxLimits(timeout_s=20, cpu_s=1)
    solution = "while True:\n    pass\n"
    result = await run_tests(solution, "assert True", limits=limits)
    assert (result.status, result.detail) == ("timed_out", "CPU-time limit of 1 s reached")


async def test_a_worker_ending_itself_is_still_the_solution_ending() -> None:
    solution = "import os\ndef f():\n    os._exit(0)\n"
    result = await run_test_cases(solution, ["assert f() == 1"], limits=LIMITS)
    assert (result.status, result.detail) == (
        "failed",
        "the solution ended its process before every test ran",
    )


def test_cpu_time_counts_whole_seconds() -> None:
    with pytest.raises(ValidationError, match="whole number of seconds"):
        SandboxLimits(cpu_s=0.3)
    assert SandboxLimits(cpu_s=2.0).effective_cpu_s == 2
    # Not given: the wall time, rounded up to what RLIMIT_CPU can hold.
    assert SandboxLimits(timeout_s=2.5).effective_cpu_s == 3


@pytest.mark.parametrize("value", [-1, 0, math.nan, math.inf, 3601, True])
async def test_an_invalid_test_timeout_is_refused(value: float) -> None:
    with pytest.raises(InputError, match="test_timeout_s"):
        await run_test_cases("def f():\n    return 1\n", ["assert f() == 1"], test_timeout_s=value)


@pytest.mark.parametrize(
    "solution", ["def f():\n    return 1\n", "raise ValueError(1)\n", "def f(:\n"]
)
@pytest.mark.parametrize("tests", [[], ()])
async def test_no_tests_are_refused_whether_or_not_the_solution_loads(
    solution: str, tests: list[str] | tuple[str, ...]
) -> None:
    # Run, a solution that loaded "passed" with tests=[], and one that did not "crashed"
    # with "the tests ended without outcomes": two verdicts on no test, neither meaning one.
    with pytest.raises(InputError, match="at least one test"):
        await run_test_cases(solution, tests, limits=LIMITS)
