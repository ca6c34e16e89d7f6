"""WhoDunitEnv games as units of the runner: select the games, expand units, play one (the work
function)."""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from byzllm.agents.whodunit import SimParams
from byzllm.envs.whodunit import (
    GameResult,
    WhoDunitGame,
    generate_games,
    make_splits,
    play_game,
)
from byzllm.llm import track_requests
from byzllm.runs import Record, Unit, make_unit, prepare_model, reset_to_defaults

from ..parse_health import move_counts
from .config import GENERATED_GAMES, WhoDunitRunConfig
from .records import WhoDunitGameRecord, WhoDunitTurnRecord

__all__ = ["expand_units", "game_records", "load_games", "select_games", "work"]

#: Config fields that only shape the grid (which games, how many repeats). Each payload
#: carries its own game and repeat, so these are left out of it (and of its id): raising
#: ``repeats`` or ``n_games`` adds units and keeps the ones already stored. ``work`` never
#: reads them.
GRID_FIELDS = ("n_games", "repeats")


def select_games(cfg: WhoDunitRunConfig) -> list[WhoDunitGame]:
    """The games a config plays (a split, or ``n_games`` freshly generated ones)."""
    if cfg.split == "generated":
        return generate_games(cfg.n_games or GENERATED_GAMES, cfg.game, seed=cfg.seed)
    games = make_splits(cfg.game, seed=cfg.seed).get(cfg.split)
    return games[: cfg.n_games] if cfg.n_games else games


def expand_units(cfg: WhoDunitRunConfig, games: Sequence[WhoDunitGame] | None = None) -> list[Unit]:
    """One unit per (game, repeat)."""
    games = list(games) if games is not None else select_games(cfg)
    # A model: ids leave its defaults out; reduced once for every unit (prepare_model).
    conf = prepare_model(reset_to_defaults(cfg, GRID_FIELDS))
    return [
        make_unit(
            {"config": conf, "game": g, "repeat": r},
            label=f"{g.id}/r{r}",
        )
        for g in games
        for r in range(cfg.repeats)
    ]


def game_records(
    result: GameResult,
    *,
    split: str,
    repeat: int,
    agents: str,
    sim: SimParams | None,
    n_suspects: int,
    requests: dict[str, Any] | None = None,
) -> list[Record]:
    """The stored records of one played game (``requests``: its model requests)."""
    game_rec = WhoDunitGameRecord.of(
        result,
        split=split,
        repeat=repeat,
        agents=agents,
        n_suspects=n_suspects,
        sim_params=sim.model_dump() if result.simulated and sim is not None else None,
        parse=move_counts((t.fallback for t in result.turns), simulated=result.simulated),
        requests=requests,
    )
    records: list[Record] = [game_rec]
    for t in result.turns:
        records.append(
            WhoDunitTurnRecord.of(
                t,
                game_id=result.game_id,
                repeat=repeat,
                success=result.success,
                turn=t.obs.turn,
                role=t.obs.role,
                agent=t.obs.agent,
                action=t.obs.action,
                hallucination=t.flags.hallucination,
                repetition=t.flags.repetition,
                ignored_fact=t.flags.ignored_fact,
                distributions=t.obs.distributions,
                simulated=result.simulated,
            )
        )
    return records


async def work(payload: dict[str, Any]) -> list[Record]:
    """Play one unit's game (top-level, picklable: the runner's work function).

    The payload's config and game hold only their non-default fields: validating them
    brings the defaults back.
    """
    cfg = WhoDunitRunConfig.model_validate(payload["config"])
    game = WhoDunitGame.model_validate(payload["game"])
    repeat = int(payload["repeat"])
    with track_requests() as requests:  # this game's model requests, every player's
        agents = cfg.players(game, salt=f"whodunit-repeat={repeat}")
        result = await play_game(
            game, agents, rng=random.Random(f"{game.id}/{repeat}"), wording=cfg.wording
        )
    return game_records(
        result,
        split=cfg.split,
        repeat=repeat,
        agents=cfg.agents,
        sim=cfg.sim,
        n_suspects=len(game.suspects),
        requests=requests.to_dict(),
    )


def load_games(
    rows: Sequence[dict[str, Any]],
) -> dict[tuple[str, str, int], list[list[GameResult]]]:
    """Group stored ``whodunit_game`` rows by (variant, agents, suspects) into runs."""
    by_key: dict[tuple[str, str, int], dict[int, list[GameResult]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for row in rows:
        result = GameResult(
            game_id=row["game_id"],
            variant=row["variant"],
            success=row["success"],
            accused=row["accused"],
            culprit=row["culprit"],
            accused_suspect=row.get("accused_suspect"),
            total_turns=row["total_turns"],
            resets=row.get("resets", 0),
            parse_failures=row.get("parse_failures", 0),
            fallbacks=row.get("fallbacks", 0),
            simulated=row.get("simulated", False),
        )
        key = (row["variant"], row["agents"], int(row.get("n_suspects", 0)))
        by_key[key][int(row.get("repeat", 0))].append(result)
    return {k: [v[r] for r in sorted(v)] for k, v in by_key.items()}
