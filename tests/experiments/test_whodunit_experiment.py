"""Batches on the runner: units, stored records, the report (simulated and LLM-backed)."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from byzllm.experiments.whodunit import (
    WhoDunitRunConfig,
    expand_units,
    report_rows,
    select_games,
    work,
)
from byzllm.runs import Store, run_units
from byzllm.testing import FakeOpenAIServer


def test_units_are_one_per_game_and_repeat() -> None:
    cfg = WhoDunitRunConfig(split="train", n_games=4, repeats=3)
    units = expand_units(cfg)
    assert len(units) == 12 and len({u.id for u in units}) == 12
    assert expand_units(cfg)[0].id == units[0].id  # stable
    assert len(select_games(WhoDunitRunConfig(split="validation"))) == 90
    assert len(select_games(WhoDunitRunConfig(split="generated", n_games=7))) == 7


def test_config_validation() -> None:
    with pytest.raises(ValidationError, match="needs a model"):
        WhoDunitRunConfig(agents="llm")
    with pytest.raises(ValidationError):
        WhoDunitRunConfig.model_validate({"sim": {"hallucination_rate": 2}})


async def test_simulated_records(tmp_path: Path) -> None:
    cfg = WhoDunitRunConfig(split="test", n_games=5, repeats=2)
    summary = await run_units(tmp_path, expand_units(cfg), work, config=cfg, progress=False)
    assert summary.complete
    store = Store.open(tmp_path)
    games = store.records("whodunit_game")
    turns = store.records("whodunit_turn")
    assert len(games) == 10
    assert all(g["simulated"] and g["sim_params"]["rogue_rate"] == 0.25 for g in games)
    assert len(turns) == sum(g["total_turns"] for g in games)
    t = turns[0]
    for key in ("action", "valid", "errors", "remaining_candidates", "distributions", "noise"):
        assert key in t
    rows = report_rows(games)
    assert rows[0]["runs"] == 2 and rows[0]["games"] == 10 and rows[0]["simulated"]
    assert rows[0]["sim_params"] == cfg.sim.model_dump()  # reported with the results


async def test_llm_records_over_http(tmp_path: Path) -> None:
    def script(request: dict[str, Any]) -> str:
        system = request["messages"][0]["content"]
        if "You know the Winner's description" in system:
            return 'Sure. {"thoughts": "guess", "action": 3, "character": 2}'
        return "{}"

    with FakeOpenAIServer(script) as server:
        cfg = WhoDunitRunConfig(
            split="test",
            n_games=3,
            agents="llm",
            model="openai/fake",
            base_url=server.base_url,
            api_key_env=None,
        )
        summary = await run_units(tmp_path, expand_units(cfg), work, config=cfg, progress=False)
    assert summary.complete, summary
    store = Store.open(tmp_path)
    games = store.records("whodunit_game")
    assert len(games) == 3 and not any(g["simulated"] for g in games)
    assert all(g["total_turns"] == 1 and g["accused"] for g in games)
    turns = store.records("whodunit_turn")
    assert all(t["distributions"] for t in turns)
    assert json.dumps(report_rows(games))
    assert report_rows(games)[0]["sim_params"] is None


async def test_models_are_shared_per_event_loop() -> None:
    def settings(salt: str) -> Any:
        cfg = WhoDunitRunConfig(
            agents="llm", model="openai/fake", base_url="http://127.0.0.1:9/v1", api_key_env=None
        )
        return cfg.shared_model(salt=salt)

    first = settings("r0")
    assert settings("r0") is first  # every game of a run reuses one client
    assert settings("r1") is not first  # other settings, another model

    async def elsewhere() -> Any:
        return settings("r0")

    other: list[Any] = []
    thread = threading.Thread(target=lambda: other.append(asyncio.run(elsewhere())))
    thread.start()
    thread.join()
    assert other[0] is not first  # a client is bound to its own event loop


def test_game_intervals_bootstrap_the_statistic_the_report_prints() -> None:
    """Precision is the mean over runs of each run's wins among its accusations: run 0
    accuses once and wins (1.0), run 1 accuses in all ten games and wins one (0.1); the
    report prints 0.55, and the interval, of the same statistic, holds it (the pooled
    interval was [0.0, 0.44]). A game's repeats are one unit, and a rate every game got
    right is not certain."""
    from byzllm.envs.whodunit import summarize_runs
    from byzllm.experiments.whodunit.experiment import load_games
    from byzllm.experiments.whodunit.report import game_intervals

    def game(i: int, repeat: int, accused: bool, success: bool) -> dict[str, Any]:
        return {
            "game_id": f"g{i}", "repeat": repeat, "variant": "asym", "agents": "sim",
            "n_suspects": 5, "success": success, "accused": accused, "culprit": 1,
            "total_turns": 4 + i,
        }  # fmt: skip

    games = [game(i, 0, i == 0, i == 0) for i in range(10)]
    games += [game(i, 1, True, i == 0) for i in range(10)]
    (runs,) = load_games(games).values()
    assert summarize_runs(runs).precision == pytest.approx(0.55)
    low, high = game_intervals(games)["precision"]
    assert low <= 0.55 <= high
    # Ten games, each won in both repeats: ten units, Wilson's [10 / (10 + z²), 1].
    won = [game(i, r, True, True) for i in range(10) for r in range(2)]
    assert game_intervals(won)["success_rate"] == (pytest.approx(10 / 13.841459), 1.0)
    # Repeats that copy each other change nothing.
    mixed = [game(i, 0, True, i % 3 == 0) for i in range(10)]
    copied = mixed + [{**g, "repeat": 1} for g in mixed]
    for name, bounds in game_intervals(mixed).items():
        assert game_intervals(copied)[name] == pytest.approx(bounds)
