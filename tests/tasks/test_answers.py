"""Answer extraction, normalization and equivalence, per task kind."""

from __future__ import annotations

import asyncio
import threading

import pytest

from byzllm.tasks import (
    Task,
    answers_equivalent,
    extract_answer,
    is_correct,
    normalize_answer,
)
from byzllm.tasks._text import latex_digits


def number_task(answer: str = "18") -> Task:
    return Task(id="n", question="q", answer=answer, kind="number")


def math_task(answer: str) -> Task:
    return Task(id="m", question="q", answer=answer, kind="math")


BOOLEAN = Task(id="b", question="q", answer="true", kind="boolean", choices=("true", "false"))
WINOGRANDE = Task(
    id="w",
    question="q",
    answer="option2",
    kind="choice",
    choices=("option1", "option2"),
    meta={"choice_texts": {"option1": "Sarah", "option2": "Maria"}},
)
ARC = Task(
    id="a",
    question="q",
    answer="answer3",
    kind="choice",
    choices=("answer1", "answer2", "answer3", "answer4"),
)
HELLASWAG = Task(
    id="h",
    question="q",
    answer="ending3",
    kind="choice",
    choices=("ending1", "ending2", "ending3", "ending4"),
)
PIQA = Task(
    id="p", question="q", answer="solution1", kind="choice", choices=("solution1", "solution2")
)
#: A set labelled by letters ("Answer format: A/B/C/D"), as the loader reads one.
LETTERS = Task(id="l", question="q", answer="c", kind="choice", choices=("a", "b", "c", "d"))


# --- extraction ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("She sells 9 eggs at $2 each, so she makes $18.", "18"),
        ("Answer: 18", "18"),
        ("Answer: $18.00", "18"),
        ("Final answer: 1,234 dollars", "1234"),
        ("So 5 + 3 = 8.\nFinal answer: 5 + 3 = 8", "8"),
        # An equals sign inside a bracketed remark is not the answer's: 2, 3 and 100 before.
        ("Answer: 120 minutes (= 2 hours)", "120"),
        ("Answer: 45 (cost = 3 x 15)", "45"),
        ("Answer: 120 (I first got 2 x 50 = 100, then fixed it)", "120"),
        ("Answer: (5 + 3) = 8", "8"),
        ("Answer: 5 (so x = 3", "5"),
        ("The answer is \\boxed{42}.", "42"),
        ("\\boxed{12} was wrong; Answer: 13", "13"),
        ("Answer: 13 ... on reflection \\boxed{12}", "12"),
        ("Answer:\n\n  -7", "-7"),
        ("The total is −7.", "-7"),
        ("The total is ٤٢", "42"),
        ("Answer: [25]", "25"),
        ("Answer: 2.50", "2.5"),
        ("I cannot solve this.", None),
        ("", None),
    ],
)
def test_extract_number(text: str, expected: str | None) -> None:
    assert extract_answer(number_task(), text) == expected


def test_final_answer_label_wins_over_a_later_plain_answer_label() -> None:
    text = "Final answer: 10\nThe answer is what the question asks for: 3 things"
    assert extract_answer(number_task(), text) == "10"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("\\boxed{\\frac{1}{2}}", "\\frac{1}{2}"),
        (
            "so $x = \\boxed{\\left( 3, \\frac{\\pi}{2} \\right)}$.",
            "\\left( 3, \\frac{\\pi}{2} \\right)",
        ),
        ("Answer: $\\frac{8\\sqrt{33}}{3}$.", "\\frac{8\\sqrt{33}}{3}"),
        ("The result is 27 minus 54, i.e. -27", "-27"),
        ("unclosed \\boxed{12 and then the reply was cut", "12"),
        ("\\boxed{5} and an unclosed \\boxed{6", "5"),
        ("The answer is $\\frac{1}{2}$ because of symmetry.", "\\frac{1}{2}"),
        ("Answer: 18 dollars", "18"),
        ("Answer: \\(x^2+1\\).", "x^2+1"),
        ("Final Answer: The final answer is $\\boxed{5}$. I hope it is correct.", "5"),
    ],
)
def test_extract_math(text: str, expected: str) -> None:
    assert extract_answer(math_task("0"), text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("the correct answer is true", "true"),
        ("Answer: False.", "false"),
        ("Yes, it does.", "true"),
        ("No.", "false"),
        ("It is not true that ... so the answer is: false", "false"),
        ("I am not sure", None),
    ],
)
def test_extract_boolean(text: str, expected: str | None) -> None:
    assert extract_answer(BOOLEAN, text) == expected


@pytest.mark.parametrize(
    ("task", "text", "expected"),
    [
        (WINOGRANDE, "the correct answer is option2", "option2"),
        (WINOGRANDE, "Answer: Option 1", "option1"),
        (WINOGRANDE, "Answer: 2", "option2"),
        (WINOGRANDE, "Answer: Maria", "option2"),
        (ARC, "Answer: answer3", "answer3"),
        (ARC, "Answer: (C)", "answer3"),
        (ARC, "B", "answer2"),
        (ARC, "Answer: 2, because plants need light", "answer2"),
        (ARC, "Answer: A person would say so", None),
        (ARC, "Answer1 looks wrong, answer4 is right.", "answer4"),
        (ARC, "Answer: answer7", None),
        (HELLASWAG, "The best ending is ending3.", "ending3"),
        (PIQA, "Answer: Solution2", "solution2"),
        (PIQA, "I think the second one makes more sense.", None),
        # Letter labels: "(C)" and "C." were no answer, though a bare "C" was c.
        (LETTERS, "Answer: C", "c"),
        (LETTERS, "Answer: C.", "c"),
        (LETTERS, "Answer: (C)", "c"),
        (LETTERS, "The correct answer is (b).", "b"),
        (LETTERS, "Answer: E", None),
    ],
)
def test_extract_choice(task: Task, text: str, expected: str | None) -> None:
    assert extract_answer(task, text) == expected


# --- normalization and equivalence ----------------------------------------------------------


@pytest.mark.parametrize(
    ("task", "text", "expected"),
    [
        (number_task(), "1,000", "1000"),
        (number_task(), "$1,000.00", "1000"),
        (number_task(), "18 eggs", "18"),
        (number_task(), "-2.50", "-2.5"),
        (number_task(), "-$5", "-5"),
        (number_task(), "-€ 1,200.50", "-1200.5"),
        (number_task(), "a loss of $5", "5"),
        (number_task(), "3/4", "0.75"),
        (number_task(), "1/3", "1/3"),
        (number_task(), "none", None),
        (BOOLEAN, "Yes", "true"),
        (BOOLEAN, "FALSE", "false"),
        (BOOLEAN, "maybe", None),
        (WINOGRANDE, "OPTION2", "option2"),
        (WINOGRANDE, "option3", None),
        (math_task("0"), "0.5", "0.5"),
        (math_task("0"), "\\frac{1}{2}", "0.5"),
        (math_task("0"), "\\frac{1}{3}", "1/3"),
        (math_task("0"), "2^{10}", "1024"),
        (math_task("0"), "5.4 \\text{ cents}", "5.4"),
        (math_task("0"), "\\sqrt{2}", "sqrt(2)"),
        (math_task("0"), "\\text{Evelyn}", "evelyn"),
        (math_task("0"), "(C)", "c"),
        (math_task("0"), "x = 5", "5"),
        (math_task("0"), "", None),
    ],
)
def test_normalize_answer(task: Task, text: str, expected: str | None) -> None:
    assert normalize_answer(task, text) == expected


