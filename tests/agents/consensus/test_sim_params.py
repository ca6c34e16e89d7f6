"""The simulated profile's named parameters do what their meanings say (rates, masses)."""

from __future__ import annotations

import pytest

from byzllm.agents._params import ASSUMPTION, parameter_source
from byzllm.agents.consensus import (
    PROFILE_SOURCES,
    STRONG_PROFILE,
    WEAK_PROFILE,
    CallContext,
    Response,
    SimulatedAgent,
    SimulatedProfile,
    is_right,
)
from byzllm.tasks import synthetic_tasks

TASKS = synthetic_tasks(400, seed=23)


def test_every_parameter_has_a_meaning_and_a_source() -> None:
    for profile in (STRONG_PROFILE, WEAK_PROFILE):
        rows = profile.rows()
        assert {r.name for r in rows} == set(SimulatedProfile.model_fields) - {"name"}
        assert all(r.meaning and r.source for r in rows)
    assert parameter_source(SimulatedProfile, "false_accept") == ASSUMPTION
    assert "Table 1" in PROFILE_SOURCES["weak"]["strength"]
    assert "Table 1" in next(r.source for r in WEAK_PROFILE.rows() if r.name == "strength")


@pytest.mark.parametrize(("false_accept", "false_reject"), [(0.0, 0.0), (0.3, 0.2), (0.7, 0.9)])
async def test_judging_others_follows_the_error_rates(
    false_accept: float, false_reject: float
) -> None:
    profile = STRONG_PROFILE.model_copy(
        update={"false_accept": false_accept, "false_reject": false_reject, "strength": 0.0}
    )
    accepted_wrong = rejected_right = wrong_seen = right_seen = 0
    for k, task in enumerate(TASKS):
        agent = SimulatedAgent(f"a{k % 7}", profile, seed=k)
        own = agent.solution(task)
        right = Response.of(task.answer)
        rejected_right += not agent.judges_correct(task, right)
        right_seen += 1
        for wrong in task.meta["distractors"][:3]:
            if wrong == own:
                continue  # its own answer: self-trust, not a judge's error
            accepted_wrong += agent.judges_correct(task, Response.of(wrong))
            wrong_seen += 1
    assert accepted_wrong / wrong_seen == pytest.approx(false_accept, abs=0.05)
    assert rejected_right / right_seen == pytest.approx(false_reject, abs=0.06)


async def test_self_trust_is_the_probability_of_believing_ones_own_solution() -> None:
    profile = WEAK_PROFILE.model_copy(update={"self_trust": 0.4})
    believed = 0
    for k, task in enumerate(TASKS):
        agent = SimulatedAgent("w", profile, seed=k)
        believed += agent.judges_correct(task, Response.of(agent.solution(task)))
    assert believed / len(TASKS) == pytest.approx(0.4, abs=0.06)


async def test_confidence_mass_at_one_and_means_follow_correctness() -> None:
    profile = WEAK_PROFILE.model_copy(
        update={
            "confidence_at_one_right": 0.5,
            "confidence_at_one_wrong": 0.1,
            "confidence_right": 0.9,
            "confidence_wrong": 0.6,
            "calibration_noise": 0.02,
        }
    )
    agent = SimulatedAgent("w", profile, seed=1)
    by_rightness: dict[bool, list[float]] = {True: [], False: []}
    for r, task in enumerate(TASKS):
        for answer in (task.answer, task.meta["distractors"][0]):
            conf = await agent.confidence(task, Response.of(answer), CallContext(round=r % 3))
            by_rightness[is_right(task, answer)].append(conf)
    for right, at_one, mean in ((True, 0.5, 0.9), (False, 0.1, 0.6)):
        values = by_rightness[right]
        ones = [c for c in values if c == 1.0]
        rest = [c for c in values if c != 1.0]
        assert len(ones) / len(values) == pytest.approx(at_one, abs=0.06)
        assert sum(rest) / len(rest) == pytest.approx(mean, abs=0.02)
        assert max(rest) <= 0.99


async def test_equal_confidence_parameters_make_confidence_uninformative() -> None:
    profile = STRONG_PROFILE.model_copy(
        update={
            "confidence_at_one_right": 0.3,
            "confidence_at_one_wrong": 0.3,
            "confidence_right": 0.8,
            "confidence_wrong": 0.8,
        }
    )
    agent = SimulatedAgent("s", profile, seed=2)
    right = [await agent.confidence(t, Response.of(t.answer)) for t in TASKS]
    wrong = [await agent.confidence(t, Response.of(t.meta["distractors"][0])) for t in TASKS]
    assert sum(right) / len(right) == pytest.approx(sum(wrong) / len(wrong), abs=0.03)


async def test_scores_use_the_named_score_levels() -> None:
    profile = STRONG_PROFILE.model_copy(
        update={"score_accept": 0.7, "score_reject": 0.3, "calibration_noise": 0.0}
    )
    agent = SimulatedAgent("s", profile, seed=0)
    scores = {await agent.score(t, None, Response.of(t.answer)) for t in TASKS[:50]}
    assert scores <= {0.7, 0.3}
