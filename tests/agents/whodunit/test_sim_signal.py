"""``fault_signal``: how far a faulty turn's reported distributions move from a clean turn's.

At 0 a hallucinating, collapsing, role-losing or rogue agent reports exactly what a clean agent
writing the same action from the same beliefs would: no distribution depends on whether the
message is true. At 1 (the default) the faults show. What the agent does never depends on it.
"""

from __future__ import annotations

import asyncio
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from byzllm.agents.whodunit import (
    AgentTurn,
    AgentView,
    ChannelMessage,
    SimParams,
    SimulatedAgent,
    WhoDunitAction,
    render_message,
)
from byzllm.envs.whodunit import GameConfig, generate_games, play_game, simulated_agents

from .conftest import ATTRS, SUSPECTS, make_view

A = WhoDunitAction
QUIET = SimParams(
    hallucination_rate=0, collapse_rate=0, role_loss_rate=0, recall_failure_rate=0, rogue_rate=0
)
SIGNALS = (0.0, 1.0)
TOPICS = [(prop, value) for prop, values in ATTRS.items() for value in values]


def quiet(signal: float, **update: float) -> SimParams:
    return QUIET.model_copy(update={"fault_signal": signal, **update})


def msg(sender: str, role: str, action: WhoDunitAction) -> ChannelMessage:
    return ChannelMessage(
        sender=sender,
        role=role,  # type: ignore[arg-type]
        action=action,
        text=render_message(sender, role, action),  # type: ignore[arg-type]
    )


def decide(params: SimParams, view: AgentView, seed: int) -> AgentTurn:
    return SimulatedAgent(view.name, params).decide(view, random.Random(seed))


def holders(suspects: tuple[dict[str, str], ...], prop: str, value: str) -> tuple[int, ...]:
    return tuple(i for i, s in enumerate(suspects, 1) if s[prop] == value)


# -- Intel: a false yes/no answer ------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    character=st.integers(1, len(SUSPECTS)),
    topic=st.sampled_from(TOPICS),
)
def test_a_false_answer_reports_like_a_true_one_at_zero_signal(
    seed: int, character: int, topic: tuple[str, str]
) -> None:
    prop, value = topic
    q = A(kind="request_specific", character=character, property=prop, value=value)
    view = make_view("intel", pending_request=q, turn=2)
    truth = SUSPECTS[character - 1][prop] == value
    for signal in SIGNALS:
        # Same view, same rng stream; only whether the hallucination fires differs.
        clean = decide(quiet(signal), view, seed)
        false = decide(quiet(signal, hallucination_rate=1.0), view, seed)
        assert clean.action.answer is truth and false.action.answer is (not truth)
        if signal == 0.0:
            assert false.distributions == clean.distributions
        else:
            assert false.distributions != clean.distributions


# -- Intel: a broad list with one mis-recalled id ----------------------------------------------


def _only_topic_left(topic: tuple[str, str]) -> tuple[ChannelMessage, ...]:
    """A channel in which every other property-value was already broadcast (Intel's next
    broad message has to be about ``topic``)."""
    return tuple(
        msg("Alex", "intel", A(kind="respond_broad", property=p, value=v, characters=(1,)))
        for p, v in TOPICS
        if (p, v) != topic
    )


def _toggled(suspect: dict[str, str], prop: str, value: str) -> dict[str, str]:
    """``suspect`` with ``prop`` moved onto ``value`` or, if it had it, off it."""
    other = next(v for v in ATTRS[prop] if v != value)
    return {**suspect, prop: other if suspect[prop] == value else value}


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 10**6), topic=st.sampled_from(TOPICS))
def test_a_false_list_reports_like_the_same_list_written_truthfully_at_zero_signal(
    seed: int, topic: tuple[str, str]
) -> None:
    prop, value = topic
    channel = _only_topic_left(topic)
    view = make_view("intel", channel=channel, pending_request=A(kind="request_broad"), turn=2)
    for signal in SIGNALS:
        false = decide(quiet(signal, hallucination_rate=1.0), view, seed)
        a = false.action
        assert (a.property, a.value) == topic
        flipped = set(a.characters) ^ set(holders(SUSPECTS, prop, value))
        assert len(flipped) == 1  # the message is false by exactly one id
        # The same list in a world where it is true: the mis-recalled suspect really is
        # (or is not) a holder. A clean Intel there writes the very same message.
        flip = flipped.pop()
        world = tuple(
            _toggled(s, prop, value) if i == flip else s for i, s in enumerate(SUSPECTS, 1)
        )
        true_view = view.model_copy(update={"suspects": world})
        true = decide(quiet(signal), true_view, seed)
        assert true.action == a
        if signal == 0.0:
            assert false.distributions == true.distributions
        else:
            assert false.distributions != true.distributions


# -- a symmetric player: a misremembered fact -------------------------------------------------


