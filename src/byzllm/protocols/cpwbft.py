"""CP-WBFT (Zheng et al., 2026): confidence-weighted aggregation of self-reported confidence.

The rule as its authors run it, in each round t, for every honest agent i:

1. every agent j reports a self-confidence c_j^(t) ∈ [0, 1] in its current response r_j^(t)
   (honest agents probe their own model; adversaries report a falsified 1.0, App. B.4);
2. agent i groups the responses of {i} ∪ N_i by answer (equal answers in one group; responses
   without an extractable answer do not vote) and computes each group's **mean** reported
   confidence;
3. agent i adopts the answer of the group with the highest mean confidence:
   r_i^(t+1) = argmax_a mean{c_j : j ∈ {i} ∪ N_i, r_j ≡ a}. Ties: keep its own answer when
   it is among the best groups; otherwise the larger group; otherwise the smallest answer key.

No receiver-side check takes place, so one sender reporting 1.0 out-ranks every honest group
whose members report anything less: the attack surface the SAC paper exposes (§6).
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import ClassVar

from byzllm.agents.consensus import Response, answer_key

from ._engine import ConsensusProtocol, QuestionState, gather_map

__all__ = ["CPWBFT", "confidence_vote"]


def confidence_vote(
    candidates: list[tuple[int, str | None, float]], own: int
) -> tuple[str | None, list[int]]:
    """Step 2-3 above: ``candidates`` are (agent, answer key, confidence) of {i} ∪ N_i.

    Returns the winning answer key (``None`` when nobody has an answer) and its supporters.
    """
    groups: dict[str, list[tuple[int, float]]] = {}
    for agent, key, conf in candidates:
        if key is not None:
            groups.setdefault(key, []).append((agent, conf))
    if not groups:
        return None, []
    means = {k: sum(c for _, c in v) / len(v) for k, v in groups.items()}
    best = max(means.values())
    tied = [k for k, m in means.items() if abs(m - best) <= 1e-12]
    own_keys = [k for k in tied if any(a == own for a, _ in groups[k])]
    winner = own_keys[0] if own_keys else min(tied, key=lambda k: (-len(groups[k]), k))
    return winner, sorted(a for a, _ in groups[winner])


class CPWBFT(ConsensusProtocol):
    """Confidence-probe weighted BFT baseline (see the module docstring for the exact rule)."""

    name: ClassVar[str] = "cp-wbft"

    async def step(self, state: QuestionState) -> dict[int, Response]:
        task, agents = state.task, state.network.agents
        # Each agent's confidence in the response it actually sent (adversaries: 1.0).
        requests: dict[tuple[int, int | str], Awaitable[float]] = {}
        for i in state.network.honest:
            requests[(i, i)] = agents[i].confidence(task, state.current[i], state.ctx(i))
            for j, message in state.inbox[i].items():
                key = (j, message.text)
                if key not in requests and j not in state.network.honest:
                    requests[key] = agents[j].confidence(task, message, state.ctx(j))
        reported = await gather_map(requests)

        nxt: dict[int, Response] = {}
        for i in sorted(state.network.honest):
            own = state.current[i]
            candidates = [(i, answer_key(task, own.answer), reported[(i, i)])]
            peer_conf: dict[int, float] = {}
            for j, message in state.inbox[i].items():
                conf = (
                    reported[(j, j)] if j in state.network.honest else reported[(j, message.text)]
                )
                peer_conf[j] = conf
                candidates.append((j, answer_key(task, message.answer), conf))
            winner, supporters = confidence_vote(candidates, own=i)
            if winner is None or winner == answer_key(task, own.answer):
                nxt[i] = own
            else:
                source = min(j for j in supporters if j != i)
                nxt[i] = Response.of(state.inbox[i][source].answer)
            state.note(
                i,
                confidence=reported[(i, i)],
                peer_confidences=peer_conf,
                retained=[j for j in supporters if j != i],
                filtered=sorted(j for j in state.inbox[i] if j not in supporters),
            )
        return nxt
