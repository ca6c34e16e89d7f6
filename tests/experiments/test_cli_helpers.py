"""Acceptance: malformed configs fail before any unit runs (one line, exit 2); a failed unit
is retried by --retry-failed; Ctrl-C exits 130 and the run resumes. Built on _common."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from byzllm.cli._common import (
    JsonOption,
    cli_errors,
    default_run_dir,
    emit_rows,
    execute_units,
    handle_errors,
    print_json,
)
from byzllm.errors import ConfigError, InputError
from byzllm.runs import Store

from .cli_app import answer, app

APP_SCRIPT = Path(__file__).with_name("cli_app.py")
runner = CliRunner()


@pytest.fixture
def questions(tmp_path: Path) -> Path:
    path = tmp_path / "questions.txt"
    path.write_text("alpha beta gamma\n", encoding="utf-8")
    return path


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "toy.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("yaml_text", "problem"),
    [
        ("questions: {q}\nrepeat: 3\n", "repeat: unknown key (did you mean 'repeats'?)"),
        ("questions: {q}\nrepeats: many\n", "repeats: Input should be a valid integer"),
        ("questions: missing.txt\n", "questions: file not found: missing.txt"),
    ],
    ids=["unknown-key", "wrong-type", "missing-data-file"],
)
def test_malformed_config_is_one_line_exit_2_before_any_unit(
    tmp_path: Path, questions: Path, yaml_text: str, problem: str
) -> None:
    config = _config(tmp_path, yaml_text.format(q=questions))
    run_dir = tmp_path / "run"
    result = runner.invoke(app, ["run", str(config), "--run-dir", str(run_dir)])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"error: invalid config {config}: ")
    assert problem in lines[0]
    assert "Traceback" not in result.output
    assert not run_dir.exists(), "nothing may run (or be created) before the config validates"


def test_bad_set_override_is_exit_2(tmp_path: Path, questions: Path) -> None:
    config = _config(tmp_path, f"questions: {questions}\n")
    for bad in (["--set", "repeats"], ["--set", "repeats=0"], ["--set", "bogus.key=1"]):
        result = runner.invoke(app, ["run", str(config), "-o", str(tmp_path / "r"), *bad])
        assert result.exit_code == 2, result.output
        assert len(result.stderr.strip().splitlines()) == 1


def test_failed_unit_then_retry_failed_via_cli(tmp_path: Path, questions: Path) -> None:
    config = _config(tmp_path, f"questions: {questions}\nfail_first_try: true\n")
    run_dir = tmp_path / "run"
    args = ["run", str(config), "-o", str(run_dir), "--set", "repeats=2", "--json"]

    first = runner.invoke(app, args)
    assert first.exit_code == 1, first.output
    summary = json.loads(first.stdout)
    assert (summary["done"], summary["failed"]) == (3, 3)
    assert {f["error"] for f in summary["failures"]} == {
        f"RuntimeError: first try of {q} failed" for q in ("alpha", "beta", "gamma")
    }

    resumed = runner.invoke(app, args)
    assert resumed.exit_code == 1
    assert json.loads(resumed.stdout)["not_run"] == 3
    assert json.loads(resumed.stdout)["failed_before"] == 3
    assert json.loads(resumed.stdout)["never_run"] == 0
    # Without --json: exactly what remains, and how to rerun the failed units.
    plain = runner.invoke(app, args[:-1])
    assert plain.exit_code == 1
    assert "nothing to run: 3 of 6 units done, 3 failed earlier (rerun with --retry-failed" in (
        plain.stderr
    )
    assert "0 done, 3 already done, 3 failed earlier (not rerun) of 6 units" in plain.stderr
    assert "rerun with --retry-failed to run the failed units again" in plain.stderr

    retried = runner.invoke(app, [*args, "--retry-failed"])
    assert retried.exit_code == 0, retried.output
    assert json.loads(retried.stdout) | {"seconds": 0, "units_per_s": 0, "run_id": 0} == {
        "run_dir": str(run_dir),
        "run_id": 0,
        "status": "finished",
        "complete": True,
        "total": 6,
        "skipped": 3,
        "done": 3,
        "failed": 0,
        "not_run": 0,
        "failed_before": 0,
        "never_run": 0,
        "seconds": 0,
        "units_per_s": 0,
        "failures": [],
        "requests": {
            "requests": 0,
            "cached": 0,
            "retries": 0,
            "timeouts": 0,
            "failures": 0,
            "errors": {},
        },
    }
    with Store.open(run_dir) as store:
        assert len(store.records("answer")) == 6
        assert store.latest_config()["repeats"] == 2  # type: ignore[index]


def test_json_stdout_is_one_document_when_something_prints_during_the_run(
    tmp_path: Path, questions: Path
) -> None:
    """Whatever writes to stdout while units run (Ray's driver relays a dying node's
    messages there) goes to stderr: stdout holds the JSON summary alone."""
    config = _config(tmp_path, f"questions: {questions}\nchatter: true\n")
    result = runner.invoke(app, ["run", str(config), "-o", str(tmp_path / "run"), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["done"] == 6
    assert result.stderr.count("chatter while answering") == 6


def test_summary_line_without_json(tmp_path: Path, questions: Path) -> None:
    config = _config(tmp_path, f"questions: {questions}\n")
    result = runner.invoke(app, ["run", str(config), "-o", str(tmp_path / "run")])
    assert result.exit_code == 0
    assert result.stdout == ""
    assert "finished: 6 done of 6 units" in result.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    ("sig", "json_output"),
    [(signal.SIGINT, False), (signal.SIGTERM, False), (signal.SIGINT, True)],
    ids=["SIGINT", "SIGTERM", "SIGINT-json"],
)
def test_interrupt_exits_130_and_resumes(
    tmp_path: Path, questions: Path, sig: int, json_output: bool
) -> None:
    words = " ".join(f"q{i}" for i in range(120))
    questions.write_text(words, encoding="utf-8")
    # 0.1 s a unit, two at a time: about 6 s in all, so the signal lands mid-run even when a
    # busy machine is slow to open the store and count (0.01 s a unit finished first there).
    config = _config(tmp_path, f"questions: {questions}\nrepeats: 1\ndelay_s: 0.1\n")
    run_dir = tmp_path / "run"
    cmd = [sys.executable, str(APP_SCRIPT), "run", str(config), "-o", str(run_dir), "-j", "2"]
    cmd += ["--json"] if json_output else []
    env = {**os.environ, "PYTHONPATH": str(APP_SCRIPT.parents[2])}
    # SIGINT as a terminal delivers it: a shell that starts the test suite in the background
    # has it ignored, and an ignored SIGINT is inherited (Python then never raises
    # KeyboardInterrupt, and the run rightly goes on).
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if (run_dir / "results.sqlite").exists():
            with Store.open(run_dir) as store:
                if store.counts()["done"] >= 5:
                    break
        time.sleep(0.02)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err.decode()
    assert "rerun the same command to resume" in err.decode()
    assert "Traceback" not in err.decode()
    with Store.open(run_dir) as store:
        counts = store.counts()
        assert 5 <= counts["done"] < 120 and counts["failed"] == 0
        assert len(store.records("answer")) == counts["done"]
        assert store.runs()[-1]["status"] == "interrupted"
    if json_output:  # stdout: one JSON document, the run's counts with the stderr line
        document = json.loads(out)
        assert document["status"] == "interrupted" and document["exit_code"] == 130
        assert document["units"] == {"total": 120, **counts}
        assert document["run_dir"] == str(run_dir)
        assert document["error"] in err.decode()
    else:
        assert out == b""

    done = subprocess.run(cmd, capture_output=True, env=env, timeout=60, check=False)
    assert done.returncode == 0, done.stderr.decode()
    with Store.open(run_dir) as store:
        assert store.counts()["done"] == 120


def test_cli_errors_maps_exceptions_to_exit_codes() -> None:
    demo = typer.Typer()

    @demo.command()
    @handle_errors
    def boom(kind: str) -> None:
        if kind == "config":
            raise ConfigError("bad\nconfig")
        if kind == "input":
            raise InputError("bad input")
        raise KeyboardInterrupt

    config = runner.invoke(demo, ["config"])
    assert (config.exit_code, config.stderr) == (2, "error: bad config\n")
    assert runner.invoke(demo, ["input"]).exit_code == 2
    assert runner.invoke(demo, ["other"]).exit_code == 130

    with pytest.raises(typer.Exit) as info, cli_errors():
        raise ConfigError("x")
    assert info.value.exit_code == 2


def test_an_interrupted_command_with_json_prints_one_json_document() -> None:
    """--json: a command stopped by Ctrl-C prints one object saying so, unless its own JSON
    is already out (stdout stays one document); without --json, nothing on stdout."""
    demo = typer.Typer()

    @demo.command()
    @handle_errors
    def slow(printed: bool = False, json_output: JsonOption = False) -> None:
        if printed:
            print_json({"result": 1})
        raise KeyboardInterrupt

    stopped = runner.invoke(demo, ["--json"])
    assert stopped.exit_code == 130 and stopped.stderr == "interrupted\n"
    assert json.loads(stopped.stdout) == {
        "status": "interrupted",
        "exit_code": 130,
        "error": "interrupted",
    }
    late = runner.invoke(demo, ["--printed", "--json"])
    assert late.exit_code == 130 and json.loads(late.stdout) == {"result": 1}
    plain = runner.invoke(demo, [])
    assert plain.exit_code == 130 and plain.stdout == ""


def test_an_interrupted_stage_of_a_json_command_prints_the_runs_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command that runs stages (byzllm reproduce) runs each without printing its summary;
    given --json and interrupted in a stage, it prints that stage's counts as one object."""
    import byzllm.runs

    async def stopped(*_: object, **__: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(byzllm.runs, "run_units", stopped)
    demo = typer.Typer()

    @demo.command()
    @handle_errors
    def stages(json_output: JsonOption = False) -> None:
        execute_units(tmp_path / "stage", [], answer, json_output=False)

    result = runner.invoke(demo, ["--json"])
    assert result.exit_code == 130, result.output
    document = json.loads(result.stdout)
    assert document["status"] == "interrupted" and document["run_dir"] == str(tmp_path / "stage")
    assert document["units"] == {"total": 0, "done": 0, "failed": 0, "pending": 0}
    assert document["error"].startswith("interrupted: 0 of 0 units done")


def test_default_run_dir() -> None:
    assert default_run_dir(Path("configs/sweep.yaml"), "consensus") == Path("runs/sweep")
    assert default_run_dir(None, "consensus") == Path("runs/consensus")


def test_print_json_and_emit_rows(capsys: pytest.CaptureFixture[str]) -> None:
    print_json({"path": Path("a"), "x": 1.5})
    assert json.loads(capsys.readouterr().out) == {"path": "a", "x": 1.5}
    emit_rows([{"protocol": "sac", "accuracy": 0.9}], json_output=True, simulated=True)
    assert json.loads(capsys.readouterr().out) == {
        "rows": [{"protocol": "sac", "accuracy": 0.9}],
        "simulated": True,
    }
    emit_rows(
        [{"protocol": "sac", "accuracy": 0.9}], json_output=False, title="acc", simulated=True
    )
    out = capsys.readouterr().out
    assert "acc (simulated)" in out and "0.900" in out and "simulated agents" in out
    emit_rows([{"protocol": "sac"}], json_output=False, markdown=True, title="acc")
    assert capsys.readouterr().out == "### acc\n\n| protocol |\n| --- |\n| sac |\n"


async def test_the_cli_works_when_called_from_async_code(tmp_path: Path, questions: Path) -> None:
    config = _config(tmp_path, f"questions: {questions}\n")
    result = runner.invoke(app, ["run", str(config), "-o", str(tmp_path / "run"), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["done"] == 6
