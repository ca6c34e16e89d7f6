"""GovSim as the GovSim paper's code defines it (Piatti et al. 2024), on hand-made trajectories.

* Survival-Time: GovSim's analysis walks the logged lake (each round's stock before and after
  the harvest, rounds counted from 0) and takes the round of the first value below 5, plus one;
  a run with no such value gets 12 (the months). ``govsim_survival`` below restates that rule
  on GovSim's log layout, independently of ``survival_time``, which reads only the stocks after
  each harvest.
* Every month ends with the conversation, also the month of a collapse and the last one; the
  game ends after it, without regrowth.
* The sustainability threshold after a regrowth is ``⌊⌊stock / 2⌋ / n⌋``.
"""

from __future__ import annotations

import asyncio
import random

import pytest

from byzllm.agents.govsim import (
    CatchTurn,
    FisherView,
    SpeechTurn,
    render_speech_prompt,
    sustainable_share,
)
from byzllm.envs.govsim import (
    GovSimGame,
    GovSimResult,
    LakeConfig,
    play_game,
    regrow,
    survival_rate,
    survival_time,
)

GAMMA = 5
MONTHS = 12


def govsim_log(r0: int, stocks_after: list[int]) -> list[tuple[int, int]]:
    """(round from 0, stock) entries as GovSim logs them: before, then after each harvest."""
    entries: list[tuple[int, int]] = []
    before = r0
    for rnd, after in enumerate(stocks_after):
        entries += [(rnd, before), (rnd, after)]
        before = regrow(after, r0)
    return entries


def govsim_survival(entries: list[tuple[int, int]], months: int = MONTHS) -> int:
    """GovSim's rule: the round of the first logged stock below γ, plus one; else ``months``."""
    for rnd, stock in entries:
        if stock < GAMMA:
            return rnd + 1
    return months


TRAJECTORIES: list[tuple[list[int], int]] = [
    ([3], 1),  # collapse at the first harvest: month 1
    ([40, 20, 0], 3),  # collapse in month 3
    ([50, 60, 4], 3),
    ([5] * 12, 12),  # exactly γ is not below it: a full season
    ([50] * 11 + [4], 12),  # collapse in the last month
    ([50, 4], 2),
]


@pytest.mark.parametrize(("stocks_after", "expected"), TRAJECTORIES)
def test_survival_time_is_govsims_on_hand_made_trajectories(
    stocks_after: list[int], expected: int
) -> None:
    assert govsim_survival(govsim_log(100, stocks_after)) == expected
    assert survival_time(stocks_after, GAMMA) == expected


def test_survival_time_agrees_with_govsims_rule_on_random_games() -> None:
    rng = random.Random(0)
    for _ in range(500):
        r0 = rng.choice([100, 150, 300])
        stocks: list[int] = []
        stock = r0
        for _month in range(MONTHS):
            after = max(0, stock - rng.randint(0, stock))
            stocks.append(after)
            if after < GAMMA:
                break
            stock = regrow(after, r0)
        assert survival_time(stocks, GAMMA) == govsim_survival(govsim_log(r0, stocks))


def test_a_collapse_in_the_last_month_reaches_the_maximal_survival_time() -> None:
    # GovSim's survival months are 12 for it, so the rate (Survival-Time >= m) counts it.
    time = survival_time([50] * 11 + [4], GAMMA)
    assert time == 12 and survival_rate(time, MONTHS) == 1.0
    assert survival_rate(survival_time([50] * 10 + [4], GAMMA), MONTHS) == 0.0


class Scripted:
    """A fisher whose wish is ``plan[month - 1]`` tons; it says its name at meetings."""

    def __init__(self, name: str, plan: list[int]) -> None:
        self.name = name
        self.plan = plan
        self.heard: list[tuple[int, int]] = []  # (month, stock) at each utterance

    async def catch(self, view: FisherView, rng: random.Random) -> CatchTurn:
        return CatchTurn(wish=min(self.plan[view.month - 1], view.stock))

    async def speak(self, view: FisherView, rng: random.Random) -> SpeechTurn:
        self.heard.append((view.month, view.stock))
        return SpeechTurn(text=self.name)


def _play(r0: int, plan: list[int]) -> tuple[GovSimResult, list[Scripted]]:
    fishers = [Scripted(n, plan) for n in LakeConfig().names()]
    result = asyncio.run(play_game(GovSimGame(id="g", r0=r0), fishers))
    return result, fishers


