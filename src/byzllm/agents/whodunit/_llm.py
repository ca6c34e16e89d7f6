"""LLM-backed WhoDunitEnv agents: render Appendix F, call a ChatModel, parse, keep log-probs.

Each turn renders the role's system prompt and the user prompt (Figs. 10-16), asks the model
(temperature 0 as in Appendix D.3, ``top_logprobs=10`` as the paper used for proprietary
models, §4.1 footnote 2) and parses the ReAct thoughts + JSON action. A reply that does not
parse or validate is answered with a specific hint and the model asked again, up to
``max_reprompts`` times (default 3); then the documented fallback applies: the turn is passed
(:data:`FALLBACK_ACTION`, ``WhoDunitAction(kind="pass")``, no message content) and the turn is
marked ``fallback`` (what the runs count as a WhoDunit move fall-back, their parse health).
Every rejected reply's reason is kept in ``AgentTurn.parse_errors``. Errors of the model
layer itself (network, authentication) propagate: the runner records the game as failed.

**Decision positions** (§4.1, "all the positions where the agent generated a suspect ID", plus
the action number): the parser returns the character spans of the action number and of every
character id in the accepted JSON; the tokens of the completion's log-probability stream that
overlap those spans are the decision positions, and their top-k lists are kept, in order. A
multi-token id (``"1"``, ``"0"``) contributes every token. When the tokens do not concatenate
to the reply text, the token text itself is parsed to find the spans.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from byzllm.llm import ChatModel, Completion, GenerateConfig, TokenLogprob

from ._parse import FALLBACK_ACTION, read_action
from ._prompts import render_prompt
from ._types import AgentTurn, AgentView, TopLogprobs, WhoDunitAction

__all__ = ["LLMAgent", "decision_distributions"]

#: How much of a rejected reply is echoed back in the re-prompt conversation.
_ECHO_CHARS = 4000


def decision_distributions(
    tokens: Sequence[TokenLogprob], spans: Sequence[tuple[int, int]]
) -> list[TopLogprobs]:
    """Top-k lists of the tokens overlapping ``spans`` (offsets into the joined token text).

    A token without a top-k list contributes its own ``(token, logprob)`` as a one-entry list.
    """
    starts: list[int] = []
    pos = 0
    for tok in tokens:
        starts.append(pos)
        pos += len(tok.token)
    picked: list[int] = []
    for s, e in spans:
        for i, tok in enumerate(tokens):
            a, b = starts[i], starts[i] + len(tok.token)
            if a < e and b > s and i not in picked:
                picked.append(i)
    picked.sort()
    return [
        [(t, float(lp)) for t, lp in tokens[i].top] or [(tokens[i].token, tokens[i].logprob)]
        for i in picked
    ]


class LLMAgent:
    """An Accuser, Intel or symmetric player backed by a :class:`~byzllm.llm.ChatModel`."""

    def __init__(
        self,
        name: str,
        model: ChatModel,
        *,
        top_logprobs: int = 10,
        max_reprompts: int = 3,
        temperature: float = 0.0,
        max_tokens: int | None = 1024,
        config: GenerateConfig | None = None,
    ) -> None:
        if max_reprompts < 0:
            raise ValueError("max_reprompts must be >= 0")
        self.name = name
        self.model = model
        self.max_reprompts = max_reprompts
        self.config = config or GenerateConfig(
            temperature=temperature, top_logprobs=top_logprobs, max_tokens=max_tokens
        )

    def _distributions(
        self,
        completion: Completion,
        view: AgentView,
        action: WhoDunitAction,
        spans: list[tuple[int, int]],
    ) -> list[TopLogprobs]:
        tokens = completion.logprobs
        if not tokens:
            return []
        joined = "".join(t.token for t in tokens)
        if joined != completion.text:
            reparsed = read_action(joined, view)
            if reparsed.fell_back or reparsed.value.action != action:
                return []
            spans = reparsed.value.decision_spans
        return decision_distributions(tokens, spans)

    async def act(self, view: AgentView, rng: random.Random) -> AgentTurn:
        """Ask the model, re-prompting with hints; fall back to a pass if it never complies."""
        messages = render_prompt(view)
        replies: list[str] = []
        errors: list[str] = []
        for _attempt in range(self.max_reprompts + 1):
            completion = await self.model.generate(messages, self.config)
            text = completion.text
            replies.append(text)
            reading = read_action(text, view)
            if reading.fell_back:
                errors.append(reading.reason)
                messages = [
                    *messages,
                    {"role": "assistant", "content": text[:_ECHO_CHARS]},
                    {
                        "role": "user",
                        "content": f"Your reply could not be used: {reading.reason} "
                        "Please answer again: your thoughts, then one JSON object.",
                    },
                ]
                continue
            parsed = reading.value
            return AgentTurn(
                action=parsed.action,
                thoughts=parsed.thoughts,
                distributions=self._distributions(
                    completion, view, parsed.action, parsed.decision_spans
                ),
                replies=replies,
                parse_errors=errors,
            )
        return AgentTurn(
            action=FALLBACK_ACTION,
            replies=replies,
            parse_errors=errors,
            fallback=True,
        )
