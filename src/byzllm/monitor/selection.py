"""Choosing a monitor and its threshold on validation games (the rogue-agents paper, §4.2, App.
D.2).

**The grid** (D.2): for each role, every non-empty subset of {entropy, varentropy, kurtosis}
(turn count always in) × polynomial degree 1–5 × threshold τ ∈ {0, 0.01, …, 1}. Each
(features, degree) monitor is fit on the training games' turns of that role; on validation it
*triggers* on a game if its ``P(success)`` falls below τ at any of that role's turns (§2).

**The expected gain of intervening.** Let a validation set have N games with outcomes
``y_g ∈ {0, 1}`` and base Success-Rate ``b = Σ y_g / N`` (no interventions). With one reset,
a triggered game restarts from its last irreversible action — for WhoDunitEnv the start of the
game (§4.1) — and, its budget spent, then succeeds with the base probability ``b`` (the
reset game is a fresh draw of the same system). An untriggered game keeps ``y_g``. So the
expected Success-Rate with the monitor is ``(1/N) Σ_g [(1 - t_g) y_g + t_g b]`` with
``t_g = 1`` if triggered, and the expected gain over no intervention is

    gain(τ) = (1/N) Σ_g t_g(τ) (b - y_g) = (b · T_fail(τ) - (1 - b) · T_succ(τ)) / N

— each triggered failure gains ``b``, each triggered success loses ``1 - b``. This makes
precise D.2's rule (a monitor is right on a failed game it triggers on, wrong on a successful
one) and weighs the two errors by what they cost. ``τ = 0`` never triggers (``P ≥ 0``), so the
selected gain is never negative: a useless monitor is selected with τ = 0 and never fires.

**Random baseline** (D.2): a monitor that triggers at each of the role's turns independently
with probability ``p``. A game with ``n_g`` turns of the role is triggered with probability
``1 - (1 - p)^{n_g}``, so ``E[gain](p) = (1/N) Σ_g (1 - (1 - p)^{n_g}) (b - y_g)``; ``p`` is
chosen on the same grid {0, 0.01, …, 1} by the same criterion. (With equal game lengths this
is exactly 0 for every p; it is positive when failed games are longer, e.g. when they run
into the turn limit.)

**All roles together.** Each role has its own monitor and budget (§4.2), and at test time
they all run at once: a game is reset as soon as any role's monitor fires. The system's
expected gain is therefore that of the *union* of the roles' triggers, which is not the sum
of their standalone gains (a game two roles catch counts once; a role's false alarms may
buy nothing the other role does not already catch). :func:`joint_choice` picks the roles'
(features, degree, τ) together by coordinate ascent on the union gain
(``train_monitor_set(joint=True)``); the default, as in the paper's Table 5, is each role's
standalone choice, which searched a smaller space and held up better on test games.

**Ablations** (§6.1, Table 3). To check that the gain comes from the monitor, the paper also
evaluates the classifiers that did second best and worst on validation. Every (features,
degree) candidate of a role is ranked by its standalone validation gain at its own best τ —
the criterion that picks the selected monitor — ties kept in enumeration order (simpler
first). :func:`grid_ablations` returns the best-ranked candidate other than the selected one
(*second best*) and the lowest-ranked one (*worst*), each with its own τ. The turn count is
an input of every candidate, so the grid cannot say what the uncertainty features add over
the turn count alone; :func:`select_turn_only_monitor` fits the same ridge on the turn
count only (:data:`~byzllm.monitor.estimator.TURN_ONLY`), over the same degrees and
thresholds by the same criterion, as the control. And the selected monitor may combine
features, so the grid alone cannot say whether the combination beats one feature:
:func:`best_single_feature` is the best-ranked candidate on one uncertainty feature (with the
turn count), chosen on validation by the same criterion. None of these takes part in the
selection, and none is chosen on test games.

**Speed.** The τ sweep is vectorized: per game, only the minimum score matters; sorting the
minima and taking cumulative sums of ``b - y_g`` gives the gain at every τ with one
``searchsorted``. Ties are broken towards the simpler monitor (fewer features, lower degree,
smaller τ), by enumeration order: :func:`fit_role_candidates` lists the candidates by number
of features, then degree, and τ runs upwards.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Literal

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict

from byzllm.errors import InputError

from .dataset import TurnDataset
from .estimator import TURN_ONLY, UncertaintyMonitor
from .features import UNCERTAINTY_FEATURES

__all__ = [
    "ABLATIONS",
    "DEFAULT_DEGREES",
    "DEFAULT_GRID",
    "Ablation",
    "AblationChoice",
    "GridPoint",
    "RandomBaselineChoice",
    "RoleCandidates",
    "RoleSelection",
    "best_single_feature",
    "expected_gain",
    "feature_subsets",
    "fit_role_candidates",
    "game_min_scores",
    "grid_ablations",
    "joint_choice",
    "random_gain_curve",
    "rank_candidates",
    "select_random_baseline",
    "select_role_monitor",
    "select_turn_only_monitor",
    "selection_for",
    "threshold_gain_curve",
]

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

#: Thresholds (and random-trigger probabilities) searched: 0, 0.01, …, 1 (exact hundredths).
DEFAULT_GRID: FloatArray = np.arange(101) / 100.0
#: Polynomial degrees searched (D.2: D ∈ [1, 5]).
DEFAULT_DEGREES: tuple[int, ...] = (1, 2, 3, 4, 5)
# Gains closer than this are ties (kept by the earlier, simpler candidate).
_TIE = 1e-12

#: A monitor trained next to the selected one for the ablations (module docstring).
Ablation = Literal["second-best", "worst", "turn-only", "single-feature"]
#: Every ablation monitor, in report order (the rogue-agents paper, Table 3, then the
#: controls: the turn count alone, and the best monitor of a single uncertainty feature).
ABLATIONS: tuple[Ablation, ...] = ("second-best", "worst", "turn-only", "single-feature")


def feature_subsets() -> list[tuple[str, ...]]:
    """Every non-empty subset of the uncertainty features, smallest first (7 subsets)."""
    return [
        combo
        for size in range(1, len(UNCERTAINTY_FEATURES) + 1)
        for combo in combinations(UNCERTAINTY_FEATURES, size)
    ]


def expected_gain(triggered: npt.ArrayLike, success: npt.ArrayLike, base_rate: float) -> float:
    """``(1/N) Σ t_g (b - y_g)``: expected Success-Rate gain of one reset (module docstring)."""
    t = np.asarray(triggered, dtype=np.float64)
    y = np.asarray(success, dtype=np.float64)
    if t.shape != y.shape or t.ndim != 1 or t.size == 0:
        raise InputError("triggered and success must be non-empty 1-D arrays of equal length")
    return float(np.sum(t * (base_rate - y)) / t.size)


def game_min_scores(scores: npt.ArrayLike, game_index: npt.ArrayLike, n_games: int) -> FloatArray:
    """The lowest score of each game; ``+inf`` for games with no scored turn (never trigger)."""
    out = np.full(n_games, np.inf)
    np.minimum.at(out, np.asarray(game_index, dtype=np.int64), np.asarray(scores, dtype=float))
    return out


def threshold_gain_curve(
    min_scores: npt.ArrayLike,
    success: npt.ArrayLike,
    base_rate: float,
    thresholds: npt.ArrayLike = DEFAULT_GRID,
) -> FloatArray:
    """Expected gain at every τ, where game g triggers iff ``min_scores[g] < τ``.

    Vectorized: sort the per-game minima, cumulative-sum ``b - y_g`` in that order, and read
    off the prefix that lies strictly below each τ.
    """
    m = np.asarray(min_scores, dtype=np.float64)
    y = np.asarray(success, dtype=np.float64)
    if m.shape != y.shape or m.ndim != 1 or m.size == 0:
        raise InputError("min_scores and success must be non-empty 1-D arrays of equal length")
    return _weighted_curve(m, base_rate - y, np.asarray(thresholds, dtype=np.float64))


def _weighted_curve(minima: FloatArray, weights: FloatArray, taus: FloatArray) -> FloatArray:
    """``(1/N) Σ_g 1[minima_g < τ] weights_g`` for every τ (sort + cumulative sum)."""
    order = np.argsort(minima, kind="stable")
    prefix = np.concatenate([[0.0], np.cumsum(weights[order])])
    below = np.searchsorted(minima[order], taus, side="left")
    return np.asarray(prefix[below] / minima.size, dtype=np.float64)


def random_gain_curve(
    turns_per_game: npt.ArrayLike,
    success: npt.ArrayLike,
    base_rate: float,
    probabilities: npt.ArrayLike = DEFAULT_GRID,
) -> FloatArray:
    """Expected gain of the random monitor at every trigger probability ``p``."""
    n = np.asarray(turns_per_game, dtype=np.float64)
    y = np.asarray(success, dtype=np.float64)
    if n.shape != y.shape or n.ndim != 1 or n.size == 0:
        raise InputError("turns_per_game and success must be non-empty 1-D arrays")
    p = np.asarray(probabilities, dtype=np.float64)[:, None]
    hit = 1.0 - (1.0 - p) ** n[None, :]
    return np.asarray(hit @ (base_rate - y) / n.size, dtype=np.float64)


class GridPoint(BaseModel):
    """The best τ of one (features, degree) candidate on validation."""

    model_config = ConfigDict(frozen=True)

    features: tuple[str, ...]
    degree: int
    threshold: float
    gain: float


class RoleSelection(BaseModel):
    """The winner for one role (a Table 5 row) and the whole grid it was chosen from."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    role: str
    features: tuple[str, ...]
    degree: int
    threshold: float
    gain: float
    base_rate: float
    n_train_turns: int
    n_validation_games: int
    grid: list[GridPoint]
    monitor: UncertaintyMonitor


