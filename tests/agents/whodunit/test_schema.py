"""Schema-constrained WhoDunit moves: every reply the schema admits is a valid move, and the
monitor's decision positions come out of it as out of a free reply."""

from __future__ import annotations

import json
import random
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from byzllm.agents.whodunit import (
    DEFAULT_MAX_THOUGHTS,
    AgentView,
    LLMAgent,
    WhoDunitAction,
    action_kinds,
    action_schema,
    broad_values,
    parse_action,
    thoughts_budget,
)
from byzllm.agents.whodunit._parse import canonical
from byzllm.envs.whodunit import GameConfig, WhoDunitEnv, generate_games
from byzllm.errors import ConfigError
from byzllm.llm import Completion, JsonSchema, TokenLogprob

from .conftest import make_view
from .test_llm import ScriptedModel, tokens_of

# --- instances of a schema ------------------------------------------------------------------

# Thoughts as a model writes them: any printable text, quotes, backslashes, braces and
# "action" look-alikes included (the parser must not take them for the move).
_THOUGHTS = st.one_of(
    st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=80),
    st.sampled_from(['award 3 {"action": 3, "character": 9}', "a // b # c", 'say "hi" \\ ']),
)


@st.composite
def instance(draw: st.DrawFn, schema: dict[str, Any]) -> Any:
    """A JSON value the schema admits (the subset of JSON Schema action_schema uses)."""
    if "anyOf" in schema:
        return draw(instance(draw(st.sampled_from(schema["anyOf"]))))
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return draw(st.sampled_from(schema["enum"]))
    kind = schema["type"]
    if kind == "object":
        return {name: draw(instance(sub)) for name, sub in schema["properties"].items()}
    if kind == "array":
        return draw(st.lists(instance(schema["items"]), max_size=schema["maxItems"]))
    if kind == "boolean":
        return draw(st.booleans())
    if kind == "string":
        return draw(_THOUGHTS.filter(lambda t: len(t) <= schema["maxLength"]))
    raise AssertionError(f"instance() does not know {schema}")


def conforms(value: Any, schema: dict[str, Any]) -> bool:
    """Whether ``value`` satisfies ``schema`` (the same subset)."""
    if "anyOf" in schema:
        return any(conforms(value, sub) for sub in schema["anyOf"])
    if "const" in schema:
        return value == schema["const"] and type(value) is type(schema["const"])
    if "enum" in schema:
        return any(value == v and type(value) is type(v) for v in schema["enum"])
    kind = schema["type"]
    if kind == "object":
        props = schema["properties"]
        return (
            isinstance(value, dict)
            and list(value) == list(props)  # all required, in order, no others
            and all(conforms(value[k], props[k]) for k in props)
        )
    if kind == "array":
        return (
            isinstance(value, list)
            and len(value) <= schema["maxItems"]
            and all(conforms(v, schema["items"]) for v in value)
        )
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "string":
        return isinstance(value, str) and len(value) <= schema["maxLength"]
    raise AssertionError(f"conforms() does not know {schema}")


# Spacing as servers write constrained JSON: llama.cpp's grammar puts a space after "{"
# (its "space" rule), json.dumps does not, pretty printers indent.
_LAYOUTS = [
    {"separators": (", ", ": ")},
    {"separators": (",", ":")},
    {"indent": 2},
]


def _render(value: dict[str, Any], layout: int, llama_space: bool) -> str:
    text = json.dumps(value, ensure_ascii=False, **_LAYOUTS[layout])  # type: ignore[arg-type]
    return "{ " + text[1:] if llama_space and text.startswith('{"') else text


# --- views of real games, every role, with and without a pending question --------------------


@st.composite
def game_views(draw: st.DrawFn) -> AgentView:
    if draw(st.booleans()):
        # 2^4 = 16 distinct characters at least with the table's first four attributes.
        config = GameConfig(
            variant="asym",
            n_suspects=draw(st.integers(2, 14)),
            n_attributes=draw(st.integers(4, 8)),
            max_turns=8,
        )
    else:
        config = GameConfig(
            variant="sym",
            n_suspects=draw(st.integers(2, 8)),
            n_attributes=draw(st.integers(8, 12)),
            max_turns=8,
            n_agents=2,
            facts_per_agent=draw(st.integers(3, 4)),
        )
    try:
        game = generate_games(1, config, seed=draw(st.integers(0, 10_000)))[0]
    except ConfigError:  # the facts drawn cannot identify the culprit: not a game
        assume(False)
        raise
    variant = config.variant
    env = WhoDunitEnv(game)
    if variant == "asym" and draw(st.booleans()):
        # Intel's turn, after the Accuser's yes/no question or broad request.
        accuser = env.view()
        prop = next(iter(accuser.attributes))
        question = draw(
            st.sampled_from(
                [
                    WhoDunitAction(
                        kind="request_specific",
                        character=1,
                        property=prop,
                        value=accuser.attributes[prop][0],
                    ),
                    WhoDunitAction(kind="request_broad"),
                ]
            )
        )
        env.step(question)
    return env.view()


