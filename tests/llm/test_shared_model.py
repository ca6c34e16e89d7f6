"""``ModelSpec`` keys and ``get_shared_model``: one live model per event loop and spec."""

from __future__ import annotations

import asyncio
import threading

import pytest
from pydantic import ValidationError

from byzllm.llm import Model, ModelSettings, ModelSpec, get_shared_model
from byzllm.runs import ModelConfig

URL = "http://127.0.0.1:9/v1"


def spec(**changes: object) -> ModelSpec:
    return ModelSpec.model_validate({"name": "openai/m", "base_url": URL, **changes})


def test_spec_accepts_the_config_key_model_for_its_name() -> None:
    assert ModelSpec.model_validate({"model": "openai/x"}).name == "openai/x"
    assert ModelSpec(name="openai/x").name == "openai/x"
    with pytest.raises(ValidationError):
        ModelSpec.model_validate({"base_url": URL})  # no name at all


def test_settings_are_every_get_model_keyword() -> None:
    kwargs = spec(max_concurrency=3).kwargs()
    assert set(kwargs) == set(ModelSettings.model_fields) and "name" not in kwargs
    assert kwargs["max_concurrency"] == 3 and kwargs["base_url"] == URL


async def test_one_model_per_loop_and_spec() -> None:
    first = get_shared_model(spec())
    assert isinstance(first, Model)
    assert get_shared_model(spec()) is first  # an equal spec: the same live model
    assert get_shared_model(spec(cache_salt="r1")) is not first
    assert get_shared_model(spec(max_concurrency=2)) is not first

    other: list[Model] = []
    thread = threading.Thread(
        target=lambda: other.append(asyncio.run(_shared_in_coroutine(spec())))
    )
    thread.start()
    thread.join()
    assert other and other[0] is not first  # a client belongs to its own event loop


async def _shared_in_coroutine(model_spec: ModelSpec) -> Model:
    return get_shared_model(model_spec)


def test_outside_a_loop_every_call_builds_a_new_model() -> None:
    assert get_shared_model(spec()) is not get_shared_model(spec())


async def test_config_section_salts_and_shares() -> None:
    section = ModelConfig(model="openai/m", base_url=URL, api_key_env=None, cache_salt="epoch2")
    assert section.model_spec().name == "openai/m"
    assert section.model_spec(cache_salt="s").cache_salt == "s"
    salted = section.shared_model(salt="repeat=1")
    assert salted.cache_salt == "epoch2/repeat=1"
    assert section.shared_model(salt="repeat=1") is salted
    assert ModelConfig(model="openai/m", base_url=URL).shared_model().cache_salt == ""


def test_config_section_without_a_model_is_a_config_error() -> None:
    from byzllm.errors import ConfigError

    with pytest.raises(ConfigError, match="no model"):
        ModelConfig().model_spec()
    with pytest.raises(ValidationError):
        ModelConfig.model_validate({"model": "openai/m", "api_key": "sk-nope"})
