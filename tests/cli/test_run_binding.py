"""`byzllm <area> run` into an existing folder: the same config resumes, another is refused
(one line naming the differing keys, exit 2) unless --force."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner, Result

from byzllm.cli import app

RUNNER = CliRunner()
SMALL = ["--set", "dataset.n=2", "--set", "topologies=[complete]"]


def _run(run_dir: Path, *extra: str) -> tuple[int, str, str]:
    args = ["consensus", "run", *SMALL, *extra, "-o", str(run_dir), "--json"]
    result = RUNNER.invoke(app, args)
    return result.exit_code, result.stdout, result.stderr


def test_a_changed_config_is_refused_and_the_same_one_resumes(tmp_path: Path) -> None:
    code, out, _ = _run(tmp_path, "--set", "protocols=[sac]")
    assert code == 0 and json.loads(out)["done"] == 2
    code, out, err = _run(tmp_path, "--set", "protocols=[sac, debate]", "--set", "seeds=[0, 1]")
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert code == 2 and json.loads(out)["error"] == lines[0].removeprefix("error: ")
    assert "differs in protocols, seeds" in lines[0] and "--force" in lines[0]
    # Nothing was run or recorded: the same config still resumes with nothing to do.
    code, out, _ = _run(tmp_path, "--set", "protocols=[sac]")
    assert code == 0 and json.loads(out)["skipped"] == 2 and json.loads(out)["done"] == 0


def test_transport_keys_are_no_difference(tmp_path: Path) -> None:
    # A resumed real-model run starts its server on a new port and may change its limits.
    first = ["--set", "protocols=[sac]", "--set", "agents.strong.timeout_s=30"]
    assert _run(tmp_path, *first)[0] == 0
    moved = ["--set", "protocols=[sac]", "--set", "agents.strong.timeout_s=60"]
    moved += ["--set", "agents.strong.max_concurrency=2"]
    code, out, _ = _run(tmp_path, *moved)
    assert code == 0 and json.loads(out)["skipped"] == 2


def test_force_replaces_the_config_keeping_shared_units(tmp_path: Path) -> None:
    assert _run(tmp_path, "--set", "protocols=[sac, debate]")[0] == 0
    code, out, err = _run(tmp_path, "--set", "protocols=[sac]", "--set", "T=[6]", "--force")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["total"] == 2 and summary["skipped"] == 2
    assert "removed 2 units" in err
    report = RUNNER.invoke(app, ["consensus", "report", str(tmp_path), "--json"])
    assert {row["protocol"] for row in json.loads(report.stdout)["rows"]} == {"sac"}


def _units(run_dir: Path) -> dict[str, int]:
    from byzllm.runs import Store

    with Store.open(run_dir) as store:
        return store.counts()


def _refused(result: Result, *keys: str) -> None:
    """One line, exit 2, naming exactly the differing ``keys``; --json's stdout has the line."""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert result.exit_code == 2
    assert json.loads(result.stdout)["error"] == lines[0].removeprefix("error: ")
    assert f"differs in {', '.join(keys)})" in lines[0] and "--force" in lines[0]


def test_demo_binds_its_run_folder(tmp_path: Path) -> None:
    demo = ["demo", "-o", str(tmp_path), "--json"]
    assert RUNNER.invoke(app, [*demo, "--questions", "2"]).exit_code == 0
    before = _units(tmp_path)
    changed = RUNNER.invoke(app, [*demo, "--questions", "3", "--seed", "1"])
    _refused(changed, "seeds", "dataset.n", "dataset.seed")
    assert _units(tmp_path) == before  # nothing pooled
    assert RUNNER.invoke(app, [*demo, "--questions", "2"]).exit_code == 0
    assert _units(tmp_path) == before  # resumed: nothing new to run
    forced = RUNNER.invoke(app, [*demo, "--questions", "3", "--force"])
    assert forced.exit_code == 0 and _units(tmp_path)["done"] == before["done"] * 3 // 2


def test_matrix_binds_its_run_folder(tmp_path: Path) -> None:
    matrix = ["consensus", "matrix", "-o", str(tmp_path), "--attacks", "replay", "--json"]
    matrix += ["--protocols", "sac", "--topologies", "complete", "--adversaries", "1"]
    assert RUNNER.invoke(app, [*matrix, "-n", "1"]).exit_code == 0
    before = _units(tmp_path)
    _refused(RUNNER.invoke(app, [*matrix, "-n", "2", "-T", "2"]), "T", "dataset.n")
    assert _units(tmp_path) == before
    assert RUNNER.invoke(app, [*matrix, "-n", "1"]).exit_code == 0
    assert _units(tmp_path) == before


def test_reproduce_binds_its_run_folder_before_reusing_other_folders(tmp_path: Path) -> None:
    run_dir = tmp_path / "sac-table1"
    table1 = ["reproduce", "sac-table1", "-o", str(run_dir), "--json"]
    assert RUNNER.invoke(app, [*table1, "-n", "1"]).exit_code == 0
    before = _units(run_dir)
    # A sibling folder holds the units -n 2 shares: none may be copied into a refused run.
    _refused(RUNNER.invoke(app, [*table1, "-n", "2"]), "dataset.n")
    assert _units(run_dir) == before
    resumed = RUNNER.invoke(app, [*table1, "-n", "1"])
    assert resumed.exit_code == 0 and _units(run_dir) == before


def test_force_removes_nothing_while_another_process_writes(tmp_path: Path) -> None:
    """The folder is bound under the writer lock: checked before it, --force removed every
    unit of a run that another process was still writing (which then counted its units done
    into a store that no longer held them)."""
    from byzllm.runs._lock import WriterLock
    from byzllm.runs._store import resolve_store_path

    assert _run(tmp_path, "--set", "protocols=[sac, debate]")[0] == 0
    before = _units(tmp_path)
    with WriterLock(resolve_store_path(tmp_path)):  # a writer, as far as the folder can tell
        code, _, err = _run(tmp_path, "--set", "protocols=[sac]", "--force")
        assert code == 2 and "in use by process" in err and "removed" not in err
        # Without --force the config is refused at once (a check that changes nothing), and
        # checked again under the lock, against what the writer will have recorded.
        code, _, err = _run(tmp_path, "--set", "protocols=[sac]")
        assert code == 2 and "holds a run of another config" in err
    assert _units(tmp_path) == before
