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
whose members report anything less: the attack surface the SAC paper exposes (§6). An honest
agent ties the adversary and keeps its answer only when everyone in its neighbourhood who
gives that answer, itself included, reports exactly 1.0 (its own 1.0 beside a neighbour's 0.8
averages 0.9 and loses), so how often real models say exactly 1.0 matters (the simulated
profiles' ``confidence_at_one_*`` parameters).

Option ``confidence_threshold`` (default 0, the rule as the SAC paper describes it): responses
whose reported confidence is below the threshold do not vote; CP-WBFT's authors use 0.5
(Zheng et al., 2026). When no response reaches it, the agent keeps its own answer.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import ClassVar

from byzllm.agents.consensus import Response, answer_key
from byzllm.errors import InputError

from ._engine import ConsensusProtocol, QuestionState

__all__ = ["CPWBFT", "confidence_vote"]


def confidence_vote(
    candidates: list[tuple[int, str | None, float]], own: int, threshold: float = 0.0
) -> tuple[str | None, list[int]]:
    """Step 2-3 above: ``candidates`` are (agent, answer key, confidence) of {i} ∪ N_i.

    Responses with a confidence below ``threshold`` do not vote. Returns the winning answer
    key (``None`` when no response votes) and its supporters.
    """
    groups: dict[str, list[tuple[int, float]]] = {}
    for agent, key, conf in candidates:
        if key is not None and conf >= threshold:
            groups.setdefault(key, []).append((agent, conf))
    if not groups:
        return None, []
    means = {k: sum(c for _, c in v) / len(v) for k, v in groups.items()}
    best = max(means.values())
    tied = [k for k, m in means.items() if abs(m - best) <= 1e-12]
    # The tie keeps the agent's own *answer*, whether or not its own response voted: below the
    # threshold it abstains, yet its answer may still be among the best (through neighbours).
    own_key = next((key for agent, key, _ in candidates if agent == own), None)
    winner = own_key if own_key in tied else min(tied, key=lambda k: (-len(groups[k]), k))
    return winner, sorted(a for a, _ in groups[winner])


class CPWBFT(ConsensusProtocol):
    """Confidence-probe weighted BFT baseline (see the module docstring for the exact rule)."""

    name: ClassVar[str] = "cp-wbft"

    def __init__(self, F: int = 0, confidence_threshold: float = 0.0) -> None:
        super().__init__(F=F)
        if not 0.0 <= confidence_threshold <= 1.0:
            raise InputError(f"confidence_threshold must lie in [0, 1], got {confidence_threshold}")
        self.confidence_threshold = confidence_threshold

    def __repr__(self) -> str:
        return f"CPWBFT(F={self.F}, confidence_threshold={self.confidence_threshold})"

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
        reported = await state.gather(requests)

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
            winner, supporters = confidence_vote(
                candidates, own=i, threshold=self.confidence_threshold
            )
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
