"""Schema-constrained decoding on the real model (SmolLM2 over HTTP and in process): the reply
parses against the schema, and a WhoDunit agent's constrained move gives the monitor the
model's distributions at the id tokens."""

from __future__ import annotations

import asyncio
import json
import random
import re
from collections.abc import Callable
from typing import Any

import pytest

from byzllm.agents.whodunit import LLMAgent, WhoDunitAction, parse_action
from byzllm.envs.whodunit import GameConfig, WhoDunitEnv, generate_games
from byzllm.llm import ChatModel, GenerateConfig, JsonSchema, LocalServer, get_model

pytestmark = [pytest.mark.real_model, pytest.mark.timeout(600)]

# Every field constrained: a 135M model left free writes none of this reliably.
ORDER: dict[str, Any] = {
    "type": "object",
    "properties": {
        "note": {"type": "string", "maxLength": 40},
        "fruit": {"enum": ["apple", "pear", "plum"]},
        "count": {"type": "integer", "enum": [1, 2, 3, 4]},
        "paid": {"type": "boolean"},
        "ids": {"type": "array", "items": {"type": "integer", "enum": [1, 2, 3]}, "maxItems": 3},
    },
    "required": ["note", "fruit", "count", "paid", "ids"],
    "additionalProperties": False,
}
PROMPT = [{"role": "user", "content": "Order some fruit for the office and say why."}]


def _served(server: LocalServer) -> ChatModel:
    return get_model(
        f"openai/{server.model_name}",
        base_url=server.base_url,
        api_key_env=None,
        adaptive_timeout=False,
    )


def _check_order(text: str) -> None:
    order = json.loads(text)  # strict JSON, not the lenient reader
    assert list(order) == list(ORDER["properties"])  # every field, in the schema's order
    assert len(order["note"]) <= 40
    assert order["fruit"] in ("apple", "pear", "plum")
    assert order["count"] in (1, 2, 3, 4) and isinstance(order["paid"], bool)
    assert len(order["ids"]) <= 3 and set(order["ids"]) <= {1, 2, 3}


def test_a_constrained_reply_parses_against_the_schema(
    real_server: LocalServer, require_extra: Callable[..., None]
) -> None:
    require_extra("llama_cpp", extra="local")
    config = GenerateConfig(
        temperature=0,
        max_tokens=96,
        top_logprobs=5,
        response_format=JsonSchema(name="order", schema_=ORDER),
    )
    local = get_model("llamacpp/smollm2", api_key_env=None)

    async def both() -> list[Any]:
        return [await m.generate(PROMPT, config) for m in (_served(real_server), local)]

    for completion in asyncio.run(both()):
        _check_order(completion.text)
        assert completion.logprobs
        assert "".join(t.token for t in completion.logprobs) == completion.text
    # Sampled (temperature 1, several seeds): still valid every time.
    for seed in range(3):
        sampled = config.model_copy(update={"temperature": 1.0, "seed": seed})
        _check_order(asyncio.run(_served(real_server).generate(PROMPT, sampled)).text)


@pytest.mark.parametrize("role", ["accuser", "intel"])
def test_a_constrained_whodunit_move_gives_the_monitor_its_positions(
    real_server: LocalServer, role: str
) -> None:
    game = generate_games(
        1, GameConfig(variant="asym", n_suspects=5, n_attributes=4, max_turns=4), seed=3
    )[0]
    env = WhoDunitEnv(game)
    if role == "intel":  # Intel's turn after a yes/no question: both of its moves are open
        prop, values = next(iter(env.view().attributes.items()))
        env.step(
            WhoDunitAction(kind="request_specific", character=2, property=prop, value=values[0])
        )
    view = env.view()
    assert view.role == role
    model = _served(real_server)
    agent = LLMAgent(view.name, model, decoding="schema", max_reprompts=0, max_tokens=160)
    turn = asyncio.run(agent.act(view, random.Random(0)))
    # By construction: no rejected reply, a move, not the fallback pass.
    assert not turn.fallback and turn.parse_errors == []
    reply = turn.replies[0]
    assert reply.lstrip().startswith('{ "thoughts"') or reply.lstrip().startswith('{"thoughts"')
    spans = parse_action(reply, view).decision_spans
    assert len(turn.distributions) >= len(spans) >= 1
    for distribution in turn.distributions:
        assert 1 <= len(distribution) <= 10
        assert [lp for _, lp in distribution] == sorted(
            (lp for _, lp in distribution), reverse=True
        )
    # The positions are the digits the reply wrote there.
    digits = [reply[s:e] for s, e in spans]
    assert all(re.fullmatch(r"\d+", d) for d in digits)
