"""The replay adversary's out-of-distribution questions, indexed once (the SAC paper, App. B.4).

:class:`~byzllm.agents.consensus._byzantine.ReplayAttack` tries, for a question x, the other
questions of its pool with x's answer format, those of x's own data set first (never x, nor x
asked again under another id: :func:`same_question`). Built from a
plain list for every adversary, that meant grouping the whole pool and filtering it twice per
question: with a 100,000-question data file, a unit cost more in this bookkeeping than in its
consensus. A :class:`ReplayPool` groups its questions once (by answer format, then by data
set), answers "the candidates of x" from those groups, and remembers each question's try
order, which depends only on (seed, adversary name, question): every unit of a sweep that
asks the same question under another protocol or topology reuses it. The order is computed
exactly as before, so the replayed answers are the same; its first question is one seeded
draw, so the shuffle of the rest waits until a first answer is unreadable.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import overload

from byzllm.tasks import Task, TaskLines

__all__ = ["ReplayPool", "Tier", "answer_format", "family", "same_question"]

#: Try orders remembered per pool (one per seed, adversary and question); past it, forgotten.
_MAX_ORDERS = 1 << 16

AnswerFormat = tuple[str, tuple[str, ...]]
Family = tuple[str, str]
OrderKey = tuple[object, ...]


def answer_format(task: Task) -> AnswerFormat:
    """What an answer to ``task`` looks like: its ``kind`` and its choice labels."""
    return (task.kind, tuple(task.choices))


def same_question(task: Task, other: Task) -> bool:
    """Whether ``other`` asks what ``task`` asks: the same question text (``Task.question``, as
    the loader built it) in the same answer format (:func:`answer_format`: kind and choice
    labels; a choice's text is part of the question text). Ids and data sets aside: a data
    set may hold one question twice under two ids (Social-IQA's test split does), and an
    answer to either is an answer to the other, not to another question."""
    return task.question == other.question and answer_format(task) == answer_format(other)


def family(task: Task) -> Family:
    """The data set ``task`` comes from: its ``source`` and ``meta["dataset"]``."""
    dataset = task.meta.get("dataset") if isinstance(task.meta, dict) else None
    return (task.source, "" if dataset is None else str(dataset))


class Tier:
    """Questions tried at one level of preference, in pool order.

    ``distinct``: no question object appears twice, so removing one is a slice (the
    alternative, a scan comparing every object, is what a plain list needed). A tier over a
    :class:`~byzllm.tasks.TaskLines` (a data file read on demand) is never read whole: its
    questions are distinct lines, found by id without reading them.
    """

    __slots__ = ("distinct", "ids", "tasks")

    def __init__(self, tasks: Sequence[Task]) -> None:
        self.tasks: Sequence[Task]
        self.ids: frozenset[str] | None
        if isinstance(tasks, TaskLines):
            self.tasks, self.ids, self.distinct = tasks, None, True
            return
        self.tasks = tuple(tasks)
        self.ids = frozenset(t.id for t in self.tasks)
        self.distinct = len({id(t) for t in self.tasks}) == len(self.tasks)

    def without_id(self, task_id: str) -> Tier:
        """This tier without the questions whose id is ``task_id`` (itself when none is)."""
        if isinstance(self.tasks, TaskLines):
            position = self.tasks.position_of(task_id)
            return self if position is None else Tier(self.tasks.excluding([position]))
        if self.ids is None or task_id not in self.ids:
            return self
        return Tier([t for t in self.tasks if t.id != task_id])

    def rest(self, index: int) -> list[int]:
        """The indices of every question but the one at ``index`` (and its other occurrences),
        in order: shuffled like the questions themselves (a shuffle depends only on the
        length), they give the same order without reading the questions."""
        if self.distinct:
            return [*range(index), *range(index + 1, len(self.tasks))]
        first = self.tasks[index]
        return [i for i, t in enumerate(self.tasks) if t is not first]


_EMPTY = Tier(())


class ReplayPool(Sequence[Task]):
    """An immutable pool of out-of-distribution questions, grouped once for the replay attack.

    A sequence of its questions in the order given. :meth:`tiers` gives, for a question x, the
    pool's other questions of x's answer format from x's data set, then from the others;
    :meth:`order` remembers the try order an adversary computed for a question.
    """

    def __init__(self, tasks: Iterable[Task]) -> None:
        self._others: dict[tuple[AnswerFormat, Family], Tier] = {}
        self._orders: dict[OrderKey, tuple[Task, ...]] = {}
        if isinstance(tasks, TaskLines):
            # A data file read on demand has one answer format and data set: one tier,
            # grouped without reading a line.
            self._tasks: Sequence[Task] = tasks
            fmt: AnswerFormat = (tasks.kind, tuple(tasks.choices))
            fam = (tasks.source, "" if tasks.dataset is None else tasks.dataset)
            self._members: dict[AnswerFormat, Sequence[Task]] = {fmt: tasks}
            self._own = {(fmt, fam): Tier(tasks)}
            self._others[(fmt, fam)] = _EMPTY
            return
        self._tasks = tuple(tasks)
        groups: dict[AnswerFormat, dict[Family, list[Task]]] = {}
        members: dict[AnswerFormat, list[Task]] = {}
        for task in self._tasks:
            fmt = answer_format(task)
            groups.setdefault(fmt, {}).setdefault(family(task), []).append(task)
            members.setdefault(fmt, []).append(task)
        self._members = dict(members)
        self._own = {
            (fmt, fam): Tier(tasks)
            for fmt, by_family in groups.items()
            for fam, tasks in by_family.items()
        }

    def __len__(self) -> int:
        return len(self._tasks)

    @overload
    def __getitem__(self, index: int) -> Task: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Task]: ...

    def __getitem__(self, index: int | slice) -> Task | Sequence[Task]:
        return self._tasks[index]

    def tiers(self, task: Task) -> tuple[Tier, Tier]:
        """The pool's questions of ``task``'s answer format, other than ``task`` (by id):
        those of its data set, then the others, each in pool order. They may still hold a
        duplicate of ``task`` under another id (:func:`same_question`): finding one needs
        every question's text, which a data file read on demand does not read, so the reader
        of a tier skips them."""
        key = (answer_format(task), family(task))
        own = self._own.get(key, _EMPTY)
        others = self._others.get(key)
        if others is None:
            fam, members = key[1], self._members.get(key[0], ())
            if isinstance(members, TaskLines):  # another data set's question: all of them
                others = Tier(members)
            else:
                others = Tier([t for t in members if family(t) != fam])
            self._others[key] = others
        return own.without_id(task.id), others.without_id(task.id)

    def order(self, key: OrderKey, compute: Callable[[], list[Task]]) -> tuple[Task, ...]:
        """The try order stored under ``key``, computed by ``compute`` the first time."""
        found = self._orders.get(key)
        if found is None:
            if len(self._orders) >= _MAX_ORDERS:
                self._orders.clear()
            found = self._orders[key] = tuple(compute())
        return found
