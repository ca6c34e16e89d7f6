"""Configuration of the monitor experiments (collect, train, evaluate)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from byzllm.envs.whodunit import GameConfig
from byzllm.monitor.conditions import DEFAULT_CONDITIONS, Condition
from byzllm.monitor.features import check_alternatives

from ..govsim.config import GovSimSettings
from ..whodunit.config import WhoDunitPlayers

__all__ = ["MonitorExperimentConfig"]


class MonitorExperimentConfig(WhoDunitPlayers):
    """The whole monitor pipeline in one config. Example YAML::

    game: {variant: asym, n_suspects: 10}
    seed: 0                 # which train / validation / test splits
    n_train: null           # null: the whole split (210 / 90 / 180 games)
    n_validation: null
    n_test: null
    repeats: 3              # evaluation runs per condition (standard errors)
    conditions: [none, monitor-1, random-1, turn-only-1]   # default: all ten
    agents: simulated       # or: llm (then set model, base_url)
    sim: {hallucination_rate: 0.04}

    The players' keys (agents, sim, model, base_url, ..., wording) are
    :class:`~byzllm.experiments.whodunit.WhoDunitPlayers`'.

    ``env: govsim`` plays GovSim fishing instead (the rogue-agents paper, §4.1, Table 2;
    :mod:`.environments` has the registry): the ``govsim`` section holds the lake and the
    simulated fishers' parameters (:class:`~byzllm.experiments.govsim.GovSimSettings`),
    ``agents``, ``model``, ``base_url`` and ``top_logprobs`` are shared, ``game`` and ``sim``
    are WhoDunit's and unused. Example::

        env: govsim
        govsim: {lake: {months: 12}, sim: {rogue_rate: 0.04}}
        conditions: [none, monitor-1, random-1, turn-only-1]
    """

    env: Literal["whodunit", "govsim"] = "whodunit"
    game: GameConfig = Field(default_factory=GameConfig)
    govsim: GovSimSettings = Field(
        default_factory=GovSimSettings, description="GovSim's lake and fishers (env: govsim)"
    )
    seed: int = 0
    n_train: int | None = Field(default=None, ge=1)
    n_validation: int | None = Field(default=None, ge=1)
    n_test: int | None = Field(default=None, ge=1)
    collect_repeats: int = Field(default=1, ge=1)
    repeats: int = Field(default=3, ge=1)
    conditions: list[Condition] = Field(default_factory=lambda: list(DEFAULT_CONDITIONS))
    monitor_set: str | None = Field(
        default=None,
        description="set from --monitors: the fingerprint of the monitor set evaluated "
        "(MonitorSet.fingerprint), so that a run folder holds one set's results",
    )
    # Monitors read the decision-position distributions: at least one alternative is needed
    # (two when renormalized: check_alternatives).
    top_logprobs: int = Field(default=10, ge=1, description="at most max_top_logprobs")
    renormalize: bool = True

    def unit_grids(self) -> dict[str, dict[str, int]]:
        """The collect stage: one unit per train or validation game × collect repeat; the
        evaluate stage: one per test game × condition × repeat
        (:mod:`~byzllm.experiments.monitor.experiment`). A split gives ``n_<split>`` games,
        at most its size (:meth:`~.environments.MonitorEnvironment.split_sizes`)."""
        from .environments import get_environment

        sizes = get_environment(self.env).split_sizes(self)
        cut = {"train": self.n_train, "validation": self.n_validation, "test": self.n_test}
        games = {split: min(cut[split] or size, size) for split, size in sizes.items()}
        return {
            "collect": {
                "train and validation games": games["train"] + games["validation"],
                "collect_repeats": self.collect_repeats,
            },
            "evaluate": {
                "test games": games["test"],
                "conditions": len(set(self.conditions)),
                "repeats": self.repeats,
            },
        }

    @model_validator(mode="after")
    def _enough_alternatives(self) -> MonitorExperimentConfig:
        check_alternatives(self.top_logprobs, renormalize=self.renormalize)
        return self

    @field_validator("env", mode="before")
    @classmethod
    def _codegen_has_its_own_commands(cls, value: object) -> object:
        # CodeGen's debate has its own problems, roles and execution settings: its monitor
        # pipeline is `byzllm codegen collect / train / run / report` (docs/codegen.md).
        if value == "codegen":
            raise ValueError(
                "CodeGen's monitors run with `byzllm codegen collect`, `byzllm codegen train` "
                "and `byzllm codegen run` (see docs/codegen.md)"
            )
        return value
