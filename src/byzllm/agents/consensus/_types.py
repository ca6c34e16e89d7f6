"""The consensus-agent interface shared by LLM-backed, simulated and Byzantine agents.

An agent answers a task (Eq. (1) of the SAC paper), scores a response on the receiver side
(φ_i of Eq. (2)), refines its response from the retained neighbours (Eq. (5)) and reports a
self-confidence (what CP-WBFT aggregates). Protocols depend only on this interface, so every
protocol runs unchanged on every agent family.
"""

from __future__ import annotations

import asyncio
import functools
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from byzllm.llm import Completion
from byzllm.tasks import Task

from .._parsed import ParseCounts

__all__ = [
    "AgentGroup",
    "CallContext",
    "CallMeter",
    "ConsensusAgent",
    "Response",
    "Retained",
    "RoundView",
    "ScoredResponse",
]

#: Which population an agent belongs to: strong / weak honest agents, or adversaries.
AgentGroup = Literal["strong", "weak", "byzantine"]

#: Longest message text kept verbatim; longer texts (e.g. a 1 MB adversarial message) are cut so
#: a single message can neither blow up a prompt nor the result store.
MAX_MESSAGE_CHARS = 8_000


class Response(BaseModel):
    """One agent's response r_i: the message text sent to neighbours and its extracted answer.

    ``answer`` is ``None`` when no final answer could be extracted (the paper's refine keeps the
    previous response in that case, Appendix B.2).
    """

    model_config = ConfigDict(frozen=True)

    text: str
    answer: str | None

    @classmethod
    def of(cls, answer: str | None, text: str | None = None) -> Response:
        """A response whose text is ``text`` (default: the answer itself), cut to a safe size."""
        body = ((answer or "") if text is None else text)[:MAX_MESSAGE_CHARS]
        if cls is Response and (answer is None or len(answer) <= _SHARED_ANSWER_CHARS):
            return _shared_response(body, answer)
        return cls(text=body, answer=answer)


#: Longest answer whose responses are shared (:func:`_shared_response`).
_SHARED_ANSWER_CHARS = 64


@functools.lru_cache(maxsize=1024)
def _shared_response(text: str, answer: str | None) -> Response:
    # Responses are frozen, so equal ones can be one object: a simulated question makes ~45
    # of them, mostly the same few answers, each validated anew before.
    return Response(text=text, answer=answer)


#: A retained neighbour response with the receiver-side score s_{i→j} (``None`` for protocols
#: that do not score, such as debate).
ScoredResponse = tuple[Response, float | None]

#: What an agent refines from: the neighbour responses it kept, with their scores (the SAC
#: paper, Eq. (5)).
Retained = Sequence[ScoredResponse]


@dataclass
class CallMeter:
    """Model-call accounting of one agent in one round (what the result store keeps).

    ``parse`` counts the replies the agent parsed, per stage, and how many fell back to the
    parser's default (shared and cached replies are parsed, so they count too).
    """

    calls: int = 0
    cached_calls: int = 0
    saved_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    latency_s: float = 0.0
    parse: ParseCounts = field(default_factory=ParseCounts)

    def add(self, completion: Completion, *, shared: bool = False) -> None:
        """Account one completion.

        ``shared`` marks a reply reused from an identical request of the same question (a
        call saved); a ``cached`` completion came from the response cache (no server call).
        Only server calls count in ``calls`` and carry tokens and latency.
        """
        if shared:
            self.saved_calls += 1
            return
        if completion.cached:
            self.cached_calls += 1
            return
        self.calls += 1
        self.input_tokens += completion.usage.input_tokens
        self.output_tokens += completion.usage.output_tokens
        self.latency_s += completion.latency_s

    def merge(self, other: CallMeter) -> None:
        """Add ``other``'s counts to this meter (every field: the counters, then ``parse``)."""
        for f in fields(self):
            if f.name != "parse":
                setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))
        self.parse.merge(other.parse)


@dataclass
class CallContext:
    """Where a call happens: the round, the agents involved and the meter to charge.

    Simulated agents seed their randomness from (agent, task, round, call) so results do not
    depend on the order in which concurrent calls are scheduled.
    """

    round: int = 0
    agent: int = 0
    peer: int | None = None
    meter: CallMeter = field(default_factory=CallMeter)
    #: The protocol's adversary bound F (the prompts' "up to f responses may be malicious").
    f: int | None = None
    #: Per-question table of in-flight/finished deterministic requests (single-flight).
    shared: dict[Any, Any] | None = None