def _misremembered(view: AgentView) -> list[AgentView]:
    """``view`` as held by a player who misremembers one fact it holds: each wrong value of
    each of its own or shared facts, in its facts and in the channel alike."""
    out = []
    for prop, value in view.facts:
        for other in ATTRS[prop]:
            if other == value:
                continue

            def swap(f: tuple[str, str], prop: str = prop, other: str = other) -> tuple[str, str]:
                return (prop, other) if f[0] == prop else f

            channel = tuple(
                m.model_copy(update={"action": m.action.model_copy(update={"value": other})})
                if m.action.kind == "share" and m.action.property == prop
                else m
                for m in view.channel
            )
            facts = tuple(swap(f) for f in view.facts)
            out.append(view.model_copy(update={"facts": facts, "channel": channel}))
    return out


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 10**6), signal=st.sampled_from(SIGNALS))
def test_a_hallucinating_player_shares_its_true_fact_and_reports_its_wrong_belief(
    seed: int, signal: float
) -> None:
    # Own facts hat=brown, eye_color=green; the first is already shared, so the turn shares
    # the second. A player misremembers a fact it holds, but shares by the fact's number
    # (as a model's reply does): the share is its true fact. The hallucination shows only
    # through the belief built on it: the turn reports what a clean player holding the
    # wrong value reports, at any fault_signal.
    shared = msg("Alex", "player", A(kind="share", fact=1, property="hat", value="brown"))
    view = make_view("player", channel=(shared,), turn=4)
    false = decide(quiet(signal, hallucination_rate=1.0), view, seed)
    assert "hallucination" in false.noise
    a = false.action
    if a.kind == "share":
        assert a == A(kind="share", fact=2, property="eye_color", value="green")
    else:
        assert a.kind == "accuse"
    clean = [decide(quiet(signal), wrong, seed) for wrong in _misremembered(view)]
    assert any(c.distributions == false.distributions and c.action.kind == a.kind for c in clean)


# -- rogue episodes, collapse, role loss -----------------------------------------------------

ROLE_VIEWS = (
    make_view("accuser", turn=5),
    make_view(
        "intel",
        pending_request=A(kind="request_specific", character=3, property="hat", value="brown"),
        turn=2,
    ),
    make_view("intel", pending_request=A(kind="request_broad"), turn=2),
    make_view("player"),
)


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 10**6), view=st.sampled_from(ROLE_VIEWS))
def test_a_rogue_episode_reports_like_a_clean_one_at_zero_signal(
    seed: int, view: AgentView
) -> None:
    for signal in SIGNALS:
        # Rogue drawn with certainty vs never: one draw either way, the same stream after it.
        clean = decide(quiet(signal), view, seed)
        rogue = decide(quiet(signal, rogue_rate=1.0), view, seed)
        assert "rogue" in rogue.noise and rogue.action == clean.action
        if signal == 0.0:
            assert rogue.distributions == clean.distributions
        else:
            assert rogue.distributions != clean.distributions


def test_a_collapse_reports_the_clean_policy_at_zero_signal() -> None:
    previous = msg(
        "Beth", "accuser", A(kind="request_specific", character=1, property="hat", value="brown")
    )
    view = make_view("accuser", channel=(previous,), turn=3)
    for signal in SIGNALS:
        clean = decide(quiet(signal), view, 0)
        copied = decide(quiet(signal, collapse_rate=1.0), view, 0)
        assert copied.action == previous.action and clean.action != previous.action
        # The action-number position: the same policy, without the copy's extra weight.
        same = copied.distributions[0] == clean.distributions[0]
        assert same is (signal == 0.0)


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 10**6), view=st.sampled_from(ROLE_VIEWS))
def test_role_loss_reports_the_clean_policy_at_zero_signal(seed: int, view: AgentView) -> None:
    for signal in SIGNALS:
        clean = decide(quiet(signal), view, seed)
        lost = decide(quiet(signal, role_loss_rate=1.0), view, seed)
        assert "role_loss" in lost.noise
        same = lost.distributions[0] == clean.distributions[0]
        assert same is (signal == 0.0)


def test_a_lost_intel_list_reports_like_a_recalled_one_at_zero_signal() -> None:
    view = make_view("intel", pending_request=A(kind="request_broad"), turn=2)
    lost = [decide(quiet(0.0, role_loss_rate=1.0), view, seed) for seed in range(40)]
    lists = [t for t in lost if t.action.kind == "respond_broad" and t.action.characters]
    assert lists
    for turn in lists:
        # What a clean Intel reports for that very list (in a world where it is true).
        a = turn.action
        assert a.property is not None and a.value is not None
        world = tuple(
            {**s, a.property: a.value if i in a.characters else "none"}
            for i, s in enumerate(SUSPECTS, 1)
        )
        channel = _only_topic_left((a.property, a.value))
        true_view = view.model_copy(update={"suspects": world, "channel": channel})
        true = decide(quiet(0.0), true_view, 0)
        assert true.action.characters == a.characters
        assert turn.distributions[1:] == true.distributions[1:]


# -- whole games -----------------------------------------------------------------------------

NOISY = SimParams(
    hallucination_rate=0.2,
    collapse_rate=0.1,
    role_loss_rate=0.1,
    role_loss_invalid=0.5,
    recall_failure_rate=0.1,
    rogue_rate=0.5,
)


async def _transcripts(params: SimParams, variant: str) -> list[list[tuple[object, ...]]]:
    games = generate_games(30, GameConfig(variant=variant), seed=5)  # type: ignore[arg-type]
    out = []
    for i, game in enumerate(games):
        result = await play_game(game, simulated_agents(game, params), rng=i)
        out.append(
            [
                (t.obs.action, tuple(t.noise), tuple(map(tuple, t.obs.distributions)))
                for t in result.turns
            ]
        )
    return out


def test_fault_signal_changes_what_is_reported_never_what_is_done() -> None:
    for variant in ("asym", "sym"):
        runs = {
            s: asyncio.run(_transcripts(NOISY.model_copy(update={"fault_signal": s}), variant))
            for s in (0.0, 0.5, 1.0)
        }
        actions = {
            s: [[(action, noise) for action, noise, _ in game] for game in games]
            for s, games in runs.items()
        }
        assert actions[0.0] == actions[0.5] == actions[1.0]
        reported = {s: [[d for *_, d in game] for game in games] for s, games in runs.items()}
        assert reported[0.0] != reported[0.5] != reported[1.0]
