"""GovSim games as units of the runner: select the games, expand units, play one (the work
function)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, TypeVar

from byzllm.agents.govsim import FisherParams
from byzllm.envs.govsim import GovSimGame, GovSimResult, make_games, make_splits, play_game
from byzllm.llm import track_requests
from byzllm.runs import Record, Unit, make_unit, prepare_model, reset_to_defaults

from .config import GENERATED_GAMES, GovSimRunConfig
from .records import GovSimGameRecord

__all__ = [
    "GRID_FIELDS",
    "catch_counts",
    "evenly",
    "expand_units",
    "game_record",
    "select_games",
    "work",
]

#: Config fields that only shape the grid (which games, how many repeats); ``work`` never
#: reads them, so changing them keeps the units already stored.
GRID_FIELDS = ("n_games", "repeats")


_T = TypeVar("_T")


def evenly(games: Sequence[_T], limit: int | None) -> list[_T]:
    """``limit`` of a split's games, taken evenly across it (all of them without a limit).

    A split is ordered by starting stock: its first n would be its n smallest lakes (ten
    training lakes that all collapsed). ``govsim run`` and the monitor pipeline both cut
    splits with this.
    """
    if not limit or limit >= len(games):
        return list(games)
    return [games[i * len(games) // limit] for i in range(limit)]


def select_games(cfg: GovSimRunConfig) -> list[GovSimGame]:
    """The games a config plays (a split of App. D.1, cut to ``n_games`` evenly, or
    ``n_games`` generated ones)."""
    if cfg.split == "generated":
        return make_games(cfg.n_games or GENERATED_GAMES, seed=cfg.seed)
    return evenly(make_splits(cfg.govsim.lake, seed=cfg.seed).get(cfg.split), cfg.n_games)


def expand_units(cfg: GovSimRunConfig, games: Sequence[GovSimGame] | None = None) -> list[Unit]:
    """One unit per (game, repeat)."""
    games = list(games) if games is not None else select_games(cfg)
    conf = prepare_model(reset_to_defaults(cfg, GRID_FIELDS))
    return [
        make_unit({"config": conf, "game": g, "repeat": r}, label=f"{g.id}/r{r}")
        for g in games
        for r in range(cfg.repeats)
    ]


def catch_counts(result: GovSimResult) -> dict[str, dict[str, int]]:
    """Parse health of one game ({} when simulated): ``catch``, the catch decisions (a
    fall-back: no valid amount after the re-prompts, that is none, a negative one or one
    above the stock, so 0 tons), and ``utterance``, the meeting replies, those held again
    after a reset included (a fall-back: an empty reply, so the fisher said nothing)."""
    if result.simulated:
        return {}
    counts = {
        "catch": {
            "calls": len(result.turns),
            "fallbacks": sum(t.fallback for t in result.turns),
        }
    }
    said = [u for meeting in (*result.meetings, *result.undone_meetings) for u in meeting]
    if said:
        counts["utterance"] = {
            "calls": len(said),
            "fallbacks": sum(not u.text.strip() for u in said),
        }
    return counts


def game_record(
    result: GovSimResult,
    *,
    split: str,
    repeat: int,
    agents: str,
    sim: FisherParams | None,
    requests: dict[str, Any] | None = None,
) -> GovSimGameRecord:
    """The stored record of one played game."""
    return GovSimGameRecord.of(
        result,
        split=split,
        repeat=repeat,
        agents=agents,
        survival_rate=1.0 if result.survived else 0.0,
        # harvests, meetings and undone_meetings: the result's own, copied unchanged.
        decisions=[
            {
                "month": t.month,
                "fisher": t.obs.agent,
                "wish": t.wish,
                "catch": t.catch,
                "decision": t.decision,
                "applied": t.applied,
                "fallback": t.fallback,
                "errors": t.errors,
                "text": t.text,
                "positions": len(t.obs.distributions),
                "alternatives": max(map(len, t.obs.distributions), default=0),
            }
            for t in result.turns
        ],
        sim_params=sim.model_dump() if result.simulated and sim is not None else None,
        parse=catch_counts(result),
        requests=requests,
    )


async def work(payload: dict[str, Any]) -> list[Record]:
    """Play one unit's game (top-level, picklable: the runner's work function)."""
    cfg = GovSimRunConfig.model_validate(payload["config"])
    game = GovSimGame.model_validate(payload["game"])
    repeat = int(payload["repeat"])
    with track_requests() as requests:
        fishers = cfg.fishers(salt=f"govsim-repeat={repeat}")
        result = await play_game(
            game,
            fishers,
            config=cfg.govsim.lake,
            rng=random.Random(f"{game.id}/{game.seed}/{repeat}"),
        )
    return [
        game_record(
            result,
            split=cfg.split,
            repeat=repeat,
            agents=cfg.agents,
            sim=cfg.govsim.sim,
            requests=requests.to_dict(),
        )
    ]