class RandomBaselineChoice(BaseModel):
    """The random monitor's trigger probability for one role, and its expected gain."""

    model_config = ConfigDict(frozen=True)

    role: str
    probability: float
    gain: float


def _best_index(gains: FloatArray) -> int:
    best = 0
    for i in range(1, gains.size):
        if gains[i] > gains[best] + _TIE:
            best = i
    return best


class RoleCandidates(BaseModel):
    """Every (features, degree) monitor of one role, fit on train and scored on validation."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    role: str
    monitors: list[UncertaintyMonitor]
    minima: list[FloatArray]  # per candidate: each validation game's lowest P(success)
    n_train_turns: int


def fit_role_candidates(
    train: TurnDataset,
    validation: TurnDataset,
    role: str,
    *,
    degrees: Sequence[int] = DEFAULT_DEGREES,
    subsets: Sequence[Sequence[str]] | None = None,
    alpha: float = 1.0,
) -> RoleCandidates:
    """Fit the 7 × 5 monitors of one role and take each validation game's minimum score.

    The candidates come simplest first — fewer features, then lower degree (subsets of one
    size in ``subsets`` order) — because every tie in the selection and the ablation ranking
    goes to the earlier candidate (module docstring, *Speed*).
    """
    train_mask = train.role_mask(role)
    if not train_mask.any():
        raise InputError(f"no training turns for role {role!r}")
    if validation.n_games == 0:
        raise InputError("no validation games")
    x_train = train.x[train_mask]
    y_train = train.turn_success[train_mask]
    if y_train.all() or not y_train.any():
        raise InputError(
            f"role {role!r}: training turns must include both successful and failed games "
            "(a monitor cannot learn from one outcome); collect more training games"
        )
    val_mask = validation.role_mask(role)
    x_val = validation.x[val_mask]
    val_games = validation.game_index[val_mask]
    monitors: list[UncertaintyMonitor] = []
    minima: list[FloatArray] = []
    grid = [
        (tuple(features), degree)
        for features in (subsets if subsets is not None else feature_subsets())
        for degree in degrees
    ]
    # Subset by subset would put one feature at degree 5 before another at degree 1.
    grid.sort(key=lambda candidate: (len(candidate[0]), candidate[1]))
    for features, degree in grid:
        monitor = UncertaintyMonitor(features=features, degree=degree, alpha=alpha)
        monitor.fit(x_train, y_train)
        scores = monitor.predict_success(x_val) if x_val.shape[0] else np.zeros(0)
        monitors.append(monitor)
        minima.append(game_min_scores(scores, val_games, validation.n_games))
    return RoleCandidates(
        role=role, monitors=monitors, minima=minima, n_train_turns=int(train_mask.sum())
    )


def selection_for(
    candidates: RoleCandidates,
    validation: TurnDataset,
    base_rate: float,
    taus: FloatArray,
    chosen: tuple[int, int] | None = None,
) -> RoleSelection:
    """The role's grid (best τ per candidate, standalone) and the chosen or best entry.

    ``chosen`` is ``(candidate index, τ index)``; ``None`` takes the standalone best.
    """
    weights = base_rate - validation.game_success.astype(np.float64)
    grid: list[GridPoint] = []
    best_tau: list[int] = []
    for monitor, minima in zip(candidates.monitors, candidates.minima, strict=True):
        gains = _weighted_curve(minima, weights, taus)
        k = _best_index(gains)
        best_tau.append(k)
        grid.append(
            GridPoint(
                features=monitor.features,
                degree=monitor.degree,
                threshold=float(taus[k]),
                gain=float(gains[k]),
            )
        )
    if chosen is None:
        index = _best_index(np.array([g.gain for g in grid]))
        chosen = (index, best_tau[index])
    index, k = chosen
    monitor = candidates.monitors[index]
    triggered = candidates.minima[index] < taus[k]
    return RoleSelection(
        role=candidates.role,
        features=monitor.features,
        degree=monitor.degree,
        threshold=float(taus[k]),
        gain=float(np.sum(weights[triggered]) / validation.n_games),
        base_rate=base_rate,
        n_train_turns=candidates.n_train_turns,
        n_validation_games=validation.n_games,
        grid=grid,
        monitor=monitor,
    )


def select_role_monitor(
    train: TurnDataset,
    validation: TurnDataset,
    role: str,
    *,
    degrees: Sequence[int] = DEFAULT_DEGREES,
    subsets: Sequence[Sequence[str]] | None = None,
    thresholds: npt.ArrayLike = DEFAULT_GRID,
    alpha: float = 1.0,
    base_rate: float | None = None,
) -> RoleSelection:
    """Run the D.2 grid for one role and return the monitor with the highest expected gain.

    ``base_rate`` defaults to the validation games' Success-Rate.
    """
    candidates = fit_role_candidates(
        train, validation, role, degrees=degrees, subsets=subsets, alpha=alpha
    )
    b = validation.base_rate if base_rate is None else float(base_rate)
    return selection_for(candidates, validation, b, np.asarray(thresholds, dtype=np.float64))


def joint_choice(
    candidate_minima: Mapping[str, Sequence[FloatArray]],
    weights: npt.ArrayLike,
    thresholds: npt.ArrayLike = DEFAULT_GRID,
    *,
    max_rounds: int = 50,
) -> tuple[dict[str, tuple[int, int]], float]:
    """Choose every role's (candidate, τ) together, maximising the gain of their union.

    At test time all roles' monitors run at once, each with its own reset budget, so a game
    is reset as soon as *any* role's monitor fires. Under the one-reset model of the module
    docstring the system's expected gain is ``(1/N) Σ_g 1[some role fires on g] w_g`` with
    ``w_g = b - y_g`` — not the sum of the roles' standalone gains, which counts a game
    caught by two roles twice and lets each role pay for false alarms the other makes
    redundant. Coordinate ascent: starting from each role's first candidate at the first τ
    (with the default grid τ = 0, which never fires), each role in turn takes the
    (candidate, τ) with the best gain on the games the other roles do not already catch;
    a role switches only on a strict improvement, so the union gain never decreases and the
    loop ends. Returns ``{role: (candidate index, τ index)}`` and the union gain of exactly
    those choices.
    """
    w = np.asarray(weights, dtype=np.float64)
    taus = np.asarray(thresholds, dtype=np.float64)
    roles = list(candidate_minima)
    n = w.size
    choice = {r: (0, 0) for r in roles}
    # What the starting choice fires on: nothing at τ = 0, but a grid without 0 starts from
    # a choice that fires, and a role that never switches keeps it.
    fired = {r: np.asarray(candidate_minima[r][0]) < taus[0] for r in roles}
    for _ in range(max_rounds):
        changed = False
        for role in roles:
            others = np.zeros(n, dtype=bool)
            for other in roles:
                if other != role:
                    others |= fired[other]
            masked = np.where(others, 0.0, w)
            best_gain = float(np.sum(masked[fired[role]]) / n)
            best = choice[role]
            for index, minima in enumerate(candidate_minima[role]):
                gains = _weighted_curve(np.asarray(minima, dtype=np.float64), masked, taus)
                k = _best_index(gains)
                if gains[k] > best_gain + _TIE:
                    best_gain, best = float(gains[k]), (index, k)
            if best != choice[role]:
                choice[role] = best
                fired[role] = np.asarray(candidate_minima[role][best[0]]) < taus[best[1]]
                changed = True
        if not changed:
            break
    union = np.zeros(n, dtype=bool)
    for role in roles:
        union |= fired[role]
    return choice, float(np.sum(w[union]) / n)


def select_random_baseline(
    validation: TurnDataset,
    role: str,
    *,
    probabilities: npt.ArrayLike = DEFAULT_GRID,
    base_rate: float | None = None,
) -> RandomBaselineChoice:
    """Choose the random monitor's ``p`` for ``role`` on validation by expected gain (D.2)."""
    if validation.n_games == 0:
        raise InputError("no validation games")
    b = validation.base_rate if base_rate is None else float(base_rate)
    ps = np.asarray(probabilities, dtype=np.float64)
    gains = random_gain_curve(validation.turns_per_game(role), validation.game_success, b, ps)
    k = _best_index(gains)
    return RandomBaselineChoice(role=role, probability=float(ps[k]), gain=float(gains[k]))


