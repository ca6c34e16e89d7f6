"""GovSim on the runner and through the monitor pipeline (simulated fishers)."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from byzllm.cli import app
from byzllm.errors import InputError
from byzllm.experiments.govsim import GovSimRunConfig, expand_units, summary_rows, work
from byzllm.experiments.monitor import MonitorExperimentConfig, collect_units
from byzllm.experiments.monitor.environments import ENVIRONMENTS, get_environment
from byzllm.runs import Store

RUNNER = CliRunner()


def test_registry_names_both_environments() -> None:
    assert {"whodunit", "govsim"} <= set(ENVIRONMENTS)
    assert [m.label for m in get_environment("govsim").metrics] == [
        "Survival-Rate",
        "Survival-Time",
        "Efficiency",
    ]
    with pytest.raises(InputError):
        get_environment("chess")


def test_units_are_stable_and_records_carry_metrics() -> None:
    cfg = GovSimRunConfig(n_games=3, repeats=2)
    units = expand_units(cfg)
    assert len(units) == 6 and [u.id for u in units] == [u.id for u in expand_units(cfg)]
    assert expand_units(cfg.model_copy(update={"repeats": 3}))[0].id == units[0].id
    records = asyncio.run(work(dict(units[0].payload)))
    rec = records[0].model_dump()
    assert rec["simulated"] and rec["sim_params"]["greed"] == 0.3
    rows = summary_rows([rec])
    assert rows[0]["games"] == 1 and 0.0 <= rows[0]["efficiency"] <= 1.0


def test_govsim_monitor_ids_leave_whodunit_untouched() -> None:
    # The GovSim section has defaults: WhoDunit payloads (and ids) do not mention it.
    unit = collect_units(MonitorExperimentConfig(n_train=1, n_validation=1))[0]
    assert "govsim" not in unit.payload["config"] and "env" not in unit.payload["config"]


def test_a_limited_split_spans_its_starting_stocks() -> None:
    """A split is ordered by R_0: its first ten training lakes were its ten smallest, and
    `reproduce ra-table2 -n 10` trained on lakes that all collapsed."""
    from byzllm.envs.govsim import make_splits
    from byzllm.experiments.monitor.environments import get_environment

    cfg = MonitorExperimentConfig.model_validate({"env": "govsim", "n_train": 10})
    picked = get_environment("govsim").instances(cfg, "train")
    whole = make_splits(cfg.govsim.lake, seed=cfg.seed).train
    assert len(picked) == 10 and picked[0] == whole[0]
    assert max(g.r0 for g in picked) > sorted(g.r0 for g in whole)[len(whole) // 2]


def test_monitor_pipeline_end_to_end(tmp_path: Path) -> None:
    cfg = tmp_path / "mon.yaml"
    cfg.write_text(
        "env: govsim\nn_train: 12\nn_validation: 8\nn_test: 10\nrepeats: 2\ncollect_repeats: 2\n"
        "conditions: [none, monitor-1, monitor-2, random-1, turn-only-1]\n",
        encoding="utf-8",
    )
    collect, evaluate = tmp_path / "c", tmp_path / "e"
    assert RUNNER.invoke(app, ["monitor", "collect", str(cfg), "-o", str(collect)]).exit_code == 0
    r = RUNNER.invoke(app, ["monitor", "train", str(collect)])
    assert r.exit_code == 0, r.output
    r = RUNNER.invoke(
        app,
        [
            "monitor",
            "evaluate",
            str(cfg),
            "-m",
            str(collect / "monitors.json"),
            "-o",
            str(evaluate),
        ],
    )
    assert r.exit_code == 0, r.output
    assert "skipping monitor-2" in r.output
    r = RUNNER.invoke(app, ["monitor", "report", str(evaluate), "--json", "--csv", str(tmp_path)])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout[: r.stdout.rindex("}") + 1])
    assert data["env"] == "govsim" and data["simulated"]
    outcomes = {row["condition"]: row for row in data["outcomes"]}
    assert set(outcomes) == {"none", "monitor-1", "random-1", "turn-only-1"}
    for row in outcomes.values():
        assert row["games"] == 10
        for key in ("survival_rate", "survival_time", "efficiency"):
            assert row[f"{key}_low"] <= row[key] <= row[f"{key}_high"]
    assert outcomes["none"]["interventions_per_game"] == 0.0
    assert (tmp_path / "outcomes.csv").read_text().startswith("results,")
    assert not math.isnan(outcomes["none"]["survival_time"])
    # Fig. 9 counts the shadow monitor's first triggers at the month, the clock it reads.
    fig9 = data["trigger_turns"]
    assert fig9["clock"] == "month"
    months = [*fig9["success"], *fig9["failure"]]
    assert months and all(2 <= m <= 12 for m in months)
    # Each game keeps its lake for the viewer's curve: a stock per month played and one after
    # the last harvest, the month of every decision asked (a trigger's turn finds its month).
    with Store.open(evaluate) as store:
        games = store.records("monitor_game")
    for g in games:
        lake = g["lake"]
        assert len(lake["stocks"]) == g["outcome"]["survival_time"] + 1
        assert lake["stocks"][0] == g["outcome"]["r0"] and lake["collapse_below"] == 5
        assert len(lake["turn_months"]) == g["total_turns"]
        assert lake["turn_months"] == sorted(lake["turn_months"])
        assert all(lake["turn_months"][t["turn"] - 1] >= 2 for t in g["triggers"])
    assert any(g["resets"] for g in games)


def test_govsim_cli_run_report_play(tmp_path: Path) -> None:
    run = tmp_path / "g"
    r = RUNNER.invoke(app, ["govsim", "run", "--set", "n_games=4", "-o", str(run)])
    assert r.exit_code == 0, r.output
    figs = tmp_path / "figs"
    r = RUNNER.invoke(
        app,
        [
            "govsim",
            "report",
            str(run),
            "--plots",
            str(figs),
            "--csv",
            str(figs),
            "--transcripts",
            str(figs / "t"),
        ],
    )
    assert r.exit_code == 0, r.output
    assert "Survival" in r.output and (figs / "stocks.png").stat().st_size > 1000
    assert len(list((figs / "t").glob("*.md"))) == 4
    assert "simulated" in (figs / "govsim.csv").read_text()
    r = RUNNER.invoke(app, ["govsim", "play", "--months", "2"])
    assert r.exit_code == 0 and "Month 1" in r.output


def test_generate_takes_n_as_whodunit_generate_does() -> None:
    for flag in ("-n", "--n"):
        result = RUNNER.invoke(
            app, ["govsim", "generate", "--split", "generated", flag, "3", "--json"]
        )
        assert result.exit_code == 0, result.output
        assert len(json.loads(result.stdout)["rows"]) == 3


def test_empty_meeting_replies_are_counted_as_fall_backs() -> None:
    """An LLM fisher's empty reply was marked on its speech turn but counted nowhere."""
    from byzllm.envs.govsim import GovSimResult, Utterance
    from byzllm.experiments.govsim import catch_counts

    said = [Utterance(month=1, speaker=f"f{k}", text=t) for k, t in enumerate(["5 tons", "", " "])]
    result = GovSimResult.model_construct(
        simulated=False, turns=[], meetings=[said[:2]], undone_meetings=[said[2:]]
    )
    assert catch_counts(result)["utterance"] == {"calls": 3, "fallbacks": 2}
    simulated = GovSimResult.model_construct(simulated=True, turns=[], meetings=[said])
    assert catch_counts(simulated) == {}


