"""Simulated agents: policy, the four noise modes, rogue episodes, belief-derived distributions."""

from __future__ import annotations

import asyncio
import math
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from byzllm.agents._params import ASSUMPTION, parameter_rows
from byzllm.agents.whodunit import (
    AgentView,
    ChannelMessage,
    SimParams,
    SimulatedAgent,
    WhoDunitAction,
    action_kinds,
    render_message,
)
from byzllm.agents.whodunit._deduce import accuser_evidence, fact_violations
from byzllm.agents.whodunit._sim import list_position
from byzllm.envs.whodunit import GameConfig, generate_games, play_game, simulated_agents

from .conftest import ATTRS, SUSPECTS, make_view

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
    # The action position is its soft policy: decided on asking broadly at first (nothing
    # focuses its belief yet), mostly for accusing once it knows.
    assert math.exp(dict(first.distributions[0])["2"]) > 0.99
    assert math.exp(dict(known.distributions[0])["3"]) > 0.5


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


def test_simulated_players_never_share_a_false_fact() -> None:
    """A model-backed player shares a fact by its number, which is always its own true fact;
    so does a simulated one, hallucinating or not (on 180 symmetric games at the defaults, 98
    of 444 shares had been false). The hallucinations act on the players' beliefs."""
    games = generate_games(60, GameConfig(variant="sym"), seed=0)
    params = SimParams(hallucination_rate=0.3)
    shares = hallucinating = 0
    for i, game in enumerate(games):
        result = asyncio.run(play_game(game, simulated_agents(game, params), rng=i))
        assert result.invalid_actions == 0 and result.hallucinations == 0
        shares += sum(t.obs.action["kind"] == "share" for t in result.turns)
        hallucinating += sum("hallucination" in t.noise for t in result.turns)
    assert shares > 50 and hallucinating > 20


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
        # A share names a fact number, which states the player's own fact, as a model's
        # reply does: the misremembered value stays in its belief.
        assert a.kind == "share" and a.fact is not None
        assert (a.property, a.value) == view.facts[a.fact - 1]


def test_specific_focus_sets_the_accuser_s_choice_of_question() -> None:
    # With nothing in the channel the Accuser's belief is uniform over the 12 suspects: its
    # two best hold m2 = 2 / 12. P(specific) / P(broad) = exp(decisiveness * (m2 - focus)):
    # at the default 0.5, exp(20 * (1/6 - 1/2)) = exp(-20/3), a broad request; at 0.1,
    # exp(20 * (1/6 - 0.1)) = exp(4/3), a specific one.
    view = make_view("accuser")
    for focus, kind, log_ratio in [
        (None, "request_broad", -20 / 3),
        (0.1, "request_specific", 4 / 3),
    ]:
        update = {} if focus is None else {"specific_focus": focus}
        turn = SimulatedAgent("Beth", QUIET.model_copy(update=update)).decide(
            view, random.Random(0)
        )
        assert turn.action.kind == kind
        logp = dict(turn.distributions[0])
        assert logp["1"] - logp["2"] == pytest.approx(log_ratio)
    assert SimParams().specific_focus == 0.5


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


def test_hallucinating_player_believes_a_wrong_culprit() -> None:
    # Own facts hat=brown, eye_color=green and the shared shirt=button-up single out 3 (a
    # clean player accuses 3: test_player_shares_then_accuses). A misremembered fact moves
    # the belief: it sometimes accuses elsewhere or holds back, and never shares a false fact.
    params = QUIET.model_copy(update={"hallucination_rate": 1.0})
    shared = msg("Beth", "player", A(kind="share", fact=1, property="shirt", value="button-up"))
    view = make_view("player", channel=(shared,))
    rng = random.Random(3)
    actions = [SimulatedAgent("Alex", params).decide(view, rng).action for _ in range(30)]
    assert {a for a in actions if a != A(kind="accuse", character=3)}
    for a in actions:
        assert a.kind != "share" or (a.property, a.value) == view.facts[(a.fact or 0) - 1]


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


