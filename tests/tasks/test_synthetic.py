"""The synthetic arithmetic word problems."""

from __future__ import annotations

import re
from fractions import Fraction

import pytest

from byzllm.errors import InputError
from byzllm.tasks import extract_answer, is_correct, synthetic_tasks
from byzllm.tasks._synthetic import MAX_TASKS, MAX_VALUE


def replay(task_meta: dict[str, object]) -> Fraction:
    """Recompute the answer from the recorded start value and operations, independently."""
    value = Fraction(int(task_meta["start"]))  # type: ignore[call-overload]
    for op, x in task_meta["operations"]:  # type: ignore[attr-defined]
        value = {
            "add": value + x,
            "subtract": value - x,
            "multiply": value * x,
            "divide": value / x,
        }[op]
        assert value.denominator == 1 and 1 <= value <= MAX_VALUE
    return value


def test_deterministic_and_prefix_stable() -> None:
    assert synthetic_tasks(20, seed=3) == synthetic_tasks(20, seed=3)
    assert synthetic_tasks(30, seed=3)[:20] == synthetic_tasks(20, seed=3)
    assert synthetic_tasks(10, seed=3) != synthetic_tasks(10, seed=4)


@pytest.mark.parametrize("steps", [1, 3, (2, 5), 8])
def test_answers_and_distractors(steps: int | tuple[int, int]) -> None:
    tasks = synthetic_tasks(60, seed=11, steps=steps)
    assert len({t.id for t in tasks}) == 60
    for task in tasks:
        assert task.kind == "number" and task.source == "synthetic"
        assert replay(task.meta) == int(task.answer)
        count = task.meta["steps"]
        low, high = (steps, steps) if isinstance(steps, int) else steps
        assert low <= count <= high
        assert len(task.meta["operations"]) == count
        # one sentence per step plus the opening and the question
        assert len(re.findall(r"[.?]( |$)", task.question)) == count + 2
        distractors = task.meta["distractors"]
        assert len(distractors) >= 3
        assert len(set(distractors)) == len(distractors)
        assert task.answer not in distractors
        assert all(int(d) >= 0 for d in distractors)
        assert len(task.meta["distractor_kinds"]) == len(distractors)
        assert all(not is_correct(task, d) for d in distractors)
        assert is_correct(task, extract_answer(task, f"Answer: {task.answer}"))


def test_hand_computed_distractors() -> None:
    from byzllm.tasks._synthetic import _distractors

    # 10 → +5 = 15 → ×3 = 45 → −6 = 39
    got = _distractors(10, [("add", 5), ("multiply", 3), ("subtract", 6)])
    assert got[0] == ("stopped_early", 45)
    assert ("wrong_operation", 51) in got  # last step added instead of subtracted
    assert ("wrong_operation", 12) in got  # ×3 done as +3: 15 + 3 − 6
    assert ("skipped_step", 24) in got  # 10 ×3 − 6 (the +5 skipped)
    assert all(value != 39 for _, value in got)


def test_question_wording_matches_the_operations() -> None:
    (task,) = synthetic_tasks(1, seed=0, steps=4)
    for _, x in task.meta["operations"]:
        assert str(x) in task.question
    assert str(task.meta["start"]) in task.question
    assert task.question.endswith("at the end?")


@pytest.mark.parametrize(("n", "steps"), [(-1, 3), (MAX_TASKS + 1, 3), (3, 0), (3, 9), (3, (4, 2))])
def test_bad_arguments(n: int, steps: int | tuple[int, int]) -> None:
    with pytest.raises(InputError):
        synthetic_tasks(n, seed=0, steps=steps)


def test_a_huge_n_is_refused_naming_the_limit_before_any_task_is_built() -> None:
    # Every task is built before the first is returned: 10**8 ran for hours, silently.
    with pytest.raises(InputError, match=r"^n must be 0-100,000 synthetic tasks, got 100,000,000$"):
        synthetic_tasks(10**8)
