"""difficulty_correlation: a per-task difficulty shared by every agent (a Gaussian copula)."""

from __future__ import annotations

import math

import pytest

from byzllm.agents.consensus import STRONG_PROFILE, SimulatedAgent
from byzllm.experiments.consensus.fit import difficulty_correlation
from byzllm.tasks import synthetic_tasks

TASKS = synthetic_tasks(600, seed=3)


def _solved(rho: float, strength: float, agents: int = 4) -> list[list[bool]]:
    profile = STRONG_PROFILE.model_copy(
        update={"strength": strength, "difficulty_correlation": rho}
    )
    population = [SimulatedAgent(f"strong-{i}", profile, seed=7) for i in range(agents)]
    return [[a.solution(t) == t.answer for a in population] for t in TASKS]


def test_zero_correlation_is_the_independent_draw() -> None:
    independent = STRONG_PROFILE.model_copy(update={"strength": 0.6})
    zero = independent.model_copy(update={"difficulty_correlation": 0.0})
    for i in range(3):
        a = SimulatedAgent(f"strong-{i}", independent, seed=1)
        b = SimulatedAgent(f"strong-{i}", zero, seed=1)
        assert [a.solution(t) for t in TASKS[:200]] == [b.solution(t) for t in TASKS[:200]]


#: Φ2(Φ⁻¹(0.6), Φ⁻¹(0.6); ρ), the bivariate normal CDF (independent agents: 0.36).
BOTH_RIGHT = {0.3: 0.4058, 0.8: 0.5009}


@pytest.mark.parametrize("rho", [0.3, 0.8])
def test_the_marginal_stays_strength_and_agents_agree_more(rho: float) -> None:
    solved = _solved(rho, 0.6)
    flat = [x for row in solved for x in row]
    assert sum(flat) / len(flat) == pytest.approx(0.6, abs=0.05)
    pairs = [(row[i], row[j]) for row in solved for i in range(4) for j in range(i + 1, 4)]
    both = sum(a and b for a, b in pairs) / len(pairs)
    assert both == pytest.approx(BOTH_RIGHT[rho], abs=0.04)
    # Strength 0 and 1 stay exact, whatever ρ.
    assert not any(x for row in _solved(rho, 0.0, 2) for x in row)
    assert all(x for row in _solved(rho, 1.0, 2) for x in row)


def test_the_fit_solves_the_hand_computed_case() -> None:
    # Two agents at strength 0.5: P(both right) = 1/4 + arcsin(ρ) / (2π). Both right on 2 of 6
    # questions (1/3) gives arcsin(ρ) = π/6, ρ = 0.5.
    rows = [(True, True)] * 2 + [(False, False)] * 2 + [(True, False), (False, True)]
    questions = [[("strong", a), ("strong", b)] for a, b in rows]
    rho, pairs = difficulty_correlation(questions, {"strong": 0.5})  # type: ignore[misc]
    assert pairs == 6 and rho == pytest.approx(0.5, abs=1e-3)
    assert math.isclose(0.25 + math.asin(0.5) / (2 * math.pi), 1 / 3)
    # Fewer joint successes than independence: clipped at 0; no pairs or a degenerate group: None.
    apart = [[("strong", True), ("strong", False)], [("strong", False), ("strong", True)]]
    assert difficulty_correlation(apart, {"strong": 0.5}) == (0.0, 2)
    assert difficulty_correlation([[("strong", True)]], {"strong": 0.5}) is None
    assert difficulty_correlation(questions, {"strong": 1.0}) is None


def test_the_fit_recovers_the_generating_correlation() -> None:
    questions = [[("strong", x) for x in row] for row in _solved(0.4, 0.55)]
    fitted = difficulty_correlation(questions, {"strong": 0.55})
    assert fitted is not None and fitted[0] == pytest.approx(0.4, abs=0.1)
