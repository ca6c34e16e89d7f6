"""`byzllm whodunit`: WhoDunitEnv: generate, play and run games (the rogue-agents paper, §3,
§4.1)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from byzllm._files import atomic_path

from . import _common as common

#: What the report's ± is (the default run has one repeat: then it is across games).
_SE_CAPTION = "± standard error over runs (with one run: across games)"

__all__ = ["app"]

app = typer.Typer(help="WhoDunitEnv: generate, play and run games.", no_args_is_help=True)

VariantOption = Annotated[
    str, typer.Option("--variant", "-v", help="asym (Accuser + Intel) or sym (equal players).")
]
SuspectsOption = Annotated[
    int | None, common.value_option("--suspects", "Suspect count [default: asym 10, sym 20].")
]
AttributesOption = Annotated[
    int | None, common.value_option("--attributes", "Attribute count [default: asym 10, sym 20].")
]
TurnsOption = Annotated[
    int | None,
    typer.Option("--turns", help="Turn limit [default: asym 31, sym 20].", show_default=False),
]


def _game_config(
    variant: str, suspects: int | None, attributes: int | None, turns: int | None
) -> Any:
    from pydantic import ValidationError

    from byzllm.envs.whodunit import GameConfig
    from byzllm.errors import InputError

    try:
        return GameConfig.model_validate(
            {
                "variant": variant,
                "n_suspects": suspects,
                "n_attributes": attributes,
                "max_turns": turns,
            }
        )
    except ValidationError as err:
        first = err.errors()[0]
        option = {
            "n_suspects": "--suspects",
            "n_attributes": "--attributes",
            "max_turns": "--turns",
        }.get(str(first["loc"][0]) if first["loc"] else "", "")
        where = f"{option}: " if option else ""
        raise InputError(f"invalid game settings: {where}{first['msg']}") from None


@app.command()
def generate(
    variant: VariantOption = "asym",
    n: Annotated[int, typer.Option("-n", min=0, help="How many games.")] = 180,
    seed: Annotated[int, typer.Option("--seed", help="Random seed.")] = 0,
    out: Annotated[Path, typer.Option("--out", help="Output JSONL file.", dir_okay=False)] = Path(
        "games.jsonl"
    ),
    split: Annotated[
        str | None,
        typer.Option(
            "--split",
            help="Write this split (train 210 / validation 90 / test 180) instead of n games.",
            show_default=False,
        ),
    ] = None,
    suspects: SuspectsOption = None,
    attributes: AttributesOption = None,
    turns: TurnsOption = None,
) -> None:
    """Write games, one JSON object per line (suspects, culprit index, facts for sym).

    Examples:

        byzllm whodunit generate --variant sym -n 50 --seed 1 --out games.jsonl

        byzllm whodunit generate --split test --out test.jsonl
    """
    with common.cli_errors():
        from byzllm.envs.whodunit import generate_games, make_splits
        from byzllm.errors import InputError

        cfg = _game_config(variant, suspects, attributes, turns)
        if split is not None:
            if split not in ("train", "validation", "test"):
                raise InputError("--split must be train, validation or test")
            games = make_splits(cfg, seed=seed).get(split)  # type: ignore[arg-type]
        else:
            games = generate_games(n, cfg, seed=seed)
        with atomic_path(out) as partial, partial.open("w", encoding="utf-8") as fh:
            for game in games:
                fh.write(json.dumps(game.model_dump(mode="json")) + "\n")
        typer.echo(f"wrote {len(games)} {variant} games to {out}", err=True)


@app.command()
def play(
    variant: VariantOption = "asym",
    seed: Annotated[int, typer.Option("--seed", help="Game and agent seed.")] = 0,
    suspects: SuspectsOption = None,
    attributes: AttributesOption = None,
    turns: TurnsOption = None,
    model: common.ModelOption = None,
    base_url: common.BaseUrlOption = None,
    wording: Annotated[str, typer.Option("--wording", help="award or original.")] = "award",
    decoding: Annotated[
        str,
        typer.Option(
            "--decoding",
            help="free, or schema: each LLM reply constrained to a valid move (a server with "
            "JSON-schema decoding: byzllm serve, llama.cpp).",
        ),
    ] = "free",
    prompt: Annotated[
        str,
        typer.Option(
            "--prompt",
            help="paper (Appendix F's system prompts) or compact (the same rules in about half "
            "the tokens, for small models).",
        ),
    ] = "paper",
    final_move: Annotated[
        str,
        typer.Option(
            "--final-move",
            help="free, or accuse: with --decoding schema, an agent's last turn can only be an "
            "accusation (small models that never accuse).",
        ),
    ] = "free",
    json_output: common.JsonOption = False,
) -> None:
    """Play one game and print its transcript (simulated agents unless --model).

    Examples:

        byzllm whodunit play --variant asym --seed 3

        byzllm whodunit play --variant sym --model openai/gpt-4o-mini --json

        byzllm whodunit play --model openai/qwen0.5b --base-url URL \\
            --decoding schema --prompt compact --final-move accuse
    """
    with common.cli_errors():
        import asyncio

        from byzllm.envs.whodunit import generate_games, llm_agents, play_game, simulated_agents
        from byzllm.errors import InputError

        if wording not in ("award", "original"):
            raise InputError("--wording must be award or original")
        if decoding not in ("free", "schema"):
            raise InputError("--decoding must be free or schema")
        if prompt not in ("paper", "compact"):
            raise InputError("--prompt must be paper or compact")
        if final_move not in ("free", "accuse"):
            raise InputError("--final-move must be free or accuse")
        if final_move == "accuse" and decoding != "schema":
            raise InputError("--final-move accuse needs --decoding schema")
        common.require_model(base_url, model)
        cfg = _game_config(variant, suspects, attributes, turns)
        game = generate_games(1, cfg, seed=seed)[0]
        if model:
            agents: Any = llm_agents(
                game,
                common.checked_model(model, base_url),
                decoding=decoding,  # type: ignore[arg-type]
                prompt=prompt,  # type: ignore[arg-type]
                final_move=final_move,  # type: ignore[arg-type]
            )
        else:
            agents = simulated_agents(game)
        result = asyncio.run(play_game(game, agents, rng=seed, wording=wording))  # type: ignore[arg-type]
        if json_output:
            common.print_json(result)
            return
        console = common.console()
        label = " (simulated agents)" if result.simulated else ""
        console.print(f"[bold]WhoDunitEnv-{variant}[/bold] game {game.id}{label}")
        for t in result.turns:
            note = []
            if not t.valid:
                note.append("invalid" if t.rejected else "fallback")
            note += [k for k, v in t.flags.model_dump().items() if v]
            note += [f"noise:{n}" for n in t.noise]
            extra = f"  [dim]({', '.join(note)})[/dim]" if note else ""
            console.print(f"{t.obs.turn:>3}. {t.message}{extra}", markup=True, highlight=False)
        verdict = "SUCCESS" if result.success else "FAILURE"
        accused = result.accused_suspect if result.accused else "nobody"
        console.print(
            f"[bold]{verdict}[/bold]: accused {accused}, culprit {result.culprit}, "
            f"{result.total_turns} turns"
        )


@app.command()
@common.run_options()
def run(opts: common.RunOptions) -> None:
    """Play a batch of games on the runner; per-game and per-turn records go to the store.

    Examples:

        byzllm whodunit run --set split=test --set repeats=3

        byzllm whodunit run cfg.yaml --set game.n_suspects=14 -o runs/wd14

    Config keys: game (variant, n_suspects, n_attributes, max_turns, n_agents,
    facts_per_agent), split (train | validation | test | generated), seed, n_games, repeats,
    agents (simulated | llm), sim (simulation parameters), top_logprobs, max_reprompts,
    max_tokens, wording, decoding (free | schema), prompt (paper | compact), final_move (free |
    accuse, with decoding schema), redo_temperature, and the model keys model, base_url,
    api_key_env, max_concurrency, cache, cache_salt, timeout_s, retry (as every experiment).
    """
    from byzllm.experiments.whodunit import WhoDunitRunConfig, expand_units, work

    opts.run("whodunit", WhoDunitRunConfig, expand_units, work)


@app.command()
def report(run_dir: common.RunDirArgument, json_output: common.JsonOption = False) -> None:
    """Success-Rate, Precision and Game-Length of a run, with their intervals.

    Each metric comes with its ± standard error (over runs; with one run, across games) and
    a 95% bootstrap interval over games.

    Also the run's parse health (model moves parsed and how many fell back to a passed
    turn), with a warning when more than 20% did, and its model requests (sent, cached,
    retried, timed out, errors by kind).

    Example:

        byzllm whodunit report runs/whodunit --json
    """
    with common.cli_errors():
        from byzllm.experiments import parse_health, request_health
        from byzllm.experiments.whodunit import report_rows
        from byzllm.experiments.whodunit.records import WhoDunitGameRecord
        from byzllm.runs import Store

        with Store.open(run_dir) as store:
            games = store.records(WhoDunitGameRecord)
        if not games:  # another kind of run, or none finished: not an empty success
            from byzllm.errors import InputError

            raise InputError(f"{run_dir} holds no WhoDunit games")
        rows = report_rows(games)
        health = parse_health.from_records(games)
        requests = request_health.from_records(games)
        simulated = any(r["simulated"] for r in rows)
        if not json_output:
            rows = [_pretty(r) for r in rows]
        common.emit_rows(
            rows,
            json_output=json_output,
            title="WhoDunitEnv",
            simulated=simulated,
            extra={
                "parse_health": health.to_json() if health else None,
                "request_health": requests.to_json() if requests else None,
            },
        )
        if not json_output:
            from byzllm.experiments.whodunit.report import INTERVAL_NOTE

            typer.echo(f"{_SE_CAPTION}; 95% CI: {INTERVAL_NOTE}")
        common.show_parse_health(health, json_output=json_output)
        common.show_request_health(requests, json_output=json_output)


def _pretty(row: dict[str, Any]) -> dict[str, Any]:
    from byzllm.runs.reports import format_pm

    def pm(metric: str, scale: float) -> str:
        return format_pm(row[metric], row[f"{metric}_se"], scale=scale, missing="-")

    def ci(metric: str, scale: float, digits: int) -> str:
        low, high = row.get(f"{metric}_low"), row.get(f"{metric}_high")
        if low is None or high is None or low != low:
            return "-"
        return f"[{scale * low:.{digits}f}, {scale * high:.{digits}f}]"

    return {
        "variant": row["variant"],
        "agents": row["agents"],
        "suspects": row["suspects"],
        # Distinct games, and their plays over the runs: "3 | 6 (2 runs)".
        "games": row["distinct_games"],
        "plays": f"{row['plays']} ({common.plural(row['runs'], 'run')})",
        "Success-Rate %": pm("success_rate", 100),
        "95% CI": ci("success_rate", 100, 1),
        "Precision %": pm("precision", 100),
        "95% CI ": ci("precision", 100, 1),
        "Game-Length": pm("game_length", 1),
        "95% CI  ": ci("game_length", 1, 2),
        "fallbacks": row["fallbacks"],
    }
