"""The CodeGen debate with scripted LLM roles: real code in the sandbox, bad replies, the
intervention (the rogue-agents paper, §4.1)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

import pytest

from byzllm.agents.codegen import CodeGenSimParams, Feedback, ReviewView, Solution
from byzllm.agents.codegen import TestSuite as Suite
from byzllm.envs import Decision, TurnObservation
from byzllm.envs.codegen import (
    Team,
    hidden_outcome,
    llm_team,
    play_debate,
    simulated_team,
)
from byzllm.llm import ChatMessage, ChatModel, Completion, GenerateConfig, TokenLogprob
from byzllm.sandbox import SandboxLimits, sandbox_support
from byzllm.tasks import CodeProblem

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
