"""Ready-made CodeGen teams: simulated or LLM-backed, for the debate or the zero-shot baseline."""

from __future__ import annotations

from byzllm.agents.codegen import (
    CODER_ROLES,
    CodeGenSimParams,
    LLMCoder,
    LLMJudge,
    LLMTester,
    SimulatedCoder,
    SimulatedJudge,
    SimulatedTester,
)
from byzllm.errors import InputError
from byzllm.llm import ChatModel
from byzllm.tasks import CodeProblem

from ._debate import Team

__all__ = ["llm_team", "simulated_team"]


def simulated_team(
    problem: CodeProblem,
    params: CodeGenSimParams | None = None,
    *,
    coders: int = 4,
    debate: bool = True,
    salt: str = "",
) -> Team:
    """Simulated coders (seat order of the four App. C roles), judge and tester.

    ``debate=False`` gives the zero-shot baseline of the rogue-agents paper's Table 1: the
    coder of seat ``params.zero_shot_seat`` alone (the paper does not say which coder plays
    it; a named, documented choice). The coders write real code from the problem's reference
    solution, which a problem without one (a LiveCodeBench problem) does not have.
    """
    if problem.reference is None or problem.entry_point is None:
        raise InputError(
            f"{problem.id}: simulated coders cannot play this problem: a simulated coder's code "
            "is the problem's reference solution or a deliberately broken copy of it, and the "
            "problem has no reference solution or no function name (LiveCodeBench's "
            "code_generation_lite release ships neither; HumanEval problems have both). Use "
            "LLM roles (agents: llm, --model) for it"
        )
    params = params or CodeGenSimParams()
    seats = range(coders) if debate else [params.zero_shot_seat]
    team = [
        SimulatedCoder(
            f"{CODER_ROLES[i % len(CODER_ROLES)]}{'' if i < len(CODER_ROLES) else i + 1}",
            i,
            params,
            reference=problem.reference,
            entry_point=problem.entry_point,
            salt=salt,
        )
        for i in seats
    ]
    if not debate:
        return Team(coders=team)
    return Team(
        coders=team,
        judge=SimulatedJudge(params, salt=salt),
        tester=SimulatedTester(params, salt=salt),
    )


def llm_team(
    model: ChatModel,
    *,
    coders: int = 4,
    debate: bool = True,
    top_logprobs: int = 10,
    max_reprompts: int = 1,
    max_tokens: int | None = 1024,
    redo_temperature: float = 0.7,
) -> Team:
    """LLM-backed coders, judge and tester on ``model`` (``debate=False``: one coder); the
    judge and tester rewrite after an intervention at ``redo_temperature``."""
    n = coders if debate else 1
    team = [
        LLMCoder(
            CODER_ROLES[i % len(CODER_ROLES)] + ("" if i < len(CODER_ROLES) else str(i + 1)),
            model,
            role=CODER_ROLES[i % len(CODER_ROLES)],
            max_reprompts=max_reprompts,
            max_tokens=max_tokens,
        )
        for i in range(n)
    ]
    if not debate:
        return Team(coders=team)
    return Team(
        coders=team,
        judge=LLMJudge(
            model,
            top_logprobs=top_logprobs,
            max_reprompts=max_reprompts,
            max_tokens=max_tokens,
            redo_temperature=redo_temperature,
        ),
        tester=LLMTester(
            model,
            top_logprobs=top_logprobs,
            max_reprompts=max_reprompts,
            max_tokens=max_tokens,
            redo_temperature=redo_temperature,
        ),
    )
