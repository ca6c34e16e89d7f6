"""A reasoning model's ``<think>`` blocks are blanked before any domain reads a reply.

The reasoning holds drafts the model did not commit to: the CodeGen judge's first impression,
a GovSim catch it rejected, a WhoDunit accusation it was still weighing when the reply was
cut off. Blanking keeps every offset, so decision spans still point into the raw reply.
"""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from byzllm.agents._thinking import after_thinking, blank_thinking
from byzllm.agents.codegen import read_code, read_feedback, read_ratings, read_tests
from byzllm.agents.consensus._parse import read_confidence, read_score, read_yes_probability
from byzllm.agents.govsim import read_catch
from byzllm.agents.whodunit import AgentView, read_action

_PIECES = st.lists(
    st.one_of(
        st.sampled_from(["<think>", "</think>", "<THINK>", "</Think>", "think>", "<think", "\n"]),
        st.text(max_size=12),
    ),
    max_size=20,
).map("".join)


@given(_PIECES)
def test_blanking_keeps_length_line_breaks_and_the_text_outside_blocks(text: str) -> None:
    out = blank_thinking(text)
    assert len(out) == len(text)
    assert [i for i, c in enumerate(out) if c == "\n"] == [
        i for i, c in enumerate(text) if c == "\n"
    ]
    for kept, raw in zip(out, text, strict=True):
        assert kept in (raw, " ")  # only ever blanked, never changed
    assert not re.search(r"<(/?)think>", out, re.IGNORECASE)


@given(st.text(max_size=200).filter(lambda t: "think>" not in t.lower()))
def test_a_reply_without_tags_is_unchanged(text: str) -> None:
    assert blank_thinking(text) == text


def test_blocks_closed_open_and_implicit() -> None:
    assert blank_thinking("a<think>x</think>b").split() == ["a", "b"]
    # The prompt opened the block: the reply holds only the closing tag.
    assert blank_thinking("7? no...</think>5").strip() == "5"
    # Cut off while thinking: nothing after the open tag was decided.
    assert blank_thinking("a <think>b").strip() == "a"
    assert blank_thinking("a </think> b </think> c").split() == ["b", "c"]


def test_a_1mb_reply_is_read_in_linear_time() -> None:
    text = "<think>" * 100_000 + "x" * 300_000 + "</think>" * 50_000
    assert len(blank_thinking(text)) == len(text)


def test_codegen_judge_reads_the_judgement_after_its_draft() -> None:
    judge = (
        "<think>\nFirst impression: Solution 1: CORRECT, Solution 2: WRONG. Best: 1.\n"
        "Hmm, wait: solution 1 fails on the empty list.\n</think>\n"
        "Solution 1: WRONG - crashes on []\nSolution 2: CORRECT\nBest: 2\n"
    )
    parsed = read_feedback(judge, 2).value
    assert (parsed.verdicts, parsed.pick) == ({1: False, 2: True}, 2)
    assert all(judge.index("</think>") < start for start, _ in parsed.spans)


def test_codegen_tests_code_and_ratings_skip_the_reasoning() -> None:
    tests = "<think>\nassert add(1, 2) == 4 ? no.\n</think>\n```python\nassert add(1, 2) == 3\n```"
    assert read_tests(tests).value.tests == ("assert add(1, 2) == 3",)
    code = "<think>```python\ndef add(a, b):\n    return a - b\n```</think>\n```python\n"
    code += "def add(a, b):\n    return a + b\n```"
    assert "a + b" in read_code(code, "add").value
    assert (
        read_ratings("<think>Feedback helpfulness: 1</think> Feedback helpfulness: 4").value[0] == 4
    )


def test_codegen_tests_in_code_blocks_leave_prose_asserts_out() -> None:
    prose = (
        "A common mistake would be to expect this:\nassert add(2, 2) == 5\nThe correct tests:\n"
        "```python\nassert add(2, 2) == 4\nassert add(0, 0) == 0\n```"
    )
    assert read_tests(prose).value.tests == ("assert add(2, 2) == 4", "assert add(0, 0) == 0")
    # Without a code block the whole reply is read, as before.
    assert read_tests("assert add(2, 2) == 4\nassert add(0, 0) == 0").value.tests == (
        "assert add(2, 2) == 4",
        "assert add(0, 0) == 0",
    )


