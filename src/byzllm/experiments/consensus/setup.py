"""From a configuration to a network: the graph, who is Byzantine, and the agents.

* Graphs come from :func:`byzllm.graphs.build` (γ-MERG, complete, preferential attachment
  built and Erdős–Rényi verified to be (F+1)-robust, Appendix A).
* Byzantine placement: ``random`` (drawn afresh for every question from the run seed and the
  question id, so across questions an adversary sits everywhere and a topology is measured by
  what an adversary reaches in it, not by one lucky or unlucky node; the draw depends on
  neither the protocol nor the topology, so comparisons between them stay paired),
  ``highest-degree`` (the b best-connected nodes, ties to the lower index: the most damaging
  spot) or ``given`` node ids (pinned for every question). Strong and weak honest agents fill
  the remaining nodes in an order drawn the same way, per question.
* The replay adversary (App. B.4) replays a weak agent's cached answer to an
  out-of-distribution question of the run's own data set and answer format (:func:`ood_pool`),
  so the replayed answer looks like an honest one (``true``/``false`` on BoolQ, an option label
  on multiple choice, a number on arithmetic).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

import networkx as nx

from byzllm.agents.consensus import (
    STRONG_PROFILE,
    WEAK_PROFILE,
    ConsensusAgent,
    ReplayPool,
    SimulatedAgent,
    SimulatedProfile,
    make_adversary,
)
from byzllm.errors import ConfigError
from byzllm.tasks import Task, TaskLines, records_digest

from .config import GRAPH_FILE_PREFIX, AgentBackend, Composition, ConsensusConfig, DatasetConfig

__all__ = [
    "build_agents",
    "build_graph",
    "byzantine_nodes",
    "f_local_report",
    "graph_digest",
    "graph_file_digest",
    "layout",
    "load_dataset",
    "ood_pool",
    "replay_pool",
    "robustness_report",
]

#: Seed offset of the replay attack's out-of-distribution question pool.
OOD_SEED_OFFSET = 104_729


def build_graph(
    topology: str, n: int, seed: int = 0, F: int | None = None, digest: str = ""
) -> nx.Graph[Any]:
    """The communication graph ``topology`` on ``n`` nodes (:func:`byzllm.graphs.build`,
    or :func:`byzllm.graphs.load_graph` for ``file:PATH``, whose node count must be ``n``
    and, when ``digest`` is given, whose :func:`graph_digest` must be ``digest``: the graph
    a unit was made for, not one the file holds after an edit).

    The random constructions take their target robustness from F: Erdős–Rényi graphs are
    resampled until verified (F+1)-robust (§5.2), and preferential-attachment graphs are
    built (F+1)-robust (a clique of 2F+1 nodes, the SAC paper, App. A); both capped at the
    largest robustness any n-node graph can have, ⌈n/2⌉ (then the run warns). The SAC paper
    designs every topology to be (F+1)-robust (§4.2), which the construction's own default,
    r = ⌈n/2⌉ - 1, is not at the paper's n = 7, F = 3 (3-robust).
    """
    from byzllm.graphs import build, load_graph

    if topology.startswith(GRAPH_FILE_PREFIX):
        loaded = load_graph(topology[len(GRAPH_FILE_PREFIX) :])
        if loaded.number_of_nodes() != n:
            raise ConfigError(
                f"{topology} has {loaded.number_of_nodes()} nodes but the composition has {n}"
            )
        found = graph_digest(loaded) if digest else digest
        if found != digest:
            raise ConfigError(
                f"{topology} changed after the run was set up: its graph's digest is {found}, "
                f"the unit was made for {digest}; run the config again to take the graph the "
                "file holds now"
            )
        graph_from_file: nx.Graph[Any] = loaded
        return graph_from_file
    params: dict[str, Any] = {}
    if topology in ("erdos-renyi", "preferential") and F is not None:
        params["r"] = max(1, min(F + 1, math.ceil(n / 2)))
    graph: nx.Graph[Any] = build(topology, n=n, seed=seed, **params)
    return graph


def graph_digest(graph: nx.Graph[Any]) -> str:
    """The :func:`~byzllm.tasks.records_digest` of what a graph is: its node count, whether
    it is directed, and its edges (an undirected edge as (min, max)), sorted.

    A saved graph's identity in a run (its config's ``graph_files``, its units' ids): not the
    file's bytes, so re-saving or reformatting the file keeps it, while another edge or
    another node count changes it.
    """
    directed = graph.is_directed()
    edges = sorted(
        [int(u), int(v)] if directed else [min(int(u), int(v)), max(int(u), int(v))]
        for u, v in graph.edges
    )
    return records_digest([[graph.number_of_nodes(), directed, edges]])


def graph_file_digest(path: str) -> str:
    """The :func:`graph_digest` of the graph saved at ``path``."""
    from byzllm.graphs import load_graph

    return graph_digest(load_graph(path))


def robustness_report(graph: nx.Graph[Any], F: int) -> dict[str, Any]:
    """Is ``graph`` (F+1)-robust? ``{"r", "required", "ok", "exact", "certificate"}``.

    Uses :func:`byzllm.graphs.r_robustness`; the certificate is a pair of disjoint node sets
    neither of which is (r+1)-reachable, so anyone can check that r cannot be higher.
    """
    from byzllm.graphs import r_robustness

    result = r_robustness(graph)
    return {
        "r": int(result.r),
        "required": F + 1,
        "ok": int(result.r) >= F + 1,
        "exact": bool(result.exact),
        "certificate": _plain(result.certificate),
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


def byzantine_nodes(
    graph: nx.Graph[Any], composition: Composition, seed: int, question: str = ""
) -> list[int]:
    """Which nodes the adversaries occupy for ``question`` (see the module docstring)."""
    nodes = sorted(int(v) for v in graph.nodes)
    b = composition.byzantine
    if composition.placement == "given":
        return sorted(composition.byzantine_nodes)
    if composition.placement == "highest-degree":
        return sorted(sorted(nodes, key=lambda v: (-graph.degree(v), v))[:b])
    return sorted(random.Random(f"byzantine/{seed}/{question}").sample(nodes, b))


@lru_cache(maxsize=16)
def _cached_file(name: str, path: str | None, level: int | None, digest: str) -> Sequence[Task]:
    """Every question of a data-set file (after MATH-500's level filter), in file order;
    ``digest`` (:func:`byzllm.tasks.dataset_digest`) is in the key, so a file edited while a
    process runs is read again, not served as it was.

    A GSM8K file is indexed, not parsed (:func:`byzllm.tasks.gsm8k_lines`): a run reads only
    the questions it samples and those its replay adversaries pick, so 20 questions from a
    100,000-line file cost what they cost from a 20-line one.
    """
    from byzllm import tasks

    if name == "math500":
        return tuple(tasks.load_math500(path or "", level=level))
    if name == "gsm8k":
        return tasks.gsm8k_lines(path or "")
    return tuple(tasks.load_commonsense(path or ""))


@lru_cache(maxsize=64)
def _cached_dataset(spec: str) -> tuple[Task, ...]:
    config = DatasetConfig.model_validate_json(spec)
    from byzllm import tasks

    if config.name == "synthetic":
        return tuple(tasks.synthetic_tasks(config.n, seed=config.seed, steps=config.steps))
    # The loaders sample exactly so: every question of the file, then ``sample_tasks``.
    full = _cached_file(config.name, config.path, config.level, config.digest)
    return tuple(tasks.sample_tasks(full, config.n, config.seed))


def load_dataset(config: DatasetConfig) -> list[Task]:
    """The questions of ``config`` (loaded once per process)."""
    return list(_cached_dataset(config.model_dump_json()))


def ood_pool(config: DatasetConfig) -> list[Task]:
    """Out-of-distribution questions for the replay attack, from the run's own data set.

    * ``synthetic``: 50 synthetic arithmetic tasks of another seed (never the evaluated ones).
    * a data-set file: its other questions (same file or folder, same MATH-500 level), so that
      every replayed answer has the data set's answer format. Per answer format (``kind`` and
      ``choices``) and sub-data set (``meta["dataset"]``), the questions that are *not*
      evaluated; where every question of that format is evaluated, the evaluated ones (the
      adversary never picks the current question itself, nor its text under another id, and
      when a question is the only one of its format it sends the weak source's own answer to
      that question, without reading the ground truth: ``make_adversary("replay")``).
    """
    return list(_cached_ood(config.model_dump_json()))


def replay_pool(config: DatasetConfig) -> ReplayPool:
    """:func:`ood_pool` grouped for the replay adversary, once per process: every unit of a
    run shares it (and the try orders it remembers), so a unit costs the same whatever the
    size of the data file."""
    return _cached_replay_pool(config.model_dump_json())


@lru_cache(maxsize=16)
def _cached_replay_pool(spec: str) -> ReplayPool:
    return ReplayPool(_cached_ood(spec))


@lru_cache(maxsize=64)
def _cached_ood(spec: str) -> Sequence[Task]:
    config = DatasetConfig.model_validate_json(spec)
    if config.name == "synthetic":
        from byzllm.tasks import synthetic_tasks

        return tuple(synthetic_tasks(50, seed=config.seed + OOD_SEED_OFFSET, steps=config.steps))
    evaluated = {t.id for t in load_dataset(config)}
    file = _cached_file(config.name, config.path, config.level, config.digest)
    if isinstance(file, TaskLines):
        # One answer format and data set throughout: the file without the evaluated
        # questions (the file itself when every question is evaluated), never read whole.
        found = (file.position_of(task_id) for task_id in evaluated)
        unseen = file.excluding(p for p in found if p is not None)
        return unseen if len(unseen) else file
    groups: dict[tuple[Any, ...], list[Task]] = {}
    for task in file:
        dataset = task.meta.get("dataset")
        key = (task.kind, tuple(task.choices), task.source, dataset)
        groups.setdefault(key, []).append(task)
    pool: list[Task] = []
    for members in groups.values():
        unseen_members = [t for t in members if t.id not in evaluated]
        pool += unseen_members or members
    return tuple(pool)


AgentFactory = Callable[[str, str, AgentBackend, int], ConsensusAgent]


def simulated_factory(name: str, group: str, backend: AgentBackend, seed: int) -> ConsensusAgent:
    """A simulated agent of ``group`` with the backend's profile overrides."""
    return SimulatedAgent(
        name,
        _profile(group, backend),
        group="strong" if group == "strong" else "weak",
        seed=seed,
    )


