"""Kind-derived wrong answers: plain computed numbers, never an expression such as ``-(-3/4)``."""

from __future__ import annotations

import re
from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from byzllm.agents.consensus import answer_key, is_right, wrong_answers
from byzllm.tasks import Task

#: A plain number: an integer, a decimal or a fraction, with at most one leading minus sign.
PLAIN = re.compile(r"-?\d+(?:\.\d+)?(?:/\d+)?")


def _task(answer: str, kind: str = "number") -> Task:
    return Task(id="t", question="?", answer=answer, kind=kind)  # type: ignore[arg-type]


def test_the_reported_case_hand_computed() -> None:
    # -3/4 + 1 = 1/4, -3/4 - 1 = -7/4, -3/4 + 2 = 5/4, -3/4 + 10 = 37/4, -3/4 - 2 = -11/4,
    # -(-3/4) = 3/4: terminating decimals, written as such.
    assert wrong_answers(_task("-3/4")) == ["0.25", "-1.75", "1.25", "9.25", "-2.75", "0.75"]
    # 1/3 does not terminate: written as a fraction.
    assert wrong_answers(_task("1/3")) == ["4/3", "-2/3", "7/3", "31/3", "-5/3", "-1/3"]
    # A LaTeX fraction in a math task is a number too.
    assert wrong_answers(_task("-\\frac{3}{4}", "math"))[-1] == "0.75"
    # Zero has no distinct negation.
    assert wrong_answers(_task("0")) == ["1", "-1", "2", "10", "-2"]


def test_symbolic_answers_are_never_negated_twice() -> None:
    assert wrong_answers(_task("-\\sqrt{2}", "math")) == ["-\\sqrt{2} + 1", "2*(-\\sqrt{2})"]
    assert wrong_answers(_task("\\sqrt{2}", "math")) == [
        "\\sqrt{2} + 1",
        "-(\\sqrt{2})",
        "2*(\\sqrt{2})",
    ]


@settings(max_examples=200, deadline=None)
@given(
    numerator=st.integers(min_value=-(10**6), max_value=10**6),
    denominator=st.integers(min_value=1, max_value=400),
    form=st.sampled_from(["fraction", "decimal", "integer"]),
    kind=st.sampled_from(["number", "math"]),
)
def test_numeric_wrong_answers_are_plain_distinct_and_wrong(
    numerator: int, denominator: int, form: str, kind: str
) -> None:
    value = Fraction(numerator, denominator)
    if form == "fraction":
        text = f"{value.numerator}/{value.denominator}" if value.denominator != 1 else str(value)
    elif form == "decimal":
        text = f"{float(value):.3f}"
        value = Fraction(text)
    else:
        value = Fraction(round(value))
        text = str(value)
    task = _task(text, kind)
    wrong = wrong_answers(task)
    assert len(wrong) >= 5
    for w in wrong:
        assert PLAIN.fullmatch(w), (text, w)  # no "-(-3/4)", "--1", "2*(...)"
        assert not is_right(task, w), (text, w)
        assert Fraction(w) != value
    keys = [answer_key(task, w) for w in wrong]
    assert len(set(keys)) == len(keys)
    # The offsets are exact: +1, -1, +2, +10, -2, then the negation when it is new (not 0,
    # and not already one of the five: -1 = 1 - 2).
    offsets = [Fraction(w) - value for w in wrong[:5]]
    assert offsets == [1, -1, 2, 10, -2]
    negation_is_new = value != 0 and -value - value not in offsets
    assert (len(wrong) == 6) == negation_is_new
    if negation_is_new:
        assert Fraction(wrong[5]) == -value
