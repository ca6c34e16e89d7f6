"""Consensus configs accept every graph construction and saved graph files."""

from __future__ import annotations

from pathlib import Path

import pytest

from byzllm.errors import ConfigError
from byzllm.experiments.consensus.config import ConsensusConfig
from byzllm.experiments.consensus.setup import build_graph, robustness_report
from byzllm.graphs import build, save_graph
from byzllm.runs import load_config


def test_construction_names_are_normalized() -> None:
    cfg = load_config(None, ConsensusConfig, {"topologies": ["Ring_Lattice", "chain"]})
    assert cfg.topologies == ["ring-lattice", "chain"]


def test_unknown_topology_is_one_clear_error() -> None:
    with pytest.raises(ConfigError, match="unknown topology 'moebius'"):
        load_config(None, ConsensusConfig, {"topologies": ["moebius"]})


def test_missing_graph_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="graph file not found"):
        load_config(None, ConsensusConfig, {"topologies": [f"file:{tmp_path / 'nope.json'}"]})


def test_graph_file_is_loaded_and_checked(tmp_path: Path) -> None:
    path = tmp_path / "ring.json"
    save_graph(build("ring-lattice", n=7, k=2), path)
    graph = build_graph(f"file:{path}", n=7, F=3)
    assert graph.number_of_edges() == 14
    report = robustness_report(graph, F=3)
    # A ring lattice C_7(1, 2) is 2-robust: SAC's F = 3 guarantee does not hold, and says so.
    assert (report["r"], report["ok"]) == (2, False)
    with pytest.raises(ConfigError, match="has 7 nodes but the composition has 9"):
        build_graph(f"file:{path}", n=9, F=3)
