"""A fifth environment, defined here, plugs into byzllm without a change to the library.

The walkthrough of docs/architecture.md ("Adding a fifth environment") in code: a toy relay
game with its state and rules, a simulated agent, a loop that can roll back to the last
irreversible action, a config, records, units and a work function; then the run engine runs
it (concurrently, resumably), the store holds it, a report summarizes it with a bootstrap
interval, ``byzllm runs`` lists and exports it, and ``byzllm view`` draws its page.
Every name it uses from byzllm is public.
"""

from __future__ import annotations

import asyncio
import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field
from typer.testing import CliRunner

from byzllm.cli import app
from byzllm.runs import (
    BOOTSTRAP_METHOD,
    ExperimentConfig,
    Record,
    Store,
    bootstrap_interval,
    load_config,
    make_unit,
    run_units,
)
from byzllm.runs.reports import markdown_table
from byzllm.view import VIEWS, Section, register_view, table_html, write_view

# --- the environment: state, rules, an agent, the loop ---------------------------------------


@dataclass
class RelayState:
    """A baton carried over ``length`` legs; a drop costs the leg, a handover is final."""

    length: int
    leg: int = 0
    drops: int = 0
    history: list[str] = field(default_factory=list)

    def snapshot(self) -> tuple[int, int]:
        return self.leg, len(self.history)

    def rollback(self, snapshot: tuple[int, int]) -> None:
        """Back to ``snapshot`` (the drops stay counted)."""
        self.leg, size = snapshot
        del self.history[size:]


#: Whether an action can be rolled back (an intervention returns to the last irreversible one).
REVERSIBLE: dict[str, bool] = {"run": True, "drop": True, "handover": False}


class SimulatedRunner:
    """The simulated agent: ``drop_rate`` (P(drop) per leg; source: assumption), and no peek
    at the outcome it is meant to predict."""

    def __init__(self, drop_rate: float, seed: int) -> None:
        self.drop_rate = drop_rate
        self.rng = random.Random(seed)

    def act(self, state: RelayState) -> Literal["run", "drop", "handover"]:
        if self.rng.random() < self.drop_rate:
            return "drop"
        return "handover" if state.leg % 2 else "run"


def play(length: int, agent: SimulatedRunner, *, max_turns: int = 50) -> RelayState:
    state = RelayState(length=length)
    checkpoint = state.snapshot()
    for _ in range(max_turns):
        if state.leg >= length:
            break
        action = agent.act(state)
        state.history.append(action)
        if action == "drop":
            state.drops += 1
            state.rollback(checkpoint)  # back to the last irreversible action
            continue
        state.leg += 1
        if not REVERSIBLE[action]:
            checkpoint = state.snapshot()
    return state


# --- the experiment: config, records, units, work --------------------------------------------


class RelayConfig(ExperimentConfig):
    games: int = 12
    length: int = 6
    drop_rates: list[float] = Field(default_factory=lambda: [0.0, 0.3])
    seed: int = 0


class RelayGame(Record):
    kind: ClassVar[str] = "relay_game"
    game: int
    drop_rate: float
    finished: bool
    legs: int
    drops: int
    simulated: bool = True


def expand_units(config: RelayConfig) -> list[Any]:
    return [
        make_unit(
            {"game": g, "drop_rate": rate, "length": config.length, "seed": config.seed},
            label=f"relay g{g} p{rate}",
        )
        for rate in config.drop_rates
        for g in range(config.games)
    ]


async def work(payload: dict[str, Any]) -> list[Record]:
    agent = SimulatedRunner(payload["drop_rate"], seed=payload["seed"] * 1000 + payload["game"])
    state = play(payload["length"], agent)
    return [
        RelayGame(
            game=payload["game"],
            drop_rate=payload["drop_rate"],
            finished=state.leg >= payload["length"],
            legs=state.leg,
            drops=state.drops,
        )
    ]


# --- the report and the page ------------------------------------------------------------------


