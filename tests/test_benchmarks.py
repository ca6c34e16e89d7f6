"""The benchmark scripts' verdicts and JSON lines (benchmarks/): every printed figure is in the
JSON line, and a target is judged only in the setting it is stated for. The measurements
themselves are stood in for; the scripts' own runs are the benchmarks."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any, ClassVar

import pytest

from byzllm.runs import Record, make_unit, run_units

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
# The scripts import their shared verdict (benchmarks/_verdict.py) from beside them, as
# `python benchmarks/<name>.py` lets them.
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))


def _load(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` as a module (its ``main`` not run)."""
    spec = importlib.util.spec_from_file_location(f"benchmark_{name}", BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(
    module: ModuleType, argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> tuple[str, dict[str, Any]]:
    """Run ``module.main()`` with ``argv``: its printed text and its last line's JSON."""
    monkeypatch.setattr(sys, "argv", [module.__name__, *argv])
    module.main()
    out: str = capsys.readouterr().out
    return out, json.loads(out.strip().splitlines()[-1])


def _faults_run(wall: float, retries: int) -> Any:
    summary = SimpleNamespace(
        complete=True, total=2, requests={"errors": {"http_503": retries}, "retries": retries}
    )
    return wall, {"requests": 40, "faults": {"503": retries}}, summary, [{"accuracy": 1.0}]


def test_faults_json_carries_the_retries_it_prints(
    monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    faults = _load("faults")
    runs = iter([_faults_run(1.0, 0), _faults_run(2.0, 7)])
    monkeypatch.setattr(faults, "run_once", lambda *args: next(runs))
    out, record = _run(faults, ["--quick"], monkeypatch, capsys)
    assert "7 retries" in out
    assert record["retries"] == 7


@pytest.mark.parametrize(
    ("argv", "verdict"),
    [
        ([], "met"),  # the stated setting: 10 questions, T = 3, 20% faults, 0.1-0.3 s
        (["--quick"], "not judged"),
        (["--latency", "0.01", "0.02"], "not judged"),
        (["--fault-rate", "0.1"], "not judged"),
    ],
)
def test_faults_judges_the_ratio_in_the_stated_setting_only(
    argv: list[str], verdict: str, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    faults = _load("faults")
    runs = iter([_faults_run(1.0, 0), _faults_run(2.5, 7)])
    monkeypatch.setattr(faults, "run_once", lambda *args: next(runs))
    out, record = _run(faults, argv, monkeypatch, capsys)
    assert record["verdict"].startswith(verdict)
    assert f"(target <= 3: {record['verdict']})" in out
    assert record["ratio"] == 2.5


def test_faults_ratio_over_the_target_is_not_met(
    monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    faults = _load("faults")
    runs = iter([_faults_run(1.0, 0), _faults_run(3.5, 9)])
    monkeypatch.setattr(faults, "run_once", lambda *args: next(runs))
    _, record = _run(faults, [], monkeypatch, capsys)
    assert record["verdict"] == "NOT met"
    assert (record["questions"], record["rounds"], record["fault_rate"]) == (10, 3, 0.2)
    assert record["latency_s"] == [0.1, 0.3]


def test_runner_overhead_judges_its_2_core_target_on_2_cores_only() -> None:
    runner = _load("runner_overhead")
    assert runner.verdict(2500.0, 2) == "met"
    assert runner.verdict(1999.0, 2) == "NOT met"
    assert runner.verdict(2500.0, 1) == "not judged: target is for 2 cores"
    assert runner.verdict(900.0, 16) == "not judged: target is for 2 cores"


@pytest.mark.parametrize(("cores", "verdict"), [(1, "not judged"), (2, "met"), (16, "not judged")])
def test_runner_overhead_json_carries_the_cores_and_the_printed_verdict(
    cores: int, verdict: str, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    runner = _load("runner_overhead")
    monkeypatch.setattr(runner, "measure", lambda n, work, concurrency: (5000.0, 250.0))
    monkeypatch.setattr(runner, "usable_cores", lambda: cores)
    out, record = _run(runner, ["--quick"], monkeypatch, capsys)
    assert record["cores"] == cores
    assert record["verdict"].startswith(verdict)
    assert f"target: >= 2,000 units/s on 2 cores: {record['verdict']}" in out


def _stand_in_viewer(
    viewer: ModuleType, monkeypatch: pytest.MonkeyPatch, *, folder_bytes: int, ready_ms: int
) -> None:
    """``viewer``'s run, page and Chromium stood in for: a folder of ``folder_bytes`` and a
    page whose list and last unit are ready at ``ready_ms``. The grid is one question's (180
    units) whatever ``--units`` asks: the verdicts follow ``--units``, and expanding 10,000
    units is the measurement's cost, not the verdicts'."""

    run: dict[str, int] = {}
    matrix_config = viewer.matrix_config

    async def no_run(run_dir: Path, units: list[Any], *args: Any, **kwargs: Any) -> None:
        run["units"] = len(units)
        (run_dir / "view_files").mkdir(parents=True)
        (run_dir / "view_files" / "u0-1.js").write_bytes(b"x" * folder_bytes)

    def write_view(run_dir: Path) -> Path:
        page = run_dir / "view.html"
        page.write_text("<html></html>")
        return page

    def chromium(path: str, url: str) -> tuple[float, str]:
        count = run["units"]
        last = url.rsplit("#open=", 1)[-1]
        body = f'<body data-fcp-ms="100" data-ready-ms="{ready_ms}">'
        detail = f'<div class="detail">{last}<svg></svg></div>'
        return 2.5, f"{body}{count} of {count} shown{detail}</body>"

    def one_question(questions: int, T: int) -> Any:
        return matrix_config(questions=1, T=T)

    monkeypatch.setattr(viewer, "matrix_config", one_question)
    monkeypatch.setattr(viewer, "run_units", no_run)
    monkeypatch.setattr(viewer, "write_view", write_view)
    monkeypatch.setattr(viewer, "_open", chromium)
    monkeypatch.setattr(viewer.shutil, "which", lambda name: "/usr/bin/chromium")


@pytest.mark.parametrize(
    ("folder_mb", "ready_ms", "folder", "opens"),
    [(6, 800, "met", "met"), (31, 800, "NOT met", "met"), (6, 2100, "met", "NOT met")],
)
def test_viewer_judges_the_folder_and_open_targets_at_10000_units(
    folder_mb: int,
    ready_ms: int,
    folder: str,
    opens: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: Any,
) -> None:
    viewer = _load("viewer")
    _stand_in_viewer(viewer, monkeypatch, folder_bytes=folder_mb * 10**6, ready_ms=ready_ms)
    _, record = _run(viewer, [], monkeypatch, capsys)
    assert record["all_units_listed"] and record["last_unit_opened"]
    assert (record["folder_target_mb"], record["folder_verdict"]) == (30.0, folder)
    assert (record["open_target_ms"], record["open_verdict"]) == (2000, opens)


def test_viewer_judges_no_target_for_another_run_size(
    monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    viewer = _load("viewer")
    _stand_in_viewer(viewer, monkeypatch, folder_bytes=10**6, ready_ms=300)
    _, record = _run(viewer, ["--units", "180"], monkeypatch, capsys)
    not_judged = "not judged: target is for 10,000 units"
    assert record["units"] == 180
    assert record["folder_verdict"] == record["open_verdict"] == not_judged
    assert record["write_verdict"] == not_judged


class _FakeLocalServer:
    """Stands in for :class:`byzllm.llm.LocalServer`: a scripted server, no model."""

    def __init__(self, alias: str, port: int = 0) -> None:
        from byzllm.testing import FakeOpenAIServer

        self.model_name = f"fake-{alias}"
        self._server = FakeOpenAIServer(lambda request: "Score: 0.5\nAnswer: 1")

    def __enter__(self) -> _FakeLocalServer:
        self.base_url = self._server.__enter__().base_url
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.__exit__(None, None, None)


@pytest.fixture
def real_model(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    module = _load("real_model")
    monkeypatch.setattr(module, "LocalServer", _FakeLocalServer)
    return module


def test_real_model_judges_no_target_in_quick(
    real_model: ModuleType, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    out, record = _run(real_model, ["--quick"], monkeypatch, capsys)
    assert (record["questions"], record["rounds"]) == (2, 1)
    assert record["verdict"] == "not judged: target is for 5 questions, T = 2"
    assert f"target >= 2x: {record['verdict']})" in out
    assert "target >= 2)" not in out


def test_real_model_json_carries_every_printed_figure(
    real_model: ModuleType, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    out, record = _run(real_model, [], monkeypatch, capsys)
    assert (record["questions"], record["rounds"], record["target_speedup"]) == (5, 2, 2.0)
    assert record["verdict"] in ("met", "NOT met")
    number = r"([0-9.]+)"
    printed = {
        "wall_s": rf"byzllm: +{number} s",
        "sequential_wall_s": rf"sequential reference: {number} s",
        "output_tokens_per_s": rf"output tokens/s: byzllm {number},",
        "sequential_output_tokens_per_s": rf", reference {number},",
        "single_stream_tokens_per_s": rf"single stream {number}",
    }
    for key, pattern in printed.items():
        found = re.search(pattern, out)
        assert found is not None, pattern
        # Printed to 0.1, kept to 0.01 (wall times) or 0.1 (rates).
        assert record[key] == pytest.approx(float(found.group(1)), abs=0.051), key


@pytest.mark.parametrize(("cores", "judged"), [(1, False), (2, True), (16, False)])
def test_monitor_training_judges_10000_turns_on_2_cores_only(
    cores: int, judged: bool, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monitor = _load("monitor_training")
    monkeypatch.setattr(monitor, "usable_cores", lambda: cores)
    # The grid's training stood in: 2 roles' selections of 35 candidates each.
    selections = [SimpleNamespace(grid=[None] * 35) for _ in range(2)]
    monkeypatch.setattr(monitor, "train_monitor_set", lambda train, val: (None, selections))
    monkeypatch.setattr(monitor, "format_table5", lambda monitors: "Table 5")
    out, record = _run(monitor, ["--turns", "10000"], monkeypatch, capsys)
    assert record["cores"] == cores
    if judged:
        assert record["verdict"] in ("met", "NOT met")
    else:
        assert record["verdict"] == "not judged: target is for 10,000 turns on 2 cores"
    assert f"target < 10 s on 2 cores: {record['verdict']})" in out
    turns = f"turns: 10000 ({record['train_turns']} train, {record['validation_turns']} validation)"
    assert turns in out
    assert f"candidates: {record['candidates']} monitors" in out


@pytest.mark.parametrize(("cores", "verdict"), [(1, "not judged"), (2, "met"), (8, "not judged")])
def test_govsim_sim_judges_its_10_s_target_on_2_cores(
    cores: int, verdict: str, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    govsim = _load("govsim_sim")
    monkeypatch.setattr(govsim, "usable_cores", lambda: cores)
    _, record = _run(govsim, [], monkeypatch, capsys)
    assert (record["games"], record["cores"], record["target_s"]) == (20, cores, 10.0)
    # 20 simulated games take a fraction of a second; "met" on 2 cores.
    assert record["verdict"].startswith(verdict)


@pytest.mark.parametrize(("cores", "verdict"), [(1, "not judged"), (2, "met"), (8, "not judged")])
def test_whodunit_sim_judges_its_10_s_target_on_2_cores(
    cores: int, verdict: str, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    whodunit = _load("whodunit_sim")
    monkeypatch.setattr(whodunit, "usable_cores", lambda: cores)
    # Each list of games played only in its first 3 (the verdict follows the stood-in time).
    play_all = whodunit._play_all
    monkeypatch.setattr(whodunit, "_play_all", lambda games, params: play_all(games[:3], params))
    out, record = _run(whodunit, ["--quick"], monkeypatch, capsys)
    assert (record["games"], record["cores"], record["target_s"]) == (180, cores, 10.0)
    # 180 simulated games take well under a second; "met" on 2 cores.
    assert record["verdict"].startswith(verdict)
    assert f"(target < 10 s on 2 cores: {record['verdict']})" in out
    assert f"over {record['games_per_suspect_count']} games" in out


@pytest.mark.parametrize(
    ("argv", "verdict"),
    [
        ([], "met"),  # the stated setting: 100,000 lines, 20 questions
        (["--lines", "10000"], "not judged: target is for 100,000 lines, 20 questions"),
        (["--questions", "5"], "not judged: target is for 100,000 lines, 20 questions"),
    ],
)
def test_data_size_judges_the_stated_setting_only(
    argv: list[str], verdict: str, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    data_size = _load("data_size")
    monkeypatch.setattr(data_size, "_files", lambda folder, lines, questions: (folder, folder))
    # (CPU s, wall s, peak MB) of each run, the large file 1.2x the small one's time.
    runs = {"small": (1.0, 1.0, 100.0), "large": (1.2, 1.3, 102.0)}
    monkeypatch.setattr(data_size, "_run", lambda command, config, run_dir: runs[config.stem])
    _, record = _run(data_size, argv, monkeypatch, capsys)
    assert (record["time_ratio"], record["memory_ratio"]) == (1.2, 1.02)
    assert record["verdict"] == verdict


class _Question(Record):
    kind: ClassVar[str] = "question"
    index: int


class _Round(Record):
    kind: ClassVar[str] = "round"
    index: int


async def _demo_unit(payload: dict[str, Any]) -> list[Record]:
    return [_Question(index=payload["index"]), *(_Round(index=r) for r in range(3))]


def _stand_in_store(
    store: ModuleType,
    monkeypatch: pytest.MonkeyPatch,
    *,
    mb: float,
    read: dict[str, float],
    rows_read: dict[str, float],
) -> None:
    """``store``'s demo stood in by a 2-unit run, its sizes by ``mb`` (the row-per-record copy
    285 MB) and its reads by CPU seconds per kind: ``read`` for the store, ``rows_read`` for
    the row-per-record copy."""

    def demo(run_dir: Path, questions: int) -> None:
        units = [make_unit({"index": i}) for i in range(2)]
        asyncio.run(run_units(run_dir, units, _demo_unit, progress=False))

    monkeypatch.setattr(store, "_demo", demo)
    monkeypatch.setattr(store, "_mb", lambda folder: mb if folder.name == "demo" else 285.0)
    reads = {"demo": read, "rows": rows_read}
    monkeypatch.setattr(store, "_read_cpu", lambda folder, kind: reads[folder.name][kind])


@pytest.mark.parametrize(
    ("mb", "read", "size_verdict", "read_verdict"),
    [
        # Question records 12% slower, round records 40% faster: every kind 0.75x.
        (49.0, {"question": 5.6, "round": 7.4}, "met", "met"),
        (61.0, {"question": 5.6, "round": 7.4}, "NOT met", "met"),
        # 11.2 + 8.1 = 19.3 s against 5.0 + 12.3 = 17.3 s: 1.116x, past the 10% margin.
        (49.0, {"question": 11.2, "round": 8.1}, "met", "NOT met"),
        # 11.0 + 8.1 = 19.1 s: 1.104x, judged as printed: 1.10x, within it.
        (49.0, {"question": 11.0, "round": 8.1}, "met", "met"),
    ],
)
def test_store_judges_its_size_and_reading_at_2000_questions(
    mb: float,
    read: dict[str, float],
    size_verdict: str,
    read_verdict: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: Any,
) -> None:
    store = _load("store")
    rows_read = {"question": 5.0, "round": 12.3}
    _stand_in_store(store, monkeypatch, mb=mb, read=read, rows_read=rows_read)
    out, record = _run(store, [], monkeypatch, capsys)
    assert (record["questions"], record["units"], record["records"]) == (2000, 2, 8)
    assert (record["store_mb"], record["target_mb"]) == (mb, 60)
    assert (record["size_verdict"], record["read_verdict"]) == (size_verdict, read_verdict)
    assert record["target_read_ratio"] == 1.1
    assert record["read_cpu_total_s"] == round(sum(read.values()), 2)
    assert record["row_per_record_read_cpu_total_s"] == 17.3
    assert record["read_ratio"] == round(sum(read.values()) / 17.3, 2)
    ratios = {kind: round(read[kind] / rows_read[kind], 2) for kind in read}
    assert record["read_ratio_by_kind"] == ratios
    assert f"(target <= 60 MB: {size_verdict})" in out
    assert f"{record['read_ratio']:5.2f}x (target <= 1.1x: {read_verdict})" in out
    for kind, ratio in ratios.items():
        assert re.search(rf"{kind} +{read[kind]:.2f} +{rows_read[kind]:.2f} +{ratio:.2f}x", out)


def test_store_judges_no_target_for_another_demo_size(
    monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    store = _load("store")
    # Far over both targets; a 200-question store meets them at no merit, or fails for nothing.
    slow = {"question": 50.0, "round": 50.0}
    _stand_in_store(store, monkeypatch, mb=90.0, read=slow, rows_read={"question": 1, "round": 1})
    _, record = _run(store, ["--questions", "200"], monkeypatch, capsys)
    not_judged = "not judged: target is for 2,000 questions"
    assert record["size_verdict"] == record["read_verdict"] == not_judged


def _stand_in_sandbox(
    sandbox: ModuleType,
    monkeypatch: pytest.MonkeyPatch,
    *,
    sandbox_s: float,
    bare_s: float,
    failures: list[str],
) -> None:
    """``sandbox``'s data stood in by 164 problems and its runs by their totals."""

    async def measure(problems: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "sandbox_s": sandbox_s,
            "bare_s": bare_s,
            "sandbox_median_ms": 30.5,
            "bare_median_ms": 59.4,
            "failures": failures,
        }

    problems = [{"task_id": f"HumanEval/{i}"} for i in range(164)]
    monkeypatch.setattr(sandbox, "sandbox_support", lambda: {"available": True})
    monkeypatch.setattr(sandbox, "load", lambda path: problems)
    monkeypatch.setattr(sandbox, "measure", measure)
    monkeypatch.setattr(sandbox, "use_zygote", lambda on: None)


@pytest.mark.parametrize(
    ("argv", "sandbox_s", "verdict"),
    [
        # 164 runs: 5.0 s against 9.74 s bare, 0.51x, 28.9 ms less a run.
        ([], 5.0, "met"),
        # 12.0 s against 9.74 s: 1.23x and 13.8 ms more a run, within both targets.
        ([], 12.0, "met"),
        # 12.5 s: 1.28x, but 16.8 ms more a run: past +15 ms.
        ([], 12.5, "NOT met"),
        # The first 40 problems only: not the setting the targets are stated for.
        (["--limit", "40"], 5.0, "not judged: target is for the 164 HumanEval problems"),
    ],
)
def test_sandbox_prints_its_verdict_for_164_problems(
    argv: list[str],
    sandbox_s: float,
    verdict: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: Any,
) -> None:
    sandbox = _load("sandbox")
    _stand_in_sandbox(sandbox, monkeypatch, sandbox_s=sandbox_s, bare_s=9.74, failures=[])
    data = tmp_path / "HumanEval.jsonl"
    data.write_text("")
    out, record = _run(sandbox, ["--data", str(data), *argv], monkeypatch, capsys)
    assert record["verdict"] == verdict
    assert f"targets: at most +15 ms per execution and x1.3 bare: {verdict}\n" in out
    assert (record["target_extra_ms"], record["target_ratio"]) == (15.0, 1.3)
    assert (record["sandbox_s"], record["bare_s"]) == (sandbox_s, 9.74)
    assert f"sandbox {sandbox_s:.2f} s (median 30.5 ms), bare subprocess 9.74 s" in out
    n = record["executions"]
    assert (record["passed_in_sandbox"], record["failures"]) == (n, [])
    assert f"passing in the sandbox: {n} of {n}" in out


def test_sandbox_json_carries_the_failures_it_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    sandbox = _load("sandbox")
    failures = ["HumanEval/7 (sandbox)", "HumanEval/9 (bare)", "HumanEval/9 (sandbox)"]
    _stand_in_sandbox(sandbox, monkeypatch, sandbox_s=5.0, bare_s=9.74, failures=failures)
    data = tmp_path / "HumanEval.jsonl"
    data.write_text("")
    monkeypatch.setattr(sys, "argv", ["sandbox", "--data", str(data)])
    with pytest.raises(SystemExit) as exit_:
        sandbox.main()
    assert exit_.value.code == 1  # after the JSON line
    out = capsys.readouterr().out
    record = json.loads(out.strip().splitlines()[-1])
    assert (record["passed_in_sandbox"], record["failures"]) == (162, failures)
    assert "passing in the sandbox: 162 of 164" in out
    assert f"FAILED: {', '.join(failures)}" in out


def test_cli_startup_json_carries_every_case_it_prints(
    monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    cli_startup = _load("cli_startup")
    # Seconds per case, told apart by their command lines; `graph check --help` is not the
    # slowest subcommand --help, so no other figure holds it.
    seconds = {
        "-c pass": 0.040,
        "floor.py --help": 0.120,
        "BYZLLM_HELP_CACHE=off": 0.245,
        "consensus run --help": 0.070,
        "graph check --help": 0.064,
        "g.edges": 0.263,
        "runs list": 0.205,
        "main() --help": 0.045,
    }

    def timed(argv: list[str], env: dict[str, str]) -> float:
        line = " ".join(argv)
        return next(s for key, s in seconds.items() if key in line)

    monkeypatch.setattr(cli_startup, "_time", timed)
    out, record = _run(cli_startup, ["--repeats", "1"], monkeypatch, capsys)
    line = re.compile(r"^(.+?) +([0-9.]+) ms  \( *([0-9.]+)x bare, +([0-9.]+)x typer floor\)$")
    printed = [found.groups() for found in map(line.match, out.splitlines()) if found]
    assert len(printed) == len(record["cases"]) == 8
    for name, ms, to_bare, to_floor in printed:
        figures = (float(ms), float(to_bare), float(to_floor))
        case = record["cases"][name]
        assert (case["ms"], case["ratio_to_bare"], case["ratio_to_typer_floor"]) == figures
    assert record["graph_check_help_ms"] == 64.0
    # 64 / 40 = 1.6x bare, 64 / 120 = 0.53x the typer floor.
    graph_help = {"ms": 64.0, "ratio_to_bare": 1.6, "ratio_to_typer_floor": 0.53}
    assert record["cases"]["byzllm graph check --help"] == graph_help
    assert re.search(r"byzllm graph check --help +64\.0 ms  \( 1\.6x bare, 0\.53x typer", out)
    assert record["slowest_subcommand_help_ms"] == 70.0


def _stand_in_throughput(
    throughput: ModuleType,
    monkeypatch: pytest.MonkeyPatch,
    *,
    walls: list[float],
    cpu_s: float = 0.76,
    wrong: int = 0,
    cores: int = 2,
) -> None:
    """``llm_throughput``'s server and batches stood in: one batch per wall time in ``walls``,
    each of ``cpu_s`` client CPU seconds (0.76 s: 0.38 ms a call of 2,000)."""

    def measure(
        n: int, latency: float, concurrency: int, top_logprobs: int | None, repeat: int
    ) -> tuple[list[dict[str, Any]], float, dict[str, Any]]:
        runs = [{"wall_s": wall, "cpu_s": cpu_s, "wrong": wrong} for wall in walls[:repeat]]
        return runs, 1.65, {"requests": n * repeat, "max_in_flight": concurrency, "cpu_s": 9.5}

    monkeypatch.setattr(throughput, "measure", measure)
    monkeypatch.setattr(throughput, "usable_cores", lambda: cores)


_NOT_JUDGED_THROUGHPUT = (
    "not judged: target is for 2,000 requests, 50 ms latency, concurrency 64, top_logprobs 5 "
    "on 2 cores"
)


@pytest.mark.parametrize(
    ("argv", "cores", "verdict"),
    [
        ([], 2, "met"),  # the stated run: 2,000 requests, 50 ms, concurrency 64, 5 top logprobs
        (["--quick"], 2, _NOT_JUDGED_THROUGHPUT),
        (["--requests", "500"], 2, _NOT_JUDGED_THROUGHPUT),
        (["--latency", "0.1"], 2, _NOT_JUDGED_THROUGHPUT),
        (["--concurrency", "128"], 2, _NOT_JUDGED_THROUGHPUT),
        (["--top-logprobs", "-1"], 2, _NOT_JUDGED_THROUGHPUT),
        ([], 1, _NOT_JUDGED_THROUGHPUT),
        ([], 16, _NOT_JUDGED_THROUGHPUT),
    ],
)
def test_llm_throughput_judges_the_stated_run_only(
    argv: list[str], cores: int, verdict: str, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    throughput = _load("llm_throughput")
    # 2,000 requests at 64 and 50 ms: a bound of 32 x 0.05 = 1.6 s; the median batch
    # 1.94 s is 1.2125x it.
    _stand_in_throughput(throughput, monkeypatch, walls=[1.9, 1.94, 2.1], cores=cores)
    out, record = _run(throughput, argv, monkeypatch, capsys)
    assert (record["cores"], record["verdict"]) == (cores, verdict)
    assert f"ms a call: {verdict}\n" in out
    assert "PASS" not in out and "pass" not in record
    if not argv:
        assert (record["bound_s"], record["ratio_to_bound"]) == (1.6, 1.2125)
        assert record["client_cpu_ms_per_call"] == 0.38


@pytest.mark.parametrize(
    ("walls", "cpu_s"),
    [
        ([1.9, 2.01, 2.1], 0.76),  # median 2.01 s: 1.256x the 1.6 s bound
        ([1.9, 1.94, 2.1], 4.02),  # 2.01 ms of client CPU a call
    ],
)
def test_llm_throughput_over_a_target_is_not_met(
    walls: list[float], cpu_s: float, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    throughput = _load("llm_throughput")
    _stand_in_throughput(throughput, monkeypatch, walls=walls, cpu_s=cpu_s)
    _, record = _run(throughput, [], monkeypatch, capsys)
    assert record["verdict"] == "NOT met"


@pytest.mark.parametrize(("argv", "verdict"), [([], "NOT met"), (["--quick"], "not judged")])
def test_llm_throughput_wrong_answers_exit_1_in_any_run(
    argv: list[str], verdict: str, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    throughput = _load("llm_throughput")
    _stand_in_throughput(throughput, monkeypatch, walls=[1.9, 1.94, 2.1], wrong=1)
    monkeypatch.setattr(sys, "argv", ["llm_throughput", *argv])
    with pytest.raises(SystemExit) as exit_:
        throughput.main()
    assert exit_.value.code == 1  # after the JSON line
    record = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert record["verdict"].startswith(verdict)
    assert record["wrong"] == len(record["all_ratios"])


@pytest.mark.parametrize(
    ("seconds", "code", "stderr", "verdict"),
    [
        (1.2, 2, "error: no server at http://127.0.0.1:1/v1\n", "met"),
        (5.3, 2, "error: no server at http://127.0.0.1:1/v1\n", "NOT met"),  # too slow
        (1.2, 1, "error: no server at http://127.0.0.1:1/v1\n", "NOT met"),  # wrong exit code
        (1.2, 2, "Traceback (most recent call last):\n  ...\n", "NOT met"),  # two lines
    ],
)
def test_fail_fast_prints_its_verdict(
    seconds: float,
    code: int,
    stderr: str,
    verdict: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: Any,
) -> None:
    fail_fast = _load("fail_fast")
    clock = iter([100.0, 100.0 + seconds])
    monkeypatch.setattr(fail_fast, "time", SimpleNamespace(perf_counter=lambda: next(clock)))
    done = SimpleNamespace(returncode=code, stderr=stderr)
    monkeypatch.setattr(fail_fast, "subprocess", SimpleNamespace(run=lambda args, **kw: done))
    out, record = _run(fail_fast, [], monkeypatch, capsys)
    lines = len(stderr.splitlines())
    assert (record["seconds"], record["exit_code"]) == (seconds, code)
    assert record["stderr_lines"] == lines
    assert (record["target_s"], record["verdict"]) == (5.0, verdict)
    assert f"{seconds:.2f} s, exit code {code}, {lines} line(s) on stderr" in out
    assert f"(target: under 5 s, exit code 2, one line: {verdict})" in out