def _profile(group: str, backend: AgentBackend) -> SimulatedProfile:
    """The group's default profile with the backend's overrides. Profiles are frozen, so
    one is made per group and overrides, not per agent of every unit of a sweep."""
    return _profile_of(group == "strong", tuple(sorted(backend.profile.items())))


@lru_cache(maxsize=256)
def _profile_of(strong: bool, overrides: tuple[tuple[str, float], ...]) -> SimulatedProfile:
    # AgentBackend has already rejected unknown profile parameters.
    return (STRONG_PROFILE if strong else WEAK_PROFILE).model_copy(update=dict(overrides))


def layout(
    graph: nx.Graph[Any], composition: Composition, seed: int, question: str = ""
) -> list[str]:
    """The group of every node for ``question``: adversaries first, then strong / weak in an
    order seeded by the run seed and the question."""
    n = graph.number_of_nodes()
    bad = byzantine_nodes(graph, composition, seed, question)
    honest_nodes = [v for v in range(n) if v not in bad]
    random.Random(f"honest/{seed}/{question}").shuffle(honest_nodes)
    roles = ["byzantine"] * n
    groups = ["strong"] * composition.strong + ["weak"] * composition.weak
    for node, group in zip(honest_nodes, groups, strict=True):
        roles[node] = group
    return roles


