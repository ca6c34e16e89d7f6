"""`byzllm whodunit generate | play | run | report`."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from typer.testing import CliRunner

from byzllm.agents.whodunit import AgentTurn, AgentView, WhoDunitAction
from byzllm.cli import app
from byzllm.envs.whodunit import WhoDunitGame, check_game

runner = CliRunner()


def test_generate_sym(tmp_path: Path) -> None:
    out = tmp_path / "games.jsonl"
    res = runner.invoke(
        app,
        ["whodunit", "generate", "--variant", "sym", "-n", "50", "--seed", "1", "--out", str(out)],
    )
    assert res.exit_code == 0, res.output
    lines = out.read_text().splitlines()
    assert len(lines) == 50
    first = json.loads(lines[0])
    assert isinstance(first["suspects"], list) and isinstance(first["suspects"][0], dict)
    assert isinstance(first["culprit"], int)
    assert len(first["facts"]) == 3 and len(first["facts"][0][0]) == 2
    for line in lines:
        check_game(WhoDunitGame.model_validate_json(line))
    again = tmp_path / "again.jsonl"
    runner.invoke(
        app,
        [
            "whodunit",
            "generate",
            "--variant",
            "sym",
            "-n",
            "50",
            "--seed",
            "1",
            "--out",
            str(again),
        ],
    )
    assert again.read_text() == out.read_text()


def test_generate_split_and_errors(tmp_path: Path) -> None:
    out = tmp_path / "val.jsonl"
    res = runner.invoke(app, ["whodunit", "generate", "--split", "validation", "--out", str(out)])
    assert res.exit_code == 0 and len(out.read_text().splitlines()) == 90
    res = runner.invoke(app, ["whodunit", "generate", "--variant", "nope", "--out", str(out)])
    assert res.exit_code == 2 and "error:" in res.output
    res = runner.invoke(app, ["whodunit", "generate", "--split", "dev", "--out", str(out)])
    assert res.exit_code == 2
    res = runner.invoke(app, ["whodunit", "generate", "--suspects", "5000", "--out", str(out)])
    assert res.exit_code == 2 and "Traceback" not in res.output


def test_play_prints_a_transcript() -> None:
    res = runner.invoke(app, ["whodunit", "play", "--variant", "asym", "--seed", "3"])
    assert res.exit_code == 0, res.output
    assert "simulated" in res.output and ("SUCCESS" in res.output or "FAILURE" in res.output)
    assert "Agent Beth" in res.output
    res = runner.invoke(app, ["whodunit", "play", "--variant", "sym", "--json"])
    assert res.exit_code == 0
    data = json.loads(res.output)
    assert data["variant"] == "sym" and data["simulated"] is True and data["turns"]


class _Scripted:
    """An agent that plays a fixed list of turns (then passes)."""

    def __init__(self, name: str, turns: list[AgentTurn]) -> None:
        self.name = name
        self.turns = list(turns)

    async def act(self, view: AgentView, rng: random.Random) -> AgentTurn:
        return self.turns.pop(0) if self.turns else AgentTurn(action=WhoDunitAction(kind="pass"))


def test_play_labels_a_refused_move_invalid_and_a_parse_fall_back_fallback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An action the rules refuse was replaced by the pass and its turn labelled "fallback",
    as a reply with no action is: the note could never say "invalid"."""
    import byzllm.envs.whodunit as whodunit

    def scripted(game: WhoDunitGame) -> list[_Scripted]:
        accuser = [
            AgentTurn(action=WhoDunitAction(kind="share", fact=1)),  # not an Accuser's move
            AgentTurn(action=WhoDunitAction(kind="accuse", character=1)),
        ]
        intel = [AgentTurn(action=WhoDunitAction(kind="pass"), fallback=True, parse_errors=["x"])]
        return [_Scripted("accuser", accuser), _Scripted("intel", intel)]

    monkeypatch.setattr(whodunit, "simulated_agents", scripted)
    res = runner.invoke(app, ["whodunit", "play", "--variant", "asym", "--seed", "3"])
    assert res.exit_code == 0, res.output
    lines = [line for line in res.output.splitlines() if line.lstrip()[:1].isdigit()]
    assert "(invalid)" in lines[0] and "fallback" not in lines[0]
    assert "(fallback)" in lines[1] and "invalid" not in lines[1]
    assert "invalid" not in lines[2] and "fallback" not in lines[2]


def test_run_then_report(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    args = [
        "whodunit",
        "run",
        "-o",
        str(run_dir),
        "--set",
        "n_games=6",
        "--set",
        "repeats=2",
        "--set",
        "split=validation",
    ]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["whodunit", "report", str(run_dir), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    row = data["rows"][0]
    assert data["simulated"] is True and row["simulated"] is True
    assert row["games"] == 12 and row["runs"] == 2 and 0 <= row["success_rate"] <= 1
    res = runner.invoke(app, ["whodunit", "report", str(run_dir)])
    assert res.exit_code == 0 and "WhoDunitEnv" in res.output and "simulated" in res.output
    # Rerunning resumes: nothing left to do.
    res = runner.invoke(app, args)
    assert res.exit_code == 0


def test_run_rejects_bad_config(tmp_path: Path) -> None:
    res = runner.invoke(app, ["whodunit", "run", "-o", str(tmp_path / "r"), "--set", "bogus=1"])
    assert res.exit_code == 2 and "Traceback" not in res.output
    res = runner.invoke(
        app,
        ["whodunit", "run", "-o", str(tmp_path / "r"), "--set", "agents=llm", "--set", "n_games=1"],
    )
    assert res.exit_code != 0


def test_report_refuses_a_run_without_games(tmp_path: Path) -> None:
    """A consensus run is not an empty WhoDunit report (it was: exit 0, no rows)."""
    run_dir = tmp_path / "consensus"
    sets = ["--set", "dataset.n=1", "--set", "protocols=[sac]", "--set", "topologies=[complete]"]
    made = runner.invoke(app, ["consensus", "run", *sets, "-o", str(run_dir)])
    assert made.exit_code == 0, made.output
    result = runner.invoke(app, ["whodunit", "report", str(run_dir), "--json"])
    assert result.exit_code == 2 and "holds no WhoDunit games" in result.stderr
    assert json.loads(result.stdout)["status"] == "error"
