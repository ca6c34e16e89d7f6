"""The game loop and its intervention seam (the rogue-agents paper, §2, §4.2, §6.1)."""

from __future__ import annotations

import random

import pytest

from byzllm.agents.whodunit import AgentTurn, AgentView, SimParams, WhoDunitAction
from byzllm.envs import Decision, TurnObservation
from byzllm.envs.whodunit import (
    GameConfig,
    WhoDunitGame,
    generate_games,
    play_game,
    simulated_agents,
)
from byzllm.errors import InputError

A = WhoDunitAction


class Scripted:
    """An agent that plays a fixed list of actions (then passes)."""

    def __init__(self, name: str, actions: list[WhoDunitAction], **extra: object) -> None:
        self.name = name
        self.actions = list(actions)
        self.extra = extra
        self.views: list[AgentView] = []

    async def act(self, view: AgentView, rng: random.Random) -> AgentTurn:
        self.views.append(view)
        action = self.actions.pop(0) if self.actions else A(kind="pass")
        dists = [[(str(view.turn), -0.1), ("9", -2.5)]]
        return AgentTurn(action=action, distributions=dists, **self.extra)  # type: ignore[arg-type]


class Recorder:
    """An intervener answering from a script and keeping every observation."""

    def __init__(self, decisions: list[Decision]) -> None:
        self.decisions = list(decisions)
        self.seen: list[TurnObservation] = []

    def decide(self, obs: TurnObservation) -> Decision:
        self.seen.append(obs)
        return self.decisions.pop(0) if self.decisions else "continue"


async def test_observations_reach_the_intervener_before_the_action(
    asym_game: WhoDunitGame,
) -> None:
    accuser = Scripted("Beth", [A(kind="request_broad"), A(kind="accuse", character=3)])
    intel = Scripted(
        "Alex", [A(kind="respond_broad", property="hat", value="brown", characters=(1, 3))]
    )
    rec = Recorder([])
    result = await play_game(asym_game, [accuser, intel], intervener=rec)
    assert result.success and result.accused and result.accused_suspect == 3
    assert result.culprit == 3 and result.total_turns == 3 and result.resets == 0
    assert [o.turn for o in rec.seen] == [1, 2, 3]
    assert [o.role for o in rec.seen] == ["accuser", "intel", "accuser"]
    assert [o.agent for o in rec.seen] == ["Beth", "Alex", "Beth"]
    assert rec.seen[0].action == {"kind": "request_broad", "action": 2}
    assert rec.seen[2].action == {"kind": "accuse", "action": 3, "character": 3}
    assert rec.seen[0].game_id == "hand-asym"
    assert [t.irreversible for t in result.turns] == [False, False, True]
    assert rec.seen[1].distributions == [[("2", -0.1), ("9", -2.5)]]
    rec_turn = result.turns[1]
    assert rec_turn.remaining_candidates == [1, 3] and rec_turn.valid and rec_turn.applied
    assert "broad message" in rec_turn.message


async def test_reset_discards_the_action_and_restarts_the_budget(
    asym_game: WhoDunitGame,
) -> None:
    accuser = Scripted(
        "Beth",
        [A(kind="request_broad"), A(kind="accuse", character=1), A(kind="accuse", character=3)],
    )
    intel = Scripted(
        "Alex", [A(kind="respond_broad", property="hat", value="brown", characters=(1, 3))]
    )
    # Reset when the Accuser is about to accuse 1 (turn 3).
    rec = Recorder(["continue", "continue", "reset"])
    result = await play_game(asym_game, [accuser, intel], intervener=rec)
    assert result.resets == 1
    assert result.success and result.accused_suspect == 3
    assert result.total_turns == 4  # 3 before the reset (incl. the discarded one) + 1
    assert [t.decision for t in result.turns] == ["continue", "continue", "reset", "continue"]
    assert not result.turns[2].applied
    # After the reset the Accuser saw an empty channel and budget turn 1 again, but the game
    # clock in its prompt kept running: turn 4 out of 3 + max_turns.
    last_view = accuser.views[-1]
    assert last_view.channel == () and last_view.turn == 1
    assert (last_view.clock_turn, last_view.clock_max_turns) == (4, 3 + asym_game.max_turns)
    assert [v.clock_turn for v in accuser.views] == [1, 3, 4]
    assert [o.turn for o in rec.seen] == [1, 2, 3, 4]
    # The run turn restarts after the reset; the total turn keeps growing.
    assert [o.run_turn for o in rec.seen] == [1, 2, 3, 1]


async def test_resample_asks_the_same_agent_again(asym_game: WhoDunitGame) -> None:
    accuser = Scripted("Beth", [A(kind="accuse", character=1), A(kind="accuse", character=3)])
    intel = Scripted("Alex", [])
    rec = Recorder(["resample"])
    result = await play_game(asym_game, [accuser, intel], intervener=rec)
    assert result.success and result.resamples == 1 and result.resets == 0
    assert result.total_turns == 2
    assert [v.turn for v in accuser.views] == [1, 1]  # same budget turn, asked again
    assert [v.clock_turn for v in accuser.views] == [1, 1]  # a resample moves no clock
    assert [v.draw for v in accuser.views] == [0, 1]  # the second asking is a fresh draw
    assert [(o.turn, o.run_turn) for o in rec.seen] == [(1, 1), (2, 1)]
    assert [t.decision for t in result.turns] == ["resample", "continue"]


