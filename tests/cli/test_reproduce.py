"""`byzllm reproduce`: each table or figure of the papers that is an entry, from its shipped config,
beside the paper."""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from byzllm.cli import app
from byzllm.reproduce import REPRODUCTIONS, config_path
from byzllm.reproduce.page import NO_SENSITIVITY

RUNNER = CliRunner()


def test_list_names_every_table_with_its_shipped_config() -> None:
    result = RUNNER.invoke(app, ["reproduce", "--list", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["reproductions"]
    assert [r["name"] for r in rows] == list(REPRODUCTIONS)
    tables = {(r["paper"], r["table"]) for r in rows}
    for k in range(1, 7):
        assert ("the SAC paper", f"Table {k}") in tables
    for table in ("Table 1", "Table 2", "Table 3", "Fig. 4", "Fig. 5", "Fig. 6"):
        assert ("the rogue-agents paper", table) in tables
    for r in rows:
        assert Path(r["config"]).is_file()
    # The table shows each config file and where they are (docs/reproduce.md promises it).
    shown = RUNNER.invoke(app, ["reproduce", "--list"], env={"COLUMNS": "300"})
    assert shown.exit_code == 0, shown.output
    assert "sac-table1.yaml" in shown.stdout
    assert f"config files: in {Path(rows[0]['config']).parent}" in shown.stdout


@pytest.mark.parametrize("name", list(REPRODUCTIONS))
def test_every_table_runs_on_simulated_agents(
    name: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    run_dir = tmp_path / name
    size = "3" if REPRODUCTIONS[name].kind == "consensus" else "6"
    if name == "ra-table2":
        # GovSim's sustainable share (GovSim's code) collapses most seasons of the default
        # fishers: 12 training games per split can all collapse, and a monitor needs both.
        size = "20"
    if name == "ra-fig5":
        # Symmetric players share only true facts: six training games can all be won.
        size = "12"
    args = ["reproduce", name, "-o", str(run_dir), "-n", size, "--json"]
    if REPRODUCTIONS[name].kind == "codegen":
        # CodeGen's Table 1 needs HumanEval, which is not shipped (skips without it).
        shared: Path = request.getfixturevalue("shared_data")
        args += ["--problems", str(shared / "HumanEval.jsonl.gz")]
    result = RUNNER.invoke(app, args)
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["simulated"] is True and payload["rows"]
    entry = REPRODUCTIONS[name]
    for row in payload["rows"]:
        for metric in entry.metrics:
            if row[metric] is not None:
                assert row[f"{metric}_diff"] == pytest.approx(
                    row[metric] - row[f"{metric}_paper"], abs=0.11
                )
    with open(payload["csv"], newline="", encoding="utf-8") as handle:
        assert all(r["results"] == "simulated" for r in csv.DictReader(handle))
    assert Path(payload["view"]).is_file()
    # The page: every gap larger than its interval explained, the sensitivity section.
    page = Path(payload["page"]).read_text(encoding="utf-8")
    assert "## Gaps larger than their interval" in page and "## Sensitivity: " in page
    assert payload["sensitivity"]["runs"] > 0 and payload["sensitivity"]["rows"]
    for gap in payload["gaps"]:
        low, high, paper = gap["low"], gap["high"], gap["paper"]
        assert low is None or not low <= paper <= high
        assert gap["explanation"] == "unexplained" or "contains" in gap["explanation"]
    view = Path(payload["view"]).read_text(encoding="utf-8")
    assert 'id="gaps"' in view and 'id="sensitivity"' in view
    # Paper, ours with its interval and the difference side by side for every cell, red where
    # the paper's number lies outside our interval (exactly the gaps), and a glossary.
    shown = [m for m in entry.metrics if any(m in r or f"{m}_paper" in r for r in payload["rows"])]
    verdicts = re.findall(r'<td class="paper (in|out|none)"', view)
    assert len(verdicts) == len(payload["rows"]) * len(shown) > 0
    assert verdicts.count("out") == len(payload["gaps"])
    assert 'id="glossary"' in view
    if entry.kind != "consensus":
        comparisons = [c["comparison"] for c in payload["control_gains"]]
        assert comparisons == ["monitor-1 - turn-only-1", "monitor-1 - single-feature-1"]
        assert all(
            c["verdict"] in ("significant", "not significant") for c in payload["control_gains"]
        )


def test_codegen_table_needs_humaneval_and_only_it_takes_problems(tmp_path: Path) -> None:
    missing = RUNNER.invoke(app, ["reproduce", "ra-table1", "-o", str(tmp_path / "a")])
    assert missing.exit_code == 2 and "--problems HumanEval.jsonl.gz" in missing.output
    assert not (tmp_path / "a").exists()
    elsewhere = RUNNER.invoke(
        app, ["reproduce", "ra-table3", "--problems", str(tmp_path / "x.jsonl"), "-n", "2"]
    )
    assert elsewhere.exit_code == 2 and "--problems is for ra-table1" in elsewhere.output


def test_unknown_table_is_one_clear_line() -> None:
    result = RUNNER.invoke(app, ["reproduce", "table-99"])
    assert result.exit_code == 2
    assert "reproduce --list" in result.output


def test_shipped_configs_load() -> None:
    from byzllm.experiments.codegen import TABLE1_CONDITIONS, CodeGenConfig
    from byzllm.experiments.consensus.config import ConsensusConfig
    from byzllm.experiments.monitor.config import MonitorExperimentConfig
    from byzllm.runs import load_config

    for entry in REPRODUCTIONS.values():
        if entry.kind == "consensus":
            assert load_config(config_path(entry.config), ConsensusConfig).dataset.n == 30
        elif entry.kind == "codegen":
            codegen = load_config(config_path(entry.config), CodeGenConfig)
            assert set(TABLE1_CONDITIONS) <= set(codegen.conditions)
            assert {"turn-only-1", "single-feature-1"} <= set(codegen.conditions)
            assert codegen.test_split == "humaneval" and codegen.problems is None
        else:
            cfg = load_config(config_path(entry.config), MonitorExperimentConfig)
            assert "none" in cfg.conditions and "monitor-1" in cfg.conditions


def test_a_table_read_from_another_tables_runs_reuses_its_units(tmp_path: Path) -> None:
    # sac-table2 is the per-round view of sac-table1's runs: after table 1, it runs nothing.
    first = RUNNER.invoke(
        app, ["reproduce", "sac-table1", "-o", str(tmp_path / "sac-table1"), "-n", "2", "--json"]
    )
    assert first.exit_code == 0, first.output
    assert json.loads(first.stdout)["reused_units"] == 0
    second = RUNNER.invoke(
        app, ["reproduce", "sac-table2", "-o", str(tmp_path / "sac-table2"), "-n", "2", "--json"]
    )
    assert second.exit_code == 0, second.output
    payload = json.loads(second.stdout)
    units = payload["reused_units"]
    assert units > 0 and payload["reused_from"] == {str(tmp_path / "sac-table1"): units}
    assert f"{units} units reused from {tmp_path / 'sac-table1'}" in second.stderr
    assert f"0 done, {units} already done of {units} units" in second.stderr


def test_a_run_on_a_model_has_its_own_folder_and_page_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from byzllm.testing import FakeOpenAIServer

    def script(request: dict[str, object]) -> str:
        return "0.8" if "Score" in str(request["messages"]) else "Answer: 7"

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    with FakeOpenAIServer(script) as server:
        args = ["reproduce", "sac-table1", "--model", "openai/fake-model", "-n", "1"]
        result = RUNNER.invoke(app, [*args, "--base-url", server.base_url, "--json"])
    assert result.exit_code == 0, result.output
    # The replies' parse health: in the JSON and on the comparison's own page.
    payload = json.loads(result.stdout)
    stages = {s["stage"]: s for s in payload["parse_health"]["stages"]}
    assert stages["answer"]["calls"] > 0 and stages["answer"]["fallbacks"] == 0
    # Every group on the model: real, and the JSON says which model each ran on.
    model = "openai/fake-model"
    assert payload["simulated"] is False
    assert payload["on_model"] == {"strong": model, "weak": model}
    compared = tmp_path / "runs/reproduce/sac-table1-fake-model/report/reproduce.md"
    assert "## Parse health" in compared.read_text()
    # Beside the simulated run's runs/reproduce/sac-table1, which holds another config.
    page = (tmp_path / "runs/reproduce/sac-table1-fake-model/report/real.md").read_text()
    # The page is regenerated by the command that made it (was a --real one naming the
    # model as if it were shipped).
    assert (
        "Regenerate: `byzllm reproduce sac-table1 --model openai/fake-model --base-url "
        f"{server.base_url} -n 1 -o runs/reproduce/sac-table1-fake-model`"
    ) in page


def test_a_run_with_one_group_on_a_model_reruns_nothing_and_shows_its_parse_health(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--weak-model`` alone: the strong group stays simulated, so the run is labelled
    simulated; its sensitivity section reran the config eight times in memory, every weak
    agent's call sent to the model again (as "extra simulated runs"), and its page dropped
    the parse health of the model's replies."""
    from byzllm.testing import FakeOpenAIServer

    def script(request: dict[str, object]) -> str:
        return "0.8" if "Score" in str(request["messages"]) else "Answer: 7"

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    run_dir = tmp_path / "weak-on-a-model"
    with FakeOpenAIServer(script) as server:
        args = ["reproduce", "sac-table1", "--weak-model", "openai/fake-model", "-n", "1"]
        args += ["--base-url", server.base_url, "-o", str(run_dir), "--json"]
        result = RUNNER.invoke(app, args)
        sent = len(server.requests)
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["simulated"] is True and "sensitivity" not in payload
    # The run's own calls only: one question, two weak agents, six configurations.
    calls = sum(s["calls"] for s in payload["parse_health"]["stages"])
    assert 0 < sent <= calls + 1  # + the endpoint check before the first unit
    page = (run_dir / "report" / "reproduce.md").read_text()
    assert "## Parse health" in page and f"## Sensitivity\n\n{NO_SENSITIVITY}" in page


def test_a_run_with_one_group_on_a_model_says_which_wherever_it_is_labelled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--weak-model`` alone: the weak agents on a model, the strong ones simulated. The
    printed table, the page, the CSV and the view's comparison said "simulated agents (not
    real LLMs)" / ``simulated``, as for a run without any model, and the JSON did not say
    which groups ran on which model."""
    from byzllm.testing import FakeOpenAIServer

    def script(request: dict[str, object]) -> str:
        return "0.8" if "Score" in str(request["messages"]) else "Answer: 7"

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    run_dir = tmp_path / "weak-on-a-model"
    note = (
        "partly simulated: weak agents on openai/fake-model; the other agents simulated "
        "(not real LLMs)"
    )
    with FakeOpenAIServer(script) as server:
        args = ["reproduce", "sac-table1", "--weak-model", "openai/fake-model", "-n", "1"]
        args += ["--base-url", server.base_url, "-o", str(run_dir)]
        as_json = RUNNER.invoke(app, [*args, "--json"])
        printed = RUNNER.invoke(app, args, env={"COLUMNS": "400"})  # resumed: nothing runs
    assert as_json.exit_code == 0, as_json.output
    payload = json.loads(as_json.stdout)
    assert payload["simulated"] is True and payload["on_model"] == {"weak": "openai/fake-model"}
    assert printed.exit_code == 0, printed.output
    assert f"ours: {note}; brackets" in printed.stdout
    assert "simulated agents (not real LLMs)" not in printed.stdout.replace(note, "")
    page = (run_dir / "report" / "reproduce.md").read_text()
    assert f"Ours: {note}." in page
    with (run_dir / "report" / "paper_comparison.csv").open(encoding="utf-8") as handle:
        assert {row["results"] for row in csv.DictReader(handle)} == {"partly simulated"}
    view = (run_dir / "view.html").read_text()
    comparison = view[view.index('id="paper"') : view.index('id="gaps"')]
    assert f'<td title="{note}">partly simulated</td>' in comparison
    assert ">simulated<" not in comparison


def test_a_run_with_only_the_weak_group_on_a_model_has_its_own_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--weak-model`` alone ran in the simulated run's folder (runs/reproduce/NAME), which
    holds another config: after ``reproduce sac-table1`` it was refused (exit 2)."""
    from byzllm.testing import FakeOpenAIServer

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    simulated = RUNNER.invoke(app, ["reproduce", "sac-table1", "-n", "1", "--json"])
    assert simulated.exit_code == 0, simulated.output
    with FakeOpenAIServer(lambda request: "Answer: 7") as server:
        args = ["reproduce", "sac-table1", "--weak-model", "openai/fake-model", "-n", "1"]
        result = RUNNER.invoke(app, [*args, "--base-url", server.base_url, "--json"])
    assert result.exit_code == 0, result.output
    folder = tmp_path / "runs" / "reproduce" / "sac-table1-weak-fake-model"
    assert json.loads(result.stdout)["csv"] == str(
        (folder / "report" / "paper_comparison.csv").relative_to(tmp_path)
    )


class _FakeLocalServer:
    """Stands in for the llama.cpp server that ``--real`` starts: a scripted fake."""

    def __init__(self, alias: str, **_: object) -> None:
        from byzllm.testing import FakeOpenAIServer

        self._fake = FakeOpenAIServer(lambda request: "3 + 4 = 7\nAnswer: 7")

    def __enter__(self) -> _FakeLocalServer:
        self._fake.__enter__()
        self.base_url = self._fake.base_url
        return self

    def __exit__(self, *exc: object) -> None:
        self._fake.__exit__(*exc)


def test_a_real_pages_regenerate_line_is_the_command_that_made_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The --real page's Regenerate line dropped ``-o`` (a pilot in a folder of its own,
    as docs/reproduce.md runs one) and gave ``-n`` as the questions the page covers, which a
    ``--partial`` page has fewer of than the run plans."""
    import sqlite3

    monkeypatch.setattr("byzllm.llm.LocalServer", _FakeLocalServer)
    run_dir = tmp_path / "pilot"
    args = ["reproduce", "sac-table1", "--real", "qwen0.5b", "-n", "2", "-o", str(run_dir)]
    result = RUNNER.invoke(app, args)
    assert result.exit_code == 0, result.output
    command = (
        f"byzllm reproduce sac-table1 --real qwen0.5b --real-weak smollm2 -n 2 -j 1 -o {run_dir}"
    )
    page = run_dir / "report" / "real.md"
    assert f"Regenerate: `{command}`" in page.read_text()
    # As if the run had stopped before its last unit (the last protocol of the second
    # question: a real run goes question by question) had finished.
    with sqlite3.connect(run_dir / "results.sqlite") as db:
        (unit,) = db.execute("SELECT id FROM units ORDER BY ordinal DESC LIMIT 1").fetchone()
        db.execute("DELETE FROM records WHERE unit_id = ?", (unit,))
    result = RUNNER.invoke(app, [*args, "--partial"])
    assert result.exit_code == 0, result.output
    text = page.read_text()
    assert "**Partial: 1 of the 2 planned questions**" in text
    assert f"Regenerate: `{command}`" in text


def test_real_weak_is_refused_where_no_agent_is_weak(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ra-fig4 --real qwen0.5b --real-weak qwen1.5b`` started the qwen0.5b server and
    played every seat on it, the weak model silently ignored."""

    def started(alias: str, **_: object) -> None:
        raise AssertionError(f"a server was started for {alias}")

    monkeypatch.setattr("byzllm.llm.LocalServer", started)
    args = ["reproduce", "ra-fig4", "--real", "qwen0.5b", "--real-weak", "qwen1.5b"]
    result = RUNNER.invoke(app, [*args, "-o", str(tmp_path / "r")])
    assert result.exit_code == 2, result.output
    assert "error: --real-weak is for the SAC entries: ra-fig4 has no weak agents" in result.output
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("name", ["ra-fig4", "ra-table1"])
def test_weak_model_is_refused_where_no_agent_is_weak(name: str, tmp_path: Path) -> None:
    """``ra-fig4 --weak-model M`` ignored M and ran the simulated population (every player
    of a rogue-agents entry is on ``--model``)."""
    run_dir = tmp_path / "r"
    args = ["reproduce", name, "--weak-model", "openai/some-model", "-n", "6"]
    result = RUNNER.invoke(app, [*args, "-o", str(run_dir)])
    assert result.exit_code == 2, result.output
    assert f"error: --weak-model is for the SAC entries: {name} has no weak agents" in (
        result.output
    )
    assert not run_dir.exists()


@pytest.mark.parametrize(
    ("models", "folder"),
    [
        (["--real", "qwen0.5b"], "sac-table1-real"),
        (["--real", "qwen1.5b", "--real-weak", "qwen0.5b"], "sac-table1-real-qwen1.5b-qwen0.5b"),
    ],
)
def test_a_real_run_on_other_shipped_models_has_its_own_folder(
    models: list[str], folder: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # docs/reproduce.md runs qwen0.5b, then qwen1.5b: one folder would hold two configs,
    # which the binding of run folders refuses. (--partial reads the folder, starts nothing.)
    monkeypatch.chdir(tmp_path)
    result = RUNNER.invoke(app, ["reproduce", "sac-table1", *models, "--partial"])
    assert result.exit_code == 2
    store = Path("runs") / "reproduce" / folder / "results.sqlite"
    assert result.stderr.strip() == f"error: no results store at {store} (is this a run directory?)"


@pytest.mark.parametrize("flag", [["--partial"], ["--real-weak", "smollm2"]])
def test_real_only_options_without_real_are_refused(tmp_path: Path, flag: list[str]) -> None:
    """``--partial`` ("with --real: run nothing") without --real ran the whole simulated table
    and its sensitivity sweep, and exited 0."""
    result = RUNNER.invoke(app, ["reproduce", "sac-table1", *flag, "-o", str(tmp_path / "r")])
    assert result.exit_code == 2
    assert "goes with --real" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "r").exists()


def test_partial_over_an_edited_record_is_one_error_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edit_record: Callable[..., str]
) -> None:
    """``--partial`` reports on a folder a user may have edited: an edited question record
    ended it with an error that did not say which record; it is named, as in ``consensus
    report``."""
    monkeypatch.setattr("byzllm.llm.LocalServer", _FakeLocalServer)
    run_dir = tmp_path / "pilot"
    args = ["reproduce", "sac-table1", "--real", "qwen0.5b", "-n", "1", "-o", str(run_dir)]
    assert RUNNER.invoke(app, args).exit_code == 0
    unit = edit_record(run_dir, "consensus_question", "trace.rounds.0.0.calls", None)
    result = RUNNER.invoke(app, [*args, "--partial"])
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: invalid value in consensus_question record 1 of ")
    assert f"({unit})" in result.output and ": trace.rounds.0.0.calls: " in result.output
