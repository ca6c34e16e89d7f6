"""``byzllm demo``: the SAC paper's main setting (Table 1) on the simulated population.

n = 7 agents (4 strong, 2 weak honest, 1 adversarial ``replay``), F = 3, T = 6, γ-MERG /
complete / Erdős–Rényi, SAC vs CP-WBFT, 30 synthetic questions. Every number it prints comes
from the simulation: nothing is tuned per protocol, and results are labelled *simulated*.
"""

from __future__ import annotations

from typing import Any

from .config import ConsensusConfig, DatasetConfig

__all__ = ["demo_config", "demo_rows"]


def demo_config(questions: int = 30, seed: int = 0) -> ConsensusConfig:
    """The demo's configuration (paper defaults; ``seed`` drives graphs, placement, agents)."""
    return ConsensusConfig(
        protocols=["sac", "cp-wbft"],
        topologies=["merg", "complete", "erdos-renyi"],
        seeds=[seed],
        dataset=DatasetConfig(name="synthetic", n=questions, seed=seed),
    )


def demo_rows(questions: list[dict[str, Any]], *, for_json: bool) -> list[dict[str, Any]]:
    """Table-1 rows (SAC and CP-WBFT × three topologies) from ``consensus_question`` records."""
    from .report import metrics_rows, summarize

    order = {"cp-wbft": 0, "sac": 1}
    topo = {"merg": 0, "complete": 1, "erdos-renyi": 2}
    summary = sorted(
        summarize(questions),
        key=lambda item: (order.get(item[0]["protocol"], 9), topo.get(item[0]["topology"], 9)),
    )
    rows = metrics_rows(summary, for_json=for_json)
    if not for_json:
        for row in rows:
            row.pop("Composition", None)
    return rows
