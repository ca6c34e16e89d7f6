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
from collections.abc import Awaitable, Callable, Coroutine, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from types import CoroutineType
from typing import Any, ClassVar, Generic, TypeVar

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
    relabelled in sorted node order. Agents need names unique within the network and a
    ``group`` that agrees with ``honest`` (:class:`InputError` otherwise, before any call).
    """

    def __init__(self, graph: nx.Graph[Any], agents: Sequence[ConsensusAgent]) -> None:
        if graph.number_of_nodes() != len(agents):
            raise InputError(
                f"the graph has {graph.number_of_nodes()} nodes but {len(agents)} agents were given"
            )
        if graph.is_directed():
            raise InputError("consensus graphs are undirected (§3.1); got a directed graph")
        _check_agents(agents)
        if set(graph.nodes) != set(range(len(agents))):
            graph = nx.convert_node_labels_to_integers(graph, ordering="sorted")
        self.graph = graph
        self.agents = list(agents)
        self.neighbours: list[list[int]] = [
            sorted(int(j) for j in graph.neighbors(i) if j != i) for i in range(len(agents))
        ]
        self.honest = frozenset(i for i, a in enumerate(self.agents) if a.honest)
        self.adversaries = frozenset(i for i, a in enumerate(self.agents) if not a.honest)
        #: Every agent answers without waiting (simulated, rule-based): stages run inline.
        self.instant = all(getattr(a, "instant", False) for a in self.agents)
        #: Whether each agent sends every neighbour its current response (no message call).
        self.broadcasts = [type(a).message is ConsensusAgent.message for a in self.agents]

    @property
    def n(self) -> int:
        """Number of agents."""
        return len(self.agents)

    @property
    def groups(self) -> list[str]:
        """Group of every agent (``strong`` / ``weak`` / ``byzantine``)."""
        return [a.group for a in self.agents]


#: The groups an honest agent may be in (:data:`~byzllm.agents.consensus.AgentGroup`); an
#: adversary is ``byzantine``.
_HONEST_GROUPS = ("strong", "weak")


def _check_agents(agents: Sequence[ConsensusAgent]) -> None:
    """Refuse a population the round engine and the metrics would misread, before any call.

    Every agent needs a ``name`` of its own: simulated agents seed their randomness by name,
    so two of one name are one agent counted twice. And a ``group`` that agrees with
    ``honest``: the protocols tell adversaries by ``honest``, the metrics by ``group``, so an
    adversary in an honest group would be scored as honest.
    """
    seen: set[str] = set()
    repeated: list[str] = []
    for i, agent in enumerate(agents):
        name = getattr(agent, "name", None)
        if not isinstance(name, str) or not name:
            raise InputError(
                f"agent {i} ({type(agent).__name__}) has no name: set `name`, a string unique "
                "within the network"
            )
        if name in seen and name not in repeated:
            repeated.append(name)
        seen.add(name)
        group = getattr(agent, "group", None)
        wanted = _HONEST_GROUPS if agent.honest else ("byzantine",)
        if group not in wanted:
            found = "has no group" if group is None else f"has group {group!r}"
            raise InputError(
                f"agent {name!r} ({type(agent).__name__}) {found}: set `group` to "
                + (
                    '"strong" or "weak" (an honest agent)'
                    if agent.honest
                    else '"byzantine" (an adversary, honest = False)'
                )
                + "; the group-wise metrics count agents by it"
            )
    if repeated:
        raise InputError(
            "agent names must be unique within a network (simulated agents are seeded by "
            f"name, so same-named agents act as one): repeated {', '.join(map(repr, repeated))}"
        )


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
        meter = self.meters.get(agent)
        if meter is None:  # (not setdefault: it would build a meter on every call)
            meter = self.meters[agent] = CallMeter()
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

    async def gather(self, calls: Mapping[Any, Awaitable[_T]]) -> dict[Any, _T]:
        """One stage's calls, concurrently (:func:`gather_map`); inline on an instant network."""
        return await gather_map(calls, inline=self.network.instant)


async def gather_map(calls: Mapping[Any, Awaitable[_T]], *, inline: bool = False) -> dict[Any, _T]:
    """Await every call concurrently; results keyed like ``calls``.

    ``inline``: run each call in place until it finishes or first waits, and await only
    those that wait (concurrently). For agents that never wait (simulated ones) this skips a
    task per call, most of a simulated question's cost; the results are the same.
    """
    keys = list(calls)
    if inline:
        return await _gather_inline(calls, keys)
    results = await asyncio.gather(*(calls[k] for k in keys))
    return dict(zip(keys, results, strict=True))


