"""`byzllm sim fit / compare` on GovSim and CodeGen runs: the documented commands run as
written, the JSON outputs, and bad input (one line, exit 2)."""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from byzllm.cli import app
from byzllm.experiments._fitting import FittedProfile
from byzllm.runs import Store

RUNNER = CliRunner()
DOCS = Path(__file__).resolve().parents[2] / "docs"
SECTION = "## Fit the simulator to a real run"


def documented_commands(page: str) -> list[list[str]]:
    """The ``byzllm`` command lines of the first code block under :data:`SECTION` of
    ``docs/<page>`` (arguments after ``byzllm``; comments dropped)."""
    lines = (DOCS / page).read_text(encoding="utf-8").splitlines()
    start = lines.index(SECTION)
    fence = next(i for i in range(start, len(lines)) if lines[i].startswith("```"))
    end = next(i for i in range(fence + 1, len(lines)) if lines[i].startswith("```"))
    commands = []
    for line in lines[fence + 1 : end]:
        words = shlex.split(line, comments=True)
        assert words[0] == "byzllm", line
        commands.append(words[1:])
    return commands


def _run(args: list[str]) -> str:
    result = RUNNER.invoke(app, args)
    assert result.exit_code == 0, (args, result.output)
    return result.stdout


def test_the_documented_govsim_commands_fit_compare_and_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    commands = documented_commands("govsim.md")
    assert [c[:2] for c in commands] == [
        ["govsim", "run"],
        ["sim", "fit"],
        ["sim", "compare"],
        ["govsim", "run"],
    ]
    outputs = [_run(c) for c in commands]
    profile = FittedProfile.load("govsim-profile.yaml")
    assert profile.domain == "govsim" and profile.run == "gs-fit" and profile.run_simulated
    assert "kept their defaults (no evidence in the run): resample_persistence" in outputs[1]
    for metric in ("Survival-Rate", "Survival-Time", "Efficiency"):
        assert metric in outputs[2]
    # The replay ran on the fitted fishers.
    with Store.open("runs/gs-twin") as store:
        games = store.records("govsim_game")
    assert len(games) == 20
    fitted = profile.groups["sim"]
    assert all(g["sim_params"]["greed"] == fitted["greed"] for g in games)


def test_govsim_fit_and_compare_as_json(tmp_path: Path) -> None:
    run_dir = tmp_path / "gs"
    _run(["govsim", "run", "--set", "split=generated", "--set", "n_games=8", "-o", str(run_dir)])
    out = tmp_path / "p.json"
    fit = json.loads(_run(["sim", "fit", str(run_dir), "-o", str(out), "--json"]))
    assert fit["profile"] == str(out) and fit["domain"] == "govsim"
    assert json.loads(out.read_text())["groups"] == fit["groups"]  # .json writes JSON
    assert fit["sources"]["sim"]["greed"].startswith("fitted from gs on 8 games: ")
    # The profile says which split it was fitted on (it said the run only).
    assert fit["splits"] == ["generated"]
    text = _run(["sim", "fit", str(run_dir), "-o", str(tmp_path / "p.yaml")])
    assert "fitted from a simulated run: gs (generated split)" in text
    compare = json.loads(
        _run(["sim", "compare", str(run_dir), "-p", str(out), "--json", "--resamples", "200"])
    )
    assert compare["domain"] == "govsim" and compare["run_simulated"]
    assert compare["profile_splits"] == ["generated"]
    (table,) = compare["tables"]
    assert table["split"] == "generated"
    assert [r["metric"] for r in table["rows"]] == ["Survival-Rate", "Survival-Time", "Efficiency"]
    for row in table["rows"]:
        assert row["n_real"] == row["n_simulated"] == 8
        assert row["real_low"] <= row["real"] <= row["real_high"]
        assert row["difference"] == pytest.approx(row["simulated"] - row["real"])
    # A profile fitted on a real run, compared on this simulated one: the label is the
    # compared run's (it was the profile's, and a simulated run was headed "real run").
    data = json.loads(out.read_text())
    from_real = tmp_path / "from-real.json"
    from_real.write_text(json.dumps({**data, "run": "real-run", "run_simulated": False}))
    args = ["sim", "compare", str(run_dir), "-p", str(from_real), "--resamples", "200"]
    mixed = json.loads(_run([*args, "--json"]))
    assert mixed["run_simulated"] is True and mixed["run"] == str(run_dir)
    assert mixed["profile_run"] == "real-run" and mixed["profile_run_simulated"] is False
    assert "simulated run" in _run(args) and "real run" not in _run(args)


