"""A network refuses, when it is built, agents the engine or the metrics would misread."""

from __future__ import annotations

import asyncio
from typing import Any

import networkx as nx
import pytest

from byzllm.agents.consensus import (
    STRONG_PROFILE,
    WEAK_PROFILE,
    CallContext,
    ConsensusAgent,
    Response,
    SimulatedAgent,
    make_adversary,
)
from byzllm.errors import InputError
from byzllm.protocols import Network, compute_metrics, make_protocol, run_consensus
from byzllm.tasks import Task, synthetic_tasks


class Plain(ConsensusAgent):
    """An agent written to the four documented calls and nothing else; counts its calls."""

    def __init__(self, name: str, **attributes: Any) -> None:
        self.name = name
        self.calls = 0
        for key, value in attributes.items():
            setattr(self, key, value)

    async def answer(self, task: Task, ctx: CallContext | None = None) -> Response:
        self.calls += 1
        return Response.of(task.answer)

    async def score(self, task: Task, own: Any, peer: Any, ctx: Any = None) -> float:
        self.calls += 1
        return 1.0

    async def refine(self, task: Task, own: Any, retained: Any, f: int, ctx: Any = None) -> Any:
        self.calls += 1
        return own

    async def confidence(self, task: Task, response: Any, ctx: Any = None) -> float:
        self.calls += 1
        return 0.9


def test_an_agent_without_a_group_is_refused_before_any_call() -> None:
    agents: list[ConsensusAgent] = [Plain(f"m{i}") for i in range(6)]
    agents.append(make_adversary("collude", "b0"))
    with pytest.raises(InputError, match=r"agent 'm0' \(Plain\) has no group: set `group`"):
        Network(nx.complete_graph(7), agents)
    assert all(a.calls == 0 for a in agents if isinstance(a, Plain))


@pytest.mark.parametrize(
    ("attributes", "message"),
    [
        ({"group": "medium"}, r"has group 'medium': set `group` to .strong. or .weak."),
        ({"group": "byzantine"}, r"has group 'byzantine': set `group` to .strong. or .weak."),
        ({"honest": False}, r"has no group: set `group` to .byzantine."),
        ({"honest": False, "group": "strong"}, r"has group 'strong': set `group` to .byzantine."),
    ],
)
def test_a_group_must_agree_with_honest(attributes: dict[str, Any], message: str) -> None:
    # The metrics tell honest agents by group, the protocols by `honest`: an adversary in the
    # strong group would be scored as a strong honest agent.
    agents = [Plain("a", group="strong"), Plain("x", **attributes)]
    with pytest.raises(InputError, match=message):
        Network(nx.complete_graph(2), agents)


def test_an_agent_without_a_name_is_refused() -> None:
    nameless = Plain("a", group="weak")
    del nameless.name
    with pytest.raises(InputError, match=r"agent 1 \(Plain\) has no name"):
        Network(nx.complete_graph(2), [Plain("b", group="weak"), nameless])


def test_repeated_names_are_refused_and_named() -> None:
    agents = [SimulatedAgent("strong", STRONG_PROFILE) for _ in range(3)]
    agents += [SimulatedAgent(n, WEAK_PROFILE) for n in ("w", "v", "w")]
    with pytest.raises(InputError, match=r"unique.*repeated 'strong', 'w'$"):
        Network(nx.complete_graph(6), agents)
    one = SimulatedAgent("s", STRONG_PROFILE)
    with pytest.raises(InputError, match="repeated 's'"):
        Network(nx.path_graph(3), [one] * 3)


def test_a_custom_agent_with_a_group_runs_and_is_counted_in_it() -> None:
    agents: list[ConsensusAgent] = [Plain(f"m{i}", group="weak") for i in range(3)]
    agents.append(make_adversary("collude", "b0"))
    graph = nx.relabel_nodes(nx.complete_graph(4), dict(enumerate("abcd")))
    network = Network(graph, agents)
    assert network.neighbours[0] == [1, 2, 3]
    traces = asyncio.run(run_consensus(make_protocol("sac", F=1), network, synthetic_tasks(2), T=1))
    assert traces[0].groups == ["weak", "weak", "weak", "byzantine"]
    metrics = compute_metrics(traces)
    initial, final = metrics.IAA, metrics.FAA  # the adversary is wrong, the honest agents right
    assert (initial, final) == pytest.approx((3 / 4, 3 / 4))
