"""Batches of WhoDunitEnv games on the experiment runner: config, units, records, report.

One unit is one game played once (``repeat`` r of the same game, for standard errors across
repeated runs, Appendix D.4). The payload carries the game itself, so a unit id changes when
the game does. Results are stored as :class:`WhoDunitGameRecord` (kind ``whodunit_game``) and
one :class:`WhoDunitTurnRecord` (kind ``whodunit_turn``) per agent turn, with the action,
validity, errors, remaining candidates, analysis flags and decision-position distributions.
Simulated results say so (``simulated`` and the simulation parameters on every game record).
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from byzllm.agents.whodunit import SimParams, WhoDunitAgent, WordingName
from byzllm.envs.whodunit import (
    GameConfig,
    GameResult,
    MetricSummary,
    WhoDunitGame,
    generate_games,
    llm_agents,
    make_splits,
    play_game,
    simulated_agents,
    summarize_runs,
)

from ._model_config import ModelConfig
from ._records import Record
from ._units import Unit, make_unit

__all__ = [
    "WhoDunitGameRecord",
    "WhoDunitPlayers",
    "WhoDunitRunConfig",
    "WhoDunitTurnRecord",
    "expand_units",
    "game_records",
    "load_games",
    "report_rows",
    "select_games",
    "work",
]


class WhoDunitPlayers(ModelConfig):
    """Who plays the games: simulated agents, or LLM-backed ones on ``model``.

    Shared by every WhoDunitEnv experiment (batches here, the monitor pipeline in
    :mod:`byzllm.experiments.monitor`). The LLM keys are :class:`ModelConfig`'s.
    """

    agents: Literal["simulated", "llm"] = "simulated"
    sim: SimParams = Field(default_factory=SimParams)
    top_logprobs: int = Field(default=10, ge=0, description="at most max_top_logprobs")
    max_reprompts: int = Field(default=3, ge=0)
    wording: WordingName = "award"

    @field_validator("top_logprobs")
    @classmethod
    def _within_server_limit(cls, value: int, info: ValidationInfo) -> int:
        # max_top_logprobs (a ModelSettings field) is validated first: base fields come first.
        limit = info.data.get("max_top_logprobs", 20)
        if value > limit:
            raise ValueError(
                f"must be at most max_top_logprobs={limit} (raise that if the server allows more)"
            )
        return value

    @model_validator(mode="after")
    def _llm_needs_a_model(self) -> WhoDunitPlayers:
        if self.agents == "llm" and not self.model:
            raise ValueError("agents: llm needs a model (e.g. model: openai/gpt-4o-mini)")
        return self

    def players(self, game: WhoDunitGame, *, salt: str) -> Sequence[WhoDunitAgent]:
        """The game's agents; LLM ones share one model per event loop (``salt``: the
        cache salt of this repeat, see :meth:`ModelConfig.shared_model`)."""
        if self.agents == "simulated":
            return simulated_agents(game, self.sim)
        return llm_agents(
            game,
            self.shared_model(salt=salt),
            top_logprobs=self.top_logprobs,
            max_reprompts=self.max_reprompts,
        )


class WhoDunitRunConfig(WhoDunitPlayers):
    """A batch of games. Example YAML::

    game: {variant: asym, n_suspects: 10}
    split: test            # train | validation | test | generated
    n_games: 180           # null: the whole split
    repeats: 3
    agents: simulated      # or: llm (then set model / base_url)
    sim: {hallucination_rate: 0.04}
    """

    game: GameConfig = Field(default_factory=GameConfig)
    split: Literal["train", "validation", "test", "generated"] = "test"
    seed: int = 0
    n_games: int | None = Field(default=None, ge=1)
    repeats: int = Field(default=1, ge=1)


class WhoDunitGameRecord(Record):
    """One played game (``simulated`` results carry their simulation parameters)."""

    kind: ClassVar[str] = "whodunit_game"

    game_id: str
    split: str
    repeat: int
    variant: str
    agents: str
    n_suspects: int
    success: bool
    accused: bool
    culprit: int
    accused_suspect: int | None
    total_turns: int
    resets: int
    parse_failures: int
    fallbacks: int
    invalid_actions: int
    hallucinations: int
    repetitions: int
    ignored_facts: int
    simulated: bool
    sim_params: dict[str, Any] | None = None


class WhoDunitTurnRecord(Record):
    """One agent turn of a played game."""

    kind: ClassVar[str] = "whodunit_turn"

    game_id: str
    repeat: int
    success: bool
    turn: int
    budget_turn: int
    role: str
    agent: str
    action: dict[str, Any]
    valid: bool
    errors: list[str]
    fallback: bool
    decision: str
    message: str
    remaining_candidates: list[int]
    hallucination: bool
    repetition: bool
    ignored_fact: bool
    noise: list[str]
    distributions: list[list[tuple[str, float]]]
    simulated: bool


def select_games(cfg: WhoDunitRunConfig) -> list[WhoDunitGame]:
    """The games a config plays (a split, or ``n_games`` freshly generated ones)."""
    if cfg.split == "generated":
        return generate_games(cfg.n_games or 180, cfg.game, seed=cfg.seed)
    games = make_splits(cfg.game, seed=cfg.seed).get(cfg.split)
    return games[: cfg.n_games] if cfg.n_games else games


def expand_units(cfg: WhoDunitRunConfig, games: Sequence[WhoDunitGame] | None = None) -> list[Unit]:
    """One unit per (game, repeat)."""
    games = list(games) if games is not None else select_games(cfg)
    conf = cfg.model_dump(mode="json")
    return [
        make_unit(
            {"config": conf, "game": g.model_dump(mode="json"), "repeat": r},
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
) -> list[Record]:
    """The stored records of one played game."""
    game_rec = WhoDunitGameRecord(
        game_id=result.game_id,
        split=split,
        repeat=repeat,
        variant=result.variant,
        agents=agents,
        n_suspects=n_suspects,
        success=result.success,
        accused=result.accused,
        culprit=result.culprit,
        accused_suspect=result.accused_suspect,
        total_turns=result.total_turns,
        resets=result.resets,
        parse_failures=result.parse_failures,
        fallbacks=result.fallbacks,
        invalid_actions=result.invalid_actions,
        hallucinations=result.hallucinations,
        repetitions=result.repetitions,
        ignored_facts=result.ignored_facts,
        simulated=result.simulated,
        sim_params=sim.model_dump() if result.simulated and sim is not None else None,
    )
    records: list[Record] = [game_rec]
    for t in result.turns:
        records.append(
            WhoDunitTurnRecord(
                game_id=result.game_id,
                repeat=repeat,
                success=result.success,
                turn=t.obs.turn,
                budget_turn=t.budget_turn,
                role=t.obs.role,
                agent=t.obs.agent,
                action=t.obs.action,
                valid=t.valid,
                errors=t.errors,
                fallback=t.fallback,
                decision=t.decision,
                message=t.message,
                remaining_candidates=t.remaining_candidates,
                hallucination=t.flags.hallucination,
                repetition=t.flags.repetition,
                ignored_fact=t.flags.ignored_fact,
                noise=t.noise,
                distributions=t.obs.distributions,
                simulated=result.simulated,
            )
        )
    return records


async def work(payload: dict[str, Any]) -> list[Record]:
    """Play one unit's game (top-level, picklable: the runner's work function)."""
    cfg = WhoDunitRunConfig.model_validate(payload["config"])
    game = WhoDunitGame.model_validate(payload["game"])
    repeat = int(payload["repeat"])
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


def report_rows(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One summary row per (variant, agents, suspects): metrics ± standard error.

    Simulated rows carry the simulation's parameters (``sim_params``; ``None`` otherwise).
    """
    params: dict[tuple[str, str, int], Any] = {}
    for row in rows:
        if row.get("sim_params"):
            key = (row["variant"], row["agents"], int(row.get("n_suspects", 0)))
            params.setdefault(key, row["sim_params"])
    out: list[dict[str, Any]] = []
    for (variant, agents, n), runs in sorted(load_games(rows).items()):
        s: MetricSummary = summarize_runs(runs)
        out.append(
            {
                "variant": variant,
                "agents": agents,
                "suspects": n,
                "runs": s.runs,
                "games": s.games,
                "success_rate": s.success_rate,
                "success_rate_se": s.success_rate_se,
                "precision": s.precision,
                "precision_se": s.precision_se,
                "game_length": s.game_length,
                "game_length_se": s.game_length_se,
                "parse_failures": s.parse_failures,
                "fallbacks": s.fallbacks,
                "simulated": s.simulated,
                "sim_params": params.get((variant, agents, n)),
            }
        )
    return out
