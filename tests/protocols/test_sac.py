"""SAC (Algorithm 1): the filter of Eqs. (3)-(4) by hand, and a hand-traced run."""

from __future__ import annotations

from collections.abc import Sequence

import networkx as nx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from byzllm.agents.consensus import CallContext, ConsensusAgent, Response, ScoredResponse
from byzllm.protocols import SAC, Network, run_question, sac_filter
from byzllm.tasks import Task


def test_filter_drops_the_f_lowest_of_those_below_self() -> None:
    # s_ii = 0.6; L = {2: 0.5, 3: 0.1, 4: 0.3}; F = 2 drops 3 and 4; 1 (0.9) and 2 stay.
    retained, dropped = sac_filter({1: 0.9, 2: 0.5, 3: 0.1, 4: 0.3}, 0.6, F=2)
    assert dropped == [3, 4]
    assert retained == [1, 2]


def test_filter_drops_all_of_l_when_it_is_small() -> None:
    # |L| = 1 <= F = 3: bottom_F(L) is L itself.
    assert sac_filter({1: 0.9, 2: 0.2}, 0.8, F=3) == ([1], [2])


def test_ties_with_self_are_never_filtered() -> None:
    # L uses a strict "<": an equal score is not below the self-score.
    assert sac_filter({1: 0.8, 2: 0.8}, 0.8, F=3) == ([1, 2], [])


def test_equal_scores_break_by_lower_index() -> None:
    assert sac_filter({5: 0.1, 3: 0.1, 4: 0.1}, 0.5, F=2) == ([5], [3, 4])


def test_f_zero_keeps_everyone() -> None:
    assert sac_filter({1: 0.0, 2: 0.1}, 1.0, F=0) == ([1, 2], [])


@given(
    st.dictionaries(st.integers(0, 20), st.floats(0, 1), max_size=12),
    st.floats(0, 1),
    st.integers(0, 6),
)
def test_filter_properties(scores: dict[int, float], self_score: float, F: int) -> None:
    retained, dropped = sac_filter(scores, self_score, F)
    lower = [j for j in scores if scores[j] < self_score]
    assert sorted(retained + dropped) == sorted(scores)
    assert len(dropped) == min(F, len(lower))
    assert all(scores[j] < self_score for j in dropped)
    # Everything dropped scores no higher than anything kept from L (bottom-F property).
    kept_lower = [j for j in retained if j in lower]
    if dropped and kept_lower:
        assert max(scores[j] for j in dropped) <= min(scores[j] for j in kept_lower)


class TableAgent(ConsensusAgent):
    """Deterministic agent: scores from a table keyed by answer; refine takes the top score."""

    def __init__(self, name: str, first: str, table: dict[str, float]) -> None:
        self.name, self.group, self.first, self.table = name, "strong", first, table
        self.refine_inputs: list[tuple[int, str, list[tuple[str, float | None]]]] = []
        self.refine_f: list[int] = []

    async def answer(self, task: Task, ctx: CallContext) -> Response:
        return Response.of(self.first)

    async def score(
        self, task: Task, own: Response | None, peer: Response, ctx: CallContext
    ) -> float:
        return self.table.get(peer.answer or "", 0.5)

    async def refine(
        self,
        task: Task,
        own: Response,
        retained: Sequence[ScoredResponse],
        f: int,
        ctx: CallContext,
    ) -> Response:
        seen = [(r.answer or "", s) for r, s in retained]
        self.refine_inputs.append((ctx.round, own.answer or "", seen))
        self.refine_f.append(f)
        best = max(retained, key=lambda p: p[1] or 0.0)
        own_score = self.table.get(own.answer or "", 0.5)
        return best[0] if (best[1] or 0.0) > own_score else own

    async def confidence(self, task: Task, response: Response, ctx: CallContext) -> float:
        return 0.5


