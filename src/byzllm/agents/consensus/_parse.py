"""Reply parsers of LLM-backed consensus agents (the SAC paper, Appendix B).

Pure functions that read a model's reply: the receiver-side score of Eq. (2) (Appendix B.1),
the refined answer of Eq. (5) (Appendix B.2) and the self-reported confidence that CP-WBFT
(Zheng et al. 2026) aggregates. Each falls back to the paper's documented default when the
reply holds nothing to read, and never raises. The prompts they answer are in
:mod:`byzllm.agents.consensus._prompts`.
"""

from __future__ import annotations

import re

from byzllm.tasks import Task, extract_answer

__all__ = [
    "DEFAULT_CONFIDENCE",
    "DEFAULT_SCORE",
    "MAX_REPLY_CHARS",
    "parse_confidence",
    "parse_refined_answer",
    "parse_score",
]

#: Longest model reply the parsers read (the score/confidence parsers read only its start).
MAX_REPLY_CHARS = 100_000

#: Score when the scoring reply holds no number (Appendix B.1: "maximally uncertain").
DEFAULT_SCORE = 0.5

#: Confidence when the confidence reply holds no number (same convention as the score).
DEFAULT_CONFIDENCE = 0.5

# The first number of a reply: optional minus sign, digits with optional decimals, or ".5".
_SCORE_NUMBER_RE = re.compile(r"(-?)([0-9]+(?:\.[0-9]+)?|\.[0-9]+)")


def _first_number(text: str) -> float | None:
    if not isinstance(text, str):
        return None
    match = _SCORE_NUMBER_RE.search(text[:MAX_REPLY_CHARS])
    if match is None:
        return None
    value = float(match.group(2))  # ASCII digits only: always a finite float
    return -value if match.group(1) else value


def parse_score(text: str) -> float:
    """The score in a scoring reply (Appendix B.1): first number, clipped to [0, 1], else 0.5.

    The rule, exactly:

    * the **first** number in the reply counts, ASCII digits only, as the paper's regular
      expression ``([0-9]+(?:\\.[0-9]+)?)`` finds it — ``"Score: 1.0"`` → 1.0,
      ``"0.85/1"`` → 0.85, ``"85%"`` → 85 → 1.0 (no percent conversion: the prompt asks for a
      decimal in [0, 1]), ``"Step 1: ..."`` → 1.0, ``"1e-3"`` → 1.0;
    * two deliberate refinements of that expression: a ``-`` directly before the digits is kept
      (``"-0.3"`` → -0.3 → clipped to 0.0, not 0.3), and a leading-dot decimal counts as one
      number (``".5"`` → 0.5, not 5 → 1.0);
    * the value is clipped to [0, 1];
    * no number at all (empty, garbage, ``"NaN"``, ``"inf"``, non-ASCII digits) →
      :data:`DEFAULT_SCORE` (0.5, "maximally uncertain").

    Only the first :data:`MAX_REPLY_CHARS` characters are read. Never raises.
    """
    value = _first_number(text)
    if value is None:
        return DEFAULT_SCORE
    return min(1.0, max(0.0, value))


def parse_refined_answer(task: Task, text: str, fallback: str) -> str:
    """The answer in a refine reply, or ``fallback`` (the current answer) when there is none.

    Uses the task's answer extractor (:func:`byzllm.tasks.extract_answer`: the ``Answer:``
    label, ``\\boxed{}``, ...; a huge reply is read from its tail); Appendix B.2:
    "if extraction fails, the update defaults to r_i^(t+1) = r_i^(t)".
    """
    if not isinstance(text, str):
        return fallback
    answer = extract_answer(task, text)
    return fallback if answer is None else answer


def parse_confidence(text: str) -> float:
    """The confidence in a confidence reply: the rule of :func:`parse_score` (first number,
    clipped to [0, 1], :data:`DEFAULT_CONFIDENCE` = 0.5 when there is none). Never raises."""
    value = _first_number(text)
    if value is None:
        return DEFAULT_CONFIDENCE
    return min(1.0, max(0.0, value))
