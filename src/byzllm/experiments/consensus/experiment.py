"""Consensus experiments on the runner: units, the work function, stored records, summaries.

One unit = one question × one configuration (protocol, topology, composition, F, T, seed).
Its work builds the graph and the agents, runs the protocol on the question and returns:

* one :class:`ConsensusRound` record per agent per round (answer, correctness, scores given,
  retained and filtered neighbours, calls, tokens, latency), and
* one :class:`ConsensusQuestion` record holding the whole trace, the agents' parameters and
  the graph's robustness certificate (what the reports recompute §5.1 metrics from).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any, ClassVar

import networkx as nx

from byzllm.protocols import (
    ConsensusMetrics,
    Network,
    QuestionTrace,
    compute_metrics,
    make_protocol,
    run_question,
)

from .._records import Record
from .._units import Unit, make_unit
from .config import Composition, ConsensusConfig
from .setup import (
    build_agents,
    build_graph,
    byzantine_nodes,
    f_local_report,
    layout,
    load_dataset,
    robustness_report,
)

__all__ = [
    "ConsensusQuestion",
    "ConsensusRound",
    "consensus_unit",
    "expand_units",
    "graph_checks",
    "metrics_rows",
    "round_rows",
    "summarize",
]


class ConsensusRound(Record):
    """One agent in one round of one unit (flat, for per-round analysis and CSV export)."""

    kind: ClassVar[str] = "consensus_round"

    protocol: str
    topology: str
    composition: str
    F: int
    T: int
    seed: int
    task_id: str
    simulated: bool
    agent: int
    agent_name: str
    group: str
    round: int
    answer: str | None
    correct: bool
    self_score: float | None
    scores: dict[int, float]
    confidence: float | None
    peer_confidences: dict[int, float]
    retained: list[int]
    filtered: list[int]
    calls: int
    cached_calls: int
    saved_calls: int
    input_tokens: int
    output_tokens: int
    latency_s: float


class ConsensusQuestion(Record):
    """One unit's whole trace with its configuration, agents and graph certificate."""

    kind: ClassVar[str] = "consensus_question"

    protocol: str
    topology: str
    composition: str
    composition_config: dict[str, Any]
    F: int
    T: int
    seed: int
    task_id: str
    simulated: bool
    byzantine_nodes: list[int]
    edges: list[tuple[int, int]]
    robustness: dict[str, Any]
    agents: list[dict[str, Any]]
    trace: QuestionTrace


def expand_units(config: ConsensusConfig) -> list[Unit]:
    """Every (protocol, topology, composition, F, T, seed, question) of the grid, as units."""
    tasks = load_dataset(config.dataset)
    shared = {
        "dataset": config.dataset.model_dump(mode="json"),
        "agents": config.agents.model_dump(mode="json"),
    }
    units = []
    for composition in config.compositions:
        for topology in config.topologies:
            for protocol in config.protocols:
                for F in config.F:
                    for T in config.T:
                        for seed in config.seeds:
                            for index, task in enumerate(tasks):
                                payload = {
                                    **shared,
                                    "protocol": protocol,
                                    "topology": topology,
                                    "composition": composition.model_dump(mode="json"),
                                    "F": F,
                                    "T": T,
                                    "seed": seed,
                                    "question": index,
                                    "task_id": task.id,
                                }
                                label = (
                                    f"{protocol}/{topology}/{composition.label}/F{F}/T{T}"
                                    f"/s{seed}/{task.id}"
                                )
                                units.append(make_unit(payload, label=label))
    return units


@lru_cache(maxsize=256)
def _graph(topology: str, n: int, seed: int, F: int) -> nx.Graph[Any]:
    return build_graph(topology, n, seed, F)


@lru_cache(maxsize=256)
def _robustness(topology: str, n: int, seed: int, F: int) -> dict[str, Any]:
    return robustness_report(_graph(topology, n, seed, F), F)


def graph_checks(config: ConsensusConfig) -> list[dict[str, Any]]:
    """(F+1)-robustness and F-locality of every graph and placement (what ``run`` warns about)."""
    rows = []
    for composition in config.compositions:
        for topology in config.topologies:
            for seed in config.seeds:
                for F in config.F:
                    report = _robustness(topology, composition.n, seed, F)
                    graph = _graph(topology, composition.n, seed, F)
                    roles = layout(graph, composition, seed)
                    rows.append(
                        {
                            "topology": topology,
                            "composition": composition.label,
                            "n": composition.n,
                            "seed": seed,
                            "F": F,
                            **report,
                            **f_local_report(graph, roles, F),
                        }
                    )
    return rows


