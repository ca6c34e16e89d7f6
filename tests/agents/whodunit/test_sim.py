"""Simulated agents: policy, the four noise modes, rogue episodes, belief-derived distributions."""

from __future__ import annotations

import math
import random

import pytest

from byzllm.agents.whodunit import (
    AgentView,
    ChannelMessage,
    SimParams,
    SimulatedAgent,
    WhoDunitAction,
    render_message,
)

from .conftest import SUSPECTS, make_view

A = WhoDunitAction
QUIET = SimParams(
    hallucination_rate=0, collapse_rate=0, role_loss_rate=0, recall_failure_rate=0, rogue_rate=0
)


def msg(sender: str, role: str, action: WhoDunitAction) -> ChannelMessage:
    return ChannelMessage(
        sender=sender,
        role=role,
        action=action,
        text=render_message(sender, role, action),  # type: ignore[arg-type]
    )


def entropy(dist: list[tuple[str, float]]) -> float:
    ps = [math.exp(lp) for _, lp in dist]
    total = sum(ps)
    return -sum(p / total * math.log(p / total) for p in ps if p > 0)


def holders(prop: str, value: str) -> tuple[int, ...]:
    return tuple(i for i, s in enumerate(SUSPECTS, 1) if s[prop] == value)


def broad(prop: str, value: str, chars: tuple[int, ...] | None = None) -> ChannelMessage:
    action = A(
        kind="respond_broad",
        property=prop,
        value=value,
        characters=holders(prop, value) if chars is None else chars,
    )
    return msg("Alex", "intel", action)


# The culprit of the accuser fixture is suspect 3: brown hat, green eyes, button-up, pink.
SOLVING = (
    broad("hat", "brown"),  # -> 1 3 5 7 9 11
    broad("eye_color", "green"),  # -> 3 9
    broad("shirt", "button-up"),  # -> 3
)


def test_accuser_asks_broadly_then_accuses_when_it_knows() -> None:
    agent = SimulatedAgent("Beth", QUIET)
    rng = random.Random(0)
    first = agent.decide(make_view("accuser"), rng)
    assert first.action == A(kind="request_broad") and first.simulated and not first.noise
    known = agent.decide(make_view("accuser", channel=SOLVING, turn=7), rng)
    assert known.action == A(kind="accuse", character=3)
    # Sharper when it knows: the accusation's character distribution is peaked on 3.
    char_dist = known.distributions[1]
    assert char_dist[0][0] == "3" and math.exp(char_dist[0][1]) > 0.9
    assert entropy(known.distributions[0]) < entropy(first.distributions[0])


def test_accuser_asks_specifically_when_few_remain() -> None:
    agent = SimulatedAgent("Beth", QUIET)
    view = make_view("accuser", channel=SOLVING[:2], turn=5)  # 3 and 9 remain
    turn = agent.decide(view, random.Random(1))
    a = turn.action
    assert a.kind == "request_specific" and a.character in (3, 9)
    assert a.property in ("shirt", "shirt_color") and a.value == SUSPECTS[2][a.property]


def test_accuser_guesses_on_its_last_turn() -> None:
    agent = SimulatedAgent("Beth", QUIET)
    view = make_view("accuser", channel=SOLVING[:1], turn=31)
    assert agent.decide(view, random.Random(0)).action.kind == "accuse"


def test_intel_answers_truthfully_and_picks_splitting_broad_messages() -> None:
    agent = SimulatedAgent("Alex", QUIET)
    q = A(kind="request_specific", character=2, property="hat", value="brown")
    turn = agent.decide(make_view("intel", pending_request=q), random.Random(0))
    assert turn.action == A(
        kind="respond", character=2, property="hat", value="brown", answer=False
    )
    turn = agent.decide(
        make_view("intel", pending_request=A(kind="request_broad")), random.Random(0)
    )
    a = turn.action
    assert a.kind == "respond_broad" and a.property is not None and a.value is not None
    assert a.characters == holders(a.property, a.value)
    assert 4 <= len(a.characters) <= 8  # a balanced split of 12
    assert len(turn.distributions) == 1 + len(a.characters)


def test_player_shares_then_accuses() -> None:
    agent = SimulatedAgent("Alex", QUIET)
    # Own facts hat=brown, eye_color=green -> suspects 3, 9.
    turn = agent.decide(make_view("player"), random.Random(0))
    assert turn.action.kind == "share" and turn.action.fact in (1, 2)
    shared = msg("Beth", "player", A(kind="share", fact=1, property="shirt", value="button-up"))
    turn = agent.decide(make_view("player", channel=(shared,)), random.Random(0))
    assert turn.action == A(kind="accuse", character=3)


def test_player_skips_when_it_has_nothing_to_add() -> None:
    agent = SimulatedAgent("Alex", QUIET)
    mine = [
        msg("Alex", "player", A(kind="share", fact=i, property=p, value=v))
        for i, (p, v) in enumerate((("hat", "brown"), ("eye_color", "green")), 1)
    ]
    # The shared facts leave 3 and 9: no unshared fact, turns remain -> skip.
    view = make_view("player", channel=tuple(mine), turn=3, max_turns=20)
    assert agent.decide(view, random.Random(0)).action.kind == "skip"


