"""--json and Ctrl-C: an interrupted command still prints one JSON document on stdout (the
run's counts when it was running units, else one object saying so), exit 130."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import byzllm.runs
import byzllm.view
from byzllm.cli import app

from .test_help import COMMANDS, _command

RUNNER = CliRunner()


def _json_options() -> list[tuple[str, ...]]:
    return [
        path
        for path in COMMANDS
        if any("--json" in getattr(p, "opts", ()) for p in _command(path).params)
    ]


def test_every_json_option_remembers_it_was_given() -> None:
    """Each command's --json goes through the one callback that makes an interrupted command
    print its JSON document (a command with an option of its own would print nothing)."""
    paths = _json_options()
    assert len(paths) >= 30  # run, report, show, export ... of every area
    for path in paths:
        option = next(p for p in _command(path).params if "--json" in getattr(p, "opts", ()))
        assert option.callback is not None, " ".join(path)


def _stop(*_: object, **__: object) -> None:
    raise KeyboardInterrupt


def test_a_run_interrupted_with_json_prints_its_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def stopped(*args: object, **kwargs: object) -> None:
        _stop()

    monkeypatch.setattr(byzllm.runs, "run_units", stopped)
    run_dir = tmp_path / "run"
    result = RUNNER.invoke(
        app, ["consensus", "run", "-o", str(run_dir), "--set", "dataset.n=2", "--json"]
    )
    assert result.exit_code == 130, result.output
    document = json.loads(result.stdout)
    assert document["status"] == "interrupted" and document["exit_code"] == 130
    assert document["run_dir"] == str(run_dir)
    assert set(document["units"]) == {"total", "done", "failed", "pending"}
    assert document["error"] in result.stderr and "rerun the same command" in result.stderr
    plain = RUNNER.invoke(app, ["consensus", "run", "-o", str(run_dir), "--set", "dataset.n=2"])
    assert plain.exit_code == 130 and plain.stdout == ""


def test_a_report_interrupted_with_json_prints_one_object(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(byzllm.runs.Store, "open", _stop)
    result = RUNNER.invoke(app, ["runs", "show", str(tmp_path), "--json"])
    assert result.exit_code == 130, result.output
    assert json.loads(result.stdout) == {
        "status": "interrupted",
        "exit_code": 130,
        "error": "interrupted",
    }
    assert result.stderr == "interrupted\n"
    plain = RUNNER.invoke(app, ["runs", "show", str(tmp_path)])
    assert plain.exit_code == 130 and plain.stdout == ""


def test_a_command_without_json_after_one_with_it_prints_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The --json seen by one command does not outlive it: ``view`` (no --json option),
    interrupted after a ``runs show --json`` that failed before printing anything, in the same
    process, prints nothing on stdout."""
    first = RUNNER.invoke(app, ["runs", "show", str(tmp_path / "absent"), "--json"])
    assert first.exit_code == 2 and first.stdout == "", first.output
    monkeypatch.setattr(byzllm.view, "write_view", _stop)
    second = RUNNER.invoke(app, ["view", str(tmp_path)])
    assert second.exit_code == 130, second.output
    assert second.stdout == ""
