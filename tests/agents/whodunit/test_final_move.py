"""final_move: accuse: an agent's last turn of a budget admits only the accusation."""

from __future__ import annotations

import random

import pytest

from byzllm.agents.whodunit import LLMAgent, action_schema, last_own_turn
from byzllm.experiments.whodunit import WhoDunitRunConfig

from .conftest import make_view
from .test_llm import ScriptedModel


def test_last_own_turn_counts_the_agents_in_turn_order() -> None:
    # Two agents (Accuser, Intel), 8 turns: the Accuser plays 1, 3, 5, 7; 7 is its last.
    assert not last_own_turn(make_view("accuser", turn=5, max_turns=8))
    assert last_own_turn(make_view("accuser", turn=7, max_turns=8))
    assert last_own_turn(make_view("intel", turn=8, max_turns=8))
    # Three symmetric players, 9 turns: a player at turn 6 plays again at 9.
    partners = ("Beth", "Cleo")
    assert not last_own_turn(make_view("player", turn=6, max_turns=9, partners=partners))
    assert last_own_turn(make_view("player", turn=7, max_turns=9, partners=partners))


def test_accuse_only_schema() -> None:
    accuser = make_view("accuser", turn=7, max_turns=8)
    only = action_schema(accuser, max_thoughts=50, accuse_only=True)
    assert only["properties"]["action"] == {"const": 3}
    assert only["properties"]["character"]["enum"] == list(range(1, accuser.n_suspects + 1))
    player = make_view("player", turn=7, max_turns=8)
    assert action_schema(player, accuse_only=True)["properties"]["action"] == {"const": 2}
    # Intel cannot accuse: its moves are unchanged.
    intel = make_view("intel", turn=8, max_turns=8)
    assert action_schema(intel, accuse_only=True) == action_schema(intel)


async def test_the_agent_sends_the_accusation_schema_only_on_its_last_turn() -> None:
    reply = '{"thoughts": "it is 3", "action": 3, "character": 3}'
    model = ScriptedModel([reply, reply])
    agent = LLMAgent("Beth", model, decoding="schema", final_move="accuse", max_tokens=128)
    await agent.act(make_view("accuser", turn=5, max_turns=8), random.Random(0))
    await agent.act(make_view("accuser", turn=7, max_turns=8), random.Random(0))
    early, last = (c.response_format.schema_ for c in model.configs)  # type: ignore[union-attr]
    assert "anyOf" in early
    assert last["properties"]["action"] == {"const": 3}


def test_accuse_needs_schema_decoding() -> None:
    with pytest.raises(ValueError, match="needs decoding"):
        LLMAgent("Beth", ScriptedModel([]), final_move="accuse")
    with pytest.raises(ValueError, match="final_move"):
        LLMAgent("Beth", ScriptedModel([]), final_move="never")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="needs decoding: schema"):
        WhoDunitRunConfig.model_validate({"final_move": "accuse"})
    cfg = WhoDunitRunConfig.model_validate({"final_move": "accuse", "decoding": "schema"})
    assert cfg.final_move == "accuse"