def test_harmless_noise_leaves_the_belief_and_its_distributions_alone() -> None:
    calm = SimulatedAgent("Beth", QUIET).decide(
        make_view("accuser", channel=SOLVING, turn=7), random.Random(0)
    )
    # A recall failure that forgets nothing does no damage: no spike.
    harmless = QUIET.model_copy(update={"recall_failure_rate": 1.0, "recall_drop": 0.0})
    same = SimulatedAgent("Beth", harmless).decide(
        make_view("accuser", channel=SOLVING, turn=7), random.Random(0)
    )
    assert "recall_failure" in same.noise
    assert same.action == calm.action
    assert same.distributions == calm.distributions


def test_confusion_scales_with_the_damage_to_the_belief() -> None:
    def char_entropy(channel: tuple[ChannelMessage, ...]) -> float:
        turn = SimulatedAgent("Beth", QUIET).decide(
            make_view("accuser", channel=channel, turn=31), random.Random(0)
        )
        assert turn.action.kind == "accuse"  # last turn: it must guess
        return entropy(turn.distributions[1])

    clean = char_entropy(SOLVING)
    # One hallucinated id list drops the culprit (3) from the green-eyed: every suspect is now
    # contradicted by some message and the posterior spreads over the least contradicted.
    one_wrong = (SOLVING[0], broad("eye_color", "green", (9,)), SOLVING[2])
    # Forgetting a message (no contradiction) widens it to the three it no longer tells apart.
    forgotten = (SOLVING[0], SOLVING[2])
    assert clean < 0.1
    assert char_entropy(one_wrong) > char_entropy(forgotten) > clean + 1.0


def test_intel_doubt_shows_where_it_hallucinated() -> None:
    q = A(kind="request_specific", character=2, property="hat", value="black")
    calm = SimulatedAgent("Alex", QUIET).decide(make_view("intel", pending_request=q), _rng())
    wrong = SimulatedAgent("Alex", QUIET.model_copy(update={"hallucination_rate": 1.0})).decide(
        make_view("intel", pending_request=q), _rng()
    )
    assert calm.action.answer is True and wrong.action.answer is False
    p_calm = math.exp(dict(calm.distributions[0])["1"])
    p_wrong = math.exp(dict(wrong.distributions[0])["1"])
    assert p_calm == pytest.approx(0.98)  # recall_confidence
    assert 0.5 <= p_wrong <= 0.8  # the doubt it held the wrong answer with
    # A broad list with one mis-recalled id: the doubtful id's position is the uncertain one.
    view = make_view("intel", pending_request=A(kind="request_broad"))
    for seed in range(20):
        turn = SimulatedAgent("Alex", QUIET.model_copy(update={"hallucination_rate": 1.0})).decide(
            view, random.Random(seed)
        )
        a = turn.action
        assert a.property is not None and a.value is not None
        truth = set(holders(a.property, a.value))
        flipped = set(a.characters) ^ truth
        assert len(flipped) == 1
        ids = list(a.characters)
        worst = max(range(len(ids)), key=lambda j: entropy(turn.distributions[1 + j]))
        f = flipped.pop()
        if f in ids:  # an added id is the most uncertain position of the list
            assert ids[worst] == f


def _rng() -> random.Random:
    return random.Random(0)


def test_list_position_by_hand() -> None:
    # q = (0.9, 0.2, 0.5): P(1) = 0.9; P(2) = 0.1 * 0.2 = 0.02; P(3) = 0.1 * 0.8 * 0.5 = 0.04;
    # P(end) = 0.1 * 0.8 * 0.5 = 0.04.
    first = list_position([0.9, 0.2, 0.5], 0)
    assert first == pytest.approx({"1": 0.9, "2": 0.02, "3": 0.04, "]": 0.04})
    # After id 2: P(3) = 0.5, P(end) = 0.5.
    assert list_position([0.9, 0.2, 0.5], 2) == pytest.approx({"3": 0.5, "]": 0.5})
    assert sum(first.values()) == pytest.approx(1.0)


def test_accuser_posterior_by_hand() -> None:
    # One broad message "brown hat: 1 3 5 7 9 11" (the culprit, 3, wears brown): the six
    # listed get one confirmed property (weight e^0.7), the six others one contradiction
    # (weight e^-5). P(3) = e^0.7 / (6 e^0.7 + 6 e^-5).
    turn = SimulatedAgent("Beth", QUIET).decide(
        make_view("accuser", channel=SOLVING[:1], turn=31), random.Random(0)
    )
    assert turn.action.kind == "accuse"
    expected = math.exp(0.7) / (6 * math.exp(0.7) + 6 * math.exp(-5))
    dist = dict(turn.distributions[1])
    assert math.exp(dist[str(turn.action.character)]) == pytest.approx(expected, rel=1e-6)
    assert math.exp(dist["2"]) == pytest.approx(
        math.exp(-5) / (6 * math.exp(0.7) + 6 * math.exp(-5))
    )
    # Its last turn: P(accuse) = max(sigmoid(20 (top - 0.9)), 0.95) = 0.95.
    assert math.exp(dict(turn.distributions[0])["3"]) == pytest.approx(0.95)


