"""Synthetic multi-step arithmetic word problems with known answers and plausible mistakes.

The project generates these itself (no data set needed): the demo and the simulated agents run
on them. Each problem starts from a quantity and applies ``steps`` operations (add, subtract,
multiply, divide exactly), told as a short story; the answer is the final integer. Every task
lists, in ``meta["distractors"]`` (most plausible first), wrong answers a solver makes by
common slips, with the slip's name in ``meta["distractor_kinds"]``:

* ``stopped_early`` — the value before the last step;
* ``wrong_operation`` — one step done with the wrong operation (add ↔ subtract,
  multiply → add, divide → subtract), the rest done right;
* ``skipped_step`` — one step left out;
* ``repeated_step`` — the last step applied twice;
* ``arithmetic_slip`` — the answer off by one or by ten (fills up to three distractors).

Generation is deterministic: task ``i`` of seed ``s`` depends only on ``(s, i)``, so
``synthetic_tasks(40, s)[:30] == synthetic_tasks(30, s)``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from byzllm.errors import InputError

from ._types import Task

__all__ = ["MAX_TASKS", "MAX_VALUE", "synthetic_tasks"]

#: Every intermediate value stays in 1..MAX_VALUE.
MAX_VALUE = 5_000

#: The most tasks one call makes: far above any run's needs (the SAC paper asks 30 questions
#: per configuration, §5.2), and about 20 s of work. Every task is built before the first is
#: used, so ``n = 100000000`` took hours and all the memory without a word.
MAX_TASKS = 100_000

Operation = Literal["add", "subtract", "multiply", "divide"]


@dataclass(frozen=True)
class _Theme:
    items: str
    start: str  # "{name} has {n} {items}."
    add: tuple[str, ...]
    subtract: tuple[str, ...]


_THEMES = (
    _Theme(
        "cookies",
        "{name} has {n} cookies in the bakery.",
        ("{name} bakes {x} more cookies.", "A neighbour brings {x} cookies."),
        ("{name} sells {x} cookies.", "{name} gives {x} cookies to the school fair."),
    ),
    _Theme(
        "apples",
        "{name} picks {n} apples in the orchard.",
        ("{name} picks {x} more apples.", "A friend adds {x} apples to the basket."),
        (
            "{name} uses {x} apples for pies.",
            "{x} apples turn out to be rotten and are thrown away.",
        ),
    ),
    _Theme(
        "books",
        "The library run by {name} owns {n} books.",
        ("The library buys {x} new books.", "A donor gives the library {x} books."),
        ("{name} removes {x} damaged books.", "{x} books are lost and written off."),
    ),
    _Theme(
        "marbles",
        "{name} has a collection of {n} marbles.",
        ("{name} wins {x} marbles in a game.", "{name} finds {x} marbles under the sofa."),
        ("{name} loses {x} marbles in a game.", "{name} trades away {x} marbles."),
    ),
    _Theme(
        "stamps",
        "{name} owns {n} stamps.",
        ("{name} buys {x} more stamps.", "{name} receives {x} stamps as a gift."),
        ("{name} sells {x} stamps.", "{name} gives {x} stamps to a cousin."),
    ),
)

_NAMES = ("Ada", "Bilal", "Chen", "Dana", "Emeka", "Farah", "Goran", "Hana", "Ines", "Jonas")

_MULTIPLY = (
    "Later the number of {items} grows to {x} times what it was.",
    "Then {name} ends up with {x} times as many {items} as before.",
)
_DIVIDE = (
    "{name} splits the {items} into {x} equal groups and keeps only one group.",
    "Then {name} gives away all but one of {x} equal shares of the {items}.",
)


def _apply(value: Fraction, op: Operation, x: int) -> Fraction:
    if op == "add":
        return value + x
    if op == "subtract":
        return value - x
    if op == "multiply":
        return value * x
    return value / x


def _run(start: int, steps: list[tuple[Operation, int]]) -> Fraction:
    value = Fraction(start)
    for op, x in steps:
        value = _apply(value, op, x)
    return value


def _choose_step(rng: random.Random, value: int) -> tuple[Operation, int]:
    options: list[tuple[Operation, int]] = []
    if value + 60 <= MAX_VALUE:
        options.append(("add", rng.randint(2, 60)))
    if value > 3:
        options.append(("subtract", rng.randint(1, min(value - 1, 60))))
    factors = [k for k in (2, 3, 4) if value * k <= MAX_VALUE]
    if factors:
        options.append(("multiply", rng.choice(factors)))
    divisors = [k for k in (2, 3, 4, 5) if value % k == 0 and value // k >= 2]
    if divisors:
        options.append(("divide", rng.choice(divisors)))
    return rng.choice(options)


_WRONG_OP: dict[Operation, Operation] = {
    "add": "subtract",
    "subtract": "add",
    "multiply": "add",
    "divide": "subtract",
}


def _distractors(start: int, steps: list[tuple[Operation, int]]) -> list[tuple[str, int]]:
    """Wrong answers from common slips, most plausible first (see the module docstring)."""
    candidates: list[tuple[str, Fraction]] = []
    n = len(steps)
    if n >= 2:
        candidates.append(("stopped_early", _run(start, steps[:-1])))
    for j in reversed(range(n)):
        op, x = steps[j]
        changed = [*steps[:j], (_WRONG_OP[op], x), *steps[j + 1 :]]
        candidates.append(("wrong_operation", _run(start, changed)))
    for j in reversed(range(n)):
        if n >= 2:
            candidates.append(("skipped_step", _run(start, steps[:j] + steps[j + 1 :])))
    candidates.append(("repeated_step", _run(start, [*steps, steps[-1]])))
    answer = _run(start, steps)
    out: list[tuple[str, int]] = []
    seen = {answer}
    for kind, value in candidates:
        if value.denominator == 1 and value >= 0 and value not in seen:
            seen.add(value)
            out.append((kind, int(value)))
    for delta in (1, -1, 10, -10, 2):
        if len(out) >= 3:
            break
        value = answer + delta
        if value >= 0 and value not in seen:
            seen.add(value)
            out.append(("arithmetic_slip", int(value)))
    return out[:6]


def _one_task(seed: int, index: int, steps: int | tuple[int, int]) -> Task:
    rng = random.Random(f"byzllm-synthetic:{seed}:{index}")
    count = steps if isinstance(steps, int) else rng.randint(steps[0], steps[1])
    theme = rng.choice(_THEMES)
    name = rng.choice(_NAMES)
    start = rng.randint(6, 120)
    value = start
    plan: list[tuple[Operation, int]] = []
    sentences = [theme.start.format(name=name, n=start)]
    for _ in range(count):
        op, x = _choose_step(rng, value)
        plan.append((op, x))
        value = int(_apply(Fraction(value), op, x))
        templates = {
            "add": theme.add,
            "subtract": theme.subtract,
            "multiply": _MULTIPLY,
            "divide": _DIVIDE,
        }[op]
        sentences.append(rng.choice(templates).format(name=name, x=x, items=theme.items))
    sentences.append(f"How many {theme.items} are there at the end?")
    distractors = _distractors(start, plan)
    return Task(
        id=f"synthetic/{seed}/{index}",
        question=" ".join(sentences),
        answer=str(value),
        kind="number",
        source="synthetic",
        meta={
            "distractors": [str(v) for _, v in distractors],
            "distractor_kinds": [k for k, _ in distractors],
            "steps": count,
            "start": start,
            "operations": [[op, x] for op, x in plan],
        },
    )


def synthetic_tasks(n: int, seed: int = 0, steps: int | tuple[int, int] = 3) -> list[Task]:
    """``n`` arithmetic word problems (kind ``number``) with ``steps`` operations each.

    ``steps`` is a fixed count (1-8) or an inclusive range ``(low, high)`` drawn per task;
    ``n`` is at most :data:`MAX_TASKS`.
    Every task has at least three distinct non-negative distractors, none equal to the answer.
    """
    if not 0 <= n <= MAX_TASKS:
        raise InputError(f"n must be 0-{MAX_TASKS:,} synthetic tasks, got {n:,}")
    bounds = (steps, steps) if isinstance(steps, int) else tuple(steps)
    if len(bounds) != 2 or not 1 <= bounds[0] <= bounds[1] <= 8:
        raise InputError(f"steps must be between 1 and 8 (or a range within it), got {steps!r}")
    return [_one_task(seed, i, steps) for i in range(n)]