@pytest.mark.parametrize(
    ("task", "a", "b", "expected"),
    [
        (number_task(), "1,000", "1000.0", True),
        (number_task(), "0.1", "1/10", True),
        (number_task(), "18", "19", False),
        (number_task(), None, "18", False),
        (BOOLEAN, "yes", "True", True),
        (BOOLEAN, "yes", "false", False),
        (ARC, "answer3", "Answer 3", True),
        (ARC, "answer3", "answer4", False),
        (math_task("0"), "\\frac{1}{2}", "0.5", True),
        (math_task("0"), "0.5", "\\frac{1}{2}", True),
        (math_task("0"), "\\dfrac{8\\sqrt{33}}{3}", "\\frac{8}{3}\\sqrt{33}", True),
        (math_task("0"), "(3, \\frac{\\pi}{2})", "\\left( 3, \\frac{\\pi}{2} \\right)", True),
        (math_task("0"), "12", "-12", False),
        (math_task("0"), "[-2, 7)", "[-2, 7]", False),
    ],
)
def test_answers_equivalent(task: Task, a: str | None, b: str | None, expected: bool) -> None:
    assert answers_equivalent(task, a, b) is expected
    assert answers_equivalent(task, b, a) is expected


@pytest.mark.parametrize(
    ("gold", "answer", "expected"),
    [
        ("11/18", "\\frac{11}{18}", True),
        ("\\frac{8\\sqrt{33}}{3}", "\\frac{8}{3}\\sqrt{33}", True),
        ("-27", "-27", True),
        ("-27", "27", False),
        ("\\left( 3, \\frac{\\pi}{2} \\right)", "(3, \\pi/2)", True),
        ("2013", "2,013", True),
        ("\\text{(C)}", "C", True),
        ("5", "9^{9^{9^{9}}}", False),  # a power tower is rejected, not evaluated
        ("5", None, False),
        ("\\text{Evelyn}", "Evelyn", True),
        ("\\text{Evelyn}", "Levenyn", False),  # not a product of symbols
        ("\\text{east}", "East", True),
        ("\\frac{270}7\\text{ degrees}", "\\frac{270}{7}", True),
    ],
)
def test_is_correct_math(gold: str, answer: str | None, expected: bool) -> None:
    assert is_correct(math_task(gold), answer) is expected


def test_is_correct_other_kinds() -> None:
    assert is_correct(number_task("18"), "18.0")
    assert not is_correct(number_task("18"), "17")
    assert is_correct(BOOLEAN, "yes")
    assert is_correct(WINOGRANDE, "option2")
    assert not is_correct(WINOGRANDE, "option1")


def test_math_verify_runs_outside_the_main_thread() -> None:
    """math-verify's signal-based timeouts are off: it works in worker threads."""
    results: list[bool] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            results.append(is_correct(math_task("\\frac{3}{7}"), "\\dfrac{6}{14}"))
            results.append(answers_equivalent(math_task("0"), "\\sqrt{4}", "2"))
        except BaseException as err:  # pragma: no cover - the failure being tested for
            errors.append(err)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert errors == []
    assert results == [True, True]


async def test_math_verify_under_asyncio_to_thread() -> None:
    ok = await asyncio.to_thread(is_correct, math_task("\\pi/3"), "\\frac{\\pi}{3}")
    assert ok


def test_many_threads_check_math_at_once() -> None:
    from concurrent.futures import ThreadPoolExecutor

    pairs = [
        ("\\frac{1}{2}", "0.5", True),
        ("\\sqrt{2}", "2^{1/2}", True),
        ("(1, 2)", "(2, 1)", False),
        ("\\pi", "3.14159", False),
    ] * 8

    def check(pair: tuple[str, str, bool]) -> bool:
        gold, answer, expected = pair
        return is_correct(math_task(gold), answer) is expected

    with ThreadPoolExecutor(max_workers=8) as pool:
        assert all(pool.map(check, pairs))


