"""Simulated populations behave like the paper's agents (the rogue-agents paper, §5, Fig. 6)."""

from __future__ import annotations

import math

from byzllm.envs.whodunit import (
    GameConfig,
    GameResult,
    WhoDunitGame,
    game_metrics,
    generate_games,
    make_splits,
    play_game,
    simulated_agents,
)


async def _play(games: list[WhoDunitGame]) -> list[GameResult]:
    return [await play_game(g, simulated_agents(g), rng=i) for i, g in enumerate(games)]


def _max_entropy(result: GameResult) -> float:
    best = 0.0
    for turn in result.turns:
        for dist in turn.obs.distributions:
            ps = [math.exp(lp) for _, lp in dist]
            total = sum(ps)
            best = max(best, -sum(p / total * math.log(p / total) for p in ps if p > 0))
    return best


async def test_default_success_rate_is_realistic_and_uncertainty_is_informative() -> None:
    results = await _play(make_splits(seed=0).test)
    m = game_metrics(results)
    assert 0.40 <= m.success_rate <= 0.80, m
    assert m.precision >= m.success_rate
    assert all(r.simulated for r in results)
    # Failing games show higher peak uncertainty than successful ones.
    wins = [_max_entropy(r) for r in results if r.success]
    losses = [_max_entropy(r) for r in results if not r.success]
    assert sum(losses) / len(losses) > sum(wins) / len(wins) + 0.1
    # The truth analysis sees the errors the noise produced.
    assert sum(r.hallucinations for r in results) > 0
    assert sum(r.repetitions for r in results) > 0


async def test_success_falls_as_the_lineup_grows() -> None:
    # Sizes far enough apart for 180 games to tell neighbours apart: from 6 to 10 suspects
    # success falls by about 0.05 (600 games each: 0.79, 0.73), near one standard error here.
    rates = []
    for n in (6, 12, 18):
        games = generate_games(180, GameConfig(n_suspects=n), seed=0)
        rates.append(game_metrics(await _play(games)).success_rate)
    assert rates[0] > rates[1] > rates[2], rates
    assert all(0.40 <= r <= 0.85 for r in rates), rates


async def test_symmetric_simulation_is_realistic() -> None:
    games = make_splits(GameConfig(variant="sym"), seed=0).test[:90]
    m = game_metrics(await _play(games))
    assert 0.40 <= m.success_rate <= 0.90, m
