"""Consensus questions as units of the runner: expand units, check graphs, run one question."""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from functools import lru_cache
from typing import Any, NamedTuple

import networkx as nx

from byzllm.agents import ParseCounts
from byzllm.llm import track_requests
from byzllm.protocols import (
    Network,
    make_protocol,
    run_question,
)
from byzllm.runs import Unit, WithDerived, make_unit, prepare_model

from .config import GRAPH_FILE_PREFIX, Composition, ConsensusConfig
from .records import ConsensusQuestion, ConsensusRound
from .setup import (
    build_agents,
    build_graph,
    byzantine_nodes,
    f_local_report,
    graph_file_digest,
    layout,
    load_dataset,
    robustness_report,
)

__all__ = [
    "consensus_unit",
    "expand_units",
    "graph_checks",
    "question_label",
    "run_in_memory",
]


def expand_units(config: ConsensusConfig) -> list[Unit]:
    """Every (protocol, topology, composition, F, T, seed, question) of the grid, as units."""
    tasks = load_dataset(config.dataset)
    # Models, not their dumps: the id leaves their default-valued fields out (docs: Unit ids).
    shared = {"dataset": prepare_model(config.dataset), "agents": prepare_model(config.agents)}
    units = []
    for composition_model in config.compositions:
        composition = prepare_model(composition_model)
        for topology in config.topologies:
            # A saved graph's content, not only its path: an edited file makes new units.
            graph = _graph_digest(config, topology)
            for protocol in config.protocols:
                for F in config.F:
                    for T in config.T:
                        for seed in config.seeds:
                            for index, task in enumerate(tasks):
                                payload = {
                                    **shared,
                                    "protocol": protocol,
                                    "topology": topology,
                                    "composition": composition,
                                    "F": F,
                                    "T": T,
                                    "seed": seed,
                                    "question": index,
                                    "task_id": task.id,
                                    **({"graph_digest": graph} if graph else {}),
                                    **_protocol_options(config, protocol),
                                }
                                label = question_label(
                                    {
                                        "protocol": protocol,
                                        "topology": topology,
                                        "composition": composition_model.label,
                                        "F": F,
                                        "T": T,
                                        "seed": seed,
                                        "task_id": task.id,
                                    }
                                )
                                units.append(make_unit(payload, label=label))
    return units


def question_label(question: Mapping[str, Any]) -> str:
    """The label of a question's unit (``sac/complete/4s2w1b-replay/F3/T6/s0/synthetic/0/0``)
    from its configuration: a ``consensus_question`` record's fields (``composition`` is the
    composition's label) name the unit that wrote it."""
    q = question
    return (
        f"{q['protocol']}/{q['topology']}/{q['composition']}/F{q['F']}/T{q['T']}"
        f"/s{q['seed']}/{q['task_id']}"
    )


def _protocol_options(config: ConsensusConfig, protocol: str) -> dict[str, Any]:
    """The unit's protocol options, present only when set (unit ids of older runs hold)."""
    if protocol == "cp-wbft" and config.cp_wbft_confidence_threshold:
        return {"protocol_options": {"confidence_threshold": config.cp_wbft_confidence_threshold}}
    return {}


def _graph_digest(config: ConsensusConfig, topology: str) -> str:
    """The digest of a ``file:`` topology's graph (``config.graph_files``; the file's graph
    now for a config copied with other topologies, which ``model_copy`` does not validate);
    ``""`` for a construction."""
    if not topology.startswith(GRAPH_FILE_PREFIX):
        return ""
    path = topology[len(GRAPH_FILE_PREFIX) :]
    return config.graph_files.get(path) or graph_file_digest(path)


@lru_cache(maxsize=256)
def _graph(topology: str, n: int, seed: int, F: int, digest: str) -> nx.Graph[Any]:
    """The graph of a unit; a saved graph's ``digest`` is in the key, so a file edited while
    a process runs is read again (and refused when it is not the unit's graph)."""
    return build_graph(topology, n, seed, F, digest)


@lru_cache(maxsize=256)
def _robustness(topology: str, n: int, seed: int, F: int, digest: str) -> dict[str, Any]:
    return robustness_report(_graph(topology, n, seed, F, digest), F)


def graph_checks(config: ConsensusConfig) -> list[dict[str, Any]]:
    """(F+1)-robustness and F-locality of every graph and placement (what ``run`` warns about).

    Placements are drawn per question: ``adversaries_f_local`` holds when every question's
    placement is F-local, and ``placements_not_f_local`` counts the questions where it is not.
    """
    tasks = load_dataset(config.dataset)
    rows = []
    for composition in config.compositions:
        for topology in config.topologies:
            digest = _graph_digest(config, topology)
            for seed in config.seeds:
                for F in config.F:
                    report = _robustness(topology, composition.n, seed, F, digest)
                    graph = _graph(topology, composition.n, seed, F, digest)
                    checks = [
                        f_local_report(graph, layout(graph, composition, seed, task.id), F)
                        for task in tasks
                    ]
                    rows.append(
                        {
                            "topology": topology,
                            "composition": composition.label,
                            "n": composition.n,
                            "seed": seed,
                            "F": F,
                            **report,
                            "adversaries_f_local": all(c["adversaries_f_local"] for c in checks),
                            "byzantine_f_local": all(c["byzantine_f_local"] for c in checks),
                            "placements_not_f_local": sum(
                                not c["adversaries_f_local"] for c in checks
                            ),
                            "placements": len(checks),
                        }
                    )
    return rows


