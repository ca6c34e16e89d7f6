"""`byzllm consensus run / report`: configs, robustness warnings, every attack × protocol."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from byzllm.agents.consensus import ATTACKS
from byzllm.cli import app
from byzllm.experiments.consensus.config import Composition
from byzllm.protocols import PROTOCOLS

RUNNER = CliRunner()


def _write(path: Path, config: dict[str, object]) -> Path:
    path.write_text(yaml.safe_dump(config))
    return path


def test_every_attack_against_every_protocol_side_by_side(tmp_path: Path) -> None:
    """Acceptance 4: every strategy × protocol in the demo setting, reported side by side."""
    config = _write(
        tmp_path / "attacks.yaml",
        {
            "protocols": list(PROTOCOLS),
            "topologies": ["complete"],
            "compositions": [{"attack": attack} for attack in ATTACKS],
            "dataset": {"name": "synthetic", "n": 4},
        },
    )
    run_dir = tmp_path / "run"
    result = RUNNER.invoke(app, ["consensus", "run", str(config), "-o", str(run_dir)])
    assert result.exit_code == 0, result.output
    report = RUNNER.invoke(app, ["consensus", "report", str(run_dir), "--json"])
    assert report.exit_code == 0, report.output
    payload = json.loads(report.stdout)
    assert payload["simulated"] is True
    seen = {(row["protocol"], row["composition"]) for row in payload["rows"]}
    labels = {Composition(attack=a).label for a in ATTACKS}
    assert len(labels) == len(ATTACKS)
    assert seen == {(p, label) for p in PROTOCOLS for label in labels}


def test_weak_graph_warns_with_certificate(tmp_path: Path) -> None:
    # K7 is 4-robust: F = 4 asks for 5-robustness, which no 7-node graph has.
    config = _write(
        tmp_path / "f4.yaml",
        {"protocols": ["sac"], "topologies": ["complete"], "F": [4], "dataset": {"n": 1}},
    )
    result = RUNNER.invoke(app, ["consensus", "run", str(config), "-o", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    assert "not (4+1)-robust" in result.stderr and "certificate" in result.stderr


def test_bad_config_is_one_line_and_exit_2(tmp_path: Path) -> None:
    config = _write(tmp_path / "bad.yaml", {"protocols": ["raft"]})
    result = RUNNER.invoke(app, ["consensus", "run", str(config), "-o", str(tmp_path / "r")])
    assert result.exit_code == 2
    assert result.stderr.startswith("error:") and len(result.stderr.strip().splitlines()) == 1
    attack = _write(tmp_path / "bad2.yaml", {"compositions": [{"attack": "bribe"}]})
    result = RUNNER.invoke(app, ["consensus", "run", str(attack), "-o", str(tmp_path / "r")])
    assert result.exit_code == 2 and "unknown attack" in result.stderr
    profile = _write(tmp_path / "bad3.yaml", {"agents": {"weak": {"profile": {"iq": 3}}}})
    result = RUNNER.invoke(app, ["consensus", "run", str(profile), "-o", str(tmp_path / "r")])
    assert result.exit_code == 2 and "unknown profile parameter" in result.stderr
    # Values are checked too: an override is applied unchecked (model_copy), so strength 1.7
    # ran as a population that cannot exist.
    out_of_range = _write(
        tmp_path / "bad5.yaml", {"agents": {"strong": {"profile": {"strength": 1.7}}}}
    )
    result = RUNNER.invoke(app, ["consensus", "run", str(out_of_range), "-o", str(tmp_path / "r")])
    assert result.exit_code == 2
    assert "agents: strong.profile.strength: Input should be" in result.stderr
    llm = _write(tmp_path / "bad4.yaml", {"agents": {"strong": {"backend": "llm"}}})
    result = RUNNER.invoke(app, ["consensus", "run", str(llm), "-o", str(tmp_path / "r")])
    assert result.exit_code == 2 and "needs a model" in result.stderr


def test_report_of_a_missing_run_is_an_input_error(tmp_path: Path) -> None:
    result = RUNNER.invoke(app, ["consensus", "report", str(tmp_path / "nothing")])
    assert result.exit_code == 2 and "error:" in result.stderr


def test_set_overrides_and_highest_degree_placement(tmp_path: Path) -> None:
    run_dir = tmp_path / "r"
    args = [
        "consensus", "run", "-o", str(run_dir),
        "--set", "protocols=[debate]", "--set", "topologies=[merg]",
        "--set", "dataset.n=2",
        "--set",
        "compositions=[{byzantine: 2, weak: 1, attack: collude, placement: highest-degree}]",
    ]  # fmt: skip
    result = RUNNER.invoke(app, args)
    assert result.exit_code == 0, result.output
    from byzllm.runs import Store

    with Store.open(run_dir) as store:
        questions = store.records("consensus_question")
    assert len(questions) == 2
    degree = {v: 0 for v in range(7)}
    for u, v in questions[0]["edges"]:
        degree[u] += 1
        degree[v] += 1
    top = sorted(degree, key=lambda v: (-degree[v], v))[:2]
    assert questions[0]["byzantine_nodes"] == sorted(top)
    assert questions[0]["robustness"]["ok"] is True
    table = RUNNER.invoke(app, ["consensus", "report", str(run_dir)])
    assert table.exit_code == 0, table.output
    assert "simulated" in table.stdout and "Rnd 6" in table.stdout
    out = run_dir / "report"
    assert (out / "table1.csv").is_file() and (out / "table2_rounds.csv").is_file()
    assert len(list(out.glob("accuracy_*.png"))) == 1
    # Every exported row says the results are simulated, so no copy of the file loses it.
    for name in ("table1.csv", "table2_rounds.csv"):
        lines = (out / name).read_text().splitlines()
        assert lines[0].startswith("results,")
        assert all(line.startswith("simulated,") for line in lines[1:])


def test_model_flags_run_llm_agents(tmp_path: Path) -> None:
    from byzllm.testing import FakeOpenAIServer

    def script(request: dict[str, object]) -> str:
        return "Answer: 7" if "Score" not in str(request["messages"]) else "0.8"

    with FakeOpenAIServer(script) as server:
        run_dir = tmp_path / "llm"
        args = [
            "consensus", "run", "-o", str(run_dir), "--model", "openai/fake",
            "--base-url", server.base_url, "--set", "dataset.n=1", "--set", "protocols=[sac]",
            "--set", "topologies=[complete]", "--set", "T=[1]",
            "--set", "agents.strong.api_key_env=null", "--set", "agents.weak.api_key_env=null",
        ]  # fmt: skip
        result = RUNNER.invoke(app, args)
        assert result.exit_code == 0, result.output
        assert server.requests
    report = RUNNER.invoke(app, ["consensus", "report", str(run_dir), "--json"])
    row = json.loads(report.stdout)["rows"][0]
    assert row["simulated"] is False and row["calls_per_question"] > 0


def test_process_executor_gives_the_same_results_as_local(tmp_path: Path) -> None:
    reports = []
    for executor in ("local", "process"):
        run_dir = tmp_path / executor
        args = ["consensus", "run", "--set", "dataset.n=3", "-o", str(run_dir)]
        result = RUNNER.invoke(app, [*args, "--executor", executor])
        assert result.exit_code == 0, result.output
        report = RUNNER.invoke(app, ["consensus", "report", str(run_dir), "--json"])
        assert report.exit_code == 0, report.output
        reports.append(json.loads(report.stdout)["rows"])
    assert reports[0] == reports[1]


def test_unknown_executor_and_stray_ray_address_are_input_errors(tmp_path: Path) -> None:
    run_dir = str(tmp_path / "r")
    result = RUNNER.invoke(app, ["consensus", "run", "-o", run_dir, "--executor", "threads"])
    assert result.exit_code == 2 and "unknown executor 'threads'" in result.stderr
    result = RUNNER.invoke(app, ["consensus", "run", "-o", run_dir, "--ray-address", "auto"])
    assert result.exit_code == 2 and "needs the ray executor" in result.stderr


def test_the_per_round_csv_holds_numbers_with_their_intervals(tmp_path: Path) -> None:
    """table2_rounds.csv used to hold the printed cells ("23.3 [13.3, 35.0]", a † in the
    composition): text where every reader of a CSV expects numbers. Its columns are now
    those of table1.csv: each per-round accuracy in percent with ``_low`` and ``_high``."""
    import csv

    config = _write(
        tmp_path / "mimic.yaml",
        {
            "protocols": ["sac"],
            "topologies": ["complete"],
            "compositions": [{"attack": "mimic"}],
            "T": [2],
            "dataset": {"name": "synthetic", "n": 3},
        },
    )
    run_dir = tmp_path / "run"
    assert RUNNER.invoke(app, ["consensus", "run", str(config), "-o", str(run_dir)]).exit_code == 0
    assert RUNNER.invoke(app, ["consensus", "report", str(run_dir)]).exit_code == 0
    report = RUNNER.invoke(app, ["consensus", "report", str(run_dir), "--json"])
    assert report.exit_code == 0, report.output
    (row,) = json.loads(report.stdout)["rows"]
    with (run_dir / "report" / "table2_rounds.csv").open(newline="") as f:
        rounds = list(csv.DictReader(f))
    assert [r["round"] for r in rounds] == ["0", "1", "2"]
    for line, expected in zip(rounds, row["per_round"], strict=True):
        assert line["results"] == "simulated" and line["composition"] == row["composition"]
        assert line["oracle_attack"] == "True"
        for name in ("accuracy", "weak", "strong", "honest", "ra", "h_majority"):
            low, high = row["intervals"][f"round{expected['round']}.{name}"]
            assert float(line[name]) == round(100 * expected[name], 2)
            assert float(line[f"{name}_low"]) == round(100 * low, 2)
            assert float(line[f"{name}_high"]) == round(100 * high, 2)


def test_report_names_the_units_that_failed(tmp_path: Path) -> None:
    """A unit that failed leaves its configuration's row over fewer questions than the
    others: the report says which configuration, and how many units, in both modes."""
    import asyncio

    from byzllm.experiments.consensus.config import ConsensusConfig
    from byzllm.experiments.consensus.experiment import consensus_unit, expand_units
    from byzllm.runs import Record, run_units

    cfg = ConsensusConfig.model_validate(
        {"protocols": ["sac", "majority"], "topologies": ["complete"], "dataset": {"n": 3}}
    )

    async def failing(payload: dict[str, Any]) -> list[Record]:
        if payload["protocol"] == "majority" and payload["question"] == 1:
            raise RuntimeError("the model went away")
        return await consensus_unit(payload)

    run_dir = tmp_path / "run"
    summary = asyncio.run(
        run_units(run_dir, expand_units(cfg), failing, config=cfg, progress=False)
    )
    assert (summary.done, summary.failed) == (5, 1)
    report = RUNNER.invoke(app, ["consensus", "report", str(run_dir), "--no-rounds"])
    assert report.exit_code == 0, report.output
    assert (
        "warning: 1 consensus unit(s) failed and 0 did not run "
        "(majority/complete/4s2w1b-replay/F3/T6: 1 failed); the rows above are over the "
        "questions that finished"
    ) in report.stderr
    as_json = RUNNER.invoke(app, ["consensus", "report", str(run_dir), "--json"])
    assert as_json.exit_code == 0, as_json.output
    assert json.loads(as_json.stdout)["unfinished"] == {
        "majority/complete/4s2w1b-replay/F3/T6": {"failed": 1, "pending": 0}
    }
    # A run with every unit done says nothing of the kind.
    done = tmp_path / "done"
    asyncio.run(run_units(done, expand_units(cfg), consensus_unit, config=cfg, progress=False))
    clean = RUNNER.invoke(app, ["consensus", "report", str(done), "--json"])
    assert json.loads(clean.stdout)["unfinished"] == {}


def test_plots_of_a_partly_simulated_run_say_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The accuracy plots carry the run's label, as its tables and CSV do: a run with the
    strong agents on a model printed "(partly simulated)" in the tables and titled its plots
    "(simulated)"."""
    import byzllm.runs.reports as reports
    from byzllm.cli.consensus import _write_outputs
    from byzllm.experiments.consensus.config import ConsensusConfig
    from byzllm.experiments.consensus.experiment import run_in_memory
    from byzllm.experiments.consensus.report import results_label, summarize

    titles: list[str | None] = []
    plot = reports.line_plot

    def spy(path: Path, series: Any, **options: Any) -> Path:
        titles.append(reports.simulated_title(options.get("title"), options["simulated"]))
        return plot(path, series, **options)

    monkeypatch.setattr(reports, "line_plot", spy)
    config = ConsensusConfig.model_validate(
        {"protocols": ["sac"], "topologies": ["merg"], "T": [1], "dataset": {"n": 2}}
    )
    summary = summarize(run_in_memory(config))
    label = results_label(True, {"strong": "openai/gpt-4o-mini"})
    _write_outputs(tmp_path, summary, None, label)
    assert titles == ["sac on merg (4s2w1b-replay) (partly simulated)"]
