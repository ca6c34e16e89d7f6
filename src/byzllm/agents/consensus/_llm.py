"""LLM-backed consensus agents: the prompts of Appendix B over any :class:`ChatModel`.

* answer — :func:`render_answer_prompt`, read by :func:`read_answer`; the message sent to
  neighbours is the extracted final answer (the refine prompt of B.2 lists neighbours as
  "Answer: ..."), or the raw reply cut to a safe size when no answer can be extracted;
* score — :func:`render_score_prompt` with the protocol's F, read by :func:`read_score`
  (first number, clipped to [0, 1], 0.5 on failure, B.1);
* refine — :func:`render_refine_prompt` with the retained neighbours sorted by descending
  score; the current response is kept when nothing is retained or the reply holds no answer
  (B.2, :func:`read_refined_answer`); debate (no scores) uses a score-free variant of the same
  prompt;
* confidence — :func:`render_confidence_prompt` / :func:`read_confidence` (CP-WBFT).

``judging="anchored"`` replaces the score and confidence prompts with their anchored forms
(:func:`render_anchored_score_prompt`, :func:`render_anchored_confidence_prompt`): the judge's
own worked solution (the reply behind its current answer) and final answer are shown beside
the judged answer, the reply is Yes or No in one token, and P(Yes) is read from that token's
top-20 log-probabilities (fewer when the model's ``max_top_logprobs`` caps it lower;
:func:`read_yes_probability`). The score is
(agree + P(Yes)) / 2, where agree is 1 when the judged final answer is the judge's own final
answer (:func:`same_answer`, the equivalence votes use; no ground truth involved) and 0
otherwise: B.1's "solve independently, then evaluate" with the comparison of final answers
done exactly, and the model's judgement ordering answers within each side. Measured on
Qwen2.5-Coder-0.5B, P(Yes) alone moves by less than 0.1 between an answer equal to the
judge's and a different one (docs/reproduce.md), too little for SAC's filter. The CP-WBFT
confidence is P(Yes) alone. ``judging="verbal"`` (the default) is the paper's B.1 prompt.

``refining="worked"`` shows the agent its own worked solution (not just its final answer) in
the refine and debate prompts and asks it to write its check out before the final line;
``refining="paper"`` (the default) is B.2's answer-only format. Measured on
Qwen2.5-Coder-0.5B with B.2's format, 49 of 64 right answers of strong agents became wrong
in one SAC refinement, to numbers no agent had proposed: the model re-answers in one line.

Every parsed reply is counted in the call context's meter, per stage (``answer``, ``score``,
``refine``, ``confidence``), with whether the parser fell back to its default
(``CallMeter.parse``): the runs' *parse health*.

Identical requests at temperature 0 within one question (the same response scored by several
agents on the same model, or an agent's self-score equal to a neighbour's score of the same
response) are sent once; the others join it and are counted as saved calls.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Literal

from byzllm.llm import ChatMessage, ChatModel, Completion, GenerateConfig
from byzllm.tasks import Task

from ._answers import same_answer
from ._parse import (
    DEFAULT_CONFIDENCE,
    read_answer,
    read_confidence,
    read_refined_answer,
    read_score,
    read_yes_probability,
)
from ._prompts import (
    render_anchored_confidence_prompt,
    render_anchored_score_prompt,
    render_answer_prompt,
    render_confidence_prompt,
    render_debate_prompt,
    render_refine_prompt,
    render_score_prompt,
)
from ._types import AgentGroup, CallContext, ConsensusAgent, Response, Retained

__all__ = ["JUDGING_STYLES", "REFINING_STYLES", "Judging", "LLMAgent", "Refining"]

#: Longest raw reply forwarded to neighbours when no final answer could be extracted.
MAX_FORWARDED_CHARS = 2_000

Judging = Literal["verbal", "anchored"]
#: How an agent scores a response and reports its confidence (see the module docstring).
JUDGING_STYLES: tuple[Judging, ...] = ("verbal", "anchored")
Refining = Literal["paper", "worked"]
REFINING_STYLES: tuple[Refining, ...] = ("paper", "worked")
#: Top log-probabilities read at the anchored judge's one token.
_JUDGE_TOP_K = 20


class LLMAgent(ConsensusAgent):
    """An honest agent whose four calls are prompts to ``model`` (Appendix B)."""

    def __init__(
        self,
        name: str,
        model: ChatModel,
        *,
        group: AgentGroup = "strong",
        temperature: float = 0.0,
        max_tokens: int | None = None,
        seed: int | None = None,
        judging: Judging = "verbal",
        refining: Refining = "paper",
    ) -> None:
        self.name = name
        self.model = model
        self.group = group
        self.judging: Judging = judging
        self.refining: Refining = refining
        self.config = GenerateConfig(temperature=temperature, max_tokens=max_tokens, seed=seed)
        # Judging is deterministic whatever the agent samples with: one greedy token. Its
        # alternatives stay within the model's cap (a request above it is refused before it
        # is sent): P(Yes) needs only "Yes" and "No" among them.
        cap = getattr(model, "max_top_logprobs", _JUDGE_TOP_K)
        judge_k = min(_JUDGE_TOP_K, cap) if isinstance(cap, int) else _JUDGE_TOP_K
        self.judge_config = GenerateConfig(temperature=0.0, max_tokens=1, top_logprobs=judge_k)
        # The full reply behind each answer this agent gave, per question: its "worked
        # solution", which the anchored judge shows beside what it judges.
        self._worked: dict[tuple[str, str | None], str] = {}

    def __repr__(self) -> str:
        return f"LLMAgent({self.name!r}, model={self.model.name!r}, group={self.group!r})"

    async def _ask(self, messages: list[ChatMessage], ctx: CallContext | None) -> str:
        return (await self._complete(messages, ctx, self.config)).text

    async def _complete(
        self, messages: list[ChatMessage], ctx: CallContext | None, config: GenerateConfig
    ) -> Completion:
        ctx = ctx or CallContext()
        # A sampled request is shared only when it is seeded: the same seed, the same reply.
        deterministic = config.temperature == 0.0 or config.seed is not None
        if ctx.shared is None or not deterministic:
            completion = await self.model.generate(messages, config)
            ctx.meter.add(completion)
            return completion
        key = (
            "llm",
            self.model.name,
            getattr(self.model, "endpoint", ""),
            json.dumps(messages, sort_keys=True),
            config.model_dump_json(),
        )
        flight: asyncio.Future[Completion] | None = ctx.shared.get(key)
        if flight is not None:
            completion = await asyncio.shield(flight)
            ctx.meter.add(completion, shared=True)
            return completion
        flight = asyncio.get_running_loop().create_future()
        ctx.shared[key] = flight
        try:
            completion = await self.model.generate(messages, config)
        except BaseException as exc:
            # Waiters must not hang, and a later identical request may try again.
            ctx.shared.pop(key, None)
            flight.set_exception(exc)
            flight.exception()  # retrieved: no "never retrieved" warning without waiters
            raise
        flight.set_result(completion)
        ctx.meter.add(completion)
        return completion

    def _worked_solution(self, task: Task, own: Response | None) -> str:
        if own is None:
            return ""
        return self._worked.get((task.id, own.answer), own.text)

    async def _judge(
        self, messages: list[ChatMessage], ctx: CallContext, default: float
    ) -> tuple[float, bool]:
        completion = await self._complete(messages, ctx, self.judge_config)
        first = completion.logprobs[0].top if completion.logprobs else None
        found = read_yes_probability(first, completion.text, default)
        return found.value, found.fell_back

    async def answer(self, task: Task, ctx: CallContext | None = None) -> Response:
        ctx = ctx or CallContext()
        text = await self._ask(render_answer_prompt(task), ctx)
        found = read_answer(task, text)
        ctx.meter.parse.add("answer", found.fell_back)
        answer = found.value
        self._worked.setdefault((task.id, answer), text)
        return Response.of(answer, answer if answer is not None else text[:MAX_FORWARDED_CHARS])

    async def score(
        self, task: Task, own: Response | None, peer: Response, ctx: CallContext | None = None
    ) -> float:
        ctx = ctx or CallContext()
        if self.judging == "anchored":
            own_answer = own.answer if own is not None else None
            prompt = render_anchored_score_prompt(
                task, self._worked_solution(task, own), own_answer, peer.text, ctx.f
            )
            p_yes, fell_back = await self._judge(prompt, ctx, 0.5)
            ctx.meter.parse.add("score", fell_back)
            agree = 1.0 if same_answer(task, own_answer, peer.answer) else 0.0
            return (agree + p_yes) / 2
        reply = await self._ask(render_score_prompt(task, peer.text, ctx.f), ctx)
        score = read_score(reply)
        ctx.meter.parse.add("score", score.fell_back)
        return score.value

    async def refine(
        self, task: Task, own: Response, retained: Retained, f: int, ctx: CallContext | None = None
    ) -> Response:
        if not retained:
            return own  # App. B.2: nothing retained, refinement skipped
        worked = self.refining == "worked"
        own_text = self._worked_solution(task, own) if worked else own.text
        if any(score is None for _, score in retained):
            peers = [r.text for r, _ in retained]
            messages = render_debate_prompt(task, own_text, peers, f, worked=worked)
        else:
            pairs = [(r.text, float(s)) for r, s in retained if s is not None]
            messages = render_refine_prompt(task, own_text, pairs, f, worked=worked)
        ctx = ctx or CallContext()
        reply = await self._ask(messages, ctx)
        fallback = own.answer if own.answer is not None else ""
        refined = read_refined_answer(task, reply, fallback)
        ctx.meter.parse.add("refine", refined.fell_back)
        answer = refined.value
        if not answer or answer == own.answer:
            return own
        self._worked.setdefault((task.id, answer), reply)
        return Response.of(answer)

    async def confidence(
        self, task: Task, response: Response, ctx: CallContext | None = None
    ) -> float:
        ctx = ctx or CallContext()
        if self.judging == "anchored":
            prompt = render_anchored_confidence_prompt(task, self._worked_solution(task, response))
            value, fell_back = await self._judge(prompt, ctx, DEFAULT_CONFIDENCE)
            ctx.meter.parse.add("confidence", fell_back)
            return value
        reply = await self._ask(render_confidence_prompt(task, response.text), ctx)
        confidence = read_confidence(reply)
        ctx.meter.parse.add("confidence", confidence.fell_back)
        return confidence.value

    def describe(self) -> dict[str, Any]:
        return {
            **super().describe(),
            "family": "llm",
            "model": self.model.name,
            "temperature": self.config.temperature,
            "max_tokens": self.config.max_tokens,
            "seed": self.config.seed,
            "judging": self.judging,
            "refining": self.refining,
        }
