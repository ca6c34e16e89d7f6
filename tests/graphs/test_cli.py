"""`byzllm graph build|check|draw`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from byzllm.cli import app
from byzllm.graphs import load_graph, verify_certificate

runner = CliRunner()


def test_build_check_draw(tmp_path: Path) -> None:
    g = tmp_path / "g.json"
    result = runner.invoke(app, ["graph", "build", "merg", "-n", "7", "--out", str(g)])
    assert result.exit_code == 0, result.output
    assert load_graph(g).number_of_edges() == 18

    result = runner.invoke(app, ["graph", "check", str(g), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["r"] == 4 and report["exact"] and report["tolerable_F"] == 3
    assert report["min_edges_for_r"]["minimum"] == 18
    cert = report["certificate"]
    assert verify_certificate(load_graph(g), cert["S1"], cert["S2"], 5)
    assert report["s"] >= 1

    result = runner.invoke(app, ["graph", "check", str(g)])
    assert result.exit_code == 0 and "certificate" in result.output

    png = tmp_path / "g.png"
    result = runner.invoke(app, ["graph", "draw", str(g), "--byzantine", "3,5", "--out", str(png)])
    assert result.exit_code == 0, result.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_draw_title_names_each_byzantine_node_once_in_node_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from matplotlib.axes import Axes

    titles: list[str] = []
    monkeypatch.setattr(Axes, "set_title", lambda self, label, **kw: titles.append(label))
    g = tmp_path / "k12.json"
    assert (
        runner.invoke(app, ["graph", "build", "complete", "-n", "12", "--out", str(g)]).exit_code
        == 0
    )
    png = str(tmp_path / "k12.png")
    result = runner.invoke(app, ["graph", "draw", str(g), "--byzantine", "10,3,3,2", "--out", png])
    assert result.exit_code == 0, result.output
    # Three Byzantine nodes, each with every honest node as neighbour: 3-local. The title
    # read "[10, 2, 3, 3]" (node 3 twice, numbers sorted as text).
    assert titles == ["complete  (Byzantine [2, 3, 10]: 3-local)"]


def test_random_build_with_seed_and_params(tmp_path: Path) -> None:
    out = tmp_path / "er.edges"
    args = ["graph", "build", "erdos-renyi", "-n", "10", "--r", "2", "--seed", "4", "--out"]
    assert runner.invoke(app, [*args, str(out)]).exit_code == 0
    first = out.read_text()
    assert runner.invoke(app, [*args, str(out)]).exit_code == 0
    assert out.read_text() == first


def test_errors_exit_2_with_one_line(tmp_path: Path) -> None:
    result = runner.invoke(app, ["graph", "check", str(tmp_path / "missing.json")])
    assert result.exit_code == 2
    bad = tmp_path / "bad.json"
    bad.write_text('{"n": 2, "edges": [[0, 0]]}')
    result = runner.invoke(app, ["graph", "check", str(bad)])
    assert result.exit_code == 2 and "self-loop" in result.output
    result = runner.invoke(app, ["graph", "build", "nope", "-n", "4", "--out", str(bad)])
    assert result.exit_code == 2
    g = tmp_path / "g.json"
    runner.invoke(app, ["graph", "build", "chain", "-n", "4", "--out", str(g)])
    result = runner.invoke(app, ["graph", "draw", str(g), "--byzantine", "x", "--out", "a.png"])
    assert result.exit_code == 2
    result = runner.invoke(app, ["graph", "draw", str(g), "--byzantine", "9", "--out", "a.png"])
    assert result.exit_code == 2
    # "²" passes str.isdigit but not int, nor do 5,000 digits: they raised a ValueError.
    for node in ["²", "1" * 5000]:
        result = runner.invoke(
            app, ["graph", "draw", str(g), "--byzantine", node, "--out", "a.png"]
        )
        assert result.exit_code == 2 and "expects node numbers" in result.output, result.output


def test_bad_params_name_the_parameter(tmp_path: Path) -> None:
    runner = CliRunner()
    out = str(tmp_path / "g.json")
    for param, expected in [
        ("p=nan", "p must be a number, got 'nan'"),
        ("q=1", "takes no parameter 'q' (it takes: r, seed, p, max_tries)"),
        ("seed=3", "give it as --seed"),
    ]:
        result = runner.invoke(app, ["graph", "build", "er", "-n", "7", "-p", param, "-o", out])
        assert result.exit_code == 2 and expected in result.output, result.output


def test_check_json_keys_and_exit_codes_are_the_documented_ones(tmp_path: Path) -> None:
    """docs/graphs.md names every key of `graph check --json`, and the exit codes: 0 for any
    report (r = 0 included), 2 for a file that does not load."""
    docs = (Path(__file__).parents[2] / "docs" / "graphs.md").read_text(encoding="utf-8")
    merg, split = tmp_path / "merg.json", tmp_path / "split.edges"
    assert runner.invoke(app, ["graph", "build", "merg", "-n", "7", "-o", str(merg)]).exit_code == 0
    split.write_text("0 1\n2 3\n", encoding="utf-8")
    for path, r in [(merg, 4), (split, 0)]:
        result = runner.invoke(app, ["graph", "check", str(path), "--json"])
        assert result.exit_code == 0, result.output
        report = json.loads(result.output)
        assert report["r"] == r
        nested = [report["certificate"], report["min_edges_for_r"], report.get("s_certificate", {})]
        for key in [*report, *(k for part in nested for k in part)]:
            assert f"`{key}`" in docs, key
    (tmp_path / "bad.edges").write_text("0 x\n", encoding="utf-8")
    result = runner.invoke(app, ["graph", "check", str(tmp_path / "bad.edges"), "--json"])
    assert result.exit_code == 2
    assert json.loads(result.stdout)["status"] == "error"


def test_build_refuses_a_graph_past_the_edge_limit_at_once(tmp_path: Path) -> None:
    """`graph build complete -n 100000` ran until memory ran out."""
    out = tmp_path / "g.edges"
    result = runner.invoke(app, ["graph", "build", "complete", "-n", "100000", "-o", str(out)])
    assert result.exit_code == 2
    assert "would have up to 4,999,950,000 edges, over the limit of 1,000,000" in result.output
    assert "--max-edges" in result.output and not out.exists()
    args = ["graph", "build", "complete", "-n", "10", "-o", str(out), "--max-edges"]
    assert runner.invoke(app, [*args, "44"]).exit_code == 2
    result = runner.invoke(app, [*args, "45"])
    assert result.exit_code == 0 and "45 edges" in result.output
    params = ["-n", "4", "-p", "max_edges=9", "-o", str(out)]
    result = runner.invoke(app, ["graph", "build", "chain", *params])
    assert result.exit_code == 2 and "give it as --max-edges" in result.output