def test_rogue_agents_decode_flatter() -> None:
    rogue = QUIET.model_copy(update={"rogue_rate": 1.0, "rogue_noise_multiplier": 1.0})
    view = make_view("accuser", channel=SOLVING, turn=7)
    calm = SimulatedAgent("Beth", QUIET).decide(view, random.Random(0))
    hot = SimulatedAgent("Beth", rogue).decide(view, random.Random(0))
    assert "rogue" in hot.noise and hot.action == calm.action
    # Temperature 2: p ** 0.5 renormalized.
    p3 = math.exp(dict(calm.distributions[1])["3"])
    assert math.exp(dict(hot.distributions[1])["3"]) < p3
    assert entropy(hot.distributions[1]) > entropy(calm.distributions[1])


def test_collapse_copies_confidently() -> None:
    previous = msg(
        "Beth", "accuser", A(kind="request_specific", character=1, property="hat", value="brown")
    )
    view = make_view("accuser", channel=(previous, *SOLVING), turn=9)
    params = QUIET.model_copy(update={"collapse_rate": 1.0})
    turn = SimulatedAgent("Beth", params).decide(view, random.Random(0))
    assert turn.action == previous.action
    # The copied action number and id carry at least the copy weight (0.8).
    assert math.exp(dict(turn.distributions[0])["1"]) >= 0.8
    assert math.exp(dict(turn.distributions[1])["1"]) >= 0.8


def test_rogue_episodes_are_redrawn_after_a_reset() -> None:
    params = QUIET.model_copy(update={"rogue_rate": 0.5})
    agent = SimulatedAgent("Beth", params)
    rng = random.Random(0)
    flags = []
    clock = 0
    for _episode in range(40):
        rogue = []
        for turn in (1, 3, 5):
            out = agent.decide(make_view("accuser", turn=turn, clock_offset=clock), rng)
            rogue.append("rogue" in out.noise)
        assert len(set(rogue)) == 1  # constant within an episode
        flags.append(rogue[0])
        clock += 5  # a reset after the episode's fifth turn: the new budget starts there
    assert 5 < sum(flags) < 35  # redrawn at every reset


def test_a_reset_at_the_agents_first_turn_still_draws_again() -> None:
    """The new budget's first turn can equal the last turn the agent played (a reset at the
    game's first turns): the reset is the new clock offset, not a lower budget turn."""
    params = QUIET.model_copy(update={"rogue_rate": 0.5})
    agent = SimulatedAgent("Beth", params)
    rng = random.Random(0)
    flags = [
        "rogue" in agent.decide(make_view("accuser", turn=1, clock_offset=k), rng).noise
        for k in range(40)  # a reset after every single turn
    ]
    assert 5 < sum(flags) < 35
    # A resampled turn (same budget, same turn) is the same episode.
    again = [
        "rogue" in agent.decide(make_view("accuser", turn=1, clock_offset=39), rng).noise
        for _ in range(10)
    ]
    assert set(again) == {flags[-1]}


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


def test_accuser_evidence_by_hand() -> None:
    # Culprit 3 (brown hat, green eyes, button-up, pink). "brown hat: 1 3 5 7 9 11" confirms
    # the hat of those six and contradicts the six others once. "green eyes: 9" (a wrong
    # list: 3 is missing) contradicts every id but 9 once more and confirms 9's eyes.
    channel = (SOLVING[0], broad("eye_color", "green", (9,)))
    culprit = dict(SUSPECTS[2])
    violations, confirmed = accuser_evidence(12, culprit, ATTRS, channel)
    assert violations == [1, 2, 1, 2, 1, 2, 1, 2, 0, 2, 1, 2]
    assert confirmed[2] == {"hat"} and confirmed[8] == {"hat", "eye_color"}
    assert confirmed[1] == set()
    # Two-valued property: not being listed as a tee confirms the other value.
    shirt = (broad("shirt", "tee"),)
    _, confirmed = accuser_evidence(12, culprit, ATTRS, shirt)
    assert confirmed[2] == {"shirt"}  # 3 is not a tee, so it wears button-up