class AblationChoice(BaseModel):
    """One role's ablation monitor: what it reads, its τ and its validation gain.

    ``rank`` is its place among the role's ``n_candidates`` grid candidates by validation
    gain (1 = best); ``None`` for the turn-only control, which is not in the grid.
    """

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    role: str
    ablation: Ablation
    features: tuple[str, ...]
    degree: int
    threshold: float
    gain: float
    rank: int | None
    n_candidates: int
    monitor: UncertaintyMonitor


def rank_candidates(gains: Sequence[float] | npt.ArrayLike) -> list[int]:
    """Candidate indices from the highest gain to the lowest; ties keep their order.

    Gains within ``1e-12`` are ties (floating-point sums of the same games), so the earlier —
    simpler — candidate ranks higher, as in the selection.
    """
    values = np.asarray(gains, dtype=np.float64)
    # Rounding to the tie tolerance makes equal sums of different float order compare equal.
    keys = np.round(values / _TIE) * _TIE
    return [int(i) for i in np.argsort(-keys, kind="stable")]


def grid_ablations(candidates: RoleCandidates, selection: RoleSelection) -> list[AblationChoice]:
    """The second-best and worst candidates of ``selection``'s grid (the paper's Table 3).

    Ranked by :func:`rank_candidates` on each candidate's best standalone gain; *second best*
    is the highest-ranked candidate that is not the selected monitor, *worst* the
    lowest-ranked one. Each keeps its own best τ. A grid of a single candidate has neither.
    """
    grid = selection.grid
    if len(grid) != len(candidates.monitors):
        raise InputError("the selection's grid does not match the candidates")
    selected = next((i for i, m in enumerate(candidates.monitors) if m is selection.monitor), None)
    if selected is None:
        raise InputError("the selected monitor is not one of the candidates")
    order = rank_candidates([g.gain for g in grid])
    others = [i for i in order if i != selected]
    if not others:
        return []
    picks: list[tuple[Ablation, int]] = [("second-best", others[0]), ("worst", others[-1])]
    return [
        AblationChoice(
            role=selection.role,
            ablation=name,
            features=grid[index].features,
            degree=grid[index].degree,
            threshold=grid[index].threshold,
            gain=grid[index].gain,
            rank=order.index(index) + 1,
            n_candidates=len(grid),
            monitor=candidates.monitors[index],
        )
        for name, index in picks
    ]


