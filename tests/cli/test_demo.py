"""`byzllm demo`: the paper's Table 1 pattern must emerge from the simulation (acceptance 1)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from byzllm.cli import app


@pytest.fixture(scope="module")
def demo_json(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    run_dir = tmp_path_factory.mktemp("demo") / "run"
    result = CliRunner().invoke(app, ["demo", "--json", "--run-dir", str(run_dir)])
    assert result.exit_code == 0, result.output
    payload: dict[str, Any] = json.loads(result.stdout)
    payload["_run_dir"] = run_dir
    return payload


def test_one_object_per_protocol_and_topology(demo_json: dict[str, Any]) -> None:
    rows = demo_json["rows"]
    assert demo_json["simulated"] is True
    assert {(r["protocol"], r["topology"]) for r in rows} == {
        (p, t) for p in ("sac", "cp-wbft") for t in ("merg", "complete", "erdos-renyi")
    }
    for row in rows:
        assert row["simulated"] is True and row["n_questions"] == 30
        for name in ("IAA", "FAA", "BFTI", "RA", "W_IAA", "W_FAA", "S_IAA", "S_FAA", "H_Majority"):
            assert 0.0 <= abs(row[name]) <= 1.0
        assert len(row["per_round"]) == 7  # Init + T = 6 rounds
    assert (Path(demo_json["_run_dir"]) / "results.sqlite").is_file()


def test_paper_pattern_emerges(demo_json: dict[str, Any]) -> None:
    for row in demo_json["rows"]:
        # The simulated population is calibrated on single agents only (Table 1's IAA).
        assert 0.70 <= row["S_IAA"] <= 0.95 and 0.10 <= row["W_IAA"] <= 0.40
        if row["protocol"] == "cp-wbft":
            assert row["BFTI"] < 0, row
        else:
            assert row["BFTI"] >= 0, row
            assert row["H_Majority"] >= 0.80, row
            assert abs(row["S_FAA"] - row["S_IAA"]) <= 0.05, row


def test_human_output_is_labelled_and_says_where_files_are(tmp_path: Path) -> None:
    run_dir = tmp_path / "d"
    result = CliRunner().invoke(app, ["demo", "--questions", "4", "--run-dir", str(run_dir)])
    assert result.exit_code == 0, result.output
    assert "simulated" in result.stdout
    assert "SAC" in result.stdout and "CP-WBFT" in result.stdout
    assert str(run_dir / "results.sqlite") in result.stdout
    # Rerunning resumes from the store: same table.
    again = CliRunner().invoke(app, ["demo", "--questions", "4", "--run-dir", str(run_dir)])
    assert again.exit_code == 0
    assert again.stdout == result.stdout


def test_a_real_model_demo_says_the_temperature_its_agents_sample_at(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The closing line names the configured temperature (0.7: the agents must differ), and
    the requests carry it."""
    from byzllm.testing import FakeOpenAIServer

    def script(request: dict[str, object]) -> str:
        return "Answer: 7" if "Score" not in str(request["messages"]) else "0.8"

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    with FakeOpenAIServer(script) as server:
        args = ["demo", "--model", "openai/fake", "--base-url", server.base_url]
        result = CliRunner().invoke(app, [*args, "--questions", "1", "-o", str(tmp_path / "r")])
        assert result.exit_code == 0, result.output
        # (the endpoint check before the run asks one word at temperature 0)
        asked = [r for r in server.requests if "single word" not in str(r["messages"])]
    assert asked and {r.get("temperature") for r in asked} == {0.7}
    shown = " ".join(result.stdout.split())
    assert "at temperature 0.7, each with a seed of its own" in shown
    # The replies' parse health is shown with the table it was read from.
    assert "Parse health" in shown and "fallbacks" in shown


def test_rounds_sets_t_for_simulated_and_real_model_runs(tmp_path: Path) -> None:
    from byzllm.runs import Store

    run_dir = tmp_path / "t2"
    result = CliRunner().invoke(app, ["demo", "--questions", "2", "-T", "2", "-o", str(run_dir)])
    assert result.exit_code == 0, result.output
    with Store.open(run_dir) as store:
        questions = store.records("consensus_question")
    assert questions and {q["T"] for q in questions} == {2}
    assert {len(q["trace"]["rounds"]) for q in questions} == {3}  # rounds 0..T
    # Another T is another config: refused in the same folder without --force.
    again = CliRunner().invoke(app, ["demo", "--questions", "2", "-o", str(run_dir)])
    assert again.exit_code == 2
    from byzllm.experiments.consensus.demo import REAL_MODEL_ROUNDS, demo_config

    assert demo_config(1, model="local").T == [REAL_MODEL_ROUNDS]
    assert demo_config(1, model="local", rounds=1).T == [1]
    negative = CliRunner().invoke(app, ["demo", "-T", "-1", "-o", str(tmp_path / "n")])
    assert negative.exit_code == 2
