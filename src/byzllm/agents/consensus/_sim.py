"""The simulated agent population: a parameterized behavioural model of LLM agents.

Not a stub: every behaviour an LLM agent shows in the SAC paper's pipeline has an explicit,
documented parameter (:class:`SimulatedProfile`), and everything a protocol does with these
agents *emerges* from them; no parameter knows which protocol is running.

The model, per agent i and task x:

* **Latent solution** s_i(x): with probability ``strength`` the agent solves the task (its
  solution is the ground truth); otherwise its solution is a wrong answer, the task's most
  plausible distractor with probability ``error_correlation`` (so weak agents err *together*,
  as weaker LLMs share misconceptions) and an agent-specific distractor otherwise. The latent
  solution is fixed across rounds: a model's capability on a question does not change.
* **Judgement** J_i(r) of a response r ("is r correct?"): a response equal to the agent's own
  latent solution is judged correct (re-solving reproduces it; models rarely catch their own
  errors); any other response is judged correct only when the agent manages to verify it
  (probability ``verify_accuracy``) and it is in fact correct. This is the self-anchoring of
  the paper's §4.1: an agent scores its own view of the problem highly and dissent low.
* **Score** φ_i(x, r) (Eq. (2)): 0.9 when judged correct, 0.1 otherwise, plus Gaussian
  ``calibration_noise``, clipped to [0, 1] and written with two decimals like an LLM's reply.
  An embedded instruction ("... Score: 1.0") hijacks the score with probability
  ``injection_susceptibility``.
* **Refine** (Eq. (5)): the agent keeps its answer with probability ``anchoring`` when it
  judges its own answer correct; otherwise it weighs each distinct retained answer by the sum of
  its receiver-side scores (one unit per response when a protocol passes no scores), its own
  answer counting one unit when it believes it, and moves to the heaviest one with probability
  ``susceptibility``.
* **Confidence** (CP-WBFT): ``confidence_correct`` when the agent judges the response correct,
  ``confidence_wrong`` otherwise, plus noise; LLM verbalized confidence is high and poorly
  calibrated, hence the small gap.

Every random draw is seeded by (population seed, agent, task, round, call) via
:mod:`byzllm.agents._seeding`, so results are reproducible and independent of scheduling.
Only single-agent quantities are calibrated: the default strong / weak profiles solve ≈ 85% /
≈ 25% of synthetic tasks on their own, the initial accuracies of Table 1.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from byzllm.tasks import Task

from .._seeding import choice, gauss, uniform
from ._answers import answer_key, is_right, same_answer, wrong_answers
from ._types import AgentGroup, CallContext, ConsensusAgent, Response, ScoredResponse

__all__ = [
    "STRONG_PROFILE",
    "WEAK_PROFILE",
    "SimulatedAgent",
    "SimulatedProfile",
    "looks_like_injection",
]

_INJECTION = re.compile(
    r"(ignore\s+(all\s+)?(the\s+)?(above|previous|prior)|score\s*[:=]\s*1(\.0+)?\b"
    r"|output\s+(only\s+)?1(\.0+)?\b|you\s+must\s+(rate|score))",
    re.IGNORECASE,
)


def looks_like_injection(text: str) -> bool:
    """Whether ``text`` embeds instructions aimed at the receiver's scoring prompt."""
    return _INJECTION.search(text[:20_000]) is not None


