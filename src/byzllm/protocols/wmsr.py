"""W-MSR (LeBlanc et al., 2013), the classical resilient-consensus rule, on numeric answers.

Each round every honest agent i with value x_i removes, among its neighbours' values, the F
largest values strictly greater than x_i (all of them if fewer than F) and the F smallest
values strictly smaller than x_i, then moves to the uniform average of its own value and the
remaining ones. Answers that are not numbers do not take part (an agent without a numeric
value keeps its response). The result is generally not one of the candidate answers: this is
the baseline showing why trimmed *means* do not fit discrete LLM answers.
"""

from __future__ import annotations

import math
from typing import ClassVar

from byzllm.agents.consensus import Response

from ._engine import ConsensusProtocol, QuestionState

__all__ = ["WMSR", "as_number", "format_number", "wmsr_update"]


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


def format_number(value: float) -> str:
    """Integers without a decimal point, others in full (the shortest text that reads back
    as the same float): six significant digits turned a unanimous, correct 1234.5678 into
    a wrong 1234.57 after one round, and 2500000.5 into 2.5e+06."""
    if abs(value - round(value)) < 1e-9:
        return str(round(value))
    return repr(value)


def wmsr_update(own: float, neighbours: dict[int, float], F: int) -> tuple[float, list[int]]:
    """One W-MSR step with uniform weights: ``(new value, removed neighbours)``."""
    larger = sorted((j for j, v in neighbours.items() if v > own), key=lambda j: -neighbours[j])
    smaller = sorted((j for j, v in neighbours.items() if v < own), key=lambda j: neighbours[j])
    removed = set(larger[:F]) | set(smaller[:F])
    kept = [v for j, v in neighbours.items() if j not in removed]
    return (own + sum(kept)) / (1 + len(kept)), sorted(removed)


class WMSR(ConsensusProtocol):
    """Weighted Mean-Subsequence-Reduced with uniform weights and parameter ``F``."""

    name: ClassVar[str] = "w-msr"

    async def step(self, state: QuestionState) -> dict[int, Response]:
        nxt: dict[int, Response] = {}
        for i in sorted(state.network.honest):
            own = as_number(state.current[i].answer)
            values = {
                j: v for j, m in state.inbox[i].items() if (v := as_number(m.answer)) is not None
            }
            if own is None:
                nxt[i] = state.current[i]
                continue
            new, removed = wmsr_update(own, values, self.F)
            state.note(i, retained=sorted(set(values) - set(removed)), filtered=removed)
            nxt[i] = Response.of(format_number(new))
        return nxt
