"""The round engine: stage concurrency across agents and questions, records, validation."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import networkx as nx
import pytest

from byzllm.agents.consensus import (
    STRONG_PROFILE,
    WEAK_PROFILE,
    CallContext,
    ConsensusAgent,
    Response,
    ScoredResponse,
    SimulatedAgent,
    make_adversary,
)
from byzllm.errors import InputError
from byzllm.protocols import SAC, Network, make_protocol, run_consensus
from byzllm.tasks import Task, synthetic_tasks


class Gauge:
    def __init__(self) -> None:
        self.now = 0
        self.peak: dict[str, int] = {}

    async def hold(self, stage: str) -> None:
        self.now += 1
        self.peak[stage] = max(self.peak.get(stage, 0), self.now)
        await asyncio.sleep(0.01)
        self.now -= 1


class SlowAgent(ConsensusAgent):
    def __init__(self, name: str, gauge: Gauge) -> None:
        self.name, self.group, self.gauge = name, "strong", gauge

    async def answer(self, task: Task, ctx: CallContext) -> Response:
        await self.gauge.hold("answer")
        return Response.of(task.answer)

    async def score(
        self, task: Task, own: Response | None, peer: Response, ctx: CallContext
    ) -> float:
        await self.gauge.hold("score")
        return 0.9

    async def refine(
        self,
        task: Task,
        own: Response,
        retained: Sequence[ScoredResponse],
        f: int,
        ctx: CallContext,
    ) -> Response:
        await self.gauge.hold("refine")
        return own

    async def confidence(self, task: Task, response: Response, ctx: CallContext) -> float:
        await self.gauge.hold("confidence")
        return 0.9


async def test_every_stage_runs_concurrently_across_agents_and_questions() -> None:
    gauge = Gauge()
    agents = [SlowAgent(f"a{k}", gauge) for k in range(4)]
    tasks = synthetic_tasks(5, seed=0)
    await run_consensus(SAC(F=1), Network(nx.complete_graph(4), agents), tasks, T=2)
    # 5 questions × 4 agents; scores: 4 agents × (3 neighbours + the self-score) per question.
    # Questions are not kept in lock-step, so under load one question's round-2 stage may
    # overlap another's round-1 stage: the peaks are lower bounds, except for the one-off answers.
    assert gauge.peak["answer"] == 20
    assert gauge.peak["score"] >= 5 * 4 * 4
    assert gauge.peak["refine"] >= 20


async def test_cpwbft_confidence_stage_is_concurrent() -> None:
    gauge = Gauge()
    agents = [SlowAgent(f"a{k}", gauge) for k in range(3)]
    await run_consensus(
        make_protocol("cp-wbft"), Network(nx.complete_graph(3), agents), synthetic_tasks(2), T=1
    )
    assert gauge.peak["confidence"] == 6


async def test_results_do_not_depend_on_question_batching() -> None:
    tasks = synthetic_tasks(6, seed=3)
    ood = synthetic_tasks(10, seed=99)

    def network() -> Network:
        agents: list[ConsensusAgent] = [
            SimulatedAgent(f"strong-{k}", STRONG_PROFILE, seed=2) for k in range(4)
        ]
        agents += [SimulatedAgent(f"weak-{k}", WEAK_PROFILE, seed=2) for k in range(2)]
        source = SimulatedAgent("src", WEAK_PROFILE, seed=2)
        agents.append(make_adversary("replay", "b", ood_tasks=ood, replay_source=source, seed=2))
        return Network(nx.complete_graph(7), agents)

    together = await run_consensus(SAC(F=3), network(), tasks, T=3)
    one_by_one = [
        (await run_consensus(SAC(F=3), network(), [t], T=3, max_concurrent_questions=1))[0]
        for t in reversed(tasks)
    ]
    assert [t.model_dump() for t in together] == [t.model_dump() for t in reversed(one_by_one)]


def test_network_validation() -> None:
    agent = SimulatedAgent("s", STRONG_PROFILE)
    with pytest.raises(InputError, match="nodes"):
        Network(nx.complete_graph(3), [agent])
    with pytest.raises(InputError, match="undirected"):
        Network(nx.DiGraph([(0, 1)]), [agent, agent])
    three = [SimulatedAgent(f"s{k}", STRONG_PROFILE) for k in range(3)]
    relabelled = Network(nx.relabel_nodes(nx.path_graph(3), {0: "a", 1: "b", 2: "c"}), three)
    assert relabelled.neighbours == [[1], [0, 2], [1]]


async def test_negative_rounds_are_rejected() -> None:
    agent = SimulatedAgent("s", STRONG_PROFILE)
    with pytest.raises(InputError):
        await run_consensus(SAC(), Network(nx.complete_graph(1), [agent]), synthetic_tasks(1), T=-1)


class WaitingSimulated(SimulatedAgent):
    """A simulated agent whose calls wait on the loop once before answering."""

    async def answer(self, task: Task, ctx: CallContext | None = None) -> Response:
        await asyncio.sleep(0)
        return await super().answer(task, ctx)

    async def score(
        self, task: Task, own: Response | None, peer: Response, ctx: CallContext | None = None
    ) -> float:
        await asyncio.sleep(0)
        return await super().score(task, own, peer, ctx)


def _simulated_network(waiting: bool = False) -> Network:
    cls = WaitingSimulated if waiting else SimulatedAgent
    agents: list[ConsensusAgent] = [cls(f"strong-{k}", STRONG_PROFILE, seed=5) for k in range(4)]
    agents += [cls(f"weak-{k}", WEAK_PROFILE, seed=5) for k in range(2)]
    source = SimulatedAgent("src", WEAK_PROFILE, seed=5)
    ood = synthetic_tasks(10, seed=98)
    agents.append(make_adversary("replay", "b", ood_tasks=ood, replay_source=source, seed=5))
    return Network(nx.complete_graph(7), agents)


@pytest.mark.parametrize("protocol", ["sac", "cp-wbft", "debate", "majority", "w-msr"])
@pytest.mark.parametrize("waiting", [False, True])
async def test_instant_networks_run_inline_with_the_same_results(
    protocol: str, waiting: bool
) -> None:
    """Simulated agents' stages run inline (no task per call); calls that do wait are still
    awaited; the traces equal those of the task-per-call path."""
    tasks = synthetic_tasks(4, seed=7)
    inline = _simulated_network(waiting)
    assert inline.instant
    on_tasks = _simulated_network(waiting)
    on_tasks.instant = False
    got = await run_consensus(make_protocol(protocol, F=3), inline, tasks, T=3)
    want = await run_consensus(make_protocol(protocol, F=3), on_tasks, tasks, T=3)
    assert [t.model_dump() for t in got] == [t.model_dump() for t in want]


def test_a_network_with_a_waiting_agent_is_not_instant() -> None:
    network = _simulated_network()
    gauge = Gauge()
    assert not Network(nx.complete_graph(8), [*network.agents, SlowAgent("x", gauge)]).instant


async def test_inline_gather_raises_and_closes_the_calls_it_did_not_start() -> None:
    from byzllm.protocols._engine import gather_map

    started: list[str] = []

    async def ok(name: str) -> str:
        started.append(name)
        return name

    async def boom() -> str:
        raise ValueError("boom")

    never = ok("never")
    with pytest.raises(ValueError, match="boom"):
        await gather_map({"a": ok("a"), "b": boom(), "c": never}, inline=True)
    assert started == ["a"]
    assert never.cr_frame is None  # closed, not left pending ("never awaited")


async def test_inline_gather_keeps_the_keys_order_when_some_calls_wait() -> None:
    from byzllm.protocols._engine import gather_map

    async def later(value: int) -> int:
        await asyncio.sleep(0.001 * value)
        return value

    async def now(value: int) -> int:
        return value

    calls = {3: later(3), 1: now(1), 2: later(1), 0: now(0)}
    assert await gather_map(calls, inline=True) == {3: 3, 1: 1, 2: 1, 0: 0}
    assert list(await gather_map({k: now(k) for k in (2, 0, 1)}, inline=True)) == [2, 0, 1]


async def test_cancelling_an_inline_gather_reaches_the_waiting_call() -> None:
    from byzllm.protocols._engine import gather_map

    seen: list[str] = []

    async def waits() -> int:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise
        return 1

    task = asyncio.ensure_future(gather_map({"w": waits()}, inline=True))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert seen == ["cancelled"]
