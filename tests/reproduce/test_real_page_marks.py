"""The real WhoDunit page marks the paper's gains, counts the ``logprobs`` stage and words its
cache hits as what they are; the committed page is what the generator writes for its numbers."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import yaml

from byzllm.experiments.monitor.config import MonitorExperimentConfig
from byzllm.reproduce import REPRODUCTIONS, config_path
from byzllm.reproduce.real_page import RealRun, write_real_monitor_report

PAGE = Path(__file__).resolve().parents[2] / "docs" / "results" / "ra-fig4-real.md"

#: The committed run's test games: culprit per game, and the 6 games whose reset changed the
#: accused character (game -> character accused by the monitored game).
CULPRITS = [int(c) for c in "321131231132111322232121131223"]
CHANGED = {0: 3, 1: 2, 2: 2, 3: 2, 5: 2, 6: 3}  # 2 losses -> wins, 3 wins -> losses, 1 loss kept


def _monitored(i: int) -> tuple[int, int, int]:
    """(turns, resets, cache hits) of monitored test game ``i``: 23 games reset (41 resets,
    220 turns); the other 7 play as no intervention, every request a hit."""
    if i >= 23:
        return 5, 0, 5
    return 9 if i < 10 else 10, 2 if i < 18 else 1, 3 if i < 19 else 2


def _config() -> MonitorExperimentConfig:
    text = config_path(REPRODUCTIONS["ra-fig4"].real_config or "").read_text()
    return MonitorExperimentConfig.model_validate(yaml.safe_load(text))


def _game(
    game_id: str,
    condition: str,
    *,
    success: bool,
    accused: int = 1,
    turns: int = 5,
    requests: tuple[int, int] = (5, 0),
    split: str = "test",
    logprobs: dict[str, int] | None = None,
) -> dict[str, Any]:
    parse: dict[str, Any] = {"move": {"calls": turns, "fallbacks": 0}}
    if logprobs is not None:
        parse["logprobs"] = logprobs
    return {
        "split": split, "condition": condition, "game_id": game_id, "repeat": 0,
        "success": success, "accused": True, "total_turns": turns, "resets": 0,
        "resamples": 0, "parse_failures": 0, "parse": parse, "simulated": False,
        "requests": {"requests": requests[0], "cached": requests[1]},
        "transcript": [{"action": json.dumps({"kind": "accuse", "character": accused})}],
    }  # fmt: skip


def _committed_games(**kw: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Test and collect games with the committed page's counts: no intervention 12 of 30
    (its Accuser always names character 1), the monitor 11 of 30, random as no intervention;
    90 + 150 + 150 + 255 = 645 turns, 395 requests and 250 cache hits."""
    test: list[dict[str, Any]] = []
    for i, culprit in enumerate(CULPRITS):
        gid = f"asym-test-{i:04d}"
        test.append(_game(gid, "none", success=culprit == 1, **kw))
        test.append(_game(gid, "random-1", success=culprit == 1, requests=(0, 5), **kw))
        accused = CHANGED.get(i, 1)
        turns, resets, hits = _monitored(i)
        won, sent = accused == culprit, (turns - hits, hits)
        monitored = _game(gid, "monitor-1", success=won, accused=accused, turns=turns, **kw)
        monitored["resets"] = resets
        monitored["requests"] = {"requests": sent[0], "cached": sent[1]}
        test.append(monitored)
    collected = []
    for i in range(18):
        split = "train" if i < 12 else "validation"
        collected.append(_game(f"c{i}", "none", success=i in (2, 12, 14), split=split, **kw))
    return test, collected


def _render(tmp_path: Path, games: list[dict[str, Any]], collected: list[dict[str, Any]]) -> str:
    tmp_path.mkdir(parents=True, exist_ok=True)
    cache = tmp_path / "responses.sqlite"
    with sqlite3.connect(cache) as conn:
        conn.execute("CREATE TABLE completions (key TEXT PRIMARY KEY, value TEXT, created_at REAL)")
        # 395 completions, 143,279 prompt and 17,046 completion tokens in all.
        usage = [
            {"input_tokens": 362 + (i < 289), "output_tokens": 43 + (i < 61)} for i in range(395)
        ]
        rows = [(str(i), json.dumps({"usage": u})) for i, u in enumerate(usage)]
        conn.executemany("INSERT INTO completions VALUES (?, ?, 0)", rows)
    selections = [
        SimpleNamespace(
            role="accuser", features=("kurtosis",), degree=1, threshold=0.07, gain=1 / 9,
            base_rate=1 / 3, n_train_turns=36,
        ),
        SimpleNamespace(
            role="intel", features=("entropy",), degree=1, threshold=0.06, gain=1 / 18,
            base_rate=1 / 3, n_train_turns=24,
        ),
    ]  # fmt: skip
    run = RealRun(
        REPRODUCTIONS["ra-fig4"], _config(), tmp_path, 18.0,
        "byzllm reproduce ra-fig4 --real qwen0.5b -j 2",
    )  # fmt: skip
    return write_real_monitor_report(
        run,
        games=games,
        collected=collected,
        selections=selections,
        controls=[],
        random_probabilities={"accuser": 0.0, "intel": 0.0},
    )


