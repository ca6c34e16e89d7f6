"""CodeGen end to end on simulated roles: collect → train → evaluate, Table 1 with intervals,
the CLI, and resuming (the rogue-agents paper, §4.1, §5 Table 1)."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from byzllm.cli import app
from byzllm.errors import InputError
from byzllm.experiments.codegen import (
    CodeGenConfig,
    collect_units,
    paired_gain,
    run_in_memory,
    run_units,
    short_of_asked,
    table1_rows,
    train_monitors,
)

RUNNER = CliRunner()


def _problems(path: Path, n: int = 30) -> Path:
    rows = [
        {
            "task_id": f"Tiny/{k}",
            "prompt": f'def add_{k}(x: int) -> int:\n    """Return x plus {k}.\n'
            f"    >>> add_{k}(2)\n    {2 + k}\n"
            '    """\n',
            "canonical_solution": f"    return x + {k}\n",
            "test": f"def check(candidate):\n    assert candidate(1) == {1 + k}\n",
            "entry_point": f"add_{k}",
        }
        for k in range(n)
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def _config(tmp_path: Path, **changes: object) -> CodeGenConfig:
    # A noisy judge so that collect has failures to learn from on so few problems.
    base = {
        "problems": str(_problems(tmp_path / "he.jsonl")),
        "execution": "simulated",
        "sim": {"judge_error_rate": 0.3, "coder_skill": 1.0},
        "repeats": 2,
        "collect_repeats": 2,
    }
    return CodeGenConfig.model_validate({**base, **changes})


def test_training_without_validation_turns_names_codegen_collect(tmp_path: Path) -> None:
    rows = asyncio.run(run_in_memory(collect_units(_config(tmp_path))))
    train_only = [r for r in rows if r["kind"] == "codegen_turn" and r["split"] == "train"]
    with pytest.raises(InputError, match="run `byzllm codegen collect` first"):
        train_monitors(train_only)


def test_pipeline_reports_three_conditions_with_intervals(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    rows = asyncio.run(run_in_memory(collect_units(cfg)))
    turns = [r for r in rows if r["kind"] == "codegen_turn"]
    assert {r["role"] for r in turns} == {"judge", "tester"}
    assert {r["split"] for r in turns} == {"train", "validation"}
    seen = {r["game_id"] for r in turns}
    monitors = train_monitors(turns)
    assert set(monitors.roles) == {"judge", "tester"} and monitors.meta["simulated"]
    results = asyncio.run(run_in_memory(run_units(cfg, monitors)))
    problems = [r for r in results if r["kind"] == "codegen_problem"]
    assert {r["split"] for r in problems} == {"test"}
    assert not seen & {r["problem_id"] for r in problems}  # never tuned on a test problem
    table = {r["condition"]: r for r in table1_rows(problems)}
    assert list(table) == ["zero-shot", "none", "monitor-1"]
    for row in table.values():
        assert row["simulated"] and row["simulated_execution"]
        assert row["problems"] == 9 and row["runs"] == 18  # the 30% of 30 held out for test
        assert row["ci_low"] <= row["pass_at_1"] <= row["ci_high"]
        assert not math.isnan(row["ci_low"])
    assert table["zero-shot"]["interventions"] == 0 and table["none"]["interventions"] == 0
    # The same problems and draws under both debate conditions: the gain is paired.
    gain = paired_gain(problems)[0]
    assert gain["problems"] == 9
    assert gain["ci_low"] <= gain["gain"] <= gain["ci_high"]
    # Zero-shot runs are one coder, one round; debates ran their rounds.
    zero = [r for r in problems if r["condition"] == "zero-shot"]
    assert all(r["rounds_played"] == 1 and len(r["transcript"]) == 1 for r in zero)


def test_monitors_are_never_tested_on_their_training_problems(tmp_path: Path) -> None:
    """The test split comes from the run's config: another seed (or split fractions) than
    the collect run's would put the monitors' own problems among the test problems."""
    cfg = _config(tmp_path, collect_repeats=1)
    turns = [
        r for r in asyncio.run(run_in_memory(collect_units(cfg))) if r["kind"] == "codegen_turn"
    ]
    monitors = train_monitors(turns)
    assert monitors.meta["trained_problems"] == sorted({r["game_id"] for r in turns})
    assert run_units(cfg, monitors)  # the collect run's own split: disjoint
    with pytest.raises(InputError, match="trained or validated on: run with the seed"):
        run_units(cfg.model_copy(update={"seed": 1}), monitors)


def test_monitor_conditions_need_monitors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="need monitors"):
        run_units(_config(tmp_path))


