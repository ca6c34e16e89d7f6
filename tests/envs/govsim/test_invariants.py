"""Invariants of GovSim on generated and simulated games (hypothesis, bounded examples)."""

from __future__ import annotations

import asyncio
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from byzllm.agents.govsim import FisherParams
from byzllm.envs import Decision, TurnObservation
from byzllm.envs.govsim import (
    GovSimEnv,
    GovSimGame,
    GovSimResult,
    LakeConfig,
    assign_catches,
    make_games,
    play_game,
    simulated_fishers,
)


@settings(max_examples=300, deadline=None)
@given(
    wishes=st.lists(st.integers(0, 400), min_size=1, max_size=8),
    stock=st.integers(0, 300),
    seed=st.integers(0, 10**6),
    rule=st.sampled_from(["stochastic", "proportional"]),
)
def test_assignment_never_exceeds_stock_or_wish(
    wishes: list[int], stock: int, seed: int, rule: str
) -> None:
    got = assign_catches(wishes, stock, random.Random(seed), rule)  # type: ignore[arg-type]
    assert all(0 <= g <= min(w, stock) for g, w in zip(got, wishes, strict=True))
    assert sum(got) == min(stock, sum(min(w, stock) for w in wishes))


class Chaotic:
    """Resets or resamples at random, to exercise rollback."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def decide(self, obs: TurnObservation) -> Decision:
        return self.rng.choice(["continue", "continue", "reset", "resample"])  # type: ignore[return-value]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    r0=st.integers(20, 300),
    seed=st.integers(0, 10**6),
    greed=st.floats(0.0, 3.0),
    rogue=st.floats(0.0, 0.5),
    months=st.integers(1, 12),
    chaos=st.booleans(),
)
def test_games_keep_the_invariants(
    r0: int, seed: int, greed: float, rogue: float, months: int, chaos: bool
) -> None:
    lake = LakeConfig(months=months)
    game = GovSimGame(id=f"h{seed}", r0=r0, seed=seed)
    params = FisherParams(greed=greed, rogue_rate=rogue)
    result = asyncio.run(
        play_game(
            game,
            simulated_fishers(lake, params, salt=str(seed)),
            config=lake,
            intervener=Chaotic(seed) if chaos else None,
            max_interventions=5,
        )
    )
    assert result.months_played <= months
    for h in result.harvests:
        assert h.stock_before >= 0 and h.stock_after >= 0
        assert sum(h.catches.values()) <= h.stock_before
        assert all(0 <= h.catches[n] <= h.wishes[n] for n in h.catches)
    after = [h.stock_after for h in result.harvests]
    # Nothing after collapse: only the last harvest may leave less than gamma.
    assert all(s >= lake.collapse_below for s in after[:-1])
    assert result.collapsed == (after[-1] < lake.collapse_below)
    # GovSim's code: every month played ends with its meeting, the last one included.
    assert len(result.meetings) == result.months_played
    # GovSim's Survival-Time: the collapse month, else the months of the season.
    assert result.survival_time == (result.months_played if result.collapsed else months)
    assert 0.0 <= result.efficiency <= 1.0
    # Regrowth between months.
    for prev, start in zip(after, result.stocks[1:], strict=False):
        assert start == min(2 * prev, r0)


@settings(max_examples=80, deadline=None)
@given(r0=st.integers(20, 300), wish=st.integers(0, 60), seed=st.integers(0, 1000))
def test_reset_restores_exactly_the_state_before_the_meeting(r0: int, wish: int, seed: int) -> None:
    env = GovSimEnv(GovSimGame(id="p", r0=r0))
    env.harvest(dict.fromkeys(env.names, wish), random.Random(seed))
    assert not env.done  # the month's meeting comes first, also after a collapse
    if env.state.collapsed:
        env.say(env.names[0], "too late", ())
        env.end_month()
        assert env.done and not env.can_rollback
        return
    snapshot = env.state.model_copy(deep=True)
    for name in env.names:
        env.say(name, f"take {wish}", (wish,))
    env.end_month()
    harvests = [h.model_copy(deep=True) for h in env.state.harvests]
    env.rollback_discussion()
    restored = env.state.model_dump(exclude={"resets", "attempts", "total_turns"})
    assert restored == snapshot.model_dump(exclude={"resets", "attempts", "total_turns"})
    assert env.state.harvests == harvests  # harvests untouched


def test_hundreds_of_simulated_games_are_well_formed() -> None:
    # With the property tests above: well over a thousand games per run of the suite.
    lake = LakeConfig()
    games = make_games(300, seed=7)

    async def play_all() -> list[GovSimResult]:
        return [await play_game(g, simulated_fishers(lake, salt="t"), config=lake) for g in games]

    for result in asyncio.run(play_all()):
        assert all(h.stock_after >= 0 for h in result.harvests)
        assert all(sum(h.catches.values()) <= h.stock_before for h in result.harvests)
        assert result.months_played <= 12
