"""CP-WBFT, majority vote, W-MSR and debate: rules by hand, and on the round engine."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import networkx as nx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from byzllm.agents.consensus import (
    STRONG_PROFILE,
    CallContext,
    ConsensusAgent,
    Response,
    ScoredResponse,
    SimulatedAgent,
    is_right,
    make_adversary,
)
from byzllm.protocols import (
    CPWBFT,
    WMSR,
    Debate,
    MajorityVote,
    Network,
    confidence_vote,
    make_protocol,
    plurality,
    run_question,
    wmsr_update,
)
from byzllm.protocols.wmsr import as_number, format_number
from byzllm.tasks import Task


def test_confidence_vote_by_mean() -> None:
    # Own (0) says "a" at 0.9; 1 says "a" at 0.7 -> mean 0.8; 2 says "b" at 1.0 -> "b" wins.
    winner, supporters = confidence_vote([(0, "a", 0.9), (1, "a", 0.7), (2, "b", 1.0)], own=0)
    assert (winner, supporters) == ("b", [2])


def test_confidence_vote_ties_keep_own_then_larger_group() -> None:
    assert confidence_vote([(0, "a", 1.0), (1, "b", 1.0)], own=0)[0] == "a"
    # Its own 1.0 ties the adversary's only when its whole group says 1.0: (1.0 + 0.8) / 2.
    assert confidence_vote([(0, "a", 1.0), (1, "a", 0.8), (2, "b", 1.0)], own=0)[0] == "b"
    # own ("c") not among the best: larger group wins the tie, then the smaller key.
    assert (
        confidence_vote([(0, "c", 0.1), (1, "b", 1.0), (2, "b", 1.0), (3, "a", 1.0)], own=0)[0]
        == "b"
    )
    assert confidence_vote([(0, "c", 0.1), (1, "b", 0.9), (2, "a", 0.9)], own=0)[0] == "a"
    assert confidence_vote([(0, None, 1.0)], own=0) == (None, [])


def test_confidence_vote_tie_keeps_own_answer_below_the_threshold() -> None:
    """Own "c" at 0.4 abstains (threshold 0.5), but neighbour 1's "c" at 0.9 ties "b" at 0.9:
    the agent's answer is among the best groups, so it keeps it (it moved to the smaller
    key "b")."""
    candidates = [(0, "c", 0.4), (1, "c", 0.9), (2, "b", 0.9)]
    assert confidence_vote(candidates, own=0, threshold=0.5) == ("c", [1])
    # Not tied: the better group still wins.
    assert confidence_vote([(0, "c", 0.4), (1, "c", 0.8), (2, "b", 0.9)], 0, 0.5) == ("b", [2])


def test_confidence_vote_threshold_and_float_ties() -> None:
    # "Below the threshold" does not vote: a confidence equal to it votes.
    assert confidence_vote([(0, "a", 0.5), (1, "b", 0.4)], own=1, threshold=0.5) == ("a", [0])
    # (0.1 + 0.2) / 2 is 0.15000000000000002 in floats: a tie with 0.15 that keeps own "a".
    assert confidence_vote([(0, "a", 0.15), (1, "b", 0.1), (2, "b", 0.2)], own=0)[0] == "a"


def test_cpwbft_threshold_defaults_to_the_sac_papers_rule() -> None:
    from byzllm.errors import InputError

    assert CPWBFT().confidence_threshold == 0.0
    assert CPWBFT(confidence_threshold=1.0).confidence_threshold == 1.0
    with pytest.raises(InputError):
        CPWBFT(confidence_threshold=1.01)


class _Confident(ConsensusAgent):
    """An honest agent reporting a fixed confidence in whatever it holds."""

    def __init__(self, name: str, confidence: float) -> None:
        self.name, self.group, self.conf = name, "strong", confidence

    async def answer(self, task: Task, ctx: CallContext | None = None) -> Response:
        raise NotImplementedError

    async def score(
        self, task: Task, own: Response | None, peer: Response, ctx: CallContext | None = None
    ) -> float:
        raise NotImplementedError

    async def refine(
        self,
        task: Task,
        own: Response,
        retained: Sequence[ScoredResponse],
        f: int,
        ctx: CallContext | None = None,
    ) -> Response:
        raise NotImplementedError

    async def confidence(
        self, task: Task, response: Response, ctx: CallContext | None = None
    ) -> float:
        return self.conf


async def _cpwbft_step(
    answers: list[str], confidences: list[float], threshold: float = 0.0
) -> tuple[dict[int, str | None], dict[int, dict[str, Any]]]:
    """One CP-WBFT step on a path 0 - 1 - 2 of agents with fixed confidences."""
    from byzllm.protocols import QuestionState

    agents = [_Confident(f"c{k}", c) for k, c in enumerate(confidences)]
    network = Network(nx.path_graph(len(answers)), agents)
    state = QuestionState(task=TASK, network=network)
    state.current = {i: Response.of(a) for i, a in enumerate(answers)}
    state.inbox = {i: {j: state.current[j] for j in network.neighbours[i]} for i in state.current}
    nxt = await CPWBFT(confidence_threshold=threshold).step(state)
    return {i: r.answer for i, r in nxt.items()}, state.info


async def test_cpwbft_step_by_hand() -> None:
    # Agent 1 ("10" at 0.9) hears "11" at 0.8 (agent 0) and "9" at 0.7 (agent 2): its own
    # response votes in {1} ∪ N_1 and wins (0.9); agents 0 and 2 each see their own answer
    # lose to "10" at 0.9 and adopt it. Agent 1's notes: the supporters of "10" besides itself.
    answers, info = await _cpwbft_step(["11", "10", "9"], [0.8, 0.9, 0.7])
    assert answers == {0: "10", 1: "10", 2: "10"}
    assert (info[1]["retained"], info[1]["filtered"]) == ([], [0, 2])
    assert (info[0]["retained"], info[0]["filtered"]) == ([1], [])
    # Threshold 0.95: no response votes, so every agent keeps its own answer.
    answers, _ = await _cpwbft_step(["11", "10", "9"], [0.8, 0.9, 0.7], threshold=0.95)
    assert answers == {0: "11", 1: "10", 2: "9"}


def test_plurality() -> None:
    assert plurality(["a", "b", "b", None], own="a") == "b"
    assert plurality(["a", "b"], own="b") == "b"
    assert plurality(["c", "a", "b"], own="z") == "a"
    assert plurality([None], own=None) is None


def test_wmsr_update_by_hand() -> None:
    # own 5, neighbours 1, 4, 6, 100 with F = 1: drop 100 (largest above) and 1 (smallest
    # below); average of 5, 4, 6 = 5.
    value, removed = wmsr_update(5.0, {1: 1.0, 2: 4.0, 3: 6.0, 4: 100.0}, F=1)
    assert value == pytest.approx(5.0) and removed == [1, 4]
    # Fewer than F values above: all of them go.
    value, removed = wmsr_update(0.0, {1: 3.0, 2: 0.0}, F=2)
    assert value == pytest.approx(0.0) and removed == [1]


def test_number_helpers() -> None:
    assert as_number(" 1,234 ") == 1234.0 and as_number("x") is None and as_number("inf") is None
    assert as_number(None) is None
    assert format_number(3.0) == "3" and format_number(2.5) == "2.5"
    # Six significant digits made a unanimous, correct decimal answer wrong after one round.
    for value in (1234.5678, 2500000.5, 0.1234567, 1 / 3):
        assert float(format_number(value)) == value


def test_format_number_writes_no_exponent() -> None:
    """W-MSR writes its averages in plain decimals (0.00001, not 1e-05), as the answers it
    averages are written."""
    assert format_number(1e-05) == "0.00001" and format_number(-2.5e-07) == "-0.00000025"
    for value in (1e-05, -2.5e-07, 1.5e-08, 0.1):
        assert "e" not in format_number(value) and float(format_number(value)) == value
    task = Task(id="m", question="q", answer="0.00001", kind="number")
    assert _wmsr_step(task, ["0", "0.00002"], F=0) == {0: "0.00001", 1: "0.00001"}
    task = Task(id="m", question="q", answer="2.5", kind="number")
    assert _wmsr_step(task, ["0", "0.0000005"], F=0) == {0: "0.00000025", 1: "0.00000025"}
    assert not is_right(task, format_number(2.5e-07))


def _population(task_seed: int = 0) -> list[SimulatedAgent]:
    return [SimulatedAgent(f"strong-{k}", STRONG_PROFILE, seed=task_seed) for k in range(3)]


TASK = Task(id="t1", question="q", answer="10", kind="number", meta={"distractors": ["11", "9"]})


async def test_cpwbft_adopts_the_falsely_confident_answer() -> None:
    agents = [*_population(), make_adversary("confident-wrong", "b0", seed=0)]
    trace = await run_question(CPWBFT(), Network(nx.complete_graph(4), agents), TASK, T=1)
    adversary_answer = trace.rounds[0][3].answer
    assert adversary_answer in ("11", "9")
    # Every honest agent's confidence is < 1.0 in this profile unless noise clips it; the
    # adversary's 1.0 wins wherever no honest group reached a mean of exactly 1.0.
    for row in trace.rounds[0][:3]:
        assert row.peer_confidences[3] == 1.0
        if row.confidence is not None and row.confidence < 1.0:
            assert trace.rounds[1][row.agent].answer == adversary_answer


async def test_majority_follows_the_neighbourhood() -> None:
    agents = _population()
    trace = await run_question(MajorityVote(), Network(nx.complete_graph(3), agents), TASK, T=2)
    final = {row.answer for row in trace.rounds[-1]}
    assert len(final) == 1  # complete graph: everyone adopts the same plurality


async def test_wmsr_runs_on_numbers() -> None:
    agents = [*_population(), make_adversary("confident-wrong", "b0")]
    trace = await run_question(WMSR(F=1), Network(nx.complete_graph(4), agents), TASK, T=3)
    for row in trace.rounds[-1][:3]:
        assert as_number(row.answer) is not None


async def test_wmsr_averages_fractions_and_latex_numbers() -> None:
    """Only plain floats took part: an agent answering ``1`` ignored neighbours answering
    ``\\frac{1}{2}``, ``1/2`` and ``−1`` (all numbers to the answer checker), and they kept
    their answers."""
    from byzllm.agents.consensus import Response
    from byzllm.protocols import QuestionState

    task = Task(id="m", question="q", answer="\\frac{3}{4}", kind="math")
    network = Network(nx.star_graph(3), [*_population(), SimulatedAgent("s3", STRONG_PROFILE)])
    state = QuestionState(task=task, network=network)
    state.current = {i: Response.of(a) for i, a in enumerate(["1", "\\frac{1}{2}", "1/2", "−1"])}
    state.inbox = {i: {j: state.current[j] for j in network.neighbours[i]} for i in range(4)}
    nxt = await WMSR(F=0).step(state)
    # Centre: (1 + 1/2 + 1/2 - 1) / 4; each leaf: (its value + 1) / 2.
    assert {i: r.answer for i, r in nxt.items()} == {0: "0.25", 1: "0.75", 2: "0.75", 3: "0"}
    assert state.info[0]["retained"] == [1, 2, 3]


def _wmsr_step(task: Task, answers: list[str], F: int) -> dict[int, str | None]:
    """One W-MSR step on a complete graph of agents answering ``answers``."""
    from byzllm.protocols import QuestionState

    agents = [SimulatedAgent(f"s{k}", STRONG_PROFILE) for k in range(len(answers))]
    network = Network(nx.complete_graph(len(answers)), agents)
    state = QuestionState(task=task, network=network)
    state.current = {i: Response.of(a) for i, a in enumerate(answers)}
    state.inbox = {i: {j: state.current[j] for j in network.neighbours[i]} for i in state.current}
    nxt = asyncio.run(WMSR(F=F).step(state))
    return {i: r.answer for i, r in nxt.items()}


def test_wmsr_agreeing_values_stay_put() -> None:
    """The mean of equal values is that value: a float sum moved three agents agreeing on a
    right 0.1 to a wrong 0.10000000000000002, and rewrote a right \\frac{1}{3} as a wrong
    0.3333333333333333."""
    assert wmsr_update(0.1, {1: 0.1, 2: 0.1}, F=1) == (0.1, [])
    # (0.1 + 0.2 + 0.3) / 3 = 0.2 exactly; a float sum gives 0.20000000000000004.
    assert wmsr_update(0.2, {1: 0.1, 2: 0.3}, F=0)[0] == 0.2
    for truth in ("0.1", "\\frac{1}{3}"):
        task = Task(id="m", question="q", answer=truth, kind="math")
        assert _wmsr_step(task, [truth] * 3, F=1) == {0: truth, 1: truth, 2: truth}


def test_answer_number_reads_what_the_answer_checker_reads() -> None:
    from byzllm.protocols.wmsr import answer_number

    task = Task(id="m", question="q", answer="\\frac{3}{4}", kind="math")
    assert answer_number(task, "\\frac{3}{4}") == 0.75 and answer_number(task, "−1") == -1.0
    assert answer_number(task, "2.5") == 2.5 and answer_number(task, "\\boxed{2}") == 2.0
    assert answer_number(task, "\\sqrt{2}") is None and answer_number(task, "x") is None
    assert answer_number(task, None) is None
    assert answer_number(CHOICE, "option2") is None


def test_answer_number_reads_no_number_where_the_checker_reads_none() -> None:
    """A plain float parse read ``1,2`` (two solutions to the checker) as 12 and ``-2,3`` as
    -23, so a unanimous, right ``1,2`` became a wrong ``12`` after one W-MSR round."""
    from byzllm.protocols.wmsr import answer_number

    task = Task(id="m", question="q", answer="1,2", kind="math")
    assert answer_number(task, "1,2") is None and answer_number(task, "-2,3") is None
    # The checker reads e-notation as its value, on a math task as on a number task.
    thousand = Task(id="k", question="q", answer="1000", kind="math")
    assert answer_number(task, "1e3") == 1000.0 and is_right(thousand, "1e3")
    assert answer_number(task, "1,000") == 1000.0  # thousands separators, as the checker reads
    assert _wmsr_step(task, ["1,2"] * 3, F=1) == {0: "1,2", 1: "1,2", 2: "1,2"}
    # On a number task "1,2" is a decimal comma or a list: no number to the checker, nor to
    # W-MSR (it read 1, the first number).
    number = Task(id="n", question="q", answer="1", kind="number")
    assert answer_number(number, "1,2") is None and not is_right(number, "1,2")
    assert answer_number(number, "-2,3") is None and answer_number(number, "1,000") == 1000.0
    assert _wmsr_step(number, ["1,2", "4", "1,2"], F=0) == {0: "1,2", 1: "4", 2: "1,2"}


def test_wmsr_reads_thirds_writes_near_integers_and_notes_its_removals() -> None:
    from byzllm.protocols import QuestionState
    from byzllm.protocols.wmsr import answer_number

    # The checker keeps 1/3 as a fraction (no finite decimal): W-MSR reads it as 1/3 too.
    task = Task(id="m", question="q", answer="1/3", kind="math")
    assert answer_number(task, "1/3") == 1 / 3 and answer_number(task, "-\\frac{1}{3}") == -1 / 3
    # A mean a rounding error short of an integer is that integer, on either side of zero.
    assert format_number(2.9999999999999996) == "3" and format_number(-2.9999999999999996) == "-3"
    # Centre 0 of a star holds 5, leaves 1, 6, 100 with F = 1: 100 (largest above) and 1
    # (smallest below) are removed, leaf 2 is retained; (5 + 6) / 2 = 5.5.
    agents = [SimulatedAgent(f"s{k}", STRONG_PROFILE) for k in range(4)]
    network = Network(nx.star_graph(3), agents)
    state = QuestionState(task=TASK, network=network)
    state.current = {i: Response.of(a) for i, a in enumerate(["5", "1", "6", "100"])}
    state.inbox = {i: {j: state.current[j] for j in network.neighbours[i]} for i in range(4)}
    nxt = asyncio.run(WMSR(F=1).step(state))
    assert nxt[0].answer == "5.5"
    assert (state.info[0]["retained"], state.info[0]["filtered"]) == ([2], [1, 3])


CHOICE = Task(id="c", question="q", answer="option2", kind="choice", choices=("option1", "option2"))


async def test_debate_refines_on_all_neighbours() -> None:
    agents = _population()
    trace = await run_question(Debate(F=1), Network(nx.complete_graph(3), agents), TASK, T=1)
    assert all(row.retained == sorted({0, 1, 2} - {row.agent}) for row in trace.rounds[0])


def test_unknown_protocol_is_an_input_error() -> None:
    from byzllm.errors import InputError

    with pytest.raises(InputError, match="unknown protocol"):
        make_protocol("raft")


@given(
    st.lists(
        st.floats(allow_nan=False, allow_infinity=False, min_value=-1e300, max_value=1e300),
        min_size=1,
        max_size=9,
    )
)
def test_wmsr_mean_is_the_exact_mean_rounded_once(values: list[float]) -> None:
    from fractions import Fraction

    from byzllm.protocols.wmsr import _exact_mean

    assert _exact_mean(values) == float(sum(map(Fraction, values)) / len(values))


async def test_cpwbft_never_refines_and_the_config_says_so() -> None:
    """CP-WBFT adopts the answer of the best-rated group by rule: no agent is asked to refine,
    so the prompt style ``refining`` does nothing there (its description said it applied to
    CP-WBFT)."""
    from byzllm.experiments.consensus.config import AgentBackend

    refined: list[str] = []

    class Counting(SimulatedAgent):
        async def refine(
            self,
            task: Task,
            own: Response,
            retained: Sequence[ScoredResponse],
            f: int,
            ctx: CallContext | None = None,
        ) -> Response:
            refined.append(self.name)
            return await super().refine(task, own, retained, f, ctx)

    agents: list[ConsensusAgent] = [Counting(f"s{k}", STRONG_PROFILE) for k in range(3)]
    agents.append(make_adversary("confident-wrong", "b0"))
    await run_question(CPWBFT(), Network(nx.complete_graph(4), agents), TASK, T=3)
    assert refined == []
    description = AgentBackend.model_fields["refining"].description or ""
    assert "SAC" in description and "CP-WBFT" not in description
