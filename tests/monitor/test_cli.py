"""`byzllm monitor` errors: one line on stderr, exit code 2 for bad input."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from byzllm.cli import app
from byzllm.runs import sign_test_p

runner = CliRunner()


def test_help_lists_the_pipeline() -> None:
    result = runner.invoke(app, ["monitor", "--help"])
    assert result.exit_code == 0
    for command in ("collect", "train", "evaluate", "report"):
        assert command in result.output


def test_config_example_counts_the_default_conditions() -> None:
    from byzllm.experiments.monitor import MonitorExperimentConfig
    from byzllm.monitor.conditions import DEFAULT_CONDITIONS

    words = {9: "nine", 10: "ten", 11: "eleven"}
    assert f"# default: all {words[len(DEFAULT_CONDITIONS)]}" in str(
        MonitorExperimentConfig.__doc__
    )


def test_evaluate_with_garbage_monitors_file(tmp_path: Path) -> None:
    bad = tmp_path / "monitors.json"
    bad.write_text("{definitely not json")
    result = runner.invoke(app, ["monitor", "evaluate", "-m", str(bad), "-o", str(tmp_path / "e")])
    assert result.exit_code == 2
    assert "error:" in result.output and "Traceback" not in result.output


def test_evaluate_with_missing_monitors_file(tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["monitor", "evaluate", "-m", str(tmp_path / "none.json"), "-o", str(tmp_path / "e")]
    )
    assert result.exit_code == 2


def test_bad_config_value_is_rejected_before_running(tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["monitor", "collect", "-o", str(tmp_path / "c"), "--set", "conditions=[explode]"]
    )
    assert result.exit_code == 2
    assert not (tmp_path / "c").exists()


def test_llm_agents_need_a_model(tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        [
            "monitor",
            "collect",
            "-o",
            str(tmp_path / "c"),
            "--set",
            "agents=llm",
            "--set",
            "n_train=1",
            "--set",
            "n_validation=1",
        ],
    )
    assert result.exit_code == 2
    assert "needs a model" in result.output
    assert not (tmp_path / "c").exists()


def test_train_and_report_without_results(tmp_path: Path) -> None:
    for command in ("train", "report"):
        result = runner.invoke(app, ["monitor", command, str(tmp_path / "nothing")])
        assert result.exit_code != 0
        assert "error:" in result.output and "Traceback" not in result.output


def _monitors_file(tmp_path: Path, **renames: str) -> Path:
    """A real monitor set (one 'accuser' monitor) with roles renamed as asked."""
    import json

    from byzllm.monitor import train_monitor_set

    from ._fixtures import train_set, validation_set

    monitors, _ = train_monitor_set(train_set(), validation_set(), roles=["accuser"])
    data = monitors.to_dict()
    for section in ("roles", "random_baseline"):
        data[section] = {renames.get(k, k): v for k, v in data[section].items()}
    path = tmp_path / "monitors.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


_SMALL = ["--set", "n_test=1", "--set", "repeats=1", "--set", "conditions=[none, monitor-1]"]


def _evaluate(tmp_path: Path, monitors: Path, *extra: str) -> Any:
    run_dir = tmp_path / "eval"
    return runner.invoke(
        app, ["monitor", "evaluate", "-m", str(monitors), "-o", str(run_dir), *_SMALL, *extra]
    )


def _one_error_line(result: Any) -> str:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    return str(lines[0])


def test_evaluate_accepts_a_set_of_the_environment(tmp_path: Path) -> None:
    result = _evaluate(tmp_path, _monitors_file(tmp_path))
    assert result.exit_code == 0, result.output


def test_a_run_folder_holds_the_results_of_one_monitor_set(tmp_path: Path) -> None:
    """A second monitor set evaluated into the same folder ran beside the first, and the
    report pooled both sets' games (each test game counted twice). The folder is now bound
    to the set's fingerprint: the same set resumes, another is refused (exit 2)."""
    import json

    from byzllm.monitor import MonitorSet

    first = _monitors_file(tmp_path)
    data = json.loads(first.read_text(encoding="utf-8"))
    data["base_rate"] = 0.5  # another set
    second = tmp_path / "other.json"
    second.write_text(json.dumps(data), encoding="utf-8")
    assert MonitorSet.load(first).fingerprint() != MonitorSet.load(second).fingerprint()
    assert MonitorSet.load(first).fingerprint() == MonitorSet.load(first).fingerprint()
    assert _evaluate(tmp_path, first).exit_code == 0
    line = _one_error_line(_evaluate(tmp_path, second))
    assert "differs in monitor_set" in line
    again = _evaluate(tmp_path, first)
    assert again.exit_code == 0 and "already done" in again.output


