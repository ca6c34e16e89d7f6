"""The replay adversary's out-of-distribution questions, indexed once (the SAC paper, App. B.4).

:class:`~byzllm.agents.consensus._byzantine.ReplayAttack` tries, for a question x, the other
questions of its pool with x's answer format, those of x's own data set first. Built from a
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

from byzllm.tasks import Task

__all__ = ["ReplayPool", "Tier", "answer_format", "family"]

#: Try orders remembered per pool (one per seed, adversary and question); past it, forgotten.
_MAX_ORDERS = 1 << 16

AnswerFormat = tuple[str, tuple[str, ...]]
Family = tuple[str, str]
OrderKey = tuple[object, ...]


def answer_format(task: Task) -> AnswerFormat:
    """What an answer to ``task`` looks like: its ``kind`` and its choice labels."""
    return (task.kind, tuple(task.choices))


def family(task: Task) -> Family:
    """The data set ``task`` comes from: its ``source`` and ``meta["dataset"]``."""
    dataset = task.meta.get("dataset") if isinstance(task.meta, dict) else None
    return (task.source, "" if dataset is None else str(dataset))


class Tier:
    """Questions tried at one level of preference, in pool order.

    ``distinct``: no question object appears twice, so removing one is a slice (the
    alternative, a scan comparing every object, is what a plain list needed).
    """

    __slots__ = ("distinct", "ids", "tasks")

    def __init__(self, tasks: Sequence[Task]) -> None:
        self.tasks = tuple(tasks)
        self.ids = frozenset(t.id for t in self.tasks)
        self.distinct = len({id(t) for t in self.tasks}) == len(self.tasks)

    def without_id(self, task_id: str) -> Tier:
        """This tier without the questions whose id is ``task_id`` (itself when none is)."""
        if task_id not in self.ids:
            return self
        return Tier([t for t in self.tasks if t.id != task_id])

    def without(self, index: int) -> list[Task]:
        """Every question but the one at ``index`` (and its other occurrences), in order."""
        if self.distinct:
            return [*self.tasks[:index], *self.tasks[index + 1 :]]
        first = self.tasks[index]
        return [t for t in self.tasks if t is not first]


_EMPTY = Tier(())


class ReplayPool(Sequence[Task]):
    """An immutable pool of out-of-distribution questions, grouped once for the replay attack.

    A sequence of its questions in the order given. :meth:`tiers` gives, for a question x, the
    pool's other questions of x's answer format from x's data set, then from the others;
    :meth:`order` remembers the try order an adversary computed for a question.
    """

    def __init__(self, tasks: Iterable[Task]) -> None:
        self._tasks = tuple(tasks)
        groups: dict[AnswerFormat, dict[Family, list[Task]]] = {}
        members: dict[AnswerFormat, list[Task]] = {}
        for task in self._tasks:
            fmt = answer_format(task)
            groups.setdefault(fmt, {}).setdefault(family(task), []).append(task)
            members.setdefault(fmt, []).append(task)
        self._members = members
        self._own: dict[tuple[AnswerFormat, Family], Tier] = {
            (fmt, fam): Tier(tasks)
            for fmt, by_family in groups.items()
            for fam, tasks in by_family.items()
        }
        self._others: dict[tuple[AnswerFormat, Family], Tier] = {}
        self._orders: dict[OrderKey, tuple[Task, ...]] = {}

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
        those of its data set, then the others, each in pool order."""
        key = (answer_format(task), family(task))
        own = self._own.get(key, _EMPTY)
        others = self._others.get(key)
        if others is None:
            fam = key[1]
            others = Tier([t for t in self._members.get(key[0], ()) if family(t) != fam])
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
