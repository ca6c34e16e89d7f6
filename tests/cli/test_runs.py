"""`byzllm runs list|show|export`."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd
import pytest
from typer.testing import CliRunner

from byzllm.cli import app
from byzllm.runs import ExperimentConfig, Record, make_unit, run_units

runner = CliRunner()


class Outcome(Record):
    kind: ClassVar[str] = "outcome"
    q: int
    correct: bool


class DemoConfig(ExperimentConfig):
    questions: int = 6


def outcome_work(payload: dict[str, Any]) -> Outcome:
    if payload["q"] == 4:
        raise ValueError("question 4 [unparseable] reply")
    return Outcome(q=payload["q"], correct=payload["q"] % 2 == 0)


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    target = tmp_path / "runs" / "demo"
    units = [make_unit({"q": q}, label=f"q{q}") for q in range(6)]
    asyncio.run(run_units(target, units, outcome_work, config=DemoConfig(), progress=False))
    return target


def test_runs_list(run_dir: Path) -> None:
    root = run_dir.parent
    result = runner.invoke(app, ["runs", "list", str(root), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    [entry] = data["runs"]
    assert entry["run_dir"] == str(run_dir)
    assert (entry["units"], entry["done"], entry["failed"], entry["pending"]) == (6, 5, 1, 0)
    assert entry["last_status"] == "finished"

    table = runner.invoke(app, ["runs", "list", str(root)])
    assert table.exit_code == 0
    assert "demo" in table.stdout and "finished" in table.stdout


def test_runs_list_empty_and_missing_root(tmp_path: Path) -> None:
    empty = runner.invoke(app, ["runs", "list", str(tmp_path)])
    assert empty.exit_code == 0 and "no runs under" in empty.stdout
    missing = runner.invoke(app, ["runs", "list", str(tmp_path / "nope")])
    assert missing.exit_code == 0 and "no runs under" in missing.stdout
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    not_a_folder = runner.invoke(app, ["runs", "list", str(a_file)])
    assert not_a_folder.exit_code == 2
    # The usage-error panel is 80 columns wide and folds a long path over its lines.
    unfolded = "".join(line.strip("│ ") for line in not_a_folder.stderr.splitlines())
    assert "file.txt" in unfolded


def test_runs_show(run_dir: Path) -> None:
    result = runner.invoke(app, ["runs", "show", str(run_dir), "--json"])
    assert result.exit_code == 0, result.output
    info = json.loads(result.stdout)
    assert info["counts"] == {"total": 6, "pending": 0, "done": 5, "failed": 1}
    assert info["config"] == {"questions": 6}
    assert info["config_class"].endswith("DemoConfig")
    assert info["records"] == {"outcome": 5}
    assert info["failures"] == [
        {
            "unit_id": make_unit({"q": 4}).id,
            "label": "q4",
            "attempts": 1,
            "error": "ValueError: question 4 [unparseable] reply",
        }
    ]
    assert [inv["status"] for inv in info["invocations"]] == ["finished"]

    text = runner.invoke(app, ["runs", "show", str(run_dir)])
    assert text.exit_code == 0
    assert "questions: 6" in text.stdout
    assert "[unparseable]" in text.stdout  # printed literally, not as rich markup


def test_runs_show_missing_run(tmp_path: Path) -> None:
    result = runner.invoke(app, ["runs", "show", str(tmp_path)])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and "no results store" in result.stderr


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_runs_export(run_dir: Path, tmp_path: Path, fmt: str) -> None:
    out = tmp_path / "exported"
    result = runner.invoke(
        app, ["runs", "export", str(run_dir), "--format", fmt, "--out", str(out), "--json"]
    )
    assert result.exit_code == 0, result.output
    files = json.loads(result.stdout)["files"]
    assert sorted(Path(f).name for f in files) == [f"outcome.{fmt}", f"units.{fmt}"]
    if fmt == "parquet":
        frame = pd.read_parquet(out / "outcome.parquet")
        assert list(frame["q"]) == [0, 1, 2, 3, 5]


def test_runs_export_defaults_and_errors(run_dir: Path) -> None:
    result = runner.invoke(app, ["runs", "export", str(run_dir), "--kind", "outcome"])
    assert result.exit_code == 0
    assert (run_dir / "export" / "outcome.csv").is_file()
    bad = runner.invoke(app, ["runs", "export", str(run_dir), "--format", "xml"])
    assert bad.exit_code == 2 and "unknown export format" in bad.stderr
    unknown = runner.invoke(app, ["runs", "export", str(run_dir), "--kind", "nope"])
    assert unknown.exit_code == 2 and "no records of kind nope" in unknown.stderr


@pytest.mark.parametrize("name", ["sweep.db", "sweep.sqlite", "sweep.sqlite3"])
def test_a_run_folder_named_like_a_store_file_is_a_folder(tmp_path: Path, name: str) -> None:
    """A run directory whose name ends like a store file's was written as that file, which
    `runs show` (given a folder) refused and `runs list` called unreadable."""
    target = tmp_path / "runs" / name
    units = [make_unit({"q": q}, label=f"q{q}") for q in range(6)]
    asyncio.run(run_units(target, units, outcome_work, config=DemoConfig(), progress=False))
    assert (target / "results.sqlite").is_file()
    rerun = asyncio.run(run_units(target, units, outcome_work, config=DemoConfig(), progress=False))
    assert rerun.skipped == 5  # resumed: the failed unit is not rerun

    shown = runner.invoke(app, ["runs", "show", str(target), "--json"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["counts"] == {"total": 6, "pending": 0, "done": 5, "failed": 1}
    listed = runner.invoke(app, ["runs", "list", str(tmp_path / "runs"), "--json"])
    [entry] = json.loads(listed.stdout)["runs"]
    assert entry["readable"] and entry["done"] == 5
    exported = runner.invoke(app, ["runs", "export", str(target), "-f", "jsonl"])
    assert exported.exit_code == 0, exported.output
    assert (target / "export" / "outcome.jsonl").read_text().count("\n") == 5


def test_a_refused_export_creates_no_folder(run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "tables" / "sub"
    refused = runner.invoke(app, ["runs", "export", str(run_dir), "-k", "nope", "--out", str(out)])
    assert refused.exit_code == 2 and "no records of kind nope" in refused.stderr
    assert not (tmp_path / "tables").exists()
    assert not (run_dir / "export").exists()
    runner.invoke(app, ["runs", "export", str(run_dir), "-k", "nope"])
    assert not (run_dir / "export").exists()


def test_a_kind_asked_for_twice_is_exported_once(run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "tables"
    args = ["runs", "export", str(run_dir), "-k", "outcome", "-k", "outcome", "--out", str(out)]
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["files"] == [str(out / "units.csv"), str(out / "outcome.csv")]


class NamedConfig(ExperimentConfig):
    graph: str = "Erdős–Rényi"


def test_runs_show_prints_the_config_as_written(tmp_path: Path) -> None:
    """Non-ASCII config values were printed as YAML escapes ("Erd\\u0151s\\u2013R\\xE9nyi")."""
    target = tmp_path / "run"
    units = [make_unit({"q": 0})]
    asyncio.run(run_units(target, units, outcome_work, config=NamedConfig(), progress=False))
    text = runner.invoke(app, ["runs", "show", str(target)])
    assert text.exit_code == 0, text.output
    assert "graph: Erdős–Rényi" in text.stdout


def test_runs_list_says_how_deep_it_looks(run_dir: Path, tmp_path: Path) -> None:
    """A run four folders below ROOT is not searched: the list said "no runs under ROOT"."""
    deep = tmp_path / "deep"
    (deep / "a" / "b" / "c").mkdir(parents=True)
    run_dir.rename(deep / "a" / "b" / "c" / "d")
    hidden = runner.invoke(app, ["runs", "list", str(deep)])
    assert hidden.exit_code == 0
    assert f"no runs under {deep} up to 3 folders deep" in hidden.stdout
    shown = runner.invoke(app, ["runs", "list", str(deep / "a"), "--json"])
    assert [row["done"] for row in json.loads(shown.stdout)["runs"]] == [5]
    help_text = runner.invoke(app, ["runs", "list", "--help"]).stdout
    assert "up to three folders below it" in " ".join(help_text.replace("│", " ").split())
