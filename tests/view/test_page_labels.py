"""What a page says about where its results come from, beside the report commands' words."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from byzllm.cli import app
from byzllm.monitor.report import MONITORS_SIMULATED_NOTE, monitors_transferred
from byzllm.view import render_view
from byzllm.view._games import monitor_sections
from byzllm.view._html import esc

RUNNER = CliRunner()


def _monitor_game(
    condition: str, game: int, repeat: int, success: bool, **fields: Any
) -> dict[str, Any]:
    """A WhoDunit monitor evaluation's test game, as the store gives it back."""
    return {
        "env": "whodunit",
        "split": "test",
        "condition": condition,
        "game_id": f"asym-test-{game:04d}",
        "repeat": repeat,
        "success": success,
        "accused": True,
        "total_turns": 12,
        "resets": int(condition != "none" and not success),
        "resamples": 0,
        "triggers": [],
        "turn_scores": [],
        "transcript": [],
        "agents": "llm",
        "simulated": False,
        **fields,
    }


def _evaluation(**fields: Any) -> list[dict[str, Any]]:
    return [
        _monitor_game(condition, game, repeat, (game + repeat) % 3 != 0, **fields)
        for condition in ("none", "monitor-1")
        for game in range(4)
        for repeat in range(2)
    ]


def _summary(games: list[dict[str, Any]]) -> str:
    sections, _ = monitor_sections(games, max_details=0)
    return next(s.html for s in sections if s.anchor == "summary")


def test_real_games_with_monitors_trained_on_simulated_ones_say_so() -> None:
    """`monitor report` captions such a run "monitors trained on simulated agents' games";
    the page said only "real-model results" in its header."""
    games = _evaluation(monitors_simulated=True)
    assert monitors_transferred(games)
    assert esc(MONITORS_SIMULATED_NOTE) in _summary(games)


def test_monitors_trained_on_the_same_kind_of_agents_add_no_note() -> None:
    real = _evaluation(monitors_simulated=False)
    simulated = _evaluation(monitors_simulated=True, simulated=True, agents="simulated")
    for games in (real, simulated, _evaluation()):
        assert not monitors_transferred(games)
        assert esc(MONITORS_SIMULATED_NOTE) not in _summary(games)


def test_a_govsim_page_names_the_interval_the_report_names(tmp_path: Path) -> None:
    """Every fisher restrained: Survival-Rate 100%, whose interval is Wilson's (no bootstrap
    of five survivals reaches below 100%); the page's note said "95% percentile bootstrap
    over games" all the same."""
    from byzllm.experiments.govsim import INTERVAL_NOTE

    run = tmp_path / "gs"
    sets = ["n_games=5", "govsim.sim.greed=0", "govsim.sim.rogue_rate=0"]
    result = RUNNER.invoke(
        app, ["govsim", "run", *[a for s in sets for a in ("--set", s)], "-o", str(run)]
    )
    assert result.exit_code == 0, result.output
    page = render_view(run)
    assert "100.0 [56.6, 100.0]" in page  # Wilson's interval of 5 of 5
    assert esc(f"brackets: {INTERVAL_NOTE}") in page and "Wilson" in INTERVAL_NOTE


def test_a_codegen_page_names_the_interval_the_report_names(
    tmp_path: Path, toy_problems: Path
) -> None:
    from byzllm.experiments.codegen.report import INTERVAL_NOTE

    run = tmp_path / "cg"
    sets = [f"problems={toy_problems}", "n_test=2", "execution=simulated"]
    result = RUNNER.invoke(
        app, ["codegen", "run", *[a for s in sets for a in ("--set", s)], "-o", str(run)]
    )
    assert result.exit_code == 0, result.output
    page = render_view(run)
    assert esc(f"brackets: {INTERVAL_NOTE}") in page and "Wilson" in INTERVAL_NOTE
    # Four problems hold one test problem: a table over 1 must not pass for one over 2.
    assert esc("warning: n_test=2, but the table's rows hold 1 test problems") in page


def _requests_html(records: list[dict[str, Any]]) -> str:
    from byzllm.view._health import health_section

    return health_section(records).html


def test_requests_not_recorded_are_not_shown_as_zero() -> None:
    """Real-model records written before requests were counted: the report says "not
    recorded", the page showed a table of zero requests, retries and failures."""
    from byzllm.experiments import request_health

    records = [{"simulated": False, "parse": {}} for _ in range(3)]
    assert request_health.from_records(records).status == "not recorded"
    html = _requests_html(records)
    assert esc("model requests: not recorded") in html
    assert "<th>requests</th>" not in html


def test_request_errors_by_kind_are_shown_as_the_report_shows_them() -> None:
    counts = {"requests": 10, "cached": 0, "retries": 1, "timeouts": 1, "failures": 0}
    records = [{"simulated": False, "requests": {**counts, "errors": {"http_503": 1}}}] * 2
    html = _requests_html(records)
    # 2 retries of 20 requests: under the warning's threshold, so only the table says why.
    assert "warning" not in html
    assert "<td>2 (10.0%)</td>" in html and "<td>http_503 2</td>" in html


