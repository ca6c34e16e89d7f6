"""SAC, CP-WBFT and debate with real LLM agents (SmolLM2 over HTTP), through the CLI."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from byzllm.cli import app
from byzllm.llm import LocalServer
from byzllm.llm._serve import free_port
from byzllm.runs import Store

pytestmark = pytest.mark.real_model

RUNNER = CliRunner()


@pytest.fixture(scope="module")
def real_run(real_server: LocalServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small consensus run with every honest agent on the real model (SAC, CP-WBFT, debate)."""
    run_dir = tmp_path_factory.mktemp("real") / "run"
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
            "--set",
            f"agents.{group}.adaptive_timeout=false",  # single-slot CPU server
        ]
    result = RUNNER.invoke(app, args)
    assert result.exit_code == 0, result.output
    return run_dir


def test_consensus_run_and_report_on_the_real_model(real_run: Path) -> None:
    run_dir = real_run
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


def test_sim_fit_and_compare_on_a_real_run(real_run: Path, tmp_path: Path) -> None:
    """The simulator's twin, fitted to real replies, and set beside them."""
    profile_path = tmp_path / "smollm2.yaml"
    fitted = RUNNER.invoke(app, ["sim", "fit", str(real_run), "-o", str(profile_path), "--json"])
    assert fitted.exit_code == 0, fitted.output
    profile = json.loads(fitted.stdout)
    assert profile["domain"] == "consensus" and profile["run_simulated"] is False
    strong = profile["sources"]["strong"]
    # Round-0 answers, scores (SAC) and confidences (CP-WBFT) were all measured.
    for name in ("strength", "false_reject", "confidence_at_one_wrong"):
        if name in strong and "no evidence" not in strong[name]:
            assert strong[name].startswith("fitted from run:")
    assert strong["strength"].startswith("fitted from run:")
    assert profile_path.is_file()

    compared = RUNNER.invoke(
        app,
        ["sim", "compare", str(real_run), "--profile", str(profile_path), "--json"],
    )
    assert compared.exit_code == 0, compared.output
    table = json.loads(compared.stdout)
    assert {t["protocol"] for t in table["tables"]} == {"sac", "cp-wbft", "debate"}
    for t in table["tables"]:
        metrics = {r["metric"]: r for r in t["rows"]}
        assert {"IAA", "FAA", "BFTI", "H_Majority"} <= set(metrics)
        iaa = metrics["IAA"]
        assert iaa["n_real"] == iaa["n_simulated"] == 2
        assert iaa["real_low"] <= iaa["real"] <= iaa["real_high"]


def _run_args(server: LocalServer, run_dir: Path, questions: int) -> list[str]:
    args = [
        "consensus",
        "run",
        "--model",
        f"openai/{server.model_name}",
        "--base-url",
        server.base_url,
        "-o",
        str(run_dir),
        "-j",
        "1",
        "--set",
        "protocols=[debate]",
        "--set",
        "topologies=[complete]",
        "--set",
        "T=[1]",
        "--set",
        f"dataset.n={questions}",
    ]
    for group in ("strong", "weak"):
        args += [
            "--set",
            f"agents.{group}.max_tokens=16",
            "--set",
            f"agents.{group}.api_key_env=null",
            "--set",
            f"agents.{group}.retry={{max_attempts: 2, initial_backoff_s: 0.1}}",
        ]
    return args


def _done_units(run_dir: Path) -> int:
    if not (run_dir / "results.sqlite").exists():
        return 0
    with Store.open(run_dir) as store:
        return len(store.units("done"))


def test_a_server_that_dies_mid_run_loses_nothing(real_server: LocalServer, tmp_path: Path) -> None:
    """Kill the server after the first unit: one clear line, the unit stays, a rerun resumes."""
    port = free_port()
    run_dir = tmp_path / "run"
    server = LocalServer("smollm2", port=port).start()
    outcome: dict[str, object] = {}

    def run() -> None:
        outcome["result"] = RUNNER.invoke(app, _run_args(server, run_dir, questions=3))

    worker = threading.Thread(target=run)
    worker.start()
    deadline = time.monotonic() + 300
    while _done_units(run_dir) < 1 and worker.is_alive() and time.monotonic() < deadline:
        time.sleep(0.2)
    server.stop()
    worker.join(timeout=300)
    result: Any = outcome["result"]
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    kept = _done_units(run_dir)
    assert 1 <= kept < 3

    # The same command against a server on the same address resumes: only the rest runs.
    with LocalServer("smollm2", port=port) as again:
        rerun = RUNNER.invoke(app, [*_run_args(again, run_dir, questions=3), "--retry-failed"])
    assert rerun.exit_code == 0, rerun.output
    assert _done_units(run_dir) == 3
