"""Live interventions (the rogue-agents paper, §2 "Live interventions", §4.2, §6.1) behind the env
seam.

The game loop shows every turn to an :class:`~byzllm.envs.Intervener` after the agent produced
its action and *before* it takes effect. :class:`MonitorIntervener` scores the turn with its
role's monitor; if ``P(success) < τ`` and the role still has reset budget (1 or 2 per role in
WhoDunitEnv, §4.2: "agents with different roles … can each trigger up to the cap"), it answers
``"reset"`` — the environment rolls back to its last irreversible action — or, for the §6.1
ablation, ``"resample"`` (discard the action and ask the agent again). Otherwise
``"continue"``. :class:`RandomIntervener` is the D.2 baseline: it triggers at each of a
role's turns with probability ``p``.

Both only read :class:`~byzllm.envs.TurnObservation`, so they work unchanged for any
environment; both keep per-game state keyed by ``game_id``, so one instance may serve many
concurrent games, each played once: the budget of a game id is spent once, so a repeat of the
same game needs a fresh instance (the experiments build one per play). Every trigger is
logged (:attr:`triggers`) for precision analysis and the trigger-turn histogram of App. E.1;
a budget of 0 gives a *shadow* monitor that logs would-be triggers but never intervenes.
"""

from __future__ import annotations

import hashlib
import threading
from collections import defaultdict
from collections.abc import Mapping
from typing import Any, Literal, Self

import numpy as np
from pydantic import BaseModel, ConfigDict

from byzllm.envs import Decision, TurnObservation
from byzllm.errors import InputError

from .features import observation_features
from .monitor_set import MonitorSet

__all__ = [
    "InterventionMode",
    "MonitorIntervener",
    "RandomIntervener",
    "Trigger",
    "TurnClock",
    "TurnScore",
    "scoring_error_count",
]

#: What a trigger does: roll back (§2) or resample the agent (§6.1 ablation).
InterventionMode = Literal["reset", "resample"]
#: Which turn count a monitor sees: counted from the last reset, or the game's total.
TurnClock = Literal["since_reset", "total"]


class _AtTurn(BaseModel):
    """Which turn of which game a :class:`Trigger` or :class:`TurnScore` is about."""

    model_config = ConfigDict(frozen=True)

    game_id: str
    turn: int
    role: str
    agent: str

    @classmethod
    def at(cls, obs: TurnObservation, **values: Any) -> Self:
        """The record of ``obs``'s turn with the other fields ``values``."""
        return cls(game_id=obs.game_id, turn=obs.turn, role=obs.role, agent=obs.agent, **values)


class Trigger(_AtTurn):
    """One turn on which the intervener fired (or would have, when out of budget)."""

    score: float | None
    acted: bool


def _budget_map(budget: int | Mapping[str, int], roles: list[str]) -> dict[str, int]:
    if isinstance(budget, int):
        result = dict.fromkeys(roles, budget)
    else:
        result = {str(r): int(b) for r, b in budget.items()}
    for role, b in result.items():
        if b < 0:
            raise InputError(f"role {role!r}: reset budget must be >= 0, got {b}")
    return result


def _check_mode(mode: str) -> InterventionMode:
    if mode == "reset":
        return "reset"
    if mode == "resample":
        return "resample"
    raise InputError(f"intervention mode must be 'reset' or 'resample', got {mode!r}")


class TurnScore(_AtTurn):
    """A monitor's ``P(success)`` for one scored turn (what a viewer plots per turn)."""

    score: float


class _BudgetedIntervener:
    """Per-game, per-role budget bookkeeping shared by both interveners."""

    def __init__(self, budget: dict[str, int], mode: str) -> None:
        self.budget = budget
        self.mode: InterventionMode = _check_mode(mode)
        self.triggers: list[Trigger] = []
        #: Every turn a monitor scored, triggered or not (empty for the random baseline).
        self.scores: list[TurnScore] = []
        self._used: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        # Total turns before the current run of each game (moved by our own interventions).
        self._offset: dict[str, int] = defaultdict(int)
        self._lock = threading.Lock()

    def run_turn(self, obs: TurnObservation) -> int:
        """The environment's turn clock, the one monitors are trained on.

        :attr:`TurnObservation.run_turn` when the environment reports it (every game loop
        here does: WhoDunitEnv's turn since the last reset, GovSim's month, CodeGen's
        feedback round). Otherwise inferred as WhoDunitEnv counts: a reset at total turn
        ``T`` starts a new run at ``T + 1`` and a resample retries the same run turn; only
        this intervener's own interventions are known to it then.
        """
        if obs.run_turn is not None:
            return obs.run_turn
        return max(1, obs.turn - self._offset.get(obs.game_id, 0))

    def interventions_used(self, game_id: str) -> dict[str, int]:
        """How many interventions each role spent in ``game_id``."""
        return dict(self._used.get(game_id, {}))

    def game_triggers(self, game_id: str) -> list[Trigger]:
        return [t for t in self.triggers if t.game_id == game_id]

    def game_scores(self, game_id: str) -> list[TurnScore]:
        """The monitor's ``P(success)`` on every scored turn of ``game_id``, in turn order."""
        return [s for s in self.scores if s.game_id == game_id]

    def _fire(self, obs: TurnObservation, score: float | None) -> Decision:
        with self._lock:
            used = self._used[obs.game_id]
            acted = used[obs.role] < self.budget.get(obs.role, 0)
            if acted:
                used[obs.role] += 1
                if self.mode == "reset":
                    self._offset[obs.game_id] = obs.turn
                else:
                    self._offset[obs.game_id] += 1
            self.triggers.append(Trigger.at(obs, score=score, acted=acted))
        return self.mode if acted else "continue"


