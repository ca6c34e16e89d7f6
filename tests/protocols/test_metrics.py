"""§5.1 metrics, hand-computed on small traces."""

from __future__ import annotations

import pytest

from byzllm.protocols import (
    AgentRound,
    QuestionTrace,
    compute_metrics,
    majority_correct,
    metrics_from_counts,
    round_counts,
    vote_counts,
)
from byzllm.protocols.metrics import group_accuracy, summed_counts


def _trace(
    task_id: str, groups: list[str], rounds: list[list[str | None]], truth: str
) -> QuestionTrace:
    return QuestionTrace(
        task_id=task_id,
        protocol="sac",
        truth=truth,
        groups=groups,
        rounds=[
            [
                AgentRound(agent=i, round=t, answer=a, key=a, correct=a == truth)
                for i, a in enumerate(answers)
            ]
            for t, answers in enumerate(rounds)
        ],
    )


GROUPS = ["strong", "strong", "weak", "byzantine"]


def test_hand_computed_metrics() -> None:
    # Question 1 (truth 1): init (1, 1, 2, 9) -> final (1, 1, 1, 9).
    # Question 2 (truth 5): init (5, 4, 4, 9) -> final (5, 4, 4, 9).
    q1 = _trace("q1", GROUPS, [["1", "1", "2", "9"], ["1", "1", "1", "9"]], "1")
    q2 = _trace("q2", GROUPS, [["5", "4", "4", "9"], ["5", "4", "4", "9"]], "5")
    m = compute_metrics([q1, q2])
    assert pytest.approx(3 / 8) == m.IAA  # (2 + 1) correct of 8 agent-answers
    assert pytest.approx(4 / 8) == m.FAA
    assert pytest.approx(1 / 8) == m.BFTI
    assert pytest.approx(3 / 4) == m.S_IAA and pytest.approx(3 / 4) == m.S_FAA
    assert m.W_IAA == 0.0 and pytest.approx(1 / 2) == m.W_FAA
    # RA over all 4 agents: q1 final 3 votes for "1" -> correct; q2 "4" has 2 votes vs 1.
    assert pytest.approx(1 / 2) == m.RA
    # H-Majority over the 3 honest agents: q1 correct; q2 "4" beats "5" 2-1.
    assert m.H_Majority == pytest.approx(1 / 2)
    assert [r.round for r in m.per_round] == [0, 1]
    # Round 0 RA: q1 "1" has 2 of 4 and beats "2" and "9": correct; q2 "4" wins: 1/2.
    assert m.per_round[0].ra == pytest.approx(1 / 2)
    assert m.per_round[0].honest == pytest.approx(3 / 6)


def test_tie_at_the_top_counts_as_not_correct() -> None:
    assert majority_correct([("1", True), ("2", False)]) is False
    assert majority_correct([("1", True), ("1", True), ("2", False)]) is True
    assert majority_correct([(None, False), ("1", True)]) is True  # None abstains
    assert majority_correct([(None, False)]) is False


def test_equivalent_correct_keys_pool_their_votes() -> None:
    # "0.5" and "1/2" are both correct: together they out-vote "3".
    assert majority_correct([("0.5", True), ("1/2", True), ("3", False)]) is True


def test_byzantine_votes_count_in_ra_but_not_h_majority() -> None:
    groups = ["strong", "weak", "byzantine", "byzantine"]
    trace = _trace("q", groups, [["1", "2", "2", "2"]], "1")
    m = compute_metrics([trace])
    assert m.RA == 0.0  # "2" has 3 votes
    assert m.H_Majority == 0.0  # honest: "1" vs "2" tie -> not correct


def test_empty_groups_are_none() -> None:
    trace = _trace("q", ["strong"], [["1"]], "1")
    m = compute_metrics([trace])
    assert m.W_IAA is None and m.H_Majority == 1.0 and m.BFTI == 0.0
    assert group_accuracy([trace], lambda g: g == "weak", 0) is None


def test_final_metrics_read_round_t_and_their_own_voters() -> None:
    # SAC paper §5.1: RA is the majority over all agents V at round T, H-Majority the one over
    # the honest agents H at round T, S FAA the strong group's accuracy at round T. Truth 1,
    # groups strong x3, weak, byzantine x2.
    # Round 0: (1, 1, 2 | 3 | 2, 2): all 1:2, 2:3 -> RA 0; honest 1:2, 2:1, 3:1 -> H 1.
    # Round 1: (1, 2, 2 | 3 | 1, 1): all 1:3, 2:2 -> RA 1; honest 1:1, 2:2, 3:1 -> H 0.
    groups = ["strong", "strong", "strong", "weak", "byzantine", "byzantine"]
    rounds: list[list[str | None]] = [
        ["1", "1", "2", "3", "2", "2"],
        ["1", "2", "2", "3", "1", "1"],
    ]
    m = compute_metrics([_trace("q", groups, rounds, "1")])
    assert m.n_rounds == 1
    assert (m.per_round[0].ra, m.per_round[0].h_majority) == (0.0, 1.0)
    assert m.RA == 1.0 and m.H_Majority == 0.0
    assert pytest.approx(2 / 3) == m.S_IAA and pytest.approx(1 / 3) == m.S_FAA
    assert m.W_IAA == 0.0 and m.W_FAA == 0.0
    assert pytest.approx(2 / 6) == m.IAA and pytest.approx(3 / 6) == m.FAA
    assert pytest.approx(1 / 6) == m.BFTI


