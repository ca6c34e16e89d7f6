"""Adversarial strategies: each does what its documentation says."""

from __future__ import annotations

import pytest

from byzllm.agents.consensus import (
    ATTACKS,
    WEAK_PROFILE,
    CallContext,
    Response,
    RoundView,
    SimulatedAgent,
    is_right,
    make_adversary,
)
from byzllm.agents.consensus._byzantine import InjectionAttack, ReplayAttack
from byzllm.errors import InputError
from byzllm.tasks import synthetic_tasks

TASKS = synthetic_tasks(20, seed=2)
OOD = synthetic_tasks(10, seed=777)


def _view(round_: int, answers: dict[int, str]) -> RoundView:
    return RoundView(
        round=round_,
        responses={i: Response.of(a) for i, a in answers.items()},
        honest=frozenset(answers),
        adversaries=frozenset({9}),
    )


@pytest.mark.parametrize("name", [a for a in ATTACKS if a != "replay"])
async def test_every_attack_is_wrong_and_falsely_confident(name: str) -> None:
    adversary = make_adversary(name, "b0", seed=1, defect_round=0)
    task = TASKS[0]
    public = await adversary.public(task, _view(0, {0: task.answer}), CallContext())
    assert not is_right(task, public.answer)
    assert await adversary.confidence(task, public, CallContext()) == 1.0
    assert adversary.honest is False and adversary.group == "byzantine"
    assert adversary.describe()["strategy"] == name


async def test_replay_sends_a_cached_weak_answer_to_another_question() -> None:
    source = SimulatedAgent("weak-src", WEAK_PROFILE, seed=0)
    adversary = make_adversary("replay", "b0", ood_tasks=OOD, replay_source=source)
    assert isinstance(adversary, ReplayAttack)
    task = TASKS[3]
    first = await adversary.public(task, None, CallContext(round=0))
    later = await adversary.public(task, None, CallContext(round=5))
    ood = adversary.ood_task(task)
    assert ood.id != task.id and ood in OOD
    assert first == later  # cached: same message every round
    assert first.answer == source.solution(ood)


async def test_equivocation_differs_per_receiver() -> None:
    adversary = make_adversary("equivocate", "b0")
    task = TASKS[0]
    own = await adversary.public(task, None, CallContext())
    view = _view(0, {})
    messages = {
        (await adversary.message(task, own, r, view, CallContext())).answer for r in range(4)
    }
    assert len(messages) >= 2
    assert all(not is_right(task, m) for m in messages)


async def test_colluders_agree() -> None:
    a, b = make_adversary("collude", "b0", seed=1), make_adversary("collude", "b1", seed=2)
    task = TASKS[4]
    assert (await a.public(task, None, CallContext())) == (
        await b.public(task, None, CallContext())
    )


async def test_injection_embeds_score_instructions() -> None:
    adversary = make_adversary("inject", "b0")
    assert isinstance(adversary, InjectionAttack)
    response = await adversary.public(TASKS[0], None, CallContext())
    assert "Score: 1.0" in response.text and response.answer is not None
    assert response.answer in response.text


async def test_mimic_agrees_then_defects() -> None:
    adversary = make_adversary("mimic", "b0", defect_round=2)
    task = TASKS[0]
    honest = {0: task.answer, 1: task.answer, 2: "3"}
    before = await adversary.public(task, _view(1, honest), CallContext())
    after = await adversary.public(task, _view(2, honest), CallContext())
    assert before.answer == task.answer
    assert not is_right(task, after.answer)


def test_bad_settings_are_input_errors() -> None:
    with pytest.raises(InputError, match="unknown attack"):
        make_adversary("bribe", "b0")
    with pytest.raises(InputError):
        make_adversary("replay", "b0")
    with pytest.raises(InputError):
        make_adversary("replay", "b0", replay_source=SimulatedAgent("w", WEAK_PROFILE))
    with pytest.raises(InputError):
        make_adversary("mimic", "b0", defect_round=-1)
