"""The page of a real-model WhoDunit reproduction (``reproduce ra-fig4 --real``)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import yaml

from byzllm.experiments.monitor.config import MonitorExperimentConfig
from byzllm.experiments.monitor.environments import get_environment
from byzllm.reproduce import REPRODUCTIONS, config_path
from byzllm.reproduce.real_page import (
    RealRun,
    _cache_tokens,
    accused_character,
    write_real_monitor_report,
)


def _real_config() -> MonitorExperimentConfig:
    text = config_path(REPRODUCTIONS["ra-fig4"].real_config or "").read_text()
    return MonitorExperimentConfig.model_validate(yaml.safe_load(text))


def _game(game: int, condition: str, success: bool, **kw: Any) -> dict[str, Any]:
    return {
        "split": "test", "condition": condition, "game_id": f"g{game}", "repeat": 0,
        "success": success, "accused": True, "total_turns": 8,
        "transcript": [
            {"turn": 7, "role": "accuser", "action": '{"kind":"request_broad","action":1}'},
            {"turn": 8, "role": "accuser", "action": '{"kind":"accuse","action":3,"character":1}'},
        ],
        "resets": 1 if condition != "none" else 0, "resamples": 0, "parse_failures": 1,
        "parse": {"move": {"calls": 8, "fallbacks": 0}},
        "requests": {"requests": 8, "cached": 0}, "simulated": False, **kw,
    }  # fmt: skip


def test_the_real_config_plays_small_boards_with_disjoint_splits() -> None:
    cfg = _real_config()
    assert (cfg.agents, cfg.decoding, cfg.prompt, cfg.final_move) == (
        "llm", "schema", "compact", "accuse",
    )  # fmt: skip
    env = get_environment("whodunit")
    splits = {s: env.instances(cfg, s) for s in ("train", "validation", "test")}
    assert [len(splits[s]) for s in ("train", "validation", "test")] == [12, 6, 30]
    culprits = [
        tuple(sorted(g.culprit_description.items())) for games in splits.values() for g in games
    ]
    assert len(set(culprits)) == len(culprits)  # no culprit shared between (or within) splits


def test_the_page_reports_conditions_gains_monitors_health_and_cost(tmp_path: Path) -> None:
    cache = tmp_path / "responses.sqlite"
    with sqlite3.connect(cache) as conn:
        conn.execute("CREATE TABLE completions (key TEXT PRIMARY KEY, value TEXT, created_at REAL)")
        usage = {"usage": {"input_tokens": 300, "output_tokens": 40}}
        conn.executemany(
            "INSERT INTO completions VALUES (?, ?, 0)",
            [(str(i), json.dumps(usage)) for i in range(3)],
        )
    assert _cache_tokens(cache) == (3, 900, 120)
    assert _cache_tokens(tmp_path / "none.sqlite") is None
    # none: 1 of 4 right; the monitor turns game 2 around; random changes nothing.
    games = [_game(g, "none", g == 0) for g in range(4)]
    games += [_game(g, "monitor-1", g in (0, 2)) for g in range(4)]
    games += [_game(g, "random-1", g == 0) for g in range(4)]
    collected = [
        {**_game(g, "none", g < 2), "split": "train" if g < 6 else "validation"} for g in range(9)
    ]
    selection = SimpleNamespace(
        role="accuser", features=("entropy", "turn"), degree=2, threshold=0.4, gain=0.05,
        base_rate=0.25, n_train_turns=48,
    )  # fmt: skip
    command = "byzllm reproduce ra-fig4 --real qwen0.5b -n 3 -j 1 -o runs/x"
    run = RealRun(REPRODUCTIONS["ra-fig4"], _real_config(), tmp_path, 120.0, command)
    text = write_real_monitor_report(
        run,
        games=games,
        collected=collected,
        selections=[selection],
        controls=[],
        random_probabilities={"accuser": 0.0, "intel": 0.0},
    )
    assert (tmp_path / "report" / "real.md").read_text() == text
    assert "Whom the test games accused (every condition): character 1: 12." in text
    assert "accuser 0.00, intel 0.00. At 0 it never resets" in text
    assert "| no intervention | 4 | 25.0 [0.0, 75.0] | 4 of 4 | 8.0 | 0.00 |" in text
    assert "| monitor-1 − none | +25.0 |" in text
    assert "| random-1 − none | +0.0 |" in text
    assert "train 6 games (2 successes), validation 3 games (0 successes)" in text
    assert "| accuser | entropy, turn | 2 | 0.40 | +5.0 | 25.0 | 48 |" in text
    assert "Agent turns 168, passed for want of a valid move 0 (0.0%)" in text
    assert "re-prompted 21" in text
    assert "(every condition): character 1: 12." in text
    assert text.startswith("# The rogue-agents paper, Fig. 4, on a real model")
    assert "3 completions, 900 prompt and 120 completion tokens" in text
    # The command that made the run (its -n, -j and folder), not a fixed one.
    assert f"Regenerate: `{command}`" in text


def test_the_regenerate_line_is_the_command_that_ran() -> None:
    from byzllm.cli.reproduce import _Job, _real_command

    job = _Job(REPRODUCTIONS["ra-fig4"], Path("runs/r f"), questions=3, concurrency=2)
    assert _real_command(job, "qwen0.5b") == (
        "byzllm reproduce ra-fig4 --real qwen0.5b -n 3 -j 2 -o 'runs/r f'"
    )


def test_the_accused_character_is_read_from_the_transcript() -> None:
    game = _game(0, "none", False)
    assert accused_character(game) == 1
    game["transcript"] = [*game["transcript"], {"action": "not json {"}]
    assert accused_character(game) == 1  # an unreadable turn is passed over
    assert accused_character({"transcript": game["transcript"][:1]}) is None  # no accusation
    assert accused_character({}) is None
    odd = {"transcript": [{"action": '{"kind": "accuse", "character": true}'}]}
    assert accused_character(odd) is None