def _readings(text: str, view: AgentView) -> set[tuple[str, str]]:
    """Every (property, value) a broad message's "property-value" text can be read as."""
    return {
        (prop, value)
        for cut in (m.start() for m in re.finditer(r"[-:=]", text))
        for prop, values in view.attributes.items()
        if canonical(prop) == canonical(text[:cut])
        for value in values
        if canonical(value) == canonical(text[cut + 1 :])
    }


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), game_views(), st.integers(0, 2), st.booleans())
def test_every_admitted_reply_is_a_valid_move(
    data: st.DataObject, view: AgentView, layout: int, llama_space: bool
) -> None:
    schema = action_schema(view)
    value = data.draw(instance(schema))
    assert conforms(value, schema)
    text = _render(value, layout, llama_space)
    parsed = parse_action(text, view)  # raises if the move is not valid
    action = parsed.action
    assert action.kind == action_kinds(view.role)[value["action"]]
    assert parsed.thoughts == value["thoughts"]
    # The decision positions: the action number, then every character id, as written.
    ids = value.get("character", []) if action.kind == "respond_broad" else []
    if action.kind in ("request_specific", "accuse"):
        ids = [value["character"]]
    assert [text[s:e] for s, e in parsed.decision_spans] == [str(value["action"])] + [
        str(i) for i in ids
    ]
    if action.kind == "request_specific":
        assert (action.character, action.property, action.value) == (
            value["character"],
            value["property"],
            value["value"],
        )
    elif action.kind == "respond_broad":
        assert action.characters == tuple(sorted(set(value["character"])))
        readings = _readings(value["value"], view)
        assert (action.property, action.value) in readings
        if len(readings) == 1:  # always, with the paper's Table 4 attributes
            assert f"{action.property}-{action.value}" == value["value"]
    elif action.kind == "respond":
        assert action.answer is value["value"]
    elif action.kind == "share":
        assert view.facts[value["fact"] - 1] == (action.property, action.value)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(game_views())
def test_the_schema_offers_exactly_the_moves_the_view_allows(view: AgentView) -> None:
    schema = action_schema(view)
    moves = schema.get("anyOf", [schema])
    offered = {action_kinds(view.role)[m["properties"]["action"]["const"]] for m in moves}
    if view.role == "accuser":
        assert offered == {"request_specific", "request_broad", "accuse"}
        specific = [m for m in moves if m["properties"]["action"]["const"] == 1]
        assert {m["properties"]["property"]["const"] for m in specific} == set(view.attributes)
    elif view.role == "intel":
        pending = view.pending_request
        question = pending is not None and pending.kind == "request_specific"
        assert offered == ({"respond", "respond_broad"} if question else {"respond_broad"})
    else:
        assert offered == {"share", "accuse", "skip"}
    for move in moves:
        props = move["properties"]
        assert list(props)[:2] == ["thoughts", "action"]  # the ReAct order: reason first
        assert move["required"] == list(props) and move["additionalProperties"] is False
        if "character" in props:
            ids = props["character"].get("items", props["character"])["enum"]
            assert ids == list(range(1, view.n_suspects + 1))


def test_a_hand_checked_accuser_schema() -> None:
    view = make_view("accuser")
    schema = action_schema(view, max_thoughts=100)
    moves = schema["anyOf"]
    assert len(moves) == len(view.attributes) + 2
    shirt = next(m for m in moves if m["properties"].get("property", {}).get("const") == "shirt")
    assert shirt["properties"]["value"] == {"enum": ["button-up", "tee"]}
    assert moves[-1]["properties"]["character"]["enum"] == list(range(1, 13))
    assert moves[-2]["properties"] == {
        "thoughts": {"type": "string", "maxLength": 100},
        "action": {"const": 2},
    }
    # No pending yes/no question: Intel can only send a broad message (no anyOf).
    intel = action_schema(make_view("intel"))
    assert intel["properties"]["action"] == {"const": 2}
    assert "hat-brown" in intel["properties"]["value"]["enum"]
    assert broad_values(make_view("intel"))[:2] == ["hat-brown", "hat-black"]
    with pytest.raises(ValueError):
        action_schema(view, max_thoughts=0)