def test_evaluate_refuses_unknown_roles_naming_the_environments(tmp_path: Path) -> None:
    path = _monitors_file(tmp_path, accuser="acuser")
    line = _one_error_line(_evaluate(tmp_path, path))
    assert str(path) in line and "unknown role 'acuser'" in line
    assert "WhoDunit asym environment has the roles accuser, intel" in line
    assert not (tmp_path / "eval").exists()


def test_evaluate_refuses_a_set_of_the_other_variant(tmp_path: Path) -> None:
    line = _one_error_line(
        _evaluate(tmp_path, _monitors_file(tmp_path), "--set", "game.variant=sym")
    )
    assert "unknown role 'accuser'" in line and "has the roles player" in line


def test_evaluate_refuses_a_set_without_monitors(tmp_path: Path) -> None:
    import json

    path = _monitors_file(tmp_path)
    data = json.loads(path.read_text(encoding="utf-8"))
    data["roles"], data["random_baseline"] = {}, {}
    path.write_text(json.dumps(data), encoding="utf-8")
    line = _one_error_line(_evaluate(tmp_path, path))
    assert "no role has a monitor" in line and "accuser, intel" in line


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"\xff\xfe{\x00\x80 not utf-8", "not UTF-8"),
        ('{"roles": {"accuser": 1}}'.encode("utf-16"), "not UTF-8"),
        (b"[1, 2, 3]", "not a monitor set"),
        (b"roles:\n  accuser: {threshold: 0.5}\n", "not JSON"),
        (b'{"format": "byzllm.monitor/monitor/1", "features": ["entropy"]}', "not a monitor set"),
        (b'{"results": [], "simulated": true}', "not a monitor set"),
        (b"", "not JSON"),
        (b'"monitors"', "not a monitor set"),
        (b"[" * 100_000, "not JSON"),
    ],
    ids=[
        "latin",
        "utf16",
        "list",
        "yaml",
        "a-single-monitor",
        "other-object",
        "empty",
        "string",
        "deep",
    ],
)
def test_evaluate_refuses_foreign_files_in_one_line(
    tmp_path: Path, content: bytes, expected: str
) -> None:
    path = tmp_path / "monitors.json"
    path.write_bytes(content)
    line = _one_error_line(_evaluate(tmp_path, path))
    assert str(path) in line and expected in line


def test_evaluate_refuses_malformed_entries_in_one_line(tmp_path: Path) -> None:
    import json

    path = _monitors_file(tmp_path)
    good = json.loads(path.read_text(encoding="utf-8"))
    broken = [
        ("roles", "accuser"),
        ("roles", {"accuser": []}),
        ("roles", {"accuser": {**good["roles"]["accuser"], "threshold": "high"}}),
        ("roles", {"accuser": {**good["roles"]["accuser"], "threshold": 1e400}}),
        (
            "roles",
            {
                "accuser": {
                    **good["roles"]["accuser"],
                    "monitor": {**good["roles"]["accuser"]["monitor"], "degree": 1e400},
                }
            },
        ),
        ("random_baseline", {"accuser": {"probability": None, "gain": 0}}),
    ]
    for key, value in broken:
        path.write_text(json.dumps({**good, key: value}), encoding="utf-8")
        line = _one_error_line(_evaluate(tmp_path, path))
        assert str(path) in line


def _pipeline(tmp_path: Path) -> tuple[Path, Path]:
    """collect -> train on a few simulated games; returns (collect dir, monitors file)."""
    collect = tmp_path / "collect"
    sizes = ["--set", "n_train=40", "--set", "n_validation=20"]
    result = runner.invoke(app, ["monitor", "collect", "-o", str(collect), *sizes])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["monitor", "train", str(collect)])
    assert result.exit_code == 0, result.output
    # Table 3's monitors are trained and shown with the selected ones.
    for name in ("2nd best", "worst", "turn count only", "(turn only)"):
        assert name in result.output
    return collect, collect / "monitors.json"


