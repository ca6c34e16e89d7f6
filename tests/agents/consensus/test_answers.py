"""Answer helpers and text guards under garbage, huge and adversarial inputs (hypothesis)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from byzllm.agents.consensus import (
    Response,
    answer_key,
    is_right,
    looks_like_injection,
    same_answer,
    wrong_answers,
)
from byzllm.protocols.wmsr import as_number
from byzllm.tasks import Task

NUMBER = Task(id="n", question="?", answer="12", kind="number", meta={"distractors": ["11", "13"]})
CHOICE = Task(id="c", question="?", answer="option2", kind="choice", choices=("option1", "option2"))


def test_keys_and_equality() -> None:
    assert same_answer(NUMBER, "12", " 12 ") and not same_answer(NUMBER, "12", "13")
    assert not same_answer(NUMBER, None, None) and answer_key(NUMBER, "  ") is None
    assert is_right(NUMBER, "12.0") and not is_right(NUMBER, None)


def test_an_unclear_comma_is_no_number_in_a_key() -> None:
    """The key of an answer the checker reads as no number dropped its commas: "1,2" was
    keyed 12, one answer with "12" in a vote and the number 12 to W-MSR."""
    assert answer_key(NUMBER, "1,2") == "1,2" and not same_answer(NUMBER, "1,2", "12")
    assert not is_right(NUMBER, "1,2") and answer_key(NUMBER, "-2,3") == "-2,3"
    assert answer_key(NUMBER, "1,234") == "1234" and same_answer(NUMBER, "$1,234", "1234")
    # A math gold "1,2" (two solutions) is no number 12 to derive wrong answers from.
    pair = Task(id="p", question="?", answer="1,2", kind="math")
    assert "13" not in wrong_answers(pair) and "11" not in wrong_answers(pair)


def test_wrong_answers_are_wrong() -> None:
    assert wrong_answers(NUMBER) == ["11", "13"]
    assert wrong_answers(CHOICE) == ["option1"]
    bare = Task(id="x", question="?", answer="7", kind="number")
    assert all(not is_right(bare, w) for w in wrong_answers(bare))
    boolean = Task(id="b", question="?", answer="false", kind="boolean")
    assert wrong_answers(boolean) == ["true"]


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=500))
def test_helpers_never_raise_on_garbage(text: str) -> None:
    key = answer_key(NUMBER, text)
    assert key is None or isinstance(key, str)
    assert isinstance(is_right(NUMBER, text), bool)
    value = as_number(text)
    assert value is None or value == value  # finite, never NaN
    assert isinstance(looks_like_injection(text), bool)
    assert len(Response.of(text).text) <= 8_000


def test_megabyte_inputs_are_bounded() -> None:
    huge = "9" * 1_000_000
    assert len(Response.of(huge).text) == 8_000
    assert looks_like_injection("x" * 1_000_000) is False
    assert as_number("1" * 400) is None  # overflows to inf: not a usable number
    assert isinstance(is_right(NUMBER, huge), bool)


def test_response_of_cuts_huge_texts_and_equal_responses_are_one_object() -> None:
    from byzllm.agents.consensus import Response
    from byzllm.agents.consensus._types import MAX_MESSAGE_CHARS

    huge = Response.of("7", "x" * 1_000_000)
    assert len(huge.text) == MAX_MESSAGE_CHARS and huge.answer == "7"
    assert Response.of("42") is Response.of("42")  # frozen: equal ones may be shared
    assert Response.of("42") == Response(text="42", answer="42")
    assert Response.of(None).text == "" and Response.of(None).answer is None
    long_answer = "9" * 500  # long answers are not kept
    assert Response.of(long_answer) is not Response.of(long_answer)
    assert Response.of(long_answer) == Response(text=long_answer, answer=long_answer)


def test_one_key_one_judgement_for_percentages() -> None:
    """A vote merges "50%" with "50" (one key); against a gold of \\frac{1}{2} the first was
    judged right and the second wrong, so a merged vote mixed a right and a wrong answer."""
    half = Task(id="m", question="?", answer="\\frac{1}{2}", kind="math")
    assert same_answer(half, "50%", "50") and answer_key(half, "50\\%") == "50"
    assert not is_right(half, "50%") and not is_right(half, "50")
    assert is_right(half, "0.5") and not same_answer(half, "50%", "0.5")
    fifty = Task(id="f", question="?", answer="50", kind="math")
    assert is_right(fifty, "50%") and is_right(fifty, "50 percent") and is_right(fifty, "50")


_NUMBERISH = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["12", "12.0", " 12 ", "1,2", "12/1", "-12", "option2", "Option 2", "(2)"]),
)


@given(truth=_NUMBERISH, answer=_NUMBERISH, kind=st.sampled_from(["number", "choice", "boolean"]))
@settings(max_examples=300)
def test_is_right_outside_math_is_the_tasks_own_check(truth: str, answer: str, kind: str) -> None:
    # is_right remembers normalizations and compares them outside math: it must judge every
    # answer exactly as byzllm.tasks.is_correct does, garbage and empty truths included.
    from byzllm.tasks import is_correct

    choices = ("option1", "option2") if kind == "choice" else ()
    if not truth.strip():
        truth = "12"
    task = Task(id="p", question="?", answer=truth, kind=kind, choices=choices)  # type: ignore[arg-type]
    assert is_right(task, answer) == is_correct(task, answer)


POT = Task(
    id="pot",
    question="?",
    answer="answer3",
    kind="choice",
    choices=("answer1", "answer2", "answer3"),
    meta={"choice_texts": {"answer1": "4", "answer2": "24 hours", "answer3": "Use a pot."}},
)


def test_an_option_named_by_its_text_is_its_label() -> None:
    """normalize_answer reads a choice task's option texts; the keys and checks here dropped
    them: "Use a pot" was keyed "use a pot", not answer3, and judged wrong."""
    assert answer_key(POT, "use a pot") == "answer3" and answer_key(POT, "24 hours") == "answer2"
    assert same_answer(POT, "answer3", "Use a pot.") and is_right(POT, "USE A POT")
    assert answer_key(POT, "4") == "answer1"  # the option's text, not position 4
    # The same labels with other texts: nothing remembered for POT leaks into it.
    pan = POT.model_copy(update={"meta": {"choice_texts": {"answer3": "Use a pan."}}})
    assert answer_key(pan, "use a pot") == "use a pot" and not is_right(pan, "use a pot")
    assert answer_key(pan, "use a pan") == "answer3" and is_right(pan, "Use a pan")


_OPTION_TEXTS = st.sampled_from(["4", "24 hours", "Use a pot.", "use a pot", "2", "yes"])


@given(
    texts=st.lists(_OPTION_TEXTS, min_size=3, max_size=3),
    truth=st.one_of(_OPTION_TEXTS, st.sampled_from(["answer1", "answer3"])),
    answer=st.one_of(_OPTION_TEXTS, _NUMBERISH, st.sampled_from(["answer2", "(3)", "B"])),
)
@settings(max_examples=300)
def test_keys_and_checks_read_the_option_texts(texts: list[str], truth: str, answer: str) -> None:
    # One notion of answer equality: the keys and checks here are byzllm.tasks' own, option
    # texts included, whatever an answer or a truth is.
    from byzllm.tasks import is_correct, normalize_answer

    labels = ("answer1", "answer2", "answer3")
    task = Task(
        id="t",
        question="?",
        answer=truth,
        kind="choice",
        choices=labels,
        meta={"choice_texts": dict(zip(labels, texts, strict=True))},
    )
    assert is_right(task, answer) == is_correct(task, answer)
    key = normalize_answer(task, answer)
    if key is not None:
        assert answer_key(task, answer) == key
