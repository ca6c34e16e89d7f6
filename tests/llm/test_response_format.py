"""JSON-schema response formats: the config, the wire body, the cache key, the local grammar."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from pydantic import ValidationError

from byzllm.errors import InputError
from byzllm.llm import GenerateConfig, JsonSchema, cache_key
from byzllm.llm._openai import request_body
from byzllm.testing import FakeOpenAIServer

MOVE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "thoughts": {"type": "string", "maxLength": 50},
        "action": {"enum": [1, 2, 3]},
    },
    "required": ["thoughts", "action"],
    "additionalProperties": False,
}
USER = [{"role": "user", "content": "move?"}]


def _key(config: GenerateConfig) -> str:
    return cache_key(
        provider="openai", base_url="http://h/v1", model="m", messages=USER, config=config
    )


def test_the_config_takes_a_schema_by_either_spelling() -> None:
    spelled = GenerateConfig.model_validate(
        {"response_format": {"name": "move", "schema": MOVE, "strict": False}}
    )
    built = GenerateConfig(response_format=JsonSchema(name="move", schema_=MOVE, strict=False))
    assert spelled == built and isinstance(spelled.response_format, JsonSchema)
    assert GenerateConfig(response_format="json_object").response_format == "json_object"
    for bad in [
        {"name": "has space", "schema": MOVE},  # OpenAI's name rule
        {"name": "x" * 65, "schema": MOVE},
        {"name": "move", "schema": {"type": "number", "maximum": math.inf}},
        {"name": "move"},
        {"name": "move", "schema": MOVE, "extra": 1},
    ]:
        with pytest.raises(ValidationError):
            GenerateConfig.model_validate({"response_format": bad})


def test_the_body_carries_openais_json_schema_format() -> None:
    config = GenerateConfig(temperature=0, response_format=JsonSchema(name="move", schema_=MOVE))
    body = request_body("m", USER, config)
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "move", "schema": MOVE, "strict": True},
    }
    # The property order survives into the body (it is the order of generation).
    sent = json.dumps(body["response_format"]["json_schema"]["schema"])
    assert sent.index('"thoughts"') < sent.index('"action"')
    assert request_body("m", USER, GenerateConfig())["messages"] == USER
    assert "response_format" not in request_body("m", USER, GenerateConfig())


async def test_the_server_receives_the_schema() -> None:
    async with FakeOpenAIServer(lambda r: '{"thoughts": "t", "action": 1}') as server:
        from byzllm.llm import get_model

        model = get_model("openai/m", base_url=server.base_url, api_key_env=None)
        config = GenerateConfig(response_format=JsonSchema(name="move", schema_=MOVE))
        completion = await model.generate(USER, config)
        await model.aclose()
    assert json.loads(completion.text) == {"thoughts": "t", "action": 1}
    assert server.requests[0]["response_format"]["json_schema"]["schema"] == MOVE


def test_the_cache_key_covers_the_schema() -> None:
    def with_schema(schema: dict[str, Any], **kw: Any) -> GenerateConfig:
        return GenerateConfig(temperature=0, response_format=JsonSchema(schema_=schema, **kw))

    base = _key(with_schema(MOVE, name="move"))
    assert base == _key(with_schema(json.loads(json.dumps(MOVE)), name="move"))
    reordered = {**MOVE, "properties": dict(reversed(list(MOVE["properties"].items())))}
    narrower = {**MOVE, "properties": {**MOVE["properties"], "action": {"enum": [1, 2]}}}
    others = {
        _key(GenerateConfig(temperature=0)),
        _key(GenerateConfig(temperature=0, response_format="json_object")),
        _key(with_schema(narrower, name="move")),
        # Same schema, other property order: another reply (the grammar writes in order).
        _key(with_schema(reordered, name="move")),
        _key(with_schema(MOVE, name="other")),
        _key(with_schema(MOVE, name="move", strict=False)),
    }
    assert base not in others and len(others) == 6
    # Configs without a format keep the keys they always had (no new field in them).
    plain = GenerateConfig(temperature=0).model_dump(mode="json", exclude_none=True)
    assert plain == {"temperature": 0.0}


# --- the local grammar (llama-cpp-python) ---------------------------------------------------


def test_response_grammar(require_extra: Any) -> None:
    require_extra("llama_cpp", extra="local")
    from byzllm.llm._llama_generate import response_grammar

    assert response_grammar(None) is None and response_grammar({"type": "text"}) is None
    assert "object" in response_grammar({"type": "json_object"})._grammar
    wire = JsonSchema(name="move", schema_=MOVE).wire()
    grammar = response_grammar(wire)
    rules = dict(line.split(" ::= ", 1) for line in grammar._grammar.splitlines())
    # Properties in the schema's order; the enum's values and no others.
    assert rules["root"].index("thoughts-kv") < rules["root"].index("action-kv")
    assert rules["action"] == '"1" | "2" | "3"'
    assert response_grammar(json.loads(json.dumps(wire))) is grammar  # derived once
    for bad in [
        {"type": "json_schema"},
        {"type": "json_schema", "json_schema": {"name": "x", "schema": "not a schema"}},
        {"type": "json_schema", "json_schema": {"schema": {"$ref": "elsewhere.json"}}},
        {"type": "yaml"},
        "json_object",
    ]:
        with pytest.raises(InputError):
            response_grammar(bad)
