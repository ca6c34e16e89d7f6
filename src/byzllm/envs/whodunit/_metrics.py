"""Success-Rate, Precision and Game-Length (the rogue-agents paper, §4.1), with standard errors.

- Success-Rate: fraction of games that ended with the culprit accused.
- Precision: Success-Rate among the games that ended in an accusation (``nan`` when none did).
- Game-Length: mean number of agent turns, including the turns spent before an intervention.

Across repeated runs of the same games (Appendix D.4) the standard error is that of the
per-run means, ``std(ddof=1) / sqrt(runs)``; for a single run it is the standard error across
games (``sqrt(p (1 - p) / n)`` for the rates, ``std(ddof=1) / sqrt(n)`` for the length).
Values are fractions in [0, 1] (reports print percentages).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pydantic import BaseModel

from ._loop import GameResult

__all__ = ["MetricSummary", "Metrics", "game_metrics", "summarize_runs"]


class Metrics(BaseModel):
    """The metrics of one run (a set of games)."""

    games: int
    accused: int
    success_rate: float
    precision: float
    game_length: float
    resets: int = 0
    parse_failures: int = 0
    fallbacks: int = 0


class MetricSummary(BaseModel):
    """Means and standard errors over repeated runs (or over games, for one run)."""

    runs: int
    games: int
    success_rate: float
    success_rate_se: float
    precision: float
    precision_se: float
    game_length: float
    game_length_se: float
    parse_failures: int = 0
    fallbacks: int = 0
    simulated: bool = False


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs) if xs else math.nan


def _se(xs: Sequence[float]) -> float:
    xs = [x for x in xs if not math.isnan(x)]
    n = len(xs)
    if n < 2:
        return math.nan
    m = _mean(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1)) / math.sqrt(n)


def _binomial_se(p: float, n: int) -> float:
    return math.sqrt(p * (1 - p) / n) if n > 0 and not math.isnan(p) else math.nan


def game_metrics(results: Sequence[GameResult]) -> Metrics:
    """The metrics of one run."""
    n = len(results)
    accused = [r for r in results if r.accused]
    wins = sum(r.success for r in results)
    return Metrics(
        games=n,
        accused=len(accused),
        success_rate=wins / n if n else math.nan,
        precision=wins / len(accused) if accused else math.nan,
        game_length=_mean([r.total_turns for r in results]),
        resets=sum(r.resets for r in results),
        parse_failures=sum(r.parse_failures for r in results),
        fallbacks=sum(r.fallbacks for r in results),
    )


def summarize_runs(runs: Sequence[Sequence[GameResult]]) -> MetricSummary:
    """Mean ± standard error of the metrics over repeated runs."""
    played = [r for r in runs if r]  # an empty run defines no metric
    per_run = [game_metrics(r) for r in played]
    games = sum(m.games for m in per_run)
    simulated = any(g.simulated for r in runs for g in r)
    common = {
        "runs": len(per_run),
        "games": games,
        "parse_failures": sum(m.parse_failures for m in per_run),
        "fallbacks": sum(m.fallbacks for m in per_run),
        "simulated": simulated,
    }
    if len(per_run) == 1:
        only = per_run[0]
        lengths = [float(g.total_turns) for g in played[0]]
        return MetricSummary(
            success_rate=only.success_rate,
            success_rate_se=_binomial_se(only.success_rate, only.games),
            precision=only.precision,
            precision_se=_binomial_se(only.precision, only.accused),
            game_length=only.game_length,
            game_length_se=_se(lengths),
            **common,
        )
    prec = [m.precision for m in per_run if not math.isnan(m.precision)]
    return MetricSummary(
        success_rate=_mean([m.success_rate for m in per_run]),
        success_rate_se=_se([m.success_rate for m in per_run]),
        precision=_mean(prec),
        precision_se=_se(prec),
        game_length=_mean([m.game_length for m in per_run]),
        game_length_se=_se([m.game_length for m in per_run]),
        **common,
    )