async def test_hand_traced_run_on_a_path() -> None:
    """Path 0 - 1 - 2 with F = 1, T = 2.

    Round 0: r = (A, B, C). Agent 1 scores A 0.9, B 0.4 (self), C 0.1: L_1 = {2} (C < 0.4),
    drop it; R_1 = {0}; refine picks A (0.9 > 0.4). Agent 0 scores B 0.2 < A 0.8 (self):
    L_0 = {1}, dropped; R_0 = {} -> refinement skipped. Agent 2 scores B 0.7 > C 0.3 (self):
    L_2 = {}, R_2 = {1}; refine picks B.
    Round 1: r = (A, A, B). Agent 1: self A 0.9, peers A 0.9, B 0.4 -> L = {2}, R = {0}.
    Agent 0: self A 0.8, peer A 0.8 (a tie is not "below") -> R = {1}. Agent 2: self B 0.7,
    peer A 0.95 -> R = {1}, refine picks A. Final: (A, A, A).
    """
    task = Task(id="t", question="?", answer="A", kind="choice", choices=("A", "B", "C"))
    a0 = TableAgent("a0", "A", {"A": 0.8, "B": 0.2})
    a1 = TableAgent("a1", "B", {"A": 0.9, "B": 0.4, "C": 0.1})
    a2 = TableAgent("a2", "C", {"A": 0.95, "B": 0.7, "C": 0.3})
    network = Network(nx.path_graph(3), [a0, a1, a2])
    trace = await run_question(SAC(F=1), network, task, T=2)

    r0, r1, r2 = trace.rounds
    assert [row.answer for row in r0] == ["A", "B", "C"]
    assert (r0[1].self_score, r0[1].scores, r0[1].retained, r0[1].filtered) == (
        0.4,
        {0: 0.9, 2: 0.1},
        [0],
        [2],
    )
    assert (r0[0].retained, r0[0].filtered) == ([], [1])
    assert (r0[2].retained, r0[2].filtered) == ([1], [])
    assert [row.answer for row in r1] == ["A", "A", "B"]
    assert (r1[2].self_score, r1[2].scores, r1[2].retained) == (0.7, {1: 0.95}, [1])
    assert [row.answer for row in r2] == ["A", "A", "A"]
    assert [row.correct for row in r2] == [True, True, True]
    # Agent 0 skipped refinement in round 0 (R empty) and refined on the tie in round 1.
    assert a0.refine_inputs == [(1, "A", [("A", 0.8)])]
    assert a1.refine_inputs[0] == (0, "B", [("A", 0.9)])


async def test_retained_are_sorted_by_descending_score() -> None:
    task = Task(id="t", question="?", answer="A", kind="choice", choices=("A", "B", "C", "D"))
    hub = TableAgent("hub", "D", {"A": 0.3, "B": 0.9, "C": 0.6, "D": 0.0})
    leaves = [TableAgent(f"l{k}", x, {}) for k, x in enumerate("ABC")]
    await run_question(SAC(F=0), Network(nx.star_graph(3), [hub, *leaves]), task, T=1)
    assert [s for _, s in hub.refine_inputs[0][2]] == [0.9, 0.6, 0.3]


@pytest.mark.parametrize(
    ("F", "retained", "filtered", "seen"),
    [
        # F = 0: nothing is dropped even though every peer scores below the hub's own 1.0.
        (0, [1, 2, 3], [], [("B", 0.9), ("A", 0.3), ("C", 0.3)]),
        # F = 2: L = {1, 2, 3}; bottom_2 drops the two 0.3s (leaves 1 and 3).
        (2, [2], [1, 3], [("B", 0.9)]),
    ],
)
async def test_hub_filters_up_to_f_and_refines_with_f(
    F: int, retained: list[int], filtered: list[int], seen: list[tuple[str, float]]
) -> None:
    # Algorithm 1 of the SAC paper, lines 5-7: R_i keeps N_i minus at most F of L_i, and the
    # refinement (Eq. (5)) receives R_i by descending score (equal scores: lower index first)
    # together with the bound F itself, which the refine prompt states.
    task = Task(id="t", question="?", answer="A", kind="choice", choices=("A", "B", "C", "D"))
    hub = TableAgent("hub", "D", {"A": 0.3, "B": 0.9, "C": 0.3, "D": 1.0})
    leaves = [TableAgent(f"l{k}", x, {}) for k, x in enumerate("ABC")]
    trace = await run_question(SAC(F=F), Network(nx.star_graph(3), [hub, *leaves]), task, T=1)
    assert (trace.rounds[0][0].retained, trace.rounds[0][0].filtered) == (retained, filtered)
    assert hub.refine_inputs == [(0, "D", seen)]
    assert hub.refine_f == [F]


def test_negative_f_is_rejected() -> None:
    with pytest.raises(ValueError):
        SAC(F=-1)
