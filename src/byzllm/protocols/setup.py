"""From a configuration to a network: the graph, who is Byzantine, and the agents.

* Graphs come from :func:`byzllm.graphs.build` (γ-MERG, complete, Erdős–Rényi verified to be
  (F+1)-robust, Appendix A).
* Byzantine placement: ``random`` (seeded), ``highest-degree`` (the b best-connected nodes,
  ties to the lower index: the most damaging spot) or ``given`` node ids. Strong and weak honest
  agents fill the remaining nodes in a seeded random order.
* The replay adversary (App. B.4) replays a weak agent's cached answer to an
  out-of-distribution question drawn from a separate pool of synthetic tasks.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

import networkx as nx

from byzllm.agents import ConsensusAgent, SimulatedAgent, make_adversary
from byzllm.agents.simulated import STRONG_PROFILE, WEAK_PROFILE, SimulatedProfile
from byzllm.errors import ConfigError, InputError
from byzllm.tasks import Task

from .config import AgentBackend, Composition, ConsensusConfig, DatasetConfig

__all__ = [
    "build_agents",
    "build_graph",
    "byzantine_nodes",
    "load_dataset",
    "ood_pool",
    "robustness_report",
]

#: Seed offset of the replay attack's out-of-distribution question pool.
OOD_SEED_OFFSET = 104_729


def build_graph(topology: str, n: int, seed: int = 0, F: int | None = None) -> nx.Graph[Any]:
    """The communication graph ``topology`` on ``n`` nodes (``byzllm.graphs.build``)."""
    from byzllm import graphs

    build: Callable[..., Any] | None = getattr(graphs, "build", None)
    if build is not None:
        graph = build(topology, n=n, seed=seed)
        if not isinstance(graph, nx.Graph):
            raise InputError(f"graph builder returned {type(graph).__name__}, not a graph")
        return graph
    return _fallback_graph(topology, n, seed)


def _fallback_graph(topology: str, n: int, seed: int) -> nx.Graph[Any]:
    """Constructions of Appendix A used when the graphs package offers no builder."""
    if topology == "complete":
        complete: nx.Graph[Any] = nx.complete_graph(n)
        return complete
    gamma = math.ceil(n / 2)
    if topology == "merg":
        # Maximum-robustness construction: a complete core of size min(n, 2γ-1) plus the
        # remaining nodes attached to γ core nodes each (LeBlanc et al., Theorem 5).
        core = min(n, 2 * gamma - 1)
        graph: nx.Graph[Any] = nx.complete_graph(core)
        for extra, v in enumerate(range(core, n)):
            for k in range(gamma):
                graph.add_edge(v, (extra + k) % core)
        return graph
    if topology == "erdos-renyi":
        r = gamma
        p = min(1.0, (math.log(n) + (r - 1) * math.log(max(math.log(n), 1e-9))) / n)
        rng = random.Random(seed)
        for _ in range(10_000):
            sample: nx.Graph[Any] = nx.erdos_renyi_graph(n, p, seed=rng.randrange(2**31))
            if n <= 1 or min(d for _, d in sample.degree) >= r:
                return sample
        raise InputError(f"no Erdős–Rényi graph with minimum degree {r} found for n={n}")
    raise InputError(f"unknown topology {topology!r}; choose merg, complete or erdos-renyi")


def robustness_report(graph: nx.Graph[Any], F: int) -> dict[str, Any]:
    """Is ``graph`` (F+1)-robust? Returns ``{"r": r, "required": F+1, "ok": ..., ...}``.

    Uses ``byzllm.graphs.r_robustness`` (exact, with a certificate: two disjoint sets neither
    of which is (r+1)-reachable). Without it, only the necessary minimum-degree condition is
    checked and ``exact`` is False.
    """
    from byzllm import graphs

    required = F + 1
    exact_fn: Callable[..., Any] | None = getattr(graphs, "r_robustness", None)
    if exact_fn is not None:
        result = exact_fn(graph)
        r = int(getattr(result, "r", result))
        certificate = getattr(result, "certificate", None)
        return {
            "r": r,
            "required": required,
            "ok": r >= required,
            "exact": True,
            "certificate": _plain(certificate),
        }
    min_degree = min((d for _, d in graph.degree), default=0)
    return {
        "r": None,
        "required": required,
        "ok": min_degree >= required,
        "exact": False,
        "certificate": {"min_degree": min_degree},
    }


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = [_plain(v) for v in value]
        return sorted(items, key=repr) if isinstance(value, set | frozenset) else items
    if hasattr(value, "__dict__"):
        return {k: _plain(v) for k, v in vars(value).items() if not k.startswith("_")}
    return repr(value)


def byzantine_nodes(graph: nx.Graph[Any], composition: Composition, seed: int) -> list[int]:
    """Which nodes the adversaries occupy (see the module docstring)."""
    nodes = sorted(int(v) for v in graph.nodes)
    b = composition.byzantine
    if composition.placement == "given":
        return sorted(composition.byzantine_nodes)
    if composition.placement == "highest-degree":
        return sorted(sorted(nodes, key=lambda v: (-graph.degree(v), v))[:b])
    return sorted(random.Random(f"byzantine/{seed}").sample(nodes, b))


@lru_cache(maxsize=64)
def _cached_dataset(spec: str) -> tuple[Task, ...]:
    config = DatasetConfig.model_validate_json(spec)
    from byzllm import tasks

    if config.name == "synthetic":
        return tuple(tasks.synthetic_tasks(config.n, seed=config.seed))
    loaders: dict[str, Callable[..., Any]] = {
        "math500": tasks.load_math500,
        "gsm8k": tasks.load_gsm8k,
        "commonsense": tasks.load_commonsense,
    }
    loader = loaders[config.name]
    kwargs: dict[str, Any] = {"k": config.n, "seed": config.seed}
    if config.name == "math500" and config.level is not None:
        kwargs["level"] = config.level
    return tuple(loader(config.path, **kwargs))


def load_dataset(config: DatasetConfig) -> list[Task]:
    """The questions of ``config`` (loaded once per process)."""
    return list(_cached_dataset(config.model_dump_json()))


def ood_pool(config: DatasetConfig) -> list[Task]:
    """Out-of-distribution questions for the replay attack (never the evaluated ones)."""
    return list(_cached_ood(config.seed))


@lru_cache(maxsize=64)
def _cached_ood(seed: int) -> tuple[Task, ...]:
    from byzllm.tasks import synthetic_tasks

    return tuple(synthetic_tasks(50, seed=seed + OOD_SEED_OFFSET))


def _profile(base: SimulatedProfile, overrides: dict[str, float]) -> SimulatedProfile:
    unknown = set(overrides) - set(SimulatedProfile.model_fields) - {"name"}
    if unknown:
        raise ConfigError(f"unknown simulated profile parameter(s): {', '.join(sorted(unknown))}")
    return base.model_copy(update=overrides)


AgentFactory = Callable[[str, str, AgentBackend, int], ConsensusAgent]


def simulated_factory(name: str, group: str, backend: AgentBackend, seed: int) -> ConsensusAgent:
    """A simulated agent of ``group`` with the backend's profile overrides."""
    base = STRONG_PROFILE if group == "strong" else WEAK_PROFILE
    return SimulatedAgent(
        name,
        _profile(base, backend.profile),
        group="strong" if group == "strong" else "weak",
        seed=seed,
    )


