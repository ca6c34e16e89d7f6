"""Consensus configs accept every graph construction and saved graph files."""

from __future__ import annotations

import json
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


def _file_config(path: Path) -> ConsensusConfig:
    return load_config(
        None,
        ConsensusConfig,
        {
            "protocols": ["sac"],
            "topologies": [f"file:{path}", "complete"],
            "compositions": [{"strong": 4, "weak": 3, "byzantine": 0}],
            "F": [0],
            "T": [1],
            "dataset": {"n": 2},
        },
    )


def test_a_graph_s_digest_is_of_its_content_not_of_its_file(tmp_path: Path) -> None:
    from byzllm.experiments.consensus.setup import graph_file_digest

    ring = [[v, (v + 1) % 7] for v in range(7)]
    json_file, edge_list = tmp_path / "ring.json", tmp_path / "ring.edges"
    json_file.write_text(json.dumps({"n": 7, "edges": ring}))
    digest = graph_file_digest(str(json_file))
    # Reversed pairs in another order, indented, keys reordered; the same as an edge list.
    json_file.write_text(json.dumps({"edges": [[v, u] for u, v in ring[::-1]], "n": 7}, indent=2))
    edge_list.write_text("".join(f"{u} {v}\n" for u, v in ring))
    assert graph_file_digest(str(json_file)) == graph_file_digest(str(edge_list)) == digest
    # One edge fewer, an isolated node more, or directed: another graph.
    others = [
        {"n": 7, "edges": ring[1:]},
        {"n": 8, "edges": ring},
        {"n": 7, "edges": ring, "directed": True},
    ]
    digests = set()
    for doc in others:
        json_file.write_text(json.dumps(doc))
        digests.add(graph_file_digest(str(json_file)))
    assert len(digests) == 3 and digest not in digests


def test_units_of_a_saved_graph_change_with_the_graph_it_holds(tmp_path: Path) -> None:
    """A unit named the file's path only: after an edit, a rerun found every unit of the
    file done (and reported the old graph's results under the new file)."""
    from byzllm.experiments.consensus.experiment import expand_units

    path = tmp_path / "g.json"
    save_graph(build("complete", n=7), path)
    first = _file_config(path)
    (digest,) = first.graph_files.values()
    assert first.graph_files == {str(path.resolve()): digest}
    units = expand_units(first)
    assert {u.payload.get("graph_digest") for u in units} == {digest, None}  # complete: none
    save_graph(build("ring-lattice", n=7, k=2), path)
    edited = _file_config(path)
    assert edited.graph_files != first.graph_files
    moved = {u.id for u in expand_units(edited)} ^ {u.id for u in units}
    # The file's 2 units are new; the construction's 2 keep their ids.
    assert len(moved) == 4
    assert {u.id for u in units if "graph_digest" not in u.payload} <= {
        u.id for u in expand_units(edited)
    }


def test_a_run_in_one_process_reads_an_edited_graph_again(tmp_path: Path) -> None:
    """A process kept a file's graph by its path: a second run after an edit (``sim
    compare``, a notebook) ran the old graph."""
    from byzllm.experiments.consensus.experiment import run_in_memory

    path = tmp_path / "g.json"
    save_graph(build("complete", n=7), path)
    before = run_in_memory(_file_config(path))
    save_graph(build("ring-lattice", n=7, k=2), path)
    after = run_in_memory(_file_config(path))
    file_edges = [len(q["edges"]) for q in (before + after) if q["topology"].startswith("file:")]
    assert file_edges == [21, 21, 14, 14]


def test_a_recorded_config_whose_graph_changed_is_refused(tmp_path: Path) -> None:
    """Validating a run's recorded config again (``sim compare`` reruns it) after the file
    was edited would have run another graph than the run's."""
    path = tmp_path / "g.json"
    save_graph(build("complete", n=7), path)
    recorded = _file_config(path).model_dump(mode="json")
    assert ConsensusConfig.model_validate(recorded).graph_files == recorded["graph_files"]
    save_graph(build("ring-lattice", n=7, k=2), path)
    with pytest.raises(ConfigError, match=r"graph_files: .*g\.json no longer holds the graph"):
        load_config(None, ConsensusConfig, recorded)
    # A unit made for the old graph is refused too (the file edited while a run runs).
    from byzllm.experiments.consensus.setup import graph_file_digest

    old = recorded["graph_files"][str(path.resolve())]
    with pytest.raises(ConfigError, match=f"the unit was made for {old}"):
        build_graph(f"file:{path}", n=7, F=0, digest=old)
    assert build_graph(f"file:{path}", n=7, digest=graph_file_digest(str(path))).number_of_edges()


def test_a_graph_file_that_does_not_load_is_named_by_its_item(tmp_path: Path) -> None:
    path = tmp_path / "g.json"
    path.write_text('{"n": 3, "edges": [[0, 3]]}')
    with pytest.raises(ConfigError) as caught:
        load_config(None, ConsensusConfig, {"topologies": ["merg", f"file:{path}"]})
    assert str(caught.value).endswith(f"topologies.1: {path.resolve()}: node 3 is outside 0..2")


def test_a_directed_graph_file_is_refused_with_the_config(tmp_path: Path) -> None:
    """A directed graph passed the config and the robustness checks, then failed every
    unit of the run (the network refuses it: the SAC paper's graphs are undirected, §3.1)."""
    path = tmp_path / "d.json"
    path.write_text(json.dumps({"n": 3, "directed": True, "edges": [[0, 1], [1, 2], [2, 0]]}))
    with pytest.raises(ConfigError) as caught:
        load_config(None, ConsensusConfig, {"topologies": [f"file:{path}"]})
    message = str(caught.value)
    assert message.endswith(
        f"topologies.0: {path.resolve()}: a directed graph; consensus graphs are undirected (§3.1)"
    )