async def test_a_share_of_another_fact_is_a_counted_invalid_move(sym_game: WhoDunitGame) -> None:
    # Alex's only fact is hat=brown: sharing "hat is black" under its number is refused and
    # passed, so no false fact enters the channel (the rogue-agents paper, §3: a share is the
    # choice of one of the player's own facts).
    alex = Scripted(
        "Alex",
        [A(kind="share", fact=1, property="hat", value="black"), A(kind="accuse", character=3)],
    )
    beth = Scripted("Beth", [A(kind="share", fact=1)])
    result = await play_game(sym_game, [alex, beth])
    first = result.turns[0]
    assert first.rejected and not first.valid and first.errors
    assert first.obs.action == {"kind": "pass", "action": None}
    assert result.invalid_actions == 1 and result.hallucinations == 0
    assert result.success


async def test_illegal_actions_become_the_counted_fallback(asym_game: WhoDunitGame) -> None:
    accuser = Scripted("Beth", [A(kind="share", fact=1), A(kind="accuse", character=4)])
    intel = Scripted("Alex", [])
    result = await play_game(asym_game, [accuser, intel])
    first = result.turns[0]
    assert not first.valid and first.fallback and first.errors
    assert first.rejected  # the record tells the refused action from a parse fall-back
    assert first.obs.action == {"kind": "pass", "action": None}
    assert result.fallbacks == 1  # the illegal share (a chosen pass is no fallback)
    assert not result.turns[1].fallback and not result.turns[1].rejected
    assert result.invalid_actions == 1


async def test_parse_failures_and_fallbacks_are_counted(asym_game: WhoDunitGame) -> None:
    accuser = Scripted(
        "Beth",
        [A(kind="pass"), A(kind="accuse", character=3)],
        parse_errors=["no JSON", "bad action"],
        fallback=False,
    )
    intel = Scripted("Alex", [A(kind="pass")], parse_errors=["x"] * 4, fallback=True)
    result = await play_game(asym_game, [accuser, intel])
    assert result.parse_failures == 2 + 4 + 2
    assert result.fallbacks == 1
    passed = result.turns[1]  # the agent wrote no action: a fall-back, no refused one
    assert passed.fallback and not passed.valid and not passed.rejected
    assert result.invalid_actions == 0
    assert result.turns[1].fallback and not result.turns[1].valid


async def test_mapping_of_agents_by_role(asym_game: WhoDunitGame) -> None:
    accuser = Scripted("Beth", [A(kind="accuse", character=3)])
    result = await play_game(asym_game, {"accuser": accuser, "intel": Scripted("Alex", [])})
    assert result.success
    with pytest.raises(InputError):
        await play_game(asym_game, {"accuser": accuser})
    with pytest.raises(InputError):
        await play_game(asym_game, [accuser])


async def test_turn_limit_ends_the_game(asym_game: WhoDunitGame) -> None:
    result = await play_game(asym_game, [Scripted("Beth", []), Scripted("Alex", [])])
    assert result.total_turns == asym_game.max_turns and not result.accused
    assert not result.success and result.accused_suspect is None


class AlwaysReset:
    def decide(self, obs: TurnObservation) -> Decision:
        return "reset"


async def test_a_runaway_intervener_is_capped() -> None:
    game = generate_games(1, seed=1)[0]
    result = await play_game(
        game, simulated_agents(game), intervener=AlwaysReset(), rng=0, max_interventions=5
    )
    assert result.resets == 5
    assert result.total_turns >= 6


async def test_bad_decisions_are_errors(asym_game: WhoDunitGame) -> None:
    class Bad:
        def decide(self, obs: TurnObservation) -> Decision:
            return "explode"  # type: ignore[return-value]

    with pytest.raises(InputError, match="explode"):
        await play_game(asym_game, [Scripted("Beth", []), Scripted("Alex", [])], intervener=Bad())


@pytest.mark.parametrize("variant", ["asym", "sym"])
async def test_simulated_games_are_reproducible(variant: str) -> None:
    game = generate_games(1, GameConfig(variant=variant), seed=4)[0]  # type: ignore[arg-type]
    a = await play_game(game, simulated_agents(game), rng=7)
    b = await play_game(game, simulated_agents(game), rng=7)
    assert a == b
    assert a.simulated
    assert all(t.obs.distributions for t in a.turns)


async def test_reset_then_game_completes_for_both_variants() -> None:
    """A reset mid-game (turn 4) leaves the game playable to its end."""
    for variant in ("asym", "sym"):
        games = generate_games(20, GameConfig(variant=variant), seed=2)  # type: ignore[arg-type]
        for i, game in enumerate(games):
            rec = Recorder(["continue"] * 3 + ["reset"])
            noiseless = SimParams(
                hallucination_rate=0,
                collapse_rate=0,
                role_loss_rate=0,
                recall_failure_rate=0,
                rogue_rate=0,
            )
            result = await play_game(game, simulated_agents(game, noiseless), intervener=rec, rng=i)
            if len(rec.seen) >= 4:
                assert result.resets == 1
                after = result.turns[4:]
                assert after and after[0].budget_turn == 1
            assert result.accused  # noiseless agents always finish with an accusation
