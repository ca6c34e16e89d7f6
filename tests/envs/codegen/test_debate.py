"""The CodeGen debate with scripted LLM roles: real code in the sandbox, bad replies, the
intervention (the rogue-agents paper, §4.1)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

import pytest

from byzllm.agents.codegen import (
    CodeGenSimParams,
    Feedback,
    ReviewView,
    SimCode,
    SimulatedTester,
    Solution,
)
from byzllm.agents.codegen import TestSuite as Suite
from byzllm.envs import Decision, TurnObservation
from byzllm.envs.codegen import (
    Team,
    generated_test_result,
    hidden_outcome,
    llm_team,
    play_debate,
    simulated_team,
)
from byzllm.envs.codegen._exec import visible_result
from byzllm.llm import ChatMessage, ChatModel, Completion, GenerateConfig, TokenLogprob
from byzllm.sandbox import SandboxLimits, sandbox_support
from byzllm.tasks import CodeProblem, IOTest

needs_sandbox = pytest.mark.skipif(
    not sandbox_support().get("available"), reason="the sandbox cannot run here"
)

PROBLEM = CodeProblem(
    id="Tiny/add",
    source="humaneval",
    prompt='def add(a: int, b: int) -> int:\n    """Return a + b."""\n',
    entry_point="add",
    reference='def add(a: int, b: int) -> int:\n    """Return a + b."""\n    return a + b\n',
    hidden_test="def check(candidate):\n    assert candidate(2, 3) == 5\n",
)
RIGHT = (
    "```python\ndef add(a, b):\n    return a + b\n```\n"
    "Feedback helpfulness: 4\nTests helpfulness: 3"
)
WRONG = "```python\ndef add(a, b):\n    return a - b\n```"
JUDGE = "Solution 1: CORRECT\nSolution 2: WRONG\nBest: 1\nSolution 2 subtracts."
TESTS = "```python\nassert add(1, 1) == 2\nassert add(0, 5) == 5\n```"


def _logprobs(text: str) -> list[TokenLogprob]:
    """One token per character, each with a two-way top-k (one object per distinct character:
    a megabyte reply would otherwise build a million)."""
    by_char = {
        c: TokenLogprob(token=c, logprob=-0.1, top=[(c, -0.1), ("?", -2.4)]) for c in set(text)
    }
    return [by_char[c] for c in text]


class Scripted(ChatModel):
    """Answers by role (system prompt) from ``script(role, n)``, n = that role's call count."""

    name = "scripted/model"

    def __init__(self, script: Callable[[str, int], str]) -> None:
        self.script = script
        self.calls: dict[str, int] = {}
        self.configs: dict[str, list[GenerateConfig | None]] = {}
        self.asked: dict[str, list[str]] = {}  # each request's last message, by role

    async def generate(
        self, messages: Sequence[ChatMessage], config: GenerateConfig | None = None
    ) -> Completion:
        system = messages[0]["content"]
        role = "judge" if "judge" in system else "tester" if "unit tests" in system else "coder"
        if role == "coder":
            role = system.split(".")[0]
        n = self.calls.get(role, 0)
        self.calls[role] = n + 1
        self.configs.setdefault(role, []).append(config)
        self.asked.setdefault(role, []).append(messages[-1]["content"])
        text = self.script(role, n)
        return Completion(text=text, logprobs=_logprobs(text))


def _script(coder_replies: dict[str, str]) -> Callable[[str, int], str]:
    def script(role: str, n: int) -> str:
        if role == "judge":
            return JUDGE
        if role == "tester":
            return TESTS
        for key, reply in coder_replies.items():
            if key in role:
                return reply
        return RIGHT

    return script


@needs_sandbox
def test_wrong_solution_fails_with_the_assertion_shown() -> None:
    wrong = Solution(coder="c", role="Programmer", round=1, code="def add(a, b):\n    return a - b")
    outcome = asyncio.run(hidden_outcome(PROBLEM, wrong))
    assert not outcome.passed and outcome.status == "failed"
    assert "assert candidate(2, 3) == 5" in outcome.detail or "AssertionError" in outcome.detail
    right = wrong.model_copy(update={"code": "def add(a, b):\n    return a + b"})
    assert asyncio.run(hidden_outcome(PROBLEM, right)).passed