def build_agents(
    graph: nx.Graph[Any],
    composition: Composition,
    config: ConsensusConfig,
    seed: int,
    *,
    factory: AgentFactory | None = None,
) -> list[ConsensusAgent]:
    """The agents in node order: adversaries at :func:`byzantine_nodes`, honest ones around.

    ``factory(name, group, backend, seed)`` builds honest agents (default: simulated, or the
    LLM-backed agent for groups whose backend is ``llm``).
    """
    n = graph.number_of_nodes()
    if n != composition.n:
        raise ConfigError(f"the graph has {n} nodes but the composition has {composition.n} agents")
    make = factory or default_factory
    bad = byzantine_nodes(graph, composition, seed)
    honest_nodes = [v for v in range(n) if v not in bad]
    random.Random(f"honest/{seed}").shuffle(honest_nodes)
    agents: list[ConsensusAgent | None] = [None] * n
    roles = ["strong"] * composition.strong + ["weak"] * composition.weak
    counters = {"strong": 0, "weak": 0}
    for node, group in zip(honest_nodes, roles, strict=True):
        backend = config.agents.strong if group == "strong" else config.agents.weak
        agents[node] = make(f"{group}-{counters[group]}", group, backend, seed)
        counters[group] += 1
    ood = ood_pool(config.dataset) if composition.attack == "replay" else []
    source = make("replay-source", "weak", config.agents.weak, seed) if ood else None
    for k, node in enumerate(bad):
        agents[node] = make_adversary(
            composition.attack,
            f"byzantine-{k}",
            seed=seed,
            ood_tasks=ood,
            replay_source=source,
            defect_round=composition.defect_round,
        )
    return [a for a in agents if a is not None]


def default_factory(name: str, group: str, backend: AgentBackend, seed: int) -> ConsensusAgent:
    """Simulated agents for ``simulated`` backends, LLM-backed agents for ``llm`` ones."""
    if backend.backend == "simulated":
        return simulated_factory(name, group, backend, seed)
    from byzllm.agents.llm import llm_agent_from_backend

    return llm_agent_from_backend(name, group, backend)


def tasks_for(config: ConsensusConfig) -> Sequence[Task]:
    """The evaluated questions."""
    return load_dataset(config.dataset)
