"""WhoDunitEnv (the rogue-agents paper, §3, §4.1, Appendices B, D.1, F, G): both variants, games,
rules,
snapshot / rollback, the game loop with its intervention seam, and metrics.

>>> import asyncio
>>> from byzllm.envs.whodunit import generate_games, play_game, simulated_agents
>>> game = generate_games(1, seed=0)[0]
>>> result = asyncio.run(play_game(game, simulated_agents(game), rng=1))
>>> result.total_turns >= 1
True
"""

from byzllm.agents.whodunit import AgentTurn, AgentView, WhoDunitAction, WhoDunitAgent

from ._env import (
    ASYM_NAMES,
    IRREVERSIBLE,
    SYM_NAMES,
    VARIANT_ROLES,
    AnalysisFlags,
    ChannelEntry,
    GameState,
    StepOutcome,
    WhoDunitEnv,
)
from ._games import (
    ATTRIBUTE_TABLE,
    SPLIT_SIZES,
    GameConfig,
    Splits,
    WhoDunitGame,
    check_game,
    generate_game,
    generate_games,
    make_splits,
)
from ._loop import GameResult, TurnRecord, play_game
from ._metrics import Metrics, MetricSummary, game_metrics, summarize_runs
from ._players import llm_agents, simulated_agents

__all__ = [
    "ASYM_NAMES",
    "ATTRIBUTE_TABLE",
    "IRREVERSIBLE",
    "SPLIT_SIZES",
    "SYM_NAMES",
    "VARIANT_ROLES",
    "AgentTurn",
    "AgentView",
    "AnalysisFlags",
    "ChannelEntry",
    "GameConfig",
    "GameResult",
    "GameState",
    "MetricSummary",
    "Metrics",
    "Splits",
    "StepOutcome",
    "TurnRecord",
    "WhoDunitAction",
    "WhoDunitAgent",
    "WhoDunitEnv",
    "WhoDunitGame",
    "check_game",
    "game_metrics",
    "generate_game",
    "generate_games",
    "llm_agents",
    "make_splits",
    "play_game",
    "simulated_agents",
    "summarize_runs",
]
