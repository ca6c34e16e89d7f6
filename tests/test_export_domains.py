"""Exports of real stores of every domain load back with the rows and values of the store
(``byzllm runs export``; Parquet columns Arrow cannot type exactly are JSON text)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from byzllm.cli import app
from byzllm.runs import Store

RUNNER = CliRunner()

#: Per domain: the command that makes a small real run, and the folder of it exported.
RUNS: dict[str, tuple[list[str], str]] = {
    "consensus": (["demo", "--questions", "2"], ""),
    "whodunit": (["whodunit", "run", "--set", "n_games=2"], ""),
    "govsim": (["govsim", "run", "--set", "n_games=2"], ""),
    "codegen": (
        ["codegen", "run", "--set", "n_test=2", "--set", "execution=simulated",
         "--set", "problems={problems}"],
        "",
    ),
    # A monitor evaluation: games with their triggers, per-turn scores and transcripts.
    "monitor": (["reproduce", "ra-fig4", "-n", "4"], "evaluate"),
}  # fmt: skip


def _decode(got: list[Any], wanted: list[Any]) -> list[Any]:
    if all(g is None or isinstance(g, str) for g in got) and any(
        w is not None and not isinstance(w, str) for w in wanted
    ):
        return [None if g is None else json.loads(g) for g in got]
    return got


@pytest.mark.parametrize("domain", sorted(RUNS))
@pytest.mark.parametrize("fmt", ["parquet", "jsonl", "csv"])
def test_every_record_kind_exports_and_loads_back(
    tmp_path: Path, domain: str, fmt: str, toy_problems: Path
) -> None:
    command, folder = RUNS[domain]
    args = [arg.format(problems=toy_problems) for arg in command]
    result = RUNNER.invoke(app, [*args, "-o", str(tmp_path / domain)])
    assert result.exit_code == 0, result.output
    run_dir = tmp_path / domain / folder
    out = tmp_path / "export"
    result = RUNNER.invoke(
        app, ["runs", "export", str(run_dir), "--format", fmt, "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    with Store.open(run_dir) as store:
        kinds = list(store.kinds())
        records = {kind: store.records(kind, with_unit=True) for kind in kinds}
    assert kinds
    for kind, rows in records.items():
        path = out / f"{kind}.{fmt}"
        if fmt == "parquet":
            back = pq.read_table(path).to_pylist()
            assert len(back) == len(rows)
            for key in {k for row in rows for k in row}:
                wanted = [row.get(key) for row in rows]
                assert _decode([r[key] for r in back], wanted) == wanted, (kind, key)
        elif fmt == "jsonl":
            back = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
            assert back == rows
        else:
            frame = pd.read_csv(path)
            assert len(frame) == len(rows) and set(frame.columns) == set(rows[0])