def test_a_whodunit_page_says_over_how_many_runs_its_games_were_played(tmp_path: Path) -> None:
    """Three games played twice: 3 games, 6 plays, 2 runs, as `whodunit report` counts them
    (the page said 6 games, as if six had been drawn)."""
    run = tmp_path / "wd"
    args = ["whodunit", "run", "--set", "n_games=3", "--set", "repeats=2", "-o", str(run)]
    result = RUNNER.invoke(app, args)
    assert result.exit_code == 0, result.output
    page = render_view(run)
    summary = page[page.index('id="summary"') : page.index('id="health"')]
    assert re.search(r">games</th><th[^>]*>plays</th><th>runs</th>", summary)
    assert "<td>3</td><td>6</td><td>2</td>" in summary
    assert "<h1>wd: WhoDunitEnv (3 games, 6 plays)</h1>" in page


def test_a_run_with_one_group_on_a_model_says_it_is_partly_simulated(tmp_path: Path) -> None:
    """``--weak-model`` alone: the weak agents ran on a model, the strong ones simulated. The
    page said "simulated agents (not real LLMs)", as for a run without any model."""
    import json

    from byzllm.runs import Store

    from .test_hardening_records import _write

    run = tmp_path / "demo"
    result = RUNNER.invoke(app, ["demo", "--questions", "1", "-o", str(run)])
    assert result.exit_code == 0, result.output
    assert "<span class='label simulated'>simulated agents (not real LLMs)</span>" in (
        render_view(run)
    )
    with Store.open(run) as store:
        records = json.loads(json.dumps(store.records("consensus_question")))
    for record in records:
        for agent in record["agents"]:
            if agent["group"] == "weak":
                agent.update(family="llm", model="openai/fake-model")
    _write(tmp_path / "mixed", "consensus_question", records)
    note = (
        "partly simulated: weak agents on openai/fake-model; the other agents simulated "
        "(not real LLMs)"
    )
    assert f"<span class='label simulated'>{note}</span>" in render_view(tmp_path / "mixed")
    # `consensus report` says the same under its tables, in its CSV and its JSON.
    mixed = str(tmp_path / "mixed")
    report = RUNNER.invoke(app, ["consensus", "report", mixed], env={"COLUMNS": "400"})
    assert report.exit_code == 0, report.output
    assert note in report.output and "simulated agents (not real LLMs)" not in report.output
    table1 = (tmp_path / "mixed" / "report" / "table1.csv").read_text(encoding="utf-8")
    assert table1.splitlines()[1].startswith("partly simulated,")
    as_json = RUNNER.invoke(app, ["consensus", "report", mixed, "--json"])
    shown = json.loads(as_json.stdout)
    assert shown["simulated"] is True and shown["on_model"] == {"weak": "openai/fake-model"}


def test_a_monitor_page_and_report_count_games_and_plays_alike(tmp_path: Path) -> None:
    """Four test games played in two runs: the page counted 4 games per condition (distinct)
    and `monitor report` 8 (plays) under the same word. Both now say 4 games, 8 plays."""
    import json

    collect, evaluate = tmp_path / "collect", tmp_path / "eval"
    collect_args = ["--set", "n_train=12", "--set", "n_validation=6", "-o", str(collect)]
    evaluate_args = ["-m", str(collect / "monitors.json"), "-o", str(evaluate)]
    evaluate_args += ["--set", "n_test=4", "--set", "repeats=2"]
    evaluate_args += ["--set", "conditions=[none, monitor-1]"]
    steps = [
        ["monitor", "collect", *collect_args],
        ["monitor", "train", str(collect)],
        ["monitor", "evaluate", *evaluate_args],
    ]
    for args in steps:
        result = RUNNER.invoke(app, args)
        assert result.exit_code == 0, result.output
    report = RUNNER.invoke(app, ["monitor", "report", str(evaluate), "--json"])
    assert report.exit_code == 0, report.output
    rows = json.loads(report.stdout)["rows"]
    assert [(r["distinct_games"], r["plays"], r["runs"], r["games"]) for r in rows] == [
        (4, 8, 2, 8)
    ] * 2
    table = RUNNER.invoke(app, ["monitor", "report", str(evaluate)])
    assert re.search(r"│ none\s+│\s+2 │\s+4 │\s+8 │", table.stdout), table.stdout
    page = render_view(evaluate)
    summary = page[page.index('id="summary"') : page.index('id="health"')]
    assert re.search(r">games</th><th[^>]*>plays</th><th>runs</th>", summary)
    assert summary.count("<td>4</td><td>8</td><td>2</td>") == 2
    assert "monitor evaluation (4 games, 16 plays)</h1>" in page
