"""The replay adversary's grouped pool tries the questions the plain-list definition names,
in the same order, and a run builds it once. A question asked twice in a data set (under two
ids) is never replayed for the other: it is the same question."""

from __future__ import annotations

import json
import random
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from byzllm.agents._seeding import choice, stream
from byzllm.agents.consensus import (
    WEAK_PROFILE,
    CallContext,
    ReplayPool,
    Response,
    SimulatedAgent,
    make_adversary,
)
from byzllm.agents.consensus._byzantine import MAX_REPLAY_TRIES, ReplayAttack
from byzllm.experiments.consensus.config import DatasetConfig
from byzllm.experiments.consensus.setup import ood_pool, replay_pool
from byzllm.tasks import Task, TaskLines, gsm8k_lines, load_commonsense, load_gsm8k
from byzllm.tasks._lines import LineIndex

from .test_truth_blind import Constant


def _spec_order(pool: list[Task], task: Task, seed: int, name: str) -> list[str]:
    """ReplayAttack's documented order, from a plain list (its definition before the pool):
    same answer format, other id; the question's data set first; per tier one seeded pick,
    then the rest in a seeded shuffle, less the question's duplicates (its text under
    another id) where they fall; at most MAX_REPLAY_TRIES."""

    def fam(t: Task) -> tuple[str, str]:
        return (t.source, str(t.meta.get("dataset") or ""))

    same = [t for t in pool if (t.kind, t.choices) == (task.kind, task.choices) and t.id != task.id]
    tiers = ([t for t in same if fam(t) == fam(task)], [t for t in same if fam(t) != fam(task)])
    out: list[Task] = []
    for level, tier in enumerate(tiers):
        if not tier:
            continue
        first = choice(tier, seed, name, task.id, "ood", *([level] if level else []))
        rest = [t for t in tier if t is not first]
        stream(seed, name, task.id, "ood-order", level).shuffle(rest)
        out += [t for t in [first, *rest] if t.question != task.question]
        if len(out) >= MAX_REPLAY_TRIES:
            break
    return [t.question for t in out[:MAX_REPLAY_TRIES]]


def _task(i: int, kind: str, source: str, dataset: str | None, labels: int) -> Task:
    choices = tuple(f"option{k}" for k in range(1, labels + 1)) if kind == "choice" else ()
    return Task(
        id=f"q{i % 40}",  # ids repeat: a question's namesakes are left out too
        question=f"question {i}",
        answer=choices[0] if choices else ("true" if kind == "boolean" else "1"),
        kind=kind,  # type: ignore[arg-type]
        choices=choices,
        source=source,
        meta={} if dataset is None else {"dataset": dataset},
    )


_TASKS = st.builds(
    _task,
    st.integers(0, 10_000),
    st.sampled_from(["number", "boolean", "choice"]),
    st.sampled_from(["gsm8k", "commonsense"]),
    st.sampled_from([None, "boolq", "piqa"]),
    st.integers(2, 3),
)


def _adversary(pool: Sequence[Task], seed: int, name: str) -> ReplayAttack:
    source = SimulatedAgent("weak-src", WEAK_PROFILE, seed=seed)
    adversary = make_adversary("replay", name, seed=seed, ood_tasks=pool, replay_source=source)
    assert isinstance(adversary, ReplayAttack)
    return adversary


@settings(max_examples=60, deadline=None)
@given(
    pool=st.lists(_TASKS, min_size=1, max_size=60),
    repeats=st.integers(0, 5),
    duplicates=st.integers(0, 5),
    queries=st.lists(_TASKS, min_size=1, max_size=6),
    seed=st.integers(0, 3),
)
def test_the_order_is_the_plain_list_definition(
    pool: list[Task], repeats: int, duplicates: int, queries: list[Task], seed: int
) -> None:
    pool = pool + pool[:repeats]  # the same question object twice, as a caller may pass
    # The same question under another id, as a data set may hold it.
    pool += [t.model_copy(update={"id": f"{t.id}-again"}) for t in pool[:duplicates]]
    adversary = _adversary(pool, seed, "byzantine-0")
    for task in [*queries, *pool[:3]]:
        expected = _spec_order(pool, task, seed, "byzantine-0")
        assert [t.question for t in adversary.ood_candidates(task)] == expected
        # Asked again (another unit of the run): the remembered order, unchanged.
        assert [t.question for t in adversary.ood_candidates(task)] == expected