def test_collapse_in_month_one_counts_one_month_and_still_meets() -> None:
    # 5 x 20 = 100 from 100: 0 left, below 5 in month 1.
    result, fishers = _play(100, [20] * 12)
    assert [h.stock_after for h in result.harvests] == [0]
    assert result.survival_time == 1 and result.collapsed
    assert not result.survived
    # The month's meeting is held after the collapse, on the empty lake, and nothing regrows.
    assert len(result.meetings) == 1
    assert fishers[0].heard == [(1, 0)]
    assert result.stocks == [100]


def test_a_full_season_has_a_meeting_after_the_final_harvest() -> None:
    # 5 x 10 from 100 every month: 50 left, back to 100; twelve harvests, twelve meetings.
    result, fishers = _play(100, [10] * 12)
    assert result.survival_time == 12 and result.survived
    meetings = result.meetings
    assert len(meetings) == 12 and {u.month for u in meetings[-1]} == {12}
    assert fishers[0].heard[-1] == (12, 50)  # the last meeting sees the lake after fishing


def test_a_collapse_in_the_last_month_is_played_and_scored_as_govsim_does() -> None:
    # Eleven sustainable months, then 5 x 20 = 100: nothing left in month 12.
    result, _ = _play(100, [10] * 11 + [20])
    assert result.collapsed and result.survival_time == 12
    assert result.survived  # Survival-Time reached m
    assert len(result.meetings) == 12


def test_sustainable_share_is_govsims_threshold_hand_computed() -> None:
    assert sustainable_share(100, 5) == 10  # GovSim's first month: (100 // 2) // 5
    assert sustainable_share(80, 5) == 8
    assert sustainable_share(73, 5) == 7  # 73 // 2 = 36; 36 // 5 = 7
    assert sustainable_share(9, 5) == 0
    assert sustainable_share(300, 4) == 37  # 150 // 4
    # Everyone catching it keeps the lake at least where it was: 73 - 35 = 38 -> 76 >= 73.
    assert regrow(73 - 5 * sustainable_share(73, 5), 100) >= 73
    with pytest.raises(ValueError):
        sustainable_share(-1, 5)


class Prompted(Scripted):
    """A scripted fisher that renders the LLM fishers' meeting prompt at every utterance."""

    def __init__(self, name: str, plan: list[int]) -> None:
        super().__init__(name, plan)
        self.prompts: list[str] = []

    async def speak(self, view: FisherView, rng: random.Random) -> SpeechTurn:
        self.prompts.append(str(render_speech_prompt(view)[-1]["content"]))
        return await super().speak(view, rng)


def test_the_meeting_prompt_promises_regrowth_only_when_there_is_a_next_month() -> None:
    fishers = [Prompted(n, [10] * 11 + [20]) for n in LakeConfig().names()]
    asyncio.run(play_game(GovSimGame(id="g", r0=100), fishers))
    prompts = fishers[0].prompts
    assert len(prompts) == 12
    assert all("double up to 100 tons" in p for p in prompts[:11])
    assert "season ends after this meeting" in prompts[11] and "double" not in prompts[11]


def test_the_transcript_names_the_collapse_month() -> None:
    from byzllm.experiments.govsim.report import transcript

    row = {"game_id": "g", "r0": 100, "months": 12, "survival_time": 3, "collapsed": True}
    head = transcript({**row, "efficiency": 0.25}).splitlines()[2]
    assert "Survival-Time 3 of 12 months (collapsed in month 3)" in head
    row = {**row, "survival_time": 12, "collapsed": False, "efficiency": 1.0}
    assert "(no collapse)" in transcript(row).splitlines()[2]


def test_the_transcript_title_says_repeat_not_r() -> None:
    """The title read "# govsim-play-R100-s3 r0 (simulated)", above "R0 = 100": the repeat
    number looked like the starting stock R_0."""
    from byzllm.experiments.govsim.report import transcript

    row = {"game_id": "g-R100", "r0": 100, "months": 12, "survival_time": 12, "efficiency": 1.0}
    assert transcript({**row, "repeat": 2, "simulated": True}).splitlines()[0] == (
        "# g-R100 repeat 2 (simulated)"
    )
