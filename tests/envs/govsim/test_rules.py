"""GovSim rules with hand-computed values: regrowth, collapse, assignment, the three metrics."""

from __future__ import annotations

import asyncio
import random

import pytest

from byzllm.agents.govsim import CatchTurn, FisherView, SpeechTurn
from byzllm.envs import Decision, TurnObservation
from byzllm.envs.govsim import (
    TEST_R0,
    TRAIN_VALIDATION_R0,
    GovSimEnv,
    GovSimGame,
    LakeConfig,
    assign_catches,
    efficiency,
    make_splits,
    play_game,
    regrow,
    survival_rate,
    survival_time,
)
from byzllm.errors import InputError


class Fixed:
    """A fisher that always wishes ``tons`` and proposes nothing."""

    def __init__(self, name: str, tons: int) -> None:
        self.name = name
        self.tons = tons

    async def catch(self, view: FisherView, rng: random.Random) -> CatchTurn:
        return CatchTurn(wish=min(self.tons, view.stock))

    async def speak(self, view: FisherView, rng: random.Random) -> SpeechTurn:
        return SpeechTurn(text="ok")


def test_regrowth_doubles_up_to_capacity() -> None:
    assert regrow(30, 100) == 60
    assert regrow(50, 100) == 100
    assert regrow(70, 100) == 100
    assert regrow(0, 100) == 0


def test_wishes_within_stock_are_granted() -> None:
    assert assign_catches([10, 20, 5], 100, random.Random(0)) == [10, 20, 5]


def test_stochastic_assignment_when_wishes_exceed_the_stock() -> None:
    got = assign_catches([30, 30, 30], 60, random.Random(0))
    assert sum(got) == 60 and all(0 <= g <= 30 for g in got)
    # A single fisher still wanting takes the rest: wishes 50 and 1 for 20 tons.
    got = assign_catches([50, 1], 20, random.Random(1))
    assert got in ([19, 1], [20, 0])
    # A wish above the stock is capped first.
    assert assign_catches([500, 0], 40, random.Random(0)) == [40, 0]


def test_proportional_assignment_hand_computed() -> None:
    # 60 tons for wishes 40 / 40 / 20 (total 100): exactly 24 / 24 / 12.
    assert assign_catches([40, 40, 20], 60, random.Random(0), "proportional") == [24, 24, 12]
    # 10 tons for 3 x 5: 3.33 each -> 3 / 3 / 3 and the leftover to the first seat.
    assert assign_catches([5, 5, 5], 10, random.Random(0), "proportional") == [4, 3, 3]


def test_metrics_hand_computed() -> None:
    # GovSim's code: the month (round + 1) of the first post-harvest stock below 5.
    assert survival_time([50, 60, 4, 80], 5) == 3
    assert survival_time([5] * 12, 5) == 12
    assert survival_rate(12, 12) == 1.0 and survival_rate(11, 12) == 0.0
    # c = 12 * 100 / 2 = 600: a total of 450 gives 1 - 150/600 = 0.75; above c gives 1.
    assert efficiency(450, 100, 12) == pytest.approx(0.75)
    assert efficiency(900, 100, 12) == 1.0
    assert efficiency(0, 100, 12) == 0.0


def test_sustainable_game_hand_computed() -> None:
    # Five fishers take 10 each from 100: 50 left, doubles back to 100 every month.
    game = GovSimGame(id="g", r0=100)
    result = asyncio.run(play_game(game, [Fixed(n, 10) for n in LakeConfig().names()]))
    assert result.survival_time == 12 and result.survived
    assert result.total_catch == 600 and result.efficiency == pytest.approx(1.0)
    assert result.stocks == [100] * 12


def test_collapse_ends_the_game_hand_computed() -> None:
    # 5 x 12 from 100 leaves 40 -> 80; 5 x 12 from 80 leaves 20 -> 40; 5 x 12 = 60 > 40: all
    # 40 taken, 0 < 5: collapse in month 3, survival time 3 (GovSim's code), total 160,
    # efficiency 160/600.
    game = GovSimGame(id="g", r0=100)
    result = asyncio.run(play_game(game, [Fixed(n, 12) for n in LakeConfig().names()]))
    assert result.stocks == [100, 80, 40]
    assert [h.stock_after for h in result.harvests] == [40, 20, 0]
    assert result.collapsed and result.survival_time == 3 and not result.survived
    assert result.total_catch == 160
    assert result.efficiency == pytest.approx(160 / 600)
    # GovSim holds the meeting of the collapse month too; the lake does not regrow after it.
    assert len(result.meetings) == 3 and [len(m) for m in result.meetings] == [5, 5, 5]


def test_rollback_restores_the_state_before_the_meeting() -> None:
    env = GovSimEnv(GovSimGame(id="g", r0=100))
    env.harvest(dict.fromkeys(env.names, 10), random.Random(0))
    before = env.state.model_copy(deep=True)
    env.say("Ana", "take 5", (5,))
    env.end_month()
    assert env.can_rollback
    env.rollback_discussion()
    after = env.state
    assert after.stock == before.stock == 50 and after.month == 1 and after.phase == "meeting"
    assert after.harvests == before.harvests and after.meetings == before.meetings
    assert after.resets == 1 and after.attempts == [1]
    assert env.undone[0][0].text == "take 5"
    with pytest.raises(InputError):
        env.rollback_discussion()  # in the meeting phase there is nothing to roll back


def test_the_monitor_clock_is_the_month_and_turn_counts_decisions() -> None:
    # TurnObservation: run_turn is the month (what monitors train on), turn counts catch
    # decisions, month 1's five included; a reset at the first decision of month 3 (turn 11)
    # asks month 3 again (turns 12-16) without rewinding the month.
    class ResetOnce:
        def __init__(self) -> None:
            self.seen: list[tuple[int, int | None]] = []

        def decide(self, obs: TurnObservation) -> Decision:
            self.seen.append((obs.turn, obs.run_turn))
            return "reset" if obs.turn == 11 else "continue"

    rec = ResetOnce()
    fishers = [Fixed(n, 10) for n in LakeConfig().names()]
    asyncio.run(play_game(GovSimGame(id="g", r0=100), fishers, intervener=rec))
    assert rec.seen[:5] == [(t, 2) for t in range(6, 11)]
    assert rec.seen[5:11] == [(t, 3) for t in range(11, 17)]
    assert rec.seen[-5:] == [(t, 12) for t in range(57, 62)]


def test_splits_follow_appendix_d1() -> None:
    splits = make_splits()
    assert len(splits.train) == 26 and len(splits.validation) == 14 and len(splits.test) == 20
    assert {g.r0 for g in splits.test} == set(TEST_R0) and 100 in TEST_R0
    assert TEST_R0[1:] == tuple(range(210, 301, 5))
    train = {g.r0 for g in splits.train}
    validation = {g.r0 for g in splits.validation}
    assert not train & validation and train | validation == set(TRAIN_VALIDATION_R0)
    assert not (train | validation) & {g.r0 for g in splits.test}  # test games are held out
    assert make_splits(seed=1).train != splits.train
