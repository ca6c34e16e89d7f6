"""Ablations of a monitor evaluation, with bootstrap intervals (the rogue-agents paper, §6.1,
Table 3).

Table 3 checks that the gain comes from the monitor: the second-best and the worst monitor of
the selection, resampling instead of resetting, the best random baseline, no intervention. The
turn count is an input of every monitor, though, so none of those rows says what the
*uncertainty features* add; the turn-count-only monitor (same ridge, degrees, thresholds and
criterion, no uncertainty feature) does: :func:`feature_gain` is the selected monitor's
Success-Rate minus that monitor's, with one reset each. And the selected monitor may combine
features where one would do: the best single-feature monitor (each role's best grid
candidate on one uncertainty feature, chosen on validation) is the second control.
:func:`monitor_gains` gives the selected monitor's gain over both (:data:`CONTROLS`), and
every monitor report shows both with their intervals; a gain whose 95% interval contains 0
is called "not significant" (:func:`verdict`).

**Intervals.** A difference of Success-Rates between two conditions gets a 95% percentile
bootstrap interval (:data:`~byzllm.runs._intervals.BOOTSTRAP_METHOD`). Conditions
play the same test games with the same agent random streams (common random numbers), so
where two conditions share (game, repeat) pairs the difference is *paired*: per game, the
mean over its shared repeats of ``success(a) - success(b)``, resampled over games (a game's
repeats share its suspects, so the game is the unit). Without a shared pair the two sets of
games are resampled together as one pool, unpaired.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict

from byzllm.monitor.conditions import ABLATION_CONDITIONS, CONDITION_LABELS
from byzllm.monitor.dataset import game_success
from byzllm.runs import BOOTSTRAP_METHOD, bootstrap_interval, sign_counts, sign_test_p
from byzllm.runs.reports import format_bounds, format_interval

from .._order import NaturalKey, natural_key

__all__ = [
    "ABLATION_MEANINGS",
    "ABLATION_ORDER",
    "CONTROLS",
    "Difference",
    "ablation_rows",
    "control_gain_rows",
    "feature_gain",
    "feature_gain_sentence",
    "gain_sentence",
    "interval_note",
    "interval_verdict",
    "monitor_gains",
    "not_evaluated",
    "success_difference",
    "verdict",
    "verdict_flag",
]

#: Rows of the ablation table, in the order of the rogue-agents paper's Table 3 (the
#: turn-count-only control after the monitors it is compared with).
ABLATION_ORDER: tuple[str, ...] = (
    "monitor-2",
    "monitor-1",
    "second-best-1",
    "worst-1",
    "turn-only-1",
    "single-feature-1",
    "resample-1",
    "random-1",
    "random-2",
    "none",
)
#: What each row of the ablation table measures.
ABLATION_MEANINGS: dict[str, str] = {
    "monitor-2": "selected monitors, up to two resets per role",
    "monitor-1": "selected monitors (best validation gain), one reset per role",
    "second-best-1": "each role's 2nd-best grid monitor on validation, one reset",
    "worst-1": "each role's worst grid monitor on validation, one reset",
    "turn-only-1": "a monitor of the turn count alone, no uncertainty feature, one reset",
    "single-feature-1": "each role's best grid monitor of one uncertainty feature, one reset",
    "resample-1": "selected monitors, resample the agent instead of resetting",
    "random-1": "random triggers at the validation-chosen rate, one reset",
    "random-2": "random triggers, up to two resets",
    "none": "no intervention",
}
#: The condition the ablations are measured against, and the control for the features.
_SELECTED = "monitor-1"
_TURN_ONLY = "turn-only-1"
_SINGLE = "single-feature-1"
#: The controls every monitor report sets the selected monitor (one reset) against, and how
#: the report names them.
CONTROLS: dict[str, str] = {
    _TURN_ONLY: "the turn-count-only monitor",
    _SINGLE: "the best single-feature monitor",
}

FloatArray = npt.NDArray[np.float64]


class Difference(BaseModel):
    """Success-Rate of ``a`` minus that of ``b`` (fractions) with its bootstrap interval.

    ``n`` is the number of resampled units: games when ``paired``, else games of both
    conditions together; ``pairs`` the (game, repeat) pairs both conditions played.
    """

    model_config = ConfigDict(frozen=True)

    a: str
    b: str
    value: float
    low: float
    high: float
    n: int
    pairs: int
    paired: bool
    method: str
    #: Paired units (games) where ``a`` did better, and where ``b`` did (None when unpaired):
    #: the sign test of :func:`interval_verdict`.
    better: int | None = None
    worse: int | None = None


def interval_note(paired: bool | None = True) -> str:
    """How the intervals were computed, as captions state it (``None``: some paired, some
    not)."""
    if paired is None:
        units = (
            "units: test games, paired by game and repeat where two conditions share them, "
            "else the games of both conditions unpaired"
        )
    elif paired:
        units = (
            "units: test games, each condition paired with the other on the same game and repeats"
        )
    else:
        units = "units: the games of both conditions, unpaired"
    return f"{BOOTSTRAP_METHOD}; {units}"


def _test_games(game_rows: Iterable[dict[str, Any]], condition: str) -> dict[tuple[str, int], bool]:
    # Read strictly, as the per-condition table does (game_success): rows read back from CSV
    # carry the string "False", which bool() counts as a success.
    return {
        (str(g["game_id"]), int(g.get("repeat", 0))): game_success(g)
        for g in game_rows
        if g.get("condition") == condition and g.get("split", "test") == "test"
    }


def _game_order(key: tuple[str, int]) -> tuple[NaturalKey, int]:
    """A (game, repeat) pair's place among the units of an unpaired bootstrap."""
    return natural_key(key[0]), key[1]


