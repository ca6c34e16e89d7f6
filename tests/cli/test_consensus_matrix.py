"""`byzllm consensus matrix`: attacks × protocols × topologies × adversaries in one command."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from byzllm.cli import app
from byzllm.experiments.consensus.matrix import _ink_on, matrix_config

RUNNER = CliRunner()


def test_matrix_writes_table_csv_and_heatmap(tmp_path: Path) -> None:
    run_dir = tmp_path / "mx"
    args = ["consensus", "matrix", "-o", str(run_dir), "--attacks", "replay,inject"]
    args += ["--protocols", "sac,cp-wbft", "--topologies", "merg,complete"]
    args += ["--adversaries", "1,2", "-n", "4", "-T", "2"]
    result = RUNNER.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    rows = payload["rows"]
    # 2 attacks × 2 adversary counts × 2 protocols × 2 topologies.
    assert len(rows) == 16
    assert {(r["attack"], r["adversaries"]) for r in rows} == {
        (a, b) for a in ("replay", "inject") for b in (1, 2)
    }
    for r in rows:
        assert r["BFTI_low"] <= r["BFTI"] <= r["BFTI_high"]
        assert r["simulated"] is True and r["calls_per_question"] == 0
    assert "bootstrap" in payload["interval_method"]
    with open(payload["csv"], newline="", encoding="utf-8") as handle:
        table = list(csv.DictReader(handle))
    assert len(table) == 16 and all(row["results"] == "simulated" for row in table)
    # The attacks that read the answer key are marked: the paper's replay does not.
    assert {(row["attack"], row["oracle_attack"]) for row in table} == {
        ("replay", "False"),
        ("inject", "True"),
    }
    assert Path(payload["png"]).stat().st_size > 10_000
    # Rerunning reads the cells already done and prints the matrix.
    again = RUNNER.invoke(app, args)
    assert again.exit_code == 0, again.output
    assert "replay ×1 " in again.stdout and "H-Majority" in again.stdout
    assert "inject ×1 †" in again.stdout and "† oracle attack: it reads the answer key" in (
        " ".join(again.stdout.split())
    )


def test_matrix_config_keeps_n_7_with_4_strong() -> None:
    cfg = matrix_config(attacks=["collude"], adversaries=[1, 3])
    assert [(c.strong, c.weak, c.byzantine) for c in cfg.compositions] == [(4, 2, 1), (4, 0, 3)]
    from byzllm.errors import InputError

    with pytest.raises(InputError, match="unknown attack"):
        matrix_config(attacks=["nope"])
    with pytest.raises(InputError, match="adversaries"):
        matrix_config(adversaries=[4])


def test_matrix_runs_real_model_agents_through_model_flags(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from byzllm.testing import FakeOpenAIServer

    def script(request: dict[str, object]) -> str:
        return "Answer: 7" if "Score" not in str(request["messages"]) else "0.8"

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    with FakeOpenAIServer(script) as server:
        args = ["consensus", "matrix", "-o", str(tmp_path / "mx"), "--attacks", "replay"]
        args += ["--protocols", "sac", "--topologies", "complete", "--adversaries", "1"]
        args += ["-n", "1", "-T", "1", "--model", "openai/fake", "--base-url", server.base_url]
        result = RUNNER.invoke(app, [*args, "--json"])
        assert result.exit_code == 0, result.output
        assert server.requests
    row = json.loads(result.stdout)["rows"][0]
    assert row["simulated"] is False and row["calls_per_question"] > 0


@pytest.mark.parametrize(
    ("rgba", "ink"),
    [
        ((1.0, 1.0, 1.0, 1.0), "black"),
        ((0.0, 0.0, 0.0, 1.0), "white"),
        ((0.403, 0.0, 0.122, 1.0), "white"),  # RdBu's darkest red: luminance 0.029
        ((0.993, 0.906, 0.144, 1.0), "black"),  # viridis' yellow: luminance 0.78
        # Either side of the crossover (L = 0.179): grey 0.47 -> L 0.187, 0.45 -> 0.171.
        ((0.47, 0.47, 0.47, 1.0), "black"),
        ((0.45, 0.45, 0.45, 1.0), "white"),
    ],
)
def test_heatmap_numbers_take_the_ink_that_reads_on_their_cell(
    rgba: tuple[float, float, float, float], ink: str
) -> None:
    assert _ink_on(rgba) == ink


@pytest.mark.slow
def test_auto_runs_a_large_simulated_matrix_in_worker_processes_with_the_same_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Lowered threshold, two usable cores: `auto` (the default) must choose worker processes
    # for this all-simulated matrix, and its table must be the one-process table.
    from byzllm.runs import ProcessExecutor, _executor

    monkeypatch.setattr(_executor, "AUTO_PROCESS_MIN_UNITS", 10)
    monkeypatch.setattr(_executor, "usable_cores", lambda: 2)
    started: list[int] = []
    start = ProcessExecutor.start

    async def counting_start(self: ProcessExecutor, concurrency: int) -> None:
        started.append(concurrency)
        await start(self, concurrency)

    monkeypatch.setattr(ProcessExecutor, "start", counting_start)
    args = ["consensus", "matrix", "--attacks", "replay,collude", "--protocols", "sac,majority"]
    args += ["--topologies", "complete", "-n", "3", "-T", "2", "--json"]
    tables = {}
    for executor in ("auto", "local"):
        result = RUNNER.invoke(app, [*args, "-o", str(tmp_path / executor), "--executor", executor])
        assert result.exit_code == 0, result.output
        with open(json.loads(result.stdout)["csv"], newline="", encoding="utf-8") as handle:
            tables[executor] = list(csv.DictReader(handle))
        assert len(started) == 1  # auto started the pool; local did not
    assert len(tables["auto"]) == 8 and tables["auto"] == tables["local"]


@pytest.mark.slow
def test_a_matrix_summed_with_a_helper_process_writes_what_one_process_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With worker processes, the matrix counts part of its records in a helper process and
    bootstraps there while it draws the heat-map: the JSON, CSV and PNG are those of
    ``--executor local``, which starts no helper (one process, as documented)."""
    import byzllm.runs as runs
    from byzllm.runs import _executor

    for module in (runs, _executor):  # (the command reads them through byzllm.runs)
        monkeypatch.setattr(module, "AUTO_PROCESS_MIN_UNITS", 10)
        monkeypatch.setattr(module, "usable_cores", lambda: 2)
    helpers = []
    helper_pool = _executor.helper_pool

    def counted() -> object:
        helpers.append(helper_pool())
        return helpers[-1]

    monkeypatch.setattr(runs, "helper_pool", counted)
    args = ["consensus", "matrix", "--attacks", "replay,collude", "--protocols", "sac,majority"]
    args += ["--topologies", "complete,merg", "-n", "3", "-T", "2", "--json"]
    outputs = {}
    for executor in ("process", "local"):
        out = tmp_path / f"{executor}-report"
        run = [*args, "-o", str(tmp_path / executor), "--out", str(out), "--executor", executor]
        result = RUNNER.invoke(app, run)
        assert result.exit_code == 0, result.output
        payload = json.loads(result.stdout)
        del payload["csv"], payload["png"]
        files = [(out / name).read_bytes() for name in ("matrix.csv", "matrix.png")]
        outputs[executor] = (payload, files)
    assert len(helpers) == 1 and helpers[0] is not None  # the process run's
    assert len(outputs["process"][0]["rows"]) == 16
    assert outputs["process"] == outputs["local"]
    # A rerun runs no unit: no helper (its fork server may still be starting).
    again = RUNNER.invoke(app, [*args, "-o", str(tmp_path / "process"), "--executor", "process"])
    assert again.exit_code == 0, again.output
    assert len(helpers) == 1 and json.loads(again.stdout)["rows"] == outputs["local"][0]["rows"]


