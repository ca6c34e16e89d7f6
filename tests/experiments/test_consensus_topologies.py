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


def test_preferential_attachment_is_built_for_f_plus_1() -> None:
    """The SAC paper designs every topology (F+1)-robust (§4.2); preferential attachment is
    built for a target r (App. A: a clique of 2r - 1 nodes, each other node joined to r of
    them), so a run takes r = F + 1, capped at ⌈n/2⌉ as Erdős–Rényi is."""
    from byzllm.graphs import r_robustness

    # n = 7, F = 3: r = 4, a clique of 7 nodes (K7, 21 edges), 4-robust. The construction's
    # default r = ⌈7/2⌉ - 1 = 3 gave K5 plus 2 nodes joined to 3 (16 edges), 3-robust.
    graph = build_graph("preferential", n=7, seed=0, F=3)
    assert graph.number_of_edges() == 21
    assert robustness_report(graph, F=3)["ok"]
    # n = 9, F = 1: r = 2, a triangle and 6 nodes joined to 2 of it: 3 + 12 edges, 2-robust.
    sparse = build_graph("preferential", n=9, seed=0, F=1)
    assert sparse.number_of_edges() == 15
    assert r_robustness(sparse).r == 2
    # n = 9, F = 3 (the paper's Table 6): r = 4, K7 plus 2 nodes joined to 4, as before.
    assert build_graph("preferential", n=9, seed=0, F=3).number_of_edges() == 21 + 8
    # F beyond what 7 nodes allow: capped at ⌈7/2⌉ = 4, the run then warns.
    assert build_graph("preferential", n=7, seed=0, F=5).number_of_edges() == 21