def f_local_report(graph: nx.Graph[Any], roles: list[str], F: int) -> dict[str, bool]:
    """Definition 3.2 for the adversaries 𝒜 and for all Byzantine agents ℬ = 𝒜 ∪ faulty."""
    from byzllm.graphs import check_f_local

    adversaries = [v for v, g in enumerate(roles) if g == "byzantine"]
    byzantine = [v for v, g in enumerate(roles) if g != "strong"]
    return {
        "adversaries_f_local": bool(check_f_local(graph, adversaries, F)),
        "byzantine_f_local": bool(check_f_local(graph, byzantine, F)),
    }


def build_agents(
    graph: nx.Graph[Any],
    composition: Composition,
    config: ConsensusConfig,
    seed: int,
    *,
    question: str = "",
    factory: AgentFactory | None = None,
) -> list[ConsensusAgent]:
    """The agents in node order for ``question``: adversaries at :func:`byzantine_nodes`,
    honest ones around.

    ``factory(name, group, backend, seed)`` builds honest agents (default: simulated, or the
    LLM-backed agent for groups whose backend is ``llm``).
    """
    n = graph.number_of_nodes()
    if n != composition.n:
        raise ConfigError(f"the graph has {n} nodes but the composition has {composition.n} agents")
    make = factory or default_factory
    roles = layout(graph, composition, seed, question)
    bad = [v for v in range(n) if roles[v] == "byzantine"]
    agents: list[ConsensusAgent | None] = [None] * n
    counters = {"strong": 0, "weak": 0}
    for node, group in enumerate(roles):
        if group == "byzantine":
            continue
        backend = config.agents.strong if group == "strong" else config.agents.weak
        agents[node] = make(f"{group}-{counters[group]}", group, backend, seed)
        counters[group] += 1
    ood = replay_pool(config.dataset) if composition.attack == "replay" else ReplayPool(())
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
    """Simulated agents for ``simulated`` backends, LLM-backed agents for ``llm`` ones.

    LLM agents of a group share one model per event loop (``backend.shared_model()``), so
    its concurrency limit, response cache and connections serve every agent of the run.
    Agents that sample (``temperature > 0``) get their own seed, derived from the run seed and
    their name: a population of one model is then several agents, not one agent repeated,
    and a rerun draws the same samples (so the response cache still answers it).
    """
    if backend.backend == "simulated":
        return simulated_factory(name, group, backend, seed)
    from byzllm.agents.consensus import LLMAgent

    return LLMAgent(
        name,
        backend.shared_model(),
        group="strong" if group == "strong" else "weak",
        temperature=backend.temperature,
        max_tokens=backend.max_tokens,
        seed=agent_seed(seed, name) if backend.temperature > 0 else None,
        judging=backend.judging,
        refining=backend.refining,
    )


def agent_seed(seed: int, name: str) -> int:
    """A sampling seed for agent ``name`` in a run seeded ``seed`` (stable across processes)."""
    return random.Random(f"agent/{seed}/{name}").randrange(2**31)


def tasks_for(config: ConsensusConfig) -> Sequence[Task]:
    """The evaluated questions."""
    return load_dataset(config.dataset)