async def consensus_unit(payload: dict[str, Any]) -> list[Record]:
    """The runner's work function: run one question under one configuration."""
    config = ConsensusConfig.model_validate(
        {"dataset": payload["dataset"], "agents": payload["agents"]}
    )
    composition = Composition.model_validate(payload["composition"])
    protocol_name, topology = str(payload["protocol"]), str(payload["topology"])
    F, T, seed = int(payload["F"]), int(payload["T"]), int(payload["seed"])
    task = load_dataset(config.dataset)[int(payload["question"])]
    graph = _graph(topology, composition.n, seed, F)
    agents = build_agents(graph, composition, config, seed)
    network = Network(graph, agents)
    trace = await run_question(make_protocol(protocol_name, F=F), network, task, T)
    simulated = any(getattr(a, "simulated", False) for a in agents) or config.simulated
    common = {
        "protocol": protocol_name,
        "topology": topology,
        "composition": composition.label,
        "F": F,
        "T": T,
        "seed": seed,
        "task_id": task.id,
        "simulated": simulated,
    }
    records: list[Record] = []
    for row in (r for rnd in trace.rounds for r in rnd):
        agent = agents[row.agent]
        records.append(
            ConsensusRound(
                **common,
                agent=row.agent,
                agent_name=agent.name,
                group=agent.group,
                round=row.round,
                answer=row.answer,
                correct=row.correct,
                self_score=row.self_score,
                scores=row.scores,
                confidence=row.confidence,
                peer_confidences=row.peer_confidences,
                retained=row.retained,
                filtered=row.filtered,
                calls=row.calls,
                cached_calls=row.cached_calls,
                saved_calls=row.saved_calls,
                input_tokens=row.input_tokens,
                output_tokens=row.output_tokens,
                latency_s=row.latency_s,
            )
        )
    records.append(
        ConsensusQuestion(
            **common,
            composition_config=composition.model_dump(mode="json"),
            byzantine_nodes=byzantine_nodes(graph, composition, seed),
            edges=sorted(
                (min(int(u), int(v)), max(int(u), int(v))) for u, v in network.graph.edges
            ),
            robustness={
                **_robustness(topology, composition.n, seed, F),
                **f_local_report(graph, layout(graph, composition, seed), F),
            },
            agents=[a.describe() for a in agents],
            trace=trace,
        )
    )
    return records


ConfigKey = tuple[str, str, str, int, int]


def summarize(
    questions: Iterable[Mapping[str, Any]],
) -> list[tuple[dict[str, Any], ConsensusMetrics]]:
    """§5.1 metrics per configuration (protocol, topology, composition, F, T), seeds pooled.

    ``questions`` are ``consensus_question`` records (dicts from the store, or models).
    """
    groups: dict[ConfigKey, list[QuestionTrace]] = {}
    simulated: dict[ConfigKey, bool] = {}
    for row in questions:
        data = row.model_dump() if isinstance(row, Record) else row
        key = (
            data["protocol"],
            data["topology"],
            data["composition"],
            int(data["F"]),
            int(data["T"]),
        )
        trace = data["trace"]
        groups.setdefault(key, []).append(
            trace if isinstance(trace, QuestionTrace) else QuestionTrace.model_validate(trace)
        )
        simulated[key] = simulated.get(key, False) or bool(data.get("simulated"))
    out = []
    for key, traces in groups.items():
        protocol, topology, composition, F, T = key
        meta: dict[str, Any] = {
            "protocol": protocol,
            "topology": topology,
            "composition": composition,
            "F": F,
            "T": T,
            "simulated": simulated[key],
        }
        rows = [row for trace in traces for rnd in trace.rounds for row in rnd]
        meta["calls_per_question"] = sum(r.calls for r in rows) / len(traces)
        meta["saved_calls_per_question"] = sum(r.saved_calls for r in rows) / len(traces)
        meta["tokens_per_question"] = sum(r.input_tokens + r.output_tokens for r in rows) / len(
            traces
        )
        out.append((meta, compute_metrics(traces)))
    return out


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


_METHOD = {"sac": "SAC", "cp-wbft": "CP-WBFT", "debate": "Debate", "majority": "Majority"}
_METHOD["w-msr"] = "W-MSR"
_TOPOLOGY = {"merg": "MERG", "complete": "Complete", "erdos-renyi": "Erdős-Rényi"}


def _arrow(a: float | None, b: float | None) -> str:
    if a is None or b is None:
        return "-"
    return f"{100 * a:.0f}→{100 * b:.0f}"


def metrics_rows(
    summary: Sequence[tuple[dict[str, Any], ConsensusMetrics]], *, for_json: bool = False
) -> list[dict[str, Any]]:
    """Table 1 layout: one row per configuration (percentages; JSON keeps §5.1 names)."""
    rows = []
    for meta, m in summary:
        if for_json:
            rows.append(
                {
                    **meta,
                    "n_questions": m.n_questions,
                    "IAA": m.IAA,
                    "FAA": m.FAA,
                    "BFTI": m.BFTI,
                    "RA": m.RA,
                    "W_IAA": m.W_IAA,
                    "W_FAA": m.W_FAA,
                    "S_IAA": m.S_IAA,
                    "S_FAA": m.S_FAA,
                    "H_Majority": m.H_Majority,
                    "per_round": [r.model_dump() for r in m.per_round],
                }
            )
            continue
        rows.append(
            {
                "Method": _METHOD.get(meta["protocol"], meta["protocol"]),
                "Topology": _TOPOLOGY.get(meta["topology"], meta["topology"]),
                "Composition": meta["composition"],
                "IAA": _pct(m.IAA),
                "FAA": _pct(m.FAA),
                "BFTI": f"{100 * m.BFTI:+.1f}",
                "RA": _pct(m.RA),
                "W IAA→FAA": _arrow(m.W_IAA, m.W_FAA),
                "S IAA→FAA": _arrow(m.S_IAA, m.S_FAA),
                "H-Maj": _pct(m.H_Majority),
            }
        )
    return rows


def round_rows(summary: Sequence[tuple[dict[str, Any], ConsensusMetrics]]) -> list[dict[str, Any]]:
    """Table 2 layout: weak / strong accuracy (%) per round, one row per configuration × round."""
    rows = []
    for meta, m in summary:
        for r in m.per_round:
            rows.append(
                {
                    "Method": _METHOD.get(meta["protocol"], meta["protocol"]),
                    "Topology": _TOPOLOGY.get(meta["topology"], meta["topology"]),
                    "Composition": meta["composition"],
                    "Round": "Init" if r.round == 0 else f"Rnd {r.round}",
                    "W %": _pct(r.weak),
                    "S %": _pct(r.strong),
                    "All %": _pct(r.accuracy),
                    "RA %": _pct(r.ra),
                    "H-Majority %": _pct(r.h_majority),
                }
            )
    return rows
