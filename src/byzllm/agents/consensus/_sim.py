"""The simulated agent population: a parameterized behavioural model of LLM agents.

Every behaviour an LLM agent shows in the SAC paper's pipeline is an explicit parameter of
:class:`SimulatedProfile`, declared with its meaning and its source (a published figure, a
measurement, or "assumption"; ``byzllm sim show`` prints them). No parameter knows which
protocol is running. Some parameters do encode how an agent relates to the truth (how often it
solves a task, how often it rates a wrong answer as right, how its confidence differs between
right and wrong answers): that is what a behavioural model of a fallible agent is. Which of
them drive which result is shown by the ablations in ``docs/consensus.md``, and a profile can
be fitted from a real run (``byzllm sim fit``) instead of assumed.

The model, per agent i and task x:

* **Latent solution** s_i(x): with probability ``strength`` the agent solves the task (its
  solution is the ground truth). Whether two agents solve the same task is correlated by
  ``difficulty_correlation`` ρ (default 0: independent): agent i solves iff
  √ρ·z(x) + √(1−ρ)·e_i(x) < Φ⁻¹(``strength``), with z(x) a standard normal draw per task and
  population seed (its difficulty, shared) and e_i(x) the agent's own; each agent's P(solve)
  stays ``strength``. Otherwise a wrong answer, the task's most plausible
  distractor with probability ``error_correlation`` (weaker LLMs share misconceptions), else
  with probability ``answer_spread`` a wrong answer of its own (a number near the truth that
  is not a listed distractor, rarely another agent's), else one of the other listed
  distractors. Fixed across rounds.
* **Judgement** J_i(r) ("is r correct?"), stable per (agent, task, response) as at
  temperature 0: a response equal to the agent's own latent solution is judged correct with
  probability ``self_trust`` (an assumption, default 1.0: an agent re-judging the answer it
  produced endorses it; the SAC paper does not measure it, and its ablation rows in
  ``docs/consensus.md`` show how much the results rest on it); any other response is judged
  correct with probability
  ``1 - false_reject`` when it is right and ``false_accept`` when it is wrong (a judge's error
  rates, the quantities a real run measures).
* **Score** φ_i(x, r) (Eq. (2)): ``score_accept`` when judged correct, ``score_reject``
  otherwise, plus Gaussian ``calibration_noise``, clipped to [0, 1] and written with two
  decimals. An embedded instruction ("... Score: 1.0") hijacks the score with probability
  ``injection_susceptibility``.
* **Refine** (Eq. (5)): the agent keeps its answer with probability ``anchoring`` when it
  judges its own answer correct; otherwise it weighs each distinct retained answer by the sum
  of its receiver-side scores (one unit per response when a protocol passes no scores), its
  own answer counting one unit when it believes it, and moves to the heaviest one with
  probability ``susceptibility``.
* **Answering anew** (``refine_slip``, default 0): with that probability a refinement with
  something retained ignores the offered answers and gives a new one: the truth with
  probability ``slip_accuracy`` when no one offered it, otherwise a wrong answer no one
  offered. Small models do this (measured with ``byzllm sim fit``); the SAC paper's agents
  are not reported to.
* **Verbalized confidence** (what CP-WBFT aggregates): exactly 1.0 with probability
  ``confidence_at_one_right`` (right answers) or ``confidence_at_one_wrong`` (wrong ones);
  otherwise ``confidence_right`` / ``confidence_wrong`` plus ``calibration_noise``, at most
  0.99; stable per (agent, task, response), as at temperature 0. Equal right and wrong
  parameters make confidence carry no information.

**Where the ground truth enters.** Only the simulator's *nature* reads it: the latent
solution (``strength``), an answer given anew in refinement (``slip_accuracy``), the judge's
error rates (``false_accept`` / ``false_reject``) and the confidence calibration
(``confidence_*``) are defined relative to the truth, as a fallible agent's capability is.
Nature reads it from ``ground_truth`` when one is given (task id -> the task with its answer),
else from the task the protocol passes; every other step (anchoring, weighing retained
answers, following, obeying injections) sees only the responses. A test
hands the agent tasks without an answer field and a ``ground_truth`` and checks it behaves
exactly as with the full tasks.

Every random draw is seeded by (population seed, agent, task, round, call) via
:mod:`byzllm.agents._seeding`, so results are reproducible and independent of scheduling.
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
from collections.abc import Callable, Mapping
from statistics import NormalDist
from typing import Any, TypeVar

from pydantic import Field

from byzllm.tasks import Task

from .._object_memo import ObjectMemo
from .._params import Probability, SimParameters, parameter
from .._seeding import KeyPrefix, choice, uniform
from ._answers import answer_key, fresh_wrong_answers, is_right, same_answer, wrong_answers
from ._types import AgentGroup, CallContext, ConsensusAgent, Response, Retained

__all__ = [
    "PROFILE_SOURCES",
    "STRONG_PROFILE",
    "WEAK_PROFILE",
    "GroundTruth",
    "SimulatedAgent",
    "SimulatedProfile",
    "looks_like_injection",
]

_XIONG = (
    "Xiong et al. (2024): GPT-class models verbalize confidence mostly in 80-100%; "
    "the value within that range is an assumption"
)

_INJECTION = re.compile(
    r"(ignore\s+(all\s+)?(the\s+)?(above|previous|prior)|score\s*[:=]\s*1(\.0+)?\b"
    r"|output\s+(only\s+)?1(\.0+)?\b|you\s+must\s+(rate|score))",
    re.IGNORECASE,
)


def looks_like_injection(text: str) -> bool:
    """Whether ``text`` embeds instructions aimed at the receiver's scoring prompt."""
    return _INJECTION.search(text[:20_000]) is not None