@needs_sandbox
def test_debate_runs_tests_and_judge_positions() -> None:
    model = Scripted(_script({"algorithm developer": WRONG}))
    result = asyncio.run(play_debate(PROBLEM, llm_team(model), rounds=2))
    assert result.passed and not result.simulated and not result.simulated_execution
    second = result.rounds[1]
    assert second.tests is not None and len(second.tests.tests) == 2
    assert [r.passed for r in second.results] == [2, 0, 2, 2]  # the wrong one fails both
    assert "AssertionError" in second.results[1].errors[0]
    judge_turn = next(t for t in result.turns if t.obs.role == "judge")
    # Decision positions: every character of CORRECT, WRONG, and the pick "1".
    assert len(judge_turn.obs.distributions) == len("CORRECT") + len("WRONG") + 1
    tester_turn = next(t for t in result.turns if t.obs.role == "tester")
    assert len(tester_turn.obs.distributions) == 2  # the expected values "2" and "5"
    assert result.parse["judge"] == {"calls": 1, "fallbacks": 0}
    # Both monitored turns came with their log-probabilities.
    assert result.parse["logprobs"] == {"calls": 2, "fallbacks": 0}
    assert second.solutions[0].helpful_feedback == 4


@needs_sandbox
def test_bad_replies_are_counted_never_raised() -> None:
    megabyte = "x" * 1_000_000
    replies = {
        "Python assistant": "I would add them.",  # no code block
        "algorithm developer": "```python\ndef add(a, b:\n    return a + b\n```",  # syntax error
        "computer scientist": megabyte,
        "careful programmer": "```python\nwhile True:\n    print('spam' * 1000)\n```",  # floods
    }
    model = Scripted(_script(replies))
    limits = SandboxLimits(timeout_s=1.0)
    result = asyncio.run(play_debate(PROBLEM, llm_team(model), rounds=2, limits=limits))
    assert result.parse["code"]["fallbacks"] >= 4  # two replies per round had no code
    assert result.syntax_errors >= 2
    assert result.run_failures.get("aborted_test_runs", 0) >= 1
    assert not result.passed


class _NoSpelling(Scripted):
    """Replies whose log-probability tokens do not spell them (a server's other tokenizer)."""

    async def generate(
        self, messages: Sequence[ChatMessage], config: GenerateConfig | None = None
    ) -> Completion:
        reply = await super().generate(messages, config)
        other = [TokenLogprob(token="?", logprob=-0.1, top=[("?", -0.1)])]
        return reply.model_copy(update={"logprobs": other})


def test_monitored_turns_without_logprobs_are_counted() -> None:
    """The monitor reads such a turn as no uncertainty (its documented default)."""
    model = _NoSpelling(_script({}))
    result = asyncio.run(play_debate(PROBLEM, llm_team(model), rounds=2, execution="simulated"))
    assert result.parse["logprobs"] == {"calls": 2, "fallbacks": 2}


class ResetOnce:
    """Resets at the first judge turn it sees."""

    def __init__(self) -> None:
        self.seen: list[TurnObservation] = []

    def decide(self, obs: TurnObservation) -> Decision:
        self.seen.append(obs)
        return "reset" if obs.role == "judge" and len(self.seen) == 1 else "continue"


def test_reset_rewrites_feedback_and_tests() -> None:
    problem = PROBLEM
    intervener = ResetOnce()
    result = asyncio.run(
        play_debate(
            problem,
            simulated_team(problem),
            rounds=2,
            intervener=intervener,
            execution="simulated",
        )
    )
    assert result.resets == 1 and result.simulated and result.simulated_execution
    assert [(t.obs.role, t.attempt, t.decision) for t in result.turns] == [
        ("judge", 0, "reset"),
        ("judge", 1, "continue"),
        ("tester", 1, "continue"),
    ]
    assert [o.turn for o in intervener.seen] == [1, 2, 3]
    assert all(o.run_turn == 1 for o in intervener.seen)