@pytest.mark.parametrize("role", ["accuser", "intel", "player"])
def test_hallucination_mode(role: str) -> None:
    agent = SimulatedAgent("X", QUIET.model_copy(update={"hallucination_rate": 1.0}))
    q = A(kind="request_specific", character=2, property="hat", value="black")
    view = make_view(role, pending_request=q if role == "intel" else None)
    turn = agent.decide(view, random.Random(0))
    assert "hallucination" in turn.noise
    a = turn.action
    if role == "intel":
        assert a.kind == "respond" and a.answer is False  # suspect 2 does wear black
    if role == "player":
        assert a.kind == "share" and a.fact is not None
        assert (a.property, a.value) != view.facts[a.fact - 1]


def test_hallucinating_accuser_believes_a_wrong_culprit() -> None:
    params = QUIET.model_copy(update={"hallucination_rate": 1.0})
    rng = random.Random(3)
    accused = {
        SimulatedAgent("Beth", params)
        .decide(make_view("accuser", channel=SOLVING), rng)
        .action.character
        for _ in range(30)
    }
    assert accused - {3}, "a misremembered property must sometimes point elsewhere"


def test_collapse_mode_repeats_and_loops() -> None:
    params = QUIET.model_copy(update={"collapse_rate": 1.0})
    agent = SimulatedAgent("Beth", params)
    previous = msg(
        "Beth", "accuser", A(kind="request_specific", character=1, property="hat", value="brown")
    )
    view = make_view("accuser", channel=(previous, *SOLVING), turn=9)
    turn = agent.decide(view, random.Random(0))
    assert turn.noise[0] == "collapse" and turn.action == previous.action
    # In a loop (last two own messages identical) it keeps repeating even at rate 0.
    looping = QUIET.model_copy(update={"collapse_persistence": 1.0})
    view = make_view("accuser", channel=(previous, previous, *SOLVING), turn=9)
    assert SimulatedAgent("Beth", looping).decide(view, random.Random(0)).action == previous.action
    # Nothing to repeat on the first turn.
    assert "collapse" not in agent.decide(make_view("accuser"), random.Random(0)).noise


def test_role_loss_mode_takes_random_legal_actions() -> None:
    params = QUIET.model_copy(update={"role_loss_rate": 1.0})
    kinds = set()
    for seed in range(40):
        for role in ("accuser", "intel", "player"):
            turn = SimulatedAgent("X", params).decide(make_view(role), random.Random(seed))
            assert "role_loss" in turn.noise
            kinds.add((role, turn.action.kind))
    assert ("accuser", "accuse") in kinds and ("accuser", "request_specific") in kinds
    assert ("intel", "respond_broad") in kinds and ("player", "skip") in kinds


def test_recall_failure_mode_forgets_the_channel() -> None:
    params = QUIET.model_copy(update={"recall_failure_rate": 1.0, "recall_drop": 1.0})
    turn = SimulatedAgent("Beth", params).decide(
        make_view("accuser", channel=SOLVING, turn=7), random.Random(0)
    )
    assert "recall_failure" in turn.noise
    assert turn.action == A(kind="request_broad")  # it forgot everything it was told


def test_noise_flattens_the_distributions() -> None:
    calm = SimulatedAgent("Beth", QUIET).decide(
        make_view("accuser", channel=SOLVING, turn=7), random.Random(0)
    )
    noisy_params = QUIET.model_copy(update={"recall_failure_rate": 1.0, "recall_drop": 0.0})
    noisy = SimulatedAgent("Beth", noisy_params).decide(
        make_view("accuser", channel=SOLVING, turn=7), random.Random(0)
    )
    assert noisy.action == calm.action  # nothing forgotten, but the agent was "confused"
    assert entropy(noisy.distributions[1]) > entropy(calm.distributions[1]) + 0.5


def test_rogue_episodes_are_redrawn_after_a_reset() -> None:
    params = QUIET.model_copy(update={"rogue_rate": 0.5})
    agent = SimulatedAgent("Beth", params)
    rng = random.Random(0)
    flags = []
    for _episode in range(40):
        rogue = []
        for turn in (1, 3, 5):
            out = agent.decide(make_view("accuser", turn=turn), rng)
            rogue.append("rogue" in out.noise)
        assert len(set(rogue)) == 1  # constant within an episode
        flags.append(rogue[0])
    assert 5 < sum(flags) < 35  # redrawn at every reset (turn going back to 1)


def test_top_k_limits_the_lists() -> None:
    params = QUIET.model_copy(update={"top_k": 3})
    turn = SimulatedAgent("Beth", params).decide(
        make_view("accuser", channel=SOLVING, turn=7), random.Random(0)
    )
    assert all(len(d) <= 3 for d in turn.distributions)
    assert all(d == sorted(d, key=lambda x: -x[1]) for d in turn.distributions)


def test_params_are_validated() -> None:
    with pytest.raises(ValueError):
        SimParams(hallucination_rate=1.5)
    with pytest.raises(ValueError):
        SimParams(unknown=1)  # type: ignore[call-arg]


def _view_sanity(view: AgentView) -> None:
    assert view.n_suspects == len(SUSPECTS)


def test_fixture_views() -> None:
    for role in ("accuser", "intel", "player"):
        _view_sanity(make_view(role))
