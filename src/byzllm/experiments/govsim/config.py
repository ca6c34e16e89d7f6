"""Configuration of GovSim game batches and of the GovSim section of the monitor pipeline."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from byzllm.agents.govsim import Fisher, FisherParams
from byzllm.envs.govsim import LakeConfig, llm_fishers, simulated_fishers, split_sizes
from byzllm.runs import ModelConfig

from .._agents import AgentsConfig
from .._fitting import profile_file
from .._games_grid import games_grid

__all__ = ["GENERATED_GAMES", "GovSimRunConfig", "GovSimSettings", "make_fishers"]

#: Games generated (``split: generated``) when ``n_games`` is not set.
GENERATED_GAMES = 20


class GovSimSettings(BaseModel):
    """The GovSim game and its fishers' settings (the ``govsim`` section of a monitor config;
    the model keys are the config's own). Example YAML::

        govsim:
          lake: {months: 12, utterances: 5, assignment: stochastic}
          sim: {greed: 0.3, rogue_rate: 0.04, fault_signal: 1.0}   # or sim: profile.yaml
          max_tokens: 256
    """

    model_config = ConfigDict(extra="forbid")

    lake: LakeConfig = Field(default_factory=LakeConfig)
    sim: Annotated[FisherParams, profile_file("govsim")] = Field(
        default_factory=FisherParams,
        description="the simulated fishers' parameters, or a profile file from `byzllm sim fit`",
    )
    max_tokens: int | None = Field(default=256, ge=1, description="longest reply per call")
    max_reprompts: int = Field(default=2, ge=0)
    redo_temperature: float = Field(
        default=0.7,
        ge=0.0,
        le=2.0,
        description="sampling temperature of a meeting held again after a reset",
    )


def make_fishers(
    agents: str,
    settings: GovSimSettings,
    model_config: ModelConfig,
    *,
    top_logprobs: int,
    salt: str,
) -> Sequence[Fisher]:
    """The game's fishers: simulated (``salt`` keys their draws), or LLM-backed on the
    config's model (one shared model per event loop, ``salt`` its cache salt)."""
    if agents == "simulated":
        return simulated_fishers(settings.lake, settings.sim, salt=salt)
    fishers = llm_fishers(
        model_config.shared_model(salt=salt),
        settings.lake,
        top_logprobs=top_logprobs,
        max_reprompts=settings.max_reprompts,
        max_tokens=settings.max_tokens,
    )
    for f in fishers:
        f.redo_temperature = settings.redo_temperature
    return fishers


class GovSimRunConfig(AgentsConfig):
    """A batch of GovSim games. Example YAML::

    split: test            # train | validation | test | generated
    n_games: 20            # null: the whole split
    repeats: 3
    agents: simulated      # or: llm (then set model / base_url)
    govsim: {lake: {months: 12}, sim: {greed: 0.3}}   # or sim: profile.yaml (`byzllm sim fit`)
    """

    govsim: GovSimSettings = Field(default_factory=GovSimSettings)
    top_logprobs: int = Field(default=10, ge=0, le=20)
    split: Literal["train", "validation", "test", "generated"] = "test"
    seed: int = 0
    n_games: int | None = Field(default=None, ge=1)
    repeats: int = Field(default=1, ge=1)

    def unit_grids(self) -> dict[str, dict[str, int]]:
        """One unit per game × repeat (:func:`~byzllm.experiments.govsim.expand_units`):
        ``n_games`` games, at most the split's (:data:`GENERATED_GAMES` generated without
        it)."""
        size = None if self.split == "generated" else split_sizes(self.govsim.lake)[self.split]
        return games_grid(self.split, self.n_games, size, GENERATED_GAMES, self.repeats)

    def fishers(self, *, salt: str) -> Sequence[Fisher]:
        """This config's fishers for one game (``salt``: the repeat's)."""
        return make_fishers(
            self.agents, self.govsim, self, top_logprobs=self.top_logprobs, salt=salt
        )