def test_evaluate_and_report_show_the_ablations(tmp_path: Path) -> None:
    import json

    from byzllm.monitor import CONDITIONS

    _, monitors = _pipeline(tmp_path)
    run = tmp_path / "eval"
    small = ["--set", "n_test=6", "--set", "repeats=1"]
    result = runner.invoke(
        app, ["monitor", "evaluate", "-m", str(monitors), "-o", str(run), *small]
    )
    assert result.exit_code == 0, result.output
    out = tmp_path / "out"
    result = runner.invoke(
        app, ["monitor", "report", str(run), "--plots", str(out), "--csv", str(out)]
    )
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())  # rich wraps long lines
    assert "monitor gain over the turn-count-only monitor: " in text and "95% CI [" in text
    assert "monitor gain over the best single-feature monitor: " in text
    assert "paired bootstrap over 6 test games) (simulated)" in text
    assert "Ablations (the rogue-agents paper, Table 3; test games) (simulated)" in text
    assert "percentile bootstrap" in text and "standard error" in text
    for name in ("ablations.png", "success_rate.png", "ablations.csv", "conditions.csv"):
        assert (out / name).stat().st_size > 0
    for name in ("ablations.csv", "conditions.csv"):
        lines = (out / name).read_text(encoding="utf-8").splitlines()
        assert lines[0].startswith("results,")
        assert all(line.startswith("simulated,") for line in lines[1:])
    assert "interval_method" in (out / "ablations.csv").read_text(encoding="utf-8")
    # The columns docs/monitor.md names for each file: a label on every row, and the method
    # of the file's own uncertainty (standard errors or intervals).
    documented = {
        "conditions.csv": {"results", "simulated", "se_method"},
        "ablations.csv": {"results", "simulated", "interval_method"},
        "control_gains.csv": {"results", "interval_method"},
    }
    for name, columns in documented.items():
        lines = (out / name).read_text(encoding="utf-8").splitlines()
        assert columns <= set(lines[0].split(",")), (name, lines[0])
        assert len(lines) > 1 and all(line.startswith("simulated,") for line in lines[1:])
    result = runner.invoke(app, ["monitor", "report", str(run), "--json"])
    report = json.loads(result.stdout)
    assert {r["condition"] for r in report["rows"]} == set(CONDITIONS)
    gain = report["feature_gain"]
    assert (gain["a"], gain["b"], gain["paired"], gain["n"]) == (
        "monitor-1",
        "turn-only-1",
        True,
        6,
    )
    assert gain["low"] <= gain["value"] <= gain["high"]
    by = {r["condition"]: r for r in report["rows"]}
    assert gain["value"] == pytest.approx(
        by["monitor-1"]["success_rate"] - by["turn-only-1"]["success_rate"]
    )
    assert report["not_evaluated"] == {} and report["simulated"] is True
    controls = {r["comparison"]: r for r in report["control_gains"]}
    assert set(controls) == {"monitor-1 - turn-only-1", "monitor-1 - single-feature-1"}
    for row in controls.values():
        assert row["low"] <= row["value"] <= row["high"]
        contains_zero = row["low"] <= 0 <= row["high"]
        # Significant: the interval excludes 0 and the sign test over the games agrees.
        signs_agree = row["paired"] is False or sign_test_p(row["better"], row["worse"]) < 0.05
        significant = not contains_zero and signs_agree
        assert row["verdict"] == ("significant" if significant else "not significant")


def test_a_monitors_file_from_before_ablations_still_evaluates(tmp_path: Path) -> None:
    import json

    _, monitors = _pipeline(tmp_path)
    data = json.loads(monitors.read_text(encoding="utf-8"))
    del data["ablations"]
    old = tmp_path / "old.json"
    old.write_text(json.dumps(data), encoding="utf-8")
    run = tmp_path / "eval"
    small = ["--set", "n_test=2", "--set", "repeats=1"]
    result = runner.invoke(app, ["monitor", "evaluate", "-m", str(old), "-o", str(run), *small])
    assert result.exit_code == 0, result.output
    assert "skipping second-best-1, worst-1, turn-only-1, single-feature-1" in result.output
    result = runner.invoke(app, ["monitor", "report", str(run)])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "monitor gain over the turn-count-only monitor: n/a" in text
    assert "monitor gain over the best single-feature monitor: n/a" in text
    assert "not trained; rerun `byzllm monitor train`" in text
    # Nothing but ablations that are not there is refused in one line.
    only = ["--set", "conditions=[turn-only-1]"]
    line = _one_error_line(_evaluate(tmp_path, old, *only))
    assert "rerun `byzllm monitor train`" in line


def test_report_names_the_test_units_that_did_not_finish(tmp_path: Path) -> None:
    """A failed evaluation unit dropped its games from the tables without a word: a condition
    that intervenes plays longer games, which time out more often, so its success rate was
    taken over the easier games that finished."""
    import json
    import sqlite3

    assert _evaluate(tmp_path, _monitors_file(tmp_path)).exit_code == 0
    store = tmp_path / "eval" / "results.sqlite"
    with sqlite3.connect(store) as conn:
        units = conn.execute("SELECT id, payload FROM units").fetchall()
        failed = [uid for uid, payload in units if json.loads(payload)["condition"] == "monitor-1"]
        assert failed
        marks = ",".join("?" * len(failed))
        conn.execute(
            f"UPDATE units SET status='failed', error='TimeoutError: x' WHERE id IN ({marks})",
            failed,
        )
        conn.execute(f"DELETE FROM records WHERE unit_id IN ({marks})", failed)
    result = runner.invoke(app, ["monitor", "report", str(tmp_path / "eval")])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert f"warning: {len(failed)} test unit(s) failed and 0 did not run" in text
    assert f"monitor-1: {len(failed)} failed" in text
    report = json.loads(
        runner.invoke(app, ["monitor", "report", str(tmp_path / "eval"), "--json"]).stdout
    )
    assert report["unfinished"] == {"monitor-1": {"failed": len(failed), "pending": 0}}