def test_a_large_pool_gives_the_plain_list_order() -> None:
    rng = random.Random(4)
    pool = [
        _task(i, rng.choice(["number", "boolean"]), rng.choice(["a", "b"]), None, 2)
        for i in range(5000)
    ]
    adversary = _adversary(ReplayPool(pool), 1, "byzantine-1")
    for task in pool[::500]:
        assert [t.question for t in adversary.ood_candidates(task)] == _spec_order(
            pool, task, 1, "byzantine-1"
        )


def test_adversaries_sharing_a_pool_share_its_orders() -> None:
    pool = ReplayPool([_task(i, "number", "gsm8k", None, 2) for i in range(200)])
    task = _task(999, "number", "gsm8k", None, 2)
    first = _adversary(pool, 0, "byzantine-0").ood_candidates(task)
    again = _adversary(pool, 0, "byzantine-0").ood_candidates(task)
    other = _adversary(pool, 1, "byzantine-0").ood_candidates(task)
    assert first == again and all(a is b for a, b in zip(first, again, strict=True))
    assert [t.id for t in other] != [t.id for t in first]  # another seed, another order


def test_a_run_groups_its_pool_once() -> None:
    config = DatasetConfig(name="synthetic", n=5)
    pool = replay_pool(config)
    assert replay_pool(DatasetConfig(name="synthetic", n=5)) is pool
    assert list(pool) == ood_pool(config)


class Unreadable(Constant):
    """A replay source whose answers to the questions in ``unreadable`` are not numbers."""

    def __init__(self, unreadable: set[str]) -> None:
        super().__init__("7")
        self.unreadable = unreadable

    async def answer(self, task: Task, ctx: CallContext | None = None) -> Response:
        self.asked.append(task.question)
        return Response.of("no idea" if task.question in self.unreadable else "7")


async def test_a_first_try_without_a_readable_answer_moves_down_the_order() -> None:
    pool = [_task(i, "number", "gsm8k", None, 2) for i in range(300)]
    task = _task(1000, "number", "gsm8k", None, 2)
    order = _spec_order(pool, task, 0, "byzantine-0")
    source = Unreadable(set(order[:3]))
    adversary = make_adversary("replay", "byzantine-0", ood_tasks=pool, replay_source=source)
    assert isinstance(adversary, ReplayAttack)
    first = adversary.ood_task(task)
    assert first is not None and first.question == order[0]
    assert (await adversary.public(task, None, CallContext())).answer == "7"
    assert source.asked == order[:4]
    replayed = adversary.replayed_from[task.id]
    assert replayed == next(t.id for t in pool if t.question == order[3])


def _gsm8k_file(path: Path, lines: int) -> TaskLines:
    rows = (json.dumps({"question": f"Q{i}?", "answer": f"#### {i}"}) for i in range(lines))
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    lazy = gsm8k_lines(path)
    assert isinstance(lazy, TaskLines)
    return lazy


async def test_a_data_file_read_on_demand_gives_the_plain_list_order(tmp_path: Path) -> None:
    asked = (5, 700, 2999)
    lazy = _gsm8k_file(tmp_path / "g.jsonl", 3000)
    eager = load_gsm8k(tmp_path / "g.jsonl")
    evaluated = [eager[i] for i in asked]
    plain = [t for i, t in enumerate(eager) if i not in asked]
    pool_lines = lazy.excluding(asked)
    with patch.object(LineIndex, "read", autospec=True, side_effect=LineIndex.read) as read:
        pool = ReplayPool(pool_lines)
        assert len(pool) == len(plain) and not read.called
        for seed in range(3):
            adversary = _adversary(pool, seed, "byzantine-0")
            for task in [*evaluated, plain[10]]:
                first = adversary.ood_task(task)
                expected = _spec_order(plain, task, seed, "byzantine-0")
                assert first is not None and first.question == expected[0]
                assert [t.question for t in adversary.ood_candidates(task)] == expected
    # Only the questions tried were read: the file's other lines never were.
    assert len({c.args[1] for c in read.call_args_list}) <= 4 * 3 * MAX_REPLAY_TRIES < 2000
    # A first try without a readable answer moves down the same order.
    task = evaluated[1]
    order = _spec_order(plain, task, 0, "byzantine-0")
    source = Unreadable(set(order[:2]))
    adversary = make_adversary("replay", "byzantine-0", ood_tasks=pool, replay_source=source)
    assert isinstance(adversary, ReplayAttack)
    assert (await adversary.public(task, None, CallContext())).answer == "7"
    assert source.asked == order[:3]


