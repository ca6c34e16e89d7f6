"""Evaluation conditions of the monitor experiments (the rogue-agents paper, §5, Fig. 4/5, §6.1,
D.2).

============== ==========================================================================
``none``        no intervention (a *shadow* monitor logs would-be triggers, for Fig. 9)
``monitor-1``   the selected monitors, one reset per role (§4.2)
``monitor-2``   two resets per role
``random-1/2``  the random baseline (D.2) with one / two resets per role
``resample-1``  the §6.1 ablation: resample the agent instead of resetting
============== ==========================================================================

:func:`make_intervener` turns a condition into the intervener a game loop uses; it only needs
a :class:`~byzllm.monitor.MonitorSet`, so it serves every environment.
"""

from __future__ import annotations

from typing import Literal

from byzllm.errors import InputError

from .intervene import MonitorIntervener, RandomIntervener
from .monitor_set import MonitorSet

__all__ = ["CONDITIONS", "CONDITION_LABELS", "DEFAULT_CONDITIONS", "Condition", "make_intervener"]

Condition = Literal["none", "monitor-1", "monitor-2", "random-1", "random-2", "resample-1"]
#: Every evaluation condition, in report order.
CONDITIONS: tuple[Condition, ...] = (
    "none",
    "monitor-1",
    "monitor-2",
    "random-1",
    "random-2",
    "resample-1",
)
#: What ``byzllm monitor evaluate`` runs by default (Fig. 4: 0, 1, 2 resets and the baseline).
DEFAULT_CONDITIONS: tuple[Condition, ...] = (
    "none",
    "monitor-1",
    "monitor-2",
    "random-1",
    "random-2",
)
#: Human-readable names for tables and plots.
CONDITION_LABELS: dict[str, str] = {
    "none": "no intervention",
    "monitor-1": "monitor, 1 reset",
    "monitor-2": "monitor, 2 resets",
    "random-1": "random, 1 reset",
    "random-2": "random, 2 resets",
    "resample-1": "monitor, resample",
}


def make_intervener(
    condition: str, monitors: MonitorSet | None, *, seed: int = 0, renormalize: bool = True
) -> MonitorIntervener | RandomIntervener | None:
    """The intervener of ``condition`` (``None``: no monitor set and no intervention).

    ``seed`` drives the random baseline (per game, see :class:`RandomIntervener`).
    """
    if condition == "none":
        if monitors is None:
            return None
        return MonitorIntervener(monitors, budget=0, renormalize=renormalize)
    if condition not in CONDITIONS:
        raise InputError(f"unknown condition {condition!r}; choose from {', '.join(CONDITIONS)}")
    if monitors is None:
        raise InputError(f"condition {condition!r} needs a monitor set")
    kind, _, count = condition.partition("-")
    budget = int(count)
    if kind == "monitor":
        return MonitorIntervener(monitors, budget=budget, renormalize=renormalize)
    if kind == "resample":
        return MonitorIntervener(monitors, budget=budget, mode="resample", renormalize=renormalize)
    return RandomIntervener(monitors.random_probabilities(), budget=budget, seed=seed)
