"""The one round engine every consensus protocol runs on.

A run is a set of questions; each question goes through T synchronous rounds on the network.
Within a round every *stage* (answer, score, confidence, refine) issues all its model calls at
once, across agents and, because questions run as concurrent coroutines, across questions too:
the wall time of a run is about (1 + stages·T) model latencies, bounded only by the models'
own concurrency limits. An agent's self-score s_{i→i} is requested together with its
neighbour scores (Algorithm 1, line 4 computes them in the same step).
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

import networkx as nx

from byzllm.agents.consensus import (
    CallContext,
    CallMeter,
    ConsensusAgent,
    Response,
    RoundView,
    answer_key,
    is_right,
)
from byzllm.errors import InputError
from byzllm.tasks import Task

from ._trace import AgentRound, QuestionTrace

__all__ = [
    "ConsensusProtocol",
    "Network",
    "QuestionState",
    "run_consensus",
    "run_question",
]

_T = TypeVar("_T")


class Network:
    """Agents placed on the nodes of an undirected communication graph 𝒢 (§3.1).

    Node ``i`` of the graph is ``agents[i]``; graphs whose nodes are not ``0..n-1`` are
    relabelled in sorted node order.
    """

    def __init__(self, graph: nx.Graph[Any], agents: Sequence[ConsensusAgent]) -> None:
        if graph.number_of_nodes() != len(agents):
            raise InputError(
                f"the graph has {graph.number_of_nodes()} nodes but {len(agents)} agents were given"
            )
        if graph.is_directed():
            raise InputError("consensus graphs are undirected (§3.1); got a directed graph")
        if set(graph.nodes) != set(range(len(agents))):
            graph = nx.convert_node_labels_to_integers(graph, ordering="sorted")
        self.graph = graph
        self.agents = list(agents)
        self.neighbours: list[list[int]] = [
            sorted(int(j) for j in graph.neighbors(i) if j != i) for i in range(len(agents))
        ]
        self.honest = frozenset(i for i, a in enumerate(self.agents) if a.honest)
        self.adversaries = frozenset(i for i, a in enumerate(self.agents) if not a.honest)

    @property
    def n(self) -> int:
        """Number of agents."""
        return len(self.agents)

    @property
    def groups(self) -> list[str]:
        """Group of every agent (``strong`` / ``weak`` / ``byzantine``)."""
        return [a.group for a in self.agents]


@dataclass
class QuestionState:
    """The evolving state of one question: current responses, inboxes and stage results."""

    task: Task
    network: Network
    round: int = 0
    current: dict[int, Response] = field(default_factory=dict)
    inbox: dict[int, dict[int, Response]] = field(default_factory=dict)
    info: dict[int, dict[str, Any]] = field(default_factory=dict)
    meters: dict[int, CallMeter] = field(default_factory=dict)
    f: int | None = None
    shared: dict[Any, Any] = field(default_factory=dict)

    def ctx(self, agent: int, peer: int | None = None) -> CallContext:
        """A call context charging ``agent``'s meter of the current round."""
        meter = self.meters.setdefault(agent, CallMeter())
        return CallContext(
            round=self.round, agent=agent, peer=peer, meter=meter, f=self.f, shared=self.shared
        )

    def view(self) -> RoundView:
        """What adversaries see in this round."""
        return RoundView(
            round=self.round,
            responses=dict(self.current),
            honest=self.network.honest,
            adversaries=self.network.adversaries,
        )

    def note(self, agent: int, **values: Any) -> None:
        """Record stage results (scores, retained, ...) of ``agent`` for this round."""
        self.info.setdefault(agent, {}).update(values)


async def gather_map(calls: Mapping[Any, Awaitable[_T]]) -> dict[Any, _T]:
    """Await every call concurrently; results keyed like ``calls``."""
    keys = list(calls)
    results = await asyncio.gather(*(calls[k] for k in keys))
    return dict(zip(keys, results, strict=True))


class ConsensusProtocol(ABC):
    """A consensus protocol: how honest agents turn round-t messages into r^(t+1).

    Subclasses implement :meth:`step`; the engine handles initial answers, adversaries'
    messages, concurrency and records.
    """

    #: Registry name (``sac``, ``cp-wbft``, ``debate``, ``majority``, ``w-msr``).
    name: ClassVar[str]

    def __init__(self, F: int = 0) -> None:
        if F < 0:
            raise InputError(f"F must be >= 0, got {F}")
        self.F = F

    def __repr__(self) -> str:
        return f"{type(self).__name__}(F={self.F})"

    async def initial(self, state: QuestionState) -> dict[int, Response]:
        """Initial responses r_i^(0) = M_i(x) of the honest agents (Eq. (1))."""
        task = state.task
        return await gather_map(
            {i: state.network.agents[i].answer(task, state.ctx(i)) for i in state.network.honest}
        )

    @abstractmethod
    async def step(self, state: QuestionState) -> dict[int, Response]:
        """The honest agents' next responses r^(t+1), from ``state.inbox`` (round t)."""


