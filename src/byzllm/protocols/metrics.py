"""The evaluation metrics of §5.1 of the SAC paper, overall and per round (Tables 1-6).

For questions q = 1..Q with ground truth y*_q and responses r_{i,q}^(t):

* accuracy of a set of agents G at round t: acc_G(t) = mean over q and i ∈ G of
  1[r_{i,q}^(t) = y*_q] (the average per-agent accuracy);
* **IAA** = acc_V(0) and **FAA** = acc_V(T) over *all* agents V (adversaries included, as in
  Table 1, where the replaying adversary counts as wrong);
* **BFTI** = FAA − IAA;
* **RA** = fraction of questions whose majority vote over all agents V at round T equals y*;
* **W IAA→FAA**, **S IAA→FAA** = acc of the weak / strong honest groups at rounds 0 and T;
* **H-Majority** = fraction of questions whose majority vote over the honest agents H at round
  T equals y*.

Tie rule of every majority vote (documented once, used everywhere): agents without an
extractable answer abstain; the vote is *correct* only when the correct answer has strictly
more votes than every other answer. A tie at the top counts as not correct, so no protocol can
gain from ties.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

from pydantic import BaseModel, ConfigDict

from ._trace import QuestionTrace

__all__ = [
    "ConsensusMetrics",
    "RoundMetrics",
    "compute_metrics",
    "group_accuracy",
    "majority_correct",
]


def majority_correct(votes: Sequence[tuple[str | None, bool]]) -> bool:
    """Whether the majority vote is correct, under the module's tie rule.

    ``votes`` holds (answer key, is-correct) per voter; ``None`` keys abstain.
    """
    counts: Counter[str] = Counter()
    correct_keys: set[str] = set()
    for key, correct in votes:
        if key is None:
            continue
        counts[key] += 1
        if correct:
            correct_keys.add(key)
    if not counts:
        return False
    # Equivalent answers may have distinct keys; pool all correct ones into one vote count.
    right = sum(counts[k] for k in correct_keys)
    best_wrong = max((c for k, c in counts.items() if k not in correct_keys), default=0)
    return right > best_wrong


Selector = Callable[[str], bool]


def _everyone(group: str) -> bool:
    return True


def _honest(group: str) -> bool:
    return group != "byzantine"


def _members(trace: QuestionTrace, select: Selector) -> list[int]:
    return [i for i, group in enumerate(trace.groups) if select(group)]


def group_accuracy(traces: Sequence[QuestionTrace], select: Selector, t: int) -> float | None:
    """Average per-agent accuracy at round ``t`` of the agents whose group ``select`` accepts.

    Membership is read from each trace, so traces with different placements pool correctly.
    ``None`` when no agent qualifies.
    """
    hits = total = 0
    for trace in traces:
        for i in _members(trace, select):
            hits += trace.rounds[t][i].correct
            total += 1
    return hits / total if total else None


def _majority_rate(traces: Sequence[QuestionTrace], select: Selector, t: int) -> float | None:
    wins = counted = 0
    for trace in traces:
        members = _members(trace, select)
        if not members:
            continue
        counted += 1
        rows = trace.rounds[t]
        wins += majority_correct([(rows[i].key, rows[i].correct) for i in members])
    return wins / counted if counted else None


class RoundMetrics(BaseModel):
    """Accuracies at one round t (a row of Tables 2 and 4, plus RA / H-Majority at t)."""

    model_config = ConfigDict(frozen=True)

    round: int
    accuracy: float
    weak: float | None
    strong: float | None
    honest: float | None
    ra: float
    h_majority: float | None


class ConsensusMetrics(BaseModel):
    """§5.1 metrics of one protocol × topology × composition over a set of questions."""

    model_config = ConfigDict(frozen=True)

    n_questions: int
    n_rounds: int
    IAA: float
    FAA: float
    BFTI: float
    RA: float
    W_IAA: float | None
    W_FAA: float | None
    S_IAA: float | None
    S_FAA: float | None
    H_Majority: float | None
    per_round: list[RoundMetrics]


def compute_metrics(traces: Sequence[QuestionTrace]) -> ConsensusMetrics:
    """All §5.1 metrics from the traces of one configuration (same T; groups per trace).

    Votes compare the normalized answer keys recorded in the traces.
    """
    if not traces:
        raise ValueError("compute_metrics needs at least one question trace")
    T = traces[0].n_rounds
    if any(tr.n_rounds != T for tr in traces):
        raise ValueError("all traces must have the same number of rounds")

    def is_weak(group: str) -> bool:
        return group == "weak"

    def is_strong(group: str) -> bool:
        return group == "strong"

    per_round = []
    for t in range(T + 1):
        acc = group_accuracy(traces, _everyone, t)
        ra = _majority_rate(traces, _everyone, t)
        assert acc is not None and ra is not None
        per_round.append(
            RoundMetrics(
                round=t,
                accuracy=acc,
                weak=group_accuracy(traces, is_weak, t),
                strong=group_accuracy(traces, is_strong, t),
                honest=group_accuracy(traces, _honest, t),
                ra=ra,
                h_majority=_majority_rate(traces, _honest, t),
            )
        )
    first, last = per_round[0], per_round[-1]
    return ConsensusMetrics(
        n_questions=len(traces),
        n_rounds=T,
        IAA=first.accuracy,
        FAA=last.accuracy,
        BFTI=last.accuracy - first.accuracy,
        RA=last.ra,
        W_IAA=first.weak,
        W_FAA=last.weak,
        S_IAA=first.strong,
        S_FAA=last.strong,
        H_Majority=last.h_majority,
        per_round=per_round,
    )
