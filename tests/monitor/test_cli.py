"""`byzllm monitor` errors: one line on stderr, exit code 2 for bad input."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from byzllm.cli import app

runner = CliRunner()


def test_help_lists_the_pipeline() -> None:
    result = runner.invoke(app, ["monitor", "--help"])
    assert result.exit_code == 0
    for command in ("collect", "train", "evaluate", "report"):
        assert command in result.output


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