class ResetAtTester:
    """Lets the judge's turn through, then resets at the tester's."""

    def __init__(self) -> None:
        self.reset = False

    def decide(self, obs: TurnObservation) -> Decision:
        if obs.role == "tester" and not self.reset:
            self.reset = True
            return "reset"
        return "continue"


def test_a_reset_after_the_judges_turn_marks_that_turn_not_applied() -> None:
    """The reset rewrites the judge's feedback too: its first turn of the round was taken,
    then thrown away, and the stored turns must say so (as GovSim's do)."""
    result = asyncio.run(
        play_debate(
            PROBLEM,
            simulated_team(PROBLEM),
            rounds=2,
            intervener=ResetAtTester(),
            execution="simulated",
        )
    )
    assert [(t.obs.role, t.attempt, t.decision, t.applied) for t in result.turns] == [
        ("judge", 0, "continue", False),
        ("tester", 0, "reset", False),
        ("judge", 1, "continue", True),
        ("tester", 1, "continue", True),
    ]


def test_llm_feedback_rewritten_after_a_reset_is_sampled_afresh() -> None:
    """After a reset the judge and the tester write new feedback and tests (the rogue-agents
    paper, §4.1); the LLM ones got the same request at temperature 0 (and a cache hit), so
    the reset changed nothing on real models."""
    model = Scripted(_script({"algorithm developer": WRONG}))
    result = asyncio.run(play_debate(PROBLEM, llm_team(model), rounds=2, intervener=ResetOnce()))
    assert result.resets == 1
    judge = [(c.temperature, c.seed) for c in model.configs["judge"] if c is not None]
    tester = [(c.temperature, c.seed) for c in model.configs["tester"] if c is not None]
    assert judge == [(0.0, None), (0.7, 1)]  # the first writing, then the rewrite
    assert tester == [(0.0, None), (0.7, 1)]


def test_zero_shot_is_one_coder_one_round() -> None:
    team = simulated_team(PROBLEM, debate=False)
    assert isinstance(team, Team) and len(team.coders) == 1 and team.judge is None
    result = asyncio.run(play_debate(PROBLEM, team, rounds=3, execution="simulated"))
    assert result.rounds_played == 1 and result.turns == []


class Spy:
    """A judge and tester that record what they are shown."""

    name = "Spy"

    def __init__(self) -> None:
        self.views: list[ReviewView] = []

    async def review(self, view: ReviewView) -> Feedback:
        self.views.append(view)
        return Feedback(text="", verdicts=[None] * len(view.solutions))

    async def write_tests(self, view: ReviewView) -> Suite:
        self.views.append(view)
        return Suite()


EXAMPLES = PROBLEM.model_copy(
    update={
        "prompt": 'def add(a: int, b: int) -> int:\n    """Return a + b.\n    >>> add(1, 2)\n'
        '    3\n    add(2, 2) == 4\n    """\n',
    }
)


@pytest.mark.parametrize("execution", ["simulated", "sandbox"])
def test_reviewers_see_behaviour_never_the_coders_accounts(execution: str) -> None:
    if execution == "sandbox" and not sandbox_support().get("available"):
        pytest.skip("the sandbox cannot run here")
    spy = Spy()
    params = CodeGenSimParams(coder_skill=0.0, bug_coverage=1.0)  # every bug shows
    coders = simulated_team(EXAMPLES, params).coders
    result = asyncio.run(
        play_debate(
            EXAMPLES,
            Team(coders=coders, judge=spy, tester=spy),
            rounds=3,
            execution="sandbox" if execution == "sandbox" else "simulated",
        )
    )
    assert len(spy.views) == 4  # judge and tester, rounds 2 and 3
    for view, record in zip(spy.views[::2], result.rounds[:2], strict=True):
        assert all(s.sim is None for s in view.solutions)  # no account reaches a reviewer
        assert all(r.total == 2 for r in view.visible)  # both examples ran on every solution
        # What the reviewers saw is what the code does: the reference passes both examples.
        for s, r in zip(record.solutions, view.visible, strict=True):
            assert s.sim is not None and (r.failed == 0) == s.sim.correct