def test_the_documented_codegen_commands_fit_compare_and_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, humaneval_file: Callable[..., Path]
) -> None:
    monkeypatch.chdir(tmp_path)
    # 10 problems, 3 of them the held-out test split.
    humaneval_file(tmp_path / "HumanEval.jsonl.gz", 10, prefix="Tiny")
    commands = documented_commands("codegen.md")
    assert [c[:2] for c in commands] == [
        ["codegen", "run"],
        ["sim", "fit"],
        ["sim", "compare"],
        ["codegen", "run"],
    ]
    outputs = [_run(c) for c in commands]
    profile = FittedProfile.load("codegen-profile.yaml")
    assert profile.domain == "codegen" and profile.run == "cg-fit"
    assert "fix_rate" in outputs[1].splitlines()[-2]  # the defaults kept, named
    assert "codegen: test / zero-shot" in outputs[2] and "codegen: test / none" in outputs[2]
    with Store.open("runs/cg-twin") as store:
        debates = store.records("codegen_problem")
    assert {d["condition"] for d in debates} == {"zero-shot", "none"}
    fitted = profile.groups["sim"]
    assert all(d["sim_params"]["judge_error_rate"] == fitted["judge_error_rate"] for d in debates)


def test_codegen_compare_as_json(tmp_path: Path, humaneval_file: Callable[..., Path]) -> None:
    problems = humaneval_file(tmp_path / "he.jsonl.gz", 20, prefix="Tiny")
    run_dir = tmp_path / "cg"
    config = tmp_path / "cg.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "problems": str(problems),
                "execution": "simulated",
                "conditions": ["zero-shot", "none"],
                "repeats": 2,
            }
        )
    )
    _run(["codegen", "run", str(config), "-o", str(run_dir)])
    compare = json.loads(
        _run(["sim", "compare", str(run_dir), "--json", "--resamples", "200"])
    )  # no --profile: fitted from the run on the spot
    assert compare["domain"] == "codegen"
    assert [(t["split"], t["condition"]) for t in compare["tables"]] == [
        ("test", "zero-shot"),
        ("test", "none"),
    ]
    for table in compare["tables"]:
        assert [r["metric"] for r in table["rows"]] == ["Pass@1", "Interventions"]
        for row in table["rows"]:
            assert row["n_real"] == row["n_simulated"] == 6  # 30% of 20, repeats averaged


def _one_line_exit_2(args: list[str], match: str) -> None:
    result = RUNNER.invoke(app, args)
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and match in lines[0], result.stderr


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    nothing = tmp_path / "nothing"
    nothing.mkdir()
    for command in ("fit", "compare"):
        _one_line_exit_2(["sim", command, str(nothing)], "no results.sqlite in")
    empty = tmp_path / "empty"
    Store.open(empty, create=True).close()  # a run that never stored a record
    for command in ("fit", "compare"):
        _one_line_exit_2(
            ["sim", command, str(empty)],
            "holds no consensus, WhoDunit, GovSim or CodeGen results to fit (it has: nothing)",
        )
    # A GovSim run compared with a CodeGen profile.
    run_dir = tmp_path / "gs"
    _run(["govsim", "run", "--set", "split=generated", "--set", "n_games=2", "-o", str(run_dir)])
    wrong = tmp_path / "cg.yaml"
    FittedProfile(
        domain="codegen", run="x", run_simulated=True, groups={"sim": {}}, sources={}
    ).save(wrong)
    _one_line_exit_2(
        ["sim", "compare", str(run_dir), "--profile", str(wrong)],
        "the profile was fitted on a codegen run;",
    )
