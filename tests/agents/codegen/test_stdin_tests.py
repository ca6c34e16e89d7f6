"""The tester's tests of a program that reads standard input (LiveCodeBench's stdin problems):
input / expected-output cases, how the tester is asked for them, how they are read, and the
simulated tester's."""

from __future__ import annotations

import asyncio
import time

from hypothesis import given, settings
from hypothesis import strategies as st

from byzllm.agents.codegen import (
    MAX_TESTS,
    CodeGenSimParams,
    ReviewView,
    SimulatedTester,
    Solution,
    format_stdin_test,
    read_stdin_tests,
    render_coder_prompt,
    render_tester_prompt,
    visible_stdin_examples,
)
from byzllm.agents.codegen import CoderView as View
from byzllm.agents.codegen import TestSuite as Suite
from byzllm.agents.codegen._parse import MAX_CASE_CHARS
from byzllm.tasks import IOTest

# An AtCoder statement as LiveCodeBench ships it (its samples' lines end in CRLF).
STATEMENT = (
    "### Second largest\n\nYou are given N distinct integers. Print the position of the second "
    "largest.\n\nConstraints\n\n- 2 \\leq N \\leq 100\n\nSample Input 1\n\n4\r\n8 2 5 1\n\n"
    "Sample Output 1\n\n3\r\n\nThe second largest element is A_3.\n\nSample Input 2\n\n"
    "8\r\n1 2 3 4 5 10 9 11\n\nSample Output 2\n\n6\n\n"
    "Read the input from standard input and print the answer."
)
PROGRAM = "n = int(input())\na = list(map(int, input().split()))\nprint(a.index(sorted(a)[-2]) + 1)"


def _view(prompt: str = STATEMENT, *, stdin: bool = True) -> ReviewView:
    solution = Solution(coder="c", role="Programmer", round=1, code=PROGRAM)
    return ReviewView(
        problem_id="abc/2nd", prompt=prompt, round=2, solutions=(solution,), stdin=stdin
    )


def _text(messages: list[dict[str, str]]) -> str:
    return "\n".join(m["content"] for m in messages)


def test_the_tester_of_a_stdin_program_is_asked_for_inputs_and_outputs() -> None:
    text = _text(render_tester_prompt(_view()))  # type: ignore[arg-type]
    assert "assert" not in text  # a program that reads stdin has no function to assert on
    assert "Input:\n```\n<exactly what the program reads>\n```\nExpected output:\n```" in text
    assert "reads its input from standard input" in text and "n = int(input())" in text
    # The format the prompt shows is the one the reader reads.
    shown = read_stdin_tests(text[text.index("Input:") :]).value.cases
    assert [c.output for c in shown] == ["<exactly what it should print>"]


def test_cases_are_read_with_the_spans_of_their_outputs() -> None:
    reply = (
        "Edge cases first.\n\n**Test 1 input:**\n```\n2\n1 2\n```\n**Expected output:**\n"
        "```text\n1\n```\n\nInput 2:\n```\n3\n5 9 7\n```\n### Output 2\n```\n3\n```\n"
        "```python\nassert main() == 3\n```\n"  # code, not a case: ignored
        "Expected output:\n```\n9\n```\n"  # an output without its input: dropped
        "Input:\n```\n4\n1 2 3 4\n```\n"  # an input without its output: dropped
    )
    parsed = read_stdin_tests(reply)
    assert not parsed.fell_back
    assert parsed.value.cases == (
        IOTest(input="2\n1 2\n", output="1"),
        IOTest(input="3\n5 9 7\n", output="3"),
    )
    assert parsed.value.tests == () and parsed.value.dropped == 2
    assert [reply[a:b] for a, b in parsed.value.spans] == ["1", "3"]


def test_replies_without_a_case_fall_back_with_a_reason() -> None:
    for reply, why in [
        ("", "the reply is empty"),
        ("```python\nassert f(1) == 2\n```", "no test case"),
        ("Input: 1 2\nExpected output: 3", "no test case"),  # no blocks: inputs are ambiguous
        ("Input:\n```\n1 2\n```\nInput:\n```\n3 4\n```", "(2 incomplete or too long)"),
    ]:
        parsed = read_stdin_tests(reply)
        assert parsed.fell_back and why in parsed.reason and parsed.value.cases == ()


def test_cases_are_capped_in_number_and_length() -> None:
    many = "\n".join(format_stdin_test(IOTest(input=f"{i}", output=f"{i}")) for i in range(25))
    parsed = read_stdin_tests(many).value
    assert len(parsed.cases) == MAX_TESTS and parsed.dropped == 5
    long = format_stdin_test(IOTest(input="1" * (MAX_CASE_CHARS + 1), output="1"))
    assert read_stdin_tests(long).value.dropped == 1


def test_a_case_in_the_reasoning_is_not_read() -> None:
    thought = "<think>Input:\n```\n1\n```\nExpected output:\n```\n5\n```</think>"
    reply = thought + "\n" + format_stdin_test(IOTest(input="1", output="2"))
    parsed = read_stdin_tests(reply).value
    assert [c.output for c in parsed.cases] == ["2"]
    assert [reply[a:b] for a, b in parsed.spans] == ["2"]


