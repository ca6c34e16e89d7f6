"""Rules of both variants, analysis flags, snapshot / restore and rollback (the rogue-agents paper,
§2-§4.1)."""

from __future__ import annotations

import asyncio
import random

import pytest

from byzllm.agents.whodunit import SimulatedAgent, WhoDunitAction, render_prompt
from byzllm.envs.whodunit import WhoDunitEnv, WhoDunitGame, check_game, generate_games
from byzllm.errors import InputError

A = WhoDunitAction


def test_hand_games_are_valid(asym_game: WhoDunitGame, sym_game: WhoDunitGame) -> None:
    check_game(asym_game)
    check_game(sym_game)


def test_asym_views_hide_the_right_things(asym_game: WhoDunitGame) -> None:
    env = WhoDunitEnv(asym_game)
    v = env.view()
    assert (v.role, v.name, v.partners, v.turn, v.max_turns) == ("accuser", "Beth", ("Alex",), 1, 6)
    assert v.suspects is None
    assert v.culprit_description == {"hat": "brown", "eye_color": "green", "mood": "sad"}
    env.step(A(kind="request_broad"))
    v = env.view()
    assert (v.role, v.name, v.turn) == ("intel", "Alex", 2)
    assert v.suspects == asym_game.suspects and v.culprit_description is None
    assert v.pending_request == A(kind="request_broad")


def test_every_asym_action(asym_game: WhoDunitGame) -> None:
    env = WhoDunitEnv(asym_game)
    out = env.step(A(kind="request_specific", character=1, property="hat", value="brown"))
    assert out.message.text == (
        "Agent Beth has requested information: is property hat of character 1 brown?"
    )
    assert out.remaining_candidates == [1, 2, 3, 4]
    assert env.view().pending_request is not None
    # Intel answers the pending question: the environment fills in what is answered.
    out = env.step(A(kind="respond", answer=True))
    assert out.message.action == A(
        kind="respond", answer=True, character=1, property="hat", value="brown"
    )
    assert out.message.text == (
        "Agent Alex has responded that for character 1, the property hat is brown"
    )
    assert not out.flags.hallucination
    assert out.remaining_candidates == [1, 2, 3, 4]  # "yes, brown" cannot eliminate 1
    # Broad request, broad answer: hat black = [2, 4]; the culprit has a brown hat.
    env.step(A(kind="request_broad"))
    assert env.check_action(A(kind="respond", answer=True))  # no yes/no question pending
    out = env.step(A(kind="respond_broad", property="hat", value="black", characters=(2, 4)))
    assert out.message.text == (
        "Agent Alex has decided to return a broad message: For characters: [2, 4], "
        "the property hat is black"
    )
    assert out.remaining_candidates == [1, 3]
    assert not out.flags.hallucination and not out.flags.repetition
    # Accuse: irreversible, ends the game.
    out = env.step(A(kind="accuse", character=3))
    assert out.finished and env.done and env.success
    assert env.state.accused == 3 and env.state.total_turns == 5
    with pytest.raises(InputError):
        env.step(A(kind="request_broad"))


def test_analysis_flags(asym_game: WhoDunitGame) -> None:
    env = WhoDunitEnv(asym_game)
    env.step(A(kind="request_specific", character=2, property="mood", value="sad"))
    out = env.step(A(kind="respond", answer=False))  # suspect 2 IS sad: false
    assert out.flags.hallucination
    env.step(A(kind="request_broad"))
    out = env.step(A(kind="respond_broad", property="mood", value="happy", characters=(1, 4)))
    assert not out.flags.hallucination and out.remaining_candidates == [3]
    # Asking about a suspect already ruled out / something already answered: ignored fact.
    out = env.step(A(kind="request_specific", character=1, property="hat", value="brown"))
    assert out.flags.ignored_fact
    # Repeating a broad message: repetition; a wrong list: hallucination.
    out = env.step(A(kind="respond_broad", property="mood", value="happy", characters=(1, 4)))
    assert out.flags.repetition and not out.flags.hallucination
    assert env.done  # 6 turns spent
    assert not env.state.finished and env.state.accused is None and not env.success


def test_wrong_broad_list_and_wrong_accusation(asym_game: WhoDunitGame) -> None:
    env = WhoDunitEnv(asym_game)
    env.step(A(kind="request_broad"))
    out = env.step(A(kind="respond_broad", property="hat", value="brown", characters=(1,)))
    assert out.flags.hallucination  # suspect 3 also wears brown
    assert out.remaining_candidates == [1]  # at face value the culprit is gone
    out = env.step(A(kind="accuse", character=1))
    assert out.finished and not env.success and env.state.accused == 1
    assert not out.flags.ignored_fact  # the channel pointed at 1