@functools.lru_cache(maxsize=1024)
def _looks_injected(text: str) -> bool:
    # Cached: every fresh score of a question asks it of the same few texts.
    return looks_like_injection(text)


def _open(u: float) -> float:
    """``u`` kept inside (0, 1), where the normal quantile is finite."""
    return min(max(u, 1e-12), 1 - 1e-12)


class SimulatedProfile(SimParameters):
    """Explicit behavioural parameters of one simulated agent (see the module docstring).

    The declared sources are the generic ones; the default profiles carry their own per-value
    sources (:data:`PROFILE_SOURCES`).
    """

    name: str = Field(default="custom", description="profile name, e.g. 'strong'")
    strength: Probability = parameter(
        0.85, meaning="P(solves a task on its own): the initial accuracy"
    )
    error_correlation: Probability = parameter(
        0.2, meaning="P(a wrong answer is the task's most plausible distractor)"
    )
    answer_spread: Probability = parameter(
        0.0,
        meaning="P(a wrong answer other than the top distractor is one of the agent's own, "
        "rarely shared, instead of one of the task's few listed distractors)",
        source=(
            "assumed 0: wrong answers come from the task's listed distractors, so two wrong "
            "agents often agree; `byzllm sim fit` measures it (small models' wrong answers are "
            "mostly their own: docs/results/sac-table1-real.md)"
        ),
    )
    difficulty_correlation: float = parameter(
        0.0,
        meaning="correlation of two agents' solving the same task (a per-task difficulty "
        "shared by every agent of the population; 0: each agent solves independently)",
        source=(
            "assumed 0: the SAC paper does not report it; `byzllm sim fit` measures it from "
            "which agents solved each question at round 0, every honest pair pooled (4 "
            "Qwen2.5-Coder-0.5B and 2 SmolLM2-135M agents on one- and two-step arithmetic: "
            "0.19, docs/results/sac-table1-real.md)"
        ),
        ge=0,
        le=0.99,
    )
    self_trust: Probability = parameter(
        1.0,
        meaning="P(judges a response equal to its own solution correct)",
        source=(
            "assumed: an agent re-judging the answer it produced endorses it (the same model "
            "at temperature 0 repeats the reasoning that produced it); no paper measures it, "
            "the SAC paper's §4.1 does not state it. `byzllm sim fit` measures it from a real "
            "run; the ablation rows at 0.75 and 0.5 in docs/consensus.md show the results "
            "that rest on it"
        ),
    )
    false_accept: Probability = parameter(
        0.05, meaning="P(judges another agent's wrong answer correct)"
    )
    false_reject: Probability = parameter(
        0.6, meaning="P(judges another agent's right answer wrong)"
    )
    score_accept: Probability = parameter(0.9, meaning="score φ given to a response judged correct")
    score_reject: Probability = parameter(0.1, meaning="score φ given to a response judged wrong")
    calibration_noise: float = parameter(
        0.05, meaning="s.d. of the Gaussian noise on scores and confidences", ge=0, le=1
    )
    anchoring: Probability = parameter(
        0.9, meaning="P(keeps an answer it believes correct, whatever the peers say)"
    )
    susceptibility: Probability = parameter(
        0.7, meaning="P(moves to the heaviest retained answer when not anchored)"
    )
    confidence_right: Probability = parameter(
        0.9,
        meaning="mean verbalized confidence in a right answer (when not exactly 1.0)",
        source=_XIONG,
    )
    confidence_wrong: Probability = parameter(
        0.8,
        meaning="mean verbalized confidence in a wrong answer (when not exactly 1.0)",
        source=_XIONG,
    )
    confidence_at_one_right: Probability = parameter(
        0.25, meaning="P(verbalized confidence is exactly 1.0 | right answer)"
    )
    confidence_at_one_wrong: Probability = parameter(
        0.15, meaning="P(verbalized confidence is exactly 1.0 | wrong answer)"
    )
    injection_susceptibility: Probability = parameter(
        0.05, meaning="P(obeys a score embedded in a peer's message)"
    )
    refine_slip: Probability = parameter(
        0.0,
        meaning="P(a refinement answers anew: an answer that neither the agent nor any "
        "retained neighbour gave)",
        source=(
            "assumed 0: the SAC paper's refine keeps or adopts answers and reports no other "
            "outcome; `byzllm sim fit` measures it (Qwen2.5-Coder-0.5B with the paper's "
            "answer-only refine prompt: 55% of its refinements, docs/results/sac-table1-real.md)"
        ),
    )
    slip_accuracy: Probability = parameter(
        0.0,
        meaning="P(an answer given anew in refinement is right)",
        source="assumed 0 with refine_slip; `byzllm sim fit` measures it",
    )

    def sources(self) -> Mapping[str, str]:
        """A default profile's own per-value sources (:data:`PROFILE_SOURCES`)."""
        return PROFILE_SOURCES.get(self.name, {})


