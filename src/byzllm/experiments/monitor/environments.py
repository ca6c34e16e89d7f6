"""The environments the monitor pipeline plays, behind one small interface (the rogue-agents
paper evaluates its monitors on three: WhoDunitEnv, GovSim and CodeGen, §4.1).

``byzllm monitor collect / train / evaluate / report`` never name an environment: they ask the
registry for the one a config's ``env`` key names. An environment says

- :meth:`~MonitorEnvironment.instances`: the train, validation and test instances of a config
  (pydantic models with an ``id``; they go into the units' payloads, so their ids are stable);
  given ``trained_on``, the config the monitors were trained on when they are tested in
  another setting (another lineup size: the rogue-agents paper, Fig. 6; another seed), no
  instance repeats one of that config's training or validation instances;
- :meth:`~MonitorEnvironment.split_sizes`: how many instances each split holds at most,
  without drawing them (the config's bound on its units, :data:`byzllm.runs.MAX_UNITS`);
- :meth:`~MonitorEnvironment.load_instance`: an instance back from a payload;
- :meth:`~MonitorEnvironment.roles`: the roles a monitor is trained for (and the intervention
  budget is counted per, §4.2), and :meth:`~MonitorEnvironment.describe` for messages;
- :meth:`~MonitorEnvironment.play`: play one instance once, with an optional
  :class:`~byzllm.envs.Intervener`, and return a :class:`PlayedGame`: the monitored turns as
  :class:`~byzllm.envs.TurnObservation` (features are computed from them, the same way for
  every environment), the success a monitor predicts, the counts every report shows, and the
  environment's own outcome fields;
- ``metrics``: the outcome metrics its report shows (:class:`OutcomeMetric`; WhoDunit:
  Success-Rate, Precision, Game-Length; GovSim: Survival-Rate, Survival-Time, Efficiency);
- ``max_cap``: the most interventions per role it allows (GovSim and CodeGen: 1, §4.2), so
  ``monitor-2`` / ``random-2`` are skipped there.

**Adding an environment** (e.g. CodeGen): write a class with these members, call
:func:`register_environment` with an instance at import of this module (below), and add its
name to ``MonitorExperimentConfig.env``. Nothing else in the pipeline changes.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from byzllm.envs import Intervener, TurnObservation
from byzllm.errors import ConfigError, InputError

if TYPE_CHECKING:
    from byzllm.envs.govsim import GovSimResult
    from byzllm.envs.whodunit import Splits

    from .config import MonitorExperimentConfig

__all__ = [
    "ENVIRONMENTS",
    "MetricKind",
    "MonitorEnvironment",
    "OutcomeMetric",
    "PlayedGame",
    "get_environment",
    "register_environment",
]

#: How an outcome metric is summarized: a rate (fraction, shown in %) or a mean.
MetricKind = Literal["rate", "share", "mean"]


@dataclass(frozen=True)
class OutcomeMetric:
    """One metric an environment's report shows: the key in a game's ``outcome``, its label,
    and whether it is a rate (a share of games that succeed, shown ×100), a share (a value in
    [0, 1] per game, such as Efficiency, shown ×100) or a plain mean. Only a rate gets the
    Wilson interval where every game succeeded or failed: a share of 1 in every game is not
    a success counted over games."""

    key: str
    label: str
    kind: MetricKind = "mean"

    @property
    def scale(self) -> float:
        return 100.0 if self.kind in ("rate", "share") else 1.0


@dataclass
class PlayedGame:
    """One instance played once, as the monitor pipeline stores it.

    ``turns``: every monitored turn in play order (for training, the collect stage computes
    the features from each one's distributions). ``fields``: the environment's own fields of
    the game record (WhoDunit: variant, n_suspects, accused). ``outcome``: the values of the
    environment's :class:`OutcomeMetric` keys that are not already record fields.
    """

    game_id: str
    success: bool
    total_turns: int
    resets: int
    resamples: int
    parse_failures: int
    fallbacks: int
    simulated: bool
    parse: dict[str, dict[str, int]]
    turns: list[TurnObservation] = field(default_factory=list)
    fields: dict[str, Any] = field(default_factory=dict)
    outcome: dict[str, float] | None = None

    @classmethod
    def of(cls, result: Any, **values: Any) -> PlayedGame:
        """A played game whose counts (success, turns, resets, resamples, parse failures,
        fall-backs, simulated) are ``result``'s attributes of the same names, unless given."""
        counts = {name: getattr(result, name) for name in _COUNTS if name not in values}
        return cls(**counts, **values)


_COUNTS = (
    "success", "total_turns", "resets", "resamples", "parse_failures", "fallbacks", "simulated"
)  # fmt: skip


class MonitorEnvironment(Protocol):
    """What the monitor pipeline needs from an environment (module docstring)."""

    name: str
    metrics: tuple[OutcomeMetric, ...]
    max_cap: int | None

    def roles(self, cfg: MonitorExperimentConfig) -> tuple[str, ...]: ...

    def describe(self, cfg: MonitorExperimentConfig) -> str: ...

    def instances(
        self,
        cfg: MonitorExperimentConfig,
        split: str,
        *,
        trained_on: MonitorExperimentConfig | None = None,
    ) -> list[Any]: ...

    def split_sizes(self, cfg: MonitorExperimentConfig) -> dict[str, int]: ...

    def load_instance(self, data: Any) -> Any: ...

    def sim_params(self, cfg: MonitorExperimentConfig) -> dict[str, Any]: ...

    async def play(
        self,
        cfg: MonitorExperimentConfig,
        instance: Any,
        *,
        repeat: int,
        intervener: Intervener | None,
    ) -> PlayedGame: ...


ENVIRONMENTS: dict[str, MonitorEnvironment] = {}


def register_environment(env: MonitorEnvironment) -> MonitorEnvironment:
    """Add ``env`` under ``env.name`` (a later registration of the same name replaces it)."""
    ENVIRONMENTS[env.name] = env
    return env


def get_environment(name: str) -> MonitorEnvironment:
    """The environment registered as ``name``."""
    try:
        return ENVIRONMENTS[name]
    except KeyError:
        raise InputError(
            f"unknown monitor environment {name!r}; choose from {', '.join(sorted(ENVIRONMENTS))}"
        ) from None


def _limit(cfg: MonitorExperimentConfig, split: str) -> int | None:
    return {"train": cfg.n_train, "validation": cfg.n_validation, "test": cfg.n_test}[split]


class WhoDunitEnvironment:
    """WhoDunitEnv (the rogue-agents paper, §3, §4.1): the Accuser/Intel or symmetric players."""

    name: str = "whodunit"
    metrics: tuple[OutcomeMetric, ...] = (
        OutcomeMetric("success_rate", "Success-Rate", "rate"),
        OutcomeMetric("precision", "Precision", "rate"),
        OutcomeMetric("game_length", "Game-Length"),
    )
    max_cap: int | None = None

    def roles(self, cfg: MonitorExperimentConfig) -> tuple[str, ...]:
        from byzllm.envs.whodunit import VARIANT_ROLES

        return tuple(VARIANT_ROLES[cfg.game.variant])

    def describe(self, cfg: MonitorExperimentConfig) -> str:
        return f"WhoDunit {cfg.game.variant}"

    def instances(
        self,
        cfg: MonitorExperimentConfig,
        split: str,
        *,
        trained_on: MonitorExperimentConfig | None = None,
    ) -> list[Any]:
        held_out: list[Any] = []
        if trained_on is not None:
            # Games of another setting can share a culprit description with these (33 of the
            # 180 six-suspect test games did with the ten-suspect training games).
            trained = self._splits(trained_on)
            held_out = [*trained.train, *trained.validation]
        games = self._splits(cfg, held_out).get(split)  # type: ignore[arg-type]
        limit = _limit(cfg, split)
        return list(games[:limit] if limit else games)

    def split_sizes(self, cfg: MonitorExperimentConfig) -> dict[str, int]:
        from byzllm.envs.whodunit import SPLIT_SIZES

        return dict(SPLIT_SIZES)

    @staticmethod
    def _splits(cfg: MonitorExperimentConfig, held_out: Sequence[Any] = ()) -> Splits:
        from byzllm.envs.whodunit import SPLIT_SIZES, make_splits

        try:
            return make_splits(cfg.game, seed=cfg.seed, held_out=held_out)
        except ConfigError:
            # A small table (few properties) has fewer distinct culprits than the paper's
            # 480 games: draw only the games asked for, still disjoint by culprit.
            sizes = [_limit(cfg, name) or SPLIT_SIZES[name] for name in SPLIT_SIZES]
            return make_splits(
                cfg.game, seed=cfg.seed, sizes=(sizes[0], sizes[1], sizes[2]), held_out=held_out
            )

    def load_instance(self, data: Any) -> Any:
        from byzllm.envs.whodunit import WhoDunitGame

        return WhoDunitGame.model_validate(data)

    def sim_params(self, cfg: MonitorExperimentConfig) -> dict[str, Any]:
        return cfg.sim.model_dump()

    async def play(
        self,
        cfg: MonitorExperimentConfig,
        instance: Any,
        *,
        repeat: int,
        intervener: Intervener | None,
    ) -> PlayedGame:
        from byzllm.envs.whodunit import play_game

        from ..parse_health import logprob_counts, move_counts

        result = await play_game(
            instance,
            cfg.players(instance, salt=f"monitor-repeat={repeat}"),
            intervener=intervener,
            rng=random.Random(f"{instance.id}/{repeat}"),
            wording=cfg.wording,
        )
        return PlayedGame.of(
            result,
            game_id=instance.id,
            parse={
                **move_counts((t.fallback for t in result.turns), simulated=result.simulated),
                **logprob_counts(
                    ((t.fallback, t.obs.distributions) for t in result.turns),
                    simulated=result.simulated,
                ),
            },
            turns=[t.obs for t in result.turns],
            fields={
                "variant": instance.variant,
                "n_suspects": len(instance.suspects),
                "accused": result.accused,
            },
        )


class GovSimEnvironment:
    """GovSim fishing (Piatti et al. 2024; the rogue-agents paper, §4.1, Table 2).

    The monitored turns are the fishers' catch decisions from month 2 on (one role,
    ``"fisher"``); success is survival of the whole season (Survival-Rate), so the monitor
    estimates P(the lake survives). Instances are App. D.1's (``byzllm.envs.govsim.make_splits``:
    26 / 14 / 20); ``n_train`` etc. cut them as for WhoDunit.
    """

    name: str = "govsim"
    metrics: tuple[OutcomeMetric, ...] = (
        OutcomeMetric("survival_rate", "Survival-Rate", "rate"),
        OutcomeMetric("survival_time", "Survival-Time"),
        OutcomeMetric("efficiency", "Efficiency", "share"),
    )
    max_cap: int | None = 1

    def roles(self, cfg: MonitorExperimentConfig) -> tuple[str, ...]:
        from byzllm.envs.govsim import ROLE

        return (ROLE,)

    def describe(self, cfg: MonitorExperimentConfig) -> str:
        return "GovSim fishing"

    def instances(
        self,
        cfg: MonitorExperimentConfig,
        split: str,
        *,
        trained_on: MonitorExperimentConfig | None = None,
    ) -> list[Any]:
        # ``trained_on`` changes nothing: the test lakes' R_0 values are in no seed's
        # train / validation pool (App. D.1).
        from byzllm.envs.govsim import make_splits

        from ..govsim.experiment import evenly

        # Evenly across the split's starting stocks, not its smallest lakes first.
        return evenly(make_splits(cfg.govsim.lake, seed=cfg.seed).get(split), _limit(cfg, split))

    def split_sizes(self, cfg: MonitorExperimentConfig) -> dict[str, int]:
        from byzllm.envs.govsim import split_sizes

        return split_sizes(cfg.govsim.lake)

    def load_instance(self, data: Any) -> Any:
        from byzllm.envs.govsim import GovSimGame

        return GovSimGame.model_validate(data)

    def sim_params(self, cfg: MonitorExperimentConfig) -> dict[str, Any]:
        return cfg.govsim.sim.model_dump()

    async def play(
        self,
        cfg: MonitorExperimentConfig,
        instance: Any,
        *,
        repeat: int,
        intervener: Intervener | None,
    ) -> PlayedGame:
        from byzllm.envs.govsim import play_game

        from ..govsim.config import make_fishers
        from ..govsim.experiment import catch_counts
        from ..parse_health import logprob_counts

        fishers = make_fishers(
            cfg.agents,
            cfg.govsim,
            cfg,
            top_logprobs=cfg.top_logprobs,
            salt=f"monitor-repeat={repeat}",
        )
        result = await play_game(
            instance,
            fishers,
            config=cfg.govsim.lake,
            intervener=intervener,
            rng=random.Random(f"{instance.id}/{instance.seed}/{repeat}"),
        )
        return PlayedGame.of(
            result,
            game_id=instance.id,
            success=result.survived,
            parse={
                **catch_counts(result),
                **logprob_counts(
                    ((t.fallback, t.obs.distributions) for t in result.turns if t.monitored),
                    simulated=result.simulated,
                ),
            },
            turns=[t.obs for t in result.turns if t.monitored],
            fields={
                "variant": "govsim",
                "n_suspects": 0,
                "accused": False,
                "lake": _lake_curve(result),
            },
            outcome={
                "survival_rate": 1.0 if result.survived else 0.0,
                "survival_time": float(result.survival_time),
                "efficiency": result.efficiency,
                "r0": float(result.r0),
                "total_catch": float(result.total_catch),
            },
        )


def _lake_curve(result: GovSimResult) -> dict[str, Any]:
    """The stored :class:`~.records.LakeCurve` of a played GovSim game: the viewer marks the
    monitor's triggers (numbered by turn) at their months on the stock curve."""
    after = [result.harvests[-1].stock_after] if result.harvests else []
    ordered = sorted(result.turns, key=lambda t: t.obs.turn)
    return {
        "stocks": [*result.stocks, *after],
        "collapse_below": result.collapse_below,
        "turn_months": [t.month for t in ordered],
    }


register_environment(WhoDunitEnvironment())
register_environment(GovSimEnvironment())
