"""The CodeGen debate and its intervention seam (the rogue-agents paper, §4.1, §4.2, App. C).

:func:`play_debate` plays one problem:

1. **Round 1**: every coder writes a solution ``s_i^0`` (concurrently).
2. **Round j = 2..rounds**: the judge writes feedback ``F^j`` and the tester tests ``T^j`` on
   the previous solutions ``S^{j-1}`` (concurrently). Before they reach the coders, the loop
   shows each to the optional :class:`~byzllm.envs.Intervener` as a
   :class:`~byzllm.envs.TurnObservation` (role ``"judge"`` then ``"tester"``; ``run_turn`` is
   the feedback round, ``j - 1``; ``turn`` counts every judge and tester turn, discarded ones
   included). Code generation is irreversible, so the last irreversible state is ``S^{j-1}``:
   ``"reset"`` discards ``F^j`` and ``T^j`` and has the judge *and* the tester write them
   again (the paper's intervention, §4.1); ``"resample"`` discards only the observed role's
   output and asks that role again (the §6.1 ablation). The per-role cap is the intervener's
   (1 in CodeGen, §4.2); ``max_interventions`` is a safety net against a misbehaving one.
   The judge and the tester see ``S^{j-1}`` without the simulated coders' own accounts of
   their code (``Solution.sim``), and what each solution does on the examples the prompt shows
   (``ReviewView.visible``, run here: :func:`~._exec.visible_result`): what code observably
   does, never whether it is correct.
   Then ``T^j`` runs against every solution of ``S^{j-1}`` (the sandbox, concurrently) and
   the coders revise with ``(S^{j-1}, F^j, T^j)`` and the results, rating how helpful
   ``F^j`` and ``T^j`` were.
3. **Final answer**: the paper does not say how one solution is chosen; we follow the debate
   framework it builds on (DyLAN, App. C), which runs every unit test written during the
   debate against the final solutions and takes one that passes the most (``final_rule=
   "tests"``, ties broken by a seeded draw among the tied). ``final_rule="vote"`` takes the
   most frequent final solution instead (identical code up to formatting; ties by seat).
   Without any generated test, ``"tests"`` falls back to ``"vote"`` (recorded).
4. **Pass@1**: the chosen solution runs against the hidden tests
   (:func:`~._exec.hidden_outcome`).

The zero-shot baseline of Table 1 is a team of one coder and no judge or tester: one round,
its solution is the answer (which coder: :func:`~._team.simulated_team`, ``zero_shot_seat``).
"""

from __future__ import annotations

import ast
import asyncio
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field

from byzllm.agents import _seeding
from byzllm.agents._parsed import ParseCounts, ParseStage
from byzllm.agents.codegen import (
    CodeGenCoder,
    CodeGenJudge,
    CodeGenTester,
    CoderView,
    Feedback,
    ReviewView,
    Solution,
    TestResult,
    TestSuite,
)
from byzllm.envs._interfaces import Decision, Intervener, TurnObservation
from byzllm.errors import InputError
from byzllm.sandbox import SandboxLimits
from byzllm.tasks import CodeProblem, IOTest

from ._exec import (
    Execution,
    HiddenOutcome,
    assemble,
    generated_test_result,
    hidden_outcome,
    syntax_error,
    visible_result,
)

__all__ = [
    "DebateResult",
    "FinalRule",
    "RoundRecord",
    "Team",
    "TurnRecord",
    "play_debate",
]

#: How the final answer is chosen (module docstring).
FinalRule = Literal["tests", "vote"]

_KEEP_CHARS = 4000


@dataclass(frozen=True)
class Team:
    """The debaters: coders (seat order), and a judge and a tester (``None``: zero-shot)."""

    coders: Sequence[CodeGenCoder]
    judge: CodeGenJudge | None = None
    tester: CodeGenTester | None = None


class TurnRecord(BaseModel):
    """One judge or tester turn: what the monitor saw, what the intervener decided."""

    obs: TurnObservation
    round: int
    attempt: int
    decision: Decision = "continue"
    applied: bool = True
    fallback: bool = False
    errors: list[str] = Field(default_factory=list)
    text: str = ""
    noise: list[str] = Field(default_factory=list)


class RoundRecord(BaseModel):
    """One round: the solutions written in it, and the feedback, tests and results they saw
    (``visible``: the previous solutions on the prompt's examples, as the reviewers saw it)."""

    round: int
    solutions: list[Solution]
    feedback: Feedback | None = None
    tests: TestSuite | None = None
    results: list[TestResult] = Field(default_factory=list)
    visible: list[TestResult] = Field(default_factory=list)


