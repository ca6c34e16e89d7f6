"""The CodeGen reply readers: examples, and properties on garbage, huge and adversarial text."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from byzllm.agents.codegen import (
    MAX_TESTS,
    code_blocks,
    read_code,
    read_feedback,
    read_ratings,
    read_tests,
)

CODE = "def add(a, b):\n    return a + b"


def test_code_from_block_prefers_the_entry_point() -> None:
    reply = (
        f"Here:\n```python\nimport math\n```\nand\n```python\n{CODE}\n```\nFeedback helpfulness: 4"
    )
    assert read_code(reply, "add").value == CODE
    assert read_code(f"```\n{CODE}\n", "add").value == CODE  # unclosed block runs to the end


def test_code_without_block() -> None:
    assert read_code(CODE, "add").value == CODE  # bare Python defining the function
    missing = read_code("I think you should add the numbers.", "add")
    assert missing.fell_back and missing.value == "" and "no code block" in missing.reason


def test_ratings() -> None:
    text = "```python\nx\n```\nFeedback helpfulness: 4/5\nTests helpfulness: 2"
    assert read_ratings(text).value == (4, 2)
    assert read_ratings("no ratings here").fell_back
    assert read_ratings("Feedback helpfulness: 9").fell_back  # out of 1-5


def test_feedback_verdicts_pick_and_spans() -> None:
    text = (
        "Solution 1: CORRECT - fine\nSolution 2: WRONG, off by one\n**Solution 3**: wrong\nBest: 1"
    )
    parsed = read_feedback(text, 3)
    assert not parsed.fell_back
    assert parsed.value.verdicts == {1: True, 2: False, 3: False}
    assert parsed.value.pick == 1
    words = [text[a:b] for a, b in parsed.value.spans]
    assert words == ["CORRECT", "WRONG", "wrong", "1"]


def test_feedback_out_of_range_and_garbage() -> None:
    assert read_feedback("Solution 9: CORRECT\nBest: 7", 4).fell_back
    assert read_feedback("", 4).fell_back


def test_tests_keep_valid_asserts_and_expected_spans() -> None:
    text = (
        "```python\nassert add(1, 2) == 3\nassert add(0, 0) ==\n  assert add(-1, 1) == 0\n"
        "print('x')\n```"
    )
    parsed = read_tests(text)
    assert parsed.value.tests == ("assert add(1, 2) == 3", "assert add(-1, 1) == 0")
    assert parsed.value.dropped == 1
    assert [text[a:b] for a, b in parsed.value.spans] == ["3", "0"]
    assert read_tests("no tests").fell_back


def test_tests_are_capped() -> None:
    text = "\n".join(f"assert f({i}) == {i}" for i in range(MAX_TESTS + 5))
    parsed = read_tests(text)
    assert len(parsed.value.tests) == MAX_TESTS and parsed.value.dropped == 5


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=3000), st.integers(min_value=0, max_value=6))
def test_readers_never_raise_on_garbage(text: str, n: int) -> None:
    code = read_code(text, "f")
    assert isinstance(code.value, str) and code.fell_back == (code.value == "" or code.fell_back)
    feedback = read_feedback(text, n)
    assert all(1 <= k <= n for k in feedback.value.verdicts)
    assert feedback.value.pick is None or 1 <= feedback.value.pick <= n
    for a, b in feedback.value.spans:
        assert 0 <= a < b <= len(text)
    tests = read_tests(text)
    assert len(tests.value.tests) <= MAX_TESTS
    assert all(t.startswith("assert") for t in tests.value.tests)
    ratings = read_ratings(text)
    assert all(r is None or 1 <= r <= 5 for r in ratings.value)
    assert isinstance(code_blocks(text), list)


_PIECES = st.sampled_from(
    [
        "```",
        "```python",
        "~~~",
        "\n",
        "assert ",
        "==",
        "Solution 1: ",
        "WRONG",
        "Best: ",
        "2",
        "def f(",
        "):",
        "    return 1",
        "helpful",
        "Feedback: ",
        "5",
        "(",
        "[",
        '"""',
        "\\",
        "\x00",
    ]
)


@settings(max_examples=150, deadline=None)
@given(st.lists(_PIECES, max_size=200))
def test_readers_on_adversarial_fragments(pieces: list[str]) -> None:
    text = "".join(pieces)
    parsed = read_tests(text)
    for test, (a, b) in zip(parsed.value.tests, parsed.value.spans, strict=True):
        assert text[a:b] in test
    read_code(text, "f")
    read_feedback(text, 4)
    read_ratings(text)


def test_one_megabyte_replies_are_read_and_bounded() -> None:
    huge = [
        "`" * 1_000_000,
        "```python\n" + "x = 1\n" * 170_000,
        "Solution 1: " * 90_000,
        "assert (" * 130_000,
        ("(" * 200 + "\n") * 5000,
    ]
    for text in huge:
        code = read_code(text, "f")
        assert len(code.value) <= 50_000
        read_feedback(text, 4)
        read_tests(text)
        read_ratings(text)


def test_runs_of_blanks_are_read_in_one_pass() -> None:
    """Adjacent optional blanks backtracked against each other: a judge's reply with 32,000
    newlines after "Solution 1" took 40 s (100,000, the longest read, many minutes)."""
    for reply in ("Solution 1\n" + "\n" * 100_000, "best: " + " " * 100_000):
        assert read_feedback(reply, 3).fell_back
    read = read_feedback("Solution # 2 **:** correct\n**Best:** solution #2", 3).value
    assert read.verdicts == {2: True} and read.pick == 2


def test_the_block_defining_the_entry_point_not_a_longer_name() -> None:
    """ "def add" is in "def add_all": the helper block after the solution was chosen."""
    reply = "```python\ndef add(a, b):\n    return a + b\n```\nhelper:\n```python\n"
    reply += "def add_all(xs):\n    return sum(xs)\n```"
    assert read_code(reply, "add").value.startswith("def add(a, b)")
