"""WhoDunitEnv rules held for every agent, and the ignored-fact analysis on a three-valued
property (the rogue-agents paper, §3: Intel answers the Accuser's request; a broad message
lists every character that has a value)."""

from __future__ import annotations

import pytest

from byzllm.agents.whodunit import WhoDunitAction
from byzllm.envs.whodunit import WhoDunitEnv, WhoDunitGame
from byzllm.errors import InputError

A = WhoDunitAction
QUESTION = A(kind="request_specific", character=2, property="hat", value="black")


def test_a_yes_no_answer_needs_the_pending_question(asym_game: WhoDunitGame) -> None:
    """A yes/no answer binds to the Accuser's pending question (the rogue-agents paper, §3):
    one stating a question of its own is refused with no question pending, and in place of
    the question asked (Intel answering what nobody asked)."""
    env = WhoDunitEnv(asym_game)
    env.step(A(kind="request_broad"))
    unasked = A(kind="respond", character=1, property="hat", value="brown", answer=True)
    assert env.check_action(unasked)
    with pytest.raises(InputError, match="illegal"):
        env.step(unasked)

    env = WhoDunitEnv(asym_game)
    env.step(QUESTION)
    other = A(kind="respond", character=4, property="mood", value="happy", answer=True)
    assert "a yes/no answer must answer the pending question" in env.check_action(other)
    # The pending question itself, stated or left to the environment, is an answer.
    stated = A(kind="respond", character=2, property="hat", value="black", answer=True)
    assert env.check_action(stated) == []
    assert env.check_action(A(kind="respond", answer=True)) == []
    out = env.step(stated)
    assert not out.flags.hallucination


def _asked_after(asym_game: WhoDunitGame, first: WhoDunitAction, answer: WhoDunitAction) -> bool:
    env = WhoDunitEnv(asym_game)
    env.step(first)
    env.step(answer)
    out = env.step(A(kind="request_specific", character=3, property="eye_color", value="blue"))
    return out.flags.ignored_fact


def test_ignored_fact_on_a_three_valued_property(asym_game: WhoDunitGame) -> None:
    """Suspect 3's eye colour is green (blue, brown or green). "Is it brown? No" leaves blue
    open: asking it was flagged as asking what the channel already answered. A broad list of
    the green-eyed that names 3 answers it: that was not flagged."""
    brown = A(kind="request_specific", character=3, property="eye_color", value="brown")
    assert not _asked_after(asym_game, brown, A(kind="respond", answer=False))
    green = A(kind="request_specific", character=3, property="eye_color", value="green")
    assert _asked_after(asym_game, green, A(kind="respond", answer=True))
    listed = A(kind="respond_broad", property="eye_color", value="green", characters=(3,))
    assert _asked_after(asym_game, A(kind="request_broad"), listed)
    # A list of another value that leaves 3 out says nothing about blue.
    unlisted = A(kind="respond_broad", property="eye_color", value="brown", characters=(4,))
    assert not _asked_after(asym_game, A(kind="request_broad"), unlisted)
    # Two values: "no" to one answers the other.
    env = WhoDunitEnv(asym_game)
    env.step(A(kind="request_specific", character=3, property="hat", value="black"))
    env.step(A(kind="respond", answer=False))
    again = env.step(A(kind="request_specific", character=3, property="hat", value="brown"))
    assert again.flags.ignored_fact


@pytest.mark.parametrize("ids", [(3, 1), (1, 3, 1), (3, 3, 1, 1)])
def test_a_broad_list_is_a_set(asym_game: WhoDunitGame, ids: tuple[int, ...]) -> None:
    """The brown-hatted are 1 and 3: listed as (3, 1) or with a repeat, a true list was
    flagged a hallucination and rendered as written."""
    env = WhoDunitEnv(asym_game)
    env.step(A(kind="request_broad"))
    out = env.step(A(kind="respond_broad", property="hat", value="brown", characters=ids))
    assert not out.flags.hallucination
    assert out.message.action.characters == (1, 3)
    assert "[1, 3]" in out.message.text