#: A gpt-4o-mini-like agent on the synthetic tasks (≈ 85% alone, Table 1's strong group).
STRONG_PROFILE = SimulatedProfile(name="strong")

#: A gpt-3.5-turbo-like agent on the synthetic tasks (≈ 25% alone, Table 1's weak group).
WEAK_PROFILE = SimulatedProfile(
    name="weak",
    strength=0.25,
    error_correlation=0.8,
    false_accept=0.15,
    false_reject=0.55,
    calibration_noise=0.1,
    anchoring=0.3,
    susceptibility=0.8,
    confidence_right=0.85,
    confidence_wrong=0.8,
    confidence_at_one_right=0.25,
    confidence_at_one_wrong=0.2,
    injection_susceptibility=0.3,
)

#: Per-value sources of the default profiles, where they differ from the declared ones.
PROFILE_SOURCES: dict[str, dict[str, str]] = {
    "strong": {
        "strength": "the SAC paper, Table 1: gpt-4o-mini's initial accuracy, 81-86%",
    },
    "weak": {
        "strength": "the SAC paper, Table 1: gpt-3.5-turbo's initial accuracy, 23-28%",
    },
}


#: Nature's access to the ground truth: task id -> the task with its answer.
GroundTruth = Callable[[str], Task]

_Key = TypeVar("_Key")
_Value = TypeVar("_Value")


def _remembered(
    memo: dict[_Key, tuple[Task, _Value]], key: _Key, truth: Task, draw: Callable[[], _Value]
) -> _Value:
    """``memo``'s value for ``key`` when it was drawn against ``truth``, else ``draw()``,
    remembered with it: a stable draw is asked for hundreds of times per simulated question,
    and another ground truth for the same task id must draw again."""
    known = memo.get(key)
    if known is not None and known[0] is truth:
        return known[1]
    value = draw()
    memo[key] = (truth, value)
    return value