@needs_sandbox
def test_simulated_execution_agrees_with_the_sandbox() -> None:
    # The environment's simulated outcomes follow the rule the wrong code follows when run.
    params = CodeGenSimParams(coder_skill=0.0, bug_coverage=0.5, unsound_test_rate=0.3)
    for k in range(4):
        runs = [
            asyncio.run(
                play_debate(
                    EXAMPLES, simulated_team(EXAMPLES, params), rounds=3, execution=e, key=f"k{k}"
                )
            )
            for e in ("simulated", "sandbox")
        ]
        sim, real = (
            [[(x.passed, x.failed) for x in r.results + r.visible] for r in run.rounds]
            for run in runs
        )
        assert sim == real
        assert runs[0].final_seat == runs[1].final_seat


# A LiveCodeBench stdin problem, as the loader makes it: no function, a statement with samples.
STDIN = CodeProblem(
    id="abc/sum",
    source="livecodebench",
    prompt="### Sum\n\nRead A and B and print A+B.\n\nSample Input 1\n\n1 2\n\n"
    "Sample Output 1\n\n3\n\nRead the input from standard input and print the answer.",
    io_tests=(IOTest(input="1 2\n", output="3\n"), IOTest(input="5 7\n", output="12\n")),
)
SUM = "```python\na, b = map(int, input().split())\nprint(a + b)\n```\nTests helpfulness: 4"
PRODUCT = "```python\na, b = map(int, input().split())\nprint(a * b)\n```"
CASES = (
    "Input:\n```\n1 2\n```\nExpected output:\n```\n3\n```\n"
    "Input:\n```\n2 2\n```\nExpected output:\n```\n4\n```\n"
    "Input:\n```\n-4 10\n```\nExpected output:\n```\n6\n```"
)


def _stdin_script(tester: list[str]) -> Callable[[str, int], str]:
    def script(role: str, n: int) -> str:
        if role == "judge":
            return JUDGE
        if role == "tester":
            return tester[min(n, len(tester) - 1)]
        return PRODUCT if "algorithm developer" in role else SUM

    return script


@needs_sandbox
def test_the_tester_of_a_stdin_program_writes_inputs_and_outputs_that_run() -> None:
    # The tester used to be asked for `assert the solution(...) == expected`, and its asserts
    # ran against a program that read an empty standard input: every test failed on every
    # solution, the right one included.
    model = Scripted(_stdin_script([CASES]))
    result = asyncio.run(play_debate(STDIN, llm_team(model), rounds=2))
    asked = model.asked["tester"][0]
    assert "Expected output:" in asked and "assert" not in asked
    second = result.rounds[1]
    assert second.tests is not None and second.tests.tests == []
    assert [c.input for c in second.tests.cases] == ["1 2\n", "2 2\n", "-4 10\n"]
    # a + b passes the three; a * b passes only 2 2 -> 4 (the output 2 for 1 2 is wrong).
    assert [(r.passed, r.failed) for r in second.results] == [(3, 0), (1, 2), (3, 0), (3, 0)]
    assert second.results[1].errors[0] == "expected '3', got '2' (in case 1, input '1 2\\n')"
    tester_turn = next(t for t in result.turns if t.obs.role == "tester")
    # Decision positions: the characters of the expected outputs "3", "4" and "6".
    assert len(tester_turn.obs.distributions) == 3
    assert tester_turn.obs.action["tests"] == 3 and "Expected output:" in tester_turn.text
    assert result.parse["tests"] == {"calls": 1, "fallbacks": 0}
    assert result.passed and result.final_rule == "tests"
    # The coders were shown the cases and their results.
    assert "Unit tests:\nInput:\n```\n1 2\n```" in model.asked["You are a careful programmer"][1]


@needs_sandbox
def test_unreadable_stdin_tests_are_asked_again_then_counted() -> None:
    model = Scripted(_stdin_script(["```python\nassert main() == 3\n```", "no tests"]))
    result = asyncio.run(play_debate(STDIN, llm_team(model), rounds=2))
    assert "'Input:'" in model.asked["tester"][1]  # the re-prompt names the format
    assert result.parse["tests"] == {"calls": 1, "fallbacks": 1}
    assert all(r.status == "no_tests" for r in result.rounds[1].results)


