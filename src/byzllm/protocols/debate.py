"""Multi-agent debate (Du et al., 2024) on a graph: refine on every neighbour, no scores.

Each round every honest agent re-answers after reading all its neighbours' responses; nothing
is scored or filtered, so the refine prompt shows the responses without reliability scores.
"""

from __future__ import annotations

from typing import ClassVar

from byzllm.agents.consensus import Response, ScoredResponse

from ._engine import ConsensusProtocol, QuestionState

__all__ = ["Debate"]


class Debate(ConsensusProtocol):
    """Du et al.'s debate: r_i^(t+1) = M_i(x, r_i^(t), {r_j^(t)}_{j ∈ N_i})."""

    name: ClassVar[str] = "debate"

    async def step(self, state: QuestionState) -> dict[int, Response]:
        task, agents = state.task, state.network.agents
        calls = {}
        for i in state.network.honest:
            peers: list[ScoredResponse] = [(m, None) for _, m in sorted(state.inbox[i].items())]
            state.note(i, retained=sorted(state.inbox[i]))
            calls[i] = agents[i].refine(task, state.current[i], peers, self.F, state.ctx(i))
        return await state.gather(calls)
