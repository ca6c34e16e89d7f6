"""A report on a run whose records were edited by hand (a ``null`` or a text where a number
belongs) is one error line naming the file, the unit and the field, with exit code 2: the
records are checked as they are loaded, before any sum over them."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from byzllm.cli import app

RUNNER = CliRunner()

#: The smallest run of each domain (simulated agents).
RUNS = {
    "consensus": ["consensus", "run", "--set", "dataset.n=2", "--set", "topologies=[complete]"],
    "govsim": ["govsim", "run", "--set", "n_games=1"],
    "whodunit": ["whodunit", "run", "--set", "n_games=1"],
}


@pytest.fixture(scope="module")
def runs(
    tmp_path_factory: pytest.TempPathFactory, humaneval_file: Callable[..., Path]
) -> dict[str, Path]:
    """One finished run per domain, copied by each test (never changed)."""
    folder = tmp_path_factory.mktemp("runs")
    problems = humaneval_file(folder / "he.jsonl", 4, prefix="Toy")
    commands = {
        **RUNS,
        "codegen": ["codegen", "run", "--set", f"problems={problems}", "--set", "n_test=1"],
    }
    made = {}
    for domain, command in commands.items():
        result = RUNNER.invoke(app, [*command, "-o", str(folder / domain)])
        assert result.exit_code == 0, result.output
        made[domain] = folder / domain
    return made


def _one_error_line(result: Result) -> str:
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    return lines[0]


@pytest.mark.parametrize(
    ("domain", "kind", "field", "value", "command"),
    [
        # The consensus report's round-call totals, and its configuration columns.
        ("consensus", "consensus_question", "trace.rounds.0.0.calls", None, "consensus report"),
        ("consensus", "consensus_question", "trace.rounds.0.0.input_tokens", "abc",
         "consensus report"),
        ("consensus", "consensus_question", "F", "abc", "consensus report"),
        ("consensus", "consensus_question", "seed", None, "consensus report"),
        # Request health, in every report that shows it.
        ("consensus", "consensus_question", "requests.requests", "abc", "consensus report"),
        ("whodunit", "whodunit_game", "requests.requests", "abc", "whodunit report"),
        ("govsim", "govsim_game", "requests.retries", "abc", "govsim report"),
        ("consensus", "consensus_question", "requests.requests", "abc", "runs show"),
        ("govsim", "govsim_game", "requests.errors", {"timeout": None}, "runs show"),
        # The GovSim and WhoDunit reports' metrics.
        ("govsim", "govsim_game", "survival_rate", "abc", "govsim report"),
        ("govsim", "govsim_game", "efficiency", "abc", "govsim report"),
        ("govsim", "govsim_game", "resets", None, "govsim report"),
        # Inside a game's months, meetings and decisions (the plots, the transcripts).
        ("govsim", "govsim_game", "harvests.0.stock_after", "abc", "govsim report"),
        ("govsim", "govsim_game", "decisions.0.month", "abc", "govsim report"),
        ("govsim", "govsim_game", "meetings.0.0.amounts", ["abc"], "govsim report"),
        ("whodunit", "whodunit_game", "hallucinations", "abc", "whodunit report"),
        ("whodunit", "whodunit_game", "parse", "abc", "whodunit report"),
    ],
)  # fmt: skip
def test_a_report_on_an_edited_record_is_one_error_line(
    runs: dict[str, Path],
    tmp_path: Path,
    edit_record: Callable[..., str],
    domain: str,
    kind: str,
    field: str,
    value: Any,
    command: str,
) -> None:
    run_dir = tmp_path / domain
    shutil.copytree(runs[domain], run_dir)
    unit = edit_record(run_dir, kind, field, value)
    line = _one_error_line(RUNNER.invoke(app, [*command.split(), str(run_dir)]))
    assert f"{kind} record 1 of unit" in line and f"({unit})" in line
    assert str(run_dir / "results.sqlite") in line
    assert f": {field.split('.')[0]}" in line


def test_reports_on_the_unedited_runs_still_succeed(runs: dict[str, Path], tmp_path: Path) -> None:
    for domain, run_dir in runs.items():
        out = ["--out", str(tmp_path / "report")] if domain == "consensus" else []
        for command in ([domain, "report", str(run_dir), *out], ["runs", "show", str(run_dir)]):
            result = RUNNER.invoke(app, command)
            assert result.exit_code == 0, result.output


@pytest.mark.parametrize("command", ["sim fit", "sim compare"])
@pytest.mark.parametrize(
    ("domain", "kind", "field", "value"),
    [
        # GovSim: passed the fit silently (profile written), the Efficiency compared as text.
        ("govsim", "govsim_game", "efficiency", "abc"),
        ("govsim", "govsim_game", "r0", "abc"),
        # Inside a game: a month's stock, a proposal's amount, a decision's month.
        ("govsim", "govsim_game", "harvests.0.stock_before", "abc"),
        ("govsim", "govsim_game", "meetings.0.0.amounts", ["abc"]),
        ("govsim", "govsim_game", "decisions.0.month", "abc"),
        # WhoDunit: a turn number and a game's length read with int(), a move's validity.
        ("whodunit", "whodunit_turn", "turn", "abc"),
        ("whodunit", "whodunit_turn", "valid", "abc"),
        ("whodunit", "whodunit_game", "total_turns", "abc"),
        # CodeGen: Pass@1 and the interventions of a debate.
        ("codegen", "codegen_problem", "passed", "abc"),
        ("codegen", "codegen_problem", "resets", "abc"),
        # Consensus: read unchecked, checked when the fit fails on the edited record.
        ("consensus", "consensus_question", "trace.rounds.0.0.calls", None),
    ],
)  # fmt: skip
def test_a_fit_on_an_edited_record_is_one_error_line(
    runs: dict[str, Path],
    tmp_path: Path,
    edit_record: Callable[..., str],
    domain: str,
    kind: str,
    field: str,
    value: Any,
    command: str,
) -> None:
    run_dir = tmp_path / domain
    shutil.copytree(runs[domain], run_dir)
    unit = edit_record(run_dir, kind, field, value)
    profile = tmp_path / "profile.yaml"
    args = [*command.split(), str(run_dir)]
    result = RUNNER.invoke(app, [*args, "-o", str(profile)] if command == "sim fit" else args)
    line = _one_error_line(result)
    assert f"{kind} record 1 of unit" in line and f"({unit})" in line
    assert str(run_dir / "results.sqlite") in line
    assert f": {field}" in line  # the field, or an item in it (amounts.0)
    assert not profile.exists()


def test_fits_on_the_unedited_runs_still_succeed(runs: dict[str, Path], tmp_path: Path) -> None:
    for domain, run_dir in runs.items():
        profile = tmp_path / f"{domain}.yaml"
        result = RUNNER.invoke(app, ["sim", "fit", str(run_dir), "-o", str(profile)])
        assert result.exit_code == 0, result.output
        result = RUNNER.invoke(app, ["sim", "compare", str(run_dir), "--profile", str(profile)])
        assert result.exit_code == 0, result.output


@pytest.mark.parametrize(
    ("domain", "kind", "field", "value"),
    [
        ("consensus", "consensus_question", "F", "<b>3</b>"),
        ("consensus", "consensus_question", "trace.rounds.0.0.calls", "abc"),
        ("govsim", "govsim_game", "efficiency", "abc"),
        ("whodunit", "whodunit_game", "total_turns", "abc"),
    ],
)
def test_the_page_of_an_edited_record_is_one_error_line(
    runs: dict[str, Path],
    tmp_path: Path,
    edit_record: Callable[..., str],
    domain: str,
    kind: str,
    field: str,
    value: Any,
) -> None:
    """The viewer reads every record unchecked; where one makes the page fail (text in a
    number it sums), the records are checked and the error names it, as a report's does,
    instead of a traceback from the page's tables."""
    run_dir = tmp_path / domain
    shutil.copytree(runs[domain], run_dir)
    unit = edit_record(run_dir, kind, field, value)
    result = RUNNER.invoke(app, ["view", str(run_dir), "-o", str(tmp_path / "page.html")])
    line = _one_error_line(result)
    assert f"{kind} record 1 of unit" in line and f"({unit})" in line
    assert f": {field.split('.')[0]}" in line


