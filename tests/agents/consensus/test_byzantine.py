"""Adversarial strategies: each does what its documentation says."""

from __future__ import annotations

import logging
import re
from typing import Any

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
from byzllm.agents.consensus._byzantine import (
    InjectionAttack,
    ReplayAttack,
    in_answer_format,
    wrong_options,
)
from byzllm.errors import InputError
from byzllm.tasks import Task, synthetic_tasks

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
    assert ood is not None and ood.id != task.id and ood in OOD
    assert first == later  # cached: same message every round
    assert adversary.replayed_from == {task.id: ood.id}
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


# --- answer format: every attack answers like an honest agent would --------------------------


def _boolean(i: int, answer: str, dataset: str = "boolq") -> Task:
    return Task(
        id=f"{dataset}/{i}",
        question=f"Please answer with true or false, question: is claim {i} true?",
        answer=answer,
        kind="boolean",
        choices=("true", "false"),
        source="commonsense170k",
        meta={"dataset": dataset, "index": i},
    )


def _choice(i: int, answer: str, labels: tuple[str, ...], dataset: str) -> Task:
    return Task(
        id=f"{dataset}/{i}",
        question=f"Please choose the correct answer to question {i}.",
        answer=answer,
        kind="choice",
        choices=labels,
        source="commonsense170k",
        meta={"dataset": dataset, "index": i},
    )


def _number(i: int, answer: str) -> Task:
    return Task(id=f"gsm8k/{i}", question=f"Problem {i}?", answer=answer, kind="number")


OPTIONS = ("option1", "option2")
ANSWERS = ("answer1", "answer2", "answer3", "answer4")
BOOLEAN = [_boolean(i, "true" if i % 3 else "false") for i in range(16)]
WINOGRANDE = [_choice(i, OPTIONS[i % 2], OPTIONS, "winogrande") for i in range(16)]
ARC = [_choice(i, ANSWERS[i % 4], ANSWERS, "ARC-Easy") for i in range(16)]
NUMBERS = [_number(i, str(7 * i + 3)) for i in range(8)] + [_number(8, "-3/4")]
BY_KIND = {"boolean": BOOLEAN, "winogrande": WINOGRANDE, "arc": ARC, "number": NUMBERS}
#: One mixed pool, synthetic arithmetic included: the attack must pick by answer format.
MIXED_POOL = [*OOD, *BOOLEAN, *WINOGRANDE, *ARC, *NUMBERS]


def _assert_format(task: Task, answer: str | None) -> None:
    assert answer is not None
    if task.kind == "boolean":
        assert answer in ("true", "false"), (task.id, answer)
    elif task.kind == "choice":
        assert answer in task.choices, (task.id, answer)
    else:
        assert re.fullmatch(r"-?\d+(\.\d+)?(/\d+)?", answer), (task.id, answer)
    assert in_answer_format(task, answer)


def _replay(seed: int = 0, pool: list[Task] | None = None, **profile: float) -> ReplayAttack:
    source = SimulatedAgent("weak-src", WEAK_PROFILE.model_copy(update=profile), seed=seed)
    adversary = make_adversary(
        "replay",
        "b0",
        seed=seed,
        ood_tasks=MIXED_POOL if pool is None else pool,
        replay_source=source,
    )
    assert isinstance(adversary, ReplayAttack)
    return adversary


@pytest.mark.parametrize("kind", sorted(BY_KIND))
@pytest.mark.parametrize("seed", [0, 1, 2])
async def test_replay_answers_in_the_datasets_format(kind: str, seed: int) -> None:
    adversary = _replay(seed)
    for task in BY_KIND[kind]:
        response = await adversary.public(task, None, CallContext())
        _assert_format(task, response.answer)
        source_id = adversary.replayed_from[task.id]
        assert source_id is not None and source_id != task.id
        ood = next(t for t in MIXED_POOL if t.id == source_id)
        # Another question of the same data set and answer format, answered by the source.
        assert (ood.kind, ood.choices, ood.meta.get("dataset")) == (
            task.kind,
            task.choices,
            task.meta.get("dataset"),
        )
        assert response.answer == adversary.source.solution(ood)  # type: ignore[attr-defined]


async def test_replay_on_boolq_never_sends_arithmetic() -> None:
    """The bug: a synthetic-arithmetic pool made the adversary answer '10' to true/false."""
    adversary = _replay(pool=[*OOD, *BOOLEAN])
    answers = {(await adversary.public(t, None, CallContext())).answer for t in BOOLEAN}
    assert answers <= {"true", "false"}


