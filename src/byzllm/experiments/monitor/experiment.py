"""Monitor experiments as units of the runner: collect and evaluate units, the work function,
training data."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import Any

from pydantic import BaseModel

from byzllm.envs import TurnObservation
from byzllm.errors import ConfigError, InputError
from byzllm.llm import track_requests
from byzllm.monitor.conditions import (
    CONDITIONS,
    condition_monitors,
    make_intervener,
    missing_conditions,
)
from byzllm.monitor.dataset import TurnDataset, parse_success
from byzllm.monitor.features import position_entropies, turn_features
from byzllm.monitor.intervene import MonitorIntervener, scoring_error_count
from byzllm.monitor.monitor_set import MonitorSet
from byzllm.runs import Record, Unit, make_unit, prepare_model, reset_to_defaults
from byzllm.runs import run_in_memory as records_in_memory

from .config import MonitorExperimentConfig
from .environments import get_environment
from .records import MonitorGameRecord, MonitorTurnRecord

__all__ = [
    "TRAINED_ON",
    "capped_conditions",
    "check_renormalize",
    "collect_stage",
    "collect_units",
    "datasets_from_rows",
    "evaluate_units",
    "run_in_memory",
    "trained_on",
    "work",
]

#: Config fields that only shape the grid (how many games per split, repeats, conditions).
#: Each payload carries its own split, game, repeat and condition, so these are left out of
#: it (and of its id): adding a condition or a repeat keeps the units already stored.
#: ``work`` never reads them.
GRID_FIELDS = (
    "n_train",
    "n_validation",
    "n_test",
    "collect_repeats",
    "repeats",
    "conditions",
    "monitor_set",  # each payload carries the monitors themselves
)


def _unit_config(cfg: MonitorExperimentConfig) -> MonitorExperimentConfig:
    # A model, not its dump: ids leave its default-valued fields out (docs: Unit ids).
    return reset_to_defaults(cfg, GRID_FIELDS)


def _split_games(
    cfg: MonitorExperimentConfig, split: str, trained_on: MonitorExperimentConfig | None = None
) -> list[Any]:
    env = get_environment(cfg.env)
    if trained_on is None:  # (an environment registered before trained_on existed still works)
        return env.instances(cfg, split)
    return env.instances(cfg, split, trained_on=trained_on)


#: The config fields that decide a run's training and validation instances: a monitor set
#: records them (``meta["trained_on"]``) so that an evaluation in another setting keeps its
#: test instances apart from them.
TRAINED_ON = ("env", "game", "govsim", "seed", "n_train", "n_validation")


def trained_on(
    cfg: MonitorExperimentConfig, monitors: MonitorSet
) -> MonitorExperimentConfig | None:
    """The config ``monitors`` were trained on (as far as :data:`TRAINED_ON` goes), when its
    training and validation instances are not those of ``cfg``; None when they are, or when
    the set does not say (trained before it was recorded)."""
    recorded = monitors.meta.get("trained_on")
    if not isinstance(recorded, dict) or recorded.get("env", cfg.env) != cfg.env:
        return None
    trained = MonitorExperimentConfig.model_validate(
        {**cfg.model_dump(), **{k: v for k, v in recorded.items() if k in TRAINED_ON}}
    )
    if all(getattr(trained, k) == getattr(cfg, k) for k in TRAINED_ON):
        return None
    return trained


def capped_conditions(cfg: MonitorExperimentConfig) -> list[str]:
    """The requested conditions whose intervention cap exceeds the environment's (GovSim and
    CodeGen allow one intervention per role, the rogue-agents paper, §4.2): they are skipped."""
    cap = get_environment(cfg.env).max_cap
    if cap is None:
        return []
    return [
        c for c in dict.fromkeys(cfg.conditions) if c != "none" and int(c.rsplit("-")[-1]) > cap
    ]


def collect_units(cfg: MonitorExperimentConfig) -> list[Unit]:
    """Train and validation games, no intervention (one unit per game and repeat)."""
    return collect_stage(_unit_config(cfg), "game", partial(_split_games, cfg), cfg.collect_repeats)


def collect_stage(
    conf: Any, key: str, split_items: Callable[[str], Iterable[Any]], repeats: int
) -> list[Unit]:
    """The collect stage of the monitor pipeline (the rogue-agents paper, §4.2): each train and
    validation item (a game or a problem, with an ``id``; under ``key`` in the unit) played
    ``repeats`` times without intervention, one unit each."""
    if isinstance(conf, BaseModel):
        conf = prepare_model(conf)  # reduced once for every unit
    return [
        make_unit(
            {
                "stage": "collect",
                "config": conf,
                "split": split,
                key: item,
                "repeat": r,
                "condition": "none",
            },
            label=f"{split}/{item.id}/r{r}",
        )
        for split in ("train", "validation")
        for item in split_items(split)
        for r in range(repeats)
    ]


def check_renormalize(monitors: MonitorSet, renormalize: bool) -> None:
    """Refuse monitors trained on features computed with another ``renormalize``: a truncated
    top-k's entropy differs with it, so their thresholds would be applied to other features.

    A set that does not record it (trained before it was recorded) is taken to have been
    trained with the default, ``renormalize=True``.
    """
    recorded = monitors.meta.get("renormalize")
    trained_with = True if recorded is None else bool(recorded)
    if trained_with != renormalize:
        where = monitors.source or "this monitor set"
        assumed = " (it does not record it: the default is assumed)" if recorded is None else ""
        raise InputError(
            f"the monitors of {where} were trained on features with renormalize="
            f"{trained_with}{assumed}, but this config has renormalize={renormalize}"
        )


def evaluate_units(cfg: MonitorExperimentConfig, monitors: MonitorSet) -> list[Unit]:
    """Test games × conditions × repeats; each unit carries the monitors its condition runs.

    Ablation conditions whose monitors the set lacks (a set trained before ablations were
    kept) are left out — :func:`~byzllm.monitor.conditions.missing_conditions` names them —
    and the report says they were not trained; a request of nothing but those is refused.
    Monitors trained in another setting (:func:`trained_on`: another lineup size, another
    seed) are tested on games that repeat none of their training or validation games.
    """
    if not cfg.conditions:
        raise ConfigError("conditions: choose at least one of " + ", ".join(CONDITIONS))
    env = get_environment(cfg.env)
    # A role the game does not have would never be monitored: refuse it before any unit runs.
    monitors.check_roles(env.roles(cfg), environment=env.describe(cfg))
    capped = capped_conditions(cfg)
    if capped and len(capped) == len(set(cfg.conditions)):
        raise ConfigError(
            f"{env.describe(cfg)} allows at most {env.max_cap} intervention per role: "
            f"{', '.join(capped)} cannot run there"
        )
    where = monitors.source or "this monitor set"
    needs_random = any(c.startswith("random") for c in cfg.conditions)
    if needs_random and not monitors.random_baseline:
        raise InputError(f"{where} has no random-baseline probabilities")
    check_renormalize(monitors, cfg.renormalize)
    missing = missing_conditions(cfg.conditions, monitors)
    conditions = [c for c in dict.fromkeys(cfg.conditions) if c not in missing and c not in capped]
    if not conditions:
        raise InputError(
            f"{where} has no monitors for {', '.join(missing)} (trained before ablations were "
            "kept); rerun `byzllm monitor train`"
        )
    conf = prepare_model(_unit_config(cfg))
    # Only the monitors a condition runs: a unit's id then depends on nothing else, and the
    # store does not hold every ablation's monitors in every unit.
    packed = {c: condition_monitors(c, monitors).to_dict() for c in conditions}
    return [
        make_unit(
            {
                "stage": "evaluate",
                "config": conf,
                "split": "test",
                "game": game,
                "repeat": r,
                "condition": condition,
                "monitors": packed[condition],
            },
            label=f"test/{game.id}/{condition}/r{r}",
        )
        for condition in conditions
        for game in _split_games(cfg, "test", trained_on(cfg, monitors))
        for r in range(cfg.repeats)
    ]


def _transcript_turn(obs: TurnObservation, renormalize: bool) -> dict[str, Any]:
    """A monitored turn, compactly: who, what (120 characters), and at each decision position
    the most likely token with the entropy of its distribution (what the viewer colours)."""
    try:
        entropies = position_entropies(obs.distributions, renormalize=renormalize)
    except InputError:
        entropies = []  # malformed log-probabilities: counted as a scoring error elsewhere
    chosen = [d[0][0] for d in obs.distributions if d]
    return {
        "turn": obs.turn,
        "role": obs.role,
        "agent": obs.agent,
        "action": json.dumps(obs.action, separators=(",", ":"), default=str)[:120],
        "tokens": [[tok, round(h, 3)] for tok, h in zip(chosen, entropies, strict=False)],
    }


async def work(payload: dict[str, Any]) -> list[Record]:
    """One game under one condition (collect and evaluate units): the runner's work function
    (top-level, picklable)."""
    # The payload's config and game hold only their non-default fields: validating them
    # brings the defaults back.
    cfg = MonitorExperimentConfig.model_validate(payload["config"])
    env = get_environment(cfg.env)
    game = env.load_instance(payload["game"])
    repeat = int(payload["repeat"])
    split = str(payload["split"])
    condition = str(payload["condition"])
    monitors = MonitorSet.from_dict(payload["monitors"]) if payload.get("monitors") else None
    intervener = make_intervener(condition, monitors, seed=repeat, renormalize=cfg.renormalize)
    with track_requests() as requests:  # this game's model requests, every player's
        played = await env.play(cfg, game, repeat=repeat, intervener=intervener)
    triggers = [] if intervener is None else intervener.game_triggers(played.game_id)
    scores = (
        intervener.game_scores(played.game_id) if isinstance(intervener, MonitorIntervener) else []
    )
    records: list[Record] = [
        MonitorGameRecord.of(
            played,
            env=cfg.env,
            split=split,
            condition=condition,
            repeat=repeat,
            triggers=[t.model_dump() for t in triggers],
            turn_scores=[
                {"turn": t.turn, "role": t.role, "agent": t.agent, "p_success": t.score}
                for t in scores
            ],
            transcript=[_transcript_turn(obs, cfg.renormalize) for obs in played.turns],
            scoring_errors=scoring_error_count(intervener),
            agents=cfg.agents,
            monitors_simulated=bool(monitors is not None and monitors.meta.get("simulated")),
            sim_params=env.sim_params(cfg) if played.simulated else None,
            requests=requests.to_dict(),
            **played.fields,
        )
    ]
    if payload.get("stage") == "collect":
        for obs in played.turns:
            # The clock the live monitor reads (turn since the last reset; GovSim: the
            # month); collected games have no interventions.
            turn = obs.run_turn or obs.turn
            f = turn_features(obs.distributions, turn, renormalize=cfg.renormalize)
            records.append(
                MonitorTurnRecord.of(
                    f,
                    split=split,
                    game_id=played.game_id,
                    repeat=repeat,
                    role=obs.role,
                    agent=obs.agent,
                    turn=turn,
                    success=played.success,
                    simulated=played.simulated,
                )
            )
    return records


async def run_in_memory(units: Iterable[Unit]) -> list[dict[str, Any]]:
    """Play units without a store (tests, notebooks): the records as dicts with ``kind``."""
    return await records_in_memory(units, work)


def _game_key(row: dict[str, Any]) -> str:
    # With several collect repeats, each (game, repeat) is its own game.
    return f"{row['game_id']}/r{row.get('repeat', 0)}"


def _order(row: dict[str, Any]) -> tuple[str, int, int]:
    return (str(row.get("game_id")), int(row.get("repeat", 0)), int(row.get("turn", 0)))


def datasets_from_rows(
    turn_rows: Sequence[dict[str, Any]],
    game_rows: Sequence[dict[str, Any]] | None = None,
    *,
    collect_command: str = "byzllm monitor collect",
) -> tuple[TurnDataset, TurnDataset]:
    """Train and validation :class:`TurnDataset` from stored ``monitor_turn`` rows.

    ``game_rows``: the collect run's per-game records (``monitor_game``, or any rows with
    ``split, game_id, repeat, success``). They give each split's games and outcomes, and the
    turns are attached to them, so a game with no monitored turn still counts in the base
    rate and the gains (a GovSim lake that collapses in month 1 has none: its turns start in
    month 2). Without them the games are those the turn rows name, which is every game only
    where each game has a monitored turn (WhoDunit; CodeGen with two rounds or more).

    With several collect repeats, each (game, repeat) is its own training game. Rows are put
    in a canonical order first (game, repeat, turn), so the fitted monitors do not depend on
    the order the store returns finished units in.

    ``collect_command``: the command whose run holds such rows, named when a split has none
    (CodeGen's turns come from ``byzllm codegen collect``).
    """
    by_split: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in sorted(turn_rows, key=_order):
        keyed = dict(row)
        keyed["game_id"] = _game_key(row)
        by_split[str(row.get("split"))].append(keyed)
    outcomes: dict[str, dict[str, bool]] | None = None
    if game_rows is not None:
        outcomes = {"train": {}, "validation": {}}
        for i, row in enumerate(sorted(game_rows, key=_order)):
            split = str(row.get("split"))
            if split not in outcomes or row.get("condition", "none") != "none":
                continue  # only the collect stage's games (no intervention) are training data
            try:
                key = _game_key(row)
                success = parse_success(row["success"])
            except (KeyError, ValueError) as err:
                raise InputError(f"game row {i} is malformed: {err}") from err
            if outcomes[split].setdefault(key, success) != success:
                raise InputError(f"game {key!r} was recorded twice with different outcomes")
    datasets = []
    for split in ("train", "validation"):
        games = None if outcomes is None else outcomes[split]
        if not (by_split.get(split) if games is None else games):
            what = "turns" if games is None else "games"
            raise InputError(f"no {split} {what} collected: run `{collect_command}` first")
        datasets.append(TurnDataset.from_rows(by_split[split], games))
    return datasets[0], datasets[1]