def best_single_feature(
    candidates: RoleCandidates, selection: RoleSelection
) -> AblationChoice | None:
    """The best candidate of ``selection``'s grid that reads one uncertainty feature.

    Ranked like the selection (:func:`rank_candidates` on each candidate's standalone
    validation gain at its own best τ), so the choice is made on validation games only. When
    the selected monitor itself reads one feature it is its own best single-feature monitor
    (the difference between the two is then 0 by construction, and reports say so). ``None``
    when the grid has no single-feature candidate.
    """
    grid = selection.grid
    if len(grid) != len(candidates.monitors):
        raise InputError("the selection's grid does not match the candidates")
    order = rank_candidates([g.gain for g in grid])
    singles = [i for i in order if len(grid[i].features) == 1]
    if not singles:
        return None
    index = singles[0]
    return AblationChoice(
        role=selection.role,
        ablation="single-feature",
        features=grid[index].features,
        degree=grid[index].degree,
        threshold=grid[index].threshold,
        gain=grid[index].gain,
        rank=order.index(index) + 1,
        n_candidates=len(grid),
        monitor=candidates.monitors[index],
    )


def select_turn_only_monitor(
    train: TurnDataset,
    validation: TurnDataset,
    role: str,
    *,
    degrees: Sequence[int] = DEFAULT_DEGREES,
    thresholds: npt.ArrayLike = DEFAULT_GRID,
    alpha: float = 1.0,
    base_rate: float | None = None,
) -> AblationChoice:
    """The turn-count-only monitor of ``role``: the same ridge, degrees, τ grid and criterion
    as :func:`select_role_monitor`, on the turn count alone."""
    selection = select_role_monitor(
        train,
        validation,
        role,
        degrees=degrees,
        subsets=[TURN_ONLY],
        thresholds=thresholds,
        alpha=alpha,
        base_rate=base_rate,
    )
    return AblationChoice(
        role=role,
        ablation="turn-only",
        features=selection.features,
        degree=selection.degree,
        threshold=selection.threshold,
        gain=selection.gain,
        rank=None,
        n_candidates=len(selection.grid),
        monitor=selection.monitor,
    )