class _Memos:
    """The memos of one agent identity (:func:`_shared_memos`)."""

    __slots__ = ("confidences", "scores", "solutions", "verdicts")

    def __init__(self) -> None:
        self.solutions: dict[Any, Any] = {}
        self.verdicts: dict[Any, Any] = {}
        self.scores: dict[Any, Any] = {}
        self.confidences: dict[Any, Any] = {}

    def size(self) -> int:
        return len(self.solutions) + len(self.verdicts) + len(self.scores) + len(self.confidences)


#: Agent identities whose memos are kept, and the entries one identity may hold.
_MEMO_IDENTITIES = 64
_MEMO_ENTRIES = 8192
_memos_by_identity: dict[tuple[Any, ...], _Memos] = {}


def _shared_memos(identity: tuple[Any, ...]) -> _Memos:
    """The memos of every simulated agent with this identity (class, profile, seed, name).

    Every memoized value is a function of the identity and of the truth it was drawn against
    (kept beside it and checked on every read), so agents of one identity can share them. A
    sweep builds the same agents again for every unit of a question: the default attack
    matrix asks for about 7,400 distinct draws 171,000 times. Bounded: the oldest identity
    is dropped beyond :data:`_MEMO_IDENTITIES`, and an identity's memos are emptied once
    they hold :data:`_MEMO_ENTRIES` entries (a long sweep's old questions are not asked again).
    """
    memos = _memos_by_identity.pop(identity, None)
    if memos is None or memos.size() > _MEMO_ENTRIES:
        memos = _Memos()
    while len(_memos_by_identity) >= _MEMO_IDENTITIES:
        del _memos_by_identity[next(iter(_memos_by_identity))]  # the least recently used
    _memos_by_identity[identity] = memos  # (re)inserted last: the most recently used
    return memos


def _profile_values(profile: SimulatedProfile) -> dict[str, Any]:
    """``profile.model_dump()`` (a fresh dict): dumped once per profile, which is frozen,
    instead of once per agent of every unit (every result describes its agents)."""
    return dict(_PROFILE_DUMPS.get(profile, profile.model_dump))


#: The dumps of the profiles described lately.
_PROFILE_DUMPS: ObjectMemo[dict[str, Any]] = ObjectMemo(256)


def _text_id(response: Response) -> str:
    return _hash_text(response.text)


@functools.lru_cache(maxsize=4096)
def _hash_text(text: str) -> str:
    # Cached: a question's few distinct texts are hashed once, not once per judgement.
    return hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=6).hexdigest()