def test_codegen_test_spans_are_character_offsets() -> None:
    text = 'assert f("naïve café") == "NAÏVE CAFÉ"\nassert f("abc") == "ABC"'
    parsed = read_tests(text).value
    assert [text[s:e] for s, e in parsed.spans] == ['"NAÏVE CAFÉ"', '"ABC"']


def test_govsim_catch_after_the_reasoning() -> None:
    reply = (
        "<think>\nGreedy plan would be Answer: 40 tons, but that risks collapse.\n</think>\n"
        "To keep the lake healthy I will catch 10 tons this month."
    )
    reading = read_catch(reply, stock=100)
    assert reading.value.amount == 10
    start, end = reading.value.span
    assert reply[start:end] == "10"
    assert read_catch("<think>Answer: 40 tons, or", stock=100).fell_back


def test_whodunit_move_drafted_while_thinking_is_no_move() -> None:
    cut_off = '<think>\nI could accuse now: {"action": 3, "character": 2} but better ask first'
    assert read_action(cut_off, _whodunit_view()).fell_back


@given(_PIECES, st.integers(min_value=0, max_value=30))
def test_after_thinking_is_a_prefix_of_the_blanked_reply(text: str, limit: int) -> None:
    blanked = blank_thinking(text)
    window = after_thinking(text, limit)
    assert blanked.startswith(window)
    assert len(window.lstrip()) == min(limit, len(blanked.lstrip()))


def _whodunit_view() -> AgentView:
    return AgentView(
        game_id="g",
        variant="asym",
        role="accuser",
        name="Beth",
        partners=("Alex",),
        attributes={"hat": ("red", "blue")},
        n_suspects=4,
        culprit_description={"hat": "red"},
        turn=1,
        max_turns=10,
    )


def test_a_long_reasoning_does_not_cut_off_the_decision() -> None:
    # Parsers read a bounded number of characters; they counted the thinking among them, so
    # 24,000 characters of it (about 6,000 tokens) left a GovSim catch unread ("the reply was
    # all reasoning"), and 105,000 left the score, the judge, the code and the tests unread
    # and a WhoDunit move refused as too long.
    def thought(chars: int) -> str:
        return (
            "<think>\n" + ("Let me weigh it again. " * (chars // 23 + 1))[:chars] + "\n</think>\n"
        )

    catch = thought(24_000) + "Answer: 5 tons"
    reading = read_catch(catch, stock=100)
    assert not reading.fell_back and reading.value.amount == 5
    start, end = reading.value.span
    assert catch[start:end] == "5"
    long = thought(105_000)
    assert read_score(long + "0.9").value == 0.9
    assert read_confidence(long + "Confidence: 0.7").value == 0.7
    assert read_yes_probability(None, long + "Yes").value == 1.0
    judge = long + "Solution 1: WRONG\nBest: 2"
    feedback = read_feedback(judge, 2).value
    assert (feedback.verdicts, feedback.pick) == ({1: False}, 2)
    assert [judge[s:e] for s, e in feedback.spans] == ["WRONG", "2"]
    assert (
        "a + b" in read_code(long + "```python\ndef add(a, b):\n    return a + b\n```", "add").value
    )
    tests = long + "```python\nassert add(1, 2) == 3\n```"
    assert read_tests(tests).value.tests == ("assert add(1, 2) == 3",)
    assert read_ratings(long + "Feedback helpfulness: 4").value == (4, None)
    move = thought(70_000) + '{"thoughts": "ask", "action": 3, "character": 2}'
    parsed = read_action(move, _whodunit_view())
    assert not parsed.fell_back and parsed.value.action.character == 2
    assert [move[s:e] for s, e in parsed.value.decision_spans] == ["3", "2"]
    # What follows the reasoning is still bounded.
    assert read_action(thought(10) + "x" * 70_000, _whodunit_view()).reason.startswith(
        "Your reply was too long (70000"
    )