async def _gather_inline(calls: Mapping[Any, Awaitable[_T]], keys: list[Any]) -> dict[Any, _T]:
    done: dict[Any, _T] = {}
    waiting: dict[Any, Awaitable[_T]] = {}
    for position, key in enumerate(keys):
        call = calls[key]
        if not isinstance(call, CoroutineType):  # (an exact type check: the ABC's is slow)
            waiting[key] = call
            continue
        try:
            first = call.send(None)
        except StopIteration as finished:
            done[key] = finished.value
            continue
        except BaseException:
            for later in keys[position + 1 :]:  # never started: close, as a cancelled task would
                pending = calls[later]
                if isinstance(pending, CoroutineType):
                    pending.close()
            for started in waiting.values():
                if isinstance(started, _Started):
                    started.close()
            raise
        waiting[key] = _Started(call, first)
    if waiting:
        results = await asyncio.gather(*waiting.values())
        done.update(zip(waiting, results, strict=True))
    return {key: done[key] for key in keys}


class _Started(Generic[_T]):
    """A coroutine already run up to its first wait (``first``, what it yielded), awaited on
    from there: what it yields goes to the event loop and what the loop sends or throws goes
    back to it, exactly as if a task had run it from the start."""

    __slots__ = ("_coro", "_first")

    def __init__(self, coro: Coroutine[Any, Any, _T], first: Any) -> None:
        self._coro, self._first = coro, first

    def close(self) -> None:
        self._coro.close()

    def __await__(self) -> Generator[Any, Any, _T]:
        coro, value = self._coro, self._first
        while True:
            try:
                sent = yield value
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as exc:
                try:
                    value = coro.throw(exc)
                except StopIteration as finished:
                    return finished.value  # type: ignore[no-any-return]
            else:
                try:
                    value = coro.send(sent)
                except StopIteration as finished:
                    return finished.value  # type: ignore[no-any-return]


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
        return await state.gather(
            {i: state.network.agents[i].answer(task, state.ctx(i)) for i in state.network.honest}
        )

    @abstractmethod
    async def step(self, state: QuestionState) -> dict[int, Response]:
        """The honest agents' next responses r^(t+1), from ``state.inbox`` (round t)."""


async def _publish_adversaries(state: QuestionState) -> None:
    agents = state.network.agents
    view = state.view()
    publics = await state.gather(
        {b: agents[b].public(state.task, view, state.ctx(b)) for b in state.network.adversaries}
    )
    state.current.update(publics)


async def _deliver(state: QuestionState) -> None:
    """Stage 1 (broadcast): every honest agent receives one message per neighbour."""
    network, current = state.network, state.current
    agents, view = network.agents, state.view()
    state.inbox = {i: {} for i in network.honest}
    calls = {}
    for i in network.honest:
        inbox = state.inbox[i]
        for j in network.neighbours[i]:
            if network.broadcasts[j]:
                inbox[j] = current[j]  # plain broadcast: no call to schedule
            else:
                calls[(i, j)] = agents[j].message(
                    state.task, current[j], i, view, state.ctx(j, peer=i)
                )
    if not calls:  # every inbox was filled in neighbour order
        return
    for (i, j), message in (await state.gather(calls)).items():
        state.inbox[i][j] = message
    for i in network.honest:  # neighbours in index order, whatever finished first
        state.inbox[i] = dict(sorted(state.inbox[i].items()))


def _record(state: QuestionState) -> list[AgentRound]:
    # On a network of agents that call no model every value below has its field's exact type
    # (the engine's own counters, the protocols' floats and lists): rows are built without
    # validation there. Rows of model-backed agents are validated as ever.
    make = AgentRound.trusted if state.network.instant else AgentRound.model_validate
    task, meters, infos = state.task, state.meters, state.info
    rows = []
    for i in range(state.network.n):
        response = state.current[i]
        meter = meters.get(i) or _NO_CALLS
        rows.append(
            make(
                {
                    "agent": i,
                    "round": state.round,
                    "answer": response.answer,
                    "key": answer_key(task, response.answer),
                    "text": response.text,
                    "correct": is_right(task, response.answer),
                    "calls": meter.calls,
                    "cached_calls": meter.cached_calls,
                    "saved_calls": meter.saved_calls,
                    "input_tokens": meter.input_tokens,
                    "output_tokens": meter.output_tokens,
                    "latency_s": round(meter.latency_s, 6),
                    "parse": meter.parse.to_dict(),
                    **infos.get(i, {}),
                }
            )
        )
    return rows


#: The meter of an agent that made no call this round (read only).
_NO_CALLS = CallMeter()


async def run_question(
    protocol: ConsensusProtocol, network: Network, task: Task, T: int
) -> QuestionTrace:
    """Run ``protocol`` for ``T`` rounds on one question; returns the full trace."""
    if T < 0:
        raise InputError(f"T must be >= 0, got {T}")
    state = QuestionState(task=task, network=network, f=protocol.F)
    agents = network.agents
    if network.instant:
        prepared = {b: agents[b].prepare(task, state.ctx(b)) for b in network.adversaries}
        initial = await protocol.initial(state)
        await state.gather(prepared)
    else:
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