def test_a_dead_helper_leaves_its_work_to_this_process(tmp_path: Path) -> None:
    """The helper only saves time: where it dies, its share is counted here."""
    from concurrent.futures import Future, ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    from byzllm.cli.consensus import _beside

    class Dying(ProcessPoolExecutor):
        def submit(self, *args: object, **kwargs: object) -> Any:
            future: Future[Any] = Future()
            future.set_exception(BrokenProcessPool("a worker died"))
            return future

    class Dead(ProcessPoolExecutor):
        def submit(self, *args: object, **kwargs: object) -> Any:
            raise BrokenProcessPool("a worker died")

    for kind in (Dying, Dead):
        with kind(max_workers=1) as helper:
            assert _beside(helper, sorted, [3, 1, 2])() == [1, 2, 3]
    assert _beside(None, sorted, [2, 1])() == [1, 2]


@pytest.mark.parametrize(
    "option, values", [("--protocols", "sac,foo"), ("--topologies", "merg,foo")]
)
def test_an_unknown_protocol_or_topology_is_one_line(
    tmp_path: Path, option: str, values: str
) -> None:
    args = ["consensus", "matrix", "-o", str(tmp_path / "mx"), option, values, "--json"]
    result = RUNNER.invoke(app, args)
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1 and lines[0].startswith("error: ")
    assert "'foo'" in lines[0] and "Traceback" not in result.output
    assert json.loads(result.stdout)["exit_code"] == 2
    assert not (tmp_path / "mx").exists()