@needs_sandbox
def test_a_stdin_case_that_hangs_or_crashes_fails_alone() -> None:
    code = "a, b = map(int, input().split())\nwhile a < 0:\n    pass\nprint(a + b // (b - 9))"
    suite = Suite(
        cases=[
            IOTest(input="1 2\n", output="0\n"),  # 1 + 2 // -7 = 0
            IOTest(input="-1 2\n", output="1\n"),  # hangs
            IOTest(input="1 9\n", output="1\n"),  # divides by zero
            IOTest(input="", output="1\n"),  # reads past the end of its input
        ]
    )
    solution = Solution(coder="c", role="Programmer", round=1, code=code)
    limits = SandboxLimits(timeout_s=1.0)
    result = asyncio.run(generated_test_result(STDIN, solution, suite, limits=limits))
    assert (result.passed, result.failed, result.status) == (1, 3, "ran")
    assert result.errors[0].startswith("timed_out: ")
    assert "ZeroDivisionError" in result.errors[1] and "EOFError" in result.errors[2]


@needs_sandbox
def test_the_simulated_tester_tests_a_stdin_program_from_its_samples() -> None:
    model = Scripted(_stdin_script([CASES]))
    tester = SimulatedTester(CodeGenSimParams(tester_error_rate=0.0, unsound_test_rate=0.0))
    team = llm_team(model)
    team = Team(coders=team.coders, judge=team.judge, tester=tester)
    result = asyncio.run(play_debate(STDIN, team, rounds=2))
    second = result.rounds[1]
    assert second.tests is not None and second.tests.cases == [IOTest(input="1 2\n", output="3\n")]
    assert [(r.passed, r.failed) for r in second.results] == [(1, 0), (0, 1), (1, 0), (1, 0)]
    # Simulated execution follows the same rule: the reference prints the sample's output.
    reference = Solution(coder="c", role="Programmer", round=1, code="", sim=SimCode(correct=True))
    wrong = reference.model_copy(update={"sim": SimCode(correct=False, bug="negate")})
    sound = second.tests
    unsound = Suite(cases=[IOTest(input="1 2\n", output="3#\n")])
    assert [
        (r.passed, r.failed, r.simulated)
        for r in (
            asyncio.run(generated_test_result(STDIN, s, t, execution="simulated"))
            for s, t in ((reference, sound), (wrong, sound), (reference, unsound))
        )
    ] == [(1, 0, True), (0, 1, True), (0, 1, True)]


@needs_sandbox
def test_the_judge_sees_how_each_stdin_program_fared_on_the_samples() -> None:
    # A stdin problem's samples were no example (no function to call): the judge saw none.
    model = Scripted(_stdin_script([CASES]))
    result = asyncio.run(play_debate(STDIN, llm_team(model), rounds=2))
    visible = result.rounds[1].visible
    assert [(r.passed, r.failed) for r in visible] == [(1, 0), (0, 1), (1, 0), (1, 0)]
    asked = model.asked["judge"][0]
    assert "Results on the examples in the problem statement:" in asked
    assert "Solution 2: 0/1 tests passed; expected '3', got '2'" in asked


# A LiveCodeBench functional problem, as the loader makes it: a method of `class Solution`,
# the statement's examples in LeetCode's layout.
FUNCTIONAL = CodeProblem(
    id="lc/largest",
    source="livecodebench",
    prompt="### Largest sum\n\nReturn the sum of the k largest elements of nums.\n\u00a0\n"
    "Example 1:\n\nInput: nums = [1,2,3], k = 2\nOutput: 5\nExplanation: 2 + 3 = 5.\n\n"
    "Example 2:\n\nInput: nums = [-4], k = 1\nOutput: -4\n\n\u00a0\nConstraints:\n\n"
    "1 <= k <= nums.length\n\nComplete this code:\nclass Solution:\n"
    "    def largestSum(self, nums: List[int], k: int) -> int:",
    entry_point="largestSum",
    io_tests=(IOTest(input="[1,2,3]\n2", output="5", testtype="functional"),),
    metadata={"func_name": "largestSum"},
)
LARGEST = (
    "```python\nclass Solution:\n    def largestSum(self, a, k):\n"
    "        return sum(sorted(a)[-k:])\n```\nTests helpfulness: 4"
)
SMALLEST = LARGEST.replace("[-k:]", "[:k]")


