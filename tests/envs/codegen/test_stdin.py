"""LiveCodeBench's stdin problems in CodeGen: a program reads standard input and prints its
answer, checked the way LiveCodeBench's own checker checks it (the rogue-agents paper, §4.1,
tests on LiveCodeBench)."""

from __future__ import annotations

import asyncio

import pytest

from byzllm.agents.codegen import Solution
from byzllm.envs.codegen import hidden_outcome
from byzllm.envs.codegen._exec import _same_output, visible_result
from byzllm.sandbox import sandbox_support
from byzllm.tasks import CodeProblem, IOTest

needs_sandbox = pytest.mark.skipif(
    not sandbox_support().get("available"), reason="the sandbox cannot run here"
)

SUM = CodeProblem(
    id="abc/sum",
    source="livecodebench",
    prompt="Read A and B and print A+B.\n\nRead the input from standard input and print the "
    "answer.",
    io_tests=(IOTest(input="1 2\n", output="3\n"), IOTest(input="5 7\n", output="12\n")),
)


def _solution(code: str) -> Solution:
    return Solution(coder="c", role="Programmer", round=1, code=code)


@pytest.mark.parametrize(
    ("got", "expected", "same"),
    [
        ("3\n", "3", True),
        ("3   \n\n\n", "\n3", True),  # blanks around the whole output
        ("1 2\n  3 4 \r\n", "1 2\n3 4", True),  # blanks around each line, and a CR
        ("3.0\n", "3", True),  # the same decimal number
        ("1.50 2\n", "1.5 2.000", True),
        ("1e2", "100", True),
        ("3.01", "3", False),
        ("1 2", "1  2", True),  # tokens: the same numbers
        ("a  b", "a b", False),  # not numbers: the lines differ
        ("Yes", "yes", False),
        ("3\n4", "3", False),  # another number of lines
        ("3\n\n4", "3\n4", False),  # an empty line inside the output counts
        ("", "", True),
        ("NaN", "NaN", True),  # equal text, although NaN is no number equal to itself
        ("sNaN", "sNaN 1", False),  # a signalling NaN is not compared: no exception
        ("sNaN", "1", False),
    ],
)
def test_output_is_compared_as_livecodebench_compares_it(
    got: str, expected: str, same: bool
) -> None:
    assert _same_output(got, expected) is same


@needs_sandbox
def test_hidden_stdin_cases_accept_what_livecodebench_accepts() -> None:
    # "3.0" for 3 and a line with blanks around it pass LiveCodeBench's checker; they failed
    # here when only trailing blanks were ignored.
    code = "a, b = map(int, input().split())\nprint(f' {float(a + b)}  ')\n"
    assert asyncio.run(hidden_outcome(SUM, _solution(code))).passed
    wrong = asyncio.run(hidden_outcome(SUM, _solution("print(3)")))
    assert not wrong.passed and wrong.detail == "case 2: expected '12', got '3'"


DOUBLE = CodeProblem(
    id="lcb/double",
    source="livecodebench",
    entry_point="double",
    prompt="class Solution:\n    def double(self, x: int) -> int:\n        pass\n",
    io_tests=(IOTest(input="4", output="8", testtype="functional"),),
    metadata={"func_name": "double"},
)


@needs_sandbox
@pytest.mark.parametrize(
    "printed",
    ["'[' * 100_000 + ']' * 100_000", "'1' * 5_000"],  # nested too deep; an int too long
)
def test_a_functional_value_python_cannot_parse_fails_the_case(printed: str) -> None:
    """The value a functional case prints is the program's to shape: JSON nested past the
    recursion limit, or an int past Python's digits limit, fails the case (compared as
    text) instead of raising out of the hidden tests."""
    right = "class Solution:\n    def double(self, x):\n        return 2 * x\n"
    assert asyncio.run(hidden_outcome(DOUBLE, _solution(right))).passed
    forged = (
        "import json\n\n"
        "class Solution:\n"
        "    def double(self, x):\n"
        f"        json.dumps = lambda value: {printed}\n"
        "        return 2 * x\n"
    )
    outcome = asyncio.run(hidden_outcome(DOUBLE, _solution(forged)))
    assert (outcome.passed, outcome.status) == (False, "failed"), outcome
    assert outcome.detail.startswith("case 1: expected '8', got "), outcome


