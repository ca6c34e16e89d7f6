"""LLM-backed CodeGen roles: render the prompts, call a ChatModel, parse, keep log-probs.

**Decision positions** (what a monitor reads; the rogue-agents paper, §2: "all the positions
in the agent's generation that hold important information for its action selection", and
§4.1: "passing information through the judge is a basic form of communication, which we
monitor"). The judgement the judge communicates is its verdict on each solution and its pick,
so its positions are the tokens of every verdict word (``CORRECT`` / ``WRONG``) and of the
pick's number; the tester's judgement is what each tested call should return, so its positions
are the tokens of every expected value (the right-hand side of ``assert f(x) == expected``;
on a program that reads standard input, the text of every expected output).
Free-text reasoning is left out: its tokens carry style as much as judgement. The tokens of
the completion's log-probability stream that overlap those character spans are kept, in
order.

A reply that cannot be read is answered with a hint and the model asked again, up to
``max_reprompts`` times; then the reader's documented default applies (:mod:`._parse`) and
the turn is marked ``fallback``. Errors of the model layer propagate (the runner records the
unit as failed). Coders, judge and tester never see the hidden tests or the reference.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from byzllm.llm import ChatMessage, ChatModel, Completion, GenerateConfig

from .._parsed import Parsed
from .._spans import span_distributions
from .._thinking import blank_thinking
from ._parse import (
    ParsedFeedback,
    read_code,
    read_feedback,
    read_ratings,
    read_stdin_tests,
    read_tests,
)
from ._prompts import render_coder_prompt, render_judge_prompt, render_tester_prompt
from ._types import CODER_ROLES, CoderView, Feedback, ReviewView, Solution, TestSuite, TopLogprobs

__all__ = ["LLMCoder", "LLMJudge", "LLMTester", "span_distributions"]

_ECHO_CHARS = 4000
_T = TypeVar("_T")


class _Asker:
    def __init__(
        self,
        model: ChatModel,
        top_logprobs: int,
        max_reprompts: int,
        temperature: float,
        max_tokens: int | None,
        redo_temperature: float = 0.7,
    ) -> None:
        if max_reprompts < 0:
            raise ValueError("max_reprompts must be >= 0")
        self.model = model
        self.max_reprompts = max_reprompts
        self.redo_temperature = redo_temperature
        self.config = GenerateConfig(
            temperature=temperature, top_logprobs=top_logprobs, max_tokens=max_tokens
        )

    async def ask(
        self,
        messages: list[ChatMessage],
        read: Callable[[str], Parsed[_T]],
        hint: str,
        *,
        draw: int = 0,
    ) -> tuple[Completion, Parsed[_T], list[str], list[str]]:
        """Ask until ``read(text)`` does not fall back (or re-prompts run out). ``draw`` > 0
        (a rewrite after an intervention) asks at ``redo_temperature`` with the draw as seed:
        the same request at temperature 0, or through the cache, gets the same reply."""
        config = self.config.redrawn(draw, self.redo_temperature)
        replies: list[str] = []
        errors: list[str] = []
        while True:
            completion = await self.model.generate(messages, config)
            replies.append(completion.text)
            reading = read(completion.text)
            if not reading.fell_back or len(replies) > self.max_reprompts:
                if reading.fell_back:
                    errors.append(reading.reason)
                return completion, reading, replies, errors
            errors.append(reading.reason)
            messages = [
                *messages,
                {"role": "assistant", "content": completion.text[:_ECHO_CHARS]},
                {
                    "role": "user",
                    "content": f"Your reply could not be used: {reading.reason}. {hint}",
                },
            ]


def _positions(
    completion: Completion,
    spans: Sequence[tuple[int, int]],
    reparse: Callable[[str], Sequence[tuple[int, int]]],
) -> list[TopLogprobs]:
    tokens = completion.logprobs
    if not tokens or not spans:
        return []
    joined = "".join(t.token for t in tokens)
    if joined != completion.text:
        spans = reparse(joined)
    return span_distributions(tokens, spans)


class LLMCoder:
    """A coder of role ``role`` backed by a :class:`~byzllm.llm.ChatModel`."""

    def __init__(
        self,
        name: str,
        model: ChatModel,
        *,
        role: str = CODER_ROLES[0],
        top_logprobs: int = 0,
        max_reprompts: int = 1,
        temperature: float = 0.0,
        max_tokens: int | None = 1024,
    ) -> None:
        self.name = name
        self.role = role
        self._asker = _Asker(model, top_logprobs, max_reprompts, temperature, max_tokens)

    async def write(self, view: CoderView) -> Solution:
        entry = view.entry_point

        def read(text: str) -> Parsed[str]:
            return read_code(text, entry)

        completion, reading, replies, errors = await self._asker.ask(
            render_coder_prompt(view, self.role),
            read,
            "Answer with your solution in one ```python code block.",
        )
        ratings = read_ratings(completion.text) if view.round > 1 else None
        previous = view.solutions[view.seat] if view.seat < len(view.solutions) else None
        code = str(reading.value)
        if reading.fell_back:
            code = previous.code if previous is not None else ""
        return Solution(
            coder=self.name,
            role=self.role,
            round=view.round,
            code=code,
            fallback=reading.fell_back,
            parse_errors=errors,
            helpful_feedback=ratings.value[0] if ratings else None,
            helpful_tests=ratings.value[1] if ratings else None,
            rating_fallback=bool(ratings and ratings.fell_back),
            replies=replies,
        )


class _Reviewer:
    """What the judge and the tester share: a name (the class's ``default_name`` unless given)
    and a model asked with logprobs at every decision position. Feedback or tests rewritten
    after an intervention (``view.attempt`` > 0: the rogue-agents paper, §4.1, new F and T)
    are asked at ``redo_temperature`` with the attempt as the sampling seed."""

    default_name = "Reviewer"

    def __init__(
        self,
        model: ChatModel,
        *,
        name: str | None = None,
        top_logprobs: int = 10,
        max_reprompts: int = 1,
        temperature: float = 0.0,
        max_tokens: int | None = 1024,
        redo_temperature: float = 0.7,
    ) -> None:
        self.name = self.default_name if name is None else name
        self._asker = _Asker(
            model, top_logprobs, max_reprompts, temperature, max_tokens, redo_temperature
        )


class LLMJudge(_Reviewer):
    """The judge backed by a :class:`~byzllm.llm.ChatModel` (decision positions: module doc)."""

    default_name = "Judge"

    async def review(self, view: ReviewView) -> Feedback:
        n = len(view.solutions)

        def read(text: str) -> Parsed[ParsedFeedback]:
            return read_feedback(text, n)

        def reparse(text: str) -> Sequence[tuple[int, int]]:
            return read_feedback(text, n).value.spans

        completion, reading, replies, errors = await self._asker.ask(
            render_judge_prompt(view),
            read,
            "Start with one line per solution, 'Solution i: CORRECT' or 'Solution i: WRONG', "
            "then 'Best: i'.",
            draw=view.attempt,
        )
        parsed = reading.value  # the reading of the last reply, which is the completion
        return Feedback(
            # What the coders read: the judgement, not the reasoning before it (a long one
            # would fill the echo and cut the verdicts off).
            text=blank_thinking(completion.text).strip()[:_ECHO_CHARS],
            verdicts=[parsed.verdicts.get(i) for i in range(1, n + 1)],
            pick=parsed.pick,
            distributions=_positions(completion, parsed.spans, reparse),
            fallback=reading.fell_back,
            parse_errors=errors,
            replies=replies,
        )


class LLMTester(_Reviewer):
    """The test writer backed by a :class:`~byzllm.llm.ChatModel`."""

    default_name = "Tester"

    async def write_tests(self, view: ReviewView) -> TestSuite:
        # A program that reads standard input is tested on inputs and outputs, not asserts.
        read = read_stdin_tests if view.stdin else read_tests
        hint = (
            "Write each test as a line 'Input:' and a ``` block with what the program reads, "
            "then a line 'Expected output:' and a ``` block with what it prints."
            if view.stdin
            else "Write one `assert f(...) == expected` per line in a ```python code block."
        )

        def reparse(text: str) -> Sequence[tuple[int, int]]:
            return read(text).value.spans

        completion, reading, replies, errors = await self._asker.ask(
            render_tester_prompt(view), read, hint, draw=view.attempt
        )
        parsed = reading.value
        return TestSuite(
            tests=list(parsed.tests),
            cases=list(parsed.cases),
            distributions=_positions(completion, parsed.spans, reparse),
            fallback=reading.fell_back,
            parse_errors=errors,
            dropped=parsed.dropped,
            replies=replies,
        )
