"""GovSim's fishing commons (Piatti et al. 2024) as the rogue-agents paper uses it (§4.1, §4.2,
Table 2, App. D.1): games and splits, the lake's rules with rollback of a discussion, the game
loop with its intervention seam, and the metrics.

>>> import asyncio
>>> from byzllm.envs.govsim import make_splits, play_game, simulated_fishers
>>> game = make_splits().test[0]
>>> result = asyncio.run(play_game(game, simulated_fishers(salt="doc")))
>>> game.r0, 0 <= result.survival_time <= 12, 0.0 <= result.efficiency <= 1.0
(100, True, True)
"""

from byzllm.agents.govsim import CatchTurn, Fisher, FisherParams, FisherView, Utterance

from ._env import GovSimEnv, Harvest, LakeState, Phase, assign_catches, regrow
from ._games import (
    FISHER_NAMES,
    MAX_R0,
    TEST_R0,
    TRAIN_VALIDATION_R0,
    GovSimGame,
    GovSimSplits,
    LakeConfig,
    make_games,
    make_splits,
    split_sizes,
)
from ._loop import ROLE, GovSimResult, GovSimTurn, play_game
from ._metrics import efficiency, game_outcome, survival_rate, survival_time
from ._players import llm_fishers, simulated_fishers

__all__ = [
    "FISHER_NAMES",
    "MAX_R0",
    "ROLE",
    "TEST_R0",
    "TRAIN_VALIDATION_R0",
    "CatchTurn",
    "Fisher",
    "FisherParams",
    "FisherView",
    "GovSimEnv",
    "GovSimGame",
    "GovSimResult",
    "GovSimSplits",
    "GovSimTurn",
    "Harvest",
    "LakeConfig",
    "LakeState",
    "Phase",
    "Utterance",
    "assign_catches",
    "efficiency",
    "game_outcome",
    "llm_fishers",
    "make_games",
    "make_splits",
    "play_game",
    "regrow",
    "simulated_fishers",
    "split_sizes",
    "survival_rate",
    "survival_time",
]
