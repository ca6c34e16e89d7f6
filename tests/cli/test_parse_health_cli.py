"""Parse health in every report: `consensus report`, `whodunit report`, `monitor report`,
`runs show` (tables, JSON, one warning line per stage above 20%)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from byzllm.cli import app
from byzllm.testing import FakeOpenAIServer, FakeReply

RUNNER = CliRunner()

SAC_WARNING = (
    "warning: 100% of SAC scores defaulted to 0.5 (42 of 42): the model did not follow the "
    "scoring format, so nothing was filtered (SAC ran as debate)"
)


def _ok(result: Any) -> None:
    assert result.exit_code == 0, result.output + str(result.exception)


def _warnings(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("warning:")]


def _true_scorer(request: dict[str, Any]) -> str:
    """A small model that answers the scoring prompt with "True" and everything else well."""
    user = str(request["messages"][-1]["content"])
    return "True" if user.rstrip().endswith("Score:") else "Let me think.\nAnswer: 7"


def test_sac_scores_that_all_default_are_reported_with_one_warning(tmp_path: Path) -> None:
    run_dir = tmp_path / "llm"
    with FakeOpenAIServer(_true_scorer) as server:
        args = [
            "consensus", "run", "-o", str(run_dir), "--model", "openai/fake",
            "--base-url", server.base_url, "--set", "dataset.n=1", "--set", "protocols=[sac]",
            "--set", "topologies=[complete]", "--set", "T=[1]",
            "--set", "agents.strong.api_key_env=null", "--set", "agents.weak.api_key_env=null",
        ]  # fmt: skip
        _ok(RUNNER.invoke(app, args))

    # 6 honest agents score 6 neighbours and themselves in round 0: 42 scores, all "True".
    report = RUNNER.invoke(app, ["consensus", "report", str(run_dir), "--out", str(tmp_path)])
    _ok(report)
    assert "Parse health" in report.stdout and "SAC score" in report.stdout
    assert "100.0%" in report.stdout
    assert _warnings(report.stderr) == [SAC_WARNING]

    as_json = RUNNER.invoke(app, ["consensus", "report", str(run_dir), "--json"])
    _ok(as_json)
    payload = json.loads(as_json.stdout)
    health = payload["parse_health"]
    assert health["status"] == "warning" and health["warnings"] == [SAC_WARNING]
    stages = {s["stage"]: s for s in health["stages"]}
    assert stages["score"] == {
        "stage": "score",
        "label": "SAC score",
        "calls": 42,
        "fallbacks": 42,
        "rate": 1.0,
    }
    assert stages["answer"]["fallbacks"] == 0 and stages["refine"]["fallbacks"] == 0
    assert payload["rows"][0]["parse"]["score"] == {"calls": 42, "fallbacks": 42}
    assert _warnings(as_json.stderr) == [SAC_WARNING]

    # Every round record and the question record keep the counts.
    from byzllm.runs import Store

    with Store.open(run_dir) as store:
        rounds = store.records("consensus_round")
        (question,) = store.records("consensus_question")
    assert question["parse"]["score"] == {"calls": 42, "fallbacks": 42}
    assert sum(r["parse"].get("score", {}).get("calls", 0) for r in rounds) == 42

    shown = RUNNER.invoke(app, ["runs", "show", str(run_dir)])
    _ok(shown)
    assert "SAC score" in shown.stdout and _warnings(shown.stderr) == [SAC_WARNING]
    shown_json = RUNNER.invoke(app, ["runs", "show", str(run_dir), "--json"])
    _ok(shown_json)
    assert json.loads(shown_json.stdout)["parse_health"] == health


def test_simulated_consensus_run_says_not_applicable(tmp_path: Path) -> None:
    run_dir = tmp_path / "sim"
    _ok(RUNNER.invoke(app, ["consensus", "run", "-o", str(run_dir), "--set", "dataset.n=2"]))
    report = RUNNER.invoke(app, ["consensus", "report", str(run_dir), "--out", str(tmp_path)])
    _ok(report)
    assert "parse health: n/a (simulated" in report.stdout
    assert _warnings(report.stderr) == [] and "Parse health" not in report.stdout
    payload = json.loads(RUNNER.invoke(app, ["consensus", "report", str(run_dir), "--json"]).stdout)
    assert payload["parse_health"]["status"] == "n/a (simulated)"
    assert payload["parse_health"]["stages"] == [] and payload["parse_health"]["warnings"] == []
    shown = RUNNER.invoke(app, ["runs", "show", str(run_dir), "--json"])
    assert json.loads(shown.stdout)["parse_health"]["status"] == "n/a (simulated)"
    assert _warnings(shown.stderr) == []


def _garbage(request: dict[str, Any]) -> str:
    return "\x1b[31mI am a small model.\x1b[0m [1,2,"


def test_whodunit_garbage_moves_are_reported(tmp_path: Path) -> None:
    run_dir = tmp_path / "wd"
    with FakeOpenAIServer(_garbage) as server:
        args = [
            "whodunit", "run", "-o", str(run_dir),
            "--set", "agents=llm", "--set", "model=openai/fake",
            "--set", f"base_url={server.base_url}", "--set", "api_key_env=null",
            "--set", "split=generated", "--set", "n_games=2",
            "--set", "game.max_turns=4", "--set", "max_reprompts=1",
        ]  # fmt: skip
        _ok(RUNNER.invoke(app, args))
    report = RUNNER.invoke(app, ["whodunit", "report", str(run_dir)])
    _ok(report)
    assert "WhoDunit move" in report.stdout and "100.0%" in report.stdout
    (line,) = _warnings(report.stderr)
    assert line.startswith("warning: 100% of WhoDunit moves fell back to a pass (8 of 8): ")
    payload = json.loads(RUNNER.invoke(app, ["whodunit", "report", str(run_dir), "--json"]).stdout)
    assert payload["parse_health"]["stages"] == [
        {"stage": "move", "label": "WhoDunit move", "calls": 8, "fallbacks": 8, "rate": 1.0}
    ]
    assert payload["parse_health"]["warnings"] == [line]


def test_simulated_whodunit_run_has_no_warning(tmp_path: Path) -> None:
    run_dir = tmp_path / "wd-sim"
    args = ["whodunit", "run", "-o", str(run_dir), "--set", "split=test", "--set", "n_games=3"]
    _ok(RUNNER.invoke(app, args))
    report = RUNNER.invoke(app, ["whodunit", "report", str(run_dir)])
    _ok(report)
    assert "parse health: n/a (simulated" in report.stdout and _warnings(report.stderr) == []
    payload = json.loads(RUNNER.invoke(app, ["whodunit", "report", str(run_dir), "--json"]).stdout)
    assert payload["parse_health"]["status"] == "n/a (simulated)"


def _monitor_store(run_dir: Path, base_url: str | None) -> None:
    """Evaluate-stage units of the `none` condition (no monitor set needed) into a store."""
    from byzllm.experiments.monitor import MonitorExperimentConfig, work
    from byzllm.experiments.monitor.experiment import _split_games
    from byzllm.runs import make_unit, run_units

    settings: dict[str, Any] = {"n_test": 2, "game": {"max_turns": 4}, "max_reprompts": 0}
    if base_url is not None:
        settings.update(agents="llm", model="openai/fake", base_url=base_url, api_key_env=None)
    cfg = MonitorExperimentConfig.model_validate(settings)
    units = [
        make_unit(
            {
                "stage": "evaluate",
                "config": cfg.model_dump(mode="json"),
                "split": "test",
                "game": game.model_dump(mode="json"),
                "repeat": 0,
                "condition": "none",
            },
            label=game.id,
        )
        for game in _split_games(cfg, "test")
    ]
    summary = asyncio.run(run_units(run_dir, units, work, config=cfg, progress=False))
    assert summary.complete, summary


def test_monitor_report_shows_parse_health(tmp_path: Path) -> None:
    with FakeOpenAIServer(_garbage) as server:
        _monitor_store(tmp_path / "llm", server.base_url)
    report = RUNNER.invoke(app, ["monitor", "report", str(tmp_path / "llm")])
    _ok(report)
    assert "WhoDunit move" in report.stdout
    (line,) = _warnings(report.stderr)
    assert line.startswith("warning: 100% of WhoDunit moves fell back to a pass (8 of 8)")
    payload = json.loads(
        RUNNER.invoke(app, ["monitor", "report", str(tmp_path / "llm"), "--json"]).stdout
    )
    assert payload["parse_health"]["stages"][0]["fallbacks"] == 8

    _monitor_store(tmp_path / "sim", None)
    simulated = RUNNER.invoke(app, ["monitor", "report", str(tmp_path / "sim")])
    _ok(simulated)
    assert "parse health: n/a (simulated" in simulated.stdout and not _warnings(simulated.stderr)


def _accuse_without_logprobs(request: dict[str, Any]) -> FakeReply:
    # A valid move for the accuser (intel turns that cannot accuse fall back to a pass), with
    # log-probabilities whose tokens do not spell it (a server that sends none at all stops
    # the run instead: LogprobsUnavailableError).
    from byzllm.llm import TokenLogprob

    unrelated = [TokenLogprob(token="ok", logprob=-0.1, top=[("ok", -0.1), ("no", -2.3)])]
    return FakeReply('{"action": 3, "character": 1}', logprobs=unrelated)


def test_monitored_turns_without_logprobs_are_counted(tmp_path: Path) -> None:
    """The monitor reads such a turn as no uncertainty (its documented default): the report
    says how many turns that was."""
    with FakeOpenAIServer(_accuse_without_logprobs) as server:
        _monitor_store(tmp_path / "llm", server.base_url)
    payload = json.loads(
        RUNNER.invoke(app, ["monitor", "report", str(tmp_path / "llm"), "--json"]).stdout
    )
    stages = {s["stage"]: s for s in payload["parse_health"]["stages"]}
    read = stages["logprobs"]
    assert read["calls"] > 0 and read["fallbacks"] == read["calls"]
    assert read["calls"] + stages["move"]["fallbacks"] == stages["move"]["calls"]
    assert any(
        "monitored turns had no log-probabilities" in w for w in payload["parse_health"]["warnings"]
    )
