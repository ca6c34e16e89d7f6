"""The consensus parsers' fall-back flag and their hardening against control sequences and
markup debris (parse health)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from byzllm.agents.consensus import (
    DEFAULT_CONFIDENCE,
    DEFAULT_SCORE,
    CallContext,
    LLMAgent,
    clean_reply,
    parse_confidence,
    parse_refined_answer,
    parse_score,
    read_answer,
    read_confidence,
    read_refined_answer,
    read_score,
)
from byzllm.agents.consensus._parse import MAX_REPLY_CHARS
from byzllm.llm import ChatMessage, ChatModel, Completion, GenerateConfig, Usage
from byzllm.tasks import Task

NUMBER = Task(id="n", question="Ada has 3 apples and buys 4. How many?", answer="7", kind="number")
MATH = Task(id="m", question="Solve $|x| \\le 2$.", answer="[-2, 2]", kind="math")
BOOLQ = Task(
    id="b",
    question="Is the sky blue?\n\nAnswer format: true/false",
    answer="true",
    kind="boolean",
    choices=("true", "false"),
)
MEGABYTE = 1_000_000

# --- strategies ----------------------------------------------------------------------------

# Text that holds no number token and cannot turn a following token into debris: no ASCII
# digit, no control character (ANSI remnants), no square bracket.
_PLAIN = st.text(
    alphabet=st.characters(
        exclude_categories=("Cc", "Cs"), exclude_characters="0123456789[\x1b\x9b"
    ),
    max_size=200,
)
_NO_DIGITS = st.text(
    alphabet=st.characters(exclude_characters="0123456789"),
    max_size=400,
)
_PARAMS = st.lists(st.integers(min_value=0, max_value=999), max_size=4).map(
    lambda xs: ";".join(str(x) for x in xs)
)
# Escape sequences carrying digits: SGR colours, cursor moves, OSC titles, ...
_COMPLETE_ESCAPE = st.one_of(
    st.builds(lambda p, f: f"\x1b[{p}{f}", _PARAMS, st.sampled_from("mHJKABCDfsu")),
    st.builds(lambda p: f"\x9b{p}m", _PARAMS),
    st.builds(lambda p: f"\x1b]0;{p}\x07", _PARAMS),
    st.builds(lambda p: f"\x1b]8;;{p}\x1b\\", _PARAMS),
    st.sampled_from(["\x1b(B", "\x1b7", "\x1b8", "\x00", "\x07", "\x7f", "\x85"]),
)
# ... and sequences cut off before their final byte (a truncated stream).
_ESCAPE = st.one_of(
    _COMPLETE_ESCAPE,
    st.builds(lambda p: f"\x1b[{p}", _PARAMS),
    st.builds(lambda p: f"\x1b]0;{p}", _PARAMS),
    st.just("\x1b"),
)


def _joined(escape: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.lists(st.one_of(escape, st.sampled_from([" ", "\n", "\t"])), max_size=12).map("".join)


_ANSI_ONLY = _joined(_ESCAPE)
_NUMBERS = st.lists(
    st.one_of(
        st.integers(min_value=-1000, max_value=1000).map(str),
        st.floats(min_value=-10, max_value=10, allow_nan=False).map(lambda v: f"{v:.3f}"),
    ),
    min_size=1,
    max_size=6,
)


# --- the flag, exactly ---------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(
    reply=st.one_of(
        st.text(max_size=400), st.binary(max_size=200).map(lambda b: b.decode("latin-1"))
    )
)
def test_the_flag_means_the_default_and_the_plain_functions_agree(reply: str) -> None:
    for read, parse, default in (
        (read_score, parse_score, DEFAULT_SCORE),
        (read_confidence, parse_confidence, DEFAULT_CONFIDENCE),
    ):
        got = read(reply)
        assert got.value == parse(reply)
        assert 0.0 <= got.value <= 1.0
        if got.fell_back:
            assert got.value == default and got.reason
        else:
            assert not got.reason
            assert any(c.isdigit() and c.isascii() for c in clean_reply(reply))


@settings(max_examples=200, deadline=None)
@given(reply=_NO_DIGITS)
def test_no_ascii_digit_falls_back(reply: str) -> None:
    assert read_score(reply).fell_back
    assert read_confidence(reply).fell_back


@settings(max_examples=300, deadline=None)
@given(
    prefix=_PLAIN,
    value=st.floats(min_value=-5, max_value=5, allow_nan=False),
    suffix=st.text(max_size=200),
)
def test_a_number_token_is_read_and_never_flagged(prefix: str, value: float, suffix: str) -> None:
    written = f"{value:.4f}"
    got = read_score(f"{prefix} {written} {suffix}")
    assert not got.fell_back
    assert got.value == min(1.0, max(0.0, float(written)))


def test_reading_the_default_value_is_not_a_fall_back() -> None:
    assert read_score("0.5") == read_score("Score: 0.5")
    assert read_score("0.5").value == DEFAULT_SCORE and not read_score("0.5").fell_back
    assert read_confidence("Confidence: 0.5").fell_back is False


@pytest.mark.parametrize(
    "reply", ["True", "False", "true", "Yes.", "", "   ", "NaN", "inf", "٠٫٩", "I cannot say."]
)
def test_what_a_small_model_said_falls_back(reply: str) -> None:
    got = read_score(reply)
    assert got.fell_back and got.value == DEFAULT_SCORE


def test_huge_replies() -> None:
    assert read_score("0.7" + "z" * MEGABYTE) == read_score("0.7")
    assert read_score("z" * MAX_REPLY_CHARS + " 0.7").fell_back  # only the start is read
    assert read_score("\x1b[0m" * 200_000 + "0.7").fell_back  # the start is all escapes
    assert read_score("[" + ",".join(["1"] * 200_000)).fell_back
    assert read_refined_answer(NUMBER, "z" * MEGABYTE, "1").fell_back
    assert read_refined_answer(NUMBER, "z" * MEGABYTE + "\nAnswer: 12", "1").value == "12"


# --- control sequences ---------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(reply=_ANSI_ONLY)
def test_control_sequences_alone_fall_back(reply: str) -> None:
    assert read_score(reply).fell_back
    assert read_confidence(reply).fell_back
    assert read_answer(NUMBER, reply).fell_back
    assert read_refined_answer(NUMBER, reply, "keep").value == "keep"


@settings(max_examples=200, deadline=None)
@given(
    before=_joined(_COMPLETE_ESCAPE),
    after=_ANSI_ONLY,
    value=st.integers(min_value=0, max_value=100),
)
def test_a_coloured_number_is_read_without_its_escapes(before: str, after: str, value: int) -> None:
    # (digits right after a cut-off "\x1b[" are that sequence's parameters: not tested here)
    number = f"{value / 100:.2f}"
    got = read_score(f"{before}{number}{after}")
    assert not got.fell_back and got.value == float(number)
    assert read_answer(NUMBER, f"Answer: {before}{value}{after}").value == str(value)


def test_the_escape_of_the_issue() -> None:
    assert read_score("\x1b[31m\x1b[0m").fell_back  # was 1.0, from the escape's digits
    assert clean_reply("\x1b[31m0.8\x1b[0m") == " 0.8 "
    assert clean_reply("line\tone\nline two\r\n") == "line\tone\nline two\r\n"


# --- markup debris --------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(numbers=_NUMBERS, closed=st.booleans(), tail=st.sampled_from(["", ",", ", ", ",\n"]))
def test_bracketed_lists_are_debris(numbers: list[str], closed: bool, tail: str) -> None:
    body = ",".join(numbers)
    if closed and len(numbers) == 1:
        return  # "[0.9]" is a number in brackets, read as usual
    reply = f"[{body}]" if closed else f"[{body}{tail}"
    assert read_score(reply).fell_back, reply
    assert read_answer(NUMBER, reply).fell_back, reply


@pytest.mark.parametrize(
    ("reply", "score", "fell_back"),
    [
        ("[1,2,", DEFAULT_SCORE, True),  # the issue: was 1.0
        ("[1, 2]", DEFAULT_SCORE, True),
        ("[[0.9]]", DEFAULT_SCORE, True),
        ("[31m0.4", DEFAULT_SCORE, True),  # an escape that lost its ESC: debris to the line end
        ("[31m\nScore: 0.4", 0.4, False),  # ... only to the end of its line
        ("[0.9]", 0.9, False),
        ("[Score: 0.8]", 0.8, False),
        ('{"score": 0.9}', 0.9, False),
        ("<b>0.9</b>", 0.9, False),
        ("<h1>Score</h1> 0.3", 0.3, False),  # "h1" is not a number
        ("&#49;", DEFAULT_SCORE, True),
        ("gpt4 says 0.3", 0.3, False),
        ("v1.2.3", DEFAULT_SCORE, True),
        ("\\033", DEFAULT_SCORE, True),
        ("Score: 1.0", 1.0, False),  # the documented cases stand
        ("0.85/1", 0.85, False),
        ("85%", 1.0, False),
        ("-0.3", 0.0, False),
        (".5", 0.5, False),
        ("Step 1: solve ... 0.2", 1.0, False),  # kept: the paper's first number
        ("1e-3", 1.0, False),
    ],
)
def test_score_rule(reply: str, score: float, fell_back: bool) -> None:
    got = read_score(reply)
    assert (got.value, got.fell_back) == (score, fell_back)


@pytest.mark.parametrize(
    ("task", "reply", "answer"),
    [
        (NUMBER, "[1,2,", None),  # the issue: was "2"
        (NUMBER, "The counts are [3, 4] so the total is 7.", "7"),
        (NUMBER, "[7]", "7"),
        (NUMBER, "Answer: \x1b[1m7\x1b[0m", "7"),  # was "1", from the escape
        (NUMBER, "Ada has 3 apples.\nAnswer: none", None),  # was "3", uncounted
        (NUMBER, "Ada has 3 apples.\nAnswer: $2\\pi$", None),  # was "2", uncounted
        (NUMBER, "Answer: $x/2$", None),  # was "2", uncounted
        (MATH, "Answer: [-2, 2]", "[-2, 2]"),  # a located answer is taken as written
        (MATH, "\\boxed{[-2,2]}", "[-2,2]"),
        (BOOLQ, "\x1b[32mtrue\x1b[0m", "true"),
    ],
)
def test_answer_rule(task: Task, reply: str, answer: str | None) -> None:
    got = read_answer(task, reply)
    assert got.value == answer
    assert got.fell_back is (answer is None)


# --- refine: the flag is exactly "the current answer was kept for want of one" --------------


@settings(max_examples=200, deadline=None)
@given(reply=st.text(max_size=300), current=st.sampled_from(["keep", "4", "true"]))
def test_refine_flag(reply: str, current: str) -> None:
    for task in (NUMBER, BOOLQ):
        got = read_refined_answer(task, reply, current)
        assert got.value == parse_refined_answer(task, reply, current)
        found = read_answer(task, reply)
        assert got.fell_back is found.fell_back
        assert got.value == (current if found.fell_back else found.value)


@settings(max_examples=100, deadline=None)
@given(value=st.integers(min_value=-10_000, max_value=10_000), noise=_PLAIN)
def test_a_labelled_answer_is_never_flagged(value: int, noise: str) -> None:
    noise = noise.replace("nswer", "").replace("boxed", "")
    got = read_refined_answer(NUMBER, f"{noise}\nAnswer: {value}", "keep")
    assert not got.fell_back and got.value == str(value)


def test_refine_keeps_the_current_answer_when_it_equals_the_extracted_one() -> None:
    got = read_refined_answer(NUMBER, "Answer: 4", "4")
    assert got.value == "4" and not got.fell_back  # read, not defaulted


# --- the agent counts every parse on its meter ----------------------------------------------


class _Model(ChatModel):
    def __init__(self, score_reply: str) -> None:
        self.name = "scripted/model"
        self.score_reply = score_reply

    async def generate(
        self, messages: list[ChatMessage], config: GenerateConfig | None = None
    ) -> Completion:
        user = messages[-1]["content"]
        if user.rstrip().endswith("Score:") or user.rstrip().endswith("Confidence:"):
            text = self.score_reply
        else:
            text = "Answer: 7" if "apples" in user else "no idea"
        return Completion(text=text, usage=Usage(input_tokens=1, output_tokens=1))


async def test_llm_agent_counts_parses_per_stage() -> None:
    agent = LLMAgent("a", _Model("True"))
    ctx = CallContext()
    own = await agent.answer(NUMBER, ctx)
    assert own.answer == "7"
    assert await agent.score(NUMBER, own, own, ctx) == DEFAULT_SCORE
    assert await agent.score(NUMBER, own, own, ctx) == DEFAULT_SCORE
    assert await agent.confidence(NUMBER, own, ctx) == DEFAULT_CONFIDENCE
    await agent.refine(NUMBER, own, [(own, 0.5)], 1, ctx)
    assert await agent.refine(NUMBER, own, [], 1, ctx) == own  # no call, nothing parsed
    assert ctx.meter.parse.to_dict() == {
        "score": {"calls": 2, "fallbacks": 2},
        "confidence": {"calls": 1, "fallbacks": 1},
        "answer": {"calls": 1, "fallbacks": 0},
        "refine": {"calls": 1, "fallbacks": 0},
    }
    good = LLMAgent("b", _Model("0.9"))
    ctx = CallContext()
    assert await good.score(NUMBER, own, own, ctx) == 0.9
    missing = await good.answer(Task(id="x", question="?", answer="1", kind="number"), ctx)
    assert missing.answer is None
    assert ctx.meter.parse.to_dict() == {
        "score": {"calls": 1, "fallbacks": 0},
        "answer": {"calls": 1, "fallbacks": 1},
    }


def test_a_reasoning_models_thinking_is_not_read() -> None:
    """The score's rule takes the first number: a <think> block's "12 apples" scored 1.0.
    A block left open (cut off while thinking) holds no answer yet: a counted fall-back."""
    from byzllm.agents.consensus._parse import read_answer
    from byzllm.tasks import Task

    assert read_score("<think>\n12 apples, maybe 0.3\n</think>\n0.9").value == 0.9
    assert read_score("<THINK>7</THINK> 0.2 <think>8</think>").value == 0.2
    assert read_score("<think>12 apples and still thinking").fell_back
    task = Task(id="m", question="q", answer="5", kind="math")
    assert read_answer(task, "<think>Answer: 3? no.</think>\nAnswer: 5").value == "5"
    assert read_answer(task, "<think>Answer: 3").fell_back
    assert clean_reply("a<think>x</think>b") == "a" + " " * 16 + "b"  # offsets kept


def test_a_reply_with_only_the_closing_tag_was_reasoning_up_to_it() -> None:
    """Chat templates that open the block in the prompt leave only ``</think>`` in the reply:
    the reasoning's "7" was read as the score (1.0, clipped), its "6" as the answer."""
    from byzllm.agents.consensus._parse import read_answer
    from byzllm.tasks import Task

    reply = "The proposed answer says 7. Check: 2+3 = 5, so 7 is wrong.\n</think>\n\n0.0"
    assert read_score(reply).value == 0.0
    task = Task(id="m", question="2+3", answer="5", kind="math")
    reply = "Answer: 6 seems off... recompute, it's 5.\n</think>\n\nThe sum is 5."
    assert read_answer(task, reply).value == "5"
