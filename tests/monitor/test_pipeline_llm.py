"""Acceptance: collect -> train -> evaluate -> report with LLM-backed agents, end to end.

The agents talk to a real HTTP server speaking the OpenAI wire format (``FakeOpenAIServer``)
through the whole model stack; the scripted Accuser asks for one broad message, then awards
a character chosen from the channel text, so some games succeed and some fail.
"""

from __future__ import annotations

import json
import re
import zlib
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from byzllm.cli import app
from byzllm.monitor import CONDITIONS, MonitorSet
from byzllm.testing import FakeOpenAIServer

runner = CliRunner()


def _script(request: dict[str, Any]) -> str:
    messages = request["messages"]
    system = messages[0]["content"]
    user = messages[-1]["content"]
    if "You know the" in system:  # the Accuser's system prompt
        if "(empty)" in user:
            return 'I need information.\n{"thoughts": "ask", "action": 2}'
        n = int(re.search(r"involves (\d+)", system).group(1))  # type: ignore[union-attr]
        pick = 1 + zlib.crc32(user.encode()) % n
        return f'I will decide.\n{{"thoughts": "award", "action": 3, "character": {pick}}}'
    return (
        'Broad message.\n{"thoughts": "share", "action": 2, "value": "hat-brown", "character": [1]}'
    )


def _ok(result: Any) -> None:
    assert result.exit_code == 0, result.output + str(result.exception)


def test_collect_train_evaluate_report_against_fake_server(tmp_path: Path) -> None:
    with FakeOpenAIServer(_script) as server:
        common = [
            "--model",
            "openai/fake-model",
            "--base-url",
            server.base_url,
            "--set",
            "api_key_env=null",
            "--set",
            "game.n_suspects=3",
        ]
        collect = tmp_path / "collect"
        _ok(
            runner.invoke(
                app,
                [
                    "monitor",
                    "collect",
                    "-o",
                    str(collect),
                    *common,
                    "--set",
                    "n_train=16",
                    "--set",
                    "n_validation=10",
                ],
            )
        )
        result = runner.invoke(app, ["monitor", "train", str(collect), "--json"])
        _ok(result)
        trained = json.loads(result.stdout)
        assert trained["simulated"] is False
        assert {r["role"] for r in trained["rows"]} == {"accuser", "intel"}
        monitors = MonitorSet.load(collect / "monitors.json")
        assert monitors.meta["agents"] == "llm" and monitors.meta["model"] == "openai/fake-model"
        evaluate = tmp_path / "eval"
        _ok(
            runner.invoke(
                app,
                [
                    "monitor",
                    "evaluate",
                    "-m",
                    str(collect / "monitors.json"),
                    "-o",
                    str(evaluate),
                    *common,
                    "--set",
                    "n_test=6",
                    "--set",
                    "repeats=2",
                ],
            )
        )
        # Each run's endpoint check (one tiny request before its first unit) asks no logprobs.
        games = [r for r in server.requests if "single word: OK" not in str(r["messages"])]
        n_requests = len(games)
    assert n_requests > 0 and len(server.requests) - n_requests == 2  # collect, evaluate
    assert all(r.get("logprobs") and r.get("top_logprobs") == 10 for r in games)
    result = runner.invoke(
        app, ["monitor", "report", str(evaluate), "--json", "--plots", str(tmp_path / "plots")]
    )
    _ok(result)
    report = json.loads(result.stdout)
    assert report["simulated"] is False and report["sim_params"] is None
    assert report["monitors_simulated"] is False
    conditions = [r["condition"] for r in report["rows"]]
    # Every condition by default: Fig. 4's and the ablations (Table 3, turn count only).
    assert conditions == list(CONDITIONS)
    assert all(r["games"] == 12 and r["runs"] == 2 for r in report["rows"])
    assert report["feature_gain"]["paired"] and report["feature_gain"]["n"] == 6
    assert report["feature_gain_sentence"].startswith("monitor gain over the turn-count-only ")
    assert (tmp_path / "plots" / "success_rate.png").stat().st_size > 1000
    assert (tmp_path / "plots" / "ablations.png").stat().st_size > 1000
    assert (tmp_path / "plots" / "trigger_turns.png").stat().st_size > 1000
    table = runner.invoke(app, ["monitor", "report", str(evaluate)])
    _ok(table)
    assert "monitor-1" in table.stdout and "simulated" not in table.stdout


def test_real_games_with_monitors_trained_on_simulated_agents_say_so(tmp_path: Path) -> None:
    """The games are real; what triggered the interventions came from simulated agents: the
    report named nothing simulated (only the test games' own flag was read)."""
    import asyncio

    from byzllm.experiments.monitor import (
        MonitorExperimentConfig,
        collect_units,
        datasets_from_rows,
        run_in_memory,
    )
    from byzllm.monitor import train_monitor_set

    cfg = MonitorExperimentConfig.model_validate(
        {"game": {"n_suspects": 3}, "n_train": 30, "n_validation": 20}
    )
    rows = asyncio.run(run_in_memory(collect_units(cfg)))
    turns = [r for r in rows if r["kind"] == "monitor_turn"]
    monitors, _ = train_monitor_set(*datasets_from_rows(turns), meta={"simulated": True})
    path = monitors.save(tmp_path / "sim-monitors.json")
    evaluate = tmp_path / "eval"
    with FakeOpenAIServer(_script) as server:
        argv = ["monitor", "evaluate", "-m", str(path), "-o", str(evaluate)]
        argv += ["--model", "openai/fake-model", "--base-url", server.base_url]
        for setting in ("api_key_env=null", "game.n_suspects=3", "n_test=2", "repeats=1"):
            argv += ["--set", setting]
        _ok(runner.invoke(app, [*argv, "--set", "conditions=[none, monitor-1]"]))
    result = runner.invoke(app, ["monitor", "report", str(evaluate), "--json"])
    _ok(result)
    report = json.loads(result.stdout)
    assert report["simulated"] is False and report["monitors_simulated"] is True
    table = runner.invoke(app, ["monitor", "report", str(evaluate)])
    _ok(table)
    assert "monitors trained on simulated agents' games" in " ".join(table.stdout.split())
