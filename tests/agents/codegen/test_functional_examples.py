"""The examples a LiveCodeBench functional problem's statement shows (LeetCode's ``Input:`` /
``Output:`` lines), read as calls of ``Solution().f``: what the judge sees run, what the
simulated tester tests, what simulated execution answers."""

from __future__ import annotations

import ast
import asyncio
import json
import time
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from byzllm.agents.codegen import (
    CodeGenSimParams,
    ReviewView,
    SimulatedTester,
    Solution,
    VisibleExample,
    example_arguments,
    leetcode_examples,
    visible_examples,
)
from byzllm.tasks import CodeProblem, load_livecodebench

# A LeetCode statement as LiveCodeBench ships it: non-breaking-space lines, an explanation,
# constraints; the arguments by name, in the signature's order.
CONTENT = (
    "You are given an integer array nums and an integer k. Return the sum of the k largest "
    "elements of nums.\n\u00a0\nExample 1:\n\nInput: nums = [1,2,3], k = 2\nOutput: 5\n"
    "Explanation: The two largest are 2 and 3.\n\nExample 2:\n\nInput: nums = [-4], k = 1\n"
    "Output: -4\n\n\u00a0\nConstraints:\n\n1 <= nums.length <= 100\n1 <= k <= nums.length\n"
)
STARTER = "class Solution:\n    def largestSum(self, nums: List[int], k: int) -> int:\n        "
LARGEST = (
    "from typing import List\n\nclass Solution:\n"
    "    def largestSum(self, a: List[int], k: int) -> int:\n"
    "        return sum(sorted(a)[-k:])\n"
)


def _problem(tmp_path: Path, content: str = CONTENT, starter: str = STARTER) -> CodeProblem:
    """The problem as the loader makes it from a code_generation_lite record."""
    row = {
        "question_id": "lc-1",
        "question_title": "Largest sum",
        "question_content": content,
        "starter_code": starter,
        "platform": "leetcode",
        "public_test_cases": json.dumps(
            [{"input": "[1,2,3]\n2", "output": "5", "testtype": "functional"}]
        ),
        "private_test_cases": "",
        "metadata": json.dumps({"func_name": "largestSum"}),
    }
    path = tmp_path / "lcb.jsonl"
    path.write_text(json.dumps(row), encoding="utf-8")
    [problem] = load_livecodebench(path)
    return problem


def _prompt(examples: str, signature: str = "def f(self, nums: List[int], k: int) -> int:") -> str:
    return f"Statement.\n\n{examples}\n\nComplete this code:\nclass Solution:\n    {signature}\n"


def test_a_functional_problems_examples_are_calls_of_its_method(tmp_path: Path) -> None:
    # LeetCode's examples were never read: the judge reviewed blind (status no_tests) and the
    # simulated tester wrote no test.
    problem = _problem(tmp_path)
    assert visible_examples(problem.prompt, problem.entry_point) == [
        VisibleExample(call="Solution().largestSum([1, 2, 3], 2)", expected="5"),
        VisibleExample(call="Solution().largestSum([-4], 1)", expected="-4"),
    ]
    example = visible_examples(problem.prompt, problem.entry_point)[0]
    assert example.test() == "assert Solution().largestSum([1, 2, 3], 2) == 5"
    assert example_arguments(example.call, "largestSum") == (([1, 2, 3], 2), {})


def test_values_in_json_and_python_syntax() -> None:
    examples = (
        'Input: s = "a,b=c", flags = [true,false,null], grid = [[1,2],[3,4]]\n'
        'Output: ["x", "y"]\n\n'
        "Input: s = 'q', flags = (True, None), grid = {\"k\": 1.5}\nOutput: false\n\n"
        'Input: s = "say \\"hi\\", k = 1", flags = [], grid = []\nOutput: null\n'
    )
    prompt = _prompt(examples, "def f(self, s: str, flags: list, grid: list) -> object:")
    assert [(e.call, e.expected) for e in visible_examples(prompt, "f")] == [
        ("Solution().f('a,b=c', [True, False, None], [[1, 2], [3, 4]])", "['x', 'y']"),
        ("Solution().f('q', (True, None), {'k': 1.5})", "False"),
        ("Solution().f('say \"hi\", k = 1', [], [])", "None"),
    ]


def test_arguments_follow_the_signatures_order() -> None:
    # Hidden tests pass the arguments positionally, in the signature's order.
    swapped = _prompt("Input: k = 2, nums = [1,2,3]\nOutput: 5")
    assert [e.call for e in visible_examples(swapped, "f")] == ["Solution().f([1, 2, 3], 2)"]
    # Names the signature does not use: the statement's order when the count fits.
    renamed = _prompt("Input: arr = [1,2,3], m = 2\nOutput: 5")
    assert [e.call for e in visible_examples(renamed, "f")] == ["Solution().f([1, 2, 3], 2)"]
    # Too few or too many arguments for the method: no call.
    assert visible_examples(_prompt("Input: nums = [1]\nOutput: 1"), "f") == []
    assert visible_examples(_prompt("Input: nums = [1], k = 1, j = 2\nOutput: 1"), "f") == []


