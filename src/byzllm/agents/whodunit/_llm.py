"""LLM-backed WhoDunitEnv agents: render Appendix F, call a ChatModel, parse, keep log-probs.

Each turn renders the role's system prompt and the user prompt (Figs. 10-16), asks the model
(temperature 0 as in Appendix D.3, ``top_logprobs=10`` as the paper used for proprietary
models, §2 footnote 2) and parses the ReAct thoughts + JSON action. A reply that does not
parse or validate is answered with a specific hint and the model asked again, up to
``max_reprompts`` times (default 3); then the documented fallback applies: the turn is passed
(:data:`FALLBACK_ACTION`, ``WhoDunitAction(kind="pass")``, no message content) and the turn is
marked ``fallback`` (what the runs count as a WhoDunit move fall-back, their parse health).
Every rejected reply's reason is kept in ``AgentTurn.parse_errors``; a reply the server cut
off at ``max_tokens`` (``finish_reason`` ``"length"``) is said to be cut off, to the model
and in that reason. A resampled turn (the
rogue-agents paper, §6.1: the monitor discards a reply and the same turn is asked again,
``view.draw`` > 0) is asked at ``redo_temperature`` (default 0.7) with the draw as the
sampling seed: at temperature 0, and through the response cache, the same request would get
the same reply, and the resample would change nothing. Errors of the model
layer itself (network, authentication) propagate: the runner records the game as failed.

**Decision positions** (§4.1, "all the positions where the agent generated a suspect ID", plus
the action number): the parser returns the character spans of the action number and of every
character id in the accepted JSON; the tokens of the completion's log-probability stream that
overlap those spans are the decision positions, and their top-k lists are kept, in order. A
multi-token id (``"1"``, ``"0"``) contributes every token. When the tokens do not concatenate
to the reply text, the token text itself is parsed to find the spans.

**Decoding** (``decoding``): ``"free"`` (the default, the paper's setting) lets the model
write freely; ``"schema"`` sends, with every request, the JSON schema of the moves the
agent's view allows (:func:`~byzllm.agents.whodunit.action_schema`, as the request's
``response_format``), so a server that decodes under a grammar (``byzllm serve``, the
``llamacpp`` provider, llama.cpp's server) can only write a valid move. The reply is then one
JSON object with the thoughts as its first field; it is parsed and its decision positions
found exactly as above. With byzllm's local generation the log-probabilities are the
model's own, read before the grammar acts (see :mod:`byzllm.llm._llama_generate`): the
grammar decides which token is written, not which distribution the monitor reads. Other
servers may report them after constraining; check before monitoring on one.

**Final move** (``final_move``, with ``decoding="schema"`` only): ``"accuse"`` admits only the
accusation on the agent's last turn of a budget (:func:`~byzllm.agents.whodunit.
last_own_turn`), for the roles that can accuse. A small model otherwise asks the same
question until the clock runs out; the paper's agents choose when to accuse themselves.
"""

from __future__ import annotations

import random

from byzllm.llm import ChatModel, Completion, GenerateConfig, JsonSchema

from .._spans import span_distributions as decision_distributions
from ._parse import FALLBACK_ACTION, read_action
from ._prompts import render_prompt
from ._schema import action_schema, last_own_turn, thoughts_budget
from ._types import (
    AgentTurn,
    AgentView,
    Decoding,
    FinalMove,
    PromptStyle,
    TopLogprobs,
    WhoDunitAction,
)

__all__ = ["LLMAgent", "decision_distributions"]

#: How much of a rejected reply is echoed back in the re-prompt conversation.
_ECHO_CHARS = 4000
#: What a rejected reply's reason starts with when the server cut it off at ``max_tokens``.
_CUT_OFF = (
    "Your reply was cut off at the length limit before it was complete: keep your thoughts short."
)


class LLMAgent:
    """An Accuser, Intel or symmetric player backed by a :class:`~byzllm.llm.ChatModel`.

    ``decoding="schema"`` constrains every reply to the view's valid moves (see the module
    docstring); it replaces any ``response_format`` of ``config``. ``prompt="compact"``
    renders the shorter system prompts for small models (:mod:`._prompts`).
    ``final_move="accuse"`` (needs ``decoding="schema"``) admits only the accusation on the
    agent's last turn of a budget (see the module docstring).
    """

    def __init__(
        self,
        name: str,
        model: ChatModel,
        *,
        top_logprobs: int = 10,
        max_reprompts: int = 3,
        temperature: float = 0.0,
        redo_temperature: float = 0.7,
        max_tokens: int | None = 1024,
        config: GenerateConfig | None = None,
        decoding: Decoding = "free",
        prompt: PromptStyle = "paper",
        final_move: FinalMove = "free",
    ) -> None:
        if max_reprompts < 0:
            raise ValueError("max_reprompts must be >= 0")
        if decoding not in ("free", "schema"):
            raise ValueError(f"decoding must be 'free' or 'schema', not {decoding!r}")
        self.name = name
        self.model = model
        self.max_reprompts = max_reprompts
        self.redo_temperature = redo_temperature
        if prompt not in ("paper", "compact"):
            raise ValueError(f"prompt must be 'paper' or 'compact', not {prompt!r}")
        if final_move not in ("free", "accuse"):
            raise ValueError(f"final_move must be 'free' or 'accuse', not {final_move!r}")
        if final_move == "accuse" and decoding != "schema":
            raise ValueError("final_move='accuse' needs decoding='schema'")
        self.decoding: Decoding = decoding
        self.final_move: FinalMove = final_move
        self.prompt: PromptStyle = prompt
        self.config = config or GenerateConfig(
            temperature=temperature, top_logprobs=top_logprobs, max_tokens=max_tokens
        )

    def request_config(self, view: AgentView) -> GenerateConfig:
        """The generation settings of a request for ``view`` (with its move schema if
        ``decoding`` is ``"schema"``); a resampled turn (``view.draw`` > 0) is sampled at
        ``redo_temperature`` with the draw as its seed."""
        config = self.config.redrawn(view.draw, self.redo_temperature)
        if self.decoding == "free":
            return config
        schema = action_schema(
            view,
            max_thoughts=thoughts_budget(self.config.max_tokens, view.n_suspects),
            accuse_only=self.final_move == "accuse" and last_own_turn(view),
        )
        move = JsonSchema(name=f"whodunit_{view.role}_move", schema_=schema)
        return config.model_copy(update={"response_format": move})

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
        messages = render_prompt(view, self.prompt)
        config = self.request_config(view)
        retry = (
            "Please answer again: your thoughts, then one JSON object."
            if self.decoding == "free"
            # Under a schema the thoughts are the object's first field.
            else "Please answer again with one complete JSON object."
        )
        replies: list[str] = []
        errors: list[str] = []
        for _attempt in range(self.max_reprompts + 1):
            completion = await self.model.generate(messages, config)
            text = completion.text
            replies.append(text)
            reading = read_action(text, view)
            if reading.fell_back:
                reason = reading.reason
                if completion.finish_reason == "length":
                    # Cut off by max_tokens, not a format error: the model can fix it by
                    # writing less, and a record that said "no JSON object" would blame the
                    # model for a limit set too low.
                    reason = f"{_CUT_OFF} {reason}"
                errors.append(reason)
                messages = [
                    *messages,
                    {"role": "assistant", "content": text[:_ECHO_CHARS]},
                    {
                        "role": "user",
                        "content": f"Your reply could not be used: {reason} {retry}",
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