@pytest.fixture(scope="module")
def reproduced(
    tmp_path_factory: pytest.TempPathFactory, humaneval_file: Callable[..., Path]
) -> dict[str, tuple[Path, list[str]]]:
    """One finished `byzllm reproduce` run per kind of entry, at the smallest size that trains
    a monitor, with the arguments that resume it (copied by each test, never changed)."""
    folder = tmp_path_factory.mktemp("reproduced")
    problems = humaneval_file(folder / "he.jsonl", 4, prefix="Toy")
    commands = {
        "sac-table1": ["-n", "1"],
        "ra-fig4": ["-n", "3"],  # (on 12-attribute games, 2 training games were both won)
        "ra-table1": ["-n", "2", "--problems", str(problems)],
    }
    made = {}
    for name, args in commands.items():
        result = RUNNER.invoke(app, ["reproduce", name, *args, "-o", str(folder / name), "--json"])
        assert result.exit_code == 0, result.output
        made[name] = (folder / name, args)
    return made


@pytest.mark.parametrize(
    ("name", "stage", "kind", "field", "value"),
    [
        # The folder that is resumed (and that a table reusing another's units copies into).
        ("sac-table1", "", "consensus_question", "trace.rounds.0.0.calls", None),
        ("sac-table1", "", "consensus_question", "F", "abc"),
        ("sac-table1", "", "consensus_question", "requests.requests", "abc"),
        # A rogue-agents entry's collected turns (the monitors' training data) and its games.
        ("ra-fig4", "collect", "monitor_turn", "turn", "abc"),
        ("ra-fig4", "collect", "monitor_turn", "entropy", "abc"),
        ("ra-fig4", "evaluate", "monitor_game", "total_turns", "abc"),
        ("ra-fig4", "evaluate", "monitor_game", "success", "abc"),
        ("ra-table1", "collect", "codegen_turn", "turn", "abc"),
        ("ra-table1", "evaluate", "codegen_problem", "passed", "abc"),
    ],
)  # fmt: skip
def test_reproduce_over_an_edited_record_is_one_error_line(
    reproduced: dict[str, tuple[Path, list[str]]],
    tmp_path: Path,
    edit_record: Callable[..., str],
    name: str,
    stage: str,
    kind: str,
    field: str,
    value: Any,
) -> None:
    """`byzllm reproduce` resumes its folders and reads their records back: an edited one ended
    the command in a traceback (or passed into the table) where a report names it."""
    source, args = reproduced[name]
    run_dir = tmp_path / name
    shutil.copytree(source, run_dir)
    unit = edit_record(run_dir / stage, kind, field, value)
    result = RUNNER.invoke(app, ["reproduce", name, *args, "-o", str(run_dir), "--json"])
    # Progress lines come first (on stderr), then the one error line, and nothing else.
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    errors = [line for line in result.output.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "Traceback" not in result.output, result.output
    (line,) = errors
    assert f"{kind} record 1 of unit" in line and f"({unit})" in line
    assert str(run_dir / stage / "results.sqlite") in line
    assert f": {field.split('.')[0]}" in line


def test_reproduce_resumes_an_unedited_run(
    reproduced: dict[str, tuple[Path, list[str]]], tmp_path: Path
) -> None:
    for name, (source, args) in reproduced.items():
        run_dir = tmp_path / name
        shutil.copytree(source, run_dir)
        result = RUNNER.invoke(app, ["reproduce", name, *args, "-o", str(run_dir), "--json"])
        assert result.exit_code == 0, result.output
