"""The scorer's AUC against correctness, hand-computed."""

from __future__ import annotations

import pytest

from byzllm.experiments.consensus.scorer import auc, scorer_auc
from byzllm.protocols import QuestionTrace
from byzllm.protocols._trace import AgentRound


def test_auc_by_hand() -> None:
    # positives 0.9, 0.4; negatives 0.5, 0.1 -> pairs: (0.9>0.5) (0.9>0.1) (0.4<0.5) (0.4>0.1)
    assert auc([0.9, 0.4, 0.5, 0.1], [True, True, False, False]) == pytest.approx(3 / 4)
    assert auc([0.5, 0.5, 0.5], [True, False, False]) == pytest.approx(0.5)  # ties half
    assert auc([0.2], [True]) is None


def _trace(task: str, correct: list[bool], scores: dict[int, float]) -> QuestionTrace:
    rows = [
        AgentRound(agent=i, round=0, answer="x", correct=c, scores=scores if i == 0 else {})
        for i, c in enumerate(correct)
    ]
    return QuestionTrace(
        task_id=task,
        protocol="sac",
        truth="1",
        groups=["strong", "weak", "byzantine"],
        rounds=[rows],
    )


def test_scorer_auc_pairs_each_score_with_the_scored_answer() -> None:
    # agent 0 (strong) scores 1 (right) at 0.8 and 2 (wrong) at 0.3, then 1 wrong 0.6, 2 right 0.7
    traces = [
        _trace("a", [True, True, False], {1: 0.8, 2: 0.3}),
        _trace("b", [True, False, True], {1: 0.6, 2: 0.7}),
    ]
    out = scorer_auc(traces)
    # positives 0.8, 0.7; negatives 0.3, 0.6 -> all four pairs ordered: AUC 1
    assert out["strong"]["auc"] == pytest.approx(1.0)
    assert out["strong"]["pairs"] == 4 and out["strong"]["questions"] == 2
    assert out["strong"]["low"] is not None and out["strong"]["low"] <= 1.0
    assert "byzantine" not in out and "weak" not in out


def test_scorer_auc_resamples_a_questions_seeds_together() -> None:
    """The same question under several seeds is one unit of the bootstrap, as in every other
    interval of the report: resampled seed by seed, three identical seeds of 4 questions
    counted 12 questions and gave an interval narrower than the 4 questions alone."""
    base = [
        _trace("a", [True, True, False], {1: 0.8, 2: 0.3}),
        _trace("b", [True, False, True], {1: 0.6, 2: 0.7}),
        _trace("c", [True, True, False], {1: 0.4, 2: 0.5}),
        _trace("d", [True, False, True], {1: 0.2, 2: 0.9}),
    ]
    once = scorer_auc(base)["strong"]
    thrice = scorer_auc([t for t in base for _ in range(3)])["strong"]
    assert once["questions"] == thrice["questions"] == 4
    assert thrice["pairs"] == 3 * once["pairs"] == 24
    # Identical seeds add no information: the same point and the same interval.
    assert (thrice["auc"], thrice["low"], thrice["high"]) == (
        once["auc"],
        once["low"],
        once["high"],
    )
