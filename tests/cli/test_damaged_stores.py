"""Contained damage (issue 14, acceptance 3): corrupt, truncated, empty and foreign stores.

One damaged store never hides the healthy runs beside it; every command that opens a store
answers a damaged one with one line and exit 2 (no traceback) and never writes to it; and
`byzllm runs repair` salvages the readable units so that rerunning the same command
completes the run with the report an undamaged run gives.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from byzllm.cli import app

RUNNER = CliRunner()
STORE = "results.sqlite"
#: A small consensus sweep of simulated agents: 32 units (2 protocols x 16 questions), a
#: store of 40 pages (its records are batched and compressed: a unit's fit in a page).
SWEEP = ["--set", "dataset.n=16", "--set", "topologies=[complete]"]
UNITS = 32
PAGE = 4096


def _run(run_dir: Path) -> Result:
    return RUNNER.invoke(app, ["consensus", "run", *SWEEP, "-o", str(run_dir)])


@pytest.fixture(scope="module")
def healthy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One finished run, copied by each test (it is never changed)."""
    run_dir = tmp_path_factory.mktemp("healthy") / "run"
    result = _run(run_dir)
    assert result.exit_code == 0, result.output
    return run_dir


def _copy(healthy: Path, target: Path) -> Path:
    shutil.copytree(healthy, target)
    return target


