"""A simulated agent reused for another play of the same game: nothing of the first play
carries over (its rogue episodes are drawn again from the new play's rng)."""

from __future__ import annotations

import asyncio
import random

import pytest

from byzllm.agents.whodunit import SimParams
from byzllm.envs import Decision, TurnObservation
from byzllm.envs.whodunit import GameConfig, GameResult, generate_games, play_game
from byzllm.envs.whodunit import simulated_agents as agents_for


def _trace(result: GameResult) -> list[tuple[object, ...]]:
    return [(t.obs.action, tuple(t.noise), t.decision) for t in result.turns]


class _Random:
    """Resets and resamples at random (seeded), so episodes change within a play."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def decide(self, obs: TurnObservation) -> Decision:
        x = self.rng.random()
        return "reset" if x < 0.1 else "resample" if x < 0.2 else "continue"


@pytest.mark.parametrize("variant", ["asym", "sym"])
def test_a_reused_agent_replays_like_a_fresh_one(variant: str) -> None:
    """The episodes were keyed by (game, reset clock) only, so a second play of a game kept
    the first play's rogue draws (and one fewer rng draw): 58 of 60 replays differed."""
    params = SimParams(rogue_rate=0.5)
    games = generate_games(8, GameConfig(variant=variant), seed=11)  # type: ignore[arg-type]
    differ = 0
    for i, game in enumerate(games):
        fresh = asyncio.run(play_game(game, agents_for(game, params), rng=i, intervener=_Random(i)))
        reused = agents_for(game, params)
        asyncio.run(play_game(game, reused, rng=100 + i, intervener=_Random(100 + i)))
        again = asyncio.run(play_game(game, reused, rng=i, intervener=_Random(i)))
        differ += _trace(fresh) != _trace(again)
    assert differ == 0


def test_a_game_ended_on_its_first_turn_is_a_new_play_next_time() -> None:
    """Two plays that both end at clock turn 1 (an accusation at once): the second still
    draws its episode afresh."""
    params = SimParams(rogue_rate=0.5, accuse_confidence=0.01)
    game = generate_games(1, GameConfig(variant="asym"), seed=2)[0]
    for seed in range(20):
        fresh = asyncio.run(play_game(game, agents_for(game, params), rng=seed))
        assert fresh.total_turns == 1
        reused = agents_for(game, params)
        asyncio.run(play_game(game, reused, rng=seed + 1))
        again = asyncio.run(play_game(game, reused, rng=seed))
        assert _trace(fresh) == _trace(again)
