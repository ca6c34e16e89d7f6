"""--json and a command that does not finish: interrupted (exit 130) or stopped by an error
(exit 2), it still prints one JSON document on stdout (the run's counts when it was running
units, else one object saying so), never a second one, and nothing without --json."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner, Result

import byzllm.runs
import byzllm.view
from byzllm.cli import app
from byzllm.llm._serve import free_port

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


def test_a_command_interrupted_in_process_leaves_the_signal_handlers_as_they_were(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the console script's process ends quietly on a signal after an interrupted command
    (byzllm.cli.main): a caller of the typer app keeps its own Ctrl-C and SIGTERM."""

    async def stopped(*args: object, **kwargs: object) -> None:
        _stop()

    monkeypatch.setattr(byzllm.runs, "run_units", stopped)
    handlers = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}
    result = RUNNER.invoke(app, ["consensus", "run", "-o", str(tmp_path), "--set", "dataset.n=2"])
    assert result.exit_code == 130, result.output
    assert {number: signal.getsignal(number) for number in handlers} == handlers


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
    interrupted after a ``runs show --json`` that failed, in the same process, prints nothing
    on stdout."""
    first = RUNNER.invoke(app, ["runs", "show", str(tmp_path / "absent"), "--json"])
    assert first.exit_code == 2 and _error_document(first)["status"] == "error"
    monkeypatch.setattr(byzllm.view, "write_view", _stop)
    second = RUNNER.invoke(app, ["view", str(tmp_path)])
    assert second.exit_code == 130, second.output
    assert second.stdout == ""


def _error_document(result: Result) -> dict[str, object]:
    """The one JSON object a failed --json command printed, checked against its one stderr
    line: the same message without the ``error: `` prefix, the same exit code."""
    document = json.loads(result.stdout)
    assert isinstance(document, dict), result.stdout
    [line] = result.stderr.splitlines()
    assert line.startswith("error: ")
    assert document["error"] == line.removeprefix("error: ")
    assert document["status"] == "error" and document["exit_code"] == result.exit_code
    return document


def test_a_missing_run_folder_with_json_prints_one_error_object(tmp_path: Path) -> None:
    absent = tmp_path / "absent"
    result = RUNNER.invoke(app, ["runs", "show", str(absent), "--json"])
    assert result.exit_code == 2
    assert set(_error_document(result)) == {"status", "exit_code", "error"}
    assert str(absent) in result.stderr
    plain = RUNNER.invoke(app, ["runs", "show", str(absent)])
    assert plain.exit_code == 2 and plain.stdout == ""
    assert plain.stderr == result.stderr  # the stderr line is the same with or without --json


def test_a_refused_config_with_json_prints_one_error_object_naming_the_folder(
    tmp_path: Path,
) -> None:
    small = ["consensus", "run", "-o", str(tmp_path), "--set", "dataset.n=2"]
    small += ["--set", "topologies=[complete]", "--set", "protocols=[sac]"]
    assert RUNNER.invoke(app, small).exit_code == 0
    result = RUNNER.invoke(app, [*small, "--set", "seeds=[0, 1]", "--json"])
    assert result.exit_code == 2, result.output
    document = _error_document(result)
    assert document["run_dir"] == str(tmp_path)
    assert "differs in seeds" in str(document["error"])


def _closed_url() -> str:
    """A local URL nothing listens on (a port just bound and released)."""
    return f"http://127.0.0.1:{free_port()}/v1"


def test_an_unreachable_server_with_json_prints_one_object_with_the_error(
    tmp_path: Path,
) -> None:
    """A model-backed run that stops before its first unit prints its summary with the error
    and exit code (the command's own JSON), and nothing after it."""
    args = ["consensus", "run", "-o", str(tmp_path), "--set", "dataset.n=1"]
    args += ["--set", "topologies=[complete]", "--set", "protocols=[sac]"]
    args += ["--model", "openai/absent", "--base-url", _closed_url(), "--json"]
    result = RUNNER.invoke(app, args)
    assert result.exit_code == 2, result.output
    document = json.loads(result.stdout)
    [line] = result.stderr.strip().splitlines()[-1:]
    assert document["error"] == line.removeprefix("error: ") and "nothing answers" in line
    assert document["exit_code"] == 2 and document["status"] == "aborted"
    assert document["run_dir"] == str(tmp_path) and document["not_run"] == 1


#: --json commands that end with a report of their own rather than an error (a missing
#: ``runs list`` root lists no runs; ``models probe`` and ``sandbox check`` print what they
#: found, whatever it is; ``models list`` reads nothing).
_NO_ERROR = {("runs", "list"), ("models", "probe"), ("sandbox", "check"), ("models", "list")}
#: A failing invocation of each --json command that takes no path or name argument.
_FAILING = {
    ("consensus", "matrix"): ["--attacks", "bogus"],
    ("demo",): ["--model", "bogus"],
    ("govsim", "generate"): ["--split", "bogus"],
    ("govsim", "play"): ["--model", "bogus"],
    ("sim", "show"): ["--domain", "bogus"],
    ("whodunit", "play"): ["--model", "bogus"],
}
#: The --json commands whose first argument names a file, folder or name: a missing one fails.
_WITH_ARGUMENT = [p for p in _json_options() if p not in _FAILING and p not in _NO_ERROR]


@pytest.mark.parametrize("path", [*_WITH_ARGUMENT, *_FAILING], ids=" ".join)
def test_every_json_command_that_fails_prints_one_error_object(
    tmp_path: Path, path: tuple[str, ...]
) -> None:
    args = _FAILING.get(path, [str(tmp_path / "absent")])
    if path in {("consensus", "matrix"), ("demo",)}:
        args = [*args, "-o", str(tmp_path / "run")]  # nothing written under the working folder
    result = RUNNER.invoke(app, [*path, *args, "--json"])
    assert result.exit_code == 2, result.output
    _error_document(result)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    command=st.sampled_from(_WITH_ARGUMENT),
    name=st.text(
        st.characters(blacklist_categories=["Cs", "Cc"], blacklist_characters="/\\"),
        min_size=1,
        max_size=40,
    ),
)
def test_any_failing_json_command_prints_one_json_object(
    tmp_path: Path, command: tuple[str, ...], name: str
) -> None:
    """Whatever the missing file, folder or name is called, a failing --json command's
    stdout parses as one JSON object carrying its stderr line."""
    result = RUNNER.invoke(app, [*command, str(tmp_path / "absent" / name), "--json"])
    assert result.exit_code == 2, result.output
    _error_document(result)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["consensus", "matrix", "--json", "--bogus"], "No such option: --bogus"),
        (["runs", "list", "--nope", "--json"], "No such option: --nope"),
        (["consensus", "matrix", "--json", "-n", "abc"], "Invalid value for '--questions'"),
        (["graph", "nosuch", "--json"], "No such command"),
    ],
)
def test_a_usage_error_with_json_prints_one_error_document(args: list[str], said: str) -> None:
    """An unknown option or a bad value stops the command before its --json is read; stdout
    still holds the one error document, and the usage text stays on stderr."""
    result = RUNNER.invoke(app, args)
    assert result.exit_code == 2, result.output
    document = json.loads(result.stdout)
    assert document["status"] == "error" and document["exit_code"] == 2
    assert said in document["error"], document
    assert said.split(":")[0] in result.stderr


def test_a_usage_error_without_json_prints_nothing_on_stdout() -> None:
    for args in (["consensus", "matrix", "--bogus"], ["graph", "check", "--bogus", "--", "--json"]):
        result = RUNNER.invoke(app, args)
        assert result.exit_code == 2, result.output
        assert result.stdout == "", args