def report_rows(games: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for rate in sorted({g["drop_rate"] for g in games}):
        finished = [float(g["finished"]) for g in games if g["drop_rate"] == rate]
        interval = bootstrap_interval(finished)
        rows.append(
            {
                "drop_rate": rate,
                "games": len(finished),
                "finished": interval.value,
                "ci_low": interval.low,
                "ci_high": interval.high,
            }
        )
    return rows


def relay_view(store: Store, max_details: int) -> tuple[list[Section], bool, str]:
    games = store.records("relay_game")
    summary = Section("Relay games", table_html(report_rows(games), note=BOOTSTRAP_METHOD))
    return [summary], all(g["simulated"] for g in games), f"relay games ({len(games)})"


# --- the walkthrough ----------------------------------------------------------------------------


def test_a_toy_environment_runs_resumes_reports_exports_and_views(tmp_path: Path) -> None:
    config_file = tmp_path / "relay.yaml"
    config_file.write_text("games: 10\ndrop_rates: [0.0, 0.4]\n", encoding="utf-8")
    config = load_config(config_file, RelayConfig, {"length": 4})
    run_dir = tmp_path / "runs" / "relay"

    # The runner: every unit once, concurrently, each stored the moment it is done.
    summary = asyncio.run(
        run_units(run_dir, expand_units(config), work, config=config, progress=False)
    )
    assert (summary.done, summary.failed) == (20, 0)
    again = asyncio.run(run_units(run_dir, expand_units(config), work, progress=False))
    assert (again.skipped, again.done) == (20, 0)  # a rerun resumes: nothing left to do

    # The store and the report.
    with Store.open(run_dir) as store:
        games = store.records("relay_game")
        assert store.latest_config() == config.model_dump(mode="json")
    rows = report_rows(games)
    assert [r["drop_rate"] for r in rows] == [0.0, 0.4]
    assert rows[0]["finished"] == 1.0 and rows[0]["ci_low"] == rows[0]["ci_high"] == 1.0
    assert rows[1]["ci_low"] <= rows[1]["finished"] <= rows[1]["ci_high"]
    assert "| drop_rate |" in markdown_table(rows, simulated=True)

    # The command line knows nothing of relays and lists and exports the run all the same.
    cli = CliRunner()
    listed = cli.invoke(app, ["runs", "list", str(tmp_path / "runs"), "--json"])
    assert listed.exit_code == 0, listed.output
    assert "relay" in listed.output
    exported = cli.invoke(
        app, ["runs", "export", str(run_dir), "--format", "jsonl", "--out", str(tmp_path / "x")]
    )
    assert exported.exit_code == 0, exported.output
    lines = (tmp_path / "x" / "relay_game.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 20 and json.loads(lines[0])["legs"] >= 0

    # The viewer: every record listed until the domain registers its page; then its page.
    generic = write_view(run_dir, tmp_path / "generic.html").read_text(encoding="utf-8")
    assert "relay_game records" in generic
    register_view("relay_game", relay_view)
    try:
        page = write_view(run_dir).read_text(encoding="utf-8")
    finally:
        VIEWS.pop("relay_game")
    assert "relay games (20)" in page and "Relay games" in page
    assert BOOTSTRAP_METHOD in page and "simulated agents" in page


def test_the_toy_rolls_back_to_its_last_irreversible_action() -> None:
    class Scripted(SimulatedRunner):
        def __init__(self, actions: list[Literal["run", "drop", "handover"]]) -> None:
            super().__init__(0.0, 0)
            self.actions = actions

        def act(self, state: RelayState) -> Literal["run", "drop", "handover"]:
            return self.actions.pop(0)

    state = play(4, Scripted(["run", "handover", "run", "drop", "run", "run"]), max_turns=6)
    # run (leg 1), handover (leg 2, final), run (leg 3): the drop rolls back to leg 2.
    assert (state.leg, state.drops) == (4, 1)
    assert state.history == ["run", "handover", "run", "run"]
