"""How well agents' scores tell right answers from wrong ones: the scorer's AUC.

SAC's filter (the SAC paper, Eq. (3)-(4)) can only drop wrong answers if the receiver-side
scores s_{i→j} rank right answers above wrong ones. The AUC of the scores against the
correctness of the scored response is that diagnostic: the probability that a right response
outscores a wrong one (ties count half; 0.5 = no signal, 1 = perfect). It is computed per
group of scorers (``strong``, ``weak``) from the traces, over every (scorer, scored
neighbour, round) pair, the label being whether the neighbour's answer at that round is
correct. CP-WBFT's self-reported confidences get the same measure against the agent's own
correctness (``confidence``). The interval is a percentile bootstrap over questions; a
question run under several seeds is one unit, its runs resampled together, as the report's
other intervals resample it (:func:`~byzllm.experiments.consensus.report.count_intervals`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from byzllm.protocols import QuestionTrace

__all__ = ["auc", "scorer_auc"]

_RESAMPLES = 1000


def auc(
    values: Sequence[float] | NDArray[np.float64], labels: Sequence[bool] | NDArray[np.bool_]
) -> float | None:
    """P(value of a positive > value of a negative), ties half (Mann-Whitney); ``None``
    without both classes.

    >>> auc([0.9, 0.2, 0.5], [True, False, False])
    1.0
    >>> auc([0.5, 0.5], [True, False])
    0.5
    """
    from scipy.stats import rankdata

    x = np.asarray(values, dtype=float)
    y = np.asarray(labels, dtype=bool)
    positives = int(y.sum())
    negatives = int(y.size - positives)
    if positives == 0 or negatives == 0:
        return None
    ranks = rankdata(x)
    rank_sum = float(ranks[y].sum())
    return (rank_sum - positives * (positives + 1) / 2) / (positives * negatives)


def _pairs(trace: QuestionTrace) -> dict[str, list[tuple[float, bool]]]:
    out: dict[str, list[tuple[float, bool]]] = {}
    for rnd in trace.rounds:
        for row in rnd:
            group = trace.groups[row.agent] if row.agent < len(trace.groups) else "?"
            for j, score in row.scores.items():
                if 0 <= j < len(rnd):
                    out.setdefault(group, []).append((float(score), bool(rnd[j].correct)))
            if row.confidence is not None and group != "byzantine":
                out.setdefault("confidence", []).append((float(row.confidence), row.correct))
    return out


def _by_question(traces: Sequence[QuestionTrace]) -> list[dict[str, list[tuple[float, bool]]]]:
    """The :func:`_pairs` of ``traces``, those of one question (its task id: the same question
    under several seeds) put together, in the order the questions first appear."""
    merged: dict[str, dict[str, list[tuple[float, bool]]]] = {}
    for trace in traces:
        question = merged.setdefault(trace.task_id, {})
        for group, pairs in _pairs(trace).items():
            question.setdefault(group, []).extend(pairs)
    return list(merged.values())


def scorer_auc(traces: Sequence[QuestionTrace], seed: int = 0) -> dict[str, dict[str, Any]]:
    """``{group: {auc, low, high, pairs, questions}}`` for every group that scored (and
    ``confidence`` where confidences were reported); groups whose pairs hold only right or
    only wrong responses have ``auc`` ``None``. ``questions`` counts distinct questions: the
    runs of one question under several seeds share its difficulty, so they are one unit of
    the bootstrap (resampled one by one, k seeds gave an interval about √k too narrow)."""
    per_question = _by_question(traces)
    groups = sorted({g for q in per_question for g in q if g != "byzantine"})
    rng = np.random.default_rng(seed)
    out: dict[str, dict[str, Any]] = {}
    for group in groups:
        chunks = [q.get(group, []) for q in per_question]
        values = [np.array([v for v, _ in c], dtype=float) for c in chunks]
        labels = [np.array([lab for _, lab in c], dtype=bool) for c in chunks]
        point = auc(np.concatenate(values), np.concatenate(labels))
        estimates: list[float] = []
        if point is not None and len(chunks) > 1:
            for _ in range(_RESAMPLES):
                pick = rng.integers(0, len(chunks), len(chunks))
                value = auc(
                    np.concatenate([values[k] for k in pick]),
                    np.concatenate([labels[k] for k in pick]),
                )
                if value is not None:
                    estimates.append(value)
        low, high = (
            (float(np.quantile(estimates, 0.025)), float(np.quantile(estimates, 0.975)))
            if estimates
            else (None, None)
        )
        out[group] = {
            "auc": point,
            "low": low,
            "high": high,
            "pairs": int(sum(len(c) for c in chunks)),
            "questions": sum(1 for c in chunks if c),
        }
    return out