class MonitorIntervener(_BudgetedIntervener):
    """Intervene when a role's monitor predicts failure (the rogue-agents paper, §2, §4.2).

    ``budget`` is the cap on interventions per role per game (an int for every role, or a
    mapping); roles without a monitor are never interrupted. ``thresholds`` overrides the
    monitor set's τ per role. ``renormalize`` must match how the monitors' training
    features were computed (default True, see :mod:`byzllm.monitor.features`).

    ``turn_clock`` says which turn count the monitor sees. ``"since_reset"`` (default): the
    environment's turn clock, the one the monitors are trained on
    (:attr:`TurnObservation.run_turn`, inferred when an environment does not set it). In
    WhoDunitEnv that is the turn within the current run, restarting after each reset, as in
    the paper's reference implementation (its monitor reads the game turn minus the turns of
    previous runs); feeding the grown total count instead would make every post-reset turn
    look like a late, failing one (and spend the other roles' budgets at once). In GovSim it
    is the month, in CodeGen the feedback round. ``"total"`` uses
    :attr:`TurnObservation.turn` unchanged: in WhoDunitEnv the total turn count, which
    agrees with the training clock only until the first reset; in GovSim and CodeGen a
    count of decisions (GovSim, 5 fishers: 6-10 in month 2, 56-60 in month 12, where the
    monitors learned 2 and 12), a different unit from the one the monitors were trained on.
    """

    def __init__(
        self,
        monitors: MonitorSet,
        *,
        budget: int | Mapping[str, int] = 1,
        mode: str = "reset",
        thresholds: Mapping[str, float] | None = None,
        renormalize: bool = True,
        turn_clock: TurnClock = "since_reset",
    ) -> None:
        super().__init__(_budget_map(budget, list(monitors.roles)), mode)
        if turn_clock not in ("since_reset", "total"):
            raise InputError(f"turn_clock must be 'since_reset' or 'total', got {turn_clock!r}")
        self.turn_clock: TurnClock = turn_clock
        self.monitors = monitors
        self.thresholds = monitors.thresholds()
        if thresholds is not None:
            self.thresholds.update({str(r): float(t) for r, t in thresholds.items()})
        self.renormalize = renormalize
        #: Turns that could not be scored (malformed distributions), one line each.
        self.scoring_errors: list[str] = []

    def score(self, obs: TurnObservation) -> float | None:
        """``P(success)`` of this turn by its role's monitor; ``None`` for unmonitored roles."""
        role_monitor = self.monitors.roles.get(obs.role)
        if role_monitor is None:
            return None
        features = observation_features(obs, renormalize=self.renormalize)
        if self.turn_clock == "since_reset":
            features = features.model_copy(update={"turn": self.run_turn(obs)})
        return role_monitor.score(features)

    def decide(self, obs: TurnObservation) -> Decision:
        try:
            score = self.score(obs)
        except InputError as err:
            # Malformed log-probabilities from a server: this turn cannot be scored. Like the
            # paper's implementation (it skips turns whose uncertainty is invalid) the turn
            # goes on unmonitored; the error is kept, never silently dropped.
            with self._lock:
                self.scoring_errors.append(f"{obs.game_id} turn {obs.turn}: {err}"[:500])
            return "continue"
        if score is None:
            return "continue"
        with self._lock:
            self.scores.append(TurnScore.at(obs, score=round(float(score), 4)))
        if not score < self.thresholds[obs.role]:
            return "continue"
        return self._fire(obs, score)


class RandomIntervener(_BudgetedIntervener):
    """The random baseline of D.2: trigger at a role's turn with probability ``p[role]``.

    Draws are reproducible per game regardless of how concurrent games interleave: each game
    gets its own generator seeded from ``(seed, game_id)``.
    """

    def __init__(
        self,
        probabilities: float | Mapping[str, float],
        *,
        budget: int | Mapping[str, int] = 1,
        mode: str = "reset",
        seed: int = 0,
        roles: list[str] | None = None,
    ) -> None:
        if isinstance(probabilities, int | float):
            if roles is None:
                raise InputError("a single probability needs the list of roles")
            probs = dict.fromkeys(roles, float(probabilities))
        else:
            probs = {str(r): float(p) for r, p in probabilities.items()}
        for role, p in probs.items():
            if not 0.0 <= p <= 1.0:
                raise InputError(f"role {role!r}: probability must be in [0, 1], got {p}")
        super().__init__(_budget_map(budget, list(probs)), mode)
        self.probabilities = probs
        self.seed = seed
        self._rngs: dict[str, np.random.Generator] = {}

    def _rng(self, game_id: str) -> np.random.Generator:
        rng = self._rngs.get(game_id)
        if rng is None:
            digest = hashlib.sha256(game_id.encode("utf-8")).digest()
            rng = np.random.default_rng([self.seed, int.from_bytes(digest[:8], "little")])
            self._rngs[game_id] = rng
        return rng

    def decide(self, obs: TurnObservation) -> Decision:
        p = self.probabilities.get(obs.role)
        if p is None:
            return "continue"
        with self._lock:
            draw = float(self._rng(obs.game_id).random())
        if not draw < p:
            return "continue"
        return self._fire(obs, None)


def scoring_error_count(intervener: object) -> int:
    """How many turns a game's monitor failed to score (stored with the game); 0 for any
    intervener without monitors, or none."""
    return len(intervener.scoring_errors) if isinstance(intervener, MonitorIntervener) else 0
