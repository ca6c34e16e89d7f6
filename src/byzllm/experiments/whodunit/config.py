"""Configuration of WhoDunitEnv game batches: who plays (simulated or LLM-backed) and which
games."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from byzllm.agents.whodunit import (
    Decoding,
    FinalMove,
    PromptStyle,
    SimParams,
    WhoDunitAgent,
    WordingName,
)
from byzllm.envs.whodunit import (
    SPLIT_SIZES,
    GameConfig,
    WhoDunitGame,
    llm_agents,
    simulated_agents,
)

from .._agents import AgentsConfig
from .._fitting import profile_file
from .._games_grid import games_grid

__all__ = ["GENERATED_GAMES", "WhoDunitPlayers", "WhoDunitRunConfig"]

#: Games generated (``split: generated``) when ``n_games`` is not set: a test split's worth.
GENERATED_GAMES = SPLIT_SIZES["test"]


class WhoDunitPlayers(AgentsConfig):
    """Who plays the games: simulated agents, or LLM-backed ones on ``model``.

    Shared by every WhoDunitEnv experiment (batches here, the monitor pipeline in
    :mod:`byzllm.experiments.monitor`). The LLM keys are :class:`ModelConfig`'s.
    """

    sim: Annotated[SimParams, profile_file("whodunit")] = Field(
        default_factory=SimParams,
        description="simulated agents' parameters, or a profile file from `byzllm sim fit`",
    )
    top_logprobs: int = Field(default=10, ge=0, description="at most max_top_logprobs")
    max_reprompts: int = Field(default=3, ge=0)
    max_tokens: int | None = Field(
        default=1024, ge=1, description="longest reply per turn (small models: 256 is plenty)"
    )
    wording: WordingName = "award"
    decoding: Decoding = Field(
        default="free",
        description="free: the model writes thoughts and JSON freely (the rogue-agents paper's "
        "setting); schema: each request carries the JSON schema of the agent's valid moves, so "
        "a grammar-constrained server (byzllm serve, llamacpp/..., llama.cpp) writes one by "
        "construction",
    )
    prompt: PromptStyle = Field(
        default="paper",
        description="paper: Appendix F's system prompts; compact: the same rules in about half "
        "the tokens, with a filled-in JSON example (for small models; docs/whodunit.md)",
    )

    final_move: FinalMove = Field(
        default="free",
        description="free: any valid move on the last turn (the paper's game); accuse: with "
        "decoding: schema, the Accuser's (or a player's) last turn of a budget can only be an "
        "accusation, so a small model that never accuses still names a culprit",
    )

    redo_temperature: float = Field(
        default=0.7,
        ge=0.0,
        le=2.0,
        description="sampling temperature of a turn asked again after a monitor's resample "
        "(seeded by the draw): at temperature 0 the same request gets the same reply",
    )

    @field_validator("top_logprobs")
    @classmethod
    def _within_server_limit(cls, value: int, info: ValidationInfo) -> int:
        # max_top_logprobs (a ModelSettings field) is validated first: base fields come first.
        limit = info.data.get("max_top_logprobs", 20)
        if value > limit:
            raise ValueError(
                f"must be at most max_top_logprobs={limit} (raise that if the server allows more)"
            )
        return value

    @model_validator(mode="after")
    def _final_move_needs_schema(self) -> WhoDunitPlayers:
        if self.final_move == "accuse" and self.decoding != "schema":
            raise ValueError("final_move: accuse needs decoding: schema")
        return self

    def players(self, game: WhoDunitGame, *, salt: str) -> Sequence[WhoDunitAgent]:
        """The game's agents; LLM ones share one model per event loop (``salt``: the
        cache salt of this repeat, see :meth:`ModelConfig.shared_model`)."""
        if self.agents == "simulated":
            return simulated_agents(game, self.sim)
        return llm_agents(
            game,
            self.shared_model(salt=salt),
            top_logprobs=self.top_logprobs,
            max_reprompts=self.max_reprompts,
            max_tokens=self.max_tokens,
            decoding=self.decoding,
            prompt=self.prompt,
            final_move=self.final_move,
            redo_temperature=self.redo_temperature,
        )


class WhoDunitRunConfig(WhoDunitPlayers):
    """A batch of games. Example YAML::

    game: {variant: asym, n_suspects: 10}
    split: test            # train | validation | test | generated
    n_games: 180           # null: the whole split
    repeats: 3
    agents: simulated      # or: llm (then set model / base_url)
    sim: {hallucination_rate: 0.04}   # or a fitted profile: sim: profile.yaml
    """

    game: GameConfig = Field(default_factory=GameConfig)
    split: Literal["train", "validation", "test", "generated"] = "test"
    seed: int = 0
    n_games: int | None = Field(default=None, ge=1)
    repeats: int = Field(default=1, ge=1)

    def unit_grids(self) -> dict[str, dict[str, int]]:
        """One unit per game × repeat (:func:`~byzllm.experiments.whodunit.expand_units`):
        ``n_games`` games, at most the split's (:data:`GENERATED_GAMES` generated without
        it)."""
        size = None if self.split == "generated" else SPLIT_SIZES[self.split]
        return games_grid(self.split, self.n_games, size, GENERATED_GAMES, self.repeats)