def test_no_timeout_warning_is_logged(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    import math_verify.grader
    import math_verify.parser

    # math-verify warns once per process that its timeouts are off: make it warn again.
    monkeypatch.setattr(math_verify.parser, "TIMEOUT_WARNING_SHOWN", False)
    monkeypatch.setattr(math_verify.grader, "TIMEOUT_WARNING_SHOWN", False)
    with caplog.at_level("DEBUG"):
        assert is_correct(math_task("\\frac{2}{9}"), "\\frac{4}{19} + \\frac{2}{171}")
    assert not [r for r in caplog.records if "Timeout" in r.getMessage()]


def test_normalize_depends_only_on_kind_and_choices() -> None:
    """Protocols key answers with a probe task that carries no ground truth or meta."""
    probe = Task(id="_", question="", answer="anything", kind="choice", choices=ARC.choices)
    for text in ["answer3", "Answer 3", "(C)", "3"]:
        assert normalize_answer(probe, text) == normalize_answer(ARC, text) == "answer3"


@pytest.mark.parametrize(
    "reply",
    [
        "**Answer:** \\frac{1}{2}",
        "**Final answer:** \\frac{1}{2}",
        "**Answer: \\frac{1}{2}**",
        "Answer: *\\frac{1}{2}*",
        "Work.\n\n**Answer:**\n\\frac{1}{2}",
    ],
)
def test_markdown_emphasis_around_the_label_is_not_part_of_the_answer(reply: str) -> None:
    """A bold label left its closing ``**`` in front of the answer ("** \\frac{1}{2}"), so
    every right answer that was not a bare number was scored wrong, uncounted."""
    task = math_task("\\frac{1}{2}")
    assert extract_answer(task, reply) == "\\frac{1}{2}"
    assert is_correct(task, extract_answer(task, reply))


@pytest.mark.parametrize(
    ("reply", "read"),
    [
        ("Answer: 6 (or 5)", "6"),  # a hedge in parentheses was read as the answer: 5
        ("Answer: 5 (since 2+3=7)", "5"),  # and a remark's last number: 7
        ("Answer: -2 (negative)", "-2"),
        ("Final answer: $\\$36$", "\\$36"),  # the escaped dollar ended the formula: "\\"
        ("Answer: [your numerical answer]", None),  # the prompt's placeholder, echoed
        ("Answer: $", None),
        ("Answer: **", None),
    ],
)
def test_math_segments_by_hand(reply: str, read: str | None) -> None:
    assert extract_answer(math_task("5"), reply) == read


@pytest.mark.parametrize(
    ("reply", "math"),
    [
        ("Final answer:\n\\[\n\\frac{1}{2}\n\\]\nIt took 3 steps.", "\\frac{1}{2}"),
        ("**Final Answer**\n\\[\n0.5\n\\]\nIt took 3 steps.", "0.5"),
        ("Answer:\n$$\n\\frac{1}{2}\n$$\nIt took 3 steps.", "\\frac{1}{2}"),
        ("Answer: $$\n0.5\n$$ in 3 steps", "0.5"),
        ("Final answer:\n\\begin{equation}\n0.5\n\\end{equation} in 3 steps", "0.5"),
        ("Answer:\n```text\n0.5\n```\nIt took 3 steps.", "0.5"),
        ("Answer: \\[ 0.5 \\] in 3 steps", "0.5"),  # one line, as before
    ],
)
def test_a_display_formula_after_a_label_is_the_answer(reply: str, math: str) -> None:
    """A label followed by a display formula took its opening line as the answer: math
    answered "\\[" (judged wrong), and a number task fell back to the reply's last number
    (3 here)."""
    assert extract_answer(math_task("0.5"), reply) == math
    assert is_correct(math_task("0.5"), extract_answer(math_task("0.5"), reply))
    assert extract_answer(number_task(), reply) == "0.5"


@pytest.mark.parametrize(
    ("reply", "math"),
    [
        ("We have 3 cases. Answer: \\text{none}", "\\text{none}"),
        ("We have 3 cases. \\boxed{\\text{none}}", "\\text{none}"),
        ("We have 3 cases. Answer: $x^{2}$", "x^{2}"),
        ("We have 3 cases. Answer: [your numerical answer]", None),
        ("We have 3 cases. Answer: $", None),
        ("We have 3 cases.\nAnswer:", None),
        ("We have 3 cases.\n**Final Answer:** **", None),
    ],
)
def test_a_box_or_label_holding_no_answer_is_no_answer(reply: str, math: str | None) -> None:
    """A box or label that held no number sent a number task (and math, after an echoed
    placeholder or bare markup) to the reasoning's last number: each of these answered 3."""
    assert extract_answer(number_task("3"), reply) is None
    assert extract_answer(math_task("3"), reply) == math
    assert extract_answer(number_task("3"), reply, scan=False) is None


def test_a_label_holding_no_answer_of_the_kind_is_no_answer() -> None:
    assert extract_answer(BOOLEAN, "It is true that 3 > 2. Answer: unsure") is None
    assert extract_answer(ARC, "answer2 looks fine.\nAnswer: I cannot tell") is None
    # Without a box or a label, the scan reads the reply as before.
    assert extract_answer(number_task("3"), "We have 3 cases.") == "3"
    assert extract_answer(BOOLEAN, "It is true that 3 > 2.") == "true"


@pytest.mark.parametrize(
    ("reply", "read"),
    [
        ("\\boxed{12}. Answer: see above", "12"),  # the earlier of a box and a label
        ("Answer: see below. \\boxed{12}", "12"),
        ("Answer: 42\n\nThis is my final answer.", "42"),  # a "final answer" in prose
        ("Answer: 42\nI hope the final answer is correct.", "42"),
        ("Final answer: 10\nThe answer is what the question asks for: 3 things", "10"),
    ],
)
def test_a_box_or_label_without_an_answer_gives_way_to_the_other(reply: str, read: str) -> None:
    assert extract_answer(number_task(read), reply) == read


#: A Social IQa question whose options are judgement words.
SIQA = Task(
    id="s",
    question="q",
    answer="answer1",
    kind="choice",
    choices=("answer1", "answer2", "answer3"),
    meta={"choice_texts": {"answer1": "right", "answer2": "wrong", "answer3": "unsure"}},
)


@pytest.mark.parametrize(
    "reply",
    [
        "Answer: 44. Checking: 4 x 11 = 44, so the answer is right.",
        "The answer is 44.\nSo our answer is correct.",
        "Final answer: 44\nThe final answer is indeed correct!",
        "\\boxed{44}\n\n17 x 44 = 748 = 9 x 83 + 1, so our answer is correct.",
        "Answer: 44\nThe answer is **valid** because 44 < 83.",
        "Answer: 44\nThe answer is true: 4 x 11 = 44.",
    ],
)
def test_a_verdict_after_an_answer_is_no_later_answer(reply: str) -> None:
    """ "so our answer is correct" (as a MATH solution ends) read as the answer "correct" to a
    math task and as no answer to a number task, not the 44 it judged."""
    assert extract_answer(math_task("44"), reply) == "44"
    assert extract_answer(number_task("44"), reply) == "44"


@pytest.mark.parametrize(
    "reply",
    [
        "So $17^{-1} \\equiv \\boxed{44} \\pmod{83}$.\n\nWe may check our answer: "
        "$17 \\cdot 44 = 748 = 9 \\cdot 83 + 1$, so our answer is correct.",
        "Answer: 44\nTo double-check the answer: 44 / 4 = 11.",
        "The final answer is 44.\nLet me verify the final answer: 4 x 11 = 44, and 44 - 40 = 4.",
        "Answer: 44\nRechecking this answer: 2 x 22 = 44, 44 < 83 = 83.",
    ],
)
def test_a_label_after_a_verb_of_checking_is_no_label(reply: str) -> None:
    """ "We may check our answer: 17 x 44 = 748 = ..." read the check as the answer: the
    formula to a math task, a number of it to a number task."""
    assert extract_answer(math_task("44"), reply) == "44"
    assert extract_answer(number_task("44"), reply) == "44"
    # An adjective is no verb of checking: its label is read.
    assert extract_answer(number_task("44"), "Answer: 3. Verified answer: 44") == "44"


def test_a_verdict_word_is_an_answer_where_it_answers_the_task() -> None:
    assert extract_answer(BOOLEAN, "Answer: false.\nNo: the answer is true.") == "true"
    assert extract_answer(BOOLEAN, "Answer: false. So the answer is correct.") == "false"
    assert extract_answer(SIQA, "Answer: answer2.\nNo, the answer is right.") == "answer1"
    assert extract_answer(SIQA, "Answer: answer2. The answer is correct.") == "answer2"


def test_a_verdict_with_no_answer_before_it_answers_nothing() -> None:
    """As a label holding no answer does; math read the word "correct" as its answer."""
    for task in (math_task("3"), number_task("3"), BOOLEAN, ARC):
        assert extract_answer(task, "We have 3 cases. The answer is correct.") is None


def test_latex_digit_groups_and_percentages_key_as_their_number() -> None:
    """math-verify read "1\\,000" as 1 × 0 (right for a gold of 0, wrong for 1000), and keyed
    "50\\%" as 0.5, so majority and CP-WBFT votes grouped it with 0.5 rather than with 50."""
    thousand = math_task("1000")
    for written in ("1\\,000", "1{,}000", "1\\!000", "1~000"):
        assert normalize_answer(thousand, written) == "1000"
        assert is_correct(thousand, written)
    assert not is_correct(math_task("0"), "1\\,000")
    fifty = math_task("50")
    assert normalize_answer(fifty, "50\\%") == normalize_answer(fifty, "50") == "50"
    assert normalize_answer(fifty, "50\\%") != normalize_answer(fifty, "0.5")
    assert is_correct(fifty, "50\\%")


@pytest.mark.parametrize(
    "written", ["50%", "50\\%", "50 \\%", "50\\,\\%", "50 percent", "50\\text{ percent}", "$50\\%$"]
)
def test_a_percentage_is_judged_as_its_number_as_it_is_keyed(written: str) -> None:
    """ "50\\%" keyed as 50 but math-verify judged it as 0.5: right against a gold of
    \\frac{1}{2} (where "50", with the same key, is wrong) and of 0.5, so a vote merged a right
    answer with a wrong one. MATH-500 and GSM8K golds for percentages are the bare number."""
    assert normalize_answer(math_task("50"), written) == "50"
    assert is_correct(math_task("50"), written)
    assert is_correct(math_task("50\\%"), written)
    assert not is_correct(math_task("\\frac{1}{2}"), written)
    assert not is_correct(math_task("0.5"), written)
    assert answers_equivalent(math_task("1"), written, "50")
    assert not answers_equivalent(math_task("1"), written, "0.5")
    # A gold written with a percent sign is its number too; 12.5\\% is 12.5, not 1/8.
    assert not is_correct(math_task("50\\%"), "\\frac{1}{2}")
    assert is_correct(math_task("12.5"), "12.5\\%")
    assert not is_correct(math_task("\\frac{1}{8}"), "12.5\\%")
    assert normalize_answer(math_task("1"), "\\frac{1}{4}\\%") == "0.25"


def test_a_choice_named_by_its_own_text() -> None:
    """PIQA and ARC options end with a dot or start with a number: "Answer: <the option's
    text>" was None for 1,305 of 1,838 PIQA and 1,242 of 3,530 ARC questions (the reply's
    dot was stripped, the option's was not; "24 hours" was read as a position)."""
    task = Task(
        id="p",
        question="q",
        answer="answer2",
        kind="choice",
        choices=("answer1", "answer2", "answer3"),
        meta={"choice_texts": {"answer1": "4", "answer2": "24 hours", "answer3": "Use a pot."}},
    )
    assert extract_answer(task, "Answer: 24 hours") == "answer2"
    assert extract_answer(task, "Answer: Use a pot.") == "answer3"
    assert extract_answer(task, "Answer: use a pot") == "answer3"
    assert extract_answer(task, "Answer: 4") == "answer1"  # the option's text, not position 4
    assert extract_answer(task, "Answer: 3") == "answer3"  # no option reads "3": a position


def test_normalize_answer_reads_the_option_texts_it_documents() -> None:
    """A choice key depends on ``meta["choice_texts"]`` too, as its docstring says."""
    texts = {"answer1": "4", "answer2": "Use a pot.", "answer3": "Use a pot."}
    task = Task(
        id="p",
        question="q",
        answer="answer1",
        kind="choice",
        choices=("answer1", "answer2", "answer3"),
        meta={"choice_texts": {"answer1": "4", "answer2": "24 hours"}},
    )
    assert normalize_answer(task, "24 HOURS.") == "answer2"
    assert normalize_answer(task, "4") == "answer1"  # the option's text, not position 4
    without = task.model_copy(update={"meta": {}})
    assert normalize_answer(without, "24 hours") is None
    assert normalize_answer(without, "4") is None  # a position past the last option
    # A text two options share names neither.
    shared = task.model_copy(update={"meta": {"choice_texts": texts}})
    assert normalize_answer(shared, "use a pot") is None


@pytest.mark.parametrize(
    "reply",
    ["\\boxed{1,\\!000}", "\\boxed{1{,}000}", "\\boxed{1\\,000}", "\\boxed{\\frac{2000}{2}}"],
)
def test_number_answers_written_as_latex(reply: str) -> None:
    """GSM8K answers written MATH-style lost their digits: each of these read as 1 (or 2000)."""
    task = number_task("1000")
    assert extract_answer(task, reply) == "1000"
    assert is_correct(task, extract_answer(task, reply))


@pytest.mark.parametrize(
    ("reply", "read"),
    [
        ("so the probability is $\\frac{1}{2}$.", "0.5"),
        ("The chance is \\(\\dfrac{3}{4}\\) here", "0.75"),
        ("which gives\n\\[ -\\tfrac{3}{8} \\]", "-0.375"),
        ("She walks $$2\\frac{1}{4}$$ miles.", "2.25"),  # a mixed number
        ("She walks 2 \\frac{1}{4} miles.", "2.25"),
        ("It costs $1\\,000$ dollars.", "1000"),
        ("It costs 1{,}250 dollars.", "1250"),
        ("so $x = \\frac{2000}{2}$", "1000"),
        ("so $\\frac{1}{2} + 3 = 3.5$", "3.5"),  # the last number is still the last one
        ("so the probability is $\\frac12$.", "0.5"),  # TeX's braceless arguments
        ("so the probability is $\\frac{1}2$.", "0.5"),
        ("so the probability is $\\dfrac12$.", "0.5"),
        ("so the probability is \\(\\tfrac3{4}\\).", "0.75"),
        ("She walks $2\\frac14$ miles.", "2.25"),
    ],
)
def test_the_scan_reads_latex_numbers(reply: str, read: str) -> None:
    """With no box and no label, the scan read the last digits of a reply: "$\\frac{1}{2}$."
    was 2 (right against a gold of 2), "$1\\,000$" was 0, "2\\frac{1}{4}" was 4."""
    for kind in ("number", "math"):
        task = Task(id="t", question="q", answer=read, kind=kind)
        assert extract_answer(task, reply) == read
        assert is_correct(task, extract_answer(task, reply))
    assert not is_correct(number_task("2"), extract_answer(number_task("2"), reply))
    assert not is_correct(math_task("2"), extract_answer(math_task("2"), reply))


@pytest.mark.parametrize(
    ("reply", "number", "math"),
    [
        ("\\boxed{\\frac12}", "0.5", "\\frac12"),
        ("Answer: $\\frac{1}2$", "0.5", "\\frac{1}2"),
        ("Answer: \\dfrac12", "0.5", "\\dfrac12"),
        ("Answer: $\\frac1{20}$", "0.05", "\\frac1{20}"),
        ("Answer: $3\\frac12$ hours", "3.5", "3\\frac12"),
    ],
)
def test_braceless_latex_fractions_are_their_value(reply: str, number: str, math: str) -> None:
    """TeX reads one digit as an argument: "\\frac12" is 1/2. A box or label holding
    "\\frac12" read as no number, "\\frac{1}2" as 1, "\\frac1{20}" as 20."""
    assert extract_answer(number_task(number), reply) == number
    assert extract_answer(math_task(number), reply) == math
    assert normalize_answer(math_task(number), math) == number
    assert is_correct(math_task(number), math)


def test_a_braceless_fraction_followed_by_a_digit_is_no_fraction() -> None:
    """TeX reads "\\frac123" as (1/2)·3: neither 1/23 nor 12/3."""
    assert latex_digits("\\frac123") == "\\frac123"
    assert latex_digits("\\frac1{23}") == "1/23"
    assert latex_digits("\\frac{12}3") == "12/3"


@pytest.mark.parametrize(
    ("reply", "read"),
    [
        ("So the angle is $\\frac{\\pi}{2}$.", None),
        ("so $y = \\frac{x}{2}$", None),
        ("which is \\(\\dfrac{\\sqrt{3}}{2}\\)", None),
        ("$\\frac{\\frac{1}{x}}{\\sqrt{2}}$", None),
        ("In 3 steps we reach $\\tfrac{\\pi}{4}$.", "3"),  # the last number stays the last
        ("so it is $\\frac{2}{x} + 4$", "4"),
    ],
)
def test_a_fraction_that_is_no_number_lends_no_digit(reply: str, read: str | None) -> None:
    """The scan read "$\\frac{\\pi}{2}$" as its denominator 2, and a box or label holding it
    as 2 for a number task: right against a gold of 2."""
    for kind in ("number", "math"):
        task = Task(id="t", question="q", answer="2", kind=kind)
        assert extract_answer(task, reply) == read
    assert extract_answer(number_task("2"), "\\boxed{\\frac{\\pi}{2}}") is None
    assert extract_answer(number_task("2"), "Answer: $\\frac{x}{2}$") is None
    assert extract_answer(math_task("2"), "Answer: $\\frac{\\pi}{2}$") == "\\frac{\\pi}{2}"
    assert not is_correct(math_task("2"), "\\frac{\\pi}{2}")


@pytest.mark.parametrize(
    ("reply", "read"),
    [
        ("... so the term is $x_{10}$", None),
        ("so the curve is $x^2+y^2$", None),
        ("so it is $e^{-2}$", None),
        ("so it is $2^{x}$ or $4^{\\frac12}$", None),
        ("so the side is $\\sqrt{2}$", None),
        ("so the side is $3\\sqrt{2}$", None),  # 3√2, not 3
        ("so it is $\\sqrt[3]{8}$", None),
        ("so it is $\\frac{1}{2}\\sqrt{3}$", None),
        ("In 3 steps we reach $a_{12}$.", "3"),  # the last number stays the last
        ("so $x^{2} = 49$", "49"),
        # A number's power with an integer exponent is its value.
        ("so there are $2^{10}$ subsets", "1024"),
        ("so it is $10^{-2}$", "0.01"),
        ("so it is $(-2)^3$", "-8"),
        ("so it is $-3^{2}$", "-9"),
        ("so it is 10^6", "1000000"),
        ("It weighs $1.5 \\times 10^{3}$ kg", "1500"),
        ("The angle is $90^\\circ$.", "90"),  # degrees
        ("In base two: $1011_{2}$", "1011"),  # a base numeral, as math-verify keys it
    ],
)
def test_scripts_and_roots_lend_no_digit(reply: str, read: str | None) -> None:
    """The scan read "$x_{10}$" as 10, "$x^2+y^2$" and "$\\sqrt{2}$" as 2, "$2^{10}$" as 10,
    "$(-2)^3$" as 3 and "$1.5 \\times 10^{3}$" as 3: right against golds they are not."""
    for kind in ("number", "math"):
        task = Task(id="t", question="q", answer=read or "2", kind=kind)
        assert extract_answer(task, reply) == read
        if read is not None:
            assert is_correct(task, extract_answer(task, reply))


@pytest.mark.parametrize(
    ("reply", "number", "math"),
    [
        ("\\boxed{2^{10}}", "1024", "2^{10}"),
        ("Answer: $10^{3}$ grams", "1000", "10^{3}"),
        ("Answer: $6 \\cdot 10^{2}$", "600", "6 \\cdot 10^{2}"),
        ("Answer: $90^{\\circ}$", "90", "90^{\\circ}"),
        ("\\boxed{\\sqrt{2}}", None, "\\sqrt{2}"),
        ("\\boxed{2\\sqrt{5}}", None, "2\\sqrt{5}"),
        ("Answer: $x_{10}$", None, "x_{10}"),
        ("Answer: $x^{2}$", None, "x^{2}"),
    ],
)
def test_a_boxed_or_labelled_power_or_root(reply: str, number: str | None, math: str) -> None:
    """A number task read "\\boxed{2^{10}}" as 2 and "\\boxed{\\sqrt{2}}" as 2; math keeps
    the answer as written and keys a number's power as its value, as it judges it."""
    assert extract_answer(number_task(), reply) == number
    assert extract_answer(math_task("0"), reply) == math
    if number is not None:
        assert normalize_answer(math_task("0"), math) == number
        assert is_correct(math_task(number), math)
        assert not is_correct(math_task("2"), math)
    else:
        assert not is_correct(math_task("2"), math) and not is_correct(math_task("10"), math)


@pytest.mark.parametrize(
    ("reply", "number", "math", "before"),
    [
        ("Answer: $3 \\cdot 5$", "15", "3 \\cdot 5", "3"),
        ("Answer: $3 \\times 5$", "15", "3 \\times 5", "3"),
        ("Answer: 3 × 5", "15", "3 × 5", "3"),
        ("Answer: 3 * 5", "15", "3 * 5", "3"),
        ("\\boxed{3\\cdot2^{10}}", "3072", "3\\cdot2^{10}", "3"),
        ("Answer: $2 \\cdot 3 \\cdot 7$ ways", "42", "2 \\cdot 3 \\cdot 7", "2"),
        ("Answer: $\\frac{1}{2} \\cdot 4$", "2", "\\frac{1}{2} \\cdot 4", "0.5"),
        ("Answer: $(-3) \\cdot 5$", "-15", "(-3) \\cdot 5", "-3"),
        ("Answer: $1.5 \\times 4$", "6", "1.5 \\times 4", "1.5"),
    ],
)
def test_a_product_of_numbers_is_its_value(reply: str, number: str, math: str, before: str) -> None:
    """A number task read "Answer: $3 \\cdot 5$" as 3 and "\\boxed{3\\cdot2^{10}}" as 3,
    its first factor (``before``), while math-verify evaluates them (15, 3072)."""
    assert extract_answer(number_task(), reply) == number
    assert extract_answer(math_task("0"), reply) == math
    assert normalize_answer(math_task("0"), math) == number
    assert is_correct(number_task(number), extract_answer(number_task(number), reply))
    assert is_correct(math_task(number), math)
    assert not is_correct(number_task(before), extract_answer(number_task(before), reply))
    assert not is_correct(math_task(before), math)


@pytest.mark.parametrize(
    ("reply", "read"),
    [
        ("so the total is $3 \\cdot 5$.", "15"),  # its last factor before
        ("We need $3\\cdot2^{10}$ bytes.", "3072"),  # 2, the power lost its base
        ("so it costs 4 * 2.5 = 10 dollars", "10"),
        ("so it takes 3 × 5 minutes", "15"),
    ],
)
def test_a_scanned_product_of_numbers_is_its_value(reply: str, read: str) -> None:
    for task in (number_task(read), math_task(read)):
        assert extract_answer(task, reply) == read
        assert is_correct(task, extract_answer(task, reply))


@pytest.mark.parametrize(
    ("reply", "read"),
    [
        # Factors (or a value) too long to read lend nothing, as a power's do.
        ("Answer: $" + "9" * 40 + " \\times " + "9" * 40 + "$", None),
        ("Answer: 1e30 * 1e30 * 1e30", None),
        ("Answer: 1/0 * 3", None),
        # No product: a bullet on the next line, emphasis, a function's value, a sum.
        ("Answer: 5\n* 3 apples", "5"),
        ("Answer: **12**", "12"),
        ("Answer: $3 \\cdot 4 + 2$", "12"),
        ("Answer: 12 (3 * 4)", "12"),
    ],
)
def test_what_is_no_product_or_one_too_long(reply: str, read: str | None) -> None:
    assert extract_answer(number_task(), reply) == read


@pytest.mark.parametrize(
    ("reply", "math_key"),
    [
        ("Answer: $2\\pi$", "2*pi"),
        ("\\boxed{2\\pi}", "2*pi"),
        ("Answer: $x/2$", "x/2"),
        ("Answer: $2x$", "2*x"),
        ("Answer: 2x", "2*x"),
        ("Answer: $\\pi r^2$", "pi*r**2"),
        ("Answer: $2\\pi r$", "2*pi*r"),
        ("Answer: $x + 1$", "x + 1"),
        ("Answer: $x - 2$", "x - 2"),
        ("Answer: $2/x$", "2/x"),
        ("Answer: $n = 2k$", "2*k"),
        ("Answer: 2π", "2*pi"),
        ("Answer: $5\\,\\pi$", "5*pi"),
        ("Answer: $3 \\cdot 5x$", "3*5*x"),
        ("Answer: $3\\alpha$", "3*alpha"),
        ("Answer: 5m/s", "(5*m)/s"),
    ],
)
def test_an_expression_with_a_symbol_is_no_number_answer(reply: str, math_key: str) -> None:
    """A number task read "Answer: $2\\pi$" and "Answer: $x/2$" as 2 and "2x" as 2: a
    coefficient or a denominator lent its digits, judged right against a gold of 2, while a math
    task keeps the expression (math-verify's key has the symbol). Such a label answers
    nothing (a parse fall-back to the agents), as a label holding no number does."""
    for gold in ("2", "5", "15", "3", "1"):
        assert extract_answer(number_task(gold), reply) is None
    answer = extract_answer(math_task("2"), reply)
    assert normalize_answer(math_task("2"), answer) == math_key
    assert not is_correct(math_task("2"), answer)


@pytest.mark.parametrize(
    ("reply", "read"),
    [
        ("We need 12 apples, so the total is $2\\pi$.", "12"),  # not 2
        ("so each one gets $x/2$.", None),
        ("In 3 steps we reach $x + 1$.", "3"),  # not 1
        ("so $2x = 14$ and $x = 7$.", "7"),
        ("so it is 2π", None),
    ],
)
def test_a_scanned_expression_with_a_symbol_lends_no_digits(reply: str, read: str | None) -> None:
    """The scan read "... is $2\\pi$." as 2 and "$x/2$" as 2, as it read "$\\frac{\\pi}{2}$"
    before a fraction that is no number lent no digits."""
    for kind in ("number", "math"):
        assert extract_answer(Task(id="t", question="q", answer="2", kind=kind), reply) == read


@pytest.mark.parametrize(
    ("reply", "read"),
    [
        ("Answer: 7 apples", "7"),
        ("Answer: 5 m/s", "5"),
        ("Answer: 60 km/h", "60"),
        ("Answer: 2nd", "2"),
        ("Answer: $5\\,\\text{cm}^2$", "5"),
        # A unit's letter glued to its number, as math-verify drops it: 10 seconds, 5 metres.
        ("Answer: 10s", "10"),
        ("Answer: 5m", "5"),
        ("Answer: $x = 7$", "7"),
        ("Answer: 7 (because 2x = 14)", "7"),
        ("Answer: 14, since 2x = 14", "14"),
        ("Answer: a -8 change", "-8"),  # a word and a negative number
        ("Answer: 10 - 4", "10"),
        # A lone letter before a word is prose, not a symbol: no expression "12 - I".
        ("Answer: 12 - I think so", "12"),
        ("Answer: 12 - a dozen", "12"),
        ("Answer: 12 + a tip", "12"),
    ],
)
def test_a_number_beside_words_or_units_is_still_read(reply: str, read: str) -> None:
    assert extract_answer(number_task(), reply) == read


def test_mixed_numbers_symbols_and_starred_answers_keep_their_meaning() -> None:
    """2\\frac{1}{4} is two and a quarter (not 21/4); ∅ and ∞ are answers (not markup); a
    trailing * after ^ or _ is a conjugate or dual, not emphasis."""
    mixed = math_task("2\\frac{1}{4}")
    assert is_correct(mixed, "2.25") and is_correct(mixed, "\\frac{9}{4}")
    assert not is_correct(mixed, "5.25")
    assert normalize_answer(mixed, "2\\frac{1}{4}") == "2.25"
    assert extract_answer(math_task("\\emptyset"), "Answer: ∅") == "∅"
    assert extract_answer(math_task("5"), "Answer: -∞") == "-∞"
    assert extract_answer(math_task("a^*"), "Answer: a^*") == "a^*"
    assert extract_answer(math_task("5"), "Answer: 5**") == "5"


def test_a_mixed_number_is_its_whole_plus_its_fraction() -> None:
    """MATH-500's gold "137 \\frac{1}{2}" (test/algebra/2470, "express your answer as a mixed
    number") lost its space on the way to a plain number: 1371/2, so 137.5 was judged wrong
    and 685.5 right."""
    task = math_task("137 \\frac{1}{2}")
    assert normalize_answer(task, task.answer) == "137.5"
    for right in ("137.5", "275/2", "137\\frac{1}{2}", "137 1/2", "\\frac{275}{2}"):
        assert is_correct(task, right)
        assert normalize_answer(task, right) == "137.5"
    assert not is_correct(task, "685.5")
    assert normalize_answer(task, "-2 \\frac{1}{4}") == "-2.25"  # the sign is the whole's
    assert normalize_answer(task, "1 000") == "1000"  # a spaced thousands group, as before


@pytest.mark.parametrize(
    ("reply", "read"),
    [
        ("The net proceeds are $400 000 - $282 000 = $118 000.", "118000"),  # GSM8K's style
        ("It sold for 1 250 000 dollars", "1250000"),
        ("It sold for 1\u202f250\u00a0000 dollars", "1250000"),  # narrow and no-break spaces
        ("a total of -1 000.5 points", "-1000.5"),
        ("rent is $1 000/month", "1000"),
        ("Answer: 1 000 dollars", "1000"),
        ("Answer: 2 1/2 hours", "2.5"),
        ("Answer: 1 000 1/2 hours", "1000.5"),
        ("Answer: 1 100/200", "1.5"),  # a mixed number, not 1100/200
        ("Answer: 2 3 4", "2"),  # a list: its first number
        ("we counted 2 3 4", "4"),
        ("the room holds 12 345", "12345"),
        ("by 16:30 250 people came", "250"),  # a time, not 30250
        ("the year 2023 100 people", "100"),  # no lead of four digits
        ("it is 0 500", "500"),  # no leading zero
        ("it is 1 0000", "0"),  # no group of four digits
    ],
)
def test_a_space_separates_thousands(reply: str, read: str) -> None:
    """GSM8K writes thousands with a space ("$400 000", "$118 000"): the number kind read
    "$118 000." as 0 and "1 000" as 1, while the math kind read "1 000" as 1000."""
    assert extract_answer(number_task(read), reply) == read


@pytest.mark.parametrize(
    "written",
    ["1 000", "1 000 000", "-1 000", "1 000.5", "1 000 1/2", "1\u00a0000", "1\u202f000"],
)
def test_number_and_math_read_spaced_thousands_alike(written: str) -> None:
    """A no-break or thin space was no separator for either kind: math keyed "1\u00a0000" as
    0 yet judged it right against 1000."""
    key = normalize_answer(number_task(), written)
    assert key is not None and key == normalize_answer(math_task("0"), written)
    assert is_correct(number_task(key), written) and is_correct(math_task(key), written)
    assert extract_answer(math_task("0"), f"Answer: {written} dollars") == written
    assert not is_correct(math_task("0"), written) and not is_correct(math_task("1"), written)


@pytest.mark.parametrize("written", ["\\text{0.5}", "\\mathrm{0.5}", "\\textbf{1/2}"])
def test_a_number_in_a_text_wrapper_is_that_number(written: str) -> None:
    """math-verify parsed "\\text{0.5}" as a symbol named 0.5: keyed "0.5" beside the number
    0.5, yet judged wrong against a gold of 0.5 or \\frac{1}{2}."""
    for gold in ("0.5", "\\frac{1}{2}"):
        task = math_task(gold)
        assert normalize_answer(task, written) == normalize_answer(task, "0.5") == "0.5"
        assert is_correct(task, written)
    assert not is_correct(math_task("2"), written)


@pytest.mark.parametrize(
    ("reply", "read"),
    [
        ("Answer: 1/2.", "0.5"),
        ("So each friend gets 3/4.", "0.75"),
        ("Answer: -3/4.", "-0.75"),
        ("The ratio is 1/2.5", "2.5"),  # a decimal after the slash: no denominator of 2
    ],
)
def test_a_fraction_ending_a_sentence_is_that_fraction(reply: str, read: str) -> None:
    """The full stop after a fraction's denominator cancelled the fraction: "3/4." read as 3
    (its first number) or as 4 (the last), so a reply ending "3/4." was right for a gold of 4."""
    assert extract_answer(number_task(), reply) == read
    assert not is_correct(number_task("4"), extract_answer(number_task("4"), reply))
    math = math_task("0.5")  # math's scan reads numbers alike
    assert normalize_answer(math, extract_answer(math, reply)) == read


@pytest.mark.parametrize(
    ("reply", "read"),
    [
        ("Answer: 2 1/2", "2.5"),
        ("Answer: 1 1/2 hours", "1.5"),
        ("Answer: -3 1/4", "-3.25"),
        ("\\boxed{2 1/2}", "2.5"),
        ("\\boxed{2\\frac{1}{2}}", "2.5"),
        ("Answer: 2 \\frac{1}{2}", "2.5"),
        ("So the show lasts 3 1/2 hours.", "3.5"),
        ("Answer: a 3 1/2-inch nail", "3.5"),
        ("Answer: 4 3/4 of them", "4.75"),  # GSM8K writes a number, a space, a fraction so
        ("Answer: 3 1/2 - 2 = 1 1/2", "1.5"),
        # Not mixed numbers: no space, an improper fraction, a hyphen (GSM8K's subtraction,
        # "4-1.5"), a line break, a time's minutes, a decimal whole, a list.
        ("Answer: 11/2", "5.5"),
        ("Answer: 2 3/2", "2"),
        ("Answer: 2-1/2", "2"),
        ("They had 5000\n3/5 of them", "0.6"),
        ("By 16:00 2/3 of them had voted", "2/3"),
        ("Answer: 2.5 1/2", "2.5"),
        ("Answer: 2 3 4", "2"),
    ],
)
def test_a_mixed_number_answer_is_its_whole_plus_its_fraction(reply: str, read: str) -> None:
    """A mixed number "2 1/2" read as 2 (its first number) after a label, as 1/2 (the last)
    in a scan: a reply of two and a half hours was right for a gold of 2."""
    assert extract_answer(number_task(), reply) == read
    assert normalize_answer(number_task(), read) == read


def test_a_mixed_number_is_judged_as_one_number() -> None:
    assert is_correct(number_task("2.5"), extract_answer(number_task(), "Answer: 2 1/2"))
    assert not is_correct(number_task("2"), extract_answer(number_task(), "Answer: 2 1/2"))
    assert not is_correct(number_task("1"), extract_answer(number_task(), "It took 1 1/2 hours"))
    assert answers_equivalent(number_task(), "2 1/2", "2.5")
    assert answers_equivalent(number_task(), "5/2", "$2 1/2")


@pytest.mark.parametrize(
    ("reply", "read"),
    [
        ("Answer: 2½", "2.5"),
        ("Answer: 2 ½ hours", "2.5"),
        ("Answer: ½", "0.5"),
        ("Answer: −½", "-0.5"),
        ("Answer: 12¾ cups", "12.75"),
        ("The two friends ate ¾ of their pizzas.", "0.75"),
        ("Answer: 1⁄3", "1/3"),  # a fraction slash
    ],
)
def test_a_unicode_fraction_is_its_value(reply: str, read: str) -> None:
    """A vulgar fraction "½" was no number and "2½" read as 2: a reply of two and a half was
    right for a gold of 2."""
    assert extract_answer(number_task(), reply) == read
    assert not is_correct(number_task("2"), extract_answer(number_task("2"), reply))


def test_a_unicode_mixed_number_is_judged_as_its_value() -> None:
    assert is_correct(math_task("\\frac{5}{2}"), "2½")
    assert normalize_answer(math_task("2"), "½") == "0.5"
    assert not is_correct(math_task("2"), "2½")
    assert answers_equivalent(number_task(), "2½", "2 1/2")


@pytest.mark.parametrize(
    ("reply", "read", "key"),
    [
        ("Answer: 2 1/2 hours", "2 1/2", "2.5"),
        ("Answer: 2½ hours", "2½", "2.5"),
        ("Answer: 2 ½ hours", "2 ½", "2.5"),
        ("Answer: -3 1/4 (since -13/4)", "-3 1/4", "-3.25"),
    ],
)
def test_a_math_mixed_number_before_words_is_the_answer(reply: str, read: str, key: str) -> None:
    """A mixed number before prose was no "number then words": math-verify read the whole
    "2 1/2 hours" as 1.5 and "2½ hours" as 2."""
    task = math_task("\\frac{5}{2}")
    answer = extract_answer(task, reply)
    assert answer == read
    assert normalize_answer(task, answer) == key
    assert is_correct(task, answer) == (key == "2.5")


@pytest.mark.parametrize(
    ("reply", "number", "math"),
    [
        ("Answer: 1e3", "1000", "1e3"),
        ("Answer: 1E3", "1000", "1E3"),
        ("Answer: 1.5e-3", "0.0015", "1.5e-3"),
        ("Answer: -2.5e+2 dollars", "-250", "-2.5e+2"),
        ("Answer: $1.5e3$", "1500", "1.5e3"),
        ("\\boxed{4e2}", "400", "4e2"),
        ("We get 3 terms, so the total is 1e3.", "1000", "1000"),
    ],
)
def test_e_notation_is_its_value(reply: str, number: str, math: str) -> None:
    """ "Answer: 1e3" read as 1 and "1.5e-3" as 1.5 for a number task, while math-verify keyed
    "1e3" as 3e and "1.5e-3" as 1.5e - 3: none was right against 1000 or 0.0015."""
    assert extract_answer(number_task(), reply) == number
    assert extract_answer(math_task("0"), reply) == math
    assert normalize_answer(math_task("0"), math) == number
    for task in (number_task(number), math_task(number)):
        assert is_correct(task, extract_answer(task, reply))
        assert not is_correct(math_task("1"), extract_answer(math_task("1"), reply))
    assert answers_equivalent(math_task("0"), math, number)


@pytest.mark.parametrize(
    ("reply", "number", "math_key"),
    [
        # No e-notation: Euler's number, a symbol, so no number answer (not its coefficient).
        ("Answer: 2e", None, "2*E"),
        ("Answer: $e^{3}$", None, "exp(3)"),
        ("Answer: 2e - 3", None, "-3 + 2*E"),
        # Neither its mantissa nor its power alone: an exponent that is no integer, one beyond
        # what a power may be (as 10^{40} is), a power of e-notation.
        ("Answer: 1e3.5", None, None),
        ("Answer: 1e40", None, None),
        ("Answer: 1e100", None, "1e100"),
        ("Answer: 1e3^2", None, None),
    ],
)
def test_what_is_no_e_notation_or_no_number(
    reply: str, number: str | None, math_key: str | None
) -> None:
    assert extract_answer(number_task(), reply) == number
    answer = extract_answer(math_task("0"), reply)
    if math_key is not None:
        assert normalize_answer(math_task("0"), answer) == math_key
    for gold in ("1", "1000", "3"):
        assert not is_correct(math_task(gold), answer)


def test_math_verify_reads_e_notation_as_a_number() -> None:
    """Inside an expression too: "x = 1e3" is x = 1000, not x = 3e."""
    assert normalize_answer(math_task("0"), "x = 1e3") == "1000"
    assert is_correct(math_task("1000"), "x = 1e3")
    assert is_correct(math_task("2 \\times 10^{3}"), "2e3")


@pytest.mark.parametrize(
    "reply",
    [
        "Answer: 1,2",
        "Answer: 1,23",
        "Answer: -2,3",
        "Answer: 1,2,3",
        "Answer: 1,0000",
        "Answer: 1,000,00",
        "Answer: 1,00,000",
        "Answer: 1 000,5",
        "Answer: $1{,}5$",
        "Answer: 1.5,2",
        "\\boxed{1,5}",
        "Answer: 5 + 3 = 1,2",
        "Answer: 1,5 kg",
        "We get 7 and the point (3,4).",
    ],
)
def test_a_comma_between_other_than_thousands_makes_no_number(reply: str) -> None:
    """ "Answer: 1,2" read as 1, "-2,3" as -2 and "1,0000" as 1000: a decimal comma or a list
    of two numbers, silently its first number (and "5 + 3 = 1,2" as 5)."""
    task = number_task("1")
    assert extract_answer(task, reply) is None
    for gold in ("1", "2", "1.2", "3", "4", "5", "7", "1000", "10000", "100000"):
        assert not is_correct(number_task(gold), extract_answer(number_task(gold), reply))


@pytest.mark.parametrize(
    ("reply", "read"),
    [
        ("Answer: 1,234", "1234"),
        ("Answer: 1,000,000 dollars", "1000000"),
        ("Answer: $1,234.50", "1234.5"),
        ("Answer: $1{,}000$", "1000"),
        ("Answer: 12, 13", "12"),  # a comma and a space: a list, read as "2 3 4" is
        ("The point (1,2) is far; we walk 7.", "7"),
    ],
)
def test_a_comma_between_thousands_separates_them(reply: str, read: str) -> None:
    assert extract_answer(number_task(), reply) == read


def test_math_keeps_a_comma_as_math_verify_reads_it() -> None:
    task = math_task("\\{1, 2\\}")
    assert (
        extract_answer(task, "Answer: 1,2") == "1,2" and normalize_answer(task, "1,2") == "{1, 2}"
    )
    assert extract_answer(task, "The solutions are 1 and 3,2.") is None  # the scan: no number