@needs_sandbox
@pytest.mark.parametrize(
    "printing",
    ["print('debug', end='')", "import sys; sys.stdout.write('x = 4')"],
)
def test_a_functional_case_reads_the_return_value_whatever_the_solution_printed(
    printing: str,
) -> None:
    # LiveCodeBench judges a functional case by the method's return value. What the solution
    # printed without a line break ran into the line that carries that value, and a correct
    # solution failed with nothing to say why ("case 1: ").
    code = f"class Solution:\n    def double(self, x):\n        {printing}\n        return 2 * x\n"
    outcome = asyncio.run(hidden_outcome(DOUBLE, _solution(code)))
    assert outcome.passed, outcome


@needs_sandbox
def test_a_functional_case_that_exits_before_returning_says_so() -> None:
    code = "import os\n\nclass Solution:\n    def double(self, x):\n        os._exit(0)\n"
    outcome = asyncio.run(hidden_outcome(DOUBLE, _solution(code)))
    assert (outcome.passed, outcome.status) == (False, "failed")
    assert outcome.detail == "case 1: the program exited before the call returned a value"


@needs_sandbox
@pytest.mark.parametrize(
    "code",
    [
        # The starter code as LeetCode writes it: `List` is never imported.
        "class Solution:\n    def double(self, xs: List[int]) -> int:\n        return 2 * xs[0]\n",
        # Names of the standard modules LiveCodeBench's grader imports for every program.
        "class Solution:\n    def double(self, xs):\n"
        "        heap = []\n        heappush(heap, xs[0])\n"
        "        return sum(Counter(heap * 2).values()) * heap[0] if inf > 0 else 0\n",
        # Recursion deeper than Python's default limit of 1000, which the grader raises.
        "class Solution:\n    def double(self, xs, n=3000):\n"
        "        return 2 * xs[0] if n == 0 else self.double(xs, n - 1)\n",
    ],
)
def test_livecodebench_code_runs_with_what_livecodebench_gives_it(code: str) -> None:
    # LiveCodeBench's grader runs every program after star-importing typing and common
    # standard modules and raising the recursion limit; here they were missing, and a solution
    # that completed the starter code as shown crashed with "NameError: name 'List' is not
    # defined", on the hidden cases and on the statement's examples alike.
    problem = DOUBLE.model_copy(
        update={
            "prompt": "Example 1:\n\nInput: xs = [4]\nOutput: 8\n\n" + DOUBLE.prompt,
            "io_tests": (IOTest(input="[4]", output="8", testtype="functional"),),
        }
    )
    outcome = asyncio.run(hidden_outcome(problem, _solution(code)))
    assert outcome.passed, outcome
    shown = asyncio.run(visible_result(problem, _solution(code)))
    assert (shown.passed, shown.failed) == (1, 0), shown
    stdin = "a, b = map(int, sys.stdin.readline().split())\nprint(a + b)\n"
    assert asyncio.run(hidden_outcome(SUM, _solution(stdin))).passed


@needs_sandbox
def test_method_examples_compare_as_the_hidden_cases_do() -> None:
    # The hidden cases compare a method's value as JSON: a tuple is the list it prints as.
    # The statement's examples, run for the judge, compared it by Python's ==, so a solution
    # the hidden cases pass showed as failing every example.
    swap = CodeProblem(
        id="lcb/swap",
        source="livecodebench",
        entry_point="swap",
        prompt=(
            "Example 1:\n\nInput: a = 1, b = 2\nOutput: [2, 1]\n\n"
            "class Solution:\n    def swap(self, a: int, b: int) -> List[int]:\n        pass\n"
        ),
        io_tests=(IOTest(input="1\n2", output="[2, 1]", testtype="functional"),),
        metadata={"func_name": "swap"},
    )
    as_tuple = "class Solution:\n    def swap(self, a, b):\n        return (b, a)\n"
    wrong = "class Solution:\n    def swap(self, a, b):\n        return [a, b]\n"
    assert asyncio.run(hidden_outcome(swap, _solution(as_tuple))).passed
    shown = asyncio.run(visible_result(swap, _solution(as_tuple)))
    assert (shown.passed, shown.failed) == (1, 0), shown
    shown = asyncio.run(visible_result(swap, _solution(wrong)))
    assert (shown.passed, shown.failed) == (0, 1), shown