async def _publish_adversaries(state: QuestionState) -> None:
    agents = state.network.agents
    view = state.view()
    publics = await gather_map(
        {b: agents[b].public(state.task, view, state.ctx(b)) for b in state.network.adversaries}
    )
    state.current.update(publics)


async def _deliver(state: QuestionState) -> None:
    """Stage 1 (broadcast): every honest agent receives one message per neighbour."""
    agents, view = state.network.agents, state.view()
    state.inbox = {i: {} for i in state.network.honest}
    calls = {}
    for i in state.network.honest:
        for j in state.network.neighbours[i]:
            if type(agents[j]).message is ConsensusAgent.message:
                state.inbox[i][j] = state.current[j]  # plain broadcast: no call to schedule
            else:
                calls[(i, j)] = agents[j].message(
                    state.task, state.current[j], i, view, state.ctx(j, peer=i)
                )
    for (i, j), message in (await gather_map(calls)).items():
        state.inbox[i][j] = message
    for i in state.network.honest:  # neighbours in index order, whatever finished first
        state.inbox[i] = dict(sorted(state.inbox[i].items()))


def _record(state: QuestionState) -> list[AgentRound]:
    rows = []
    for i in range(state.network.n):
        response = state.current[i]
        meter = state.meters.get(i, CallMeter())
        info = state.info.get(i, {})
        rows.append(
            AgentRound(
                agent=i,
                round=state.round,
                answer=response.answer,
                key=answer_key(state.task, response.answer),
                text=response.text,
                correct=is_right(state.task, response.answer),
                calls=meter.calls,
                cached_calls=meter.cached_calls,
                saved_calls=meter.saved_calls,
                input_tokens=meter.input_tokens,
                output_tokens=meter.output_tokens,
                latency_s=round(meter.latency_s, 6),
                parse=meter.parse.to_dict(),
                **info,
            )
        )
    return rows


async def run_question(
    protocol: ConsensusProtocol, network: Network, task: Task, T: int
) -> QuestionTrace:
    """Run ``protocol`` for ``T`` rounds on one question; returns the full trace."""
    if T < 0:
        raise InputError(f"T must be >= 0, got {T}")
    state = QuestionState(task=task, network=network, f=protocol.F)
    agents = network.agents
    initial, _ = await asyncio.gather(
        protocol.initial(state),
        asyncio.gather(*(agents[b].prepare(task, state.ctx(b)) for b in network.adversaries)),
    )
    state.current.update(initial)
    rounds: list[list[AgentRound]] = []
    for t in range(T + 1):
        state.round = t
        await _publish_adversaries(state)
        if t == T:
            rounds.append(_record(state))
            break
        await _deliver(state)
        nxt = await protocol.step(state)
        rounds.append(_record(state))
        state.current.update(nxt)
        state.info, state.meters = {}, {}
    return QuestionTrace(
        task_id=task.id,
        protocol=protocol.name,
        truth=task.answer,
        groups=network.groups,
        rounds=rounds,
    )


async def run_consensus(
    protocol: ConsensusProtocol,
    network: Network,
    tasks: Sequence[Task],
    T: int,
    *,
    max_concurrent_questions: int | None = None,
    on_done: Callable[[QuestionTrace], None] | None = None,
) -> list[QuestionTrace]:
    """Run ``protocol`` on every task concurrently (one trace per task, in task order).

    Model calls are bounded by each model's own concurrency limit; ``max_concurrent_questions``
    optionally bounds how many questions are in flight (memory, fairness).
    """
    limit = asyncio.Semaphore(max_concurrent_questions) if max_concurrent_questions else None

    async def one(task: Task) -> QuestionTrace:
        if limit is None:
            trace = await run_question(protocol, network, task, T)
        else:
            async with limit:
                trace = await run_question(protocol, network, task, T)
        if on_done is not None:
            on_done(trace)
        return trace

    return list(await asyncio.gather(*(one(t) for t in tasks)))
