"""W-MSR (LeBlanc et al., 2013), the classical resilient-consensus rule, on numeric answers.

Each round every honest agent i with value x_i removes, among its neighbours' values, the F
largest values strictly greater than x_i (all of them if fewer than F) and the F smallest
values strictly smaller than x_i, then moves to the uniform average of its own value and the
remaining ones (an agent whose value does not move keeps its answer as written). An answer's
value is the number the task's answer checker reads it as (``-2.5``, ``\\frac{3}{4}``,
``3/4``, ``−2``: its normalized key). Answers that are not numbers do not take part (an agent
without a numeric value keeps its response). The result is generally not one of the
candidate answers: this is the baseline showing why trimmed *means* do not fit discrete LLM
answers.
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache
from typing import ClassVar

from byzllm.agents.consensus import Response, answer_key
from byzllm.tasks import Task

from ._engine import ConsensusProtocol, QuestionState

__all__ = ["WMSR", "answer_number", "as_number", "format_number", "wmsr_update"]


def as_number(answer: str | None) -> float | None:
    """The answer as a finite float, or ``None``."""
    if answer is None:
        return None
    text = answer.strip().replace(",", "").removeprefix("$").removesuffix("$")
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def answer_number(task: Task, answer: str | None) -> float | None:
    """The number the task's answer checker reads ``answer`` as (its normalized key), as a
    finite float: a plain number, a fraction (``3/4``, ``\\frac{3}{4}``), a boxed or
    typographic number (``\\boxed{2}``, ``−2``), ``1,000``. ``None`` when the checker reads
    no number (an option label, ``sqrt(2)``, the set ``1,2``). Read as a plain float first
    (:func:`as_number`), ``1,2`` averaged as 12 and ``-2,3`` as -23 where the checker reads
    two solutions; a unanimous, right ``1,2`` turned into a wrong ``12`` after one round."""
    key = answer_key(task, answer)
    return None if key is None else _key_number(key)


@lru_cache(maxsize=65_536)
def _key_number(key: str) -> float | None:
    # Remembered: a W-MSR round reads every neighbour's answer, the same few keys each time.
    try:
        value = float(Fraction(key))
    except (ValueError, ZeroDivisionError, OverflowError):
        return None
    return value if math.isfinite(value) else None


def format_number(value: float) -> str:
    """Integers without a decimal point, others in full (the shortest text that reads back
    as the same float) and in plain decimal notation: six significant digits turned a
    unanimous, correct 1234.5678 into a wrong 1234.57 after one round, and 2500000.5 into
    2.5e+06; plain, as the answers it averages are written (``0.00001``, not ``1e-05``)."""
    if abs(value - round(value)) < 1e-9:
        return str(round(value))
    return format(Decimal(repr(value)), "f")


def wmsr_update(own: float, neighbours: dict[int, float], F: int) -> tuple[float, list[int]]:
    """One W-MSR step with uniform weights: ``(new value, removed neighbours)``.

    The mean is taken exactly and rounded once, so values that agree stay put: a float sum
    moved three agents agreeing on 0.1 to 0.10000000000000002, a different answer.
    """
    larger = sorted((j for j, v in neighbours.items() if v > own), key=lambda j: -neighbours[j])
    smaller = sorted((j for j, v in neighbours.items() if v < own), key=lambda j: neighbours[j])
    removed = set(larger[:F]) | set(smaller[:F])
    kept = [v for j, v in neighbours.items() if j not in removed]
    return _exact_mean([own, *kept]), sorted(removed)


def _exact_mean(values: list[float]) -> float:
    """The mean of ``values`` rounded once to the nearest float. A float is an integer over a
    power of two: over the largest of them every value is an integer, their sum is exact, and
    Python's integer division rounds correctly."""
    ratios = [value.as_integer_ratio() for value in values]
    denominator = max(d for _, d in ratios)
    total = sum(n * (denominator // d) for n, d in ratios)
    return total / (denominator * len(values))


class WMSR(ConsensusProtocol):
    """Weighted Mean-Subsequence-Reduced with uniform weights and parameter ``F``."""

    name: ClassVar[str] = "w-msr"

    async def step(self, state: QuestionState) -> dict[int, Response]:
        nxt: dict[int, Response] = {}
        for i in sorted(state.network.honest):
            own = answer_number(state.task, state.current[i].answer)
            values = {
                j: v
                for j, m in state.inbox[i].items()
                if (v := answer_number(state.task, m.answer)) is not None
            }
            if own is None:
                nxt[i] = state.current[i]
                continue
            new, removed = wmsr_update(own, values, self.F)
            state.note(i, retained=sorted(set(values) - set(removed)), filtered=removed)
            # A value that did not move keeps its answer as written: \frac{1}{3} rewritten as
            # 0.3333333333333333 is another answer to the checker.
            nxt[i] = state.current[i] if new == own else Response.of(format_number(new))
        return nxt