def _damage_pages(store: Path, first: int, count: int) -> None:
    """Overwrite whole pages in the middle of the file (as a disk error would)."""
    assert store.stat().st_size > (first + count) * PAGE
    with store.open("r+b") as handle:
        handle.seek(first * PAGE)
        handle.write(bytes(range(256)) * (count * PAGE // 256))


def _fingerprint(path: Path) -> tuple[str, int, int]:
    stat = path.stat()
    return hashlib.sha256(path.read_bytes()).hexdigest(), stat.st_size, stat.st_mtime_ns


def _one_line_exit_2(result: Result, *needles: str) -> str:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def folder(healthy: Path, tmp_path: Path) -> Path:
    """runs/: two healthy runs and one whose pages are damaged in the middle of the file."""
    root = tmp_path / "runs"
    root.mkdir()
    _copy(healthy, root / "alpha")
    _copy(healthy, root / "gamma")
    corrupt = _copy(healthy, root / "beta")
    _damage_pages(corrupt / STORE, 20, 6)
    return root


def test_runs_list_shows_every_run_and_marks_the_unreadable_one(folder: Path) -> None:
    result = RUNNER.invoke(app, ["runs", "list", str(folder), "--json"])
    assert result.exit_code == 0, result.output
    runs = {Path(row["run_dir"]).name: row for row in json.loads(result.stdout)["runs"]}
    assert set(runs) == {"alpha", "beta", "gamma"}
    assert runs["alpha"]["readable"] and runs["gamma"]["readable"]
    assert (runs["alpha"]["done"], runs["gamma"]["done"]) == (UNITS, UNITS)
    beta = runs["beta"]
    assert beta["readable"] is False and beta["last_status"] == "unreadable"
    assert "damaged" in beta["error"] and "byzllm runs repair" in beta["error"]

    table = RUNNER.invoke(app, ["runs", "list", str(folder)])
    assert table.exit_code == 0, table.output
    for name in ("alpha", "beta", "gamma"):
        assert name in table.stdout
    assert "unreadable" in table.stdout
    [reason] = table.stderr.strip().splitlines()
    assert reason.startswith("unreadable:") and "beta" in reason


@pytest.mark.parametrize(
    "command",
    [
        ["runs", "show"],
        ["runs", "show", "--json"],
        ["runs", "export"],
        ["consensus", "report"],
        ["whodunit", "report"],
        ["monitor", "report"],
        ["monitor", "train"],
    ],
    ids=lambda command: " ".join(command),
)
def test_reading_a_damaged_store_is_one_line_exit_2_and_writes_nothing(
    folder: Path, command: list[str]
) -> None:
    store = folder / "beta" / STORE
    before = _fingerprint(store)
    result = RUNNER.invoke(app, [*command[:2], str(store.parent), *command[2:]])
    _one_line_exit_2(result, "damaged", "byzllm runs repair")
    assert _fingerprint(store) == before
    assert not (store.parent / "export").exists()


def test_a_resume_on_a_damaged_store_is_one_line_exit_2(folder: Path) -> None:
    store = folder / "beta" / STORE
    before = _fingerprint(store)
    _one_line_exit_2(_run(store.parent), "damaged", "byzllm runs repair")
    assert _fingerprint(store) == before


def test_repair_recovers_the_readable_units_and_the_resume_completes(
    folder: Path, healthy: Path
) -> None:
    run_dir = folder / "beta"
    damaged_bytes = (run_dir / STORE).read_bytes()

    result = RUNNER.invoke(app, ["runs", "repair", str(run_dir), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["repaired"] is True and report["problems"]
    # Most units survive; the ones that lost their row or a record run again.
    assert report["units_to_run"] >= 1
    assert report["units"]["done"] + report["units_to_run"] == UNITS
    assert report["units"]["done"] >= 6
    assert report["records_lost"] >= 1
    # The damaged store is kept beside the fresh one, byte for byte.
    kept = Path(report["damaged_copy"])
    assert kept.parent == run_dir and kept.name.startswith("results.damaged-")
    assert kept.read_bytes() == damaged_bytes
    with sqlite3.connect(run_dir / STORE) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)

    show = RUNNER.invoke(app, ["runs", "show", str(run_dir), "--json"])
    assert show.exit_code == 0, show.output
    assert json.loads(show.stdout)["counts"]["done"] == report["units"]["done"]

    # The same command runs exactly the lost units, and the run is whole again.
    resumed = RUNNER.invoke(app, ["consensus", "run", *SWEEP, "-o", str(run_dir), "--json"])
    assert resumed.exit_code == 0, resumed.output
    summary = json.loads(resumed.stdout)
    assert summary["complete"] is True
    assert summary["done"] == report["units_to_run"]
    assert summary["skipped"] == report["units"]["done"]

    def rows(path: Path) -> list[dict[str, object]]:
        out = RUNNER.invoke(app, ["consensus", "report", str(path), "--json"])
        assert out.exit_code == 0, out.output
        return list(json.loads(out.stdout)["rows"])

    assert rows(run_dir) == rows(healthy)

    again = RUNNER.invoke(app, ["runs", "repair", str(run_dir)])
    assert again.exit_code == 0 and "nothing to repair" in again.stdout


def test_repair_text_output_says_what_was_lost(folder: Path) -> None:
    result = RUNNER.invoke(app, ["runs", "repair", str(folder / "beta")])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "repaired" in out and "lost:" in out and "results.damaged-" in out
    assert "rerun the same command" in out


def test_truncated_store(healthy: Path, tmp_path: Path) -> None:
    run_dir = _copy(healthy, tmp_path / "truncated")
    store = run_dir / STORE
    size = store.stat().st_size
    with store.open("r+b") as handle:
        handle.truncate(size // 2)
    before = _fingerprint(store)
    for command in (["runs", "show"], ["consensus", "report"]):
        _one_line_exit_2(RUNNER.invoke(app, [*command, str(run_dir)]), "damaged")
    _one_line_exit_2(_run(run_dir), "damaged")
    assert _fingerprint(store) == before
    listing = RUNNER.invoke(app, ["runs", "list", str(tmp_path), "--json"])
    [row] = json.loads(listing.stdout)["runs"]
    assert row["readable"] is False

    # Half the file is gone, yet the rows on its surviving pages are salvaged (also those
    # below interior pages that lay in the lost half), and the run completes.
    repair = RUNNER.invoke(app, ["runs", "repair", str(run_dir), "--json"])
    assert repair.exit_code == 0, repair.output
    report = json.loads(repair.stdout)
    assert report["units"]["done"] >= 1
    assert report["units"]["done"] + report["units_to_run"] == UNITS
    resumed = RUNNER.invoke(app, ["consensus", "run", *SWEEP, "-o", str(run_dir), "--json"])
    assert resumed.exit_code == 0, resumed.output
    assert json.loads(resumed.stdout)["complete"] is True


def test_empty_store_is_refused_and_left_empty(tmp_path: Path) -> None:
    run_dir = tmp_path / "empty"
    run_dir.mkdir()
    store = run_dir / STORE
    store.touch()
    before = _fingerprint(store)
    for command in (["runs", "show"], ["runs", "export"], ["consensus", "report"]):
        _one_line_exit_2(RUNNER.invoke(app, [*command, str(run_dir)]), "empty (0 bytes)")
    _one_line_exit_2(_run(run_dir), "empty (0 bytes)")
    _one_line_exit_2(RUNNER.invoke(app, ["runs", "repair", str(run_dir)]), "empty")
    assert _fingerprint(store) == before and store.stat().st_size == 0
    assert sorted(p.name for p in run_dir.iterdir()) == [STORE]  # no -wal, no -shm


@pytest.mark.parametrize("kind", ["text", "foreign sqlite"])
def test_foreign_file_is_refused_and_left_alone(tmp_path: Path, kind: str) -> None:
    run_dir = tmp_path / "foreign"
    run_dir.mkdir()
    store = run_dir / STORE
    if kind == "text":
        store.write_text("these are my notes, not a results store\n" * 50)
        needle = "not an SQLite database"
    else:
        with sqlite3.connect(store) as conn:
            conn.execute("CREATE TABLE notes (body TEXT)")
            conn.execute("INSERT INTO notes VALUES ('mine')")
        conn.close()
        needle = "not a byzllm results store"
    before = _fingerprint(store)
    for command in (["runs", "show"], ["consensus", "report"], ["runs", "repair"]):
        _one_line_exit_2(RUNNER.invoke(app, [*command, str(run_dir)]), needle)
    _one_line_exit_2(_run(run_dir), needle)
    assert _fingerprint(store) == before
    listing = RUNNER.invoke(app, ["runs", "list", str(tmp_path), "--json"])
    [row] = json.loads(listing.stdout)["runs"]
    assert row["readable"] is False and needle in row["error"]


def test_read_only_commands_never_write_to_a_healthy_store(healthy: Path, tmp_path: Path) -> None:
    run_dir = _copy(healthy, tmp_path / "run")
    store = run_dir / STORE
    before = _fingerprint(store)
    for command in (
        ["runs", "show", str(run_dir)],
        ["runs", "list", str(tmp_path)],
        ["consensus", "report", str(run_dir), "--json"],
        ["runs", "repair", str(run_dir)],
    ):
        result = RUNNER.invoke(app, command)
        assert result.exit_code == 0, result.output
    assert _fingerprint(store) == before