def test_traces_with_different_placements_pool_by_group() -> None:
    # Seed 1 puts the weak agent first, seed 2 second: group accuracy follows each trace.
    a = _trace("a", ["weak", "strong"], [["2", "1"]], "1")
    b = _trace("b", ["strong", "weak"], [["1", "1"]], "1")
    m = compute_metrics([a, b])
    assert m.S_IAA == 1.0 and pytest.approx(1 / 2) == m.W_IAA


def test_mismatched_traces_are_rejected() -> None:
    a = _trace("a", ["strong"], [["1"]], "1")
    b = _trace("b", ["strong"], [["1"], ["1"]], "1")
    with pytest.raises(ValueError):
        compute_metrics([a, b])
    with pytest.raises(ValueError):
        compute_metrics([])


def test_round_counts_are_the_integers_the_metrics_divide() -> None:
    # Question 1 (truth 1), groups strong, strong, weak, byzantine: init (1, 1, 2, 9): two
    # right (both strong), the weak agent wrong; votes 1:2, 2:1, 9:1 (honest 1:2, 2:1).
    # Final (1, 1, 1, 9): three right; votes 1:3, 9:1.
    q1 = _trace("q1", GROUPS, [["1", "1", "2", "9"], ["1", "1", "1", "9"]], "1")
    assert round_counts(q1) == [
        (2, 0, 2, 2, 4, 1, 2, 3, 1, 1, 1, 1),
        (3, 1, 2, 3, 4, 1, 2, 3, 1, 1, 1, 1),
    ]
    # Question 2 (truth 5): (5, 4, 4, 9) both rounds: one right; 4 outvotes 5 everywhere.
    q2 = _trace("q2", GROUPS, [["5", "4", "4", "9"], ["5", "4", "4", "9"]], "5")
    assert round_counts(q2) == [(1, 0, 1, 1, 4, 1, 2, 3, 0, 1, 0, 1)] * 2
    assert summed_counts([q1, q2]) == [
        (3, 0, 3, 3, 8, 2, 4, 6, 1, 2, 1, 2),
        (4, 1, 3, 4, 8, 2, 4, 6, 1, 2, 1, 2),
    ]
    # A report adds the counts as it reads: the same metrics as from the traces.
    assert metrics_from_counts(summed_counts([q1, q2]), 2) == compute_metrics([q1, q2])
    # No honest agent: no honest vote, H-Majority undefined.
    alone = _trace("q3", ["byzantine"], [["9"]], "1")
    assert round_counts(alone) == [(0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0)]
    assert compute_metrics([alone]).H_Majority is None


def test_every_round_equals_its_definition_on_group_accuracy() -> None:
    # compute_metrics counts every group in one pass per round: the same numbers as
    # group_accuracy and the majority votes read one by one, on traces whose placements differ.
    from byzllm.protocols.metrics import group_accuracy

    def trace(name: str, groups: list[str], answers: list[list[str | None]]) -> QuestionTrace:
        return _trace(name, groups, answers, "1")

    traces = [
        trace("a", GROUPS, [["1", "2", "2", "9"], ["1", "1", None, "9"], ["2", "2", "1", "1"]]),
        trace("b", ["weak", "byzantine", "strong", "weak"], [["1", "9", "1", "3"]] * 3),
        trace("c", ["strong"] * 4, [["1", "2", "2", "1"], ["2", "2", "1", "1"], [None] * 4]),
    ]
    metrics = compute_metrics(traces)
    for t, row in enumerate(metrics.per_round):
        for name, select in (
            ("accuracy", lambda g: True),
            ("weak", lambda g: g == "weak"),
            ("strong", lambda g: g == "strong"),
            ("honest", lambda g: g != "byzantine"),
        ):
            assert getattr(row, name) == group_accuracy(traces, select, t)
        for name, honest_only in (("ra", False), ("h_majority", True)):
            votes = [
                majority_correct(
                    [
                        (r.key, r.correct)
                        for r, g in zip(tr.rounds[t], tr.groups, strict=True)
                        if not honest_only or g != "byzantine"
                    ]
                )
                for tr in traces
            ]
            assert getattr(row, name) == sum(votes) / len(votes)


def test_vote_counts_are_round_counts_of_the_votes() -> None:
    q1 = _trace("q1", GROUPS, [["1", "1", "2", "9"], ["1", "1", "1", "9"]], "1")
    votes = [[(row.key, row.correct) for row in rnd] for rnd in q1.rounds]
    assert vote_counts(q1.groups, votes) == round_counts(q1)
    assert vote_counts([], [[]]) == [(0,) * 12]
