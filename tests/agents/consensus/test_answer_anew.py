"""The simulator's ``refine_slip``: a refinement that answers anew, never with an offered answer."""

from __future__ import annotations

import asyncio

from byzllm.agents.consensus import CallContext, Response, SimulatedAgent, SimulatedProfile
from byzllm.agents.consensus._answers import answer_key, fresh_wrong_answers
from byzllm.tasks import Task, synthetic_tasks

TASKS = synthetic_tasks(40, seed=3, steps=2)


def _refine(profile: SimulatedProfile, task: Task, own: str, offered: list[str]) -> Response:
    agent = SimulatedAgent("a", profile, seed=1)
    retained = [(Response.of(answer), 0.9) for answer in offered]
    ctx = CallContext()
    return asyncio.run(agent.refine(task, Response.of(own), retained, 1, ctx))


def test_no_slip_by_default() -> None:
    assert SimulatedProfile().refine_slip == 0.0
    task = TASKS[0]
    wrong = fresh_wrong_answers(task)
    # Anchored on a right answer it believes (self_trust 1, anchoring 1): kept.
    kept = _refine(SimulatedProfile(strength=1.0, anchoring=1.0), task, task.answer, wrong[:2])
    assert kept.answer == task.answer


def test_a_slip_never_gives_an_offered_answer() -> None:
    profile = SimulatedProfile(strength=1.0, refine_slip=1.0, slip_accuracy=0.0)
    for task in TASKS:
        offered = fresh_wrong_answers(task)[:3]
        result = _refine(profile, task, task.answer, offered)
        keys = {answer_key(task, a) for a in [task.answer, *offered]}
        assert answer_key(task, result.answer) not in keys
        assert result.answer != task.answer  # slip_accuracy 0 and the truth was on offer


def test_slip_accuracy_one_gives_the_truth_when_no_one_offered_it() -> None:
    profile = SimulatedProfile(strength=0.0, refine_slip=1.0, slip_accuracy=1.0)
    for task in TASKS:
        own, *offered = fresh_wrong_answers(task)[:3]
        assert _refine(profile, task, own, offered).answer == task.answer


def test_nothing_retained_means_no_refinement_and_no_slip() -> None:
    profile = SimulatedProfile(refine_slip=1.0)
    agent = SimulatedAgent("a", profile, seed=1)
    task = TASKS[1]
    own = Response.of("12345")
    assert asyncio.run(agent.refine(task, own, [], 1, CallContext())) == own


def test_slip_rate_matches_the_parameter() -> None:
    profile = SimulatedProfile(strength=0.5, refine_slip=0.3, anchoring=1.0, susceptibility=0.0)
    slipped = 0
    total = 0
    for seed in range(10):
        agent = SimulatedAgent(f"a{seed}", profile, seed=seed)
        for task in TASKS:
            own = agent.solution(task)
            offered = [w for w in fresh_wrong_answers(task)[:2] if w != own]
            retained = [(Response.of(answer), 0.9) for answer in offered]
            result = asyncio.run(agent.refine(task, Response.of(own), retained, 1, CallContext()))
            total += 1
            slipped += result.answer not in {own, *offered}
    assert abs(slipped / total - 0.3) < 0.06


def test_fresh_wrong_answers_are_distinct_and_wrong() -> None:
    for task in TASKS:
        fresh = fresh_wrong_answers(task)
        assert len(fresh) == len(set(fresh)) >= 50
        assert task.answer not in fresh
