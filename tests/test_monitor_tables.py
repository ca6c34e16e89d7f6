"""scripts/monitor_tables.py: the docs' monitor tables, their markers and quotes (on made-up
games and one tiny pipeline; the full regeneration is the script's own run)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "monitor_tables.py"
DOCS = SCRIPT.parent.parent / "docs" / "monitor.md"


@pytest.fixture(scope="module")
def mt() -> ModuleType:
    spec = importlib.util.spec_from_file_location("monitor_tables", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["monitor_tables"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


#: Successful test games (of 10) per condition: every claim of the ``seeds`` prose holds.
SUCCESSES = {
    "none": 7,
    "monitor-1": 9,
    "random-1": 6,
    "monitor-2": 10,
    "resample-1": 8,
    "turn-only-1": 8,
}


def _games(successes: dict[str, int], n: int = 10, repeats: int = 2) -> list[dict[str, Any]]:
    return [
        {
            "kind": "monitor_game",
            "split": "test",
            "game_id": f"g{i}",
            "repeat": r,
            "condition": condition,
            "success": i < k,
            "accused": True,
            "total_turns": 10 if condition == "none" else 13,
            "resets": 0 if condition == "none" else 1,
            "resamples": 0,
            "simulated": True,
        }
        for condition, k in successes.items()
        for i in range(n)
        for r in range(repeats)
    ]


def _results(mt: ModuleType, successes: dict[str, int] = SUCCESSES) -> Any:
    outcome = {
        seed: mt.Outcome(
            games=_games(successes),
            grid={"accuser": [0.07, 0.09]},
            train_games=8,
            validation_games=4,
        )
        for seed in mt.TABLE_SEEDS
    }
    return mt.Results({mt.Pipeline(seed): o for seed, o in outcome.items()})


def _doc(mt: ModuleType, inside: str = "old") -> str:
    return (
        f"# Monitors\n\nbefore\n\n{mt.begin('seeds')}\n\n{inside}\n\n{mt.end('seeds')}\n\nafter\n"
    )


def test_the_seed_table_has_the_docs_header_and_its_rows_and_prose(mt: ModuleType) -> None:
    claims = mt.Claims()
    lines = mt.seeds_block(_results(mt), claims)
    assert claims.broken == []
    header = next(line for line in lines if line.startswith("| split seed"))
    assert header in DOCS.read_text(encoding="utf-8")  # the docs' current columns
    assert "| 0 | 70.0 | 90.0 | 60.0 | 100.0 | 80.0 | 1.30 |" in lines
    text = " ".join(lines)
    assert "One reset gains +20.0 points over no intervention and +30.0 over the random" in text
    assert "a monitor of the turn count alone gains +10.0 / +10.0 / +10.0 points" in text
    assert "8 train / 4 validation games" in text
    assert all(len(line) <= 95 for line in lines if not line.startswith("|"))


def test_a_claim_the_numbers_no_longer_bear_out_is_reported(mt: ModuleType) -> None:
    claims = mt.Claims()
    mt.seeds_block(_results(mt, {**SUCCESSES, "monitor-2": 8}), claims)
    assert claims.broken == ["a second reset adds a little more (every seed)"]


def test_some_seeds_give_the_table_rows_only(mt: ModuleType) -> None:
    results = _results(mt)
    partial = mt.Results({p: o for p, o in results.outcomes.items() if p.seed == 1})
    lines = mt.seeds_block(partial, mt.Claims())
    assert lines[0].startswith("| split seed") and len(lines) == 3


def test_negative_numbers_are_written_with_a_minus_sign(mt: ModuleType) -> None:
    games = _games({"none": 9, "monitor-1": 4})
    d = mt.Outcome(games=games, grid={}, train_games=1, validation_games=1).diff(
        "monitor-1", "none"
    )
    assert mt.points(d) == "−50.0"
    assert mt.interval(d).startswith("−50.0 [−") and "-" not in mt.interval(d)
    assert mt.span([-0.84, 2.46]) == "−0.8 to +2.5"
    assert mt.span([5.04, 4.96]) == "+5.0"


def test_words_for_seeds_and_shares(mt: ModuleType) -> None:
    assert mt.seed_list([0]) == "seed 0"
    assert mt.seed_list([1, 2]) == "seeds 1 and 2"
    assert mt.seed_list([0, 1, 2]) == "seeds 0, 1 and 2"
    assert mt.fraction_words(5.83 / 9.72) == "three fifths"
    assert mt.fraction_words(0.5) == "half"
    assert mt.fraction_words(0.34) == "one third"
    with pytest.raises(ValueError):
        mt.fraction_words(1.2)


def test_a_wrapped_line_never_starts_a_list(mt: ModuleType) -> None:
    text = "x" * 90 + " 1. and " + "y" * 90 + " - z"
    lines = mt.wrap(text, width=95)
    assert all(not line.startswith(("1.", "- ")) for line in lines)
    assert mt.wrap("a b c", first="- ", rest="  ") == ["- a b c"]


def test_a_block_is_replaced_between_its_markers_only(mt: ModuleType) -> None:
    text = _doc(mt)
    updated = mt.update(text, {"seeds": "| new |"}, {})
    assert updated == _doc(mt, "| new |")
    assert mt.block_text(updated, "seeds").strip() == "| new |"
    with pytest.raises(SystemExit, match="markers"):
        mt.update("no markers", {"seeds": "x"}, {})


def test_a_quote_gets_its_numbers_and_keeps_its_line_breaks(mt: ModuleType) -> None:
    quote = mt.Quote("joint", "gained {a} points and then {b} more:", lambda r, c: {})
    text = "It gained +9.7 / +1.0\n  points and then\n  +3 more: fine."
    assert mt.apply_quote(text, quote, {"a": "+9.8 / +1.0", "b": "+4"}) == (
        "It gained +9.8 / +1.0\n  points and then\n  +4 more: fine."
    )
    with pytest.raises(SystemExit, match="QUOTES"):
        mt.apply_quote("rewritten", quote, {"a": "", "b": ""})


def test_the_docs_hold_every_block_and_quote(mt: ModuleType) -> None:
    text = DOCS.read_text(encoding="utf-8")
    for name in mt.BLOCKS:
        assert mt.block_text(text, name).strip()
    for quote in mt.QUOTES:
        values = {name: "X" for name in mt.re.compile(mt._pattern(quote.template)).groupindex}
        assert "X" in mt.apply_quote(text, quote, values)


def test_write_then_check(mt: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    doc = tmp_path / "monitor.md"
    doc.write_text(_doc(mt), encoding="utf-8")
    monkeypatch.setattr(mt, "DOC", doc)
    monkeypatch.setattr(mt, "run_plan", lambda *a, **k: _results(mt))
    assert mt.main(["--only", "seeds", "--check"]) == 1  # stale
    assert mt.main(["--only", "seeds"]) == 0
    written = doc.read_text(encoding="utf-8")
    assert "| 4 | 70.0 | 90.0 |" in written and written.endswith("after\n")
    assert mt.main(["--only", "seeds", "--check"]) == 0
    assert mt.main(["--only", "seeds", "--seeds", "0", "--check"]) == 0
    doc.write_text(written.replace("| 0 | 70.0", "| 0 | 70.1"), encoding="utf-8")
    assert mt.main(["--only", "seeds", "--seeds", "0", "--check"]) == 1
    with pytest.raises(SystemExit):
        mt.main(["--only", "seeds", "--seeds", "0"])  # part of the seeds writes nothing


def test_broken_claims_write_nothing(
    mt: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = tmp_path / "monitor.md"
    doc.write_text(_doc(mt), encoding="utf-8")
    monkeypatch.setattr(mt, "DOC", doc)
    broken = {**SUCCESSES, "resample-1": 9}
    monkeypatch.setattr(mt, "run_plan", lambda *a, **k: _results(mt, broken))
    assert mt.main(["--only", "seeds"]) == 1
    assert doc.read_text(encoding="utf-8") == _doc(mt)


def test_the_plan_runs_each_pipeline_once_with_every_condition_it_needs(mt: ModuleType) -> None:
    needs = mt.plan(mt.PARTS)
    default0 = needs[mt.Pipeline(0)]
    assert default0 == set(mt.CONDITIONS)  # the ablations need all; the others share it
    assert needs[mt.Pipeline(4)] == set(mt.TABLE_CONDITIONS)
    assert mt.Pipeline(0, ("sim.fault_signal=0",)) in needs
    assert mt.Pipeline(0, joint=True) in needs
    assert len(needs) == 5 + 3 + 6 * 3 + 2 + 3
    assert set(mt.plan(["ablations"], seeds=[1])) == {
        mt.Pipeline(1),
        mt.Pipeline(1, ("sim.fault_signal=0",)),
    }


def test_a_tiny_pipeline_runs_in_process(mt: ModuleType) -> None:
    sizes = ("n_train=40", "n_validation=20", "n_test=3")
    outcome = mt.run_pipeline(mt.Pipeline(0, sizes), ["none", "monitor-1", "turn-only-1"])
    assert outcome.test_games() == 3
    assert {g["condition"] for g in outcome.games} == {"none", "monitor-1", "turn-only-1"}
    assert len(outcome.games) == 3 * 3 * mt.REPEATS
    assert (outcome.train_games, outcome.validation_games) == (40, 20)
    assert set(outcome.grid) == {"accuser", "intel"}
    assert not any("transcript" in g for g in outcome.games)
    assert outcome.features_add is not None


def test_a_paragraph_with_the_same_words_keeps_the_docs_line_breaks(mt: ModuleType) -> None:
    old = "A gain of +9.7\npoints, by hand.\n\n| 1 |\n|---|\n| 2 |"
    kept = mt.keep_wrapping(old, "A gain of +9.7 points,\nby hand.\n\n| 1 |\n|---|\n| 2 |")
    assert kept == old
    changed = mt.keep_wrapping(old, "A gain of +9.8 points,\nby hand.\n\n| 1 |\n|---|\n| 2 |")
    assert changed.startswith("A gain of +9.8 points,\nby hand.")
    assert mt.keep_wrapping("| 1 |  | 2 |", "| 1 |\n| 2 |") == "| 1 |\n| 2 |"


def test_a_quote_field_does_not_reach_into_another_sentence(mt: ModuleType) -> None:
    quote = mt.Quote("joint", "Asym ({a} runs of {b} games)", lambda r, c: {})
    text = "Asym (see below). Later: Asym (2 runs of 180 games)."
    assert mt.apply_quote(text, quote, {"a": "3", "b": "90"}) == (
        "Asym (see below). Later: Asym (3 runs of 90 games)."
    )


def test_some_seeds_need_a_table_to_check(mt: ModuleType) -> None:
    with pytest.raises(SystemExit, match="rows of the tables"):
        mt.main(["--only", "joint", "--seeds", "0", "--check"])
