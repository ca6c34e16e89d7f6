"""Evaluation conditions of the monitor experiments (the rogue-agents paper, §5, Fig. 4/5, §6.1,
Table 3, D.2).

================= =======================================================================
``none``           no intervention (a *shadow* monitor logs would-be triggers, for Fig. 9)
``monitor-1``      the selected monitors, one reset per role (§4.2)
``monitor-2``      two resets per role
``random-1/2``     the random baseline (D.2) with one / two resets per role
``resample-1``     the §6.1 ablation: resample the agent instead of resetting
``second-best-1``  Table 3: the second-best monitor of each role's selection grid, one reset
``worst-1``        Table 3: the worst monitor of each role's selection grid, one reset
``turn-only-1``    the control: a monitor of the turn count alone (no uncertainty feature),
                   trained and thresholded like the others, one reset
``single-feature-1`` the other control: each role's best grid monitor on one uncertainty
                   feature (chosen on validation), one reset
================= =======================================================================

Every condition runs by default: the ablations are what says whether the selected monitor's
gain comes from the monitor, from its uncertainty features rather than the turn count, and
from combining features rather than reading the best one alone.
:func:`make_intervener` turns a condition into the intervener a game loop uses; it only needs
a :class:`~byzllm.monitor.MonitorSet`, so it serves every environment.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, get_args

from byzllm.errors import InputError

from .intervene import MonitorIntervener, RandomIntervener
from .monitor_set import MonitorSet

__all__ = [
    "ABLATION_CONDITIONS",
    "CONDITIONS",
    "CONDITION_LABELS",
    "DEFAULT_CONDITIONS",
    "Condition",
    "condition_monitors",
    "make_intervener",
    "missing_conditions",
]

Condition = Literal[
    "none",
    "monitor-1",
    "monitor-2",
    "random-1",
    "random-2",
    "resample-1",
    "second-best-1",
    "worst-1",
    "turn-only-1",
    "single-feature-1",
]
#: Every evaluation condition, in report order.
CONDITIONS: tuple[Condition, ...] = get_args(Condition)
#: What ``byzllm monitor evaluate`` runs by default: Fig. 4 (0, 1, 2 resets and the random
#: baseline) and every ablation of Table 3, plus the turn-count-only and single-feature
#: controls.
DEFAULT_CONDITIONS: tuple[Condition, ...] = CONDITIONS
#: The conditions that run an ablation's monitors, and which ablation
#: (:data:`~byzllm.monitor.selection.ABLATIONS`).
ABLATION_CONDITIONS: dict[str, str] = {
    "second-best-1": "second-best",
    "worst-1": "worst",
    "turn-only-1": "turn-only",
    "single-feature-1": "single-feature",
}
#: Human-readable names for tables and plots.
CONDITION_LABELS: dict[str, str] = {
    "none": "no intervention",
    "monitor-1": "monitor, 1 reset",
    "monitor-2": "monitor, 2 resets",
    "random-1": "random, 1 reset",
    "random-2": "random, 2 resets",
    "resample-1": "monitor, resample",
    "second-best-1": "2nd-best monitor, 1 reset",
    "worst-1": "worst monitor, 1 reset",
    "turn-only-1": "turn count only, 1 reset",
    "single-feature-1": "best single feature, 1 reset",
}


def _parse(condition: str) -> tuple[str, int]:
    if condition not in CONDITIONS:
        raise InputError(f"unknown condition {condition!r}; choose from {', '.join(CONDITIONS)}")
    if condition == "none":
        return "none", 0
    kind, _, count = condition.rpartition("-")
    return kind, int(count)


def missing_conditions(conditions: Iterable[str], monitors: MonitorSet) -> list[str]:
    """The ablation conditions among ``conditions`` whose monitors ``monitors`` lacks.

    A set written before ablations were trained has none; its ablation conditions are
    skipped (with a warning), not refused, so the rest of an evaluation still runs.
    """
    return [
        c
        for c in dict.fromkeys(conditions)
        if c in ABLATION_CONDITIONS and not monitors.has_ablation(ABLATION_CONDITIONS[c])
    ]


def condition_monitors(condition: str, monitors: MonitorSet) -> MonitorSet:
    """The monitor set ``condition``'s intervener runs: the ablation's monitors for an
    ablation condition, else the selected ones (the other ablations left out either way)."""
    _parse(condition)
    ablation = ABLATION_CONDITIONS.get(condition)
    if ablation is not None:
        return monitors.ablation(ablation)
    return monitors.selected()


def make_intervener(
    condition: str, monitors: MonitorSet | None, *, seed: int = 0, renormalize: bool = True
) -> MonitorIntervener | RandomIntervener | None:
    """The intervener of ``condition`` (``None``: no monitor set and no intervention).

    ``monitors`` is a whole set (with its ablations) or :func:`condition_monitors`' part of
    it. ``seed`` drives the random baseline (per game, see :class:`RandomIntervener`).
    """
    if condition == "none":
        if monitors is None:
            return None
        return MonitorIntervener(
            condition_monitors(condition, monitors), budget=0, renormalize=renormalize
        )
    kind, budget = _parse(condition)
    if monitors is None:
        raise InputError(f"condition {condition!r} needs a monitor set")
    if kind == "random":
        return RandomIntervener(monitors.random_probabilities(), budget=budget, seed=seed)
    chosen = condition_monitors(condition, monitors)
    mode = "resample" if kind == "resample" else "reset"
    return MonitorIntervener(chosen, budget=budget, mode=mode, renormalize=renormalize)