class DebateResult(BaseModel):
    """The outcome and transcript of one debate (``passed`` is Pass@1 of the final answer).

    ``parse``: per stage (``code``, ``ratings``, ``judge``, ``tests``) the replies read and the
    fall-backs. ``run_failures``: generated-test runs that did not finish (``aborted``) and a
    hidden run that timed out, crashed or was refused. ``simulated``: any role was simulated;
    ``simulated_execution``: outcomes were simulated rather than run.
    """

    problem_id: str
    source: str
    passed: bool
    hidden: HiddenOutcome
    final_seat: int | None
    final_code: str
    final_rule: str
    rounds_played: int
    total_turns: int = 0
    resets: int = 0
    resamples: int = 0
    rounds: list[RoundRecord] = Field(default_factory=list)
    turns: list[TurnRecord] = Field(default_factory=list)
    parse: dict[str, dict[str, int]] = Field(default_factory=dict)
    run_failures: dict[str, int] = Field(default_factory=dict)
    syntax_errors: int = 0
    simulated: bool = False
    simulated_execution: bool = False


def _cut(s: Solution) -> Solution:
    return s.model_copy(
        update={"code": s.code[:_KEEP_CHARS], "replies": [r[:_KEEP_CHARS] for r in s.replies]}
    )


class _Counts:
    def __init__(self) -> None:
        self.parse = ParseCounts()
        self.runs: Counter[str] = Counter()
        self.syntax = 0

    def add(self, stage: ParseStage, fell_back: bool) -> None:
        self.parse.add(stage, fell_back)

    def solutions(self, problem: CodeProblem, solutions: Sequence[Solution]) -> None:
        for s in solutions:
            self.add("code", s.fallback)
            if s.round > 1:
                self.add("ratings", s.rating_fallback)
            if s.code.strip() and not s.fallback and syntax_error(assemble(problem, s.code)):
                self.syntax += 1


def _normalized(code: str) -> str:
    try:
        return ast.dump(ast.parse(code))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return code.strip()


def _combined(suites: Sequence[TestSuite]) -> list[TestSuite]:
    """Every accepted test in one suite (duplicates dropped)."""
    tests: list[str] = []
    cases: list[IOTest] = []
    for s in suites:
        tests += [t for t in s.tests if t not in tests]
        cases += [c for c in s.cases if c not in cases]
    return [TestSuite(tests=tests, cases=cases)] if tests or cases else []


async def _choose(
    problem: CodeProblem,
    final: Sequence[Solution],
    suites: Sequence[TestSuite],
    rule: FinalRule,
    key: str,
    execution: Execution,
    limits: SandboxLimits | None,
) -> tuple[int, str]:
    if len(final) == 1:
        return 0, "only"  # nothing to choose between (zero-shot): no rule was applied
    merged = _combined(suites)
    if rule == "tests" and merged:
        scores = []
        for s in final:
            runs = await asyncio.gather(
                *(
                    generated_test_result(problem, s, suite, execution=execution, limits=limits)
                    for suite in merged
                )
            )
            scores.append(sum(r.passed for r in runs))
        best = max(scores)
        tied = [i for i, v in enumerate(scores) if v == best]
        return _seeding.choice(tied, "codegen-final", key), "tests"
    groups = Counter(_normalized(s.code) for s in final)
    top = max(groups.values())
    seat = next(i for i, s in enumerate(final) if groups[_normalized(s.code)] == top)
    return seat, "vote"


async def _write(
    team: Team,
    problem: CodeProblem,
    key: str,
    round_: int,
    seen: tuple[tuple[Solution, ...], Feedback, TestSuite, tuple[TestResult, ...]] | None = None,
) -> list[Solution]:
    """Every coder's solution of ``round_``, in seat order; from round 2 on each sees ``seen``,
    the previous solutions, the judge's feedback, the tests and their results."""
    previous, feedback, tests, results = seen or ((), None, None, ())
    views = [
        CoderView(
            problem_id=problem.id,
            prompt=problem.prompt,
            entry_point=problem.entry_point,
            round=round_,
            seat=i,
            solutions=previous,
            feedback=feedback,
            tests=tests,
            results=results,
            key=key,
        )
        for i in range(len(team.coders))
    ]
    written = await asyncio.gather(*(c.write(v) for c, v in zip(team.coders, views, strict=True)))
    return list(written)


