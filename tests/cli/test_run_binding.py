"""`byzllm <area> run` into an existing folder: the same config resumes, another is refused
(one line naming the differing keys, exit 2) unless --force."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

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
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
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