def _unpaired_statistic(data: FloatArray) -> float:
    """Mean success of the rows marked ``a`` minus that of the others; NaN if one is absent."""
    in_a = data[:, 1] > 0.5
    if in_a.all() or not in_a.any():
        return math.nan
    return float(data[in_a, 0].mean() - data[~in_a, 0].mean())


def success_difference(game_rows: Sequence[dict[str, Any]], a: str, b: str) -> Difference | None:
    """Success-Rate of condition ``a`` minus ``b`` on the test games, with a 95% interval.

    Paired over games where the two share (game, repeat) pairs (module docstring), else
    unpaired. ``None`` when either condition has no test game.
    """
    games_a = _test_games(game_rows, a)
    games_b = _test_games(game_rows, b)
    if not games_a or not games_b:
        return None
    shared = sorted(set(games_a) & set(games_b))
    if shared:
        per_game: dict[str, list[float]] = defaultdict(list)
        for key in shared:
            per_game[key[0]].append(float(games_a[key]) - float(games_b[key]))
        diffs = [sum(d) / len(d) for d in per_game.values()]
        interval = bootstrap_interval(diffs)
        paired = True
        better, worse = sign_counts(diffs)
        signs: dict[str, int | None] = {"better": better, "worse": worse}
    else:
        # In the order of the games' ids, not of the records (the pairs above are sorted too):
        # the bootstrap resamples positions, so the records' order would move the interval.
        pool = [(float(games_a[k]), 1.0) for k in sorted(games_a, key=_game_order)] + [
            (float(games_b[k]), 0.0) for k in sorted(games_b, key=_game_order)
        ]
        interval = bootstrap_interval(np.array(pool), _unpaired_statistic)
        paired = False
        signs = {"better": None, "worse": None}
    return Difference.model_validate(
        {
            "a": a,
            "b": b,
            **interval.to_dict(),
            "pairs": len(shared),
            "paired": paired,
            "method": interval_note(paired),
            **signs,
        }
    )


def feature_gain(game_rows: Sequence[dict[str, Any]]) -> Difference | None:
    """What the uncertainty features add: Success-Rate of the selected monitor minus the
    turn-count-only monitor's, one reset each; ``None`` unless both were evaluated."""
    return success_difference(game_rows, _SELECTED, _TURN_ONLY)


