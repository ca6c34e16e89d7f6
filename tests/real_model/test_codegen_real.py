"""CodeGen with real LLM roles (SmolLM2 over HTTP): one HumanEval problem through the whole
debate, code run in the sandbox, the judge's and tester's turns observed (the rogue-agents
paper, §4.1)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from byzllm.envs import Decision, TurnObservation
from byzllm.envs.codegen import llm_team, play_debate
from byzllm.llm import LocalServer, get_model
from byzllm.sandbox import SandboxLimits, sandbox_support
from byzllm.tasks import CodeProblem, load_humaneval

pytestmark = [pytest.mark.real_model, pytest.mark.timeout(900)]

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "HumanEval.jsonl.gz"

#: HumanEval's first problem's format, when the public file is not here.
FALLBACK = CodeProblem(
    id="Tiny/add",
    source="humaneval",
    prompt='def add(a: int, b: int) -> int:\n    """Return the sum of a and b.\n'
    '    >>> add(2, 3)\n    5\n    """\n',
    entry_point="add",
    reference="def add(a: int, b: int) -> int:\n    return a + b\n",
    hidden_test="def check(candidate):\n"
    "    assert candidate(2, 3) == 5\n    assert candidate(-1, 1) == 0\n",
)


class Watch:
    """Records every observed turn; resets once, at the first judge turn (the intervention)."""

    def __init__(self) -> None:
        self.seen: list[TurnObservation] = []

    def decide(self, obs: TurnObservation) -> Decision:
        self.seen.append(obs)
        return "reset" if obs.role == "judge" and len(self.seen) == 1 else "continue"


def test_one_humaneval_problem_through_the_debate(real_server: LocalServer) -> None:
    if not sandbox_support().get("available"):
        pytest.skip("the sandbox cannot run here")
    problem = load_humaneval(SHARED)[0] if SHARED.is_file() else FALLBACK
    model = get_model(
        f"openai/{real_server.model_name}",
        base_url=real_server.base_url,
        api_key_env=None,
        adaptive_timeout=False,
    )
    # Short replies: the path is what is tested, not what a 135M model can code.
    team = llm_team(model, coders=4, max_reprompts=0, max_tokens=96, top_logprobs=5)
    watch = Watch()
    result = asyncio.run(
        play_debate(
            problem,
            team,
            rounds=2,
            intervener=watch,
            limits=SandboxLimits(timeout_s=5.0),
        )
    )
    assert not result.simulated and not result.simulated_execution
    assert result.rounds_played == 2 and len(result.rounds) == 2
    assert result.resets == 1  # the judge and the tester wrote their turn twice
    assert [o.role for o in watch.seen] == ["judge", "judge", "tester"]
    assert result.parse["code"]["calls"] == 8 and result.parse["judge"]["calls"] == 2
    # The hidden tests ran in the sandbox (a 135M model may well fail them).
    assert result.hidden.status in ("passed", "failed", "timed_out", "crashed", "no_code")
    if not result.passed and result.hidden.status == "failed":
        assert result.hidden.detail
    # Whatever the model wrote, every observed distribution is a valid top-k list.
    for obs in watch.seen:
        for dist in obs.distributions:
            assert dist and all(lp <= 1e-6 for _, lp in dist)