def test_a_data_file_pool_serves_another_data_sets_question(tmp_path: Path) -> None:
    lazy = _gsm8k_file(tmp_path / "g.jsonl", 50)
    pool = ReplayPool(lazy)
    stranger = _task(7, "number", "other", None, 2)
    expected = _spec_order(list(lazy), stranger, 1, "byzantine-0")
    adversary = _adversary(pool, 1, "byzantine-0")
    assert [t.question for t in adversary.ood_candidates(stranger)] == expected
    # A question of the file itself is never its own replay.
    own = lazy[3]
    assert own.id not in {t.id for t in adversary.ood_candidates(own)}
    assert [t.question for t in adversary.ood_candidates(own)] == _spec_order(
        list(lazy), own, 1, "byzantine-0"
    )


def _commonsense_file(path: Path, questions: Sequence[str]) -> list[Task]:
    """A one-file Commonsense data set of ``questions`` (two options each), as loaded."""
    rows = [
        {
            "instruction": f"{q}\n\nOption1: yes Option2: no\n\nAnswer format: option1/option2",
            "input": "",
            "output": "the correct answer is option1",
            "answer": "option1",
        }
        for q in questions
    ]
    path.write_text(json.dumps(rows), encoding="utf-8")
    return load_commonsense(path)


def test_a_question_asked_twice_is_never_replayed_for_itself(tmp_path: Path) -> None:
    # Rows 0 and 2 are one question under two ids (social_iqa/0 and /2): the only other
    # question is row 1, so every seed must replay it, never the duplicate.
    tasks = _commonsense_file(tmp_path / "social_iqa.json", ["Is it?", "Was it?", "Is it?"])
    asked, twin, other = tasks[0], tasks[2], tasks[1]
    assert asked.id != twin.id and asked.question == twin.question
    pool = ReplayPool(tasks)
    for seed in range(20):  # the duplicate is the first seeded pick for about half of them
        adversary = _adversary(pool, seed, "byzantine-0")
        assert adversary.ood_task(asked) is other
        assert adversary.ood_candidates(asked) == [other]
        # Asked for the other question, both ids are other questions.
        assert {t.id for t in adversary.ood_candidates(other)} == {asked.id, twin.id}


async def test_a_question_whose_only_peer_is_itself_falls_back(tmp_path: Path) -> None:
    tasks = _commonsense_file(tmp_path / "social_iqa.json", ["Is it?", "Is it?"])
    source = Constant("option2")
    adversary = make_adversary("replay", "byzantine-0", ood_tasks=tasks, replay_source=source)
    assert isinstance(adversary, ReplayAttack)
    assert adversary.ood_task(tasks[0]) is None and adversary.ood_candidates(tasks[0]) == []
    # The documented fallback: the source's own answer to the question, recorded as None.
    assert (await adversary.public(tasks[0], None, CallContext())).answer == "option2"
    assert source.asked == [tasks[0].id] and adversary.replayed_from == {tasks[0].id: None}


def test_a_data_file_read_on_demand_skips_a_question_asked_twice(tmp_path: Path) -> None:
    path = tmp_path / "g.jsonl"
    rows = [{"question": f"Q{i % 2 if i < 4 else i}?", "answer": f"#### {i}"} for i in range(40)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    lazy, plain = gsm8k_lines(path), load_gsm8k(path)
    assert isinstance(lazy, TaskLines)
    pool = ReplayPool(lazy)
    for seed in range(10):
        adversary = _adversary(pool, seed, "byzantine-0")
        for task in plain[:4]:  # Q0? at 0 and 2, Q1? at 1 and 3
            expected = _spec_order(plain, task, seed, "byzantine-0")
            tried = adversary.ood_candidates(task)
            assert [t.question for t in tried] == expected
            assert task.question not in expected
            first = adversary.ood_task(task)
            assert first is not None and first.question == expected[0]


@pytest.mark.shared_data
def test_social_iqa_duplicates_are_never_replayed_for_each_other(shared_data: Path) -> None:
    # The Social-IQA test split holds questions twice under two ids; at seed 0 the first
    # pick for social_i_qa/1603 was its duplicate social_i_qa/1257.
    tasks = load_commonsense(shared_data / "commonsense" / "social_i_qa.json")
    by_text: defaultdict[tuple[str, tuple[str, ...]], list[Task]] = defaultdict(list)
    for task in tasks:
        by_text[(task.question, task.choices)].append(task)
    asked_twice = [t for group in by_text.values() if len(group) > 1 for t in group]
    assert len(asked_twice) >= 2
    pool = ReplayPool(tasks)
    for seed in range(8):
        adversary = _adversary(pool, seed, "byzantine-0")
        for task in asked_twice:
            first = adversary.ood_task(task)
            assert first is not None and first.question != task.question
            assert all(t.question != task.question for t in adversary.ood_candidates(task))