@dataclass(frozen=True)
class RoundView:
    """What an (omniscient) adversary may see when choosing its round-t messages.

    ``responses`` maps every agent to its current response r^(t) (honest agents' responses are
    fixed before adversaries speak: the standard rushing adversary).
    """

    round: int
    responses: Mapping[int, Response]
    honest: frozenset[int]
    adversaries: frozenset[int]


class ConsensusAgent(ABC):
    """An agent of a consensus protocol (SAC Algorithm 1, CP-WBFT, debate, majority, W-MSR).

    Honest agents implement the four calls. Adversarial agents (``honest = False``) additionally
    choose what they send to each neighbour in :meth:`message`; protocols never ask them to
    score or refine (they do not follow the protocol, Definition 3.1).

    Every agent also sets ``name`` and ``group``; a network refuses agents without them
    (:class:`~byzllm.protocols.Network`).
    """

    #: Display name, unique within a network (e.g. ``"strong-0"``): simulated agents seed their
    #: randomness by name, so two agents of one name would act as one.
    name: str
    #: Population group used by the group-wise metrics (§5.1): ``"strong"`` or ``"weak"`` for
    #: honest agents, ``"byzantine"`` for adversaries. No default: the metrics tell honest
    #: agents from adversaries by it, and a guessed group would miscount an agent.
    group: AgentGroup
    #: ``False`` for adversarial Byzantine agents 𝒜 (faulty agents are honest but weak).
    honest: bool = True
    #: Whether results from this agent are simulated (labelled as such everywhere).
    simulated: bool = False
    #: Whether every call finishes without waiting on anything (no model, no I/O): the round
    #: engine then runs the calls of a network of such agents inline instead of as tasks.
    #: Results never depend on it; a call that does wait is still awaited.
    instant: bool = False

    @abstractmethod
    async def answer(self, task: Task, ctx: CallContext | None = None) -> Response:
        """Initial response r_i^(0) = M_i(x) (Eq. (1))."""

    @abstractmethod
    async def score(
        self, task: Task, own: Response | None, peer: Response, ctx: CallContext | None = None
    ) -> float:
        """Receiver-side score φ_i(x, r) ∈ [0, 1] of ``peer`` (Eq. (2), Appendix B.1).

        ``own`` is the receiver's current response; Appendix B.1's prompt does not show it
        (the receiver solves the problem independently), so LLM-backed agents ignore it.
        """

    async def score_all(
        self, task: Task, own: Response, peers: Mapping[int, Response], ctx: CallContext
    ) -> dict[int, float]:
        """φ_i(x, r_j) for every ``peers[j]``: one agent's scoring step (SAC Algorithm 1,
        line 4, its neighbours and itself) as one call.

        The default asks :meth:`score` once per peer, concurrently, each with ``ctx`` naming
        its peer (``ctx.peer``), so model calls go out as before; an agent that answers
        without waiting may score them all in one pass instead (no call per peer).
        """
        if self.instant:
            return {
                j: await self.score(task, own, peer, replace(ctx, peer=j))
                for j, peer in peers.items()
            }
        scores = await asyncio.gather(
            *(self.score(task, own, peer, replace(ctx, peer=j)) for j, peer in peers.items())
        )
        return dict(zip(peers, scores, strict=True))

    @abstractmethod
    async def refine(
        self, task: Task, own: Response, retained: Retained, f: int, ctx: CallContext | None = None
    ) -> Response:
        """Refined response r_i^(t+1) from ``own`` and the retained neighbours (Eq. (5))."""

    @abstractmethod
    async def confidence(
        self, task: Task, response: Response, ctx: CallContext | None = None
    ) -> float:
        """Self-reported confidence in ``response`` ∈ [0, 1] (what CP-WBFT aggregates)."""

    async def message(
        self, task: Task, own: Response, receiver: int, view: RoundView, ctx: CallContext
    ) -> Response:
        """What this agent sends to neighbour ``receiver`` in round ``view.round``.

        Honest agents broadcast their current response to every neighbour (Algorithm 1,
        line 3); adversaries override this.
        """
        return own

    async def prepare(self, task: Task, ctx: CallContext) -> None:  # noqa: B027 - optional hook
        """Work an adversary can do before round 0 (runs alongside the initial answers)."""

    async def public(self, task: Task, view: RoundView | None, ctx: CallContext) -> Response:
        """An adversary's own round-t response r_b^(t) (what majority metrics count).

        Only called for agents with ``honest = False``; the default is its initial answer.
        """
        return await self.answer(task, ctx)

    def describe(self) -> dict[str, Any]:
        """The agent's parameters, reported alongside every result it produces."""
        return {"name": self.name, "group": self.group, "honest": self.honest}
