"""What the LLM judge and tester are shown (the rogue-agents paper, §4.1: in round j both
evaluate the previous solutions S^{j-1})."""

from __future__ import annotations

from byzllm.agents.codegen import (
    ReviewView,
    Solution,
    render_judge_prompt,
    render_tester_prompt,
)
from byzllm.agents.codegen import (
    TestResult as ExampleResult,
)

_PROMPT = 'def add(a, b):\n    """Add.\n    >>> add(1, 2)\n    3\n    """\n'


def _view(code: str, round_: int, visible: tuple[ExampleResult, ...] = ()) -> ReviewView:
    solution = Solution(coder="c", role="Programmer", round=round_ - 1, code=code)
    return ReviewView(
        problem_id="p",
        prompt=_PROMPT,
        entry_point="add",
        round=round_,
        solutions=(solution,),
        visible=visible,
    )


def _text(messages: list[dict[str, str]]) -> str:
    return "\n".join(m["content"] for m in messages)


def test_the_tester_sees_the_previous_solutions() -> None:
    wrong, right = _view("def add(a, b): return a - b", 2), _view("def add(a, b): return a + b", 3)
    assert "return a - b" in _text(render_tester_prompt(wrong))  # type: ignore[arg-type]
    assert render_tester_prompt(wrong) != render_tester_prompt(right)


def test_the_judge_sees_how_each_solution_fared_on_the_examples() -> None:
    failed = ExampleResult(passed=0, failed=1, errors=["assert add(1, 2) == 3 -> got -1"])
    view = _view("def add(a, b): return a - b", 2, (failed,))
    text = _text(render_judge_prompt(view))  # type: ignore[arg-type]
    assert "Solution 1: 0/1 tests passed; assert add(1, 2) == 3 -> got -1" in text
    # A problem that states no examples adds nothing.
    none = ExampleResult(status="no_tests")
    view = _view("def add(a, b): return a - b", 2, (none,))
    text = _text(render_judge_prompt(view))  # type: ignore[arg-type]
    assert "examples in the problem statement" not in text


def test_tests_of_a_solution_method_call_it_through_the_class() -> None:
    # LiveCodeBench's functional problems: the starter code is LeetCode's class Solution and
    # the hidden tests call Solution().f(...); a test calling f(...) alone is a NameError on
    # every solution, the right one included.
    prompt = (
        "Return the sum of nums.\n\nComplete this code:\n"
        "class Solution:\n    def maxSum(self, nums: List[int]) -> int:\n        "
    )
    solution = Solution(coder="c", role="Programmer", round=1, code="class Solution: ...")
    view = ReviewView(
        problem_id="lcb", prompt=prompt, entry_point="maxSum", round=2, solutions=(solution,)
    )
    tester = _text(render_tester_prompt(view))  # type: ignore[arg-type]
    assert "`assert Solution().maxSum(...) == expected`" in tester
    assert "Define `maxSum` as a method of `Solution`." in tester
    # A plain function (HumanEval) is called by its name.
    plain = _text(render_tester_prompt(_view("def add(a, b): return a + b", 2)))  # type: ignore[arg-type]
    assert "`assert add(...) == expected`" in plain and "Define `add`." in plain