def test_cli_collect_train_run_report(tmp_path: Path) -> None:
    problems = _problems(tmp_path / "he.jsonl")
    sets = [
        "--set",
        f"problems={problems}",
        "--set",
        "execution=simulated",
        "--set",
        "sim.judge_error_rate=0.3",
        "--set",
        "sim.coder_skill=0.0",
        "--set",
        "collect_repeats=2",
    ]
    collect = RUNNER.invoke(app, ["codegen", "collect", *sets, "-o", str(tmp_path / "c")])
    assert collect.exit_code == 0, collect.output
    train = RUNNER.invoke(app, ["codegen", "train", str(tmp_path / "c")])
    assert train.exit_code == 0, train.output
    # Every report of a monitor's gain shows the turn-count-only monitor's beside it.
    assert "turn count only" in train.output and "best single feature" in train.output
    trained = RUNNER.invoke(app, ["codegen", "train", str(tmp_path / "c"), "--json"])
    controls = [r for r in json.loads(trained.stdout)["ablations"] if r["role"] == "judge"]
    assert [r["monitor"] for r in controls] == [
        "selected",
        "2nd best",
        "worst",
        "turn count only",
        "best single feature",
    ]
    monitors = tmp_path / "c" / "monitors.json"
    run_args = ["codegen", "run", *sets, "-m", str(monitors), "-o", str(tmp_path / "r")]
    assert RUNNER.invoke(app, run_args).exit_code == 0
    again = RUNNER.invoke(app, [*run_args, "--json"])  # resumes: nothing left to run
    assert again.exit_code == 0 and '"skipped": 27' in again.output.replace(" ", " ")
    report = RUNNER.invoke(app, ["codegen", "report", str(tmp_path / "r"), "--json", "--problems"])
    assert report.exit_code == 0, report.output
    data = json.loads(report.stdout)
    assert data["simulated"] and len(data["rows"]) == 3
    # Every report's parse health (simulated roles parse no model output).
    assert data["parse_health"]["status"] == "n/a (simulated)"
    first = data["problems"][0]["problem"]
    csv = RUNNER.invoke(
        app, ["codegen", "report", str(tmp_path / "r"), "--csv", str(tmp_path / "csv")]
    )
    assert csv.exit_code == 0
    assert (tmp_path / "csv" / "table1.csv").read_text().startswith("results")
    shown = RUNNER.invoke(app, ["codegen", "report", str(tmp_path / "r"), "--transcript", first])
    assert shown.exit_code == 0 and "round 1" in shown.output


def test_cli_without_problems_says_how(tmp_path: Path) -> None:
    result = RUNNER.invoke(app, ["codegen", "run", "-o", str(tmp_path / "r")])
    assert result.exit_code == 2 and "problems" in result.output


def test_short_of_asked_names_the_rows_below_n_test() -> None:
    rows = [{"problems": 12}, {"problems": 40}, {"problems": 9}]
    assert short_of_asked(rows, 40) == (
        "warning: n_test=40, but the table's rows hold 9 to 12 test problems "
        "(a test split shorter than n_test, or a run not finished)"
    )
    assert "hold 12 test problems" in str(short_of_asked(rows[:2], 40))  # one count
    assert short_of_asked(rows, 9) is None  # none below what was asked
    assert short_of_asked(rows, None) is None  # n_test unset: the whole split was asked


def test_pass_at_1_reads_outcomes_read_back_from_csv_strictly() -> None:
    # p1 passed one of its two runs, p2 none: Pass@1 (repeats averaged per problem, then
    # over problems) = (1/2 + 0) / 2 = 0.25, whether "passed" is a bool or the string a CSV
    # export gives back ("False", which bool() counts as true).
    from byzllm.experiments.codegen.report import problem_rows

    def row(pid: str, repeat: int, passed: object) -> dict[str, object]:
        return {
            "source": "humaneval",
            "condition": "none",
            "problem_id": pid,
            "repeat": repeat,
            "split": "test",
            "passed": passed,
            "resets": 0,
            "resamples": 0,
            "simulated": True,
            "simulated_execution": True,
            "hidden_status": "failed",
            "hidden_detail": "AssertionError",
        }

    outcomes = [("p1", 0, True), ("p1", 1, False), ("p2", 0, False), ("p2", 1, False)]
    as_text = [row(pid, rep, str(ok)) for pid, rep, ok in outcomes]
    assert table1_rows(as_text)[0]["pass_at_1"] == pytest.approx(0.25)
    assert [(r["problem"], r["passed"]) for r in problem_rows(as_text)] == [("p1", 1), ("p2", 0)]
    with pytest.raises(InputError, match="game 'p2' is malformed: passed must be"):
        table1_rows([*as_text[:2], row("p2", 0, "maybe")])


def test_transcript_numbers_the_final_solution_as_the_judge_and_results_do(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The record keeps the 0-based seat (1: the second coder); the transcript numbers
    # solutions from 1 ("Solution 2" in the judge's verdicts, "solution 2" in the results), so
    # the final answer is "solution 2", not "solution 1" (the first coder's number).
    from byzllm.cli.codegen import _print_transcript

    solutions = [{"coder": name, "code": f"# {name}"} for name in ("A", "B")]
    record = {
        "problem_id": "P/1",
        "repeat": 0,
        "condition": "none",
        "simulated": True,
        "passed": True,
        "hidden_status": "passed",
        "hidden_detail": "",
        "final_seat": 1,
        "final_rule": "tests",
        "transcript": [
            {"round": 1, "solutions": solutions},
            {
                "round": 2,
                "feedback": {"text": "Solution 1: WRONG\nSolution 2: CORRECT\nBest: 2"},
                "results": [{"passed": 0, "failed": 1}, {"passed": 1, "failed": 0}],
                "solutions": solutions,
            },
        ],
        "turns": [],
    }
    _print_transcript([record], "P/1", json_output=False)
    shown = capsys.readouterr().out
    assert "solution 2: 1/1 tests passed" in shown
    assert "final: solution 2 by tests" in shown