@needs_sandbox
def test_the_judge_sees_how_each_method_fared_on_the_statements_examples() -> None:
    # LeetCode's Input: / Output: examples were never read: the judge saw no example run.
    tests = "```python\nassert Solution().largestSum([2, 1], 1) == 2\n```"

    def script(role: str, n: int) -> str:
        if role in ("judge", "tester"):
            return JUDGE if role == "judge" else tests
        return SMALLEST if "algorithm developer" in role else LARGEST

    model = Scripted(script)
    result = asyncio.run(play_debate(FUNCTIONAL, llm_team(model), rounds=2))
    visible = result.rounds[1].visible
    # sum(sorted(a)[:k]) gives 3 on the first example and -4 on the second.
    assert [(r.passed, r.failed) for r in visible] == [(2, 0), (1, 1), (2, 0), (2, 0)]
    asked = model.asked["judge"][0]
    assert "Results on the examples in the problem statement:" in asked
    assert "Solution 2: 1/2 tests passed" in asked and "largestSum([1, 2, 3], 2)" in asked


def test_simulated_execution_answers_the_statements_examples() -> None:
    # The reference returns each example's value; a wrong one changes it where its bug shows.
    reference = Solution(coder="c", role="Programmer", round=1, code="", sim=SimCode(correct=True))
    everywhere = reference.model_copy(
        update={"sim": SimCode(correct=False, bug="negate", coverage=1.0)}
    )
    nowhere = reference.model_copy(update={"sim": SimCode(correct=False, bug="negate", coverage=0)})
    results = [
        asyncio.run(visible_result(FUNCTIONAL, s, execution="simulated"))
        for s in (reference, everywhere, nowhere)
    ]
    assert [(r.passed, r.failed, r.simulated) for r in results] == [
        (2, 0, True),
        (0, 2, True),
        (2, 0, True),
    ]
    suite = Suite(tests=["assert Solution().largestSum([1, 2, 3], 2) == -6"])  # negated 5
    outcome = asyncio.run(
        generated_test_result(FUNCTIONAL, everywhere, suite, execution="simulated")
    )
    assert (outcome.passed, outcome.failed) == (1, 0)


@needs_sandbox
def test_simulated_coders_on_a_functional_problem_agree_with_the_sandbox() -> None:
    # A wrong simulated coder's method used to crash on load (its wrapper looked for a
    # function), so the sandbox failed every example that simulated execution passed.
    reference = "class Solution:\n    def double(self, x: int) -> int:\n        return 2 * x\n"
    problem = CodeProblem(
        id="lc/double",
        source="livecodebench",
        prompt="Return twice x.\n\nExample 1:\n\nInput: x = 2\nOutput: 4\n\nExample 2:\n\n"
        "Input: x = 5\nOutput: 10\n\nExample 3:\n\nInput: x = -1\nOutput: -2\n\n"
        f"Complete this code:\n{reference}",
        entry_point="double",
        reference=reference,
        io_tests=(IOTest(input="3", output="6", testtype="functional"),),
        metadata={"func_name": "double"},
    )
    params = CodeGenSimParams(coder_skill=0.0, bug_coverage=0.5, unsound_test_rate=0.3)
    for k in range(3):
        runs = [
            asyncio.run(
                play_debate(
                    problem, simulated_team(problem, params), rounds=2, execution=e, key=f"k{k}"
                )
            )
            for e in ("simulated", "sandbox")
        ]
        sim, real = (
            [[(x.passed, x.failed) for x in r.results + r.visible] for r in run.rounds]
            for run in runs
        )
        assert sim == real and any(x != (0, 0) for x in sim[1])
