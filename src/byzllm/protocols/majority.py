"""Local majority vote: each round an agent adopts the most common answer around it.

r_i^(t+1) = the plurality answer among {r_i^(t)} ∪ {r_j^(t)}_{j ∈ N_i}; responses without an
answer abstain. Ties keep the agent's own answer when it is among the most common, otherwise
take the smallest answer key. No model calls after the initial answers.
"""

from __future__ import annotations

from collections import Counter
from typing import ClassVar

from byzllm.agents.consensus import Response, answer_key

from ._engine import ConsensusProtocol, QuestionState

__all__ = ["MajorityVote", "plurality"]


def plurality(keys: list[str | None], own: str | None) -> str | None:
    """The most common non-``None`` key; ties prefer ``own``, then the smallest key."""
    counts = Counter(k for k in keys if k is not None)
    if not counts:
        return None
    top = max(counts.values())
    tied = sorted(k for k, c in counts.items() if c == top)
    return own if own in tied else tied[0]


class MajorityVote(ConsensusProtocol):
    """Iterated local plurality vote (the classical non-LLM baseline)."""

    name: ClassVar[str] = "majority"

    async def step(self, state: QuestionState) -> dict[int, Response]:
        task = state.task
        nxt: dict[int, Response] = {}
        for i in sorted(state.network.honest):
            own = state.current[i]
            own_key = answer_key(task, own.answer)
            keys = {j: answer_key(task, m.answer) for j, m in state.inbox[i].items()}
            winner = plurality([own_key, *keys.values()], own_key)
            supporters = sorted(j for j, k in keys.items() if k == winner and k is not None)
            state.note(i, retained=supporters, filtered=sorted(set(keys) - set(supporters)))
            if winner is None or winner == own_key:
                nxt[i] = own
            else:
                nxt[i] = Response.of(state.inbox[i][supporters[0]].answer)
        return nxt
