"""Training a monitor set from collected turns: one function for `monitor train` and
`byzllm reproduce` (the rogue-agents paper, App. D.2: selection on validation games)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from byzllm.monitor import MonitorSet, train_monitor_set
from byzllm.monitor.selection import RoleSelection

from .experiment import TRAINED_ON, datasets_from_rows

__all__ = ["train_from_turns"]


def train_from_turns(
    turns: Sequence[dict[str, Any]],
    config: Mapping[str, Any] | None,
    *,
    degrees: Sequence[int] = (1, 2, 3, 4, 5),
    alpha: float = 1.0,
    joint: bool = False,
    games: Sequence[dict[str, Any]] | None = None,
) -> tuple[MonitorSet, list[RoleSelection]]:
    """Select the monitors of every role from ``monitor_turn`` rows of a collect run.

    ``config`` is the collect run's resolved config (what its store recorded); it goes into
    the set's ``meta`` so that an evaluation can check it plays the same environment.
    ``games``: the run's ``monitor_game`` rows, so that games without a monitored turn count
    in the base rate and the gains (:func:`datasets_from_rows`).
    """
    cfg = dict(config or {})
    train_set, validation_set = datasets_from_rows(turns, games)
    simulated = any(bool(t.get("simulated")) for t in turns)
    env_name = cfg.get("env", "whodunit")
    meta = {
        "env": env_name,
        "variant": (cfg.get("game") or {}).get("variant") if env_name == "whodunit" else None,
        "agents": cfg.get("agents"),
        "model": cfg.get("model"),
        "renormalize": cfg.get("renormalize", True),
        "simulated": simulated,
        "train_games": train_set.n_games,
        "validation_games": validation_set.n_games,
        # What an evaluation in another setting needs to keep its test games apart from
        # these (:func:`~byzllm.experiments.monitor.experiment.evaluate_units`).
        "trained_on": {key: cfg.get(key) for key in TRAINED_ON if key in cfg},
    }
    return train_monitor_set(
        train_set, validation_set, degrees=degrees, alpha=alpha, joint=joint, meta=meta
    )