class SimulatedAgent(ConsensusAgent):
    """An honest simulated agent following a :class:`SimulatedProfile` (results are simulated).

    ``ground_truth`` (task id -> the task with its answer) is where the simulator's nature reads
    the ground truth; without one it reads the task it is handed (module docstring).
    """

    simulated = True
    instant = True

    def __init__(
        self,
        name: str,
        profile: SimulatedProfile,
        *,
        group: AgentGroup | None = None,
        seed: int = 0,
        ground_truth: GroundTruth | None = None,
    ) -> None:
        self.name = name
        self.profile = profile
        self.group = group or ("strong" if profile.name == "strong" else "weak")
        self.seed = seed
        self.ground_truth = ground_truth
        # Every draw of this agent's own is keyed by (seed, name, ...): written out once.
        self._draw = KeyPrefix(seed, name)
        # Memos of stable draws (a solution per task, a verdict per response, a score per
        # (task, round, response), a confidence per (task, response)), each entry with the
        # truth it was drawn against: a simulated question asks for them hundreds of times,
        # and each costs several keyed hashes. Shared by every agent of the same identity.
        memos = _shared_memos((type(self), profile, seed, name))
        self._solutions: dict[str, tuple[Task, str]] = memos.solutions
        self._verdicts: dict[tuple[str, str | None, str], tuple[Task, bool]] = memos.verdicts
        self._scores: dict[tuple[str, int, str, str | None], tuple[Task, float]] = memos.scores
        self._confidences: dict[tuple[str, str, str | None], tuple[Task, float]] = memos.confidences

    # -- nature: the only code that reads the ground truth -------------------------------------
    def _truth(self, task: Task) -> Task:
        """``task`` with its ground truth, as nature sees it."""
        return task if self.ground_truth is None else self.ground_truth(task.id)

    def _right(self, task: Task, answer: str | None) -> bool:
        return answer is not None and is_right(self._truth(task), answer)

    def __repr__(self) -> str:
        return f"SimulatedAgent({self.name!r}, profile={self.profile.name!r}, seed={self.seed})"

    # -- latent state -------------------------------------------------------------------------
    def _solves(self, task: Task, own: float) -> bool:
        """Whether the agent solves ``task``, from its own uniform draw ``own`` and, when
        ``difficulty_correlation`` > 0, the task's difficulty shared by the population (a
        Gaussian copula: P(solve) stays ``strength``)."""
        strength, rho = self.profile.strength, self.profile.difficulty_correlation
        if rho == 0 or strength in (0.0, 1.0):
            return own < strength
        normal = NormalDist()
        difficulty = normal.inv_cdf(_open(uniform(self.seed, task.id, "difficulty")))
        latent = math.sqrt(rho) * difficulty + math.sqrt(1 - rho) * normal.inv_cdf(_open(own))
        return latent < normal.inv_cdf(strength)

    def solution(self, task: Task) -> str:
        """The agent's latent solution s_i(x), fixed across rounds."""
        truth = self._truth(task)
        return _remembered(
            self._solutions, task.id, truth, lambda: self._draw_solution(task, truth)
        )

    def _draw_solution(self, task: Task, truth: Task) -> str:
        keys = (self.seed, self.name, task.id)
        draw = self._draw.uniform
        if self._solves(task, draw(task.id, "solve")):
            return truth.answer
        wrong = wrong_answers(truth)
        if draw(task.id, "correlated") < self.profile.error_correlation or len(wrong) == 1:
            return wrong[0]
        if draw(task.id, "spread") < self.profile.answer_spread:
            own = fresh_wrong_answers(truth)[len(wrong) :]
            if own:
                return choice(own, *keys, "own-wrong")
        return choice(wrong[1:], *keys, "which")

    def _answer_anew(
        self,
        task: Task,
        own: Response,
        retained: Retained,
        keys: tuple[object, ...],
    ) -> Response | None:
        """A refinement's answer given anew (``refine_slip``), never one already on offer: the
        truth with probability ``slip_accuracy`` when no one offered it, else a wrong answer no
        one offered (the nearest plausible ones first); None when every candidate is offered.
        """
        offered = {answer_key(task, own.answer)}
        offered |= {answer_key(task, response.answer) for response, _ in retained}
        truth = self._truth(task)
        if (
            answer_key(task, truth.answer) not in offered
            and uniform(*keys, "slip-right") < self.profile.slip_accuracy
        ):
            return Response.of(truth.answer)
        fresh = [w for w in fresh_wrong_answers(truth) if answer_key(task, w) not in offered]
        return Response.of(choice(fresh[:5], *keys, "slip-which")) if fresh else None

    def judges_correct(self, task: Task, response: Response) -> bool:
        """J_i(r): does agent i judge r correct? (see the module docstring)

        A judgement is a stable property of (agent, task, response), like a model's verdict
        at temperature 0: asking again in a later round gives the same verdict.
        """
        if response.answer is None:
            return False
        # (_remembered, inlined: asked for about 200 times per simulated question)
        memo, truth = (task.id, response.answer, response.text), self._truth(task)
        known = self._verdicts.get(memo)
        if known is None or known[0] is not truth:
            known = self._verdicts[memo] = (truth, self._judge(task, response))
        return known[1]

    def _judge(self, task: Task, response: Response) -> bool:
        assert response.answer is not None
        p = self.profile
        if same_answer(task, response.answer, self.solution(task)):
            return self._draw.uniform(task.id, "self-trust") < p.self_trust
        draw = self._draw.uniform(task.id, _text_id(response), "verify")
        if self._right(task, response.answer):
            return draw >= p.false_reject
        return draw < p.false_accept

    def _noisy(self, base: float, *keys: object) -> float:
        value = base + self._draw.gauss(self.profile.calibration_noise, *keys)
        return round(min(1.0, max(0.0, value)), 2)

    # -- the four calls ----------------------------------------------------------------------
    async def answer(self, task: Task, ctx: CallContext | None = None) -> Response:
        return Response.of(self.solution(task))

    async def score(
        self, task: Task, own: Response | None, peer: Response, ctx: CallContext | None = None
    ) -> float:
        return self._scored(task, self._truth(task), ctx.round if ctx else 0, peer)

    async def score_all(
        self, task: Task, own: Response, peers: Mapping[int, Response], ctx: CallContext
    ) -> dict[int, float]:
        # One pass, no call per peer: a simulated question scores ~250 responses
        # (_scored's memo read, inlined).
        truth, round_, memos, task_id = self._truth(task), ctx.round, self._scores, task.id
        scores = {}
        for j, peer in peers.items():
            memo = (task_id, round_, peer.text, peer.answer)
            known = memos.get(memo)
            if known is None or known[0] is not truth:
                known = memos[memo] = (truth, self._score(task, round_, peer))
            scores[j] = known[1]
        return scores

    def _scored(self, task: Task, truth: Task, round_: int, peer: Response) -> float:
        memo = (task.id, round_, peer.text, peer.answer)
        return _remembered(self._scores, memo, truth, lambda: self._score(task, round_, peer))

    def _score(self, task: Task, round_: int, peer: Response) -> float:
        """φ_i(x, r) in round ``round_``: a function of the task, the round and the response
        alone (never of ``own``), so :meth:`score` keeps it per (task, round, response)."""
        keys = (task.id, round_, "score", _text_id(peer))
        if (
            _looks_injected(peer.text)
            and self._draw.uniform(*keys, "inject") < self.profile.injection_susceptibility
        ):
            return 1.0
        judged = self.judges_correct(task, peer)
        p = self.profile
        return self._noisy(p.score_accept if judged else p.score_reject, *keys)

    async def refine(
        self, task: Task, own: Response, retained: Retained, f: int, ctx: CallContext | None = None
    ) -> Response:
        # Dispositions are stable per (agent, task, answers involved), as at temperature 0.
        own_key = answer_key(task, own.answer)
        draw = self._draw.uniform
        if retained and self.profile.refine_slip > 0:
            round_ = ctx.round if ctx is not None else 0
            if draw(task.id, own_key, round_, "slip") < self.profile.refine_slip:
                keys = (self.seed, self.name, task.id, own_key, round_)
                anew = self._answer_anew(task, own, retained, keys)
                if anew is not None:
                    return anew
        believes_own = self.judges_correct(task, own)
        if believes_own and draw(task.id, own_key, "anchor") < self.profile.anchoring:
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
        if best == own_key or draw(task.id, own_key, best, "follow") >= self.profile.susceptibility:
            return own
        return representative[best]

    async def confidence(
        self, task: Task, response: Response, ctx: CallContext | None = None
    ) -> float:
        memo = (task.id, response.text, response.answer)
        return _remembered(
            self._confidences, memo, self._truth(task), lambda: self._confidence(task, response)
        )

    def _confidence(self, task: Task, response: Response) -> float:
        p = self.profile
        right = self._right(task, response.answer)
        # Stable per (agent, task, response), like the judgement: the same confidence prompt at
        # temperature 0 gets the same reply in every round.
        keys = (task.id, "confidence", _text_id(response))
        at_one = p.confidence_at_one_right if right else p.confidence_at_one_wrong
        if self._draw.uniform(*keys, "at-one") < at_one:
            return 1.0
        # Below 1.0 otherwise, so the mass at exactly 1.0 is the parameter's.
        return min(0.99, self._noisy(p.confidence_right if right else p.confidence_wrong, *keys))

    def describe(self) -> dict[str, Any]:
        return {
            **super().describe(),
            "family": "simulated",
            "seed": self.seed,
            "profile": _profile_values(self.profile),
        }