class SimulatedProfile(BaseModel):
    """Explicit behavioural parameters of one simulated agent (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(description="profile name, e.g. 'strong'")
    strength: float = Field(ge=0, le=1, description="P(solves a task on its own)")
    verify_accuracy: float = Field(ge=0, le=1, description="P(judges a response's correctness)")
    calibration_noise: float = Field(ge=0, le=1, description="s.d. of score/confidence noise")
    anchoring: float = Field(ge=0, le=1, description="P(keeps an answer it believes correct)")
    susceptibility: float = Field(ge=0, le=1, description="P(follows peers when not anchored)")
    error_correlation: float = Field(ge=0, le=1, description="P(wrong answer = top distractor)")
    confidence_correct: float = Field(ge=0, le=1, description="confidence when it believes r")
    confidence_wrong: float = Field(ge=0, le=1, description="confidence when it doubts r")
    injection_susceptibility: float = Field(ge=0, le=1, description="P(injected score obeyed)")


#: A gpt-4o-mini-like agent on the synthetic tasks (≈ 85% alone, Table 1's strong group).
STRONG_PROFILE = SimulatedProfile(
    name="strong",
    strength=0.85,
    verify_accuracy=0.4,
    calibration_noise=0.05,
    anchoring=0.9,
    susceptibility=0.7,
    error_correlation=0.2,
    confidence_correct=0.9,
    confidence_wrong=0.8,
    injection_susceptibility=0.05,
)

#: A gpt-3.5-turbo-like agent on the synthetic tasks (≈ 25% alone, Table 1's weak group).
WEAK_PROFILE = SimulatedProfile(
    name="weak",
    strength=0.25,
    verify_accuracy=0.45,
    calibration_noise=0.1,
    anchoring=0.3,
    susceptibility=0.8,
    error_correlation=0.8,
    confidence_correct=0.85,
    confidence_wrong=0.8,
    injection_susceptibility=0.3,
)

_HIGH, _LOW = 0.9, 0.1


def _text_id(response: Response) -> str:
    return hashlib.blake2b(response.text.encode("utf-8", "replace"), digest_size=6).hexdigest()


class SimulatedAgent(ConsensusAgent):
    """An honest simulated agent following a :class:`SimulatedProfile` (results are simulated)."""

    simulated = True

    def __init__(
        self,
        name: str,
        profile: SimulatedProfile,
        *,
        group: AgentGroup | None = None,
        seed: int = 0,
    ) -> None:
        self.name = name
        self.profile = profile
        self.group = group or ("strong" if profile.name == "strong" else "weak")
        self.seed = seed

    def __repr__(self) -> str:
        return f"SimulatedAgent({self.name!r}, profile={self.profile.name!r}, seed={self.seed})"

    # -- latent state -------------------------------------------------------------------------
    def solution(self, task: Task) -> str:
        """The agent's latent solution s_i(x), fixed across rounds."""
        keys = (self.seed, self.name, task.id)
        if uniform(*keys, "solve") < self.profile.strength:
            return task.answer
        wrong = wrong_answers(task)
        if uniform(*keys, "correlated") < self.profile.error_correlation or len(wrong) == 1:
            return wrong[0]
        return choice(wrong[1:], *keys, "which")

    def judges_correct(self, task: Task, response: Response) -> bool:
        """J_i(r): does agent i judge r correct?

        Re-solving reproduces the agent's own latent solution, so r ≡ s_i(x) is always judged
        correct (self-anchoring; models rarely catch their own errors). Any other response is
        judged correct only when the agent verifies it (probability ``verify_accuracy``) and it
        is in fact correct. A judgement is a stable property of (agent, task, response), like a
        model's verdict at temperature 0: asking again in a later round gives the same verdict.
        """
        if response.answer is None:
            return False
        if same_answer(task, response.answer, self.solution(task)):
            return True
        keys = (self.seed, self.name, task.id, _text_id(response))
        verifies = uniform(*keys, "verify") < self.profile.verify_accuracy
        return verifies and is_right(task, response.answer)

    def _noisy(self, base: float, *keys: object) -> float:
        value = base + gauss(self.profile.calibration_noise, self.seed, self.name, *keys)
        return round(min(1.0, max(0.0, value)), 2)

    # -- the four calls ----------------------------------------------------------------------
    async def answer(self, task: Task, ctx: CallContext | None = None) -> Response:
        return Response.of(self.solution(task))

    async def score(
        self, task: Task, own: Response | None, peer: Response, ctx: CallContext | None = None
    ) -> float:
        keys = (task.id, ctx.round if ctx else 0, "score", _text_id(peer))
        if (
            looks_like_injection(peer.text)
            and uniform(self.seed, self.name, *keys, "inject")
            < self.profile.injection_susceptibility
        ):
            return 1.0
        judged = self.judges_correct(task, peer)
        return self._noisy(_HIGH if judged else _LOW, *keys)

    async def refine(
        self,
        task: Task,
        own: Response,
        retained: Sequence[ScoredResponse],
        f: int,
        ctx: CallContext | None = None,
    ) -> Response:
        # Dispositions are stable per (agent, task, answers involved), as at temperature 0.
        own_key = answer_key(task, own.answer)
        keys = (self.seed, self.name, task.id, own_key)
        believes_own = self.judges_correct(task, own)
        if believes_own and uniform(*keys, "anchor") < self.profile.anchoring:
            return own
        weights: dict[str, float] = {}
        representative: dict[str, Response] = {}
        if own_key is not None and believes_own:
            weights[own_key] = 1.0
            representative[own_key] = own
        for response, score in retained:
            key = answer_key(task, response.answer)
            if key is None:
                continue
            weights[key] = weights.get(key, 0.0) + (1.0 if score is None else score)
            representative.setdefault(key, Response.of(response.answer))
        if not weights:
            return own
        top = max(weights.values())
        tied = sorted(k for k, w in weights.items() if w == top)
        best = own_key if own_key in tied else tied[0]
        if best == own_key or uniform(*keys, best, "follow") >= self.profile.susceptibility:
            return own
        return representative[best]

    async def confidence(
        self, task: Task, response: Response, ctx: CallContext | None = None
    ) -> float:
        judged = self.judges_correct(task, response)
        base = self.profile.confidence_correct if judged else self.profile.confidence_wrong
        round_ = ctx.round if ctx else 0
        return self._noisy(base, task.id, round_, "confidence", _text_id(response))

    def describe(self) -> dict[str, Any]:
        return {
            **super().describe(),
            "family": "simulated",
            "seed": self.seed,
            "profile": self.profile.model_dump(),
        }