def test_fact_violations_by_hand() -> None:
    facts = [("hat", "brown"), ("eye_color", "green")]
    assert fact_violations(SUSPECTS[:4], facts) == [1, 2, 0, 2]
    assert fact_violations(SUSPECTS[:2], []) == [0, 0]


@settings(max_examples=200, deadline=None)
@given(
    q=st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=1, max_size=20),
    previous=st.integers(min_value=0, max_value=20),
)
def test_list_position_is_a_distribution(q: list[float], previous: int) -> None:
    previous = min(previous, len(q))
    dist = list_position(q, previous)
    assert set(dist) == {*(str(c) for c in range(previous + 1, len(q) + 1)), "]"}
    assert all(v >= 0 for v in dist.values())
    assert sum(dist.values()) == pytest.approx(1.0)


def test_every_parameter_has_a_meaning_and_a_source() -> None:
    rows = parameter_rows(SimParams())
    assert [r.name for r in rows] == list(SimParams.model_fields)
    for row in rows:
        assert row.meaning and row.source, row
        assert row.source.startswith(ASSUMPTION) or "paper" in row.source, row
    by_name = {r.name: r for r in rows}
    assert "fault_signal" in by_name and by_name["fault_signal"].value == 1.0
    assert "0 = the monitor gets no signal" in by_name["fault_signal"].meaning


def test_the_hallucinated_confidence_range_is_checked() -> None:
    with pytest.raises(ValueError, match="hallucination_confidence_low"):
        SimParams(hallucination_confidence_low=0.9, hallucination_confidence=0.8)
    q = A(kind="request_specific", character=2, property="hat", value="black")
    params = QUIET.model_copy(
        update={
            "hallucination_rate": 1.0,
            "hallucination_confidence_low": 0.7,
            "hallucination_confidence": 0.7,
        }
    )
    turn = SimulatedAgent("Alex", params).decide(make_view("intel", pending_request=q), _rng())
    assert math.exp(dict(turn.distributions[0])["1"]) == pytest.approx(0.7)


def test_role_loss_can_break_the_rules() -> None:
    params = QUIET.model_copy(update={"role_loss_rate": 1.0, "role_loss_invalid": 1.0})
    for role in ("accuser", "intel", "player"):
        turn = SimulatedAgent("X", params).decide(make_view(role), random.Random(0))
        assert {"role_loss", "invalid_move"} <= set(turn.noise)
        assert turn.action.kind not in action_kinds(role).values()  # type: ignore[arg-type]
        # It still reports its (blurred) policy over its own action numbers.
        assert {tok for tok, _ in turn.distributions[0]} >= {
            str(n)
            for n in action_kinds(role)  # type: ignore[arg-type]
        }


def test_intel_reports_recall_not_a_belief_over_suspects() -> None:
    view = make_view("intel", pending_request=A(kind="request_broad"))
    turn = SimulatedAgent("Alex", QUIET).decide(view, random.Random(0))
    assert "top belief" not in turn.thoughts and "least sure of an id" in turn.thoughts
    # Every list position is the recall model's: P(next = c) from q in {rc, 1 - rc}.
    a = turn.action
    rc = QUIET.recall_confidence
    q = [rc if c in a.characters else 1 - rc for c in range(1, len(SUSPECTS) + 1)]
    previous = 0
    for c, dist in zip(a.characters, turn.distributions[1:], strict=True):
        expected = list_position(q, previous)
        assert math.exp(dict(dist)[str(c)]) == pytest.approx(expected[str(c)])
        previous = c


def test_the_documented_parameter_table_matches_the_code() -> None:
    # docs/whodunit.md copies `byzllm sim show --domain whodunit`; it must not drift.
    docs = Path(__file__).resolve().parents[3] / "docs" / "whodunit.md"
    lines = docs.read_text(encoding="utf-8").splitlines()
    start = lines.index("| parameter | default | meaning | source |") + 2
    table = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        table.append(line)
    expected = [
        f"| `{r.name}` | {r.value} | {r.meaning} | {r.source} |"
        for r in parameter_rows(SimParams())
    ]
    assert table == expected