def test_the_catch_warning_names_an_amount_above_the_stock() -> None:
    """A model that asks for more than the lake holds falls back to 0 tons; the warning said
    it "wrote no readable amount", blaming the format for a readable, greedy catch."""
    from collections.abc import Sequence

    from byzllm.envs.govsim import GovSimGame, LakeConfig, llm_fishers, play_game
    from byzllm.experiments import parse_health
    from byzllm.experiments.govsim import game_record
    from byzllm.llm import ChatMessage, ChatModel, Completion, GenerateConfig

    class Greedy(ChatModel):
        name = "greedy"

        async def generate(
            self, messages: Sequence[ChatMessage], config: GenerateConfig | None = None
        ) -> Completion:
            if "your turn to speak" in str(messages[-1]["content"]):
                return Completion(text="I propose 5 tons each.")
            return Completion(text="Answer: 500 tons")

    lake = LakeConfig(months=1)
    result = asyncio.run(
        play_game(GovSimGame(id="g", r0=100), llm_fishers(Greedy(), lake), config=lake)
    )
    assert all("more than the 100 tons" in t.errors[-1] for t in result.turns)
    record = game_record(result, split="test", repeat=0, agents="llm", sim=None)
    (warning,) = parse_health.from_records([record.model_dump()]).to_json()["warnings"]
    assert "no readable amount" not in warning
    assert "more than the lake held" in warning