# Lines that cannot be taken for a fence: what a case's input and output hold.
_LINE = st.text(st.characters(blacklist_characters="\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"))
_TEXT = (
    st.lists(_LINE.filter(lambda s: not s.lstrip().startswith(("```", "~~~"))), max_size=4)
    .map("\n".join)
    .filter(lambda s: not s.endswith("\n"))  # a block's text ends with its last line
)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(_TEXT.filter(bool), _TEXT), max_size=MAX_TESTS), _LINE)
def test_written_cases_are_read_back(cases: list[tuple[str, str]], prose: str) -> None:
    written = [IOTest(input=i, output=o) for i, o in cases]
    reply = prose + "\n\n" + "\n\n".join(format_stdin_test(c) for c in written)
    parsed = read_stdin_tests(reply)
    assert parsed.fell_back == (not written)
    read = parsed.value.cases
    assert [c.input for c in read] == [c.input + "\n" for c in written]
    assert [c.output for c in read] == [c.output for c in written]
    assert [reply[a:b] for a, b in parsed.value.spans] == [c.output for c in written if c.output]


_PIECES = st.sampled_from(
    [
        "```",
        "~~~",
        "```text",
        "Input:",
        "**Input 3:**",
        "Expected output:",
        "stdout",
        "<think>",
        "</think>",
        "\n",
        "\r\n",
        " ",
        "1 2",
        "x" * 300,
    ]
)


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(max_size=3000), st.lists(_PIECES, max_size=300).map("\n".join)))
def test_garbage_and_adversarial_replies_never_raise(text: str) -> None:
    parsed = read_stdin_tests(text)
    value = parsed.value
    assert parsed.fell_back == (not value.cases) and len(value.cases) <= MAX_TESTS
    assert all(len(c.input) <= MAX_CASE_CHARS + 1 for c in value.cases)
    # A program reads whole lines: an input ends with a newline, unless it is empty (no input).
    assert all(c.input == "" or c.input.endswith("\n") for c in value.cases)
    assert all(c.testtype == "stdin" for c in value.cases)
    outputs = [c.output.splitlines() for c in value.cases]
    for a, b in value.spans:
        assert 0 <= a < b <= len(text)
        assert text[a:b].splitlines() in outputs  # each span is one expected output


def test_one_megabyte_replies_are_read_and_bounded() -> None:
    case = format_stdin_test(IOTest(input="1", output="2")) + "\n"
    for huge in [
        "`" * 1_000_000,
        "Input:\n```\n" + "1 2\n" * 250_000,  # an unclosed block runs to the end
        case * 30_000,
        "Input:\n" * 150_000,
        ("Expected output:\n```\n```\n") * 40_000,
    ]:
        start = time.perf_counter()
        parsed = read_stdin_tests(huge)
        assert time.perf_counter() - start < 3.0
        assert len(parsed.value.cases) <= MAX_TESTS


def test_the_coders_read_the_cases() -> None:
    suite = Suite(cases=[IOTest(input="2\n1 2\n", output="1\n")])
    view = View(problem_id="p", prompt=STATEMENT, round=2, seat=0, tests=suite)
    text = _text(render_coder_prompt(view, "Programmer"))  # type: ignore[arg-type]
    assert "Unit tests:\nInput:\n```\n2\n1 2\n```\nExpected output:\n```\n1\n```" in text


def test_the_samples_of_a_statement() -> None:
    assert visible_stdin_examples(STATEMENT) == [
        IOTest(input="4\n8 2 5 1\n", output="3\n"),
        IOTest(input="8\n1 2 3 4 5 10 9 11\n", output="6\n"),
    ]
    assert visible_stdin_examples("Sample Input 1\n\n5\n\nno output follows") == []
    assert visible_stdin_examples("def f(x):\n    '''>>> f(1)\n    2'''") == []


def test_the_simulated_tester_writes_cases_from_the_samples() -> None:
    clean = CodeGenSimParams(tester_error_rate=0.0, unsound_test_rate=0.0)
    suite = asyncio.run(SimulatedTester(clean).write_tests(_view()))
    assert suite.tests == [] and sorted(suite.cases, key=lambda c: c.output) == [
        IOTest(input="4\n8 2 5 1\n", output="3\n"),
        IOTest(input="8\n1 2 3 4 5 10 9 11\n", output="6\n"),
    ]
    assert suite.sim is not None and suite.sim.sound == [True, True]
    assert len(suite.distributions) == 2 and suite.simulated
    unsound = CodeGenSimParams(tester_error_rate=0.0, unsound_test_rate=1.0)
    wrong = asyncio.run(SimulatedTester(unsound).write_tests(_view()))
    assert sorted(c.output for c in wrong.cases) == ["3#\n", "6#\n"]
    assert wrong.sim is not None and wrong.sim.sound == [False, False]
    capped = CodeGenSimParams(tests_per_round=1)
    assert len(asyncio.run(SimulatedTester(capped).write_tests(_view())).cases) == 1
    # Without samples there is nothing to test; a function's problem keeps its asserts.
    assert asyncio.run(SimulatedTester(clean).write_tests(_view("Print 1."))).size == 0
    doc = 'def add(a, b):\n    """Add.\n    >>> add(1, 2)\n    3\n    """\n'
    plain = _view(doc, stdin=False).model_copy(update={"entry_point": "add"})
    asserts = asyncio.run(SimulatedTester(clean).write_tests(plain))
    assert asserts.tests == ["assert add(1, 2) == 3"] and asserts.cases == []


def test_an_empty_input_block_is_no_input_not_an_empty_line() -> None:
    parsed = read_stdin_tests("Input:\n```\n```\nExpected output:\n```\n42\n```")
    assert not parsed.fell_back
    assert [(c.input, c.output) for c in parsed.value.cases] == [("", "42")]