def interval_verdict(
    low: float | None,
    high: float | None,
    *,
    better: int | None = None,
    worse: int | None = None,
) -> str:
    """``"significant"`` when the 95% interval ``[low, high]`` excludes 0, ``"not
    significant"`` when it contains 0 (an end exactly at 0 included), ``"n/a"`` without
    one. A paired difference also needs its units to lean the interval's way (more
    ``better`` than ``worse`` above 0) and pass the exact sign test (ties left out:
    :func:`~byzllm.runs.sign_test_p` < 0.05): on a few units the percentile interval of
    differences that all agree has zero width and excludes 0 however few they are."""
    if low is None or high is None or math.isnan(low) or math.isnan(high):
        return "n/a"
    if low <= 0.0 <= high:
        return "not significant"
    if better is not None and worse is not None:
        # The units must lean the interval's way, and not by chance.
        leans = better > worse if low > 0.0 else worse > better
        if not leans or sign_test_p(better, worse) >= 0.05:
            return "not significant"
    return "significant"


def verdict_flag(
    low: float | None,
    high: float | None,
    *,
    better: int | None = None,
    worse: int | None = None,
) -> str:
    """What a report line adds after a gain's interval (:func:`interval_verdict`): nothing
    when significant, ``", not significant"`` (or ``", n/a"``) otherwise, and, where the
    interval excludes 0 but the units fail the sign test, the counts and p that decided it:
    ``"95% CI [+6.7, +33.3], not significant"`` alone read as a contradiction."""
    word = interval_verdict(low, high, better=better, worse=worse)
    if word == "significant":
        return ""
    excludes_zero = low is not None and high is not None and not low <= 0.0 <= high
    if word == "not significant" and excludes_zero and better is not None and worse is not None:
        p = sign_test_p(better, worse)
        return f", not significant (sign test: {better} better, {worse} worse, p = {p:.2f})"
    return f", {word}"


def verdict(gain: Difference | None) -> str:
    """:func:`interval_verdict` of a gain's interval; ``"n/a"`` without a gain."""
    if gain is None:
        return "n/a"
    return interval_verdict(gain.low, gain.high, better=gain.better, worse=gain.worse)


def monitor_gains(game_rows: Sequence[dict[str, Any]]) -> dict[str, Difference | None]:
    """The selected monitor's Success-Rate gain (one reset) over each of :data:`CONTROLS`, on
    the test games; ``None`` where either condition was not evaluated."""
    return {c: success_difference(game_rows, _SELECTED, c) for c in CONTROLS}


def not_evaluated(
    game_rows: Sequence[dict[str, Any]], requested: Iterable[str] | None
) -> dict[str, str]:
    """Why each ablation condition has no test game: ``{condition: reason}``.

    ``requested`` is the evaluation config's ``conditions`` (``None`` when unknown). An
    ablation condition that was asked for but has no game was skipped because the monitor
    set lacks its monitors (trained before ablations were kept).
    """
    played = {str(g.get("condition")) for g in game_rows if g.get("split", "test") == "test"}
    asked = None if requested is None else set(requested)
    retrain = "rerun `byzllm monitor train`, then `byzllm monitor evaluate`"
    reasons: dict[str, str] = {}
    for condition in (*ABLATION_CONDITIONS, "resample-1"):
        if condition in played:
            continue
        if asked is not None and condition not in asked:
            reasons[condition] = f"not evaluated: add {condition} to conditions"
        elif condition not in ABLATION_CONDITIONS:
            reasons[condition] = "not evaluated"
        elif asked is None:
            reasons[condition] = f"not evaluated: not trained or not in conditions; {retrain}"
        else:
            reasons[condition] = f"not trained; {retrain}"
    return reasons


def _points(d: Difference | None) -> dict[str, float | None]:
    if d is None:
        return {"value": None, "low": None, "high": None}
    return {"value": 100 * d.value, "low": 100 * d.low, "high": 100 * d.high}


