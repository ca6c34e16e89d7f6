"""The evaluation metrics of §5.1 of the SAC paper, overall and per round (Tables 1-6).

For questions q = 1..Q with ground truth y*_q and responses r_{i,q}^(t):

* accuracy of a set of agents G at round t: acc_G(t) = mean over q and i ∈ G of
  1[r_{i,q}^(t) = y*_q] (the average per-agent accuracy);
* **IAA** = acc_V(0) and **FAA** = acc_V(T) over *all* agents V (adversaries included, §5.1):
  an adversary counts on whether its message is right, so a replayed answer that happens to
  be right for the question counts as right;
* **BFTI** = FAA − IAA;
* **RA** (Round-level Accuracy, §5.1) = fraction of questions whose majority vote over all
  agents V at round T equals y*;
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
    "COUNT_FIELDS",
    "ROUND_FIELDS",
    "ConsensusMetrics",
    "RoundMetrics",
    "compute_metrics",
    "group_accuracy",
    "majority_correct",
    "metrics_from_counts",
    "round_counts",
    "round_values",
    "summed_counts",
    "values_from_counts",
    "vote_counts",
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

#: The integers every per-round quantity divides, in :func:`round_counts` order: correct
#: agents and agents of the groups everyone, weak, strong and honest; questions whose majority
#: vote over everyone is correct, and those with a vote; the same over the honest agents.
COUNT_FIELDS = (
    "hits",
    "weak_hits",
    "strong_hits",
    "honest_hits",
    "agents",
    "weak_agents",
    "strong_agents",
    "honest_agents",
    "ra_wins",
    "ra_votes",
    "h_wins",
    "h_votes",
)

RoundValues = tuple[float, float | None, float | None, float | None, float, float | None]
#: One round's :data:`COUNT_FIELDS`.
RoundCounts = tuple[int, ...]


def round_counts(trace: QuestionTrace) -> list[RoundCounts]:
    """Per round t = 0..T of one question, the :data:`COUNT_FIELDS`: integers that add up
    over questions, so a report keeps these few numbers per question, not its trace."""
    return vote_counts(
        trace.groups, [[(row.key, row.correct) for row in rows] for rows in trace.rounds]
    )


def vote_counts(
    groups: Sequence[str], rounds: Sequence[Sequence[tuple[str | None, bool]]]
) -> list[RoundCounts]:
    """:func:`round_counts` from the agents' ``groups`` and, per round, each agent's (answer
    key, is-correct): what a stored record's trace gives without building its model (a
    10,000-question page validated 210,000 rows only to read these two fields)."""
    n = len(groups)
    honest = [i for i, g in enumerate(groups) if g != "byzantine"]
    weak = [i for i, g in enumerate(groups) if g == "weak"]
    strong = [i for i, g in enumerate(groups) if g == "strong"]
    out: list[RoundCounts] = []
    for rows in rounds:
        votes = rows if len(rows) == n else [rows[i] for i in range(n)]  # agent i: rows[i]
        right = [bool(correct) for _, correct in votes]
        hits = (
            sum(right),
            sum([right[i] for i in weak]),
            sum([right[i] for i in strong]),
            sum([right[i] for i in honest]),
        )
        ra = majority_correct(votes) if groups else 0
        h = majority_correct([votes[i] for i in honest]) if honest else 0
        out.append(
            (
                *hits,
                len(groups),
                len(weak),
                len(strong),
                len(honest),
                int(ra),
                1 if groups else 0,
                int(h),
                1 if honest else 0,
            )
        )
    return out


def values_from_counts(counts: Sequence[Sequence[int]]) -> list[RoundValues]:
    """Per round, the :data:`ROUND_FIELDS` from that round's :data:`COUNT_FIELDS` (of one
    question or of several added up): hits over agents, wins over votes; ``None`` where a
    group has no agent (or no honest vote)."""
    out: list[RoundValues] = []
    for row in counts:
        hits, agents = row[:4], row[4:8]
        ra_wins, ra_votes, h_wins, h_votes = (int(v) for v in row[8:])
        acc, weak_acc, strong_acc, honest_acc = (
            int(h) / int(n) if n else None for h, n in zip(hits, agents, strict=True)
        )
        if acc is None or not ra_votes:
            raise ValueError("a round without agents has no accuracy")
        out.append(
            (
                acc,
                weak_acc,
                strong_acc,
                honest_acc,
                ra_wins / ra_votes,
                h_wins / h_votes if h_votes else None,
            )
        )
    return out


def _checked_rounds(traces: Sequence[QuestionTrace]) -> int:
    """T, the same for every trace."""
    if not traces:
        raise ValueError("compute_metrics needs at least one question trace")
    T = traces[0].n_rounds
    if any(tr.n_rounds != T for tr in traces):
        raise ValueError("all traces must have the same number of rounds")
    return T


def summed_counts(traces: Sequence[QuestionTrace]) -> list[RoundCounts]:
    """The :func:`round_counts` of ``traces`` (same T), added up round by round."""
    T = _checked_rounds(traces)
    total = [[0] * len(COUNT_FIELDS) for _ in range(T + 1)]
    for trace in traces:
        for t, row in enumerate(round_counts(trace)):
            line = total[t]
            for k, v in enumerate(row):
                line[k] += v
    return [tuple(line) for line in total]


def round_values(traces: Sequence[QuestionTrace]) -> list[RoundValues]:
    """Per round t = 0..T, the :data:`ROUND_FIELDS` of the traces pooled: what
    :func:`group_accuracy` and the majority rates give, from the traces' integer counts
    (:func:`round_counts`) added up, so the values are exactly theirs.
    """
    return values_from_counts(summed_counts(traces))


def compute_metrics(traces: Sequence[QuestionTrace]) -> ConsensusMetrics:
    """All §5.1 metrics from the traces of one configuration (same T; groups per trace).

    Votes compare the normalized answer keys recorded in the traces.
    """
    return metrics_from_counts(summed_counts(traces), len(traces))


def metrics_from_counts(counts: Sequence[Sequence[int]], n_questions: int) -> ConsensusMetrics:
    """All §5.1 metrics from the :data:`COUNT_FIELDS` of ``n_questions`` questions added up
    round by round (:func:`summed_counts`; a report adds them as it reads, keeping no trace)."""
    per_round = [
        RoundMetrics(
            round=t, accuracy=acc, weak=weak, strong=strong, honest=honest, ra=ra, h_majority=hm
        )
        for t, (acc, weak, strong, honest, ra, hm) in enumerate(values_from_counts(counts))
    ]
    T = len(per_round) - 1
    first, last = per_round[0], per_round[-1]
    return ConsensusMetrics(
        n_questions=n_questions,
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