def test_train_names_the_collect_units_that_did_not_finish(tmp_path: Path) -> None:
    """A failed collect unit dropped its game from training and from the validation games the
    thresholds and gains are chosen on, without a word (a longer game times out more often,
    so the games that finished need not be like the ones that did not)."""
    import json
    import sqlite3

    run = tmp_path / "col"
    small = ["--set", "n_train=30", "--set", "n_validation=20"]
    assert runner.invoke(app, ["monitor", "collect", "-o", str(run), *small]).exit_code == 0
    done = runner.invoke(app, ["monitor", "train", str(run), "--json"])
    assert json.loads(done.stdout)["unfinished"] == {} and "warning: " not in done.output
    with sqlite3.connect(run / "results.sqlite") as conn:
        units = conn.execute("SELECT id, payload FROM units").fetchall()
        failed = [uid for uid, p in units if json.loads(p)["split"] == "validation"][::4]
        marks = ",".join("?" * len(failed))
        conn.execute(
            f"UPDATE units SET status='failed', error='TimeoutError: x' WHERE id IN ({marks})",
            failed,
        )
        conn.execute(f"DELETE FROM records WHERE unit_id IN ({marks})", failed)
    result = runner.invoke(app, ["monitor", "train", str(run)])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert f"warning: {len(failed)} collect unit(s) failed and 0 did not run" in text
    assert f"(validation: {len(failed)} failed)" in text
    assert "rerun `byzllm monitor collect` with --retry-failed, then train again" in text
    trained = json.loads(runner.invoke(app, ["monitor", "train", str(run), "--json"]).stdout)
    assert trained["unfinished"] == {"validation": {"failed": len(failed), "pending": 0}}


@pytest.mark.parametrize(
    ("field", "value"),
    [("total_turns", None), ("resets", "abc"), ("requests.requests", "abc")],
)
def test_report_on_an_edited_game_is_one_error_line(
    tmp_path: Path, edit_record: Callable[..., str], field: str, value: Any
) -> None:
    """A game record edited by hand (a number turned into null or text) is named with its
    unit and field when the report loads it, not met as a traceback in a sum."""
    assert _evaluate(tmp_path, _monitors_file(tmp_path)).exit_code == 0
    unit = edit_record(tmp_path / "eval", "monitor_game", field, value)
    line = _one_error_line(runner.invoke(app, ["monitor", "report", str(tmp_path / "eval")]))
    assert "monitor_game record 1 of unit" in line and f"({unit})" in line
    assert f": {field.split('.')[0]}: " in line


def test_report_on_an_edited_trigger_is_one_error_line(
    tmp_path: Path, edit_record: Callable[..., str]
) -> None:
    """The report takes each game's first trigger turn: a turn edited into text ended in a
    ValueError traceback (in a game of the ``none`` condition) or passed unread."""
    assert _evaluate(tmp_path, _monitors_file(tmp_path)).exit_code == 0
    trigger = {"game_id": "g", "turn": "abc", "role": "accuser", "agent": "A", "score": 0.5}
    unit = edit_record(tmp_path / "eval", "monitor_game", "triggers", [trigger | {"acted": False}])
    line = _one_error_line(runner.invoke(app, ["monitor", "report", str(tmp_path / "eval")]))
    assert "monitor_game record 1 of unit" in line and f"({unit})" in line
    assert ": triggers.0.turn: Input should be a valid integer (got 'abc')" in line


def test_train_on_an_edited_turn_is_one_error_line(
    tmp_path: Path, edit_record: Callable[..., str]
) -> None:
    run = tmp_path / "collect"
    small = ["--set", "n_train=2", "--set", "n_validation=1"]
    assert runner.invoke(app, ["monitor", "collect", "-o", str(run), *small]).exit_code == 0
    unit = edit_record(run, "monitor_turn", "turn", None, position=1)
    line = _one_error_line(runner.invoke(app, ["monitor", "train", str(run)]))
    assert "monitor_turn record 2 of unit" in line and f"({unit})" in line
    assert ": turn: Input should be a valid integer (got None)" in line