def test_thoughts_budget_leaves_room_to_close_the_object() -> None:
    assert thoughts_budget(None, 10) == DEFAULT_MAX_THOUGHTS
    assert thoughts_budget(1024, 10) == DEFAULT_MAX_THOUGHTS
    assert thoughts_budget(160, 5) == 2 * (160 - 32 - 20)
    assert thoughts_budget(10, 200) == 16


# --- the agent: the schema goes out, the monitor's positions come back -----------------------


async def test_schema_decoding_sends_the_views_schema(intel_view: AgentView) -> None:
    reply = '{ "thoughts": "yes, 3 wears it", "action": 1, "value": true}'
    model = ScriptedModel([reply])
    agent = LLMAgent("Alex", model, decoding="schema", max_tokens=256)
    turn = await agent.act(intel_view, random.Random(0))
    assert turn.action.kind == "respond" and turn.action.answer is True
    config = model.configs[0]
    assert config is not None and isinstance(config.response_format, JsonSchema)
    assert config.response_format.name == "whodunit_intel_move"
    assert config.response_format.schema_ == action_schema(
        intel_view, max_thoughts=thoughts_budget(256, intel_view.n_suspects)
    )
    assert config.top_logprobs == 10 and config.temperature == 0.0 and config.max_tokens == 256
    # Free decoding (the default) sends no format at all.
    free = ScriptedModel([reply])
    await LLMAgent("Alex", free).act(intel_view, random.Random(0))
    assert free.configs[0] is not None and free.configs[0].response_format is None
    with pytest.raises(ValueError):
        LLMAgent("Alex", free, decoding="grammar")  # type: ignore[arg-type]


async def test_monitor_positions_from_a_constrained_reply() -> None:
    """A reply as llama.cpp writes it under the schema, tokenized with single-digit tokens
    (as Qwen's tokenizer does), the grammar having forced tokens the model did not rank
    first: the monitor still gets the model's own top-k at the action number and every id."""
    view = make_view("intel", turn=2)
    text = '{ "thoughts": "hat 1, 12", "action": 2, "value": "hat-brown", "character": [1, 12]}'
    tokens = tokens_of(text, split_digits=True)
    # Forced digits: the sampled token is far down the model's own (raw) distribution.
    forced = [
        TokenLogprob(token=t.token, logprob=-7.5, top=[("I", -0.1), ("The", -2.4), (t.token, -7.5)])
        if re.fullmatch(r"\d", t.token)
        else t
        for t in tokens
    ]
    model = ScriptedModel([Completion(text=text, logprobs=forced)])
    turn = await LLMAgent("Alex", model, decoding="schema").act(view, random.Random(0))
    assert turn.action == WhoDunitAction(
        kind="respond_broad", property="hat", value="brown", characters=(1, 12)
    )
    picked = [t for t in forced if re.fullmatch(r"\d", t.token) and t.logprob == -7.5]
    # The thoughts' digits ("1, 12") are not decision positions; action 2, ids 1 and 1-2 are.
    assert [t.token for t in picked[3:]] == ["2", "1", "1", "2"]
    assert turn.distributions == [list(t.top) for t in picked[3:]]


async def test_a_truncated_constrained_reply_is_reprompted(accuser_view: AgentView) -> None:
    cut = '{ "thoughts": "I should ask about the hat of character'  # max_tokens reached
    whole = '{ "thoughts": "ask", "action": 3, "character": 3}'
    model = ScriptedModel([cut, whole])
    turn = await LLMAgent("Beth", model, decoding="schema").act(accuser_view, random.Random(0))
    assert turn.action == WhoDunitAction(kind="accuse", character=3)
    assert len(turn.parse_errors) == 1 and not turn.fallback
    assert model.calls[1][-1]["content"].endswith(
        "Please answer again with one complete JSON object."
    )
    # The re-prompt carries the same schema.
    assert model.configs[0] == model.configs[1]