def test_layouts_and_what_is_not_an_example() -> None:
    layouts = (
        "Example 1:\n\nInput:\nnums = [1,2,\n3], k = 2\nOutput:\n\n5\n\n"  # values on new lines
        "**Input:** nums = [7], k = 1\n**Output:** 7\n\n"  # bold labels
        "Input: nums = [1,2,3], k = 2\nOutput: 5\n"  # a repeat
    )
    assert [(e.call, e.expected) for e in visible_examples(_prompt(layouts), "f")] == [
        ("Solution().f([1, 2, 3], 2)", "5"),
        ("Solution().f([7], 1)", "7"),
    ]
    for bad in [
        "Input: nums = [1,2, k = 2\nOutput: 5",  # an open bracket
        "Input: nums = [1], k = len(x)\nOutput: 5",  # not a literal
        "Input: nums = [1], k = 2\nOutput: 5 because 2 + 3",  # not a literal
        "Input: [1], 2\nOutput: 3",  # no names
        "Input: nums = [1], nums = 2\nOutput: 3",  # a name twice
        "Input: nums = [1], k = 2",  # no output
        "Output: 5",  # no input
        "Input: nums = [1], k = 1e999\nOutput: 1",  # infinity has no literal
        "Input: nums = [1], k = NaN\nOutput: 1",
    ]:
        assert visible_examples(_prompt(bad), "f") == [], bad
    # Another method, or a function of its own (HumanEval): not read as LeetCode's.
    assert visible_examples(_prompt("Input: nums = [1], k = 2\nOutput: 5"), "g") == []
    assert (
        visible_examples("def f(nums, k):\n    '''Input: nums = [1], k = 2\nOutput: 5'''", "f")
        == []
    )


def test_no_signature_keeps_the_statements_order() -> None:
    text = "class Solution:\n    def f(self, *args): ...\nInput: b = 1, a = 2\nOutput: 3"
    assert [e.call for e in visible_examples(text, "f")] == ["Solution().f(1, 2)"]
    # No parseable signature at all: the order as written.
    broken = "class Solution:\n    def f(self, a, b\nInput: b = 1, a = 2\nOutput: 3"
    assert [e.call for e in leetcode_examples(broken, "f")] == ["Solution().f(1, 2)"]


_PIECES = st.sampled_from(
    [
        "Input:",
        "Output:",
        "Input: nums = [1,2,3], k = 2",
        "Output: 5",
        "Output:",
        "**Input:** x = ",
        "Example 1:",
        "Explanation: so",
        "",
        "\u00a0",
        "nums = [",
        "]",
        '"',
        "'",
        "\\",
        ",",
        "=",
        "k = true",
        "null",
        "[[[[[[",
        "9" * 5000,
        "1e999",
        "class Solution:",
        "    def f(self, nums, k):",
        "def f(self, k, nums",
    ]
)


@settings(max_examples=150, deadline=None)
@given(st.one_of(st.text(max_size=2000), st.lists(_PIECES, max_size=200).map("\n".join)))
def test_garbage_and_adversarial_statements_never_raise(text: str) -> None:
    prompt = "class Solution:\n    def f(self, nums, k):\n        pass\n" + text
    examples = visible_examples(prompt, "f")
    assert len(examples) <= 20 and len(set(examples)) == len(examples)
    for example in examples:
        assert example_arguments(example.call, "f") is not None
        ast.literal_eval(example.expected)
    assert len(leetcode_examples(text, "f")) <= 200


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=8),
            lambda inner: st.lists(inner, max_size=3),
            max_leaves=8,
        ),
        min_size=2,
        max_size=2,
    ),
    st.booleans(),
)
def test_json_examples_read_back_as_written(values: list[object], swap: bool) -> None:
    nums, k = values
    shown = [f"nums = {json.dumps(nums)}", f"k = {json.dumps(k)}"]
    prompt = _prompt(f"Input: {', '.join(shown[::-1] if swap else shown)}\nOutput: {json.dumps(k)}")
    [example] = visible_examples(prompt, "f")
    assert example_arguments(example.call, "f") == ((nums, k), {})
    assert ast.literal_eval(example.expected) == k


def test_huge_statements_are_read_quickly() -> None:
    one = "Input: nums = [1,2,3], k = 2\nOutput: 5\n"
    for huge in [
        one * 30_000,  # one example repeated
        "".join(f"Input: nums = [{i}], k = 1\nOutput: {i}\n" for i in range(30_000)),
        "Input: nums = [" + "1," * 500_000 + "1], k = 2\nOutput: 5\n",
        "Input: nums = [1], k = 2\n" + "x\n" * 500_000 + "Output: 5\n",  # no end to the input
        "Input:\n" * 300_000,
        "Output:\n" * 300_000,
        "[" * 1_000_000,
        "Input: nums = " + "[" * 100_000 + "], k = 1\nOutput: 1\n",
    ]:
        start = time.perf_counter()
        examples = visible_examples(_prompt(huge), "f")
        assert time.perf_counter() - start < 3.0
        assert len(examples) <= 20


def test_the_simulated_tester_tests_the_method(tmp_path: Path) -> None:
    problem = _problem(tmp_path)
    solution = Solution(coder="c", role="Programmer", round=1, code=LARGEST)
    view = ReviewView(
        problem_id=problem.id,
        prompt=problem.prompt,
        entry_point=problem.entry_point,
        round=2,
        solutions=(solution,),
    )
    clean = CodeGenSimParams(tester_error_rate=0.0, unsound_test_rate=0.0)
    suite = asyncio.run(SimulatedTester(clean).write_tests(view))
    assert sorted(suite.tests) == [
        "assert Solution().largestSum([-4], 1) == -4",
        "assert Solution().largestSum([1, 2, 3], 2) == 5",
    ]
    unsound = CodeGenSimParams(tester_error_rate=0.0, unsound_test_rate=1.0)
    wrong = asyncio.run(SimulatedTester(unsound).write_tests(view))
    assert sorted(wrong.tests) == [
        "assert Solution().largestSum([-4], 1) == -3",
        "assert Solution().largestSum([1, 2, 3], 2) == 6",
    ]