async def play_debate(
    problem: CodeProblem,
    team: Team,
    *,
    rounds: int = 3,
    intervener: Intervener | None = None,
    final_rule: FinalRule = "tests",
    execution: Execution = "sandbox",
    limits: SandboxLimits | None = None,
    key: str | None = None,
    max_interventions: int = 8,
) -> DebateResult:
    """Play the debate on ``problem`` (module docstring) and return its full record.

    ``key`` identifies the debate (default: the problem id) for the simulated roles'
    reproducible draws and the monitors' per-game state: the same key meets the same draws
    under every condition.
    """
    if not team.coders:
        raise InputError("a debate needs at least one coder")
    if rounds < 1:
        raise InputError("rounds must be >= 1")
    debating = team.judge is not None and team.tester is not None
    key = key or problem.id
    counts = _Counts()
    simulated = False
    turns: list[TurnRecord] = []
    records: list[RoundRecord] = []
    suites: list[TestSuite] = []
    total_turns = resets = resamples = interventions = 0

    solutions = await _write(team, problem, key, 1)
    counts.solutions(problem, solutions)
    records.append(RoundRecord(round=1, solutions=[_cut(s) for s in solutions]))
    played = 1
    for j in range(2, rounds + 1) if debating else ():
        assert team.judge is not None and team.tester is not None
        judge, tester = team.judge, team.tester
        attempts = {"judge": 0, "tester": 0}
        previous = tuple(solutions)
        # What the reviewers see: code and behaviour, never the coders' own accounts.
        public = tuple(s.model_copy(update={"sim": None}) for s in previous)
        visible = tuple(
            await asyncio.gather(
                *(visible_result(problem, s, execution=execution, limits=limits) for s in previous)
            )
        )

        def review(
            role: str,
            j: int = j,
            attempts: dict[str, int] = attempts,
            public: tuple[Solution, ...] = public,
            visible: tuple[TestResult, ...] = visible,
        ) -> ReviewView:
            return ReviewView(
                problem_id=problem.id,
                prompt=problem.prompt,
                entry_point=problem.entry_point,
                round=j,
                attempt=attempts[role],
                solutions=public,
                visible=visible,
                key=key,
                stdin=problem.reads_stdin,
            )

        feedback, suite = await asyncio.gather(
            judge.review(review("judge")), tester.write_tests(review("tester"))
        )
        pending = ["judge", "tester"]
        while pending:
            role = pending[0]
            total_turns += 1
            if role == "judge":
                counts.add("judge", feedback.fallback)
                action: dict[str, Any] = {"verdicts": feedback.verdicts, "pick": feedback.pick}
                dists, name, fb = feedback.distributions, judge.name, feedback.fallback
                errors, text, noise = feedback.parse_errors, feedback.text, feedback.noise
                llm = not feedback.simulated
            else:
                counts.add("tests", suite.fallback)
                action = {"tests": suite.size, "dropped": suite.dropped}
                dists, name, fb = suite.distributions, tester.name, suite.fallback
                errors, text, noise = suite.parse_errors, suite.text(), suite.noise
                llm = not suite.simulated
            if llm:
                counts.parse.add_logprobs(dists, fell_back=fb)
            obs = TurnObservation(
                game_id=key,
                turn=total_turns,
                run_turn=j - 1,
                role=role,
                agent=name,
                action={"round": j, **action},
                distributions=[list(d) for d in dists],
            )
            decision: Decision = "continue"
            if intervener is not None and interventions < max_interventions:
                decision = intervener.decide(obs)
                if decision not in ("continue", "reset", "resample"):
                    raise InputError(f"intervener returned {decision!r}")
            turns.append(
                TurnRecord(
                    obs=obs,
                    round=j,
                    attempt=attempts[role],
                    decision=decision,
                    applied=decision == "continue",
                    fallback=fb,
                    errors=list(errors),
                    text=text[:_KEEP_CHARS],
                    noise=list(noise),
                )
            )
            if decision == "continue":
                pending.pop(0)
                continue
            interventions += 1
            redo = ["judge", "tester"] if decision == "reset" else [role]
            resets += decision == "reset"
            resamples += decision == "resample"
            for r in redo:
                attempts[r] += 1
            for t in turns:
                # A reset discards this round's feedback already taken: not applied after all.
                if t.round == j and t.obs.role in redo:
                    t.applied = False
            if "judge" in redo and "tester" in redo:
                feedback, suite = await asyncio.gather(
                    judge.review(review("judge")), tester.write_tests(review("tester"))
                )
            elif "judge" in redo:
                feedback = await judge.review(review("judge"))
            else:
                suite = await tester.write_tests(review("tester"))
            pending = [r for r in ("judge", "tester") if r in redo or r in pending]
        simulated = simulated or feedback.simulated or suite.simulated
        suites.append(suite)
        results = list(
            await asyncio.gather(
                *(
                    generated_test_result(problem, s, suite, execution=execution, limits=limits)
                    for s in solutions
                )
            )
        )
        counts.runs["aborted_test_runs"] += sum(r.status == "aborted" for r in results)
        solutions = await _write(team, problem, key, j, (previous, feedback, suite, tuple(results)))
        counts.solutions(problem, solutions)
        records.append(
            RoundRecord(
                round=j,
                solutions=[_cut(s) for s in solutions],
                feedback=feedback,
                tests=suite,
                results=results,
                visible=list(visible),
            )
        )
        played = j

    simulated = simulated or any(s.simulated for s in solutions)
    seat, used_rule = await _choose(problem, solutions, suites, final_rule, key, execution, limits)
    chosen = solutions[seat]
    hidden = await hidden_outcome(problem, chosen, execution=execution, limits=limits)
    if hidden.status in ("timed_out", "crashed", "rejected"):
        counts.runs[f"hidden_{hidden.status}"] += 1
    return DebateResult(
        problem_id=problem.id,
        source=problem.source,
        passed=hidden.passed,
        hidden=hidden,
        final_seat=seat,
        final_code=chosen.code[:_KEEP_CHARS],
        final_rule=used_rule,
        rounds_played=played,
        total_turns=total_turns,
        resets=resets,
        resamples=resamples,
        rounds=records,
        turns=turns,
        parse=counts.parse.to_dict(),
        run_failures=dict(counts.runs),
        syntax_errors=counts.syntax,
        simulated=simulated,
        simulated_execution=hidden.simulated,
    )
