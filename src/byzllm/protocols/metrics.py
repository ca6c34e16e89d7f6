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

from collections.abc import Callable, Sequence

from pydantic import BaseModel, ConfigDict

from ._trace import QuestionTrace

__all__ = [
    "ROUND_FIELDS",
    "ConsensusMetrics",
    "RoundMetrics",
    "compute_metrics",
    "group_accuracy",
    "majority_correct",
    "round_values",
]


def majority_correct(votes: Sequence[tuple[str | None, bool]]) -> bool:
    """Whether the majority vote is correct, under the module's tie rule.

    ``votes`` holds (answer key, is-correct) per voter; ``None`` keys abstain.
    """
    # Plain dicts and one pass (not Counter and generators): summaries call this for every
    # question, round and group, and their bootstrap intervals once more per question.
    counts: dict[str, int] = {}
    correct_keys: set[str] = set()
    for key, correct in votes:
        if key is None:
            continue
        counts[key] = counts.get(key, 0) + 1
        if correct:
            correct_keys.add(key)
    # Equivalent answers may have distinct keys; pool all correct ones into one vote count.
    right = best_wrong = 0
    for key, count in counts.items():
        if key in correct_keys:
            right += count
        elif count > best_wrong:
            best_wrong = count
    return bool(counts) and right > best_wrong


Selector = Callable[[str], bool]


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


#: The per-round quantities of :class:`RoundMetrics`, in :func:`round_values` order.
ROUND_FIELDS = ("accuracy", "weak", "strong", "honest", "ra", "h_majority")

RoundValues = tuple[float, float | None, float | None, float | None, float, float | None]


def round_values(traces: Sequence[QuestionTrace]) -> list[RoundValues]:
    """Per round t = 0..T, the :data:`ROUND_FIELDS` of the traces pooled: what
    :func:`group_accuracy` and the majority rates give, computed in one pass per round
    (each trace's groups are read once, not once per round and metric; bootstrap intervals
    ask for it per question). Counts are integers, so the values are exactly theirs.
    """
    if not traces:
        raise ValueError("compute_metrics needs at least one question trace")
    T = traces[0].n_rounds
    if any(tr.n_rounds != T for tr in traces):
        raise ValueError("all traces must have the same number of rounds")
    members = []
    for trace in traces:
        groups = trace.groups
        honest = [i for i, g in enumerate(groups) if g != "byzantine"]
        weak = [i for i, g in enumerate(groups) if g == "weak"]
        strong = [i for i, g in enumerate(groups) if g == "strong"]
        members.append((trace.rounds, range(len(groups)), weak, strong, honest))
    out: list[RoundValues] = []
    for t in range(T + 1):
        hits = [0, 0, 0, 0]  # everyone, weak, strong, honest
        totals = [0, 0, 0, 0]
        ra_wins = ra_counted = h_wins = h_counted = 0
        for rounds, everyone, weak, strong, honest in members:
            rows = rounds[t]
            for g, chosen in enumerate((everyone, weak, strong, honest)):
                for i in chosen:
                    hits[g] += rows[i].correct
                totals[g] += len(chosen)
            if everyone:
                ra_counted += 1
                ra_wins += majority_correct([(rows[i].key, rows[i].correct) for i in everyone])
            if honest:
                h_counted += 1
                h_wins += majority_correct([(rows[i].key, rows[i].correct) for i in honest])
        acc, weak_acc, strong_acc, honest_acc = (
            h / n if n else None for h, n in zip(hits, totals, strict=True)
        )
        assert acc is not None and ra_counted
        out.append(
            (
                acc,
                weak_acc,
                strong_acc,
                honest_acc,
                ra_wins / ra_counted,
                h_wins / h_counted if h_counted else None,
            )
        )
    return out


def compute_metrics(traces: Sequence[QuestionTrace]) -> ConsensusMetrics:
    """All §5.1 metrics from the traces of one configuration (same T; groups per trace).

    Votes compare the normalized answer keys recorded in the traces.
    """
    per_round = [
        RoundMetrics(
            round=t, accuracy=acc, weak=weak, strong=strong, honest=honest, ra=ra, h_majority=hm
        )
        for t, (acc, weak, strong, honest, ra, hm) in enumerate(round_values(traces))
    ]
    T = len(per_round) - 1
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
