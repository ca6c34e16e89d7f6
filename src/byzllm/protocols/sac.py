"""Self-Anchored Consensus (SAC), Algorithm 1 of the SAC paper.

Each round t, every honest agent i:

1. receives r_j^(t) from every neighbour j ∈ N_i (line 3);
2. scores every neighbour *and itself* on the receiver side, s_{i→j} = φ_i(x, r_j^(t)) for
   j ∈ N_i ∪ {i} (line 4, Eq. (2)); all these calls run concurrently;
3. forms L_i = {j ∈ N_i : s_{i→j} < s_{i→i}} (line 5, Eq. (3)) and drops the
   min(F, |L_i|) lowest-scored members of L_i, keeping R_i = N_i \\ bottom_F(L_i)
   (line 6, Eq. (4));
4. refines from its own response and {(r_j, s_{i→j})}_{j ∈ R_i}, sorted by descending score
   (line 7, Eq. (5)); when R_i = ∅ the refinement is skipped and r^(t+1) = r^(t) (App. B.2).

Ties in bottom_F among equal scores are broken by the lower neighbour index first, so the
filter is deterministic.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from byzllm.agents.consensus import Response, ScoredResponse

from ._engine import ConsensusProtocol, QuestionState

__all__ = ["SAC", "sac_filter"]


def sac_filter(
    scores: Mapping[int, float], self_score: float, F: int
) -> tuple[list[int], list[int]]:
    """Eqs. (3)-(4): return ``(retained R_i, filtered bottom_F(L_i))``, both sorted by index.

    ``scores`` maps each neighbour j to s_{i→j}; ``self_score`` is s_{i→i}.
    """
    lower = [j for j in scores if scores[j] < self_score]
    if not lower or F == 0:
        return sorted(scores), []
    dropped = sorted(lower, key=lambda j: (scores[j], j))[:F]
    gone = set(dropped)
    return sorted(j for j in scores if j not in gone), sorted(dropped)


class SAC(ConsensusProtocol):
    """Self-Anchored Consensus (Algorithm 1) with adversary bound ``F``."""

    name: ClassVar[str] = "sac"

    async def step(self, state: QuestionState) -> dict[int, Response]:
        task, agents = state.task, state.network.agents
        honest = sorted(state.network.honest)
        # Each agent scores its neighbours and itself in one call (concurrent model calls for
        # LLM-backed agents, one pass for simulated ones).
        requests = {
            i: agents[i].score_all(
                task, state.current[i], {i: state.current[i], **state.inbox[i]}, state.ctx(i)
            )
            for i in honest
        }
        scores = await state.gather(requests)

        refines = {}
        for i in honest:
            peer_scores = {j: scores[i][j] for j in state.inbox[i]}
            self_score = scores[i][i]
            retained, dropped = sac_filter(peer_scores, self_score, self.F)
            state.note(
                i,
                self_score=self_score,
                scores=peer_scores,
                retained=retained,
                filtered=dropped,
            )
            if not retained:
                continue
            ordered: list[ScoredResponse] = [
                (state.inbox[i][j], peer_scores[j])
                for j in sorted(retained, key=lambda j: (-peer_scores[j], j))
            ]
            refines[i] = agents[i].refine(task, state.current[i], ordered, self.F, state.ctx(i))
        updated = await state.gather(refines)
        return {i: updated.get(i, state.current[i]) for i in honest}
