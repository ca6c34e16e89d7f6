"""SAC, CP-WBFT and debate with real LLM agents (SmolLM2 over HTTP), through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from byzllm.cli import app
from byzllm.experiments import Store
from byzllm.llm import LocalServer

pytestmark = pytest.mark.real_model

RUNNER = CliRunner()


def test_consensus_run_and_report_on_the_real_model(
    real_server: LocalServer, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    args = [
        "consensus",
        "run",
        "--model",
        f"openai/{real_server.model_name}",
        "--base-url",
        real_server.base_url,
        "-o",
        str(run_dir),
        "--set",
        "protocols=[sac, cp-wbft, debate]",
        "--set",
        "topologies=[complete]",
        "--set",
        "T=[1]",
        "--set",
        "dataset.n=2",
    ]
    for group in ("strong", "weak"):
        args += [
            "--set",
            f"agents.{group}.max_tokens=48",
            "--set",
            f"agents.{group}.api_key_env=null",
        ]
    result = RUNNER.invoke(app, args)
    assert result.exit_code == 0, result.output

    with Store.open(run_dir) as store:
        rounds = store.records_frame("consensus_round")
    assert set(rounds["protocol"]) == {"sac", "cp-wbft", "debate"}
    assert not rounds["simulated"].any()
    assert (rounds["calls"] + rounds["cached_calls"]).sum() > 0
    assert set(rounds["round"]) == {0, 1}
    first = rounds[rounds["round"] == 0]
    # Every stage ran: SAC scored its neighbours (round 0's scores feed round 1's refine),
    # CP-WBFT gathered confidences, and every honest agent's replies were parsed.
    assert first[first["protocol"] == "sac"]["scores"].map(len).sum() > 0
    assert rounds[rounds["protocol"] == "cp-wbft"]["confidence"].notna().any()
    assert first["parse"].map(lambda stages: stages.get("answer", {}).get("calls", 0)).sum() > 0

    report = RUNNER.invoke(app, ["consensus", "report", str(run_dir), "--json"])
    assert report.exit_code == 0, report.output
    payload = json.loads(report.stdout)
    assert payload