def test_illegal_actions_are_refused(asym_game: WhoDunitGame, sym_game: WhoDunitGame) -> None:
    env = WhoDunitEnv(asym_game)
    for bad in [
        A(kind="share", fact=1),
        A(kind="respond", answer=True),
        A(kind="accuse", character=5),
        A(kind="request_specific", character=1, property="wings", value="yes"),
        A(kind="request_specific", character=1, property="hat", value="red"),
    ]:
        assert env.check_action(bad), bad
        with pytest.raises(InputError, match="illegal"):
            env.step(bad)
    env.step(A(kind="request_broad"))
    assert env.check_action(A(kind="respond_broad", property="hat", value="brown", characters=(9,)))
    # A respond that states its own question: checked as the question would be (step raised
    # an AssertionError or a KeyError for these, and play's illegal-action pass never came).
    env.step(A(kind="pass"))  # the Intel's turn passes
    env.step(A(kind="request_specific", character=2, property="hat", value="brown"))
    for bad in [
        A(kind="respond", property="hat", value="brown", answer=True),
        A(kind="respond", character=9, property="hat", value="brown", answer=True),
        A(kind="respond", character=1, property="wings", value="x", answer=True),
    ]:
        assert env.check_action(bad), bad
        with pytest.raises(InputError, match="illegal"):
            env.step(bad)
    sym = WhoDunitEnv(sym_game)
    assert sym.check_action(A(kind="share", fact=2))  # player 1 has one fact
    assert sym.check_action(A(kind="request_broad"))
    # A share states the sharer's own fact or nothing: another value, another of the
    # culprit's properties, or a value outside the table are all refused.
    for other in [("hat", "black"), ("mood", "sad"), ("hat", "purple")]:
        prop, value = other
        assert sym.check_action(A(kind="share", fact=1, property=prop, value=value))


def test_every_sym_action(sym_game: WhoDunitGame) -> None:
    env = WhoDunitEnv(sym_game)
    v = env.view()
    assert (v.role, v.name, v.facts) == ("player", "Alex", (("hat", "brown"),))
    assert v.suspects == sym_game.suspects and v.culprit_description is None
    out = env.step(A(kind="share", fact=1))
    assert out.message.text == (
        "Player Alex has decided to share a fact about the Winner: The Winner's hat is brown."
    )
    assert out.remaining_candidates == [1, 3] and not out.flags.hallucination
    out = env.step(A(kind="skip"))
    assert out.message.text == "Player Beth has skipped their turn."
    out = env.step(A(kind="share", fact=1))  # Alex again: shares the same fact
    assert out.flags.repetition and out.flags.ignored_fact
    # Beth misremembers her fact (mood=sad): a share is the choice of one of her own facts
    # (§3), so stating another value is refused, as a reply naming fact 1 could never say it.
    misremembered = A(kind="share", fact=1, property="mood", value="happy")
    assert env.check_action(misremembered) == ["a share must state the player's own fact 1"]
    with pytest.raises(InputError, match="own fact 1"):
        env.step(misremembered)
    out = env.step(A(kind="share", fact=1, property="mood", value="sad"))  # stated truly
    assert not out.flags.hallucination and out.remaining_candidates == [3]
    out = env.step(A(kind="accuse", character=1))
    assert out.finished and not env.success
    assert out.flags.ignored_fact  # the channel had ruled 1 out


def test_pass_fallback_for_every_role(asym_game: WhoDunitGame, sym_game: WhoDunitGame) -> None:
    env = WhoDunitEnv(asym_game, wording="original")
    out = env.step(A(kind="pass"))
    assert out.message.text == "Agent Beth did not make a valid move; the turn passed."
    assert env.view().pending_request is None
    out = env.step(A(kind="pass"))
    assert "Alex did not make a valid move" in out.message.text
    sym = WhoDunitEnv(sym_game)
    assert "Player Alex did not make" in sym.step(A(kind="pass")).message.text


def test_original_wording(asym_game: WhoDunitGame) -> None:
    env = WhoDunitEnv(asym_game, wording="original")
    out = env.step(A(kind="accuse", character=2))
    assert out.message.text == "Agent Beth has decided to accuse suspect 2"


def test_snapshot_restore_is_exact(asym_game: WhoDunitGame) -> None:
    env = WhoDunitEnv(asym_game)
    env.step(A(kind="request_specific", character=1, property="hat", value="brown"))
    env.step(A(kind="respond", answer=True))
    snap = env.snapshot()
    view_before = env.view()
    env.step(A(kind="request_broad"))
    env.step(A(kind="respond_broad", property="hat", value="black", characters=(2, 4)))
    env.rollback_to_last_irreversible()
    assert env.state != snap
    env.restore(snap)
    assert env.state == snap
    assert env.state is not snap
    assert env.view() == view_before
    # Mutating the env afterwards leaves the snapshot intact (deep copy both ways).
    env.step(A(kind="request_broad"))
    assert len(snap.channel) == 2


