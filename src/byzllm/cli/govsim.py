"""`byzllm govsim`: GovSim fishing: generate, play, run and report games (Piatti et al. 2024;
the rogue-agents paper, §4.1, Table 2).

Simulated fishers by default (results labelled simulated); ``--model``/``--base-url`` (play)
or ``agents: llm`` with ``model`` (run) play the same games with LLM-backed fishers. Monitors
and interventions on GovSim run through ``byzllm monitor`` with ``env: govsim``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from byzllm._files import write_text_atomic

from . import _common as common

__all__ = ["app"]

app = typer.Typer(
    help="GovSim fishing: generate, play, run and report games.", no_args_is_help=True
)

SplitOption = Annotated[
    str, typer.Option("--split", help="train, validation or test (App. D.1) or generated.")
]


@app.command()
def generate(
    split: SplitOption = "test",
    n: Annotated[int, typer.Option("--n", "-n", min=1, help="Games (split generated only).")] = 20,
    seed: Annotated[int, typer.Option("--seed", help="Shuffle / generation seed.")] = 0,
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Write the games as JSON here.", show_default=False),
    ] = None,
    json_output: common.JsonOption = False,
) -> None:
    """List the instances of a split (starting stocks R_0, App. D.1) or generated ones.

    Examples:

        byzllm govsim generate --split train

        byzllm govsim generate --split generated --n 50 -o games.json
    """
    with common.cli_errors():
        import json

        from byzllm.envs.govsim import make_games, make_splits
        from byzllm.errors import InputError

        if split == "generated":
            games = make_games(n, seed=seed)
        elif split in ("train", "validation", "test"):
            games = make_splits(seed=seed).get(split)
        else:
            raise InputError("--split must be train, validation, test or generated")
        rows = [g.model_dump() for g in games]
        if out is not None:
            out.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomic(out, json.dumps(rows, indent=1))
            typer.echo(f"wrote {len(rows)} games to {out}", err=True)
        common.emit_rows(rows, json_output=json_output, title=f"GovSim {split} instances")


@app.command()
def play(
    r0: Annotated[int, typer.Option("--r0", min=10, help="Starting stock (lake capacity).")] = 100,
    seed: Annotated[int, typer.Option("--seed", help="Assignment and fisher seed.")] = 0,
    months: Annotated[int, typer.Option("--months", min=1, help="Season length m.")] = 12,
    model: common.ModelOption = None,
    base_url: common.BaseUrlOption = None,
    max_tokens: Annotated[int, typer.Option("--max-tokens", min=1, help="Per reply.")] = 256,
    json_output: common.JsonOption = False,
) -> None:
    """Play one game and print its transcript (simulated fishers unless --model).

    Examples:

        byzllm govsim play --r0 100 --seed 3

        byzllm govsim play --model openai/gpt-4o-mini --months 3 --json
    """
    with common.cli_errors():
        import asyncio

        from byzllm.envs.govsim import (
            GovSimGame,
            LakeConfig,
            llm_fishers,
            play_game,
            simulated_fishers,
        )
        from byzllm.experiments.govsim import game_record, transcript

        common.require_model(base_url, model)
        lake = LakeConfig(months=months)
        game = GovSimGame(id=f"govsim-play-R{r0}-s{seed}", r0=r0, seed=seed)
        if model:
            fishers: Any = llm_fishers(
                common.checked_model(model, base_url), lake, max_tokens=max_tokens
            )
        else:
            fishers = simulated_fishers(lake, salt=str(seed))
        result = asyncio.run(play_game(game, fishers, config=lake, rng=seed))
        if json_output:
            common.print_json(result)
            return
        record = game_record(
            result, split="play", repeat=0, agents="llm" if model else "simulated", sim=None
        )
        typer.echo(transcript(record.model_dump()))


@app.command()
@common.run_options()
def run(opts: common.RunOptions) -> None:
    """Play a batch of games on the runner (resumable); one record per game goes to the store.

    Examples:

        byzllm govsim run --set split=test --set repeats=3 -o runs/govsim

        byzllm govsim run cfg.yaml --set govsim.sim.greed=0.5

    Config keys: split (train | validation | test | generated), seed, n_games, repeats, agents
    (simulated | llm), govsim (lake: n_fishers, months, collapse_below, utterances,
    assignment; sim: the simulated fishers' parameters; max_tokens, max_reprompts,
    redo_temperature), top_logprobs, and the model keys model, base_url, api_key_env,
    max_concurrency, cache, cache_salt, timeout_s, retry (as every experiment).
    """
    from byzllm.experiments.govsim import GovSimRunConfig, expand_units, work

    opts.run("govsim", GovSimRunConfig, expand_units, work)


@app.command()
def report(
    run_dir: common.RunDirArgument,
    plots: Annotated[
        Path | None, common.folder_option("--plots", "Write stocks.png (stock per month) here.")
    ] = None,
    csv: Annotated[Path | None, common.csv_option("govsim.csv")] = None,
    transcripts: Annotated[
        Path | None,
        common.folder_option("--transcripts", "Write one Markdown transcript per game here."),
    ] = None,
    json_output: common.JsonOption = False,
) -> None:
    """Survival-Rate, Survival-Time and Efficiency of a run, with 95% intervals.

    Intervals are bootstrapped over games; also the parse health (catch replies that fell
    back to 0 tons) and the model requests.

    Examples:

        byzllm govsim report runs/govsim

        byzllm govsim report runs/govsim --plots figs --csv figs --transcripts figs/games
    """
    with common.cli_errors():
        from byzllm.experiments import parse_health, request_health
        from byzllm.experiments.govsim import INTERVAL_NOTE, METRICS, plot_stocks, summary_rows
        from byzllm.experiments.govsim import transcript as render
        from byzllm.experiments.govsim.records import GovSimGameRecord
        from byzllm.runs.reports import write_csv

        games = common.stored_records(
            run_dir, GovSimGameRecord, missing="GovSim games (run `byzllm govsim run`)"
        )
        rows = summary_rows(games)
        health = parse_health.from_records(games)
        requests = request_health.from_records(games)
        simulated = any(r["simulated"] for r in rows)
        written: list[str] = []
        if plots is not None:
            written.append(str(plot_stocks(games, plots / "stocks.png")))
        if csv is not None:
            notes = {"interval_method": INTERVAL_NOTE}
            written.append(
                str(write_csv(rows, csv / "govsim.csv", simulated=simulated, notes=notes))
            )
        if transcripts is not None:
            transcripts.mkdir(parents=True, exist_ok=True)
            for g in games:
                page = transcripts / f"{g['game_id']}-r{g.get('repeat', 0)}.md"
                write_text_atomic(page, render(g))
            written.append(f"{transcripts} ({len(games)} transcripts)")
        shown = rows
        if not json_output:
            keep = (
                "agents",
                "split",
                "games",
                "plays",
                "runs",
                *(label for _, label, _ in METRICS),
                "resets",
            )
            shown = [{k: r[k] for k in keep} for r in rows]
        common.emit_rows(
            shown,
            json_output=json_output,
            title="GovSim fishing",
            simulated=simulated,
            extra={
                "interval_method": INTERVAL_NOTE,
                "parse_health": health.to_json(),
                "request_health": requests.to_json(),
                "written": written,
            },
        )
        if not json_output:
            typer.echo(f"95% CI: {INTERVAL_NOTE}")
            for path in written:
                typer.echo(f"wrote {path}", err=True)
        common.show_parse_health(health, json_output=json_output)
        common.show_request_health(requests, json_output=json_output)