def test_a_graph_that_is_not_f_plus_1_robust_is_named_once(tmp_path: Path) -> None:
    """`consensus run` warned about a star or a chain; the matrix ran SAC on them silently
    beside γ-MERG."""
    args = ["consensus", "matrix", "-o", str(tmp_path / "mx"), "--topologies", "star"]
    args += ["--attacks", "replay", "--protocols", "sac", "-n", "2", "-T", "1"]
    result = RUNNER.invoke(app, args)
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning: star")]
    assert len(warnings) == 1 and "1-robust, not (3+1)-robust" in warnings[0]


def test_mimic_moves_bfti_by_itself_and_the_honest_bfti_shows_it(tmp_path: Path) -> None:
    """BFTI counts the adversaries (the paper's Table 1 does): mimic is right with the
    majority at round 0 and wrong after it defects, which took about 27 points off every
    protocol's BFTI; the honest agents' own change is printed beside it."""
    args = ["consensus", "matrix", "-o", str(tmp_path / "mx"), "--topologies", "complete"]
    args += ["--attacks", "mimic", "--protocols", "sac", "--adversaries", "2", "-n", "20"]
    result = RUNNER.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    [row] = json.loads(result.stdout)["rows"]
    assert row["BFTI"] < -0.15 < row["BFTI_honest"]
    assert row["BFTI_honest_low"] <= row["BFTI_honest"] <= row["BFTI_honest_high"]
    table = RUNNER.invoke(app, args)
    assert "honest +" in table.stdout or "honest -" in table.stdout


def test_ray_address_reaches_the_executor(tmp_path: Path) -> None:
    """--ray-address, which the --executor help points to, is the matrix's too: given without
    --executor ray it is refused by the executor, as in `consensus run`."""
    args = ["consensus", "matrix", "-o", str(tmp_path / "mx"), "-n", "1", "-T", "1"]
    result = RUNNER.invoke(app, [*args, "--executor", "local", "--ray-address", "auto"])
    assert result.exit_code == 2, result.output
    assert "a Ray address needs the ray executor" in result.output


def test_the_matrix_warms_its_workers_for_the_module_of_its_work() -> None:
    # The fork server starts importing the work before the command imports it: by name.
    from byzllm.cli.consensus import MATRIX_WORK_MODULE
    from byzllm.experiments.consensus.experiment import consensus_unit

    assert consensus_unit.__module__ == MATRIX_WORK_MODULE
