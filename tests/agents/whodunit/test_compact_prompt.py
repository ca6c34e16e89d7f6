"""The compact prompt style: the same knowledge and actions as Appendix F's, fewer words, and a
JSON example the parser accepts as a move."""

from __future__ import annotations

import json
import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from byzllm.agents.whodunit import (
    AgentView,
    LLMAgent,
    action_kinds,
    parse_action,
    render_prompt,
    render_system_prompt,
)
from byzllm.envs.whodunit import GameConfig, WhoDunitEnv, generate_games

from .conftest import QUESTION, make_view
from .test_llm import ScriptedModel

VIEWS = [make_view("accuser"), make_view("intel", pending_request=QUESTION), make_view("player")]


@pytest.mark.parametrize("view", VIEWS, ids=lambda v: v.role)
@pytest.mark.parametrize("wording", ["award", "original"])
def test_compact_keeps_what_the_agent_knows(view: AgentView, wording: str) -> None:
    view = view.model_copy(update={"wording": wording})
    paper = render_system_prompt(view)
    compact = render_system_prompt(view, "compact")
    assert len(compact) < 0.8 * len(paper)
    assert "//" not in compact  # no commented template for a small model to copy
    assert view.name in compact and all(p in compact for p in view.partners)
    for prop, values in view.attributes.items():
        assert f"{prop} ({', '.join(values)})" in compact  # names and values
    if view.role == "accuser":
        assert view.culprit_description is not None
        assert all(f"{p}: {v}" in compact for p, v in view.culprit_description.items())
        assert "Character 1:" not in compact and "Suspect 1:" not in compact
    else:
        block = [line for line in paper.splitlines() if re.match(r"(Character|Suspect) \d+:", line)]
        assert len(block) == view.n_suspects and all(line in compact for line in block)
    culprit = "Winner" if wording == "award" else "Culprit"
    assert culprit in compact
    # The action numbers are the parser's.
    numbers = re.findall(r"^(\d) = ", compact, flags=re.M)
    assert [int(n) for n in numbers] == sorted(action_kinds(view.role))
    # The user prompt is the same in both styles.
    assert render_prompt(view, "compact")[1] == render_prompt(view)[1]


def _example(prompt: str) -> str:
    line = next(line for line in prompt.splitlines() if line.startswith('{"thoughts"'))
    return line.replace('"..."', '"an example"')


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(["asym", "sym"]),
    st.integers(2, 12),
    st.integers(0, 1_000),
    st.integers(1, 3),
)
def test_the_compact_example_is_a_valid_move(
    variant: str, suspects: int, seed: int, facts: int
) -> None:
    config = (
        GameConfig(variant="asym", n_suspects=suspects, n_attributes=6, max_turns=4)
        if variant == "asym"
        else GameConfig(
            variant="sym",
            n_suspects=min(suspects, 8),
            n_attributes=12,
            max_turns=4,
            n_agents=2,
            facts_per_agent=facts,
        )
    )
    env = WhoDunitEnv(generate_games(1, config, seed=seed)[0])
    views = [env.view()]
    if variant == "asym":
        env.step(QUESTION.model_copy(update={"character": 1, "property": "hat", "value": "brown"}))
        views.append(env.view())
    for view in views:
        example = _example(render_system_prompt(view, "compact"))
        json.loads(example)  # strict JSON
        parsed = parse_action(example, view)  # raises if the example is not a valid move
        assert parsed.thoughts == "an example"
        # And a true one: copied by a small model, it plants no hallucination.
        action = parsed.action
        if view.role == "accuser":
            # A general request: no character id for a small model to fixate on.
            assert action.kind == "request_broad" and action.character is None
        elif view.role == "intel":
            assert view.suspects is not None
            holders = tuple(
                i
                for i, s in enumerate(view.suspects, 1)
                if s[action.property or ""] == action.value
            )
            assert action.characters == holders
        else:
            assert action.kind == "share" and action.fact == 1


async def test_the_agent_renders_its_style() -> None:
    view = make_view("accuser")
    reply = '{"thoughts": "t", "action": 2}'
    compact = ScriptedModel([reply])
    await LLMAgent("Beth", compact, prompt="compact").act(view, random.Random(0))
    assert compact.calls[0] == render_prompt(view, "compact")
    paper = ScriptedModel([reply])
    await LLMAgent("Beth", paper).act(view, random.Random(0))
    assert paper.calls[0] == render_prompt(view)
    with pytest.raises(ValueError):
        LLMAgent("Beth", paper, prompt="short")  # type: ignore[arg-type]