def test_the_committed_page_is_what_the_generator_writes_for_its_numbers(tmp_path: Path) -> None:
    test, collected = _committed_games()
    text = _render(tmp_path, test, collected)
    committed = PAGE.read_text()
    generated = committed[: committed.index("## How this run was made")]
    assert text == generated.rstrip("\n") + "\n"


def test_paper_gains_outside_the_interval_are_marked(tmp_path: Path) -> None:
    test, collected = _committed_games()
    text = _render(tmp_path, test, collected)
    assert "| monitor-1 − none | -3.3 | [-16.7, +10.0] | 30 |" in text
    # +10.3 and +10.6 lie above +10.0; +6.1 inside.
    assert (
        "(§5, Fig. 4, 10 suspects; ✗: outside our interval of monitor-1 − none): "
        "GPT-4o +6.1, Llama-3.1-70B +10.6 ✗, Qwen-2.5-72B +10.3 ✗." in text
    )


def test_paper_gains_inside_the_interval_are_not_marked(tmp_path: Path) -> None:
    # One game of ten turned around: +10.0 [+0.0, +30.0] holds all three of the paper's gains.
    test = []
    for i in range(10):
        test.append(_game(f"g{i}", "none", success=False))
        test.append(_game(f"g{i}", "monitor-1", success=i == 0))
    text = _render(tmp_path, test, [])
    assert "| monitor-1 − none | +10.0 | [+0.0, +30.0] | 10 |" in text
    assert (
        "(§5, Fig. 4, 10 suspects; ✗: outside our interval of monitor-1 − none): "
        "GPT-4o +6.1, Llama-3.1-70B +10.6, Qwen-2.5-72B +10.3." in text
    )


def test_the_gains_are_unmarked_without_a_monitor_comparison(tmp_path: Path) -> None:
    text = _render(tmp_path, [_game("g0", "none", success=True)], [])
    assert "(§5, Fig. 4, 10 suspects): GPT-4o +6.1, Llama-3.1-70B +10.6, Qwen-2.5-72B +10.3." in (
        text
    )


def test_the_logprobs_stage_is_on_the_page(tmp_path: Path) -> None:
    test, collected = _committed_games(logprobs={"calls": 5, "fallbacks": 5})
    text = _render(tmp_path, test, collected)
    # 108 games of 5 turns read each (the counts given), every one without log-probabilities.
    assert (
        "Valid moves the monitor read 540, without log-probabilities at their decision "
        "positions 540 (100.0%) (the monitor reads those as no uncertainty)." in text
    )
    some = [*test[:3], *(g | {"parse": {"move": g["parse"]["move"]}} for g in test[3:])]
    text = _render(tmp_path / "some", some, [])
    assert "Valid moves the monitor read 15 (in the 3 of 90 games that count them)" in text
    assert "positions 15 (100.0%)" in text


def test_records_without_the_logprobs_stage_are_said_not_to_count_it(tmp_path: Path) -> None:
    test, collected = _committed_games()
    text = _render(tmp_path, test, collected)
    assert (
        "Turns without log-probabilities at their decision positions (the monitor reads them "
        "as no uncertainty): not counted in these games' records." in text
    )
    assert "Valid moves the monitor read" not in text


def test_cache_hits_are_not_explained_as_replayed_turns(tmp_path: Path) -> None:
    # The shipped config: a reset does not rewind the game clock, so replayed turns are new
    # requests; the hits are turns a condition plays exactly as another did.
    test, collected = _committed_games()
    text = _render(tmp_path, test, collected)
    assert "a reset replays before it diverges" not in text
    assert "Model requests 395 (and 250 answered by the response cache: requests identical" in text
    assert (
        "such as those before a monitor's first reset or every turn of a condition that never "
        "resets);" in text
    )


def test_a_cell_without_an_interval_is_marked_only_when_it_differs() -> None:
    """With no interval (too few questions), the real SAC page marked every cell ✗, even one
    equal to the paper's number, which the other pages (Markdown gaps, view.html) count as
    agreeing: one rule now (``paper_within``)."""
    from byzllm.reproduce.real_page import _cell

    assert _cell({"IAA": 90.0, "IAA_paper": 90.0}, "IAA") == "90.0 / 90"
    assert _cell({"IAA": 80.0, "IAA_paper": 90.0}, "IAA") == "80.0 / 90 ✗"
    inside = {"IAA": 80.0, "IAA_low": 70.0, "IAA_high": 95.0, "IAA_paper": 90.0}
    assert _cell(inside, "IAA") == "80.0 [70.0, 95.0] / 90"
    assert _cell({**inside, "IAA_high": 85.0}, "IAA") == "80.0 [70.0, 85.0] / 90 ✗"