def test_rollback_semantics_and_play_to_the_end(asym_game: WhoDunitGame) -> None:
    env = WhoDunitEnv(asym_game)
    env.step(A(kind="request_broad"))
    env.step(A(kind="respond_broad", property="hat", value="brown", characters=(1, 3)))
    env.step(A(kind="request_broad"))
    env.rollback_to_last_irreversible()
    st = env.state
    assert st.channel == [] and st.budget_turn == 0 and st.resets == 1
    assert st.total_turns == 3  # the total keeps growing
    v = env.view()
    assert (v.role, v.turn, v.channel) == ("accuser", 1, ())  # the budget starts again
    # The game stays playable to its end.
    rng = random.Random(0)
    agents = {"accuser": SimulatedAgent("Beth"), "intel": SimulatedAgent("Alex")}
    while not env.done:
        view = env.view()
        turn = asyncio.run(agents[view.role].act(view, rng))
        env.step(turn.action)
    assert env.state.total_turns > 3
    assert env.state.budget_turn <= asym_game.max_turns
    if env.state.finished:
        with pytest.raises(InputError, match="irreversible"):
            env.rollback_to_last_irreversible()


def test_rollback_keeps_the_game_clock_running_with_a_fresh_budget(
    asym_game: WhoDunitGame,
) -> None:
    """The rogue-agents paper, §2: a reset rewinds the channel, not the clock."""
    env = WhoDunitEnv(asym_game)
    first = env.view()
    assert (first.clock_offset, first.clock_turn, first.clock_max_turns) == (0, 1, 6)
    env.step(A(kind="request_broad"))
    env.step(A(kind="respond_broad", property="hat", value="brown", characters=(1, 3)))
    env.count_discarded_turn()  # the turn the reset discards
    env.rollback_to_last_irreversible()
    v = env.view()
    # Same position as the game's first view (budget turn 1, empty channel, Accuser) ...
    assert (v.role, v.turn, v.max_turns, v.channel) == ("accuser", 1, 6, ())
    # ... but the clock shows the true turn and the fresh budget's end.
    assert (v.clock_offset, v.clock_turn, v.clock_max_turns) == (3, 4, 9)
    assert render_prompt(v)[0] == render_prompt(first)[0]
    assert render_prompt(v)[1] != render_prompt(first)[1]
    assert "The current turn is 4 out of 9." in render_prompt(v)[1]["content"]
    # The limit restarts: max_turns more turns after the reset.
    snap = env.snapshot()
    played = 0
    while not env.done:
        env.step(A(kind="pass"))
        played += 1
    assert played == asym_game.max_turns and env.state.total_turns == 3 + asym_game.max_turns
    assert env.view().clock_turn == env.state.total_turns + 1
    # Snapshots carry the clock; a second reset moves it on again.
    env.restore(snap)
    assert env.view() == v
    env.step(A(kind="pass"))
    env.rollback_to_last_irreversible()
    assert (env.view().clock_turn, env.view().clock_max_turns) == (5, 10)


def test_rollback_after_accusation_is_refused(asym_game: WhoDunitGame) -> None:
    env = WhoDunitEnv(asym_game)
    env.step(A(kind="accuse", character=1))
    with pytest.raises(InputError, match="irreversible"):
        env.rollback_to_last_irreversible()


def test_agent_names_and_counts(sym_game: WhoDunitGame, asym_game: WhoDunitGame) -> None:
    with pytest.raises(InputError):
        WhoDunitEnv(asym_game, names=("A", "B", "C"))
    with pytest.raises(InputError):
        WhoDunitEnv(asym_game, names=("A", "A"))
    with pytest.raises(InputError):
        WhoDunitEnv(sym_game, names=("A",))
    env = WhoDunitEnv(generate_games(1, seed=0)[0], names=("Ann", "Bob"))
    assert env.current_agent == "Ann"


def test_remaining_candidates_stay_exact_through_rollback_and_restore() -> None:
    from byzllm.agents.whodunit import SimParams
    from byzllm.agents.whodunit._deduce import accuser_deductions

    def fresh(env: WhoDunitEnv) -> list[int]:
        g = env.game
        msgs = [e.message for e in env.state.channel]
        out, _ = accuser_deductions(len(g.suspects), g.culprit_description, g.attributes, msgs)
        return [c for c in range(1, len(g.suspects) + 1) if c not in out]

    noisy = SimParams(hallucination_rate=0.3, rogue_rate=0.0)
    for game in generate_games(6, seed=3):
        env = WhoDunitEnv(game)
        agents = {n: SimulatedAgent(n, noisy) for n in env.names}
        rng = random.Random(game.id)
        saved = None
        step = 0
        while not env.done:
            view = env.view()
            turn = asyncio.run(agents[view.name].act(view, rng))
            if turn.action.kind == "accuse" and step < 12:
                env.rollback_to_last_irreversible()  # a reset instead of the accusation
            elif not env.check_action(turn.action):
                outcome = env.step(turn.action)
                assert outcome.remaining_candidates == fresh(env)
            step += 1
            if step == 4:
                saved = env.snapshot()
            if step == 8 and saved is not None:
                env.restore(saved)
            assert env.remaining_candidates() == fresh(env)