@lru_cache(maxsize=256)
def _composition(spec: str) -> Composition:
    """A unit's composition (its JSON text), validated once per sweep. Read only."""
    return Composition.model_validate(json.loads(spec))


@lru_cache(maxsize=256)
def _edges(topology: str, n: int, seed: int, F: int, digest: str) -> tuple[tuple[int, int], ...]:
    return tuple(_sorted_edges(_graph(topology, n, seed, F, digest)))


def _sorted_edges(graph: nx.Graph[Any]) -> list[tuple[int, int]]:
    return sorted((min(int(u), int(v)), max(int(u), int(v))) for u, v in graph.edges)


class _Placement(NamedTuple):
    nodes: tuple[int, ...]
    f_local: dict[str, bool]


@lru_cache(maxsize=4096)
def _placement(
    topology: str, seed: int, F: int, digest: str, spec: str, task_id: str
) -> _Placement:
    """Where a question's adversaries sit and whether they are F-local: the same for every
    protocol of a sweep (a placement is drawn from the seed and the question alone), so
    computed once per (graph, composition, question), not once per unit. Read only."""
    composition = _composition(spec)
    graph = _graph(topology, composition.n, seed, F, digest)
    return _Placement(
        tuple(byzantine_nodes(graph, composition, seed, task_id)),
        f_local_report(graph, layout(graph, composition, seed, task_id), F),
    )


@lru_cache(maxsize=64)
def _unit_config(sections: str) -> ConsensusConfig:
    """The config of a unit's sections (JSON text), validated once per sweep, not per unit.
    Read only: every unit of a sweep shares it."""
    return ConsensusConfig.model_validate(json.loads(sections))


async def consensus_unit(payload: dict[str, Any]) -> WithDerived:
    """The runner's work function: run one question under one configuration.

    Its records: one :class:`ConsensusRound` per agent and round, then the
    :class:`ConsensusQuestion` they restate (the round records built only when read).

    The payload's config sections hold only their non-default fields: validating them
    brings the defaults back.
    """
    config = _unit_config(
        json.dumps({"dataset": payload["dataset"], "agents": payload["agents"]}, sort_keys=True)
    )
    spec = json.dumps(payload["composition"], sort_keys=True)
    composition = _composition(spec)
    protocol_name, topology = str(payload["protocol"]), str(payload["topology"])
    F, T, seed = int(payload["F"]), int(payload["T"]), int(payload["seed"])
    digest = str(payload.get("graph_digest", ""))  # (absent from units made before it)
    task = load_dataset(config.dataset)[int(payload["question"])]
    graph = _graph(topology, composition.n, seed, F, digest)
    with track_requests() as requests:  # this question's model requests, every agent's
        agents = build_agents(graph, composition, config, seed, question=task.id)
        network = Network(graph, agents)
        trace = await run_question(
            make_protocol(protocol_name, F=F, **payload.get("protocol_options", {})),
            network,
            task,
            T,
        )
    simulated = any(getattr(a, "simulated", False) for a in agents) or config.simulated
    common: dict[str, Any] = {
        "protocol": protocol_name,
        "topology": topology,
        "composition": composition.label,
        "F": F,
        "T": T,
        "seed": seed,
        "task_id": task.id,
        "simulated": simulated,
    }
    rows = [row for rnd in trace.rounds for row in rnd]
    parse = ParseCounts.of(*(row.parse for row in rows))
    placement = _placement(topology, seed, F, digest, spec, task.id)
    question = ConsensusQuestion(
        **common,
        composition_config=composition.model_dump(mode="json"),
        byzantine_nodes=list(placement.nodes),
        edges=list(_edges(topology, composition.n, seed, F, digest))
        if network.graph is graph
        else _sorted_edges(network.graph),
        robustness={
            **_robustness(topology, composition.n, seed, F, digest),
            **placement.f_local,
        },
        agents=[a.describe() for a in agents],
        trace=trace,
        parse=parse.to_dict(),
        requests=requests.to_dict(),
    )
    # The 49 round records restate the question record: built only where they are read
    # (a sixth of a simulated question's time), never for the store, which keeps a count.
    return WithDerived(question, ConsensusRound, len(rows))


def run_in_memory(
    config: ConsensusConfig, *, batch: int = 256, only: Collection[str] | None = None
) -> list[dict[str, Any]]:
    """Every unit of ``config`` (those labelled as in ``only`` when given:
    :func:`question_label`) run in this process, without a store: the ``consensus_question``
    records as dicts, in grid order.

    For simulated agents (milliseconds per question): ``byzllm sim compare``'s twin, the
    documentation's generated tables. Runs with LLM agents belong on the runner, which
    resumes and streams to disk.
    """
    import asyncio

    from byzllm.runs import run_in_memory as records_in_memory

    return asyncio.run(
        records_in_memory(
            [u for u in expand_units(config) if only is None or u.label in only],
            consensus_unit,
            kinds={"consensus_question"},
            batch=batch,
        )
    )
