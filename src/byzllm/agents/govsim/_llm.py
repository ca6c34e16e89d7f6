"""LLM-backed GovSim fishers: render the prompts, call a ChatModel, parse, keep log-probs.

A catch decision is asked at temperature 0 (the rogue-agents paper, App. D.3) with the top-k
log-probabilities (``top_logprobs=10``, §2, footnote 2). A reply without a valid amount is
answered with the parser's hint and asked again, up to ``max_reprompts`` times; then the
documented default applies (:data:`~byzllm.agents.govsim.FALLBACK_CATCH`, marked
``fallback``). Utterances are free text; an empty reply is an empty utterance (marked
``empty``).

**Decision positions** (§4.1: "all the positions corresponding to mentions of resource
amounts"): the tokens of the completion that overlap the span of the amount the catch was read
from, and, in an utterance, of every amount it mentions. When the tokens do not concatenate to
the reply text, the joined token text is parsed instead to find the spans.

**A discussion held again after a reset, a resampled catch.** The prompts are the same as
the first time (the fishers do not know about the reset), so at temperature 0 a model would
say the same again.
Like a model sampled afresh, a repeated discussion (``view.attempt > 0``) is generated at
``redo_temperature`` with the attempt as the sampling seed (and a resampled catch,
``view.draw > 0``, with the draw as the seed) (a different request, so the
response cache does not answer it with the first attempt's reply).
"""

from __future__ import annotations

import random

from byzllm.llm import ChatModel, Completion, GenerateConfig

from .._spans import span_distributions as amount_distributions
from .._thinking import blank_thinking
from ._parse import FALLBACK_CATCH, MAX_REPLY_CHARS, find_amounts, read_catch
from ._prompts import render_catch_prompt, render_speech_prompt
from ._types import CatchTurn, FisherView, SpeechTurn

__all__ = ["LLMFisher", "amount_distributions"]

#: How much of a rejected reply is echoed back in the re-prompt conversation.
_ECHO_CHARS = 2000


def _joined(completion: Completion) -> str | None:
    tokens = completion.logprobs
    if not tokens:
        return None
    return "".join(t.token for t in tokens)


class LLMFisher:
    """A fisher backed by a :class:`~byzllm.llm.ChatModel`."""

    def __init__(
        self,
        name: str,
        model: ChatModel,
        *,
        top_logprobs: int = 10,
        max_reprompts: int = 2,
        temperature: float = 0.0,
        redo_temperature: float = 0.7,
        max_tokens: int | None = 256,
    ) -> None:
        if max_reprompts < 0:
            raise ValueError("max_reprompts must be >= 0")
        self.name = name
        self.model = model
        self.max_reprompts = max_reprompts
        self.redo_temperature = redo_temperature
        self.config = GenerateConfig(
            temperature=temperature, top_logprobs=top_logprobs, max_tokens=max_tokens
        )

    async def catch(self, view: FisherView, rng: random.Random) -> CatchTurn:
        """Ask for the month's catch, re-prompting with hints; fall back to 0 tons."""
        messages = render_catch_prompt(view)
        config = self.config.redrawn(view.draw, self.redo_temperature)
        replies: list[str] = []
        errors: list[str] = []
        for _attempt in range(self.max_reprompts + 1):
            completion = await self.model.generate(messages, config)
            text = completion.text
            replies.append(text[:MAX_REPLY_CHARS])
            reading = read_catch(text, view.stock)
            if reading.fell_back:
                errors.append(reading.reason)
                messages = [
                    *messages,
                    {"role": "assistant", "content": text[:_ECHO_CHARS]},
                    {
                        "role": "user",
                        "content": f"Your reply could not be used: {reading.reason} "
                        "Please answer again.",
                    },
                ]
                continue
            spans = [reading.value.span]
            joined = _joined(completion)
            if joined is not None and joined != text:
                again = read_catch(joined, view.stock)
                spans = (
                    [again.value.span]
                    if not again.fell_back and again.value.amount == reading.value.amount
                    else []
                )
            return CatchTurn(
                wish=reading.value.amount,
                text=text[:MAX_REPLY_CHARS],
                distributions=amount_distributions(completion.logprobs or [], spans),
                replies=replies,
                parse_errors=errors,
            )
        return CatchTurn(wish=FALLBACK_CATCH, replies=replies, parse_errors=errors, fallback=True)

    async def speak(self, view: FisherView, rng: random.Random) -> SpeechTurn:
        """One utterance of the meeting; amounts and their positions are read from it."""
        config = self.config.redrawn(view.attempt, self.redo_temperature)
        completion = await self.model.generate(render_speech_prompt(view), config)
        # A reasoning model's thinking is its own: the others hear what follows it.
        spoken = blank_thinking(completion.text)
        text = spoken.strip()[:MAX_REPLY_CHARS]
        amounts = find_amounts(text)
        joined = _joined(completion)
        spans = [span for _, span in amounts]
        if joined is not None and joined != completion.text:
            spans = [span for _, span in find_amounts(blank_thinking(joined))]
        elif joined is not None:
            # ``text`` was stripped: shift spans back to the raw completion's offsets.
            lead = len(spoken) - len(spoken.lstrip())
            spans = [(s + lead, e + lead) for s, e in spans]
        return SpeechTurn(
            text=text,
            amounts=tuple(a for a, _ in amounts),
            distributions=amount_distributions(completion.logprobs or [], spans),
            empty=not text,
        )