async def test_replay_sends_the_replayed_answer_even_when_it_is_right() -> None:
    """The adversary does not know the truth (the SAC paper, App. B.4): it does not skip a
    replayed answer that happens to be right for the question under attack."""
    # A source that always answers its question's ground truth: every question of the pool but
    # one is "true", so a "true" question mostly gets the (right) answer "true" replayed.
    pool = [_boolean(i, "true") for i in range(6)] + [_boolean(6, "false")]
    adversary = _replay(pool=pool, strength=1.0)
    sent = {}
    for task in pool[:6]:
        response = await adversary.public(task, None, CallContext())
        source_id = adversary.replayed_from[task.id]
        assert source_id == adversary.ood_task(task).id  # type: ignore[union-attr]
        assert response.answer == next(t.answer for t in pool if t.id == source_id)
        sent[task.id] = response.answer
    # The old adversary replayed "false" (boolq/6) to all six; this one sends right answers.
    assert "true" in sent.values()


async def test_replay_falls_back_to_the_sources_own_answer_when_no_question_fits(
    caplog: pytest.LogCaptureFixture,
) -> None:
    only = _boolean(0, "true")
    adversary = _replay(pool=[*OOD, only])  # the only true/false question is the current one
    assert adversary.ood_task(only) is None
    with caplog.at_level(logging.WARNING, logger="byzllm.agents.consensus"):
        response = await adversary.public(only, None, CallContext())
    # The weak source's own answer to the question (no truth read to pick a wrong one).
    assert response.answer == adversary.source.solution(only)  # type: ignore[attr-defined]
    assert adversary.replayed_from == {"boolq/0": None}
    assert adversary.describe()["replayed_from"] == {"boolq/0": None}
    assert adversary.describe()["knows_truth"] is False
    assert "no other question of this answer format" in caplog.text
    # Every try right for the question is no reason to fall back: the first one is replayed.
    same = [_boolean(i, "true") for i in range(4)]
    adversary = _replay(pool=same, strength=1.0)
    response = await adversary.public(same[0], None, CallContext())
    assert response.answer == "true" and adversary.replayed_from["boolq/0"] is not None


async def test_replay_prefers_the_questions_own_data_set() -> None:
    # ARC and OpenBookQA share answer1..4; an ARC question replays an ARC answer.
    obqa = [_choice(i, ANSWERS[i % 4], ANSWERS, "openbookqa") for i in range(20)]
    adversary = _replay(pool=[*obqa, *ARC])
    for task in ARC:
        await adversary.public(task, None, CallContext())
        assert str(adversary.replayed_from[task.id]).startswith("ARC-Easy/")
    # With no other ARC question, an OpenBookQA one (same labels) is used.
    adversary = _replay(pool=[*obqa, ARC[0]])
    response = await adversary.public(ARC[0], None, CallContext())
    assert str(adversary.replayed_from[ARC[0].id]).startswith("openbookqa/")
    _assert_format(ARC[0], response.answer)


async def test_replay_is_reproducible_and_order_independent() -> None:
    tasks = [*BOOLEAN, *WINOGRANDE, *ARC, *NUMBERS]

    async def run(order: list[Task], seed: int) -> tuple[dict[str, Response], dict[str, Any]]:
        adversary = _replay(seed)
        out = {t.id: await adversary.public(t, None, CallContext()) for t in order}
        return out, adversary.replayed_from

    first = await run(tasks, 3)
    assert await run(tasks, 3) == first
    assert await run(list(reversed(tasks)), 3) == first
    other = await run(tasks, 4)
    assert other[1] != first[1]  # the seed matters


@pytest.mark.parametrize("name", [a for a in ATTACKS if a != "replay"])
@pytest.mark.parametrize("kind", sorted(BY_KIND))
async def test_other_attacks_answer_in_the_task_format(name: str, kind: str) -> None:
    for seed in range(3):
        adversary = make_adversary(name, "b0", seed=seed, defect_round=0)
        for task in BY_KIND[kind]:
            view = _view(0, {0: task.answer})
            public = await adversary.public(task, view, CallContext())
            _assert_format(task, public.answer)
            assert not is_right(task, public.answer)
            for receiver in range(4):
                sent = await adversary.message(task, public, receiver, view, CallContext())
                _assert_format(task, sent.answer)
                assert not is_right(task, sent.answer)


def test_wrong_options_keep_the_answer_format() -> None:
    fraction = _number(0, "-3/4")
    # Computed numbers (-3/4 + 1, - 1, + 2, + 10, - 2, and its negation), never "-(-3/4)".
    assert wrong_options(fraction) == ["0.25", "-1.75", "1.25", "9.25", "-2.75", "0.75"]
    unlabelled = Task(id="c", question="?", answer="option1", kind="choice")
    assert wrong_options(unlabelled) == ["option2", "option3"]
    assert wrong_options(BOOLEAN[0]) == ["true"]
    assert wrong_options(ARC[1]) == ["answer1", "answer3", "answer4"]
    # Synthetic tasks keep their distractors, most plausible first.
    assert all(wrong_options(t) == t.meta["distractors"] for t in TASKS)
