"""The GovSim game loop and its intervention seam (the rogue-agents paper, §2, §4.1, §4.2, §6.1).

:func:`play_game` plays one game to its end. Each month every fisher's catch is asked at once
(concurrently). From month 2 on, before the harvest takes effect, each fisher's decision is
shown to the optional intervener as a :class:`~byzllm.envs.TurnObservation`: role
``"fisher"``, the decision's ``action`` (``{"kind": "catch", "tons": wish}``), and the
distributions at the positions where the fisher wrote resource amounts (§4.1): its catch,
then the amounts it mentioned at the last meeting. ``run_turn`` is the month (the clock the
fishers see; a reset does not rewind it), ``turn`` the count of catch decisions shown so far,
those a reset or a resample discarded included. The decisions of the fishers after one whose
decision brings a reset are never shown nor counted, nor their parse failures: asked at once
for speed, they belong to a turn order the reset ended before it reached them. Month 1 is not
shown: there is no meeting before it to reset.

- ``"continue"`` for every fisher: the harvest is applied (irreversible).
- ``"reset"`` (from any fisher): every wish of the month is discarded; the last meeting is
  undone (:meth:`GovSimEnv.rollback_discussion`: the state right after the last harvest is
  restored exactly) and held again, without the fishers knowing (§4.1); the stock regrows and
  the month's catches are asked again.
- ``"resample"``: that fisher's decision is discarded and it is asked again (§6.1 ablation).

Every fisher is one role (``"fisher"``), so the intervention cap (§4.2: one in GovSim) holds
per game. As a safety net, the intervener is not consulted after ``max_interventions``.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, Field

from byzllm.agents.govsim import CatchTurn, Fisher, TopLogprobs, Utterance
from byzllm.envs._interfaces import Decision, Intervener, TurnObservation
from byzllm.errors import InputError

from ._env import GovSimEnv, Harvest
from ._games import GovSimGame, LakeConfig
from ._metrics import game_outcome

__all__ = ["ROLE", "GovSimResult", "GovSimTurn", "play_game"]

#: The role every fisher plays (one monitor, one intervention budget).
ROLE = "fisher"


class GovSimTurn(BaseModel):
    """One catch decision: what the monitor saw, the verdict, and what came of it."""

    obs: TurnObservation
    month: int
    wish: int
    catch: int | None = None
    decision: Decision = "continue"
    applied: bool = True
    monitored: bool = False
    fallback: bool = False
    errors: list[str] = Field(default_factory=list)
    rogue: bool = False
    text: str = ""


class GovSimResult(BaseModel):
    """The outcome of one game: the three metrics, the lake month by month, transcripts."""

    game_id: str
    r0: int
    months: int
    collapse_below: int
    months_played: int
    collapsed: bool
    survival_time: int
    survived: bool
    efficiency: float
    total_catch: int
    stocks: list[int] = Field(description="stock at the start of each month played")
    harvests: list[Harvest] = Field(default_factory=list)
    meetings: list[list[Utterance]] = Field(default_factory=list)
    undone_meetings: list[list[Utterance]] = Field(default_factory=list)
    total_turns: int = 0
    resets: int = 0
    resamples: int = 0
    parse_failures: int = 0
    fallbacks: int = 0
    simulated: bool = False
    turns: list[GovSimTurn] = Field(default_factory=list)

    @property
    def success(self) -> bool:
        """What a monitor predicts: the lake survived the season (Survival-Rate of 1)."""
        return self.survived


def _as_fishers(
    names: tuple[str, ...], fishers: Mapping[str, Fisher] | Sequence[Fisher]
) -> dict[str, Fisher]:
    if isinstance(fishers, Mapping):
        missing = [n for n in names if n not in fishers]
        if missing:
            raise InputError(f"no fisher for {', '.join(missing)}")
        return {n: fishers[n] for n in names}
    seq = list(fishers)
    if len(seq) != len(names):
        raise InputError(f"this game needs {len(names)} fishers, got {len(seq)}")
    return dict(zip(names, seq, strict=True))


async def _meeting(
    env: GovSimEnv, by_name: dict[str, Fisher], rng: random.Random
) -> tuple[dict[str, list[TopLogprobs]], bool]:
    """Hold this month's meeting; returns each speaker's amount distributions."""
    spoken: dict[str, list[TopLogprobs]] = {n: [] for n in env.names}
    simulated = False
    for k in range(env.config.utterances):
        name = env.names[k % len(env.names)]
        speech = await by_name[name].speak(env.view(name), rng)
        simulated = simulated or speech.simulated
        env.say(name, speech.text, tuple(speech.amounts))
        spoken[name].extend(list(d) for d in speech.distributions)
    return spoken, simulated


async def play_game(
    game: GovSimGame,
    fishers: Mapping[str, Fisher] | Sequence[Fisher],
    *,
    config: LakeConfig | None = None,
    intervener: Intervener | None = None,
    rng: random.Random | int | None = None,
    max_interventions: int = 100,
) -> GovSimResult:
    """Play ``game`` to its end and return the full record (module docstring).

    ``fishers``: a sequence in seat order or a mapping by name. ``rng`` drives the harvest
    assignment's draws (an int or a ``random.Random``; ``None`` means seed 0, combined with
    the game's own seed).
    """
    env = GovSimEnv(game, config)
    by_name = _as_fishers(env.names, fishers)
    if rng is None or isinstance(rng, int):
        rng = random.Random(f"govsim/{game.id}/{game.seed}/{rng or 0}")
    turns: list[GovSimTurn] = []
    spoken: dict[str, list[TopLogprobs]] = {n: [] for n in env.names}
    stocks: list[int] = []
    interventions = resamples = parse_failures = fallbacks = 0
    simulated = False

    while not env.done:
        month = env.state.month
        if not stocks or len(stocks) < month:
            stocks.append(env.state.stock)
        decided: list[CatchTurn] = list(
            await asyncio.gather(*(by_name[n].catch(env.view(n), rng) for n in env.names))
        )
        monitored = month >= 2 and env.can_rollback
        month_turns: list[GovSimTurn] = []
        reset = False
        for i, name in enumerate(env.names):
            draw = 0
            while True:
                ct = decided[i]
                simulated = simulated or ct.simulated
                parse_failures += len(ct.parse_errors)
                fallbacks += int(ct.fallback)
                obs = TurnObservation(
                    game_id=game.id,
                    turn=env.count_turn(),
                    run_turn=month,
                    role=ROLE,
                    agent=name,
                    action={"kind": "catch", "tons": ct.wish},
                    distributions=[*(list(d) for d in ct.distributions), *spoken[name]],
                )
                decision: Decision = "continue"
                if monitored and intervener is not None and interventions < max_interventions:
                    decision = intervener.decide(obs)
                    if decision not in ("continue", "reset", "resample"):
                        raise InputError(f"intervener returned {decision!r}")
                turn = GovSimTurn(
                    obs=obs,
                    month=month,
                    wish=ct.wish,
                    decision=decision,
                    applied=decision == "continue",
                    monitored=monitored,
                    fallback=ct.fallback,
                    errors=list(ct.parse_errors),
                    rogue=ct.rogue,
                    text=ct.text[:2000],
                )
                month_turns.append(turn)
                if decision == "resample":
                    interventions += 1
                    resamples += 1
                    draw += 1
                    decided[i] = await by_name[name].catch(env.view(name, draw=draw), rng)
                    continue
                if decision == "reset":
                    interventions += 1
                    reset = True
                break
            if reset:
                break
        turns.extend(month_turns)
        if reset:
            for t in month_turns:
                t.applied = False
            env.rollback_discussion()
            spoken, sim = await _meeting(env, by_name, rng)
            simulated = simulated or sim
            env.end_month()
            continue
        harvest = env.harvest({n: decided[i].wish for i, n in enumerate(env.names)}, rng)
        for t in month_turns:
            if t.applied:
                t.catch = harvest.catches[t.obs.agent]
        # The month's meeting, also after a collapse or the last harvest (GovSim's code).
        spoken, sim = await _meeting(env, by_name, rng)
        simulated = simulated or sim
        env.end_month()

    st = env.state
    total = sum(sum(h.catches.values()) for h in st.harvests)
    outcome = game_outcome(
        [h.stock_after for h in st.harvests],
        total,
        r0=game.r0,
        months=env.config.months,
        collapse_below=env.config.collapse_below,
    )
    return GovSimResult(
        game_id=game.id,
        r0=game.r0,
        months=env.config.months,
        collapse_below=env.config.collapse_below,
        months_played=len(st.harvests),
        collapsed=st.collapsed,
        survival_time=int(outcome["survival_time"]),
        survived=outcome["survival_rate"] == 1.0,
        efficiency=outcome["efficiency"],
        total_catch=total,
        stocks=stocks,
        harvests=list(st.harvests),
        meetings=[list(m) for m in st.meetings],
        undone_meetings=env.undone,
        total_turns=st.total_turns,
        resets=st.resets,
        resamples=resamples,
        parse_failures=parse_failures,
        fallbacks=fallbacks,
        simulated=simulated,
        turns=turns,
    )