def ablation_rows(
    evaluation: Sequence[dict[str, Any]], game_rows: Sequence[dict[str, Any]]
) -> list[dict[str, Any]]:
    """One row per evaluated condition, in Table 3 order: Success-Rate (± standard error, from
    ``evaluation``, :func:`~byzllm.monitor.report.evaluation_rows`), and the differences in
    points to no intervention and to the selected monitor with 95% intervals."""
    by = {str(r["condition"]): r for r in evaluation}
    order = [c for c in ABLATION_ORDER if c in by] + [c for c in by if c not in ABLATION_ORDER]
    rows: list[dict[str, Any]] = []
    for condition in order:
        r = by[condition]
        vs_none = None if condition == "none" else success_difference(game_rows, condition, "none")
        vs_selected = (
            None if condition == _SELECTED else success_difference(game_rows, condition, _SELECTED)
        )
        rows.append(
            {
                "condition": condition,
                "label": CONDITION_LABELS.get(condition, condition),
                "meaning": ABLATION_MEANINGS.get(condition, ""),
                "games": r["games"],
                "distinct_games": r["distinct_games"],
                "plays": r["plays"],
                "success_rate": r["success_rate"],
                "success_rate_se": r["success_rate_se"],
                "vs_none": _points(vs_none),
                "vs_selected": _points(vs_selected),
                "paired": all(d.paired for d in (vs_none, vs_selected) if d is not None),
                "simulated": bool(r.get("simulated")),
            }
        )
    return rows


def gain_sentence(
    control: str,
    gain: Difference | None,
    reasons: dict[str, str] | None = None,
    *,
    metric: str = "Success-Rate",
    units: str = "test games",
) -> str:
    """The report's line on the selected monitor's gain over ``control`` (a key of
    :data:`CONTROLS`): the gain in points, its 95% interval, and "not significant" when the
    interval contains 0 or the games fail the sign test (:func:`verdict_flag`). ``reasons``
    (:func:`not_evaluated`) says why a gain is missing; ``units`` names what was resampled
    (CodeGen: test problems)."""
    name = CONTROLS.get(control, control)
    if gain is None:
        why = (reasons or {}).get(control)
        detail = f"{control} {why}" if why else f"needs both {_SELECTED} and {control} evaluated"
        return f"monitor gain over {name}: n/a ({detail})"
    how = "paired" if gain.paired else "unpaired"
    flag = verdict_flag(gain.low, gain.high, better=gain.better, worse=gain.worse)
    points = format_interval(gain.value, scale=100, signed=True)
    bounds = format_bounds(gain.low, gain.high, scale=100, signed=True)
    return (
        f"monitor gain over {name}: {points} points of {metric} "
        f"(95% CI {bounds}{flag}; {how} bootstrap over {gain.n} {units})"
    )


def feature_gain_sentence(gain: Difference | None, reasons: dict[str, str] | None = None) -> str:
    """The report's line on what the uncertainty features add over the turn count."""
    return gain_sentence(_TURN_ONLY, gain, reasons)


def control_gain_rows(
    game_rows: Sequence[dict[str, Any]],
    reasons: dict[str, str] | None = None,
    *,
    metric: str = "Success-Rate",
    units: str = "test games",
) -> list[dict[str, Any]]:
    """The selected monitor's gains over :data:`CONTROLS` as report rows (JSON, CSV, pages):
    points with the 95% interval, the verdict ("significant" / "not significant" / "n/a")
    and the report's sentence (:func:`gain_sentence`, with ``metric`` and ``units``)."""
    rows: list[dict[str, Any]] = []
    for control, gain in monitor_gains(game_rows).items():
        rows.append(
            {
                "comparison": f"{_SELECTED} - {control}",
                "over": CONTROLS[control],
                **{k: None if v is None else round(v, 2) for k, v in _points(gain).items()},
                "games": None if gain is None else gain.n,
                "paired": None if gain is None else gain.paired,
                # Games where the monitor did better and worse: the verdict's sign test.
                "better": None if gain is None else gain.better,
                "worse": None if gain is None else gain.worse,
                "verdict": verdict(gain),
                "sentence": gain_sentence(control, gain, reasons, metric=metric, units=units),
            }
        )
    return rows
